//! A queued request withdrawn through PRRTE master and psched (pool
//! backend): `prelease --cancel REQ` from another shell reaches psched
//! through the waiting palloc's holder; the canceller hears success and
//! the waiting palloc says who cancelled it (exit 10), as on pdvm. psched
//! answers the cancel before the withdrawn request, because the holder
//! that relays the canceller ends with that request.

use std::process::Stdio;
use std::time::Duration;

use crate::psched_cluster::{psched_status, wait_for};
use crate::support::cluster::Cluster;
use crate::support::{run_with_timeout, show, text, tool, LineReader, ToolCommand};

#[test]
fn a_queued_request_cancelled_from_another_shell_says_by_whom() {
    let c = Cluster::start_with_psched(1, 2, &[]);
    let mut holder = tool(&c, "palloc")
        .no_color()
        .args(["--hold", "--json", "-N", "2", "-t", "5m"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("palloc --hold");
    let lines = LineReader::new(holder.stdout.take().expect("stdout"));
    let grant = lines.next_record("allocation", Duration::from_secs(60));
    assert!(
        grant.is_some(),
        "the first palloc is granted\n{}",
        c.psched_log()
    );
    let queued = tool(&c, "palloc")
        .no_color()
        .args(["-N", "1", "-t", "5m", "--request-id", "big", "--hold"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the queued palloc");
    // Until the request has reached psched, a cancel finds nothing (exit
    // 5, no effect): cancel once psched's ledger lists it waiting.
    wait_for("psched queued the request", || {
        psched_status(&c)["pending"]
            .as_array()
            .is_some_and(|p| p.len() == 1)
    });
    let o = run_with_timeout(
        tool(&c, "prelease")
            .no_color()
            .args(["--cancel", "big"])
            .stdin(Stdio::null()),
        60,
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", show(&o), c.psched_log());
    let q = crate::support::wait_output(queued, Duration::from_secs(30));
    assert_eq!(q.status.code(), Some(10), "{}", show(&q));
    assert!(
        text(&q.stderr).contains("request big cancelled by"),
        "{}",
        show(&q)
    );
    let _ = holder.kill();
    let _ = holder.wait();
}

//! The wire library against an older real peer: an OpenPMIx 4.2.2 server
//! (Debian's libpmix via python3-pmix) hosting tool connections, queries and
//! allocation requests through its upcalls.

use crate::support::py::Py422;

use std::time::Duration;

use pmix_tools::codec::Info;
use pmix_tools::conn::discover::{discover, job_client_target, Env, ProcessEnv};
use pmix_tools::conn::{ConnectOptions, Connection, Identity};

struct Vars(std::collections::HashMap<String, String>);
impl Env for Vars {
    fn var(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }
}
use pmix_tools::ops::{self, Session};
use pmix_tools::proto::keys;

#[test]
fn connect_query_and_allocate_against_openpmix_4_2_2() {
    let srv = Py422::start();
    // The server is found through its rendezvous file like any other...
    let opts = ConnectOptions {
        pid: Some(srv.pid.to_string()),
        tmpdir: Some(srv.dir.clone()),
        ..Default::default()
    };
    let found = discover(&opts, &ProcessEnv).expect("find the 4.2.2 server by pid");
    assert_eq!(
        found.version.as_deref().map(|v| v.starts_with("4.2.2")),
        Some(true)
    );
    // ...and we connect as the process of its job it registered, from the
    // environment it handed that process (as a launched process would).
    let target = job_client_target(&Vars(srv.env.clone()))
        .unwrap()
        .expect("job environment");
    assert_eq!(target.uri, found.uri);
    let conn = Connection::open(target, Duration::from_secs(10)).expect("connect to 4.2.2");
    let mut s = Session::from_connection(conn);
    s.set_timeout(Duration::from_secs(10));
    assert_eq!(s.me(), ("py422-job".to_string(), 0));
    assert!(matches!(s.conn().identity(), Identity::Client { .. }));
    assert_eq!(
        s.server_version().map(|v| v.starts_with("4.2.2")),
        Some(true)
    );

    let ns = ops::query::namespaces(&s).expect("query");
    assert_eq!(ns, ["py422-tool", "py422-job"]);
    assert_eq!(srv.next_line().trim(), "QUERY pmix.qry.ns");

    let info = [
        Info::new(keys::ALLOC_NUM_NODES, 3u64),
        Info::new(keys::ALLOC_REQ_ID, "my-req-7"),
        Info::new(
            keys::ALLOC_TIME,
            pmix_tools::codec::attrs::alloc_time_value(s.server_version(), 90),
        ),
    ];
    let r = ops::alloc::allocate(&s, pmix_tools::proto::Directive::New, &info).expect("allocate");
    assert_eq!(r.alloc_id.as_deref(), Some("py422-alloc-1"));
    assert_eq!(r.request_id.as_deref(), Some("my-req-7"));
    // what libpmix 4.2.2 decoded from our bytes
    let logged = srv.next_line();
    assert!(logged.starts_with("ALLOC 1 "), "{logged}");
    assert!(logged.contains("('pmix.alloc.nnodes', 3)"), "{logged}");
    assert!(
        logged.contains("('pmix.alloc.reqid', 'my-req-7')"),
        "{logged}"
    );
    // PMIX_VERSION from the job environment says 4.2.2, whose PMIX_ALLOC_TIME is a u32
    assert!(logged.contains("('pmix.alloc.time', 90)"), "{logged}");
    // The binding hosts no client-finalized upcall, so 4.2.2 answers our
    // goodbye with NOT_SUPPORTED: an answer, not a hang or a dropped socket.
    match s.finalize() {
        Ok(()) => {}
        Err(e) => assert_eq!(
            e.status,
            pmix_tools::proto::status::Status::ERR_NOT_SUPPORTED,
            "{e}"
        ),
    }
}

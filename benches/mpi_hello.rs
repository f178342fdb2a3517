//! `pspawn -n 4 ./mpi_hello` on pdvm (two simulated nodes of 2 slots, and
//! one node of 4: on two nodes Open MPI talks TCP between them, on one it
//! uses shared memory as on the real DVMs here) vs `prterun -n 4` (PRRTE 3.0.14, the
//! wheel's: it starts its own DVM each time) vs `pspawn -n 4` on a running
//! PRRTE master DVM: whole commands, in turn (A B C A B C …), N runs each,
//! medians and ratios to pdvm. `mpi_hello` is `tests/mpi/hello_allreduce.c`
//! built with the wheel's `mpicc`. Run: `cargo bench --bench mpi_hello`
//! (needs the peers: `scripts/install-peers.sh` or `PMIX_TOOLS_PEERS`).

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::mpi::{mpi_env, mpicc};
use support::pdvm::Pdvm;
use support::{run_with_timeout, show, unique_tmpdir, venv_dir, Prte, ToolCommand};

const N: usize = 10;

/// A named way to build one command to time.
type Contender<'a> = (&'static str, Box<dyn Fn() -> Command + 'a>);

/// Time one run of `cmd`, which must succeed and print 4 rank lines.
fn timed(cmd: &mut Command) -> Duration {
    cmd.stdin(Stdio::null());
    let t = Instant::now();
    let o = run_with_timeout(cmd, 120);
    let wall = t.elapsed();
    let ranks = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("rank "))
        .count();
    assert!(o.status.success() && ranks == 4, "{cmd:?}: {}", show(&o));
    wall
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if !watchdog::start("mpi_hello", Duration::from_secs(600)) {
        return;
    }
    let tmp = unique_tmpdir("bench-mpi-hello");
    let hello = mpicc("hello_allreduce.c", tmp.path());
    let venv = venv_dir();
    let mut b = Pdvm::builder(&["--nodes", "2", "--slots", "2"]);
    for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
        b = b.env(var, &venv);
    }
    let pdvm = b.start();
    let mut b1 = Pdvm::builder(&["--nodes", "1", "--slots", "4"]);
    for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
        b1 = b1.env(var, &venv);
    }
    let pdvm1 = b1.start();
    let master = Prte::start_master();
    let cmds: Vec<Contender> = vec![
        (
            "pspawn -n 4 on pdvm, 2 nodes",
            Box::new(|| {
                let mut c = pdvm.tool("pspawn");
                mpi_env(&mut c).args(["-n", "4"]).arg(&hello);
                c
            }),
        ),
        (
            "pspawn -n 4 on pdvm, 1 node",
            Box::new(|| {
                let mut c = pdvm1.tool("pspawn");
                mpi_env(&mut c).args(["-n", "4"]).arg(&hello);
                c
            }),
        ),
        (
            "prterun -n 4 (PRRTE 3.0.14)",
            Box::new(|| {
                let mut c = Command::new(venv.join("bin/prterun"));
                support::scrub_pmix_env(&mut c);
                mpi_env(&mut c);
                if nix::unistd::geteuid().is_root() {
                    c.arg("--allow-run-as-root");
                }
                c.args(["-n", "4", "--map-by", ":OVERSUBSCRIBE"])
                    .arg(&hello);
                c
            }),
        ),
        (
            "pspawn -n 4 on PRRTE master",
            Box::new(|| {
                let mut c = support::tool(&master, "pspawn").tmpdir_arg(&master.tmpdir);
                mpi_env(&mut c).args(["-n", "4", "--map-by", ":OVERSUBSCRIBE"]);
                for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
                    c.args(["-x", var]);
                }
                c.arg(&hello);
                c
            }),
        ),
    ];
    // One warm-up run each, then N rounds in turn.
    for (_, make) in &cmds {
        timed(&mut make());
    }
    let mut walls: Vec<Vec<Duration>> = vec![Vec::new(); cmds.len()];
    for _ in 0..N {
        for (i, (_, make)) in cmds.iter().enumerate() {
            walls[i].push(timed(&mut make()));
        }
    }
    let base = median(walls[0].clone());
    println!("mpi_hello: {N} runs each, in turn; median wall time (ratio to pdvm)");
    for ((name, _), w) in cmds.iter().zip(walls) {
        let m = median(w);
        println!(
            "  {name:32} {:8.1} ms  ({:.2}x)",
            m.as_secs_f64() * 1000.0,
            m.as_secs_f64() / base.as_secs_f64()
        );
    }
}

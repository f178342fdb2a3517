//! PSI/J throughput side by side in one run (issue 42): 100 PSI/J jobs of
//! `/bin/true` submitted at once and waited on (`integrations/psij/bench/jobs.py`)
//! with executor `pmix` on pdvm and on PRRTE master + psched, PSI/J's `slurm`
//! executor on the project's private 4-node Slurm 22.05, and `local`: jobs/s
//! and p50/p99 submit-to-COMPLETED (and how long the submissions took). One
//! more row is the executor's own ceiling: `pmix` beside pdvm with palloc
//! replaced by a stand-in that asks no DVM and starts each job's script at
//! once (`integrations/psij/bench/standin_palloc.py`).
//! `cargo bench --bench psij_jobs`;
//! `BENCH_JOBS=N` for another count. Each executor with its defaults (PSI/J's
//! `slurm` polls squeue every 30 s; `pmix` hears each end from its
//! `palloc --stdin-requests` agent, and polls pwatch every 0.5 s besides).

#[path = "watchdog.rs"]
mod watchdog;

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::tool::ToolHost;

fn plugin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("integrations/psij")
}

/// `jobs.py EXECUTOR N` through `cmd` (the venv's python, pointed at a DVM or
/// a Slurm): its JSON line.
fn measure(mut cmd: Command, executor: &str, n: usize) -> serde_json::Value {
    let home = support::unique_tmpdir("psij-bench-home");
    cmd.arg(plugin_dir().join("bench/jobs.py"))
        .arg(executor)
        .arg(n.to_string())
        .env("PYTHONPATH", plugin_dir().join("src"))
        .env("HOME", home.path())
        .current_dir(home.path())
        .stdin(Stdio::null());
    let o = support::run_with_timeout(&mut cmd, 1800);
    assert!(o.status.success(), "{executor}: {}", support::show(&o));
    let out = support::text(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap_or("")).expect("jobs.py JSON")
}

fn python() -> PathBuf {
    support::peers_dir().join("psij-venv/bin/python")
}

fn on(host: &impl ToolHost) -> Command {
    let mut c = host.tool_command(python());
    c.env("PATH", support::user_path());
    c
}

fn main() {
    if !watchdog::start("psij_jobs", Duration::from_secs(3000)) {
        return;
    }
    let n: usize = std::env::var("BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut rows = Vec::new();
    {
        let empty = support::unique_tmpdir("psij-bench-local");
        rows.push((
            "local",
            measure(on(&support::tool::Tmpdir(empty.path())), "local", n),
        ));
    }
    {
        let dvm = support::pdvm::Pdvm::start(&[
            "--nodes",
            "1",
            "--slots",
            "4",
            "--scheduler-nodes",
            "100",
        ]);
        rows.push(("pmix on pdvm", measure(on(&dvm), "pmix", n)));
        // The executor's own ceiling: the same, palloc replaced by a
        // stand-in that asks no DVM (pwatch's polls still reach pdvm).
        let standin = support::unique_tmpdir("psij-bench-standin");
        let palloc = standin.path().join("palloc");
        std::fs::write(
            &palloc,
            format!(
                "#!/bin/sh\nexec {} {} \"$@\"\n",
                python().display(),
                plugin_dir().join("bench/standin_palloc.py").display()
            ),
        )
        .expect("writing the stand-in");
        std::fs::set_permissions(&palloc, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("making the stand-in executable");
        let mut c = on(&dvm);
        let path = std::env::join_paths(
            std::iter::once(standin.path().to_path_buf())
                .chain(std::env::split_paths(&support::user_path())),
        )
        .expect("PATH");
        c.env("PATH", path);
        rows.push(("pmix, palloc stand-in (no DVM)", measure(c, "pmix", n)));
    }
    {
        let c = support::cluster::Cluster::start_with_psched(1, 8, &["--slots", "4"]);
        rows.push(("pmix on PRRTE master + psched", measure(on(&c), "pmix", n)));
    }
    {
        use support::slurm::{Slurm, Version};
        let nodes: Vec<String> = (1..=4).map(|i| format!("node{i:02}")).collect();
        let s = Slurm::start(Version::Debian22, &nodes, |p| Command::new(p));
        let mut c = Command::new(python());
        c.envs(s.env());
        rows.push(("slurm (Slurm 22.05, 4 nodes)", measure(c, "slurm", n)));
    }
    println!("\n{n} PSI/J jobs of /bin/true, submitted at once and waited on:");
    println!(
        "{:<32} {:>8} {:>8} {:>8} {:>9}",
        "executor", "jobs/s", "p50 s", "p99 s", "submit s"
    );
    for (name, v) in &rows {
        println!(
            "{:<32} {:>8} {:>8} {:>8} {:>9}",
            name, v["jobs_per_s"], v["p50_s"], v["p99_s"], v["submit_s"]
        );
    }
}

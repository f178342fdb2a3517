//! The MPI programs and the libpmix client of `tests/mpi/` run by `pspawn`
//! on pdvm, on the real PRRTE 3.0.14 (the wheel's) and on PRRTE master, side
//! by side: the DVM-independent parts of their answers must be the same
//! (the ranks' lines, the sums, the abort's exit status, the keys a PMIx
//! client gets). The layout differs (pdvm simulates two nodes; the real
//! DVMs run on this one host), so node names and local counts are not
//! compared. A missing peer or compiler fails the test.

use std::path::Path;
use std::process::{Command, Output};

use crate::pdvm_mpi::family_lines;
use crate::support::mpi::{cc_libpmix, mpi_env, mpicc};
use crate::support::pdvm::Pdvm;
use crate::support::ToolCommand;
use crate::support::{run_with_timeout, show, text, tool, unique_tmpdir, venv_dir, Prte};

/// The three DVMs a program runs on.
struct Dvms {
    pdvm: Pdvm,
    prte3: Prte,
    master: Prte,
}

impl Dvms {
    fn start() -> Dvms {
        let venv = venv_dir();
        let mut b = Pdvm::builder(&["--nodes", "2", "--slots", "2"]);
        for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
            b = b.env(var, &venv);
        }
        Dvms {
            pdvm: b.start(),
            prte3: Prte::start(),
            master: Prte::start_master(),
        }
    }

    /// `pspawn -n N PROGRAM` on each DVM: (its name, the output).
    fn run(&self, n: &str, program: &Path) -> Vec<(&'static str, Output)> {
        let with = |mut cmd: Command, extra: &[&str]| {
            mpi_env(&mut cmd).args(["-n", n]).args(extra).arg(program);
            for var in ["OPAL_PREFIX", "PRTE_PREFIX", "PMIX_INSTALL_PREFIX"] {
                cmd.args(["-x", var]);
            }
            run_with_timeout(&mut cmd, 120)
        };
        let prte = |dvm: &Prte| {
            let cmd = tool(dvm, "pspawn").tmpdir_arg(&dvm.tmpdir);
            with(cmd, &["--map-by", ":OVERSUBSCRIBE"])
        };
        vec![
            ("pdvm", with(self.pdvm.tool("pspawn"), &[])),
            ("PRRTE 3.0.14", prte(&self.prte3)),
            ("PRRTE master", prte(&self.master)),
        ]
    }
}

/// Lines of `o`'s stdout starting with `prefix`, sorted.
fn sorted_lines(o: &Output, prefix: &str) -> Vec<String> {
    let mut l: Vec<String> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(String::from)
        .collect();
    l.sort();
    l
}

/// Every DVM's `f(output)` equals pdvm's (the first).
fn same_everywhere<T: PartialEq + std::fmt::Debug>(
    runs: &[(&str, Output)],
    f: impl Fn(&Output) -> T,
) -> T {
    let want = f(&runs[0].1);
    for (name, o) in runs {
        assert_eq!(f(o), want, "{name} differs from pdvm: {}", show(o));
    }
    want
}

#[test]
fn mpi_programs_answer_the_same_on_pdvm_and_both_prrtes() {
    let tmp = unique_tmpdir("mpi-side-by-side");
    let dvms = Dvms::start();

    // Allreduce: "rank R of 4 on NODE local L of M sum 6" -> (R, 4, 6).
    let hello = mpicc("hello_allreduce.c", tmp.path());
    let runs = dvms.run("4", &hello);
    let ranks = same_everywhere(&runs, |o| {
        assert!(o.status.success(), "{}", show(o));
        let mut v: Vec<(String, String, String)> = sorted_lines(o, "rank ")
            .iter()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w[1].to_string(), w[3].to_string(), w[11].to_string())
            })
            .collect();
        v.sort();
        v
    });
    assert_eq!(ranks.len(), 4, "{ranks:?}");
    assert!(
        ranks.iter().all(|(_, n, s)| n == "4" && s == "6"),
        "{ranks:?}"
    );

    // A ring of sends.
    let ring = mpicc("ring.c", tmp.path());
    let lines = same_everywhere(&dvms.run("4", &ring), |o| sorted_lines(o, "ring "));
    assert_eq!(lines, ["ring 4 rounds 3 token 12"]);

    // MPI_Abort(3) by rank 1: pspawn exits with the job's status.
    let abort = mpicc("abort.c", tmp.path());
    let code = same_everywhere(&dvms.run("4", &abort), |o| o.status.code());
    assert_eq!(code, Some(3));
}

/// `prterun -n 2 PROGRAM` of the PRRTE whose `prterun` is `bin`.
fn prterun(bin: &Path, program: &Path) -> Output {
    let mut cmd = Command::new(bin);
    crate::support::scrub_pmix_env(&mut cmd);
    mpi_env(&mut cmd);
    if nix::unistd::geteuid().is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["-n", "2", "--map-by", ":OVERSUBSCRIBE"])
        .arg(program);
    run_with_timeout(&mut cmd, 120)
}

/// `pspawn -n 2 PROGRAM` on pdvm and on both PRRTE DVMs, then `prterun -n
/// 2 PROGRAM` of both PRRTEs: (who ran it, the output).
fn pspawn_and_prterun(dvms: &Dvms, program: &Path) -> Vec<(&'static str, Output)> {
    let mut runs = dvms.run("2", program);
    let venv = venv_dir();
    runs.push((
        "prterun 3.0.14",
        prterun(&venv.join("bin/prterun"), program),
    ));
    runs.push((
        "prterun master",
        prterun(&crate::support::master_prrte_bin("prterun"), program),
    ));
    runs
}

/// MPI_Comm_spawn: the children's lines reach the launcher. `pspawn` on
/// pdvm, on PRRTE 3.0.14 (whose server forwards a spawned job's output to
/// nobody: pspawn finds the job and pulls it) and on PRRTE master shows
/// what `prterun` shows on both PRRTEs, unprefixed, children's stdout on
/// stdout and stderr on stderr; and when the children outlive their
/// parents, pspawn waits for them and exits with the first non-zero status
/// among them, as prterun does.
#[test]
fn mpi_comm_spawn_children_answer_the_same_under_pspawn_and_prterun() {
    let tmp = unique_tmpdir("mpi-spawn-side-by-side");
    let dvms = Dvms::start();

    let spawn = mpicc("spawn.c", tmp.path());
    let lines = same_everywhere(&pspawn_and_prterun(&dvms, &spawn), |o| {
        assert!(o.status.success(), "{}", show(o));
        super::pdvm_mpi::spawn_lines(o)
    });
    assert_eq!(lines, super::pdvm_mpi::SPAWN_LINES);

    let late = mpicc("spawn_late.c", tmp.path());
    let runs = pspawn_and_prterun(&dvms, &late);
    let got = same_everywhere(&runs, |o| {
        (
            o.status.code(),
            family_lines(&o.stdout),
            family_lines(&o.stderr),
        )
    });
    let (code, out, err) = got;
    assert_eq!(code, Some(5));
    assert_eq!(
        out,
        [
            "child 0 end",
            "child 0 start",
            "child 1 end",
            "child 1 start",
            "parent 0 spawned",
            "parent 1 spawned"
        ]
    );
    assert_eq!(err, ["child 0 err", "child 1 err"]);
}

#[test]
fn a_libpmix_client_gets_the_same_keys_on_pdvm_and_both_prrtes() {
    let tmp = unique_tmpdir("pmix-keys-side-by-side");
    let dvms = Dvms::start();
    let client = cc_libpmix("pmix_keys.c", tmp.path());
    let runs = dvms.run("4", &client);
    // The keys whose values do not depend on the layout (the universe
    // size is the session's slots: 4 on pdvm's two simulated nodes, this
    // host's cores on PRRTE).
    let keys = [
        "job_size",
        "commit",
        "fence",
        "fence2",
        "finalize",
        "appnum",
        "peer_value",
    ];
    let got = same_everywhere(&runs, |o| {
        assert!(o.status.success(), "{}", show(o));
        sorted_lines(o, "rank ")
            .iter()
            .map(|l| {
                let words: Vec<(&str, &str)> = l
                    .split_whitespace()
                    .filter_map(|w| w.split_once('='))
                    .collect();
                let mut kept: Vec<String> = words
                    .iter()
                    .filter(|(k, _)| keys.contains(k))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                kept.insert(
                    0,
                    l.split_whitespace().take(2).collect::<Vec<_>>().join(" "),
                );
                kept.join(" ")
            })
            .collect::<Vec<String>>()
    });
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.iter().all(|l| !l.contains("ERR(")), "{got:?}");
}

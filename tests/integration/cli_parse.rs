//! Command-line parsing: value parsers and whole command lines of the five
//! tools, including refusals (which exit 2 before any connection).

use clap::Parser;
use pmix_tools::cli::parse::*;
use pmix_tools::cli::request::{EventKind, StatusWhat, WatchRequest};
use pmix_tools::cli::{
    try_parse_validated, PallocArgs, PallocMode, PdvmArgs, PreleaseArgs, PspawnArgs, PwatchArgs,
};
use pmix_tools::proto::{parse_inheritance, Directive, Inheritance};

fn ok<T: Parser + pmix_tools::cli::Validate>(line: &str) -> T {
    match try_parse_validated::<T, _, _>(line.split_whitespace()) {
        Ok(t) => t,
        Err(e) => panic!("`{line}` refused: {e}"),
    }
}

/// The command line is refused with exit code 2; returns the message.
fn refused<T: Parser + pmix_tools::cli::Validate + std::fmt::Debug>(line: &str) -> String {
    match try_parse_validated::<T, _, _>(line.split_whitespace()) {
        Ok(t) => panic!("`{line}` accepted: {t:?}"),
        Err(e) => {
            assert_eq!(e.exit_code(), 2, "`{line}`: {e}");
            e.to_string()
        }
    }
}

// ---- value parsers ---------------------------------------------------------

#[test]
fn counts() {
    assert_eq!(parse_count("3"), Ok(3));
    for bad in ["0", "-1", "x", "", "2.5"] {
        assert!(
            parse_count(bad)
                .unwrap_err()
                .contains("positive whole number"),
            "{bad}"
        );
    }
    assert_eq!(parse_nonneg_count("0"), Ok(0));
}

#[test]
fn durations() {
    let forms = [
        ("90", 5_400),
        ("45:00", 2_700),
        ("2:00:00", 7_200),
        ("1-00:00:00", 86_400),
        ("2h", 7_200),
        ("30m", 1_800),
        ("45s", 45),
        ("1d", 86_400),
        ("1h30m", 5_400),
    ];
    for (s, secs) in forms {
        assert_eq!(parse_time_limit(s), Ok(secs), "{s}");
    }
    // One rule for every duration flag: a plain number is minutes (this was
    // 90 seconds for waits before issue 9).
    assert_eq!(parse_duration_secs("90"), Ok(5_400));
    assert_eq!(parse_duration_secs("90s"), Ok(90));
    assert_eq!(parse_warn_secs("5"), Ok(300));
    assert_eq!(
        parse_time_limit_or_unlimited("UNLIMITED"),
        Ok(TimeLimit(None))
    );
    for bad in ["0", "-3", "1:2:3:4", "9:99", "2x", "h2", "", "1.5h"] {
        let e = parse_time_limit(bad).unwrap_err();
        assert!(e.contains("MM:SS") && e.contains("2h"), "{bad}: {e}");
    }
}

#[test]
fn inheritance_words() {
    assert_eq!(parse_inheritance("none"), Ok(Inheritance::None));
    assert_eq!(parse_inheritance("child"), Ok(Inheritance::Child));
    assert_eq!(parse_inheritance("default"), Ok(Inheritance::Default));
    assert_eq!(
        parse_inheritance("child-default"),
        Ok(Inheritance::ChildDefault)
    );
    assert_eq!(
        parse_inheritance("CHILD_DEFAULT"),
        Ok(Inheritance::ChildDefault)
    );
    let e = parse_inheritance("forever").unwrap_err();
    assert!(e.contains("none, child, default or child-default"), "{e}");
}

#[test]
fn node_lists() {
    assert_eq!(
        parse_nodelist("node[01-04],gpu7").unwrap(),
        ["node01", "node02", "node03", "node04", "gpu7"]
    );
    assert_eq!(parse_nodelist("rack[1-2]-n[1-3]").unwrap().len(), 6);
    for bad in ["node[01-", "node[4-1]", "a,,b", "node[x]", "n o"] {
        assert!(
            parse_nodelist(bad).unwrap_err().contains("file:PATH"),
            "{bad}"
        );
    }
    assert!(parse_nodelist("n[1-2000000]")
        .unwrap_err()
        .contains("1000000"));

    let dir = std::env::temp_dir().join(format!("pmix-tools-cli-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("nodes.txt");
    std::fs::write(&f, "# login nodes\nn1\nn2,gpu[1-2]\n\nn1\n").unwrap();
    assert_eq!(
        parse_nodelist(&format!("file:{}", f.display())).unwrap(),
        ["n1", "n2", "gpu1", "gpu2"]
    );
    std::fs::write(&f, "n1\nbad[\n").unwrap();
    assert!(parse_nodelist(&format!("file:{}", f.display()))
        .unwrap_err()
        .contains(":2:"));
    assert!(parse_nodelist(&format!("file:{}", dir.join("missing").display())).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn memory_env_signal_ids() {
    assert_eq!(parse_mem_mb("4G"), Ok(4096.0));
    assert_eq!(parse_mem_mb("512M"), Ok(512.0));
    assert_eq!(parse_mem_mb("100"), Ok(100.0));
    assert!(parse_mem_mb("4Q").unwrap_err().contains("4G"));
    assert!(parse_mem_mb("0").is_err());

    assert_eq!(parse_env("A=1").unwrap().value.as_deref(), Some("1"));
    assert_eq!(parse_env("HOME").unwrap().value, None);
    assert!(parse_env("1X").unwrap_err().contains("VAR=VALUE"));

    assert_eq!(
        parse_signal("TERM").unwrap(),
        nix::sys::signal::Signal::SIGTERM
    );
    assert!(parse_signal("BOGUS").unwrap_err().contains("TERM"));

    assert!(parse_id("").is_err());
    assert!(parse_id("has space").is_err());
}

// ---- palloc ----------------------------------------------------------------

#[test]
fn palloc_typical() {
    let a: PallocArgs =
        ok("palloc -N 2 -t 90 -p batch --inherit child --warn-timeout 5 -- srun -l hostname");
    let r = a.request();
    assert_eq!(r.directive, Directive::New);
    assert_eq!(r.attrs.num_nodes, Some(2));
    assert_eq!(r.attrs.time_secs, Some(5_400));
    assert_eq!(r.attrs.queue.as_deref(), Some("batch"));
    assert_eq!(r.attrs.inheritance(), Some(Inheritance::Child));
    assert_eq!(r.attrs.warn_timeout, Some(300));
    assert_eq!(
        a.mode(),
        PallocMode::Run(vec!["srun".into(), "-l".into(), "hostname".into()])
    );

    let a: PallocArgs =
        ok("palloc -w node[01-03] --exclude node[04] --share --target job@1 --mem 4G -c 8 --quiet --hold");
    let r = a.request();
    assert_eq!(r.attrs.nodes_named(), ["node01", "node02", "node03"]);
    assert_eq!(r.attrs.nodes_excluded(), ["node04"]);
    assert!(r.attrs.shared());
    assert_eq!(r.attrs.target.as_deref(), Some("job@1"));
    assert_eq!(r.attrs.mem_mb, Some(4096));
    assert_eq!(r.attrs.num_cpus, Some(8));
    assert_eq!(a.output().quiet, 1);
    assert_eq!(a.mode(), PallocMode::Hold);

    let a: PallocArgs = ok("palloc --extend alloc.7 -N 1 -t 1h");
    let r = a.request();
    assert_eq!(
        (r.directive, r.attrs.alloc_id.as_deref()),
        (Directive::Extend, Some("alloc.7"))
    );

    let a: PallocArgs = ok("palloc --extend-request nightly -t 30m");
    let r = a.request();
    assert_eq!(
        (r.directive, r.attrs.req_id.as_deref(), r.attrs.alloc_id),
        (Directive::Extend, Some("nightly"), None)
    );

    let a: PallocArgs = ok("palloc -N 4 --no-wait --request-id r1");
    assert_eq!(a.mode(), PallocMode::NoWait);
    assert_eq!(a.request().attrs.req_id.as_deref(), Some("r1"));

    let a: PallocArgs =
        ok("palloc --uri file:/tmp/uri --as-tool --wait-to-connect 5 --num-connect-retries 3 -N 1");
    let c = a.connect.to_options();
    assert_eq!(c.uri.as_deref(), Some("file:/tmp/uri"));
    assert!(c.force_tool);
    assert_eq!(
        (c.wait_to_connect, c.retries),
        (Some(std::time::Duration::from_secs(5)), 3)
    );
}

#[test]
fn palloc_refusals() {
    refused::<PallocArgs>("palloc -N 0");
    refused::<PallocArgs>("palloc -N -2");
    refused::<PallocArgs>("palloc -c 0");
    assert!(refused::<PallocArgs>("palloc --inherit forever").contains("child-default"));
    assert!(refused::<PallocArgs>("palloc -w node[1-").contains("node[01-04]"));
    assert!(refused::<PallocArgs>("palloc -t 1:99").contains("D-H:MM:SS"));
    assert!(refused::<PallocArgs>("palloc -t soon").contains("D-H:MM:SS"));
    let e = refused::<PallocArgs>("palloc --extend -N 1");
    assert!(
        e.contains("needs a target") && e.contains("PMIX_ERR_BAD_PARAM"),
        "{e}"
    );
    refused::<PallocArgs>("palloc --extend a1 --share");
    refused::<PallocArgs>("palloc --hold -- hostname");
    refused::<PallocArgs>("palloc --no-wait --hold");
    refused::<PallocArgs>("palloc --extend-request r --request-id r2");
    refused::<PallocArgs>("palloc -w n1 --exclude n1");
    refused::<PallocArgs>("palloc --system-server-first --system-server-only");
    refused::<PallocArgs>("palloc --pid 0");
}

// ---- pspawn ----------------------------------------------------------------

#[test]
fn pspawn_typical() {
    let a: PspawnArgs =
        ok("pspawn -n 4 -x OMP=2 --target a1,a2 --target a3 --default-pool ./a.out --flag x");
    let r = a.request().unwrap();
    assert_eq!(r.targets, ["a1", "a2", "a3"]);
    assert!(r.default_pool);
    assert_eq!(r.apps.len(), 1);
    assert_eq!(r.apps[0].np, 4);
    assert_eq!(r.apps[0].program, "./a.out");
    assert_eq!(r.apps[0].args, ["--flag", "x"]);
    assert_eq!(
        r.apps[0].env.last().unwrap().name,
        "OMP",
        "-x comes after the exported environment, so it wins"
    );

    let a: PspawnArgs =
        ok("pspawn -n 2 -H node[1-2] manager -v : -n 8 -x W=1 --wdir /w worker a : tool");
    let r = a.request().unwrap();
    assert_eq!(r.apps.len(), 3);
    assert_eq!(
        (r.apps[0].np, r.apps[0].args.clone()),
        (2, vec!["-v".to_string()])
    );
    assert_eq!(r.apps[0].hosts, ["node1", "node2"]);
    assert_eq!((r.apps[1].np, r.apps[1].program.as_str()), (8, "worker"));
    assert_eq!(r.apps[1].wdir.as_deref(), Some("/w"));
    assert_eq!(
        r.apps[1].hosts,
        ["node1", "node2"],
        "global -H is a default"
    );
    assert_eq!(
        (r.apps[2].np, r.apps[2].program.as_str()),
        (2, "tool"),
        "global -n is a default"
    );

    let a: PspawnArgs = ok("pspawn --detach --map-by ppr:2:node true");
    let r = a.request().unwrap();
    assert!(r.detach);
    assert_eq!(r.apps[0].np, 1);
    assert_eq!(r.map_by.as_deref(), Some("ppr:2:node"));

    let a: PspawnArgs = ok("pspawn --tag-output --timeout 90s hostname");
    let r = a.request().unwrap();
    assert!(r.tag_output);
    assert_eq!(r.timeout_secs, Some(90));
}

/// Issue 17: options before the program are parsed strictly. An unknown one
/// was taken as the program (`pspawn -N 2 -n 4 true` said "program not
/// found: -N", exit 5); now it is a usage error naming the nearest option or
/// the Slurm habit's reason, and saying that `--` starts the program.
#[test]
fn pspawn_unknown_option_is_a_usage_error() {
    let msg = refused::<PspawnArgs>("pspawn -p debug -n 4 true");
    assert!(msg.contains("unknown option `-p`"), "{msg}");
    assert!(msg.contains("palloc -p"), "{msg}");
    assert!(msg.contains("`--` starts the program"), "{msg}");
    let msg = refused::<PspawnArgs>("pspawn -n 4 --tme 3 true");
    assert!(msg.contains("did you mean `--timeout`"), "{msg}");
    assert!(msg.contains("`--` starts the program"), "{msg}");
    let msg = refused::<PspawnArgs>("pspawn --pty bash");
    assert!(msg.contains("not a PMIx spawn attribute"), "{msg}");
    // After the program, hyphens are the program's own; `--` starts one
    // whose name begins with `-`.
    let a: PspawnArgs = ok("pspawn -n 2 ls -N -l : -n 1 echo --tme");
    assert_eq!(a.app, ["ls", "-N", "-l", ":", "-n", "1", "echo", "--tme"]);
    let a: PspawnArgs = ok("pspawn -n 2 -- -weird x");
    assert_eq!(a.app, ["-weird", "x"]);
}

/// Issue 17: `--map-by` completes the usual policies, and still passes any
/// policy the DVM may know (PRRTE's modifiers).
#[test]
fn pspawn_map_by_completes_and_stays_open() {
    use clap::CommandFactory;
    let cmd = PspawnArgs::command();
    let arg = cmd
        .get_arguments()
        .find(|a| a.get_id() == "map_by")
        .expect("--map-by");
    let offered: Vec<String> = arg
        .get_possible_values()
        .iter()
        .map(|p| p.get_name().to_string())
        .collect();
    for p in ["slot", "node", "ppr:1:node"] {
        assert!(
            offered.iter().any(|o| o == p),
            "{p} not offered: {offered:?}"
        );
    }
    let a: PspawnArgs = ok("pspawn --map-by ppr:2:package:PE=2 true");
    assert_eq!(a.map_by.as_deref(), Some("ppr:2:package:PE=2"));
    refused::<PspawnArgs>("pspawn --map-by= true");
}

#[test]
fn pspawn_refusals() {
    refused::<PspawnArgs>("pspawn");
    refused::<PspawnArgs>("pspawn -n 0 true");
    refused::<PspawnArgs>("pspawn -n -1 true");
    refused::<PspawnArgs>("pspawn a :");
    refused::<PspawnArgs>("pspawn a : : b");
    refused::<PspawnArgs>("pspawn a : -n 0 b");
    refused::<PspawnArgs>("pspawn a : --bogus b");
    refused::<PspawnArgs>("pspawn -x 9=1 a");
    refused::<PspawnArgs>("pspawn --target a1,,a2 a");
    refused::<PspawnArgs>("pspawn --detach --timeout 5 a");
    refused::<PspawnArgs>("pspawn --timeout 0 a");
}

// ---- prelease ----------------------------------------------------------------

#[test]
fn prelease_forms() {
    let a: PreleaseArgs = ok("prelease a1 a2 --request-id r1");
    let rs = a.requests();
    assert_eq!(rs.len(), 3);
    assert!(rs.iter().all(|r| r.directive == Directive::Release));
    assert_eq!(rs[2].request_id.as_deref(), Some("r1"));

    let a: PreleaseArgs = ok("prelease a1 -w node[07-08]");
    assert_eq!(a.requests()[0].nodelist, ["node07", "node08"]);
    let a: PreleaseArgs = ok("prelease --request-id r -N 2");
    assert_eq!(a.requests()[0].nodes, Some(2));

    let a: PreleaseArgs = ok("prelease --cancel r9");
    let rs = a.requests();
    assert_eq!(
        (rs[0].directive, rs[0].request_id.as_deref()),
        (Directive::ReqCancel, Some("r9"))
    );
    let a: PreleaseArgs = ok("prelease --reacquire a4");
    assert_eq!(a.requests()[0].directive, Directive::Reaquire);

    refused::<PreleaseArgs>("prelease");
    refused::<PreleaseArgs>("prelease a1 a2 -N 1");
    refused::<PreleaseArgs>("prelease a1 -N 0");
    refused::<PreleaseArgs>("prelease a1 --cancel r");
    refused::<PreleaseArgs>("prelease --cancel r -N 1");
}

// ---- pwatch ----------------------------------------------------------------

/// Issue 17: every flag that takes several values takes a comma list too
/// (squeue's `-t R,PD`); they were refused.
#[test]
fn pwatch_comma_lists() {
    use pmix_tools::cli::request::StatusState;
    let a: PwatchArgs = ok("pwatch --status --what reservations,nodes --state idle,busy");
    match a.request() {
        WatchRequest::Status(s) => {
            assert_eq!(s.states, [StatusState::Idle, StatusState::Busy]);
            assert_eq!(s.what, [StatusWhat::Nodes]);
        }
        other => panic!("{other:?}"),
    }
    let a: PwatchArgs = ok("pwatch --status --what reservations,scheduler");
    match a.request() {
        WatchRequest::Status(s) => {
            assert_eq!(s.what, [StatusWhat::Reservations, StatusWhat::Scheduler])
        }
        other => panic!("{other:?}"),
    }
    let a: PwatchArgs = ok("pwatch --event timeout-warning,job-end --alloc a1,a2 --job j@1,j@2");
    match a.request() {
        WatchRequest::Events(e) => {
            assert_eq!(e.events, [EventKind::TimeoutWarning, EventKind::JobEnd]);
            assert_eq!(e.alloc_ids, ["a1", "a2"]);
            assert_eq!(e.nspaces, ["j@1", "j@2"]);
        }
        other => panic!("{other:?}"),
    }
    let a: PreleaseArgs = ok("prelease --request-id r1,r2");
    assert_eq!(a.request_id, ["r1", "r2"]);
}

#[test]
fn pwatch_forms() {
    let a: PwatchArgs = ok("pwatch");
    match a.request() {
        WatchRequest::Events(e) => assert_eq!(e.events, [EventKind::Any]),
        other => panic!("{other:?}"),
    }
    let a: PwatchArgs = ok("pwatch --event timeout-warning --event job-end --alloc a1 --job j@1 --count 3 --timeout 1m --exec true --nspace srv@0");
    match a.request() {
        WatchRequest::Events(e) => {
            assert_eq!(e.events, [EventKind::TimeoutWarning, EventKind::JobEnd]);
            assert_eq!(e.alloc_ids, ["a1"]);
            assert_eq!(e.nspaces, ["j@1"]);
            assert_eq!((e.count, e.timeout_secs), (Some(3), Some(60)));
            assert_eq!(e.exec.as_deref(), Some("true"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.connect.nspace.as_deref(), Some("srv@0"));

    let a: PwatchArgs = ok("pwatch --alloc a1 --warn-timeout 5 --extend-by 30");
    match a.request() {
        WatchRequest::Events(e) => {
            assert_eq!((e.extend_by_secs, e.warn_timeout), (Some(1_800), Some(300)))
        }
        other => panic!("{other:?}"),
    }

    let a: PwatchArgs = ok("pwatch --status --json --interval 5s");
    match a.request() {
        WatchRequest::Status(s) => {
            assert_eq!(
                s.what,
                [
                    StatusWhat::Reservations,
                    StatusWhat::Namespaces,
                    StatusWhat::Nodes,
                    StatusWhat::Scheduler
                ]
            );
            assert_eq!(s.interval_secs, Some(5));
            assert!(s.states.is_empty() && !s.mine && !s.all);
        }
        other => panic!("{other:?}"),
    }
    let a: PwatchArgs = ok("pwatch --status --what nodes");
    assert!(matches!(a.request(), WatchRequest::Status(s) if s.what == [StatusWhat::Nodes]));

    refused::<PwatchArgs>("pwatch --event sometimes");
    refused::<PwatchArgs>("pwatch --event any --event job-end");
    refused::<PwatchArgs>("pwatch --count 0");
    refused::<PwatchArgs>("pwatch --status --alloc a1");
    refused::<PwatchArgs>("pwatch --mine");
    refused::<PwatchArgs>("pwatch --state active");
    refused::<PwatchArgs>("pwatch --status --state bogus");
    refused::<PwatchArgs>("pwatch --status --what nodes --state queued");
    let a: PwatchArgs = ok("pwatch --status --state queued --state ended --mine");
    match a.request() {
        WatchRequest::Status(s) => {
            assert_eq!(s.what, [StatusWhat::Reservations, StatusWhat::Namespaces]);
            assert!(s.all && s.mine, "ended implies --all");
        }
        other => panic!("{other:?}"),
    }
    refused::<PwatchArgs>("pwatch --interval 5");
    refused::<PwatchArgs>("pwatch --warn-timeout 60");
    refused::<PwatchArgs>("pwatch --extend-by never");
}

// ---- pdvm ------------------------------------------------------------------

#[test]
fn pdvm_forms() {
    let a: PdvmArgs = ok(
        "pdvm --nodes 4 --slots 2 --scheduler-nodes 8 --time-scale 10 --pmix-compat -- ./wf.sh arg",
    );
    assert_eq!((a.nodes, a.slots, a.scheduler_nodes), (4, 2, 8));
    assert_eq!(a.time_scale, 10.0);
    assert!(a.pmix_compat);
    assert_eq!(a.command, ["./wf.sh", "arg"]);
    let a: PdvmArgs = ok("pdvm --terminate");
    assert!(a.terminate);
    assert_eq!(
        a.job_history,
        pmix_tools::dvm::JOB_HISTORY as u64,
        "--job-history's default is the model's"
    );
    let a: PdvmArgs = ok("pdvm --job-history 0");
    assert_eq!(a.job_history, 0);

    refused::<PdvmArgs>("pdvm --nodes 0");
    refused::<PdvmArgs>("pdvm --time-scale 0");
    refused::<PdvmArgs>("pdvm --time-scale nan");
    refused::<PdvmArgs>("pdvm --job-history -1");
    refused::<PdvmArgs>("pdvm --daemonize -- sh");
    refused::<PdvmArgs>("pdvm --terminate --daemonize");
    refused::<PdvmArgs>("pdvm --nodes 999999 --scheduler-nodes 999999");
}

#[test]
fn connection_specs() {
    let a: PspawnArgs =
        ok("pspawn --pid file:/run/p --namespace prte@0 --tmpdir /t --system-server-only true");
    let c = a.connect.to_options();
    assert_eq!(c.pid.as_deref(), Some("file:/run/p"));
    assert_eq!(c.nspace.as_deref(), Some("prte@0"));
    assert!(c.system_only);
    // A literal URI needs the server's NSPACE.RANK (`prte@0` alone is now a usage error).
    let a: PspawnArgs = ok("pspawn --pid 42 --uri prte@0.0;tcp4://127.0.0.1:1 true");
    let c = a.connect.to_options();
    assert_eq!(c.pid.as_deref(), Some("42"));
    assert_eq!(c.uri.as_deref(), Some("prte@0.0;tcp4://127.0.0.1:1"));
    for bad in [
        "garbage",
        "prte@0;tcp4://127.0.0.1:1",
        "p@0.0;udp://h:1",
        "p@0.0;tcp4://h",
    ] {
        let e = refused::<PspawnArgs>(&format!("pspawn --uri {bad} true"));
        assert!(e.contains("not a server URI"), "{bad}: {e}");
    }
}

#[test]
fn help_and_version_exit_zero() {
    for line in ["palloc --help", "pspawn --version"] {
        let e = match line.split_whitespace().next() {
            Some("palloc") => {
                try_parse_validated::<PallocArgs, _, _>(line.split_whitespace()).unwrap_err()
            }
            _ => try_parse_validated::<PspawnArgs, _, _>(line.split_whitespace()).unwrap_err(),
        };
        assert_eq!(e.exit_code(), 0, "{line}");
    }
}

// ---- issue 9: one meaning per short flag, one unit rule, --parsable ----------

#[test]
fn short_flags_mean_one_thing() {
    // -q is --quiet everywhere, palloc included; the queue is -p/--partition/--queue.
    let a: PallocArgs = ok("palloc -qq -N 1");
    assert_eq!(a.output().quiet, 2);
    assert_eq!(a.request().attrs.queue, None);
    for line in [
        "palloc -p debug -N 1",
        "palloc --partition debug -N 1",
        "palloc --queue debug -N 1",
    ] {
        let a: PallocArgs = ok(line);
        assert_eq!(a.request().attrs.queue.as_deref(), Some("debug"), "{line}");
    }
    let a: PspawnArgs = ok("pspawn -q true");
    assert_eq!(a.output.quiet, 1);
    let a: PreleaseArgs = ok("prelease -q a1");
    assert_eq!(a.output.quiet, 1);
    // -x is --env (pspawn); palloc has no -x: its exclude is --exclude only.
    refused::<PallocArgs>("palloc -x n1 -N 1");
    let a: PspawnArgs = ok("pspawn -x A=1 true");
    assert_eq!(a.request().unwrap().apps[0].env.last().unwrap().name, "A");
    // -J names the request, as Slurm's job name.
    let a: PallocArgs = ok("palloc -J nightly -N 1");
    assert_eq!(a.request().attrs.req_id.as_deref(), Some("nightly"));
    let a: PallocArgs = ok("palloc --job-name nightly -N 1");
    assert_eq!(a.request().attrs.req_id.as_deref(), Some("nightly"));
}

#[test]
fn one_unit_rule_for_every_duration_flag() {
    let a: PallocArgs = ok("palloc -N 1 -t 30 --warn-timeout 2");
    let r = a.request();
    assert_eq!(
        (r.attrs.time_secs, r.attrs.warn_timeout),
        (Some(1_800), Some(120))
    );
    let a: PallocArgs = ok("palloc -N 1 -t UNLIMITED");
    assert_eq!(a.request().attrs.time_secs, None);
    let a: PallocArgs = ok("palloc -N 1 -t 1-00:00:00");
    assert_eq!(a.request().attrs.time_secs, Some(86_400));
    let a: PspawnArgs = ok("pspawn --timeout 2 true");
    assert_eq!(a.request().unwrap().timeout_secs, Some(120));
    let a: PspawnArgs = ok("pspawn --timeout 00:30 true");
    assert_eq!(a.request().unwrap().timeout_secs, Some(30));
    let a: PwatchArgs = ok("pwatch --status --interval 1");
    assert!(matches!(a.request(), WatchRequest::Status(s) if s.interval_secs == Some(60)));
    let a: PwatchArgs = ok("pwatch --timeout 1 --alloc a1 --extend-by 10 --warn-timeout 1");
    match a.request() {
        WatchRequest::Events(e) => assert_eq!(
            (e.timeout_secs, e.extend_by_secs, e.warn_timeout),
            (Some(60), Some(600), Some(60))
        ),
        other => panic!("{other:?}"),
    }
    // --wait-to-connect keeps OpenPMIx's meaning: seconds between retries.
    let a: PspawnArgs = ok("pspawn --wait-to-connect 2 true");
    assert_eq!(
        a.connect.to_options().wait_to_connect,
        Some(std::time::Duration::from_secs(2))
    );
    refused::<PallocArgs>("palloc -t forever");
    refused::<PallocArgs>("palloc --warn-timeout UNLIMITED");
}

#[test]
fn usage_errors_say_what_is_wrong() {
    let e = refused::<PallocArgs>("palloc -N -3");
    assert!(
        e.contains("negative") && e.contains("positive whole number"),
        "{e}"
    );
    let e = refused::<PspawnArgs>("pspawn -n -2 true");
    assert!(e.contains("negative"), "{e}");
    let e = refused::<PallocArgs>("palloc --uri garbage");
    assert!(e.contains("not a server URI"), "{e}");
}

#[test]
fn parsable_and_stdin() {
    let a: PallocArgs = ok("palloc -N 1 --parsable");
    assert!(a.parsable);
    refused::<PallocArgs>("palloc -N 1 --parsable --json");
    let a: PspawnArgs = ok("pspawn --detach --parsable true");
    assert!(a.parsable && a.request().unwrap().detach);
    refused::<PspawnArgs>("pspawn --parsable true");
    use pmix_tools::cli::StdinTarget;
    let a: PspawnArgs = ok("pspawn cat");
    assert_eq!(a.request().unwrap().stdin, StdinTarget::Rank(0));
    let a: PspawnArgs = ok("pspawn --stdin none cat");
    assert_eq!(a.request().unwrap().stdin, StdinTarget::None);
    let a: PspawnArgs = ok("pspawn --stdin 3 -n 4 cat");
    assert_eq!(a.request().unwrap().stdin, StdinTarget::Rank(3));
    let a: PspawnArgs = ok("pspawn --detach cat");
    assert_eq!(a.request().unwrap().stdin, StdinTarget::None);
    let a: PspawnArgs = ok("pspawn --stdin all -n 2 cat");
    assert_eq!(a.request().unwrap().stdin, StdinTarget::All);
    refused::<PspawnArgs>("pspawn --stdin every cat");
    refused::<PspawnArgs>("pspawn --detach --stdin 0 cat");
}

#[test]
fn palloc_alone_opens_a_shell_at_a_terminal() {
    let a: PallocArgs = ok("palloc");
    // A NEW naming no nodes asks for one, as salloc does.
    assert_eq!(a.request().attrs.num_nodes, Some(1));
    assert_eq!(
        a.mode_at(true, Some("/bin/bash")),
        PallocMode::Run(vec!["/bin/bash".into()])
    );
    assert_eq!(
        a.mode_at(true, None),
        PallocMode::Run(vec!["/bin/sh".into()])
    );
    // In scripts (not a terminal) it requests and prints.
    assert_eq!(a.mode_at(false, Some("/bin/bash")), PallocMode::Print);
    for line in [
        "palloc --json",
        "palloc --parsable",
        "palloc --hold",
        "palloc --no-wait",
        "palloc --extend a1 -t 10",
    ] {
        let a: PallocArgs = ok(line);
        assert!(!a.opens_shell(true), "{line}");
    }
    let a: PallocArgs = ok("palloc -N 3");
    assert_eq!(a.request().attrs.num_nodes, Some(3));
    assert!(a.opens_shell(true));
    let a: PallocArgs = ok("palloc -w n1");
    assert_eq!(a.request().attrs.num_nodes, None);
    let a: PallocArgs = ok("palloc --extend a1 -t 10");
    assert_eq!(a.request().attrs.num_nodes, None);
}

/// Issue 17: srun's -N, -c and -J on pspawn. -N without -n runs one
/// process per node, spread by node unless --map-by says otherwise; outside
/// an allocation it cannot be detached (nothing would give the nodes back).
#[test]
fn pspawn_nodes_cpus_and_name() {
    let a: PspawnArgs = ok("pspawn -N 3 -c 2 -J solver hostname");
    let r = a.request().unwrap();
    assert_eq!(r.apps[0].np, 3);
    assert_eq!(r.map_by.as_deref(), Some("node"));
    assert_eq!(r.cpus_per_proc, Some(2));
    assert_eq!(r.job_name.as_deref(), Some("solver"));
    let a: PspawnArgs = ok("pspawn --nodes 2 -n 8 --map-by slot --cpus-per-task=4 x");
    let r = a.request().unwrap();
    assert_eq!((r.apps[0].np, r.map_by.as_deref()), (8, Some("slot")));
    assert_eq!(r.cpus_per_proc, Some(4));
    let a: PspawnArgs = ok("pspawn --target a1 -N 2 --detach x");
    assert!(a.request().is_ok());
    refused::<PspawnArgs>("pspawn -N 0 x");
    refused::<PspawnArgs>("pspawn -c 0 x");
    refused::<PspawnArgs>("pspawn -N 2 --default-pool x");
    refused::<PspawnArgs>("pspawn --job-name= x");
    if std::env::var_os("PMIX_ALLOC_ID").is_none() {
        let msg = refused::<PspawnArgs>("pspawn -N 2 --detach x");
        assert!(msg.contains("palloc -N COUNT"), "{msg}");
    }
}

/// Issue 28: salloc/sbatch/srun flags palloc does not take got clap's bare
/// "unexpected argument"; each now says what palloc (or pspawn) does instead.
#[test]
fn palloc_names_the_equivalent_of_each_slurm_flag() {
    let cases = [
        ("palloc -x FOO -- true", "pspawn -x VAR=VALUE"),
        ("palloc --export=ALL -- true", "pspawn -x VAR=VALUE"),
        ("palloc --signal=USR1@60 -- true", "--warn-timeout"),
        ("palloc -n 4 -- true", "pspawn -n 4"),
        ("palloc --ntasks 4 -- true", "pspawn -n 4"),
        ("palloc --ntasks=4 -- true", "pspawn -n 4"),
        ("palloc --wait -- true", "already waits"),
        ("palloc -o out.txt -- true", "pspawn -o PATTERN"),
        ("palloc -e err.txt -- true", "pspawn -o PATTERN"),
        ("palloc -D /tmp -- true", "cd DIR && palloc"),
        ("palloc --chdir=/tmp -- true", "cd DIR && palloc"),
        ("palloc --jobid=5 -- true", "pspawn --target ID"),
    ];
    for (line, hint) in cases {
        let msg = refused::<PallocArgs>(line);
        assert!(msg.contains("palloc does not take"), "{line}: {msg}");
        assert!(msg.contains(hint), "{line}: {msg}");
    }
    let msg = refused::<PallocArgs>("palloc --hodl");
    assert!(msg.contains("did you mean `--hold`"), "{msg}");
}

/// Issue 28: `pspawn --ntasks` got no suggestion and `--jobid` the wrong
/// one (`--job-name`); srun's meanings are said.
#[test]
fn pspawn_names_the_equivalent_of_ntasks_and_jobid() {
    let msg = refused::<PspawnArgs>("pspawn --ntasks 4 true");
    assert!(msg.contains("-n/--np"), "{msg}");
    let msg = refused::<PspawnArgs>("pspawn --jobid=5 true");
    assert!(msg.contains("--target ID"), "{msg}");
    assert!(!msg.contains("--job-name"), "{msg}");
}

/// A repeated option takes its last value, as Slurm's commands do (a
/// script's `-N 1` overridden by a later `-N 2`), in every tool; options
/// that collect values (`-x`) still collect them.
#[test]
fn a_repeated_option_takes_the_last_value() {
    let a: PallocArgs = ok("palloc -N 1 -N 2 -t 1m -t 5m --hold --hold");
    assert_eq!(a.nodes, Some(2));
    assert_eq!(a.time.map(|t| t.0), Some(Some(300)));
    let s: PspawnArgs = ok("pspawn -n 1 -n 3 -x A=1 -x B=2 true");
    assert_eq!(s.np, Some(3));
    assert_eq!(s.env.len(), 2, "{s:?}");
    let _: PreleaseArgs = ok("prelease alloc.1 --uri file:/a --uri file:/b");
    let _: PwatchArgs = ok("pwatch --status --status");
}

//! `pdvm`: a throw-away local DVM implementing node reservations.
//!
//! Flags are defined in [`pmix_tools::cli::pdvm::PdvmArgs`]; the server is
//! [`pmix_tools::server::run`].

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use pmix_tools::cli::pdvm::PdvmArgs;
use pmix_tools::server::{self, ServerConfig};

/// A line on stderr through pdvm's one place for them,
/// [`pmix_tools::server::diag`] (never a panic; the time in front under
/// `PDVM_LOG_TIMES`).
macro_rules! say {
    ($($arg:tt)*) => {
        server::diag::line(format_args!($($arg)*))
    };
}

fn main() -> ExitCode {
    let args = PdvmArgs::parse();
    if let Err(m) = args.validate() {
        say!("pdvm: {m}");
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            say!("pdvm: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &PdvmArgs) -> anyhow::Result<ExitCode> {
    if args.terminate {
        return terminate(args);
    }
    if let Some(id) = &args.release {
        return release(args, id);
    }
    let cfg = ServerConfig {
        nodes: args.nodes as usize,
        slots: args.slots.min(u32::MAX as u64) as u32,
        sched_nodes: args.scheduler_nodes as usize,
        tmpdir: args.tmpdir.clone().unwrap_or_else(std::env::temp_dir),
        time_scale: args.time_scale,
        compat: args.pmix_compat,
        report_uri: args.report_uri.clone(),
        bin_dir: std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.to_path_buf())),
        verbose: args.verbose > 0,
        job_history: usize::try_from(args.job_history).unwrap_or(usize::MAX),
    };
    // One pdvm per tmpdir: a second one would make every tool there fail
    // with "several PMIx servers".
    let running = server::listener::find_running(Some(&cfg.tmpdir));
    if let Some(pid) = running.first() {
        bail!(
            "refused: a pdvm (pid {pid}) already serves {dir}; stop it with \
             `pdvm --terminate --tmpdir {dir}`, or give this one another --tmpdir",
            dir = cfg.tmpdir.display()
        );
    }
    let command = (!args.command.is_empty()).then(|| args.command.clone());
    let quiet = args.quiet > 0;
    if args.daemonize {
        return daemonize(cfg, quiet);
    }
    let dir = cfg.tmpdir.clone();
    let code = server::run(cfg, command, |_| {
        if !quiet {
            say!("DVM ready");
        }
    })
    .with_context(|| format!("serving in {}", dir.display()))?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// Fork; the child becomes the DVM (new session, stdio on /dev/null) and
/// tells the parent through a pipe once it listens; the parent then prints
/// "DVM ready" (on stderr) and exits.
fn daemonize(cfg: ServerConfig, quiet: bool) -> anyhow::Result<ExitCode> {
    use nix::unistd::{fork, pipe, setsid, ForkResult};
    let (rd, wr) = pipe().context("creating the start-up pipe")?;
    // SAFETY: single-threaded at this point; the child only runs our code.
    match unsafe { fork() }.context("forking the DVM")? {
        ForkResult::Parent { .. } => {
            drop(wr);
            let mut buf = String::new();
            let _ = std::fs::File::from(rd).read_to_string(&mut buf);
            if !buf.starts_with("ready") {
                bail!("the DVM did not start: {}", buf.trim());
            }
            if !quiet {
                say!("DVM ready");
            }
            Ok(ExitCode::SUCCESS)
        }
        ForkResult::Child => {
            drop(rd);
            let _ = setsid();
            if let Ok(null) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
            {
                use std::os::fd::AsRawFd;
                for fd in 0..3 {
                    let _ = nix::unistd::dup2(null.as_raw_fd(), fd);
                }
            }
            let mut w = Some(std::fs::File::from(wr));
            let r = server::run(cfg, None, |_| {
                if let Some(mut f) = w.take() {
                    let _ = f.write_all(b"ready\n");
                }
            });
            // Before "ready", the parent reports the failure; after, nobody
            // is listening (stdio is /dev/null).
            if let (Err(e), Some(mut f)) = (&r, w.take()) {
                let _ = writeln!(f, "{e}");
            }
            Ok(ExitCode::from(if r.is_ok() { 0 } else { 1 }))
        }
    }
}

/// `pdvm --release ID`: the running pdvm's scheduler releases allocation
/// `ID` (a `PMIX_ALLOC_RELEASE` carrying `pdvm.alloc.by_sched`).
fn release(args: &PdvmArgs, id: &str) -> anyhow::Result<ExitCode> {
    use pmix_tools::codec::Info;
    use pmix_tools::proto::{keys, Directive, Status};
    if server::listener::find_running(args.tmpdir.as_deref()).is_empty() {
        say!("pdvm: no running pdvm found");
        return Ok(ExitCode::from(3));
    }
    let opts = pmix_tools::conn::ConnectOptions {
        tmpdir: args.tmpdir.clone(),
        force_tool: true,
        ..Default::default()
    };
    let s = pmix_tools::ops::Session::connect(&opts).context("connecting to pdvm")?;
    let asked = [
        Info::new(keys::ALLOC_ID, id),
        Info::new(keys::BY_SCHEDULER, true),
    ];
    let answer = pmix_tools::ops::alloc::allocate(&s, Directive::Release, &asked);
    let _ = s.finalize();
    match answer {
        Ok(_) => {
            if args.quiet == 0 {
                println!("released {id} (pdvm's scheduler)");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if e.status == Status::ERR_NOT_FOUND => {
            say!("pdvm: no allocation {id}: {e}");
            Ok(ExitCode::from(5))
        }
        Err(e) => bail!("releasing {id}: {e}"),
    }
}

/// `pdvm --terminate`: SIGTERM every running pdvm found through the
/// rendezvous directories and wait for them to go.
fn terminate(args: &PdvmArgs) -> anyhow::Result<ExitCode> {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let pids = server::listener::find_running(args.tmpdir.as_deref());
    if pids.is_empty() {
        say!("pdvm: no running pdvm found");
        return Ok(ExitCode::from(3));
    }
    for &p in &pids {
        let _ = kill(Pid::from_raw(p as i32), Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    if pids.iter().all(|&p| wait_gone(p, deadline)) {
        if args.quiet == 0 {
            for p in &pids {
                println!("pdvm {p} terminated");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    bail!("{pids:?} still running 10 s after SIGTERM")
}

/// Wait until process `pid` has exited (a zombie counts), at most until
/// `deadline`: a pidfd turns readable when it exits, so there is no polling.
fn wait_gone(pid: u32, deadline: Instant) -> bool {
    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let Some(pid) = i32::try_from(pid).ok().filter(|&p| p != 0) else {
        return true;
    };
    let fd = match pmix_tools::conn::pidfd::open(nix::unistd::Pid::from_raw(pid)) {
        Ok(fd) => fd,
        // Already gone (and reaped).
        Err(e) => return e == Errno::ESRCH,
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&fd),
            PollFlags::POLLIN,
        )];
        match poll(&mut fds, timeout) {
            Ok(n) if n > 0 => return true,
            Ok(_) => return false,
            Err(Errno::EINTR) => continue,
            Err(_) => return false,
        }
    }
}

//! What the four tools' `main`s share: set up the process (signal
//! handlers), run the tool, and turn its exit code, or a set-up failure
//! with its context, into the process's exit status.

use std::process::ExitCode;

use anyhow::Context;

/// Run tool `name`: `body` is its run logic, returning the exit code. A
/// tool that waits for the DVM (`catch_signals`) catches SIGINT, SIGTERM
/// and SIGHUP so that it can cancel what it asked for before leaving.
pub fn run(name: &str, catch_signals: bool, body: impl FnOnce() -> i32) -> ExitCode {
    let ready = if catch_signals { setup() } else { Ok(()) };
    match ready.map(|()| body()) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            pmix_tools::app::diag::line(format_args!("{name}: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Process set-up before any flag is acted on.
fn setup() -> anyhow::Result<()> {
    pmix_tools::app::install_signal_handlers()
        .context("cannot catch SIGINT, SIGTERM and SIGHUP")?;
    Ok(())
}

//! The four tools' run logic, one module per tool, so each binary is a short
//! `main` that parses its flags and hands them to [`palloc::run`],
//! [`pspawn::run`], [`prelease::run`] or [`pwatch::run`]. Each returns the
//! process exit code (see [`crate::cli::exit`]).
//!
//! Shared pieces: [`ui`] (where human lines, warnings and JSON go),
//! [`diag`] (the one way to a line on stderr, never a panic),
//! [`failure`] (turning a library error into the sentence, the JSON error
//! object and the exit code), [`signals`] (SIGINT/SIGTERM as a flag and a self-pipe the tools' one
//! wait watches),
//! [`launch`] (spawning a job from the command line's apps and following it
//! with its output forwarded), [`events`] (an event's fields, filters, hooks
//! and the JSON rendering path) and [`status`] (pwatch's status tables).

/// A line on stderr through the tools' one place for them, [`diag`]
/// (never a panic).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::app::diag::line(format_args!($($arg)*))
    };
}

pub mod alloc_end;
mod alloc_wait;
mod batch_records;
pub mod diag;
pub mod events;
pub(crate) mod failure;
mod grant_empty;
mod grant_ready;
pub(crate) mod launch;
mod output_files;
pub mod palloc;
pub mod prelease;
pub mod pspawn;
pub mod pwatch;
mod queued_request;
mod requester;
mod sched_down;
pub(crate) mod shared_dir_file;
pub(crate) mod signals;
mod source_outage;
mod status_sched;
mod submit_pipe;
pub(crate) mod ui;

pub use failure::Failure;
pub use signals::install as install_signal_handlers;
pub use ui::Ui;

use crate::cli::ConnectArgs;
use crate::conn::Identity;
use crate::ops::Session;

/// Connect as the connection flags say; a failure is already a
/// [`Failure`] with exit code 3 and a sentence saying what to do. With
/// `-v`, says who we connected as.
pub fn connect(args: &ConnectArgs, ui: &Ui) -> Result<Session, Failure> {
    connect_for(args, ui, None)
}

/// [`connect`] for a command that acts on allocation `alloc`: when a
/// palloc of this user holds it (in another shell), through that palloc.
/// The allocation `id` names when `id` is the request id of a granted
/// allocation whose palloc (found by that request id) this session goes
/// through: the DVM knows the allocation by its id only. `None` otherwise.
pub(crate) fn granted_for(s: &Session, id: &str) -> Option<String> {
    let held = s.conn().target().holder_of.as_deref()?;
    let by_request = held != id && std::env::var_os(crate::conn::holder::HOLDER_ENV).is_none();
    by_request.then(|| held.to_string())
}

/// Why a tool that acted on allocation `alloc` was refused as no owner,
/// when it reached the DVM itself (no palloc holding `alloc` was found for
/// it): the palloc may be registered elsewhere (another XDG_RUNTIME_DIR in
/// its shell), and what to do. `None` through a holder or inside a job.
pub(crate) fn no_holder_hint(s: &Session, alloc: &str) -> Option<String> {
    let direct_tool = s.conn().target().holder_of.is_none()
        && !matches!(s.conn().identity(), Identity::Client { .. });
    if !direct_tool || alloc.is_empty() {
        return None;
    }
    let place = match crate::conn::holder::registry() {
        Ok(dir) => format!("in this shell's registry {}", dir.display()),
        Err(why) => format!("(no registry: {why})"),
    };
    Some(format!(
        ". No palloc holding {alloc} was found {place}, so this went to the DVM as a tool that \
owns nothing there. If a palloc holds {alloc} in another shell, that shell may register its \
holders elsewhere (XDG_RUNTIME_DIR={}): set XDG_RUNTIME_DIR as there, point \
{} at that palloc's socket, or run this from inside it (palloc … -- CMD)",
        std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "unset".into()),
        crate::conn::holder::HOLDER_ENV
    ))
}

/// Connect as `args` say; with `alloc`, through the palloc holding that
/// allocation (found by its id or its request id) when there is one.
pub fn connect_for(args: &ConnectArgs, ui: &Ui, alloc: Option<&str>) -> Result<Session, Failure> {
    let mut opts = args.to_options();
    opts.alloc = alloc.map(String::from);
    if alloc.is_some() && std::env::var_os(crate::conn::holder::HOLDER_ENV).is_none() {
        if let Err(why) = crate::conn::holder::registry() {
            ui.warn(&format!(
                "{why}; a palloc holding the allocation cannot be reached through it"
            ));
        }
    }
    let s = Session::connect(&opts);
    for skipped in crate::conn::discover::skipped_files() {
        ui.detail(&format!("skipped untrusted rendezvous file {skipped}"));
    }
    let s = s.map_err(|e| Failure::connect(&e))?;
    if ui.level > 1 {
        let tool = ui.tool;
        crate::ops::trace::install(&s, move |l| say!("{tool}: pmix: {l}"));
    }
    if ui.level > 0 {
        let (ns, rank) = s.me();
        let (server, _) = s.conn().server();
        let mut who = match s.conn().identity() {
            Identity::Client { .. } => format!("a client of job {ns} (rank {rank})"),
            _ => format!("tool {ns}"),
        };
        if s.conn().target().holder_of.is_some() {
            who = format!("{who} through the {}", s.conn().target().found_by);
        }
        let server = if server.is_empty() {
            "the job's server"
        } else {
            server
        };
        ui.detail(&format!(
            "connected to {server} (PMIx {}, wire {}) as {who}",
            s.server_version().unwrap_or("?"),
            s.wire().name()
        ));
    }
    Ok(s)
}

/// Say goodbye to the server; its answer does not change the exit code.
pub fn finish(s: Session) {
    let _ = s.finalize();
}

/// Seconds since the Unix epoch, with fraction.
pub fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

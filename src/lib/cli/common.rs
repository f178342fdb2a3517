//! Flags every tool shares: how to reach the DVM ([`ConnectArgs`]) and how to
//! print ([`OutputArgs`]).
//!
//! The connection flags have the names and meanings of OpenPMIx's own tools
//! (`pquery`, `pevent`, `palloc`): `--uri`, `--pid`, `--namespace`/`--nspace`,
//! `--system-server-first`, `--system-server-only`, `--tmpdir`,
//! `--wait-to-connect`, `--num-connect-retries`. We add `--as-tool`.

use clap::Args;
use std::path::PathBuf;

pub use crate::conn::ConnectOptions;

/// Where the server's URI comes from: given literally or read from a file
/// (`--uri file:PATH`). The connection layer resolves [`UriSpec::File`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UriSpec {
    /// A URI such as `prte-vm-2548@0.0;tcp4://127.0.0.1:40211`.
    Literal(String),
    /// A file whose first line is the URI (as `prte --report-uri` writes).
    File(PathBuf),
}

/// Which server process to connect to: a pid or a file holding it
/// (`--pid file:PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidSpec {
    /// A process id.
    Literal(u32),
    /// A file whose first line is the pid.
    File(PathBuf),
}

/// Parse `--uri URI|file:PATH`.
pub fn parse_uri_spec(s: &str) -> Result<UriSpec, String> {
    const FORMS: &str = "a server URI such as `prte-vm-1@0.0;tcp4://127.0.0.1:40211` or file:PATH";
    match s.strip_prefix("file:") {
        Some("") => Err(format!("`file:` needs a path: expected {FORMS}")),
        Some(p) => Ok(UriSpec::File(PathBuf::from(p))),
        None if s.trim().is_empty() => Err(format!("an empty URI is not valid: expected {FORMS}")),
        None => match uri_shape_problem(s.trim()) {
            Some(why) => Err(format!(
                "`{s}` is not a server URI ({why}): expected {FORMS}"
            )),
            None => Ok(UriSpec::Literal(s.to_string())),
        },
    }
}

/// What is wrong with the shape of a literal URI `NSPACE.RANK;tcpN://HOST:PORT`
/// (checked without resolving the host), or `None`.
fn uri_shape_problem(s: &str) -> Option<&'static str> {
    let Some((id, address)) = s.split_once(';') else {
        return Some("no `;` between the server's NSPACE.RANK and its address");
    };
    match id.rsplit_once('.') {
        Some((ns, rank)) if !ns.is_empty() && rank.parse::<u32>().is_ok() => {}
        _ => return Some("it does not start with the server's NSPACE.RANK"),
    }
    let Some(rest) = ["tcp4://", "tcp6://", "tcp://"]
        .iter()
        .find_map(|p| address.strip_prefix(p))
    else {
        return Some("the address is not tcp4://, tcp6:// or tcp://");
    };
    match rest.trim_end_matches('/').rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => None,
        _ => Some("the address has no HOST:PORT"),
    }
}

/// Parse `--pid PID|file:PATH`.
pub fn parse_pid_spec(s: &str) -> Result<PidSpec, String> {
    const FORMS: &str = "a positive process id such as 4242, or file:PATH";
    match s.strip_prefix("file:") {
        Some("") => Err(format!("`file:` needs a path: expected {FORMS}")),
        Some(p) => Ok(PidSpec::File(PathBuf::from(p))),
        None => match s.trim().parse::<u32>() {
            Ok(0) | Err(_) => Err(format!("`{s}` is not a process id: expected {FORMS}")),
            Ok(p) => Ok(PidSpec::Literal(p)),
        },
    }
}

/// The OpenPMIx connection flags, flattened into every tool.
///
/// With none of them, a tool launched inside a job (its environment names
/// the job's server and namespace) connects as that job's client and acts
/// for the job's namespace; anywhere else it looks for the DVM's rendezvous
/// files in the temporary directory and connects as a tool with a fresh
/// namespace.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Connection")]
pub struct ConnectArgs {
    /// Connect to the server at this URI, or read the URI from file:PATH. When no flag names a
    /// server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every
    /// tool of a shell or script, as FLUX_URI does (not inside a job or `palloc -- CMD`, whose
    /// DVM is already known).
    #[arg(long, value_name = "URI|file:PATH", value_parser = parse_uri_spec)]
    pub uri: Option<UriSpec>,

    /// Connect to the server of this process id, or read the pid from file:PATH.
    #[arg(long, value_name = "PID|file:PATH", value_parser = parse_pid_spec)]
    pub pid: Option<PidSpec>,

    /// Connect to the server hosting this namespace.
    #[arg(long = "namespace", visible_alias = "nspace", value_name = "NS", value_parser = super::parse::parse_id)]
    pub nspace: Option<String>,

    /// Try the system server first, then fall back to others.
    #[arg(long)]
    pub system_server_first: bool,

    /// Connect only to the system server.
    #[arg(long, conflicts_with = "system_server_first")]
    pub system_server_only: bool,

    /// Look for rendezvous files under DIR instead of $TMPDIR.
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<PathBuf>,

    /// Delay between connection retries (see --num-connect-retries); a plain number
    /// is seconds here, as in the OpenPMIx tools (default 1s).
    #[arg(long, value_name = "SECS", value_parser = super::parse::parse_connect_secs)]
    pub wait_to_connect: Option<u64>,

    /// Retry a failed connection N times, waiting --wait-to-connect between tries.
    #[arg(long, value_name = "N", value_parser = super::parse::parse_count_u32)]
    pub num_connect_retries: Option<u32>,

    /// Connect as a tool with a fresh namespace even inside a job (by default
    /// a tool run inside a job acts for that job's namespace).
    #[arg(long)]
    pub as_tool: bool,
}

impl ConnectArgs {
    /// The plain connection options for the connection layer.
    pub fn to_options(&self) -> ConnectOptions {
        ConnectOptions {
            uri: self
                .uri
                .as_ref()
                .map(|u| match u {
                    UriSpec::Literal(s) => s.clone(),
                    UriSpec::File(p) => format!("file:{}", p.display()),
                })
                .or_else(|| self.uri_from_env()),
            pid: self.pid.as_ref().map(|p| match p {
                PidSpec::Literal(n) => n.to_string(),
                PidSpec::File(f) => format!("file:{}", f.display()),
            }),
            nspace: self.nspace.clone(),
            system_first: self.system_server_first,
            system_only: self.system_server_only,
            tmpdir: self.tmpdir.clone(),
            wait_to_connect: self.wait_to_connect.map(std::time::Duration::from_secs),
            retries: self.num_connect_retries.unwrap_or(0),
            force_tool: self.as_tool,
            tool_id: None,
            alloc: None,
        }
    }
}

/// Environment variable choosing the DVM for every tool of a shell or
/// script (a URI or `file:PATH`, as `--uri`), when no flag names a server.
pub const DVM_ENV: &str = "PMIX_TOOLS_URI";

impl ConnectArgs {
    /// [`DVM_ENV`], when set and nothing else names the server: no
    /// connection flag, not inside a job (its server is in the environment)
    /// nor inside `palloc -- CMD` (its holder is).
    fn uri_from_env(&self) -> Option<String> {
        let named = self.pid.is_some()
            || self.nspace.is_some()
            || self.system_server_first
            || self.system_server_only;
        let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
        if named || set("PMIX_NAMESPACE") || set(crate::conn::HOLDER_ENV) {
            return None;
        }
        std::env::var(DVM_ENV).ok().filter(|v| !v.is_empty())
    }
}

/// Output flags of every tool: `--json`, `-q/--quiet`, `-v/--verbose`
/// (`-q` means `--quiet` in every tool).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Print JSON: a one-shot result is ONE JSON document; a stream (events,
    /// a job's output) is JSON lines, one object per line. Field names are
    /// listed under JSON FIELDS in the man page.
    #[arg(long)]
    pub json: bool,

    /// Print less: once for results only, twice for nothing but errors.
    #[arg(short = 'q', long = "quiet", action = clap::ArgAction::Count)]
    pub quiet: u8,

    /// Print more: once for details, twice for protocol tracing on stderr.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl OutputArgs {
    /// The net verbosity: `verbose - quiet` (negative is quieter).
    pub fn level(&self) -> i8 {
        i8::try_from(i16::from(self.verbose) - i16::from(self.quiet)).unwrap_or(0)
    }

    /// Whether colour and styling may be used on a stream that `is_tty`
    /// says is (or is not) a terminal: never with `--json`, never when
    /// `NO_COLOR` is set to a non-empty value, never off a terminal.
    pub fn color(&self, is_tty: bool) -> bool {
        !self.json && is_tty && !no_color()
    }

    /// Whether progress (spinners) may be drawn on stderr.
    pub fn progress(&self, stderr_is_tty: bool) -> bool {
        stderr_is_tty && self.quiet == 0 && !self.json
    }
}

/// `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            parse_uri_spec("file:/tmp/u"),
            Ok(UriSpec::File("/tmp/u".into()))
        );
        assert_eq!(
            parse_uri_spec("x.0;tcp4://h:1"),
            Ok(UriSpec::Literal("x.0;tcp4://h:1".into()))
        );
        assert!(parse_uri_spec("file:").is_err());
        for bad in [
            "garbage",
            "x;tcp4://1",
            "ns.0;udp://h:1",
            "ns.r;tcp4://h:1",
            "ns.0;tcp4://h",
        ] {
            assert!(parse_uri_spec(bad).is_err(), "{bad}");
        }
        assert!(parse_uri_spec("prte-vm-1@0.0;tcp4://127.0.0.1:40211").is_ok());
        assert_eq!(parse_pid_spec("42"), Ok(PidSpec::Literal(42)));
        assert_eq!(parse_pid_spec("file:p"), Ok(PidSpec::File("p".into())));
        assert!(parse_pid_spec("0").is_err());
        assert!(parse_pid_spec("-3").is_err());
    }

    #[test]
    fn levels() {
        let o = OutputArgs {
            json: false,
            quiet: 1,
            verbose: 3,
        };
        assert_eq!(o.level(), 2);
        assert!(!OutputArgs {
            json: true,
            ..o.clone()
        }
        .color(true));
        assert!(!o.color(false));
    }
}

//! Server URIs and rendezvous files.
//!
//! A PMIx server publishes its contact point as `NSPACE.RANK;tcp4://HOST:PORT`
//! (or `tcp6://[HOST]:PORT`). PRRTE and OpenPMIx servers write it, followed by
//! the server's PMIx version, its pid and a creation stamp, one per line, into
//! rendezvous files such as `pmix.<host>.tool.<pid>`.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::proto::status::Status;

/// Longest URI or rendezvous file we accept (bytes). Real ones are < 300.
pub(crate) const MAX_URI_LEN: usize = 4096;

/// A parsed server contact point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerUri {
    /// The server's namespace, e.g. `prte-vm-2162@0`.
    pub nspace: String,
    /// The server's rank within that namespace.
    pub rank: u32,
    /// The transport address as written, e.g. `tcp4://127.0.0.1:49993`.
    pub address: String,
}

impl ServerUri {
    /// Parse `NSPACE.RANK;tcp4://HOST:PORT`.
    ///
    /// The namespace may itself contain dots; the rank is what follows the
    /// last dot before the `;`.
    pub fn parse(text: &str) -> Result<ServerUri> {
        let text = text.trim();
        if text.len() > MAX_URI_LEN {
            return Err(bad(format!("server URI longer than {MAX_URI_LEN} bytes")));
        }
        let (id, address) = text.split_once(';').ok_or_else(|| {
            bad(format!(
                "malformed server URI {text:?}: expected NSPACE.RANK;tcp4://HOST:PORT"
            ))
        })?;
        let (nspace, rank) = id.rsplit_once('.').ok_or_else(|| {
            bad(format!(
                "malformed server URI {text:?}: no .RANK after the namespace"
            ))
        })?;
        let rank: u32 = rank.parse().map_err(|_| {
            bad(format!(
                "malformed server URI {text:?}: rank {rank:?} is not a number"
            ))
        })?;
        if nspace.is_empty() {
            return Err(bad(format!(
                "malformed server URI {text:?}: empty namespace"
            )));
        }
        let uri = ServerUri {
            nspace: nspace.to_string(),
            rank,
            address: address.to_string(),
        };
        uri.socket_addr()?;
        Ok(uri)
    }

    /// Resolve the transport address into a socket address.
    pub fn socket_addr(&self) -> Result<SocketAddr> {
        let rest = self
            .address
            .strip_prefix("tcp4://")
            .or_else(|| self.address.strip_prefix("tcp6://"))
            .or_else(|| self.address.strip_prefix("tcp://"))
            .ok_or_else(|| {
                bad(format!(
                    "unsupported transport in {:?}: only tcp4:// and tcp6:// are spoken",
                    self.address
                ))
            })?;
        let host_port = rest.trim_end_matches('/');
        // tcp6 addresses are written as [addr]:port.
        host_port
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .ok_or_else(|| bad(format!("cannot resolve server address {:?}", self.address)))
    }
}

impl std::fmt::Display for ServerUri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{};{}", self.nspace, self.rank, self.address)
    }
}

/// The contents of a rendezvous file (or a `--report-uri` file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendezvous {
    /// Where it was read from.
    pub path: PathBuf,
    /// The server's contact point (first line).
    pub uri: ServerUri,
    /// The server's PMIx version string (second line), when present.
    pub version: Option<String>,
    /// The server's pid (third line), when present.
    pub pid: Option<u32>,
}

impl Rendezvous {
    /// Parse rendezvous text: URI, then optional version, then optional pid.
    pub fn parse_text(path: &Path, text: &str) -> Result<Rendezvous> {
        let mut lines = text.lines().map(str::trim);
        let first = lines
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad(format!("rendezvous file {} is empty", path.display())))?;
        let uri = ServerUri::parse(first)?;
        let version = lines.next().filter(|l| !l.is_empty()).map(str::to_string);
        let pid = lines.next().and_then(|l| l.parse().ok());
        Ok(Rendezvous {
            path: path.to_path_buf(),
            uri,
            version,
            pid,
        })
    }

    /// Read and parse a rendezvous file, refusing oversized files.
    pub fn read(path: &Path) -> Result<Rendezvous> {
        let text = read_bounded(path)?;
        Rendezvous::parse_text(path, &text)
    }
}

/// Read a small text file, refusing anything larger than [`MAX_URI_LEN`].
pub(crate) fn read_bounded(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| {
        Error::new(
            Status::ERR_NOT_FOUND,
            format!("cannot open {}: {e}", path.display()),
        )
    })?;
    let mut text = String::new();
    file.take(MAX_URI_LEN as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    if text.len() > MAX_URI_LEN {
        return Err(bad(format!(
            "{} is larger than {MAX_URI_LEN} bytes",
            path.display()
        )));
    }
    Ok(text)
}

fn bad(msg: String) -> Error {
    Error::new(Status::ERR_BAD_PARAM, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prrte_uri_with_dotted_nspace() {
        let u = ServerUri::parse("prte-vm-2162@0.0;tcp4://127.0.0.1:49993").unwrap();
        assert_eq!(u.nspace, "prte-vm-2162@0");
        assert_eq!(u.rank, 0);
        assert_eq!(u.socket_addr().unwrap().port(), 49993);
        let u = ServerUri::parse("a.b.c.7;tcp4://127.0.0.1:1").unwrap();
        assert_eq!((u.nspace.as_str(), u.rank), ("a.b.c", 7));
    }

    #[test]
    fn parses_tcp6() {
        let u = ServerUri::parse("ns.1;tcp6://[::1]:5000").unwrap();
        assert!(u.socket_addr().unwrap().is_ipv6());
    }

    #[test]
    fn refuses_malformed() {
        for t in [
            "",
            "nosemicolon",
            "ns;tcp4://1.2.3.4:5",
            "ns.x;tcp4://127.0.0.1:5",
            ".0;tcp4://127.0.0.1:5",
            "ns.0;usock://x",
            "ns.0;tcp4://nohostport",
        ] {
            assert!(ServerUri::parse(t).is_err(), "{t:?} accepted");
        }
    }

    #[test]
    fn parses_rendezvous_file_text() {
        let text = "prte-vm-2162@0.0;tcp4://127.0.0.1:49993\n5.0.11rc1\n2162\n0:0\nSat Nov 21 09:15:12 2026\n\n";
        let r = Rendezvous::parse_text(Path::new("x"), text).unwrap();
        assert_eq!(r.version.as_deref(), Some("5.0.11rc1"));
        assert_eq!(r.pid, Some(2162));
        assert_eq!(r.uri.nspace, "prte-vm-2162@0");
    }
}

//! The connection handshake (connect-ack and the server's reply).
//!
//! The connecting side sends one message whose header carries its length in
//! host order (see [`super::frame`]) and whose payload is, in this order:
//! security module name (NUL-terminated), credential length (`u32`, network
//! order) and bytes, a one-byte identity flag, identity fields that depend on
//! the flag, our PMIx version string, our wire (bfrops) version name, the
//! buffer kind byte, the datastore (gds) module name, and optionally packed
//! info. The server answers with raw network-order integers and fixed-width
//! namespace fields; nothing in the reply is bfrops-packed.

use std::io::{Read, Write};

use crate::codec::{Encoder, Info, Size, Value, WireVersion};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::frame::{io_error, read_full, Header};

/// Width of a namespace field in the server's reply (`PMIX_MAX_NSLEN + 1`).
pub const NSPACE_FIELD: usize = 256;
/// Security module we present: credentials are our uid and gid, which the
/// server checks against the socket's peer credentials.
pub const PSEC_NATIVE: &str = "native";
/// Datastore module we ask the server to use for us.
pub const GDS_HASH: &str = "hash";
/// Buffer kind byte: values are packed without per-item type tags.
pub const BUFFER_NON_DESCRIBED: u8 = 1;
/// Buffer kind byte: every packed item is preceded by its type tag.
pub const BUFFER_FULLY_DESCRIBED: u8 = 2;

/// Identity flag: a process of a job the server launched.
pub const FLAG_SIMPLE_CLIENT: u8 = 0;
/// Identity flag: a self-started tool asking the server to name it.
pub const FLAG_TOOL_NEEDS_ID: u8 = 3;
/// Identity flag: a tool bringing its own name.
pub const FLAG_TOOL_GIVEN_ID: u8 = 4;
/// Identity flag: a system scheduler bringing its own name (OpenPMIx's
/// handshake flag 10; laid out like [`FLAG_TOOL_GIVEN_ID`]).
pub const FLAG_SCHEDULER_WITH_ID: u8 = 10;

/// Who we say we are when connecting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// A tool; the server assigns its namespace (e.g. `prte-vm-2548@1`).
    Tool,
    /// A tool that brings its own namespace and rank.
    ToolWithId {
        /// Namespace chosen by the caller.
        nspace: String,
        /// Rank chosen by the caller.
        rank: u32,
    },
    /// A scheduler attaching to the DVM (`PMIX_SERVER_SCHEDULER`): it
    /// always names itself, and the DVM forwards allocation requests to it.
    Scheduler {
        /// Namespace chosen by the scheduler (fresh for every connection).
        nspace: String,
        /// Rank chosen by the scheduler.
        rank: u32,
    },
    /// A process of a job the server launched (`PMIX_NAMESPACE`/`PMIX_RANK`
    /// in its environment): its requests are that job's requests.
    Client {
        /// The job's namespace.
        nspace: String,
        /// This process's rank in the job.
        rank: u32,
    },
}

impl Identity {
    /// The one-byte flag that announces this identity.
    pub fn flag(&self) -> u8 {
        match self {
            Identity::Tool => FLAG_TOOL_NEEDS_ID,
            Identity::ToolWithId { .. } => FLAG_TOOL_GIVEN_ID,
            Identity::Scheduler { .. } => FLAG_SCHEDULER_WITH_ID,
            Identity::Client { .. } => FLAG_SIMPLE_CLIENT,
        }
    }

    /// True for the two tool identities.
    pub fn is_tool(&self) -> bool {
        !matches!(self, Identity::Client { .. })
    }
}

/// What we advertise about ourselves.
#[derive(Clone, Debug)]
pub struct Hello {
    /// Our identity.
    pub identity: Identity,
    /// PMIx version string we claim (drives the server's compatibility paths).
    pub version: String,
    /// Wire version name, e.g. `v41`.
    pub bfrops: String,
    /// Buffer kind byte.
    pub buffer_kind: u8,
    /// Effective uid and gid (the `native` credential).
    pub uid: u32,
    /// Effective gid.
    pub gid: u32,
    /// Already-packed `size` + `info[]` to append, if any.
    pub info_blob: Vec<u8>,
}

/// The server's answer to a successful handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    /// Our namespace (assigned by the server for [`Identity::Tool`]).
    pub nspace: String,
    /// Our rank.
    pub rank: u32,
    /// The server's namespace (tools only; empty for clients).
    pub server_nspace: String,
    /// The server's rank (tools only).
    pub server_rank: u32,
    /// Our index in the server's client table (clients only).
    pub pindex: Option<u32>,
}

/// Build the complete connect-ack message (header included).
pub fn build_connect_ack(h: &Hello) -> Vec<u8> {
    let mut p = Vec::with_capacity(128 + h.info_blob.len());
    put_str(&mut p, PSEC_NATIVE);
    let mut cred = Vec::with_capacity(8);
    cred.extend_from_slice(&h.uid.to_le_bytes());
    cred.extend_from_slice(&h.gid.to_le_bytes());
    p.extend_from_slice(&(cred.len() as u32).to_be_bytes());
    p.extend_from_slice(&cred);
    p.push(h.identity.flag());
    match &h.identity {
        Identity::Tool => {
            p.extend_from_slice(&h.uid.to_be_bytes());
            p.extend_from_slice(&h.gid.to_be_bytes());
        }
        Identity::ToolWithId { nspace, rank } | Identity::Scheduler { nspace, rank } => {
            p.extend_from_slice(&h.uid.to_be_bytes());
            p.extend_from_slice(&h.gid.to_be_bytes());
            put_str(&mut p, nspace);
            p.extend_from_slice(&rank.to_be_bytes());
        }
        Identity::Client { nspace, rank } => {
            put_str(&mut p, nspace);
            p.extend_from_slice(&rank.to_be_bytes());
        }
    }
    put_str(&mut p, &h.version);
    put_str(&mut p, &h.bfrops);
    p.push(h.buffer_kind);
    put_str(&mut p, GDS_HASH);
    p.extend_from_slice(&h.info_blob);
    let mut msg = Vec::with_capacity(p.len() + 16);
    msg.extend_from_slice(&Header::encode_connect(p.len() as u32));
    msg.extend_from_slice(&p);
    msg
}

/// The info a tool sends with its connect-ack: `PMIX_CMD_LINE` and its pid,
/// packed for `wire` as `size` + `info[]`.
///
/// Servers record these for the tool's job; PRRTE 3.0 dereferences the
/// command line unconditionally, so it must always be present.
pub fn tool_info_blob(wire: WireVersion, cmdline: &str, pid: u32) -> Result<Vec<u8>> {
    let info = [
        Info::new("pmix.cmd.line", cmdline),
        Info::new("pmix.ppid", Value::Pid(pid)),
    ];
    let mut e = Encoder::new(wire);
    e.pack_one(&Size(info.len() as u64))?;
    e.pack(&info[..])?;
    Ok(e.into_bytes())
}

/// [`tool_info_blob`] plus `PMIX_SERVER_SCHEDULER` (true): what a
/// scheduler sends, so the DVM records it as its scheduler.
pub fn scheduler_info_blob(wire: WireVersion, cmdline: &str, pid: u32) -> Result<Vec<u8>> {
    let info = [
        Info::new("pmix.cmd.line", cmdline),
        Info::new("pmix.ppid", Value::Pid(pid)),
        Info::new("pmix.srv.sched", Value::Bool(true)),
    ];
    let mut e = Encoder::new(wire);
    e.pack_one(&Size(info.len() as u64))?;
    e.pack(&info[..])?;
    Ok(e.into_bytes())
}

fn put_str(p: &mut Vec<u8>, s: &str) {
    p.extend_from_slice(s.as_bytes());
    p.push(0);
}

/// Run the handshake over an already-connected stream.
///
/// The stream should carry a read time-out so a silent server cannot hang us.
pub fn handshake<S: Read + Write>(stream: &mut S, hello: &Hello) -> Result<Welcome> {
    stream
        .write_all(&build_connect_ack(hello))
        .map_err(|e| io_error(e, "sending the connection request"))?;
    let status = read_status(stream, "the server's answer to our connection request")?;
    if !status.is_success() {
        return Err(Error::new(
            status,
            "the server refused the connection (identity or credentials not accepted)",
        ));
    }
    match &hello.identity {
        Identity::Client { nspace, rank } => {
            let pindex = read_u32(stream, "our client index")?;
            Ok(Welcome {
                nspace: nspace.clone(),
                rank: *rank,
                server_nspace: String::new(),
                server_rank: 0,
                pindex: Some(pindex),
            })
        }
        identity => {
            let (nspace, rank) = match identity {
                Identity::Tool => {
                    let ns = read_nspace(stream, "the namespace the server gave us")?;
                    let rank = read_u32(stream, "the rank the server gave us")?;
                    (ns, rank)
                }
                Identity::ToolWithId { nspace, rank } | Identity::Scheduler { nspace, rank } => {
                    (nspace.clone(), *rank)
                }
                Identity::Client { .. } => unreachable!("handled above"),
            };
            let server_nspace = read_nspace(stream, "the server's namespace")?;
            let server_rank = read_u32(stream, "the server's rank")?;
            let sec = read_status(stream, "the security check result")?;
            if !sec.is_success() {
                return Err(Error::new(sec, "the server's security check refused us"));
            }
            Ok(Welcome {
                nspace,
                rank,
                server_nspace,
                server_rank,
                pindex: None,
            })
        }
    }
}

fn read_exact_or<S: Read>(s: &mut S, buf: &mut [u8], what: &str) -> Result<()> {
    let got = read_full(s, buf)?;
    if got != buf.len() {
        return Err(Error::new(
            Status::ERR_LOST_CONNECTION,
            format!("the server closed the connection while sending {what}"),
        ));
    }
    Ok(())
}

fn read_u32<S: Read>(s: &mut S, what: &str) -> Result<u32> {
    let mut b = [0u8; 4];
    read_exact_or(s, &mut b, what)?;
    Ok(u32::from_be_bytes(b))
}

fn read_status<S: Read>(s: &mut S, what: &str) -> Result<Status> {
    Ok(Status(read_u32(s, what)? as i32))
}

fn read_nspace<S: Read>(s: &mut S, what: &str) -> Result<String> {
    let mut b = [0u8; NSPACE_FIELD];
    read_exact_or(s, &mut b, what)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(NSPACE_FIELD - 1);
    String::from_utf8(b[..end].to_vec())
        .map_err(|_| Error::new(Status::ERR_UNPACK_FAILURE, format!("{what} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(identity: Identity) -> Hello {
        Hello {
            identity,
            version: "4.2.2rc2".into(),
            bfrops: "v41".into(),
            buffer_kind: BUFFER_NON_DESCRIBED,
            uid: 0,
            gid: 0,
            info_blob: vec![],
        }
    }

    #[test]
    fn tool_connect_ack_matches_libpmix_layout() {
        // Same fields as a real libpmix 4.2.2 tool's connect-ack captured on
        // loopback, without its optional info blob.
        let m = build_connect_ack(&hello(Identity::Tool));
        let mut want = vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        let body: Vec<u8> = [
            &b"native\0"[..],
            &[0, 0, 0, 8],
            &[0; 8],
            &[3],
            &[0; 8],
            b"4.2.2rc2\0",
            b"v41\0",
            &[1],
            b"hash\0",
        ]
        .concat();
        want.extend_from_slice(&(body.len() as u32).to_le_bytes());
        want.extend_from_slice(&[0; 4]);
        want.extend_from_slice(&body);
        assert_eq!(m, want);
    }

    #[test]
    fn parses_tool_welcome() {
        let mut reply = vec![0, 0, 0, 0];
        let mut ns = [0u8; NSPACE_FIELD];
        ns[..14].copy_from_slice(b"prte-vm-2162@2");
        reply.extend_from_slice(&ns);
        reply.extend_from_slice(&[0, 0, 0, 0]);
        let mut sns = [0u8; NSPACE_FIELD];
        sns[..14].copy_from_slice(b"prte-vm-2162@0");
        reply.extend_from_slice(&sns);
        reply.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        let mut s = Duplex {
            input: &reply[..],
            output: vec![],
        };
        let w = handshake(&mut s, &hello(Identity::Tool)).unwrap();
        assert_eq!(w.nspace, "prte-vm-2162@2");
        assert_eq!(w.server_nspace, "prte-vm-2162@0");
        // truncated at every offset: a typed error, never a panic
        for cut in 0..reply.len() {
            let mut s = Duplex {
                input: &reply[..cut],
                output: vec![],
            };
            assert!(handshake(&mut s, &hello(Identity::Tool)).is_err());
        }
    }

    #[test]
    fn refused_status_is_reported() {
        let reply = (-23i32).to_be_bytes();
        let mut s = Duplex {
            input: &reply[..],
            output: vec![],
        };
        let e = handshake(&mut s, &hello(Identity::Tool)).unwrap_err();
        assert_eq!(e.status, Status(-23));
    }

    struct Duplex<'a> {
        input: &'a [u8],
        output: Vec<u8>,
    }
    impl Read for Duplex<'_> {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(b)
        }
    }
    impl Write for Duplex<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.output.write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

//! The connection handshake message (connect-ack) and its parts, shared by
//! both ends: the client builds it (`conn::handshake` runs the
//! exchange), pdvm parses it (`server::handshake`).
//!
//! The connecting side sends one message whose header carries its length in
//! host order (see [`super::frame`]) and whose payload is, in this order:
//! security module name (NUL-terminated), credential length (`u32`, network
//! order) and bytes, a one-byte identity flag, identity fields that depend on
//! the flag, our PMIx version string, our wire (bfrops) version name, the
//! buffer kind byte, the datastore (gds) module name, and optionally packed
//! info. The server answers with raw network-order integers and fixed-width
//! namespace fields; nothing in the reply is bfrops-packed.

use crate::codec::{Encoder, Info, Size, Value, WireVersion};
use crate::error::Result;

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

/// The connect-ack's body (the connection layer puts the connect header in
/// front: `conn::handshake::build_connect_ack`).
pub fn connect_ack_body(h: &Hello) -> Vec<u8> {
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
    p
}

/// The info a tool sends with its connect-ack: `PMIX_CMD_LINE` and its pid,
/// packed for `wire` as `size` + `info[]`.
///
/// Servers record these for the tool's job; PRRTE 3.0 dereferences the
/// command line unconditionally, so it must always be present.
pub fn tool_info_blob(wire: WireVersion, cmdline: &str, pid: u32) -> Result<Vec<u8>> {
    let info = [
        Info::new(crate::proto::keys::CMD_LINE, cmdline),
        Info::new(crate::proto::keys::PROC_PID, Value::Pid(pid)),
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
        Info::new(crate::proto::keys::CMD_LINE, cmdline),
        Info::new(crate::proto::keys::PROC_PID, Value::Pid(pid)),
        Info::new(crate::proto::keys::SERVER_SCHEDULER, Value::Bool(true)),
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

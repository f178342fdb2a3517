//! Forwarded stdout/stderr of spawned processes.

use crate::codec::{ByteObject, Decoder, IofChannel, Proc, Size};
use crate::error::Result;

use super::session::{find, read_infos};
use crate::proto::keys;

/// Channel bit: stdin.
pub const CHANNEL_STDIN: u16 = 0x0001;
/// Channel bit: stdout.
pub const CHANNEL_STDOUT: u16 = 0x0002;
/// Channel bit: stderr.
pub const CHANNEL_STDERR: u16 = 0x0004;

/// One chunk of forwarded output.
#[derive(Clone, Debug)]
pub struct IofChunk {
    /// The process that wrote it.
    pub source: Proc,
    /// Which stream (channel bits).
    pub channel: u16,
    /// The bytes.
    pub data: Vec<u8>,
    /// True when the server marks this as the last chunk of the stream.
    pub complete: bool,
}

impl IofChunk {
    /// True when the chunk came from stderr.
    pub fn is_stderr(&self) -> bool {
        self.channel & CHANNEL_STDERR != 0
    }
}

/// Decode a forwarded-output message (source, channel, request id, size,
/// infos, byte object).
pub fn decode_iof(d: &mut Decoder) -> Result<IofChunk> {
    let source: Proc = d.unpack_one()?;
    let IofChannel(channel) = d.unpack_one()?;
    let Size(_refid) = d.unpack_one()?;
    let info = read_infos(d)?;
    let ByteObject(data) = d.unpack_one()?;
    let complete = find(&info, keys::IOF_COMPLETE)
        .map(|v| v.is_true())
        .unwrap_or(false);
    Ok(IofChunk {
        source,
        channel,
        data,
        complete,
    })
}

/// The payload of an IOF push (`PMIX_IOF_PUSH_CMD`): the number of targets
/// and the targets, the number of directives and the directives, then the
/// bytes. Zero bytes mean end of input: the targets' stdin is closed.
pub fn push_payload(
    wire: crate::codec::WireVersion,
    targets: &[Proc],
    data: &[u8],
) -> Result<Vec<u8>> {
    let mut e = crate::codec::Encoder::new(wire);
    e.pack_one(&crate::codec::Cmd(crate::proto::cmd::IOF_PUSH))?;
    e.pack_one(&Size(targets.len() as u64))?;
    if !targets.is_empty() {
        e.pack(targets)?;
    }
    let dirs = if data.is_empty() {
        vec![crate::codec::Info::new(keys::IOF_COMPLETE, true)]
    } else {
        Vec::new()
    };
    crate::codec::attrs::write_infos(&mut e, &dirs)?;
    e.pack_one(&ByteObject(data.to_vec()))?;
    Ok(e.into_bytes())
}

/// Reference id our pulls carry; the server echoes it in the output it
/// forwards for them (the tools keep no per-pull handlers, so one will do).
const PULL_REF: u64 = 1;

/// The payload of an IOF pull (`PMIX_IOF_PULL_CMD`): the number of sources
/// and the sources, the number of directives and the directives, the
/// channels, and our reference id.
pub fn pull_payload(
    wire: crate::codec::WireVersion,
    sources: &[Proc],
    channels: u16,
) -> Result<Vec<u8>> {
    let mut e = crate::codec::Encoder::new(wire);
    e.pack_one(&crate::codec::Cmd(crate::proto::cmd::IOF_PULL))?;
    e.pack_one(&Size(sources.len() as u64))?;
    if !sources.is_empty() {
        e.pack(sources)?;
    }
    crate::codec::attrs::write_infos(&mut e, &[])?;
    e.pack_one(&IofChannel(channels))?;
    e.pack_one(&Size(PULL_REF))?;
    Ok(e.into_bytes())
}

/// The payload that withdraws a pull (`PMIX_IOF_DEREG_CMD`): no
/// directives, then the id the server gave the pull in its answer.
pub fn dereg_payload(wire: crate::codec::WireVersion, server_id: u64) -> Result<Vec<u8>> {
    let mut e = crate::codec::Encoder::new(wire);
    e.pack_one(&crate::codec::Cmd(crate::proto::cmd::IOF_DEREG))?;
    crate::codec::attrs::write_infos(&mut e, &[])?;
    e.pack_one(&Size(server_id))?;
    Ok(e.into_bytes())
}

/// Whether the answer to a push means the bytes were taken: success, or
/// PRRTE's "input complete" (the answer to end of input) and "slow down"
/// (taken, but the target is backed up).
pub fn push_accepted(st: crate::proto::status::Status) -> bool {
    use crate::proto::status::Status;
    st.is_success() || st == Status::ERR_IOF_COMPLETE || st == Status::ERR_IOF_XOFF
}

/// Forward everything `input` yields to `targets`' stdin over `conn`, one
/// push per read (at most 16 KiB), waiting for each answer (the DVM paces
/// us), then an empty push (end of input). Returns when the input ends, the
/// DVM refuses a push, or the connection fails; meant for its own thread.
pub fn forward_stdin(
    conn: &crate::conn::Connection,
    targets: &[Proc],
    input: &mut dyn std::io::Read,
    timeout: std::time::Duration,
) -> Result<()> {
    let wire = conn.wire();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        let reply = conn.request(&push_payload(wire, targets, &buf[..n])?, timeout)?;
        let st: crate::proto::status::Status = Decoder::new(&reply, wire).unpack_one()?;
        if !push_accepted(st) {
            return Err(crate::error::Error::new(
                st,
                "the DVM refused the job's input",
            ));
        }
        if n == 0 {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Cmd, Info, WireVersion};

    #[test]
    fn push_layout() {
        let target = Proc {
            nspace: "job@1".into(),
            rank: 0,
        };
        for wire in [WireVersion::V41, WireVersion::V61] {
            let bytes = push_payload(wire, std::slice::from_ref(&target), b"hi").unwrap();
            let mut d = Decoder::new(&bytes, wire);
            assert_eq!(
                d.unpack_one::<Cmd>().unwrap().0,
                crate::proto::cmd::IOF_PUSH
            );
            assert_eq!(d.unpack_one::<Size>().unwrap().0, 1);
            assert_eq!(d.unpack_one::<Proc>().unwrap(), target);
            assert_eq!(d.unpack_one::<Size>().unwrap().0, 0);
            assert_eq!(d.unpack_one::<ByteObject>().unwrap().0, b"hi");
            let eof = push_payload(wire, std::slice::from_ref(&target), b"").unwrap();
            let mut d = Decoder::new(&eof, wire);
            let _ = d.unpack_one::<Cmd>().unwrap();
            let _ = d.unpack_one::<Size>().unwrap();
            let _ = d.unpack_one::<Proc>().unwrap();
            assert_eq!(d.unpack_one::<Size>().unwrap().0, 1);
            let i: Info = d.unpack_one().unwrap();
            assert_eq!(i.key, keys::IOF_COMPLETE);
            assert!(d.unpack_one::<ByteObject>().unwrap().0.is_empty());
        }
    }
}

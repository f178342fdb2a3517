//! Forwarded stdout/stderr of spawned processes.

use crate::codec::{ByteObject, Decoder, IofChannel, Proc, Size};
use crate::error::Result;

use super::keys;
use super::session::{find, read_infos};

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

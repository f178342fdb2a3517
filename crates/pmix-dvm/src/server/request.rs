//! Decoding a peer's request into a typed [`Request`], sans I/O and without
//! touching the server's state: every count bounded, every error a typed
//! status. The handlers in [`super::dispatch`] act on what this returns;
//! [`decode_stream`] runs framing plus decoding over arbitrary bytes (the
//! fuzz target and the property test drive it).

use crate::codec::alloc_message::AllocMessage;
use crate::codec::event_message::NotifyRequest;
use crate::codec::query_message::QueryMessage;
use crate::codec::spawn_message::SpawnMessage;
use crate::codec::{
    App, Bucket, ByteObject, Cmd, Decoder, Info, Proc, Query, Rank, Scope, Size, WireVersion,
};
use crate::error::{Error, Result};
use crate::proto::status::Status;
use crate::proto::{cmd, Directive, Received};

use super::frames::InBuf;

/// Most infos, apps, queries or targets accepted in one request.
pub const MAX_ITEMS: usize = 4096;
/// Most targets read from an IOF push.
const MAX_PUSH_TARGETS: u64 = 1024;

/// One decoded request.
#[derive(Debug, Clone)]
pub enum Request {
    /// `PMIX_REQ_CMD`: the peer's job data.
    JobData,
    /// `PMIX_FINALIZE_CMD`: goodbye.
    Finalize,
    /// `PMIX_QUERY_CMD`.
    Query(Vec<Query>),
    /// `PMIX_ALLOC_CMD`: directive and attributes.
    Alloc {
        /// The directive as sent (an unknown code is refused by the model).
        directive: Received<Directive>,
        /// Its attributes.
        info: Vec<Info>,
    },
    /// `PMIX_SPAWNNB_CMD`: job info and at least one app.
    Spawn {
        /// Job-level info.
        job_info: Vec<Info>,
        /// The apps.
        apps: Vec<App>,
    },
    /// `PMIX_PUBLISHNB_CMD`: the keys and values (and directives) to publish.
    Publish(Vec<Info>),
    /// `PMIX_LOOKUPNB_CMD`: keys to look up, directives (`PMIX_WAIT`).
    Lookup {
        /// The keys.
        keys: Vec<String>,
        /// Directives.
        info: Vec<Info>,
    },
    /// `PMIX_UNPUBLISHNB_CMD`: keys to withdraw (none = all the caller's).
    Unpublish(Vec<String>),
    /// `PMIX_CONNECTNB_CMD` (`disconnect` false) or `PMIX_DISCONNECTNB_CMD`:
    /// a collective over the processes named.
    Connect {
        /// The participants (a wildcard rank: all of a namespace).
        procs: Vec<Proc>,
        /// Whether this is the disconnect.
        disconnect: bool,
    },
    /// `PMIX_REGEVENTS_CMD`: codes (none = all).
    RegEvents(Vec<Status>),
    /// `PMIX_DEREGEVENTS_CMD`.
    DeregEvents,
    /// `PMIX_NOTIFY_CMD`: an event to relay.
    Notify {
        /// Event code.
        code: Status,
        /// Range byte.
        range: u8,
        /// Its info.
        info: Vec<Info>,
    },
    /// `PMIX_JOB_CONTROL_CMD`.
    JobControl {
        /// Targets.
        targets: Vec<Proc>,
        /// Directives.
        directives: Vec<Info>,
    },
    /// `PMIX_IOF_PUSH_CMD`: bytes for stdin (none = end of input).
    IofPush {
        /// Targets.
        targets: Vec<Proc>,
        /// The bytes.
        data: Vec<u8>,
    },
    /// `PMIX_IOF_PULL_CMD`.
    IofPull,
    /// `PMIX_ABORT_CMD`: a client asks for an end (`PMIx_Abort`).
    Abort {
        /// The status the job should end with.
        status: Status,
        /// What the client said.
        message: Option<String>,
        /// The processes to end (none = the caller's whole job).
        procs: Vec<Proc>,
    },
    /// `PMIX_COMMIT_CMD`: what the client put, by scope.
    Commit(Vec<(u8, Bucket)>),
    /// `PMIX_FENCENB_CMD`: a fence over `procs`.
    Fence {
        /// The participants (a wildcard rank stands for a whole job).
        procs: Vec<Proc>,
        /// Its directives.
        info: Vec<Info>,
    },
    /// `PMIX_GETNB_CMD`: another process's data.
    Get {
        /// Whose data.
        target: Proc,
        /// Directives (`PMIX_IMMEDIATE`, …).
        info: Vec<Info>,
        /// The key asked for, when one was named.
        key: Option<String>,
    },
}

impl Request {
    /// The PMIx command byte it came with.
    pub fn command(&self) -> u8 {
        match self {
            Request::JobData => cmd::REQ,
            Request::Finalize => cmd::FINALIZE,
            Request::Query(_) => cmd::QUERY,
            Request::Alloc { .. } => cmd::ALLOC,
            Request::Spawn { .. } => cmd::SPAWN,
            Request::Publish(_) => cmd::PUBLISH,
            Request::Lookup { .. } => cmd::LOOKUP,
            Request::Unpublish(_) => cmd::UNPUBLISH,
            Request::Connect {
                disconnect: false, ..
            } => cmd::CONNECT,
            Request::Connect {
                disconnect: true, ..
            } => cmd::DISCONNECT,
            Request::RegEvents(_) => cmd::REGEVENTS,
            Request::DeregEvents => cmd::DEREGEVENTS,
            Request::Notify { .. } => cmd::NOTIFY,
            Request::JobControl { .. } => cmd::JOB_CONTROL,
            Request::IofPush { .. } => crate::proto::cmd::IOF_PUSH,
            Request::IofPull => cmd::IOF_PULL,
            Request::Abort { .. } => cmd::ABORT,
            Request::Commit(_) => cmd::COMMIT,
            Request::Fence { .. } => cmd::FENCE,
            Request::Get { .. } => cmd::GET,
        }
    }
}

/// Why a request could not be decoded.
#[derive(Debug)]
pub enum DecodeError {
    /// Not even the command byte decodes (answered `PMIX_ERR_UNPACK_FAILURE`).
    Command(Error),
    /// The command's arguments do not decode or break a bound; `u8` is the command.
    Args(u8, Error),
}

fn bounded(n: u64) -> Result<usize> {
    usize::try_from(n)
        .ok()
        .filter(|n| *n <= MAX_ITEMS)
        .ok_or_else(|| Error::new(Status::ERR_BAD_PARAM, format!("request claims {n} items")))
}

/// `size` + infos (at most [`crate::codec::attrs::MAX_REQUEST_INFOS`]);
/// nothing at all reads as no infos.
pub use crate::codec::attrs::read_request_infos as read_infos;

fn counted<T: crate::codec::Unpack>(d: &mut Decoder) -> Result<Vec<T>> {
    let Size(n) = d.unpack_one()?;
    let n = bounded(n)?;
    if n == 0 {
        Ok(Vec::new())
    } else {
        d.unpack(n)
    }
}

/// Decode one request payload. A request whose arguments are read to the
/// end (query, allocation, spawn, notify, job control, stdin push) must end
/// there: bytes after it are refused, not ignored.
pub fn decode(d: &mut Decoder) -> std::result::Result<Request, DecodeError> {
    let Cmd(command) = d.unpack_one::<Cmd>().map_err(DecodeError::Command)?;
    let r = decode_args(command, d).map_err(|e| DecodeError::Args(command, e))?;
    let whole = matches!(
        r,
        Request::Query(_)
            | Request::Alloc { .. }
            | Request::Spawn { .. }
            | Request::Notify { .. }
            | Request::JobControl { .. }
            | Request::IofPush { .. }
    );
    if whole && !d.is_empty() {
        return Err(DecodeError::Args(
            command,
            Error::new(
                Status::ERR_BAD_PARAM,
                format!("{} bytes after the request's last argument", d.remaining()),
            ),
        ));
    }
    Ok(r)
}

fn decode_args(command: u8, d: &mut Decoder) -> Result<Request> {
    Ok(match command {
        cmd::REQ => Request::JobData,
        cmd::FINALIZE => Request::Finalize,
        cmd::QUERY => Request::Query(QueryMessage::decode_body(d)?.queries.into_owned()),
        cmd::ALLOC => {
            let m = AllocMessage::decode_body(d)?;
            Request::Alloc {
                directive: m.directive,
                info: m.infos.into_owned(),
            }
        }
        cmd::SPAWN => {
            let m = SpawnMessage::decode_body(d)?;
            Request::Spawn {
                job_info: m.job_info.into_owned(),
                apps: m.apps.into_owned(),
            }
        }
        cmd::PUBLISH => {
            let _uid: u32 = d.unpack_one()?;
            Request::Publish(read_infos(d)?)
        }
        cmd::LOOKUP => {
            let _uid: u32 = d.unpack_one()?;
            let keys = counted_strings(d)?;
            let info = read_infos(d)?;
            Request::Lookup { keys, info }
        }
        cmd::UNPUBLISH => {
            let _uid: u32 = d.unpack_one()?;
            let keys = counted_strings(d)?;
            let _info = read_infos(d)?;
            Request::Unpublish(keys)
        }
        cmd::CONNECT | cmd::DISCONNECT => {
            let procs = counted(d)?;
            let _info = read_infos(d)?;
            Request::Connect {
                procs,
                disconnect: command == cmd::DISCONNECT,
            }
        }
        cmd::REGEVENTS => {
            let codes = counted(d)?;
            // Qualifiers are read leniently and not used.
            let _ = read_infos(d);
            Request::RegEvents(codes)
        }
        cmd::DEREGEVENTS => Request::DeregEvents,
        cmd::NOTIFY => {
            let n = NotifyRequest::decode_body(d)?;
            Request::Notify {
                code: n.code,
                range: n.range,
                info: n.infos.into_owned(),
            }
        }
        cmd::JOB_CONTROL => Request::JobControl {
            targets: counted(d)?,
            directives: read_infos(d)?,
        },
        crate::proto::cmd::IOF_PUSH => {
            let Size(n) = d.unpack_one()?;
            let targets: Vec<Proc> = if n == 0 {
                Vec::new()
            } else {
                d.unpack(usize::try_from(n.min(MAX_PUSH_TARGETS)).unwrap_or(1024))?
            };
            let _directives = read_infos(d)?;
            let ByteObject(data) = d.unpack_one()?;
            Request::IofPush { targets, data }
        }
        cmd::IOF_PULL => Request::IofPull,
        cmd::ABORT => decode_abort(d)?,
        cmd::COMMIT => Request::Commit(decode_commit(d)?),
        cmd::FENCE => Request::Fence {
            procs: counted(d)?,
            info: read_infos(d)?,
        },
        cmd::GET => decode_get(d)?,
        other => {
            return Err(Error::new(
                Status::ERR_NOT_SUPPORTED,
                format!("command {other} is not supported by pdvm"),
            ))
        }
    })
}

/// A count, then that many strings (`PMIX_LOOKUPNB_CMD`'s keys).
fn counted_strings(d: &mut Decoder) -> Result<Vec<String>> {
    let Size(n) = d.unpack_one()?;
    let n = bounded(n)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let crate::codec::NullableString(k) = d.unpack_one()?;
        out.push(k.unwrap_or_default());
    }
    Ok(out)
}

/// `PMIX_ABORT_CMD`: status, message, then the processes to end.
fn decode_abort(d: &mut Decoder) -> Result<Request> {
    let status: Status = d.unpack_one()?;
    let crate::codec::NullableString(message) = d.unpack_one()?;
    let procs = if d.is_empty() {
        Vec::new()
    } else {
        counted(d)?
    };
    Ok(Request::Abort {
        status,
        message,
        procs,
    })
}

/// `PMIX_COMMIT_CMD`: (scope, buffer of key/value pairs) until the end.
fn decode_commit(d: &mut Decoder) -> Result<Vec<(u8, Bucket)>> {
    let mut out = Vec::new();
    while !d.is_empty() {
        if out.len() >= MAX_ITEMS {
            return Err(Error::new(Status::ERR_BAD_PARAM, "too many commit buckets"));
        }
        let Scope(scope) = d.unpack_one()?;
        out.push((scope, d.unpack_one()?));
    }
    Ok(out)
}

/// `PMIX_GETNB_CMD`: namespace, rank, directives, then the key if named.
fn decode_get(d: &mut Decoder) -> Result<Request> {
    let crate::codec::NullableString(nspace) = d.unpack_one()?;
    let Rank(rank) = d.unpack_one()?;
    let info = read_infos(d)?;
    let key = if d.is_empty() {
        None
    } else {
        let crate::codec::NullableString(k) = d.unpack_one()?;
        k
    };
    Ok(Request::Get {
        target: Proc {
            nspace: nspace.unwrap_or_default(),
            rank,
        },
        info,
        key,
    })
}

/// What [`decode_stream`] saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StreamSummary {
    /// Whether the connect request parsed.
    pub connected: bool,
    /// Frames taken.
    pub frames: usize,
    /// Of those, requests that decoded.
    pub decoded: usize,
    /// True when the framing broke (pdvm drops such a peer).
    pub fatal: bool,
}

/// Run pdvm's whole inbound path over `bytes`, as if a peer sent them:
/// the first byte picks the wire version and buffer kind; then a
/// connect-ack (header + body) and steady-state frames, each decoded as a
/// request. Never panics; memory stays proportional to the input.
pub fn decode_stream(bytes: &[u8]) -> StreamSummary {
    let mut out = StreamSummary::default();
    let Some((&sel, rest)) = bytes.split_first() else {
        return out;
    };
    let (wire, described) = WireVersion::fuzz_selector(sel);
    let mut buf = InBuf::default();
    // Fed in uneven pieces, as a socket delivers them.
    let step = 1 + (sel as usize >> 2);
    let mut connected = false;
    for piece in rest.chunks(step * 97) {
        if buf.push(piece, connected).is_err() {
            out.fatal = true;
            return out;
        }
        loop {
            if !connected {
                match buf.take_connect() {
                    Ok(Some(body)) => {
                        connected = true;
                        out.connected = super::handshake::parse_connect(&body).is_ok();
                        continue;
                    }
                    Ok(None) => break,
                    Err(_) => {
                        out.fatal = true;
                        return out;
                    }
                }
            }
            match buf.take_frame() {
                Ok(Some(f)) => {
                    out.frames += 1;
                    let mut d = if described {
                        Decoder::described(&f.payload, wire)
                    } else {
                        Decoder::new(&f.payload, wire)
                    };
                    if decode(&mut d).is_ok() {
                        out.decoded += 1;
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    out.fatal = true;
                    return out;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Encoder;

    fn payload(f: impl FnOnce(&mut Encoder)) -> Vec<u8> {
        let mut e = Encoder::new(WireVersion::V41);
        f(&mut e);
        e.into_bytes()
    }

    #[test]
    fn decodes_a_spawn_and_refuses_an_empty_one() {
        let p = payload(|e| {
            e.pack_one(&Cmd(cmd::SPAWN)).unwrap();
            e.pack_one(&Size(0)).unwrap();
            e.pack_one(&Size(0)).unwrap();
        });
        match decode(&mut Decoder::new(&p, WireVersion::V41)) {
            Err(DecodeError::Args(c, e)) => {
                assert_eq!(c, cmd::SPAWN);
                assert_eq!(e.status, Status::ERR_BAD_PARAM);
            }
            other => panic!("{other:?}"),
        }
        let p = payload(|e| e.pack_one(&Cmd(cmd::FINALIZE)).unwrap());
        assert!(matches!(
            decode(&mut Decoder::new(&p, WireVersion::V41)),
            Ok(Request::Finalize)
        ));
        assert!(matches!(
            decode(&mut Decoder::new(&[], WireVersion::V41)),
            Err(DecodeError::Command(_))
        ));
    }

    #[test]
    fn counts_beyond_the_bound_are_refused() {
        let p = payload(|e| {
            e.pack_one(&Cmd(cmd::QUERY)).unwrap();
            e.pack_one(&Size(MAX_ITEMS as u64 + 1)).unwrap();
        });
        match decode(&mut Decoder::new(&p, WireVersion::V41)) {
            Err(DecodeError::Args(_, e)) => assert_eq!(e.status, Status::ERR_BAD_PARAM),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bytes_after_a_whole_request_are_refused() {
        let query = |extra: &[u8]| {
            let mut p = payload(|e| {
                e.pack_one(&Cmd(cmd::QUERY)).unwrap();
                e.pack_one(&Size(0)).unwrap();
            });
            p.extend_from_slice(extra);
            decode(&mut Decoder::new(&p, WireVersion::V41))
        };
        assert!(matches!(query(&[]), Ok(Request::Query(q)) if q.is_empty()));
        match query(&[0, 1, 2]) {
            Err(DecodeError::Args(c, e)) => {
                assert_eq!(c, cmd::QUERY);
                assert_eq!(e.status, Status::ERR_BAD_PARAM);
                assert!(e.context.contains("3 bytes after"), "{}", e.context);
            }
            other => panic!("{other:?}"),
        }
    }
}

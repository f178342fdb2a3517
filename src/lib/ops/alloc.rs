//! Allocation requests (`PMIx_Allocation_request`): NEW, EXTEND, RELEASE,
//! REAQUIRE and REQ_CANCEL, and the reply's well-known fields.

use crate::codec::alloc_message::AllocMessage;
use std::time::Duration;

use serde::Serialize;

use crate::codec::{Info, Value};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use super::session::{find, read_infos, Session};
use crate::proto::{cmd, keys, Directive};

/// A granted (or acknowledged) allocation request.
#[derive(Clone, Debug, Serialize)]
pub struct AllocReply {
    /// The directive that was sent.
    pub directive: &'static str,
    /// `PMIX_ALLOC_ID` from the reply (the scheduler-assigned id).
    pub alloc_id: Option<String>,
    /// `PMIX_ALLOC_REQ_ID` echoed back.
    pub request_id: Option<String>,
    /// Every info the server returned.
    pub info: Vec<Info>,
}

/// Send an allocation request with `directive` and `info`.
///
/// A refusal comes back as an [`Error`] whose status is the server's (for
/// example `PMIX_ERR_NOT_SUPPORTED` from a DVM without reservation support).
///
/// A RELEASE unanswered for [`RELEASE_RESEND_AFTER`] is sent again (at
/// most [`RELEASE_RESENDS`] times): PRRTE master parks a release that
/// arrives while its DVM grows (a scheduler's grant) and, outside its
/// elastic mode, never takes it up again (issue 40). Sending it again is
/// safe: when the one before was carried out after all, the allocation is
/// gone and the next is answered `PMIX_ERR_NOT_FOUND`, which then counts
/// as released.
pub fn allocate(s: &Session, directive: Directive, info: &[Info]) -> Result<AllocReply> {
    let e = alloc_request(s, directive, info)?;
    if directive != Directive::Release {
        let reply = s.call(e)?;
        return decode_alloc_reply(s, directive, &reply);
    }
    let mut resends = 0;
    loop {
        let mut quiet = || {
            resends += 1;
            resends <= RELEASE_RESENDS
        };
        let Some(reply) = s.call_watching(&e, RELEASE_RESEND_AFTER, &mut quiet)? else {
            continue;
        };
        return match decode_alloc_reply(s, directive, &reply) {
            Err(e) if e.status == Status::ERR_NOT_FOUND && resends > 0 => Ok(AllocReply {
                directive: directive.pmix_name(),
                alloc_id: None,
                request_id: None,
                info: Vec::new(),
            }),
            other => other,
        };
    }
}

/// [`allocate`] of a NEW or EXTEND that may wait in the scheduler's queue:
/// its answer is waited for up to `patience` instead of the session's
/// request deadline.
pub fn allocate_queued(
    s: &Session,
    directive: Directive,
    info: &[Info],
    patience: Duration,
) -> Result<AllocReply> {
    let e = alloc_request(s, directive, info)?;
    let reply = s.call_within(e, patience)?;
    decode_alloc_reply(s, directive, &reply)
}

/// How long a RELEASE waits for its answer before it is sent again.
pub const RELEASE_RESEND_AFTER: Duration = Duration::from_secs(2);
/// How many times one RELEASE is sent again.
pub const RELEASE_RESENDS: u32 = 3;

/// Send an allocation request without waiting: returns the pending reply's
/// tag (see [`crate::conn::Connection::begin`]); decode the reply with
/// [`decode_alloc_reply`].
pub fn begin_allocate(s: &Session, directive: Directive, info: &[Info]) -> Result<u32> {
    let e = alloc_request(s, directive, info)?;
    s.conn().begin(e.bytes())
}

fn alloc_request(
    s: &Session,
    directive: Directive,
    info: &[Info],
) -> Result<crate::codec::Encoder> {
    s.check_infos(info)?;
    let mut e = s.request(cmd::ALLOC)?;
    AllocMessage::new(directive, info).encode_body(&mut e)?;
    Ok(e)
}

/// Read the reply to an allocation request with `directive`.
pub fn decode_alloc_reply(s: &Session, directive: Directive, reply: &[u8]) -> Result<AllocReply> {
    let mut d = s.decoder(reply);
    let st: Status = d.unpack_one()?;
    if st == Status::ERR_JOB_CANCELED {
        // The infos may name who withdrew it (PMIX_REQUESTOR); a reply
        // without them still says it was cancelled.
        let info = read_infos(&mut d).unwrap_or_default();
        return Err(Error::new(st, cancelled_context(s, &info)));
    }
    // `PMIX_OPERATION_SUCCEEDED`: done, nothing more to say. psched answers
    // a release so (PRRTE master then leaves the nodes' daemons alone and
    // psched ends the reservation itself).
    if st == Status::OPERATION_SUCCEEDED {
        return Ok(AllocReply {
            directive: directive.pmix_name(),
            alloc_id: None,
            request_id: None,
            info: Vec::new(),
        });
    }
    if !st.is_success() {
        // A scheduler may say why (psched on Slurm gives Slurm's reason).
        let info = read_infos(&mut d).unwrap_or_default();
        let said = find(&info, keys::EVENT_TEXT_MESSAGE)
            .and_then(Value::as_str)
            .map(String::from);
        return Err(Error {
            said,
            ..Error::refused(st, directive.pmix_name())
        });
    }
    let info = read_infos(&mut d)?;
    Ok(AllocReply {
        directive: directive.pmix_name(),
        alloc_id: find(&info, keys::ALLOC_ID)
            .and_then(Value::as_str)
            .map(String::from),
        request_id: find(&info, keys::ALLOC_REQ_ID)
            .and_then(Value::as_str)
            .map(String::from),
        info,
    })
}

/// The sentence of a queued request the DVM answers `PMIX_ERR_JOB_CANCELED`:
/// which request, and who withdrew it when the DVM says (`PMIX_REQUESTOR`).
fn cancelled_context(s: &Session, info: &[Info]) -> String {
    let req = find(info, keys::ALLOC_REQ_ID)
        .and_then(Value::as_str)
        .map(|r| format!("request {r}"))
        .unwrap_or_else(|| "the request".to_string());
    let who = match find(info, keys::REQUESTOR) {
        Some(Value::Proc(p)) if (p.nspace.clone(), p.rank) == s.me() => format!(
            "cancelled by {}:{} (this palloc's own namespace: a `prelease --cancel` \
from another shell, relayed through it)",
            p.nspace, p.rank
        ),
        Some(Value::Proc(p)) => format!("cancelled by {}:{}", p.nspace, p.rank),
        _ => "cancelled (the DVM does not say by whom)".to_string(),
    };
    format!("{req} {who} with PMIX_ALLOC_REQ_CANCEL before it was granted")
}

/// Whether the server lists `nspace` among its live namespaces (a
/// `PMIX_QUERY_NAMESPACES` query); `None` when it does not answer the query.
/// palloc asks before a NEW with `PMIX_ALLOC_TARGET`, so a mistyped target
/// is refused before anything is reserved, on any DVM.
pub fn target_is_live(s: &Session, nspace: &str) -> Option<bool> {
    super::query::namespaces(s)
        .ok()
        .map(|l| l.iter().any(|n| n == nspace))
}

//! psched's one core, without I/O: what the serving loop
//! ([`super::serve`]) runs over the DVM's socket and the fuzz/hostile
//! driver ([`super::drive`]) runs over raw bytes, so the driver tests what
//! runs. It routes each frame from the DVM (a forwarded request or session
//! notice, the answer to its reconcile question, the answer to one of
//! psched's own messages), keeps the reconcile timer, and after every step
//! lets the DVM side settle: refused grants back to the node source,
//! broken nodes held back, the next DVM change started. The DVM's requests
//! themselves are [`Requests`]'s, over the node source. Time comes in as
//! milliseconds; what to send goes out as [`Send`]s; log lines wait in
//! [`Core::take_log`].

use crate::codec::WireVersion;
use crate::error::Result;
use crate::proto::keys;
use crate::proto::status::Status;

use super::dvm::{Dvm, Send, Verdict, OWN_TAG_BASE};
use super::ledger_change::LedgerChange;
use super::out::Out;
use super::requests::Requests;
use super::wire::{self, Inbound};

/// How often psched asks the DVM which allocations it still holds (the
/// DVM does not say when an owner's disposition ends one).
pub const RECONCILE_EVERY_MS: u64 = 1000;
/// A grant younger than this is not reconciled away (the DVM may not have
/// made the reservation yet).
pub const SETTLE_MS: u64 = 3000;

/// One attachment's decisions: the requests over the node source, the DVM
/// side, the reconcile question in flight.
pub struct Core<'a> {
    st: &'a mut Requests,
    d: &'a mut Dvm,
    wire: WireVersion,
    /// The reconcile question in flight and when it was asked.
    asked: Option<(u32, u64)>,
    next_reconcile: u64,
}

impl<'a> Core<'a> {
    /// A core over the requests `st` and DVM side `d` speaking `wire`, its
    /// first reconcile due [`RECONCILE_EVERY_MS`] after `now`.
    pub fn new(st: &'a mut Requests, d: &'a mut Dvm, wire: WireVersion, now: u64) -> Core<'a> {
        Core {
            st,
            d,
            wire,
            asked: None,
            next_reconcile: now + RECONCILE_EVERY_MS,
        }
    }

    /// The requests (the ledger, the source's idle nodes).
    pub fn requests(&self) -> &Requests {
        self.st
    }

    /// The requests, to change (an administrator's release).
    pub fn requests_mut(&mut self) -> &mut Requests {
        self.st
    }

    /// The DVM side's books into the ledger, when they changed.
    pub fn keep_books(&mut self) {
        if let Some((book, sessions)) = self.d.take_book() {
            self.st.note(LedgerChange::DvmSide(book, sessions));
        }
    }

    /// The DVM side (its book of owners and sessions).
    pub fn dvm(&self) -> &Dvm {
        self.d
    }

    /// The node source's waker, when it has one.
    pub fn wake_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.st.wake_fd()
    }

    /// The earliest moment something is due, asked at `now`: the node
    /// source's deadline, a DVM change's, the next reconcile.
    pub fn next_deadline(&self, now: u64) -> Option<u64> {
        [
            self.st.next_deadline(now),
            self.d.next_deadline(),
            Some(self.next_reconcile),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// One turn at `now`: the reconcile question when due (and none is in
    /// flight), the node source's deadlines, `extra` decisions (an
    /// administrator's releases), then the DVM side settles.
    pub fn turn(&mut self, now: u64, extra: Vec<Out>, out: &mut Vec<Send>) -> Result<()> {
        // A question the DVM never answered is asked again once its time
        // is up (its late answer is then ignored).
        let unanswered = self
            .asked
            .is_none_or(|(_, at)| now >= at + super::dvm::ANSWER_LIMIT_MS);
        if now >= self.next_reconcile && unanswered {
            self.next_reconcile = now + RECONCILE_EVERY_MS;
            let t = self.d.plain_tag();
            out.push(Send::Own(t, wire::query_alloc_ids(self.wire)?));
            self.asked = Some((t, now));
        }
        let mut outs = self.st.tick(now)?;
        outs.extend(extra);
        self.d.push(outs, out)?;
        self.settle(now, out)
    }

    /// A frame from the DVM on `tag`.
    pub fn on_frame(
        &mut self,
        tag: u32,
        payload: &[u8],
        now: u64,
        out: &mut Vec<Send>,
    ) -> Result<()> {
        if tag < OWN_TAG_BASE {
            self.on_message(tag, payload, now, out)?;
        } else if self.asked.is_some_and(|(t, _)| t == tag) {
            self.asked = None;
            if let Some(live) = wire::alloc_ids_answer(self.wire, payload) {
                self.reconcile(&live, now, SETTLE_MS, out)?;
            }
        } else {
            self.on_own_answer(tag, payload, now, out)?;
        }
        self.settle(now, out)
    }

    /// The DVM holds the allocations `live`: the grants older than
    /// `settle_ms` it no longer holds end.
    pub fn reconcile(
        &mut self,
        live: &[String],
        now: u64,
        settle_ms: u64,
        out: &mut Vec<Send>,
    ) -> Result<()> {
        let outs = self.st.reconcile(live, now, settle_ms)?;
        self.d.push(outs, out)
    }

    /// The DVM side's log lines since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        self.d.take_log()
    }

    /// A request or session notice the DVM forwarded; anything else is
    /// answered "not supported".
    fn on_message(
        &mut self,
        tag: u32,
        payload: &[u8],
        now: u64,
        out: &mut Vec<Send>,
    ) -> Result<()> {
        match wire::decode(self.wire, payload) {
            Ok(Inbound::Alloc(ask)) => {
                let r = &*self.st;
                let find = |rid: &str| r.find_req(rid);
                if let Verdict::Pass(ask) = self.d.on_request(tag, *ask, &find, out)? {
                    let outs = self.st.on_alloc(tag, *ask, now)?;
                    self.d.push(outs, out)?;
                }
            }
            Ok(Inbound::Session { infos, .. }) => {
                let done = infos.iter().any(|i| i.key == keys::SESSION_COMPLETE);
                let id = infos
                    .iter()
                    .find(|i| i.key == keys::ALLOC_ID)
                    .and_then(|i| i.value.as_str());
                let outs = match (done, id) {
                    (true, Some(id)) => self.st.on_session_done(id, now)?,
                    _ => Vec::new(),
                };
                self.d.push(outs, out)?;
                out.push(Send::Answer(tag, wire::status_only(self.wire, Status(0))?));
            }
            Ok(Inbound::Other(_)) | Err(_) => out.push(Send::Answer(
                tag,
                wire::status_only(self.wire, Status::ERR_NOT_SUPPORTED)?,
            )),
        }
        Ok(())
    }

    /// The answer to one of psched's own messages: requests that passed
    /// their owner check are served.
    fn on_own_answer(
        &mut self,
        tag: u32,
        payload: &[u8],
        now: u64,
        out: &mut Vec<Send>,
    ) -> Result<()> {
        let passed = {
            let r = &*self.st;
            let nodes_of = |id: &str| r.nodes_of(id);
            self.d.on_own_answer(tag, payload, now, &nodes_of, out)?
        };
        for (t, ask) in passed {
            let outs = self.st.on_alloc(t, ask, now)?;
            self.d.push(outs, out)?;
        }
        Ok(())
    }

    /// What the DVM side learned: refused grants go back to the node
    /// source, broken nodes are held back, the next change starts.
    fn settle(&mut self, now: u64, out: &mut Vec<Send>) -> Result<()> {
        for id in self.d.take_refused() {
            let outs = self.st.on_session_done(&id, now)?;
            self.d.push(outs, out)?;
        }
        let outs = self.st.hold_back(self.d.broken(), now)?;
        self.d.push(outs, out)?;
        self.d.tick(now, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psched::dvm::ANSWER_LIMIT_MS;
    use crate::psched::ledger::{DvmBook, Ledger};
    use crate::psched::state::State;

    fn empty() -> Requests {
        let mut l = Ledger::default();
        let st = State::new(&[], Vec::new(), &mut l);
        Requests::new(Box::new(st), l)
    }

    fn questions(out: &[Send]) -> usize {
        out.iter().filter(|s| matches!(s, Send::Own(..))).count()
    }

    #[test]
    fn a_reconcile_question_the_dvm_never_answers_is_asked_again_after_its_limit() {
        let wire = WireVersion::V61;
        let mut st = empty();
        let mut d = Dvm::new(
            wire,
            "psched@0",
            "dvm@0",
            DvmBook::default(),
            0,
            OWN_TAG_BASE,
        );
        let mut core = Core::new(&mut st, &mut d, wire, 0);
        let mut out = Vec::new();
        core.turn(RECONCILE_EVERY_MS, Vec::new(), &mut out).unwrap();
        assert_eq!(questions(&out), 1, "the first question: {out:?}");
        out.clear();
        core.turn(3 * RECONCILE_EVERY_MS, Vec::new(), &mut out)
            .unwrap();
        assert_eq!(questions(&out), 0, "one question at a time: {out:?}");
        core.turn(RECONCILE_EVERY_MS + ANSWER_LIMIT_MS, Vec::new(), &mut out)
            .unwrap();
        assert_eq!(questions(&out), 1, "asked again: {out:?}");
    }
}

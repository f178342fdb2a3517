//! The DVM's requests, the same for every node source: psched's side of
//! the allocation conversation, without I/O. [`Requests`] reads each
//! request the DVM forwarded (NEW, EXTEND, RELEASE, REQ_CANCEL), finds the
//! allocation it names, keeps which DVM tag waits for which allocation and
//! turns the node source's decisions and events ([`super::source`]) into
//! [`Out`]s; the DVM's own ends (a session done, an allocation it no
//! longer lists) and the administrator's releases become releases of the
//! source. It holds psched's one [`Ledger`], changed by small messages
//! ([`LedgerChange`]) as they come, and says when it is to be stored.

use std::collections::HashMap;

use crate::codec::{Info, WireVersion};
use crate::error::Result;
use crate::proto::status::Status;
use crate::proto::{Directive, Inheritance, Received};

use super::ledger::Ledger;
use super::ledger_change::LedgerChange;
use super::out::{Ending, Granted, Out, UnaskedEnd};
use super::source::{Ask, By, Decision, Give, Heard, NodeSource, Refusal, SourceEvent};
use super::wire::{self, Forwarded};

/// What the DVM side keeps of one allocation.
#[derive(Debug, Clone, Default)]
struct Meta {
    req_id: Option<String>,
    /// What PRRTE must read back in the next answer.
    echo: Vec<Info>,
    /// The requester's inheritance rule.
    inherit: Option<Inheritance>,
    /// The source granted it (the DVM was told, or is being told).
    granted: bool,
    /// The DVM's request waiting for an answer (a NEW or an EXTEND).
    owed: Option<u32>,
    /// When its last grant was made (ms since the epoch).
    granted_at: u64,
}

/// The DVM's requests over one node source: see the module documentation.
pub struct Requests {
    source: Box<dyn NodeSource>,
    meta: HashMap<String, Meta>,
    ledger: Ledger,
    dirty: bool,
    wire: WireVersion,
}

impl Requests {
    /// The requests over `source`, which took back the grants of `ledger`
    /// (the ledger as that source kept it).
    pub fn new(source: Box<dyn NodeSource>, mut ledger: Ledger) -> Requests {
        ledger.grants.sort_by(|a, b| a.alloc_id.cmp(&b.alloc_id));
        let meta = ledger
            .grants
            .iter()
            .map(|g| {
                let m = Meta {
                    req_id: g.req_id.clone(),
                    inherit: g.inherit,
                    granted: true,
                    ..Meta::default()
                };
                (g.alloc_id.clone(), m)
            })
            .collect();
        Requests {
            source,
            meta,
            ledger,
            dirty: true,
            wire: WireVersion::V41,
        }
    }

    /// The ledger as it is to be on disk.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Whether the ledger changed since the last call (it is to be stored).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Take ledger change `c` (the DVM side's, or psched's own).
    pub fn note(&mut self, c: LedgerChange) {
        self.dirty |= self.ledger.apply(c);
    }

    /// The source's idle nodes (their daemons start at attach).
    pub fn idle(&self) -> Vec<String> {
        self.source.idle()
    }

    /// When the source next wants a turn, asked at `now`.
    pub fn next_deadline(&self, now: u64) -> Option<u64> {
        self.source.next_deadline(now)
    }

    /// The source's waker, when it has one.
    pub fn wake_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.source.wake_fd()
    }

    /// The allocation a request id stands for.
    pub fn find_req(&self, req_id: &str) -> Option<String> {
        self.meta
            .iter()
            .find(|(_, m)| m.req_id.as_deref() == Some(req_id))
            .map(|(id, _)| id.clone())
    }

    /// The nodes granted to `alloc_id`.
    pub fn nodes_of(&self, alloc_id: &str) -> Vec<String> {
        self.ledger
            .grants
            .iter()
            .find(|g| g.alloc_id == alloc_id)
            .map(|g| g.nodes.clone())
            .unwrap_or_default()
    }

    /// Start serving the DVM `dvm` (its namespace) on wire `wire`. The
    /// requests still waiting came over the connection that ended: their
    /// requesters are gone with it, so they are withdrawn (a grant made now
    /// would go to nobody, or to the wrong DVM). What a DVM before kept
    /// goes back to the source.
    pub fn attach(&mut self, dvm: &str, wire: WireVersion, now: u64) {
        self.wire = wire;
        let new_dvm = self.ledger.dvm.as_deref() != Some(dvm);
        self.note(LedgerChange::Dvm(dvm.to_string()));
        self.source.hear(Heard::Attached { new_dvm });
        let mut owed: Vec<String> = Vec::new();
        for (id, m) in &mut self.meta {
            if m.owed.take().is_some() {
                owed.push(id.clone());
            }
        }
        owed.sort();
        for id in owed {
            let _ = self.source.cancel(&id, now);
            // Answered to no one: only the books count.
            let _ = self.happened(now);
            if self.meta.get(&id).is_some_and(|m| !m.granted) {
                self.meta.remove(&id);
            }
        }
        let _ = self.happened(now);
    }

    /// Never grant `nodes` again (their daemon did not come up in this
    /// DVM); what that changed.
    pub fn hold_back(&mut self, nodes: &[String], now: u64) -> Result<Vec<Out>> {
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        self.source.hear(Heard::Broken(nodes));
        self.happened(now)
    }

    /// Fire what fell due by `now`: what the source decided or learned.
    pub fn tick(&mut self, now: u64) -> Result<Vec<Out>> {
        self.happened(now)
    }

    /// Serve one allocation request the DVM sent on `tag`.
    pub fn on_alloc(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        let mut out = match ask.directive {
            Received::Known(Directive::New) => self.on_new(tag, ask, now)?,
            Received::Known(Directive::Extend) => self.on_extend(tag, ask, now)?,
            Received::Known(Directive::Release) => self.on_release(tag, &ask, now)?,
            Received::Known(Directive::ReqCancel) => self.on_cancel(tag, &ask, now)?,
            _ => vec![self.refuse(
                tag,
                &Refusal::saying(
                    Status::ERR_NOT_SUPPORTED,
                    "psched serves NEW, EXTEND, RELEASE and REQ_CANCEL",
                ),
            )?],
        };
        out.extend(self.happened(now)?);
        Ok(out)
    }

    /// The answer refusing `tag` for `r`.
    fn refuse(&self, tag: u32, r: &Refusal) -> Result<Out> {
        let body = match &r.why {
            Some(why) => wire::refusal(self.wire, r.status, why)?,
            None => wire::answer(self.wire, r.status, None, &[], &[])?,
        };
        Ok(Out::Answer(tag, body))
    }

    /// Refuse `tag`: the request names no allocation or request of psched's.
    fn refuse_unknown(&self, tag: u32) -> Result<Vec<Out>> {
        let r = Refusal::saying(
            Status::ERR_NOT_FOUND,
            "no allocation or request of that id is psched's",
        );
        Ok(vec![self.refuse(tag, &r)?])
    }

    /// The allocation `ask` names (by id, or by request id).
    fn find_id(&self, ask: &Forwarded) -> Option<String> {
        match &ask.attrs.alloc_id {
            Some(id) => self.meta.contains_key(id).then(|| id.clone()),
            None => self.find_req(ask.attrs.req_id.as_deref()?),
        }
    }

    fn on_new(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        let want = Ask {
            extend: None,
            attrs: ask.attrs.clone(),
        };
        let (id, nodes) = match self.source.grant(&want, now) {
            Decision::Refused(r) => return Ok(vec![self.refuse(tag, &r)?]),
            Decision::Waits { alloc_id } => (alloc_id, None),
            Decision::Granted { alloc_id, nodes } => (alloc_id, Some(nodes)),
        };
        let m = Meta {
            req_id: ask.attrs.req_id.clone(),
            echo: ask.echo,
            inherit: ask.attrs.inheritance(),
            granted: false,
            owed: Some(tag),
            granted_at: now,
        };
        self.meta.insert(id.clone(), m);
        match nodes {
            Some(nodes) => Ok(self.ready(&id, nodes, now).into_iter().collect()),
            None => Ok(Vec::new()),
        }
    }

    fn on_extend(&mut self, tag: u32, ask: Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(&ask) else {
            return self.refuse_unknown(tag);
        };
        let want = Ask {
            extend: Some(id.clone()),
            attrs: ask.attrs.clone(),
        };
        let nodes = match self.source.grant(&want, now) {
            Decision::Refused(r) => return Ok(vec![self.refuse(tag, &r)?]),
            Decision::Waits { .. } => None,
            Decision::Granted { nodes, .. } => Some(nodes),
        };
        let mut labels = None;
        if let Some(m) = self.meta.get_mut(&id) {
            m.owed = Some(tag);
            m.echo = ask.echo.clone();
            let inherit = ask.attrs.inheritance().or(m.inherit);
            if inherit != m.inherit {
                m.inherit = inherit;
                labels = Some((m.req_id.clone(), inherit));
            }
        }
        if let Some((req_id, inherit)) = labels {
            self.note(LedgerChange::Labels {
                alloc_id: id.clone(),
                req_id,
                inherit,
            });
        }
        match nodes {
            Some(nodes) => Ok(self.ready(&id, nodes, now).into_iter().collect()),
            None => Ok(Vec::new()),
        }
    }

    fn on_release(&mut self, tag: u32, ask: &Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse_unknown(tag);
        };
        let named = ask.attrs.nodes_named();
        let what = if named.is_empty() {
            Give::All(By::Owner)
        } else {
            Give::Nodes(named)
        };
        match self.source.release(&id, what, now) {
            Err(r) => Ok(vec![self.refuse(tag, &r)?]),
            Ok(r) => {
                // The release first: its nodes leave before the queued
                // grants they unblock reach anyone.
                let mut out = vec![Out::Release {
                    tag,
                    alloc_id: id.clone(),
                    nodes: r.nodes,
                    whole: r.whole,
                }];
                if r.whole {
                    out.extend(self.forget(&id)?);
                }
                Ok(out)
            }
        }
    }

    fn on_cancel(&mut self, tag: u32, ask: &Forwarded, now: u64) -> Result<Vec<Out>> {
        let Some(id) = self.find_id(ask) else {
            return self.refuse_unknown(tag);
        };
        if let Err(r) = self.source.cancel(&id, now) {
            return Ok(vec![self.refuse(tag, &r)?]);
        }
        // The cancel's own answer first: the withdrawn request's requester
        // may be what relays the canceller (a palloc holder), and it ends
        // once answered.
        let mut out = vec![Out::Answer(
            tag,
            wire::answer(self.wire, Status(0), Some(&id), &[], &[])?,
        )];
        let Some(m) = self.meta.get_mut(&id) else {
            return Ok(out);
        };
        if let Some(t) = m.owed.take() {
            let body = wire::cancelled(self.wire, &m.echo, ask.requestor.as_deref())?;
            out.push(Out::Answer(t, body));
        }
        if !m.granted {
            self.meta.remove(&id);
        }
        Ok(out)
    }

    /// The DVM says a reservation ended by itself (`PMIX_SESSION_COMPLETE`
    /// with its `PMIX_ALLOC_ID`), or did not make it: its nodes go back to
    /// the source.
    pub fn on_session_done(&mut self, alloc_id: &str, now: u64) -> Result<Vec<Out>> {
        let stop = self
            .meta
            .get(alloc_id)
            .and_then(|m| m.inherit)
            .is_some_and(Inheritance::returns_to_scheduler);
        let Ok(r) = self.source.release(alloc_id, Give::All(By::Dvm), now) else {
            return self.happened(now);
        };
        let mut out = vec![Out::Returned {
            alloc_id: alloc_id.to_string(),
            nodes: r.nodes,
            stop,
        }];
        out.extend(self.forget(alloc_id)?);
        out.extend(self.happened(now)?);
        Ok(out)
    }

    /// The DVM lists `live` as its allocations: a grant it no longer lists
    /// (made at least `settle_ms` ago) was ended by the DVM itself (its
    /// owner's disposition fired, which PRRTE master does not report).
    /// Under NONE or CHILD its nodes go back to the source; under DEFAULT
    /// or CHILD_DEFAULT (or no rule given) they stay in the DVM, kept until
    /// that DVM is gone. Returns what that unblocked.
    pub fn reconcile(&mut self, live: &[String], now: u64, settle_ms: u64) -> Result<Vec<Out>> {
        self.note(LedgerChange::Reconciled(now));
        let mut gone: Vec<String> = self
            .meta
            .iter()
            .filter(|(id, m)| m.granted && m.owed.is_none() && !live.contains(id))
            .filter(|(_, m)| now.saturating_sub(m.granted_at) >= settle_ms)
            .map(|(id, _)| id.clone())
            .collect();
        gone.sort();
        let mut out = Vec::new();
        for id in gone {
            // Gone meanwhile (what the source said of another ended it).
            let Some(m) = self.meta.get(&id) else {
                continue;
            };
            let back = m
                .inherit
                .unwrap_or(Inheritance::Default)
                .returns_to_scheduler();
            if back {
                out.extend(self.on_session_done(&id, now)?);
            } else {
                self.meta.remove(&id);
                let _ = self.source.release(&id, Give::KeptByDvm, now);
                out.extend(self.happened(now)?);
            }
        }
        Ok(out)
    }

    /// The administrator's release of `alloc_id` (`psched --release`): the
    /// scheduler may release any reservation (spec 001 §8.2.1.7). Its nodes
    /// go back to the source and the DVM is told to end the session, as at
    /// expiry. `None` when psched holds no such grant.
    pub fn admin_release(&mut self, alloc_id: &str, now: u64) -> Result<Option<Vec<Out>>> {
        if !self.meta.get(alloc_id).is_some_and(|m| m.granted) {
            return Ok(None);
        }
        let Ok(r) = self.source.release(alloc_id, Give::All(By::Admin), now) else {
            return Ok(None);
        };
        let mut out = vec![Out::End(Ending {
            alloc_id: alloc_id.to_string(),
            nodes: r.nodes,
            why: UnaskedEnd::Admin,
        })];
        out.extend(self.forget(alloc_id)?);
        out.extend(self.happened(now)?);
        Ok(Some(out))
    }

    /// `alloc_id` ended: forget it; a request of it still waiting is
    /// refused (the allocation it would change is gone).
    fn forget(&mut self, alloc_id: &str) -> Result<Vec<Out>> {
        let owed = self.meta.remove(alloc_id).and_then(|m| m.owed);
        match owed {
            Some(t) => Ok(vec![
                self.refuse(t, &Refusal::bare(Status::ERR_NOT_AVAILABLE))?
            ]),
            None => Ok(Vec::new()),
        }
    }

    /// The waiting request of `id` was granted `nodes`: answer it.
    fn ready(&mut self, id: &str, nodes: Vec<String>, now: u64) -> Option<Out> {
        let m = self.meta.get_mut(id)?;
        m.granted_at = now;
        let new = !m.granted;
        m.granted = true;
        let tag = m.owed.take()?;
        Some(Out::Grant(Granted {
            tag,
            alloc_id: id.to_string(),
            nodes,
            echo: m.echo.clone(),
            new,
        }))
    }

    /// Take what the source decided or learned since it was last asked.
    fn happened(&mut self, now: u64) -> Result<Vec<Out>> {
        let mut out = Vec::new();
        for e in self.source.what_happened(now) {
            out.extend(self.absorb(e, now)?);
        }
        Ok(out)
    }

    /// One event of the source, as the DVM is to hear of it.
    fn absorb(&mut self, e: SourceEvent, now: u64) -> Result<Vec<Out>> {
        Ok(match e {
            SourceEvent::Ready { alloc_id, nodes } => {
                self.ready(&alloc_id, nodes, now).into_iter().collect()
            }
            SourceEvent::Refused { alloc_id, refusal } => {
                let Some(m) = self.meta.get_mut(&alloc_id) else {
                    return Ok(Vec::new());
                };
                let owed = m.owed.take();
                if !m.granted {
                    self.meta.remove(&alloc_id);
                }
                match owed {
                    Some(t) => vec![self.refuse(t, &refusal)?],
                    None => Vec::new(),
                }
            }
            SourceEvent::Waiting {
                alloc_id,
                reason,
                text,
            } => match self.meta.get(&alloc_id) {
                Some(Meta {
                    owed: Some(tag),
                    granted: false,
                    ..
                }) => vec![Out::Queued {
                    tag: *tag,
                    reason,
                    text,
                }],
                _ => Vec::new(),
            },
            SourceEvent::Ended(end) => {
                let mut out = self.forget(&end.alloc_id)?;
                out.push(Out::End(end));
                out
            }
            SourceEvent::Lost { alloc_id, nodes } => vec![Out::Lost { alloc_id, nodes }],
            SourceEvent::Warn { alloc_id, secs } => vec![Out::Warn { alloc_id, secs }],
            SourceEvent::Reach { up, text, alloc_id } => {
                let tag = match alloc_id {
                    None => None,
                    Some(id) => match self.meta.get(&id).and_then(|m| m.owed) {
                        Some(t) => Some(t),
                        None => return Ok(Vec::new()),
                    },
                };
                vec![Out::Source { up, text, tag }]
            }
            SourceEvent::Book(c) => {
                self.book(c);
                Vec::new()
            }
        })
    }

    /// A ledger change of the source: a new grant gets its requester's
    /// labels.
    fn book(&mut self, mut c: LedgerChange) {
        if let LedgerChange::Grant(g) = &mut c {
            if let Some(m) = self.meta.get(&g.alloc_id) {
                if !self.ledger.grants.iter().any(|x| x.alloc_id == g.alloc_id) {
                    g.req_id = m.req_id.clone();
                    g.inherit = m.inherit;
                }
            }
        }
        self.note(c);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::proto::SessionEndCause;
    use crate::psched::ledger::Grant;
    use crate::psched::source::Released;

    type Answer<T> = std::result::Result<T, Refusal>;

    /// What the fake source was asked, and what it is to say next.
    #[derive(Default)]
    struct Books {
        asked: Vec<String>,
        news: Vec<SourceEvent>,
    }

    /// A node source whose every ask waits, and whose events the test
    /// writes.
    struct Fake(Rc<RefCell<Books>>);

    impl NodeSource for Fake {
        fn grant(&mut self, ask: &Ask, _now: u64) -> Decision {
            let id = ask.extend.clone().unwrap_or_else(|| "f.1".into());
            self.0.borrow_mut().asked.push(format!("grant {id}"));
            Decision::Waits { alloc_id: id }
        }
        fn release(&mut self, id: &str, what: Give<'_>, _now: u64) -> Answer<Released> {
            self.0
                .borrow_mut()
                .asked
                .push(format!("release {id} {what:?}"));
            Ok(Released {
                nodes: vec!["n1".into()],
                whole: true,
            })
        }
        fn cancel(&mut self, id: &str, _now: u64) -> Answer<()> {
            self.0.borrow_mut().asked.push(format!("cancel {id}"));
            Ok(())
        }
        fn what_happened(&mut self, _now: u64) -> Vec<SourceEvent> {
            std::mem::take(&mut self.0.borrow_mut().news)
        }
        fn next_deadline(&self, _now: u64) -> Option<u64> {
            None
        }
        fn hear(&mut self, news: Heard<'_>) {
            self.0.borrow_mut().asked.push(format!("{news:?}"));
        }
    }

    fn over_fake() -> (Requests, Rc<RefCell<Books>>) {
        let books = Rc::new(RefCell::new(Books::default()));
        let r = Requests::new(Box::new(Fake(Rc::clone(&books))), Ledger::default());
        (r, books)
    }

    fn ask(directive: Directive, id: Option<&str>) -> Forwarded {
        Forwarded {
            directive: directive.into(),
            attrs: crate::proto::AllocAttrs {
                num_nodes: Some(1),
                alloc_id: id.map(String::from),
                req_id: Some("r1".into()),
                ..Default::default()
            },
            echo: vec![Info::new(crate::proto::keys::ALLOC_REQ_ID, "r1")],
            ..Forwarded::default()
        }
    }

    fn grant(nodes: &[&str]) -> Grant {
        Grant::bare("f.1", nodes)
    }

    /// The fake granted `f.1` on `n1` (a NEW on tag 7 waited for it).
    fn granted(r: &mut Requests, books: &Rc<RefCell<Books>>) {
        assert!(r
            .on_alloc(7, ask(Directive::New, None), 0)
            .unwrap()
            .is_empty());
        books.borrow_mut().news = vec![
            SourceEvent::Ready {
                alloc_id: "f.1".into(),
                nodes: vec!["n1".into()],
            },
            SourceEvent::Book(LedgerChange::Grant(grant(&["n1"]))),
        ];
        let out = r.tick(1).unwrap();
        assert!(
            matches!(&out[..], [Out::Grant(g)] if g.tag == 7 && g.new && g.nodes == ["n1"]),
            "{out:?}"
        );
    }

    #[test]
    fn a_grant_that_waits_is_answered_when_the_source_says_it_is_ready() {
        let (mut r, books) = over_fake();
        r.take_dirty();
        granted(&mut r, &books);
        assert!(r.take_dirty(), "the grant's change arrived");
        let g = &r.ledger().grants[0];
        assert_eq!(
            (g.alloc_id.as_str(), g.req_id.as_deref()),
            ("f.1", Some("r1")),
            "the source's grant, with the requester's request id"
        );
        assert!(!r.take_dirty(), "nothing since");
        assert_eq!(r.find_req("r1").as_deref(), Some("f.1"));
        // An EXTEND waits too; the source refuses it later.
        assert!(r
            .on_alloc(8, ask(Directive::Extend, Some("f.1")), 2)
            .unwrap()
            .is_empty());
        books.borrow_mut().news = vec![SourceEvent::Refused {
            alloc_id: "f.1".into(),
            refusal: Refusal::bare(Status::ERR_NOT_AVAILABLE),
        }];
        let out = r.tick(3).unwrap();
        assert!(matches!(&out[..], [Out::Answer(8, _)]), "{out:?}");
        assert_eq!(r.ledger().grants.len(), 1, "the grant stays");
    }

    #[test]
    fn an_end_the_source_decided_reaches_the_dvm_as_an_end() {
        let (mut r, books) = over_fake();
        granted(&mut r, &books);
        // An EXTEND waits when the source ends the allocation.
        r.on_alloc(8, ask(Directive::Extend, Some("f.1")), 2)
            .unwrap();
        let end = Ending {
            alloc_id: "f.1".into(),
            nodes: vec!["n1".into()],
            why: UnaskedEnd::Source(SessionEndCause::Cancelled),
        };
        books.borrow_mut().news = vec![
            SourceEvent::Ended(end.clone()),
            SourceEvent::Book(LedgerChange::Gone("f.1".into())),
        ];
        let out = r.tick(3).unwrap();
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(matches!(&out[0], Out::Answer(8, _)), "the EXTEND refused");
        assert_eq!(out[1], Out::End(end), "the same end as the source's");
        assert!(r.ledger().grants.is_empty());
        // Forgotten: a RELEASE of it names nothing of psched's.
        let out = r
            .on_alloc(9, ask(Directive::Release, Some("f.1")), 4)
            .unwrap();
        assert!(matches!(&out[..], [Out::Answer(9, _)]), "{out:?}");
    }

    #[test]
    fn waiting_requests_hear_of_the_source_and_are_withdrawn_at_attach() {
        let (mut r, books) = over_fake();
        r.on_alloc(7, ask(Directive::New, None), 0).unwrap();
        books.borrow_mut().news = vec![
            SourceEvent::Waiting {
                alloc_id: "f.1".into(),
                reason: "Resources".into(),
                text: "Slurm says Resources".into(),
            },
            SourceEvent::Reach {
                up: false,
                text: "down".into(),
                alloc_id: Some("f.1".into()),
            },
        ];
        let out = r.tick(1).unwrap();
        assert!(
            matches!(
                &out[..],
                [
                    Out::Queued { tag: 7, .. },
                    Out::Source {
                        up: false,
                        tag: Some(7),
                        ..
                    }
                ]
            ),
            "{out:?}"
        );
        r.attach("dvm@0", WireVersion::V61, 2);
        let asked = books.borrow().asked.clone();
        assert_eq!(
            asked,
            ["grant f.1", "Attached { new_dvm: true }", "cancel f.1"]
        );
        assert_eq!(r.find_req("r1"), None, "the waiting NEW is gone");
        assert_eq!(r.ledger().dvm.as_deref(), Some("dvm@0"));
    }

    #[test]
    fn the_dvm_keeping_an_allocation_releases_it_kept_and_the_administrator_whole() {
        let (mut r, books) = over_fake();
        granted(&mut r, &books);
        assert!(r.admin_release("f.2", 2).unwrap().is_none(), "not psched's");
        r.reconcile(&[], 10_000, 0).unwrap();
        assert!(r.ledger().reconciled_at_ms.is_some());
        assert!(r.admin_release("f.1", 10_001).unwrap().is_none(), "gone");
        let asked = books.borrow().asked.clone();
        assert_eq!(
            asked.last().map(String::as_str),
            Some("release f.1 KeptByDvm")
        );
        granted(&mut r, &books);
        let out = r.admin_release("f.1", 10_002).unwrap().expect("held");
        assert!(
            matches!(
                &out[..],
                [Out::End(Ending {
                    why: UnaskedEnd::Admin,
                    ..
                })]
            ),
            "{out:?}"
        );
        let asked = books.borrow().asked.clone();
        assert_eq!(
            asked.last().map(String::as_str),
            Some("release f.1 All(Admin)")
        );
    }
}

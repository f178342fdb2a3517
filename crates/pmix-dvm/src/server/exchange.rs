//! What a job's PMIx clients ask of pdvm beyond the tools' requests: their
//! job data at init, commit, fence, get (the modex, kept in
//! [`super::modex`]) and abort. pdvm is the one server of every simulated
//! node, so a fence completes when all its participants entered it here,
//! and a get is answered from what its target committed, as the asking
//! process's node sees it (local values for the same node, remote ones
//! elsewhere).

use nix::sys::signal::Signal;

use std::path::PathBuf;

use crate::codec::{App, Bucket, ByteObject, Encoder, Info, Kval, Proc, Value, RANK_WILDCARD};
use crate::dvm::ProcSlot;
use crate::error::{Error, Result};
use crate::proto::keys::{self, client as k};
use crate::proto::status::Status;

use super::job_data::{AppLayout, JobLayout, Placed};
use super::modex::{FenceStep, PendingGet, ProcKey, Waiter};
use super::peer::PeerInfo;
use super::state::Server;

fn key_of(p: &PeerInfo) -> ProcKey {
    (p.nspace().to_string(), p.name.wire_rank())
}

impl Server {
    /// Lay out job `nspace` (before its processes start): its nodes with
    /// their DVM numbers, its apps, its ranks, and the size of its session.
    pub(crate) fn lay_out(&mut self, nspace: &str, apps: &[(&App, PathBuf)], slots: &[ProcSlot]) {
        let nodes = self.model.dvm().nodes();
        let placed: Vec<Placed> = slots
            .iter()
            .map(|s| (s.rank, s.app, s.node.as_str()))
            .collect();
        let app_layouts = apps
            .iter()
            .map(|(a, _)| AppLayout {
                argv: super::dispatch::command_line(std::slice::from_ref(*a)),
                wdir: super::jobs::app_dir(a).map(String::from),
                ..AppLayout::default()
            })
            .collect();
        let node_id = |name: &str| nodes.iter().position(|n| n.name == name).unwrap_or(0) as u32;
        let mut layout = JobLayout::new(nspace, &placed, app_layouts, node_id);
        let session = slots
            .first()
            .and_then(|s| nodes.iter().find(|n| n.name == s.node))
            .map(|n| n.session.clone());
        layout.univ_size = nodes
            .iter()
            .filter(|n| Some(&n.session) == session.as_ref())
            .map(|n| n.slots)
            .sum();
        layout.tmpdir = self.launch.tmpdir.to_string_lossy().into_owned();
        if let Some(j) = self.jobs.get_mut(nspace) {
            j.layout = layout;
            j.req_cache = None;
        }
    }

    /// `PMIX_REQ_CMD`: the peer's job data (namespace, then key/value
    /// pairs until the buffer ends). A tool, which has no job, gets its
    /// namespace as a job of one.
    pub(crate) fn on_req(&mut self, conn: u64, tag: u32, peer: &PeerInfo) -> Result<()> {
        let Some(c) = self.conns.get(conn) else {
            return Ok(());
        };
        let (wire, described) = (c.wire, c.described);
        let mut e = c.encoder();
        e.pack_one(&peer.nspace().to_string())?;
        match self.jobs.get_mut(peer.nspace()) {
            Some(j) if j.layout.size() > 0 => {
                let cached = j
                    .req_cache
                    .as_ref()
                    .filter(|(w, d, _)| *w == wire && *d == described);
                let body = match cached {
                    Some((_, _, b)) => b.clone(),
                    None => {
                        let mut body = Encoder::like(&e);
                        j.layout.encode(&mut body)?;
                        let b = body.into_bytes();
                        j.req_cache = Some((wire, described, b.clone()));
                        b
                    }
                };
                e.raw().extend_from_slice(&body);
            }
            _ => {
                for kv in [
                    Kval::new(keys::JOB_SIZE, Value::Uint32(1)),
                    Kval::new(keys::UNIV_SIZE, Value::Uint32(1)),
                    Kval::new(keys::JOBID, peer.nspace()),
                ] {
                    e.pack_one(&kv)?;
                }
            }
        }
        let bytes = e.into_bytes();
        self.send(conn, tag, &bytes);
        Ok(())
    }

    /// Answer with a status alone.
    pub(crate) fn reply_status(&mut self, conn: u64, tag: u32, st: Status) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        let mut e = c.encoder();
        if e.pack_one(&st).is_ok() {
            let bytes = e.into_bytes();
            self.send(conn, tag, &bytes);
        }
    }

    /// `PMIX_COMMIT_CMD`: store what the peer put; gets waiting on it may
    /// now be answered.
    pub(crate) fn on_commit(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        buckets: Vec<(u8, Bucket)>,
    ) -> Result<()> {
        let Some(c) = self.conns.get(conn) else {
            return Ok(());
        };
        let who = key_of(peer);
        self.modex.commit(&who, &buckets, c.wire, c.described)?;
        self.reply_status(conn, tag, Status::SUCCESS);
        for g in self.modex.take_gets_for(&who) {
            if !self.try_answer_get(&g) {
                self.modex.wait_get(g);
            }
        }
        Ok(())
    }

    /// `PMIX_FENCENB_CMD`: the peer enters a fence; when every participant
    /// has, all are released. One that ended before entering fails it.
    pub(crate) fn on_fence(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        procs: Vec<Proc>,
    ) -> Result<()> {
        let mut id: Vec<ProcKey> = procs.into_iter().map(|p| (p.nspace, p.rank)).collect();
        if id.is_empty() {
            id.push((peer.nspace().to_string(), RANK_WILDCARD));
        }
        id.sort();
        id.dedup();
        let need = self.fence_members(&id)?;
        if need.iter().any(|p| self.proc_has_ended(p)) {
            self.reply_status(conn, tag, Status::ERR_PROC_ABORTED);
            return Ok(());
        }
        let w = Waiter { conn, tag };
        if let FenceStep::Complete(all) = self.modex.enter_fence(id, need, key_of(peer), w) {
            for w in all {
                self.reply_status(w.conn, w.tag, Status::SUCCESS);
            }
        }
        Ok(())
    }

    /// Every process a fence's participant list names.
    pub(crate) fn fence_members(&self, id: &[ProcKey]) -> Result<Vec<ProcKey>> {
        let mut need = Vec::new();
        for (ns, rank) in id {
            let Some(j) = self.jobs.get(ns) else {
                return Err(Error::new(
                    Status::ERR_INVALID_NAMESPACE,
                    format!("a fence names {ns}, which is no job of this DVM"),
                ));
            };
            if *rank == RANK_WILDCARD {
                need.extend((0..j.layout.size()).map(|r| (ns.clone(), r)));
            } else {
                need.push((ns.clone(), *rank));
            }
        }
        Ok(need)
    }

    /// Whether process `p` has ended (or is no process of a live job).
    pub(crate) fn proc_has_ended(&self, p: &ProcKey) -> bool {
        self.jobs
            .get(&p.0)
            .and_then(|j| j.procs.iter().find(|r| r.rank == p.1))
            .is_none_or(|r| r.exit.is_some())
    }

    /// `PMIX_GETNB_CMD`: another process's data. A job's data (wildcard
    /// rank) and reserved keys are answered at once; a value a process
    /// puts is answered once its owner committed it, unless
    /// `PMIX_IMMEDIATE` asks for an answer now.
    pub(crate) fn on_get(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        target: Proc,
        info: Vec<Info>,
        key: Option<String>,
    ) -> Result<()> {
        let g = PendingGet {
            waiter: Waiter { conn, tag },
            requester: key_of(peer),
            target: (target.nspace, target.rank),
            key,
        };
        if g.target.1 == RANK_WILDCARD {
            return self.answer_job_get(&g);
        }
        if self.try_answer_get(&g) {
            return Ok(());
        }
        let reserved = g
            .key
            .as_deref()
            .is_some_and(|k| k.starts_with(k::RESERVED_PREFIX));
        let immediate = info
            .iter()
            .any(|i| i.key == k::IMMEDIATE && i.value.is_true());
        if reserved || immediate || self.proc_has_ended(&g.target) {
            self.reply_status(conn, tag, Status::ERR_NOT_FOUND);
        } else {
            self.modex.wait_get(g);
        }
        Ok(())
    }

    /// Answer `g` from what its target committed (or, for a key of the job
    /// data, from that); false when nothing answers it yet.
    fn try_answer_get(&mut self, g: &PendingGet) -> bool {
        let same_node = self.same_node(&g.requester, &g.target);
        let committed = self.modex.answer(&g.target, same_node, g.key.as_deref());
        let from_job = || {
            let j = self.jobs.get(&g.target.0)?;
            let kvals = j.layout.rank_kvals(g.target.1);
            let key = g.key.as_deref()?;
            kvals.iter().any(|kv| kv.key == key).then_some(kvals)
        };
        let raw = match (committed, from_job()) {
            (Some(raw), _) => raw,
            (None, Some(kvals)) => match self.pack_kvals(g.waiter.conn, &kvals) {
                Some(b) => b,
                None => return true,
            },
            (None, None) => return false,
        };
        let target = Proc {
            nspace: g.target.0.clone(),
            rank: g.target.1,
        };
        self.send_get_answer(g.waiter, &[(target, raw)]);
        true
    }

    /// A get for a job's data (wildcard rank): its job-level values, and,
    /// for another job than the asker's, each rank's own.
    fn answer_job_get(&mut self, g: &PendingGet) -> Result<()> {
        let Some(j) = self.jobs.get(&g.target.0) else {
            self.reply_status(g.waiter.conn, g.waiter.tag, Status::ERR_NOT_FOUND);
            return Ok(());
        };
        let layout = j.layout.clone();
        let mut blobs = Vec::new();
        let job = Proc {
            nspace: g.target.0.clone(),
            rank: RANK_WILDCARD,
        };
        if let Some(b) = self.pack_kvals(g.waiter.conn, &layout.job_kvals()) {
            blobs.push((job, b));
        }
        if g.requester.0 != g.target.0 {
            for r in 0..layout.size() {
                if let Some(b) = self.pack_kvals(g.waiter.conn, &layout.rank_kvals(r)) {
                    let p = Proc {
                        nspace: g.target.0.clone(),
                        rank: r,
                    };
                    blobs.push((p, b));
                }
            }
        }
        self.send_get_answer(g.waiter, &blobs);
        Ok(())
    }

    /// Pairs packed in connection `conn`'s wire form.
    fn pack_kvals(&self, conn: u64, kvals: &[Kval]) -> Option<Vec<u8>> {
        let mut e = self.conns.get(conn)?.encoder();
        for kv in kvals {
            e.pack_one(kv).ok()?;
        }
        Some(e.into_bytes())
    }

    /// A get's answer: success, then one byte object per process (its
    /// name, then its packed pairs).
    fn send_get_answer(&mut self, w: Waiter, blobs: &[(Proc, Vec<u8>)]) {
        let Some(c) = self.conns.get(w.conn) else {
            return;
        };
        let mut e = c.encoder();
        let mut packed = e.pack_one(&Status::SUCCESS);
        for (p, raw) in blobs {
            let mut inner = Encoder::like(&e);
            packed = packed.and_then(|_| inner.pack_one(p));
            inner.raw().extend_from_slice(raw);
            packed = packed.and_then(|_| e.pack_one(&ByteObject(inner.into_bytes())));
        }
        if packed.is_ok() {
            let bytes = e.into_bytes();
            self.send(w.conn, w.tag, &bytes);
        }
    }

    /// Whether two processes run on the same simulated node.
    fn same_node(&self, a: &ProcKey, b: &ProcKey) -> bool {
        let node = |p: &ProcKey| {
            self.jobs
                .get(&p.0)
                .and_then(|j| j.layout.node_of(p.1).map(str::to_string))
        };
        match (node(a), node(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// `PMIX_ABORT_CMD`: the peer asks its job to end with `status`
    /// (`MPI_Abort`): pdvm says so, terminates the job, and the job ends
    /// with that status.
    pub(crate) fn on_abort(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        status: Status,
        message: Option<String>,
    ) -> Result<()> {
        let ns = peer.nspace().to_string();
        let said = message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let sentence = format!(
            "rank {} called abort with status {}{said}; the job's other processes were terminated",
            peer.name.wire_rank(),
            status.0
        );
        self.log(format!("{ns}: {sentence}"));
        if let Some(j) = self.jobs.get_mut(&ns) {
            j.aborted.get_or_insert((status.0, sentence));
        }
        self.reply_status(conn, tag, Status::SUCCESS);
        self.terminate_job(&ns, Signal::SIGTERM);
        Ok(())
    }

    /// Process `p` ended: the fences it had not entered fail, and the gets
    /// waiting for its values are answered "not found".
    pub(crate) fn modex_proc_ended(&mut self, p: &ProcKey) {
        for w in self.modex.fail_fences_of(p) {
            self.reply_status(w.conn, w.tag, Status::ERR_PROC_ABORTED);
        }
        for g in self.modex.take_gets_for(p) {
            self.reply_status(g.waiter.conn, g.waiter.tag, Status::ERR_NOT_FOUND);
        }
    }

    /// Job `nspace` ended: what its processes committed is forgotten.
    pub(crate) fn modex_job_ended(&mut self, nspace: &str) {
        for g in self.modex.take_gets_for_job(nspace) {
            self.reply_status(g.waiter.conn, g.waiter.tag, Status::ERR_NOT_FOUND);
        }
        self.modex.forget_job(nspace);
    }
}

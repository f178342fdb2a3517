//! Request handlers: one function per command a peer may send.
//!
//! Every handler decodes with bounded counts; a request that does not decode
//! is answered with `PMIX_ERR_UNPACK_FAILURE` when its tag allows a reply,
//! and the peer is dropped only when the framing itself is broken.

use std::time::Instant;

use nix::sys::signal::Signal;

use crate::codec::{App, Info, Proc, Query, Value, RANK_WILDCARD};
use crate::dvm::{AllocRequest, AllocStatus, Requester};
use crate::error::{Error, Result};
use crate::proto::status::Status;
use crate::proto::{keys, Directive, Received};

use super::attrs::{flag, spawn_targets};
use super::ident::ProcName;
use super::job_env::ProcSpec;
use super::jobs::{launch, resolve_apps, Job, Output, ProcRec};
use super::model::Pending;
use super::peer::{PeerClass, PeerInfo};
use super::request::{self, DecodeError, Request};
use super::state::{alloc_reply_infos, Server};
use std::path::PathBuf;

/// Most processes one spawn may start.
pub(crate) const MAX_PROCS: u32 = 4096;

/// `PMIX_EVENT_CUSTOM_RANGE`: the targets of a `PMIX_RANGE_CUSTOM` event.
use crate::proto::keys::EVENT_CUSTOM_RANGE;
use crate::proto::range::{
    CUSTOM as RANGE_CUSTOM, NAMESPACE as RANGE_NAMESPACE, PROC_LOCAL as RANGE_PROC_LOCAL,
    RM as RANGE_RM,
};

/// Most distinct query keys answered in one `PMIX_QUERY` (after repeats are
/// folded): the answer's size stays bounded whatever the request repeats.
pub(crate) const MAX_QUERY_KEYS: usize = 256;

/// Folds repeated keys within a query and repeated queries, then bounds the
/// number of keys left ([`MAX_QUERY_KEYS`]).
fn dedup_queries(queries: Vec<Query>) -> Result<Vec<Query>> {
    let mut out: Vec<Query> = Vec::new();
    let mut total = 0usize;
    for mut q in queries {
        let mut seen = std::collections::HashSet::new();
        q.keys.retain(|k| seen.insert(k.clone()));
        if out.contains(&q) {
            continue;
        }
        total += q.keys.len();
        if total > MAX_QUERY_KEYS {
            return Err(Error::new(
                Status::ERR_BAD_PARAM,
                format!("a query may ask for at most {MAX_QUERY_KEYS} distinct keys"),
            ));
        }
        out.push(q);
    }
    Ok(out)
}

/// The requester behind a connection.
pub(crate) fn requester(p: &PeerInfo) -> Requester {
    match p.class {
        // The requester carries the peer's own rank (a tool with a given
        // identity may have a non-zero one), so the model's replies and
        // warnings come back addressed to exactly this peer.
        PeerClass::Tool => Requester {
            rank: p.name.wire_rank(),
            ..Requester::tool(p.nspace())
        },
        PeerClass::Client => Requester::app(p.nspace(), p.name.wire_rank()),
    }
}

impl Server {
    /// Handle one request from a handshaken peer.
    pub fn dispatch(&mut self, conn: u64, tag: u32, payload: &[u8]) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        let Some(peer) = c.peer.clone() else { return };
        let mut d = c.decoder(payload);
        let (command, request) = match request::decode(&mut d) {
            Ok(r) => (r.command(), Ok(r)),
            Err(DecodeError::Command(e)) => {
                self.log(format!("{}: undecodable request: {e}", peer.name));
                self.reply_status_infos(conn, tag, Status::ERR_UNPACK_FAILURE, &[]);
                return;
            }
            Err(DecodeError::Args(c, e)) => (c, Err(e)),
        };
        let r = request.and_then(|req| match req {
            Request::JobData => self.on_req(conn, tag, &peer),
            Request::Finalize => {
                if let Some(c) = self.conns.get_mut(conn) {
                    c.finalized = true;
                }
                self.reply_status_infos(conn, tag, Status::SUCCESS, &[]);
                Ok(())
            }
            Request::Query(queries) => self.on_query(conn, tag, queries),
            Request::Alloc { directive, info } => self.on_alloc(conn, tag, &peer, directive, info),
            Request::Spawn { job_info, apps } => self.on_spawn(conn, tag, &peer, job_info, apps),
            Request::Publish(info) => self.on_publish(conn, tag, &peer, info),
            Request::Lookup { keys, info } => self.on_lookup(conn, tag, keys, info),
            Request::Unpublish(keys) => self.on_unpublish(conn, tag, &peer, keys),
            Request::Connect { procs, disconnect } => {
                self.on_pmix_connect(conn, tag, &peer, procs, disconnect)
            }
            Request::RegEvents(codes) => self.on_regevents(conn, tag, codes),
            Request::Notify { code, range, info } => {
                self.on_notify(conn, tag, &peer, code, range, info)
            }
            Request::DeregEvents => {
                // libpmix sends this without waiting for an answer (a
                // reply would reach the client as an unexpected message).
                self.conns.deregister_events(conn);
                Ok(())
            }
            Request::JobControl {
                targets,
                directives,
            } => self.on_job_control(conn, tag, targets, directives),
            Request::IofPush { targets, data } => self.on_iof_push(conn, tag, targets, data),
            Request::IofPull => {
                self.reply_status_infos(conn, tag, Status::SUCCESS, &[]);
                Ok(())
            }
            Request::Commit(buckets) => self.on_commit(conn, tag, &peer, buckets),
            Request::Fence { procs, .. } => self.on_fence(conn, tag, &peer, procs),
            Request::Get { target, info, key } => self.on_get(conn, tag, &peer, target, info, key),
            Request::Abort {
                status, message, ..
            } => self.on_abort(conn, tag, &peer, status, message),
        });
        if let Err(e) = r {
            self.log(format!("{}: command {command}: {e}", peer.name));
            let info = vec![Info::new(keys::EVENT_TEXT_MESSAGE, e.context.as_str())];
            self.reply_status_infos(conn, tag, e.status, &info);
        }
    }

    fn on_query(&mut self, conn: u64, tag: u32, queries: Vec<Query>) -> Result<()> {
        let queries = dedup_queries(queries)?;
        let wire = self
            .conns
            .get(conn)
            .map(|c| c.wire)
            .unwrap_or(crate::codec::WireVersion::V41);
        let (st, info) = self.answer_queries(&queries, wire);
        self.reply_status_infos(conn, tag, st, &info);
        Ok(())
    }

    fn on_alloc(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        directive: Received<Directive>,
        info: Vec<Info>,
    ) -> Result<()> {
        // `pdvm --release ID`: the simulated scheduler's own release.
        let by_scheduler =
            directive == Received::Known(Directive::Release) && flag(&info, keys::BY_SCHEDULER);
        if by_scheduler {
            self.log(format!(
                "{}: a release by pdvm's scheduler (pdvm --release)",
                peer.name
            ));
        }
        let req = AllocRequest {
            requester: if by_scheduler {
                Requester::scheduler(peer.nspace())
            } else {
                requester(peer)
            },
            directive,
            attrs: crate::dvm::AllocAttrs::from_infos(&info),
        };
        if let Some(why) = self.dead_target(&req) {
            self.refuse_alloc((conn, tag), peer, &req, Status::ERR_NOT_FOUND, &why);
            return Ok(());
        }
        match self.model.allocate(&req) {
            Err(e) => self.refuse_alloc((conn, tag), peer, &req, e.status(), e.rule()),
            Ok(outcome) => {
                if req.attrs.warn_timeout.is_some() {
                    self.warn_conns.insert(outcome.alloc_id.clone(), conn);
                }
                match &outcome.status {
                    AllocStatus::Queued => {
                        // A queued NEW's request id and owner, for its
                        // `cancelled` event should it never be granted.
                        if let Some(v) = self.model.reservation(&outcome.alloc_id) {
                            self.model.remember_grant(
                                &outcome.alloc_id,
                                outcome.req_id.clone(),
                                v.owner_nspace.clone(),
                            );
                        }
                        self.model.queue_reply(
                            &outcome.alloc_id,
                            Pending {
                                conn,
                                tag,
                                to: ProcName::new(req.requester.nspace.clone(), req.requester.rank),
                            },
                        );
                    }
                    AllocStatus::Granted { nodes } => {
                        let out = self.grant_infos(
                            conn,
                            &outcome.alloc_id,
                            outcome.req_id.as_deref(),
                            nodes,
                        );
                        self.reply_status_infos(conn, tag, Status::SUCCESS, &out);
                    }
                    AllocStatus::Released { nodes } => {
                        let out =
                            alloc_reply_infos(&outcome.alloc_id, outcome.req_id.as_deref(), nodes);
                        self.reply_status_infos(conn, tag, Status::SUCCESS, &out);
                    }
                    AllocStatus::Cancelled { .. } => {
                        let out =
                            alloc_reply_infos(&outcome.alloc_id, outcome.req_id.as_deref(), &[]);
                        self.reply_status_infos(conn, tag, Status::SUCCESS, &out);
                    }
                }
                self.apply_effects(outcome.effects);
                // No `granted` event for a reservation its effects ended
                // (an EXTEND settling a rule whose owner has gone).
                let lives = self.model.reservation(&outcome.alloc_id).is_some();
                if let (AllocStatus::Granted { nodes }, true) = (&outcome.status, lives) {
                    self.emit_granted(&outcome.alloc_id, outcome.req_id.as_deref(), nodes);
                }
            }
        }
        Ok(())
    }

    /// Refuse allocation request `req` on (`conn`, `tag`) with `status`,
    /// saying `why` (logged, and in the reply with the request id).
    fn refuse_alloc(
        &mut self,
        (conn, tag): (u64, u32),
        peer: &PeerInfo,
        req: &AllocRequest,
        status: Status,
        why: &str,
    ) {
        self.log(format!("{}: allocation refused: {why}", peer.name));
        let mut out = Vec::new();
        if let Some(r) = &req.attrs.req_id {
            out.push(Info::new(keys::ALLOC_REQ_ID, r.as_str()));
        }
        out.push(Info::new(keys::EVENT_TEXT_MESSAGE, why));
        self.reply_status_infos(conn, tag, status, &out);
    }

    /// A tool's NEW request whose `PMIX_ALLOC_TARGET` names no live
    /// namespace (no running job, no connected tool), or pdvm's own, is
    /// refused with `PMIX_ERR_NOT_FOUND` before anything is reserved: the
    /// owning namespace (§8.2.1.7) must exist, or the nodes would be
    /// stranded until the DVM ends. Applications are left to the model
    /// (their TARGET is `PMIX_ERR_NO_PERMISSIONS`, §8.2.1.8), and a
    /// `--pmix-compat` DVM ignores TARGET (§8.2.1.10).
    fn dead_target(&self, req: &AllocRequest) -> Option<String> {
        let t = req.attrs.target.as_deref()?;
        if req.directive != Received::Known(Directive::New)
            || req.requester.class != crate::dvm::RequesterClass::Tool
            || self.cfg.compat
        {
            return None;
        }
        if t == self.ident.nspace {
            return Some(format!(
                "PMIX_ALLOC_TARGET names {t:?}, the DVM's own namespace, which no tool can act \
                 for: nobody could release the reservation (§8.2.1.7); nothing was reserved"
            ));
        }
        if self.is_live_namespace(t) {
            return None;
        }
        Some(format!(
            "PMIX_ALLOC_TARGET names {t:?}, which is no live namespace of this DVM \
             (the owning namespace must exist, §8.2.1.7): nothing was reserved"
        ))
    }

    fn on_regevents(&mut self, conn: u64, tag: u32, codes: Vec<Status>) -> Result<()> {
        let codes: Vec<i32> = codes.iter().map(|s| s.0).collect();
        self.conns.register_events(conn, &codes);
        self.reply_status_infos(conn, tag, Status::SUCCESS, &[]);
        Ok(())
    }

    /// `PMIX_NOTIFY_CMD` from a peer (`PMIx_Notify_event`): status, range,
    /// infos. The event is relayed, with the peer as its source, to every
    /// other connection registered for it within the range: `NAMESPACE`
    /// reaches the peer's own namespace, `CUSTOM` the processes named by
    /// `pmix.evrange` (every peer when none is named), `RM` stays with pdvm
    /// (it is the resource manager) and the wider ranges reach everyone.
    fn on_notify(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        code: Status,
        range: u8,
        info: Vec<Info>,
    ) -> Result<()> {
        let custom: Option<Vec<Proc>> = (range == RANGE_CUSTOM)
            .then(|| info.iter().find(|i| i.key == EVENT_CUSTOM_RANGE))
            .flatten()
            .map(|i| match &i.value {
                Value::Proc(p) => vec![p.clone()],
                Value::DataArray(a) => a.as_procs().map(<[Proc]>::to_vec).unwrap_or_default(),
                _ => Vec::new(),
            });
        self.log(format!(
            "{} notified event {} (range {range})",
            peer.name, code.0
        ));
        self.reply_status_infos(conn, tag, Status::SUCCESS, &[]);
        if range == RANGE_RM || range == RANGE_PROC_LOCAL {
            return Ok(());
        }
        let targets: Vec<u64> = self
            .conns
            .iter()
            .filter(|(id, c)| *id != conn && c.wants(code.0))
            .filter(|(_, c)| {
                let Some(p) = &c.peer else { return false };
                match (range, &custom) {
                    (RANGE_NAMESPACE, _) => p.nspace() == peer.nspace(),
                    (RANGE_CUSTOM, Some(list)) if !list.is_empty() => {
                        list.iter().any(|t| ProcName::from(t).covers(&p.name))
                    }
                    _ => true,
                }
            })
            .map(|(id, _)| id)
            .collect();
        let source = peer.name.to_proc();
        self.notify_many(&targets, code, &source, &info);
        Ok(())
    }

    fn on_job_control(
        &mut self,
        conn: u64,
        tag: u32,
        targets: Vec<Proc>,
        dirs: Vec<Info>,
    ) -> Result<()> {
        if let Some(pause) = dirs
            .iter()
            .find(|i| i.key == keys::IOF_PAUSE)
            .map(|i| i.value.is_true())
        {
            let hit = self.pause_output_of(conn, &targets, pause);
            let names: Vec<&str> = targets.iter().map(|t| t.nspace.as_str()).collect();
            self.log(format!(
                "output of {} {} at the request of connection {conn}",
                names.join(","),
                if pause { "paused" } else { "resumed" }
            ));
            let st = if hit {
                Status::SUCCESS
            } else {
                Status::ERR_NOT_FOUND
            };
            self.reply_status_infos(conn, tag, st, &[]);
            return Ok(());
        }
        let sig = if flag(&dirs, keys::JOB_CTRL_KILL) {
            Some(Signal::SIGKILL)
        } else if flag(&dirs, keys::JOB_CTRL_TERMINATE) {
            Some(Signal::SIGTERM)
        } else {
            dirs.iter()
                .find(|i| i.key == keys::JOB_CTRL_SIGNAL)
                .and_then(|i| i.value.as_i64())
                .and_then(|s| Signal::try_from(s as i32).ok())
        };
        let Some(sig) = sig else {
            return Err(Error::new(
                Status::ERR_NOT_SUPPORTED,
                "no job-control directive pdvm knows",
            ));
        };
        let mut hit = false;
        for t in &targets {
            let Some(j) = self.jobs.get_mut(&t.nspace) else {
                continue;
            };
            hit = true;
            if t.rank == RANK_WILDCARD {
                if sig == Signal::SIGTERM {
                    self.terminate_job(&t.nspace, sig);
                } else {
                    j.signal(sig);
                }
            } else if let Some(p) = j
                .procs
                .iter_mut()
                .find(|p| p.rank == t.rank && p.exit.is_none())
            {
                p.signal(sig);
            }
        }
        let st = if hit {
            Status::SUCCESS
        } else {
            Status::ERR_NOT_FOUND
        };
        self.reply_status_infos(conn, tag, st, &[]);
        Ok(())
    }

    fn on_spawn(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        job_info: Vec<Info>,
        apps: Vec<App>,
    ) -> Result<()> {
        let programs = resolve_apps(&apps, &self.launch).map_err(|a| {
            Error::new(
                Status::ERR_NOT_FOUND,
                super::jobs::not_runnable(a, "executable"),
            )
        })?;
        let nprocs: Vec<u32> = apps.iter().map(|a| a.maxprocs.max(1) as u32).collect();
        if nprocs.iter().map(|&x| u64::from(x)).sum::<u64>() > u64::from(MAX_PROCS) {
            return Err(Error::new(
                Status::ERR_OUT_OF_RESOURCE,
                "too many processes",
            ));
        }
        let targets = spawn_targets(&job_info);
        let req = requester(peer);
        let refused = |e: crate::dvm::DvmError| Error::new(e.status(), e.rule());
        let map = spawn_map(&job_info)?;
        let asks: Vec<crate::dvm::AppAsk> = apps
            .iter()
            .zip(&nprocs)
            .map(|(a, &n)| crate::dvm::AppAsk {
                nprocs: n,
                hosts: app_hosts(a),
            })
            .collect();
        let plan = self
            .model
            .dvm()
            .plan_spawn_with(&req, targets.as_deref(), &asks, map)
            .map_err(refused)?;
        let nspace = self.mint_nspace();
        self.model
            .commit_spawn(&plan, &nspace, Some(peer.nspace()))
            .map_err(|e| Error::new(e.status(), e.rule()))?;
        let mut job = new_job(&nspace, conn, &job_info);
        // A process's spawn (MPI_Comm_spawn) that asks for no forwarding:
        // the children's output goes where its own job's output goes.
        if peer.class == PeerClass::Client && !job.fwd_stdout && !job.fwd_stderr {
            if let Some(parent) = self.jobs.get(peer.nspace()) {
                job.output_to = parent.output_conn();
                job.fwd_stdout = parent.fwd_stdout;
                job.fwd_stderr = parent.fwd_stderr;
            }
        }
        let (fwd_out, fwd_err) = (job.fwd_stdout, job.fwd_stderr);
        job.cmdline = command_line(&apps);
        job.uid = self.conns.get(conn).and_then(|c| c.uid);
        self.jobs.insert(job);
        // Reply first: output and the end event must follow the namespace.
        let mut e = self
            .conns
            .get(conn)
            .map(|c| c.encoder())
            .ok_or_else(|| Error::new(Status::ERR_LOST_CONNECTION, "spawner went away"))?;
        e.pack_one(&Status::SUCCESS)?;
        e.pack_one(&nspace)?;
        let bytes = e.into_bytes();
        self.send(conn, tag, &bytes);
        let alloc_id = (plan.sessions.len() == 1).then(|| plan.sessions[0].clone());
        let out = if fwd_out {
            Output::Capture
        } else {
            Output::Inherit
        };
        let err = if fwd_err {
            Output::Capture
        } else {
            Output::Inherit
        };
        let size = plan.procs.len() as u32;
        // A process that cannot start ends 127 and is logged; the job's
        // end says so to its tool.
        let _ = self.start_procs(
            &nspace,
            &programs,
            &plan.procs,
            alloc_id.as_deref(),
            size,
            out,
            err,
        );
        Ok(())
    }

    /// Start the processes of a committed job; the error of the first one
    /// that could not start (it counts as ended with 127).
    #[allow(clippy::too_many_arguments)]
    pub fn start_procs(
        &mut self,
        nspace: &str,
        apps: &[(&App, PathBuf)],
        slots: &[crate::dvm::ProcSlot],
        alloc_id: Option<&str>,
        size: u32,
        out: Output,
        err: Output,
    ) -> Option<std::io::Error> {
        self.lay_out(nspace, apps, slots);
        let mut first_error = None;
        for s in slots {
            let Some((app, program)) = apps.get(s.app) else {
                continue;
            };
            let spec = ProcSpec {
                app,
                nspace,
                rank: s.rank,
                node: &s.node,
                alloc_id,
                job_size: size,
                stdin: self
                    .jobs
                    .get(nspace)
                    .and_then(|j| j.stdin_rank)
                    .is_some_and(|f| f.feeds(s.rank)),
                terminal: self.leader.as_deref() == Some(nspace)
                    && super::leader_tty::stdin_is_terminal(),
            };
            // The session leader starts here (its failure is pdvm's own
            // error); every other process on a spawner thread.
            let spawner = (self.leader.as_deref() != Some(nspace)).then_some(&self.spawner);
            let started = launch(&spec, &self.launch, program, out, err, spawner);
            let mut rec = ProcRec {
                rank: s.rank,
                pid: None,
                node: s.node.clone(),
                exe: program.to_string_lossy().into_owned(),
                exit: None,
                pending_signal: None,
            };
            match started {
                Ok(st) => {
                    rec.pid = st.pid;
                    if let Some(pid) = st.pid {
                        self.jobs.record_pid(pid, nspace, s.rank);
                    }
                    if let Some(j) = self.jobs.get_mut(nspace) {
                        j.procs.push(rec);
                    }
                    if let (Some(sink), Some(j)) = (st.stdin, self.jobs.get_mut(nspace)) {
                        j.stdin.push((s.rank, sink));
                    }
                    for (ch, fd) in st.pipes {
                        self.add_pipe(fd, nspace, s.rank, ch);
                    }
                }
                Err(e) => {
                    self.log(format!(
                        "{nspace} rank {}: cannot start {}: {e}",
                        s.rank, app.cmd
                    ));
                    rec.exit = Some(127);
                    if let Some(j) = self.jobs.get_mut(nspace) {
                        j.procs.push(rec);
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(j) = self.jobs.get_mut(nspace) {
            if j.live() == 0 {
                j.all_exited_at = Some(Instant::now());
            }
        }
        first_error
    }
}

/// An app's hosts (`PMIX_HOST`): `NAME:N` (slots to use there, as PRRTE
/// takes it) names node NAME; a job never exceeds a node's slots here.
fn app_hosts(a: &App) -> Vec<String> {
    a.info
        .iter()
        .find(|i| i.key == keys::HOST)
        .and_then(|i| i.value.as_str())
        .map(crate::codec::helpers::split_list)
        .unwrap_or_default()
        .into_iter()
        .map(|h| match h.rsplit_once(':') {
            Some((name, n)) if n.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
            _ => h,
        })
        .collect()
}

/// `PMIX_CPUS_PER_PROC` of a spawn: slots per process; zero or a value
/// that is not a count is `PMIX_ERR_BAD_PARAM`.
fn cpus_per_proc(job_info: &[Info]) -> Result<Option<u32>> {
    let Some(i) = job_info.iter().find(|i| i.key == keys::CPUS_PER_PROC) else {
        return Ok(None);
    };
    i.value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0)
        .map(Some)
        .ok_or_else(|| {
            Error::new(
                Status::ERR_BAD_PARAM,
                format!(
                    "PMIX_CPUS_PER_PROC {}: CPUs per process must be a count of 1 or more",
                    i.value
                ),
            )
        })
}

/// The mapping a spawn asks for: `PMIX_MAPBY` (else the default), with
/// its cpus per process.
fn spawn_map(job_info: &[Info]) -> Result<crate::dvm::MapBy> {
    let mut map = match job_info
        .iter()
        .find(|i| i.key == keys::MAPBY)
        .and_then(|i| i.value.as_str())
    {
        Some(m) => crate::dvm::MapBy::parse(m).map_err(|e| Error::new(e.status(), e.rule()))?,
        None => crate::dvm::MapBy::default(),
    };
    if let Some(pe) = cpus_per_proc(job_info)? {
        map.pe = pe;
    }
    Ok(map)
}

/// A job just committed, spawned by connection `spawner` with `job_info`.
/// The command line a job runs: each app's argv (its executable when the
/// argv is empty), MPMD apps joined by ` : ` as prun writes them.
pub(crate) fn command_line(apps: &[App]) -> String {
    apps.iter()
        .map(|a| {
            if a.argv.is_empty() {
                a.cmd.clone()
            } else {
                a.argv.join(" ")
            }
        })
        .collect::<Vec<_>>()
        .join(" : ")
}

fn new_job(nspace: &str, spawner: u64, job_info: &[Info]) -> Job {
    Job {
        spawner: Some(spawner),
        fwd_stdout: flag(job_info, keys::FWD_STDOUT),
        fwd_stderr: flag(job_info, keys::FWD_STDERR),
        notify_completion: flag(job_info, keys::NOTIFY_COMPLETION),
        stdin_rank: super::jobs::stdin_rank(job_info),
        name: job_info
            .iter()
            .find(|i| i.key == keys::JOB_NAME)
            .and_then(|i| i.value.as_str())
            .map(String::from),
        ..Job::new(nspace)
    }
}

//! What Slurm says of psched's jobs and what psched does about it: answer a
//! request whose job Slurm granted, refuse one Slurm will never grant, warn
//! before Slurm's end time, end the session of an allocation Slurm ended,
//! and keep everything as it is while Slurm cannot be reached.

use std::collections::{HashMap, HashSet};

use crate::proto::status::Status;

use super::super::out::{Ending, UnaskedEnd};
use super::super::source::{Refusal, SourceEvent};
use super::ctl::Failure;
use super::job::{Job, Seen, Unreachable};
use super::reason::{EndCause, JobState, Pending, Reason};
use super::worker::{Done, SallocEvent, SubKey, Task};
use super::{SlurmBackend, PARTITIONS_MS, PARTITIONS_SOON_MS, POLL_MS};

impl SlurmBackend {
    /// Whether there is anything to ask Slurm about (nothing while it
    /// does not answer: [`super::outage`] pings it).
    pub(super) fn wants_show(&self) -> bool {
        !self.showing && !self.outage.down() && !self.jobs_to_show().is_empty()
    }

    /// The next time a warning falls due (ms).
    pub(super) fn next_warning(&self) -> Option<u64> {
        self.allocs
            .values()
            .filter(|a| !a.retained && !a.new)
            .filter_map(|a| {
                let (w, end) = (a.warn_secs?, a.end_ms?);
                (a.warned_for != Some(end)).then(|| end.saturating_sub(u64::from(w) * 1000))
            })
            .min()
    }

    /// When an salloc refused for an unreachable Slurm is tried again (ms).
    pub(super) fn next_resubmit(&self) -> Option<u64> {
        if self.outage.down() {
            return None;
        }
        self.allocs
            .values()
            .filter_map(|a| a.waiting.as_ref()?.again_at)
            .min()
    }

    /// Every job Slurm should be asked about: the granted ones, the queued
    /// ones, and those to cancel.
    fn jobs_to_show(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .allocs
            .values()
            .flat_map(|a| {
                let w = a.waiting.as_ref().and_then(|w| w.job);
                a.jobs.iter().copied().chain(w)
            })
            .chain(self.to_cancel.iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// One turn: collect Slurm's answers, act on them, ask again when due;
    /// what happened goes to the news.
    pub(super) fn step(&mut self, now: u64) {
        for d in self.worker.results() {
            let ev = self.on_done(d, now);
            self.news.extend(ev);
        }
        let ev = self.outage_step(now);
        self.news.extend(ev);
        let ev = self.warnings(now);
        self.news.extend(ev);
        if self.outage.down() {
            return;
        }
        self.resubmit(now);
        if self.partitions_due(now) {
            self.listing = true;
            self.worker.send(Task::Partitions);
            self.next_partitions = now + PARTITIONS_MS;
            self.partitions_asked = now;
        }
        if !self.showing && now >= self.next_show {
            let jobs = self.jobs_to_show();
            if !jobs.is_empty() {
                self.showing = true;
                self.worker.send(Task::Show(jobs));
            }
            self.next_show = now + POLL_MS;
        }
    }

    /// Whether to ask Slurm for its partitions now: once at start, then
    /// every [`PARTITIONS_MS`] while psched holds or waits for something.
    fn partitions_due(&self, now: u64) -> bool {
        let first = self.next_partitions == 0;
        !self.listing && (first || (now >= self.next_partitions && !self.jobs_to_show().is_empty()))
    }

    /// psched's own jobs took or gave back nodes: ask for the partitions
    /// again (their idle nodes changed) at the next turn, or
    /// [`PARTITIONS_SOON_MS`] after the last time.
    pub(super) fn partitions_changed(&mut self) {
        let soon = (self.partitions_asked + PARTITIONS_SOON_MS).max(1);
        self.next_partitions = self.next_partitions.min(soon);
    }

    /// When the partitions are next due (ms), if psched will ask.
    pub(super) fn next_partitions_at(&self) -> Option<u64> {
        let first = self.next_partitions == 0;
        (!self.listing && !self.outage.down() && (first || !self.jobs_to_show().is_empty()))
            .then_some(self.next_partitions)
    }

    fn on_done(&mut self, d: Done, now: u64) -> Vec<SourceEvent> {
        match d {
            Done::Seen(list) => {
                self.showing = false;
                let older = std::mem::take(&mut self.granted_while_showing);
                self.on_seen(list, &older, now)
            }
            Done::Cancelled(job, r) => {
                match r {
                    Ok(()) => self.to_cancel.retain(|j| *j != job),
                    Err(Failure::Unreachable(w)) => self.unreachable(&w, now),
                    // Already ended (Slurm refuses to cancel an ended job).
                    Err(Failure::Refused(w)) => {
                        say!("psched: Slurm did not cancel job {job}: {w}");
                        self.to_cancel.retain(|j| *j != job);
                    }
                }
                Vec::new()
            }
            Done::Extended {
                alloc,
                answer,
                result,
            } => self.extended(&alloc, answer, result, now),
            Done::Shrunk(job, r) => {
                if let Err(e) = r {
                    say!("psched: Slurm did not shrink job {job}: {}", e.words());
                }
                self.next_show = 0;
                Vec::new()
            }
            Done::Salloc(key, ev) => self.on_salloc(key, ev, now),
            Done::Pinged(up) => {
                self.pinged(up, now);
                Vec::new()
            }
            Done::Partitions(r) => {
                self.listing = false;
                // Unreachable: the last answer stays (the jobs' own
                // queries say when Slurm is back).
                if let Ok(p) = r {
                    self.partitions = p;
                }
                Vec::new()
            }
        }
    }

    fn extended(
        &mut self,
        id: &str,
        answer: bool,
        result: std::result::Result<(), Failure>,
        now: u64,
    ) -> Vec<SourceEvent> {
        if let Some(a) = self.allocs.get_mut(id) {
            a.ext_time = false;
        }
        self.next_show = 0;
        let st = match &result {
            Ok(()) => Status(0),
            Err(Failure::Unreachable(w)) => {
                self.unreachable(w, now);
                Status::ERR_NOT_AVAILABLE
            }
            Err(Failure::Refused(w)) => {
                say!("psched: Slurm refused the extension of {id}: {w}");
                Status::ERR_BAD_PARAM
            }
        };
        if !answer {
            return Vec::new();
        }
        let alloc_id = id.to_string();
        if st.is_success() {
            return vec![SourceEvent::Ready {
                alloc_id,
                nodes: Vec::new(),
            }];
        }
        vec![SourceEvent::Refused {
            alloc_id,
            refusal: Refusal::bare(st),
        }]
    }

    /// salloc of `id` said its job's `nodes` are ready: granted, without
    /// a query (the end time is the time limit from now until the next
    /// query says Slurm's own).
    fn ready(&mut self, id: &str, nodes: Vec<String>, now: u64) -> Vec<SourceEvent> {
        let Some(w) = self.allocs.get(id).and_then(|a| a.waiting.as_ref()) else {
            return Vec::new();
        };
        let Some(job) = w.job else {
            return Vec::new();
        };
        let limit = u64::from(super::ctl::minutes(w.ask.time_secs)) * 60;
        let j = Job {
            id: job,
            user_id: None,
            state: JobState::Running,
            nodes,
            end_time: Some(now / 1000 + limit),
            reason: Reason::None,
            reason_detail: None,
        };
        self.granted(id, &j, now)
    }

    /// The allocation whose salloc `key` is, if it still waits for it.
    fn waiting_of(&self, key: &SubKey) -> Option<String> {
        let a = self.allocs.get(&key.alloc)?;
        (a.waiting.as_ref()?.key == *key).then(|| key.alloc.clone())
    }

    fn on_salloc(&mut self, key: SubKey, ev: SallocEvent, now: u64) -> Vec<SourceEvent> {
        let Some(id) = self.waiting_of(&key) else {
            // Withdrawn before it said its job: cancel that job now.
            if let SallocEvent::Job { id: job, .. } = ev {
                if let Some(i) = self.withdrawn.iter().position(|k| *k == key) {
                    self.withdrawn.remove(i);
                    self.withdraw_job(job);
                }
            }
            return Vec::new();
        };
        match ev {
            SallocEvent::Job { id: job, granted } => {
                let w = self.allocs.get_mut(&id).and_then(|a| a.waiting.as_mut());
                if let Some(w) = w {
                    w.job = Some(job);
                    let what = if granted { "granted" } else { "queued" };
                    say!("psched: Slurm job {job} is {id} ({}, {what})", w.name);
                }
                // Queued: Slurm's reason at once. Granted: salloc says
                // the nodes next, when they are ready.
                if !granted {
                    self.next_show = 0;
                }
                Vec::new()
            }
            SallocEvent::Ready(nodes) => self.ready(&id, nodes, now),
            // Granted and said (else the query answers), or its job ended
            // while queued (the job's state says why).
            SallocEvent::Exit(Ok(())) => {
                if self.allocs.get(&id).is_some_and(|a| a.waiting.is_some()) {
                    self.next_show = 0;
                }
                Vec::new()
            }
            SallocEvent::Exit(Err(_)) if self.job_known(&id) => {
                self.next_show = 0;
                Vec::new()
            }
            SallocEvent::Exit(Err(Failure::Unreachable(why))) => {
                // Asked after the outage was announced: its requester
                // hears of it alone.
                let known = self.outage.down();
                self.unreachable(&why, now);
                say!("psched: {id} waits for Slurm (asked again as soon as it answers)");
                let mut tell = false;
                if let Some(w) = self.allocs.get_mut(&id).and_then(|a| a.waiting.as_mut()) {
                    tell = known;
                    w.again_at = Some(now + super::outage::PING_MS);
                }
                if tell {
                    self.tell_waiting(&id, &why, now);
                }
                Vec::new()
            }
            SallocEvent::Exit(Err(Failure::Refused(w))) => {
                say!("psched: Slurm refused {id}: {w}");
                self.give_up_saying(&id, Status::ERR_BAD_PARAM, Some(&format!("Slurm: {w}")))
            }
        }
    }

    /// `id` still waits in Slurm's queue (job `j`): when Slurm's reason
    /// or its words change, say it in the log and to a NEW's requester.
    fn still_waits(&mut self, id: &str, j: &Job) -> Option<SourceEvent> {
        let a = self.allocs.get_mut(id)?;
        let new = a.new;
        let w = a.waiting.as_mut()?;
        let said = match &j.reason_detail {
            Some(d) => format!("{}, {d}", j.reason.word()),
            None => j.reason.word().to_string(),
        };
        if w.reason.as_ref() == Some(&j.reason) && w.said.as_deref() == Some(said.as_str()) {
            return None;
        }
        say!("psched: {id} waits in Slurm's queue ({said})");
        w.reason = Some(j.reason.clone());
        w.said = Some(said.clone());
        if j.reason == Reason::None || !new {
            return None;
        }
        Some(SourceEvent::Waiting {
            alloc_id: id.to_string(),
            reason: j.reason.word().to_string(),
            text: format!(
                "Slurm says {}",
                j.reason.said_with(j.reason_detail.as_deref())
            ),
        })
    }

    fn job_known(&self, id: &str) -> bool {
        self.allocs
            .get(id)
            .and_then(|a| a.waiting.as_ref())
            .is_some_and(|w| w.job.is_some())
    }

    /// Ask again for what an unreachable Slurm did not take.
    fn resubmit(&mut self, now: u64) {
        let due: Vec<String> = self
            .allocs
            .iter()
            .filter(|(_, a)| {
                a.waiting
                    .as_ref()
                    .and_then(|w| w.again_at)
                    .is_some_and(|t| now >= t)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let Some(mut w) = self.allocs.get(&id).and_then(|a| a.waiting.clone()) else {
                continue;
            };
            w.key = self.key(&id, w.key.extend);
            w.again_at = None;
            self.submit(&w);
            if let Some(a) = self.allocs.get_mut(&id) {
                a.waiting = Some(w);
                a.granted_at = now;
            }
        }
    }

    /// The waiting request of `id` will not be granted: refuse it with `st`
    /// (an EXTEND's only; a NEW's with its allocation).
    fn give_up(&mut self, id: &str, st: Status) -> Vec<SourceEvent> {
        self.give_up_saying(id, st, None)
    }

    /// [`Self::give_up`], telling the requester `why` (Slurm's words).
    fn give_up_saying(&mut self, id: &str, st: Status, why: Option<&str>) -> Vec<SourceEvent> {
        let Some(a) = self.allocs.get_mut(id) else {
            return Vec::new();
        };
        let Some(w) = a.waiting.take() else {
            return Vec::new();
        };
        if !w.key.extend {
            self.allocs.remove(id);
            self.touched.insert(id.to_string());
        }
        self.withdraw_waiting(&w);
        vec![SourceEvent::Refused {
            alloc_id: id.to_string(),
            refusal: Refusal {
                status: st,
                why: why.map(String::from),
            },
        }]
    }

    fn on_seen(
        &mut self,
        list: Vec<(u64, std::result::Result<Seen, Unreachable>)>,
        older: &HashSet<u64>,
        now: u64,
    ) -> Vec<SourceEvent> {
        let mut seen: HashMap<u64, Seen> = HashMap::new();
        for (job, r) in list {
            match r {
                // Asked before the job's grant: its "pending" is old news.
                Ok(Seen::Job(j)) if older.contains(&job) && j.state == JobState::Pending => {}
                Ok(s) => {
                    seen.insert(job, s);
                }
                Err(Unreachable(w)) => {
                    self.unreachable(&w, now);
                    return Vec::new();
                }
            }
        }
        self.reachable(now);
        let mut out = Vec::new();
        for (job, s) in &seen {
            if let Seen::Job(j) = s {
                if j.user_id.is_some_and(|u| u != self.uid) {
                    out.extend(self.foreign(*job, j.user_id));
                    continue;
                }
                self.verified.insert(*job);
            }
        }
        self.cancel_checked(&seen);
        let ids: Vec<String> = self.allocs.keys().cloned().collect();
        for id in ids {
            out.extend(self.follow_waiting(&id, &seen, now));
            out.extend(self.follow(&id, &seen, now));
        }
        out
    }

    /// Job `job` runs as another user (`uid`): not psched's, never touched.
    fn foreign(&mut self, job: u64, uid: Option<u32>) -> Vec<SourceEvent> {
        say!(
            "psched: Slurm job {job} runs as uid {} (psched is {}): not psched's, left alone",
            uid.unwrap_or(0),
            self.uid
        );
        self.to_cancel.retain(|j| *j != job);
        let mut out = Vec::new();
        let ids: Vec<String> = self.allocs.keys().cloned().collect();
        for id in ids {
            let Some(a) = self.allocs.get_mut(&id) else {
                continue;
            };
            if a.jobs.contains(&job) {
                a.jobs.retain(|j| *j != job);
                self.touched.insert(id.clone());
            }
            let Some(a) = self.allocs.get_mut(&id) else {
                continue;
            };
            if a.waiting.as_ref().is_some_and(|w| w.job == Some(job)) {
                if let Some(w) = a.waiting.as_mut() {
                    w.job = None;
                }
                out.extend(self.give_up(&id, Status::ERR_NO_PERMISSIONS));
            }
        }
        out
    }

    /// Cancel the jobs to cancel that psched checked; drop those already
    /// ended.
    fn cancel_checked(&mut self, seen: &HashMap<u64, Seen>) {
        let mut keep = Vec::new();
        for job in std::mem::take(&mut self.to_cancel) {
            match seen.get(&job) {
                Some(Seen::Gone) => {}
                Some(Seen::Job(j)) if matches!(j.state, JobState::Ended(_)) => {}
                Some(Seen::Job(_)) if self.verified.contains(&job) => {
                    if !self.cancel_sent.contains(&job) {
                        say!("psched: Slurm job {job} is no grant of this psched: cancelled");
                        self.cancel_sent.insert(job);
                    }
                    self.worker.send(Task::Cancel(job));
                    keep.push(job);
                }
                _ => keep.push(job),
            }
        }
        self.to_cancel = keep;
    }

    /// A waiting request whose job Slurm granted is answered; one Slurm
    /// says it will never grant, or ended, is refused.
    fn follow_waiting(
        &mut self,
        id: &str,
        seen: &HashMap<u64, Seen>,
        now: u64,
    ) -> Vec<SourceEvent> {
        let Some(w) = self.allocs.get(id).and_then(|a| a.waiting.clone()) else {
            return Vec::new();
        };
        let Some(job) = w.job else {
            return Vec::new();
        };
        let j = match seen.get(&job) {
            None => return Vec::new(),
            Some(Seen::Gone) => {
                say!("psched: Slurm no longer knows job {job} ({id}): refused");
                return self.give_up(id, Status::ERR_JOB_CANCELED);
            }
            Some(Seen::Job(j)) => j,
        };
        match &j.state {
            JobState::Running | JobState::Suspended => self.granted(id, j, now),
            JobState::Pending => {
                if let Pending::Refuse(st) = j.reason.pending() {
                    say!(
                        "psched: Slurm will not run {id} as asked ({}): refused",
                        j.reason.word()
                    );
                    let why = format!("Slurm will not run it as asked: {}", j.reason.said());
                    return self.give_up_saying(id, st, Some(&why));
                }
                self.still_waits(id, j).into_iter().collect()
            }
            JobState::Ended(c) => {
                say!(
                    "psched: Slurm ended job {job} ({id}, {}) before granting it",
                    c.word()
                );
                self.give_up(id, Status::ERR_JOB_CANCELED)
            }
            JobState::Unknown(_) => Vec::new(),
        }
    }

    /// The waiting request of `id` was granted job `j` (seen at `now`):
    /// answer the DVM.
    fn granted(&mut self, id: &str, j: &Job, now: u64) -> Vec<SourceEvent> {
        if self.landed_on_another(id, j) {
            return Vec::new();
        }
        self.partitions_changed();
        let Some(a) = self.allocs.get_mut(id) else {
            return Vec::new();
        };
        let Some(w) = a.waiting.take() else {
            return Vec::new();
        };
        a.jobs.push(j.id);
        a.job_nodes.insert(j.id, j.nodes.clone());
        if self.showing {
            self.granted_while_showing.insert(j.id);
        }
        a.nodes.extend(j.nodes.iter().cloned());
        let end = j.end_time.map(|t| t * 1000);
        a.end_ms = match (a.end_ms, end) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let new = !w.key.extend;
        if new {
            a.granted_at = now;
            a.new = false;
        }
        let nodes = if new {
            a.nodes.clone()
        } else {
            j.nodes.clone()
        };
        say!(
            "psched: Slurm granted job {} for {id} on {}",
            j.id,
            j.nodes.join(",")
        );
        self.touched.insert(id.to_string());
        vec![SourceEvent::Ready {
            alloc_id: id.to_string(),
            nodes,
        }]
    }

    /// Follow a granted allocation's jobs: their nodes and end time; its
    /// end when Slurm ended them all.
    fn follow(&mut self, id: &str, seen: &HashMap<u64, Seen>, _now: u64) -> Vec<SourceEvent> {
        let Some(a) = self.allocs.get(id) else {
            return Vec::new();
        };
        if a.jobs.is_empty() || a.new {
            return Vec::new();
        }
        let mut ended: Vec<(u64, EndCause)> = Vec::new();
        let mut live: Vec<&Job> = Vec::new();
        for j in &a.jobs {
            match seen.get(j) {
                Some(Seen::Gone) => ended.push((*j, EndCause::Gone)),
                Some(Seen::Job(x)) => match &x.state {
                    JobState::Ended(c) => ended.push((*j, *c)),
                    // Put back in the queue after it ran: its nodes are gone.
                    JobState::Pending => ended.push((*j, EndCause::Preempted)),
                    JobState::Running | JobState::Suspended => live.push(x),
                    JobState::Unknown(_) => {}
                },
                None => {}
            }
        }
        let first = a.jobs[0];
        let end = live
            .iter()
            .filter_map(|j| j.end_time)
            .min()
            .map(|t| t * 1000);
        let updates: Vec<(u64, Vec<String>)> =
            live.iter().map(|j| (j.id, j.nodes.clone())).collect();
        let all_ended = ended.len() == a.jobs.len();
        if all_ended {
            let cause = ended
                .iter()
                .find(|(j, _)| *j == first)
                .map_or(ended[0].1, |e| e.1);
            return self.ended(id, cause);
        }
        let a = self.allocs.get_mut(id).expect("present");
        let mut lost: Vec<String> = Vec::new();
        for (j, cause) in &ended {
            say!(
                "psched: Slurm ended job {j} of {id} ({}): its nodes leave",
                cause.word()
            );
            a.jobs.retain(|x| x != j);
            lost.extend(a.job_nodes.remove(j).unwrap_or_default());
            self.to_cancel.retain(|x| x != j);
        }
        // A job's nodes only shrink once granted: a node Slurm no longer
        // lists left it on its own (DOWN, under `--no-kill`); an answer
        // older than psched's own shrink never brings a node back.
        for (j, nodes) in updates {
            match a.job_nodes.get_mut(&j) {
                Some(had) => {
                    lost.extend(had.iter().filter(|n| !nodes.contains(n)).cloned());
                    had.retain(|n| nodes.contains(n));
                }
                None => {
                    a.job_nodes.insert(j, nodes);
                }
            }
        }
        let mut changed = !ended.is_empty();
        if !live.is_empty() {
            let jobs = a.jobs.iter().filter_map(|j| a.job_nodes.get(j));
            let nodes: Vec<String> = jobs.flatten().cloned().collect();
            changed |= nodes != a.nodes || (end.is_some() && end != a.end_ms);
            a.nodes = nodes;
            a.end_ms = end.or(a.end_ms);
        }
        if changed {
            self.touched.insert(id.to_string());
        }
        if lost.is_empty() {
            return Vec::new();
        }
        say!(
            "psched: Slurm took {} from {id}: the work there stops, {} stays",
            lost.join(","),
            if a.nodes.is_empty() {
                "nothing".to_string()
            } else {
                a.nodes.join(",")
            }
        );
        vec![SourceEvent::Lost {
            alloc_id: id.to_string(),
            nodes: lost,
        }]
    }

    /// Send the warnings that fell due.
    fn warnings(&mut self, now: u64) -> Vec<SourceEvent> {
        let mut out = Vec::new();
        for (id, a) in self.allocs.iter_mut() {
            if a.retained || a.new {
                continue;
            }
            if let (Some(w), Some(end)) = (a.warn_secs, a.end_ms) {
                if now + u64::from(w) * 1000 >= end && a.warned_for != Some(end) && now < end {
                    a.warned_for = Some(end);
                    let left = ((end - now) / 1000) as u32;
                    out.push(SourceEvent::Warn {
                        alloc_id: id.clone(),
                        secs: left,
                    });
                }
            }
        }
        out
    }

    /// Slurm ended every job of `id` (`cause`: why it ended the first): the
    /// DVM's session ends.
    fn ended(&mut self, id: &str, cause: EndCause) -> Vec<SourceEvent> {
        let Some(a) = self.allocs.remove(id) else {
            return Vec::new();
        };
        self.touched.insert(id.to_string());
        let mut out = Vec::new();
        // A waiting extension is refused with the allocation
        // ([`super::super::requests`]).
        if let Some(w) = &a.waiting {
            self.withdraw_waiting(w);
        }
        for j in &a.jobs {
            self.to_cancel.retain(|x| x != j);
        }
        let first = a.jobs.first().copied().unwrap_or(0);
        if a.retained {
            // The DVM keeps the nodes, but Slurm has them back: what still
            // runs there stops.
            say!(
                "psched: Slurm ended job {first} ({id}, {}), retained by the DVM: the work on {} stops",
                cause.word(),
                a.nodes.join(",")
            );
            if !a.nodes.is_empty() {
                out.push(SourceEvent::Lost {
                    alloc_id: id.to_string(),
                    nodes: a.nodes.clone(),
                });
            }
            return out;
        }
        say!(
            "psched: Slurm ended job {first} ({id}, {}): ending its session",
            cause.word()
        );
        out.push(SourceEvent::Ended(Ending {
            alloc_id: id.to_string(),
            nodes: a.nodes.clone(),
            why: UnaskedEnd::Source(cause.session_cause()),
        }));
        out
    }
}

#[cfg(test)]
mod tests {

    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

    use super::*;
    use crate::psched::ledger::Ledger;
    use crate::psched::source::NodeSource;

    /// Wait (at most `secs`) for `b`'s waker to turn readable.
    fn woken_within(b: &SlurmBackend, secs: u16) -> bool {
        let mut fds = [PollFd::new(b.wake_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::from(secs * 1000)).unwrap_or(0) == 1
    }

    fn running(id: u64, nodes: &[&str]) -> Seen {
        Seen::Job(Job {
            id,
            user_id: None,
            state: JobState::Running,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            end_time: None,
            reason: Reason::None,
            reason_detail: None,
        })
    }

    #[test]
    fn a_node_that_leaves_a_running_job_is_lost_and_an_old_answer_brings_none_back() {
        let mut b = SlurmBackend::new(&mut Ledger::default(), "losttest".into()).unwrap();
        let nodes: Vec<String> = vec!["n1".into(), "n2".into()];
        b.allocs.insert(
            "slurm.1".into(),
            super::super::Alloc {
                jobs: vec![7],
                job_nodes: HashMap::from([(7, nodes.clone())]),
                nodes,
                ..Default::default()
            },
        );
        // psched gave n1 back itself: an answer from before the shrink
        // still lists it, and is no loss.
        b.shrink("slurm.1", &["n1".to_string()]);
        let seen = HashMap::from([(7, running(7, &["n1", "n2"]))]);
        assert!(b.follow("slurm.1", &seen, 0).is_empty());
        assert_eq!(b.allocs["slurm.1"].nodes, vec!["n2".to_string()]);
        // Slurm took n2's neighbour away on its own: lost, the job stays.
        b.allocs
            .get_mut("slurm.1")
            .unwrap()
            .job_nodes
            .insert(7, vec!["n2".into(), "n3".into()]);
        let seen = HashMap::from([(7, running(7, &["n2"]))]);
        let out = b.follow("slurm.1", &seen, 0);
        assert_eq!(
            out,
            vec![SourceEvent::Lost {
                alloc_id: "slurm.1".into(),
                nodes: vec!["n3".into()]
            }]
        );
        assert_eq!(b.allocs["slurm.1"].nodes, vec!["n2".to_string()]);
        assert_eq!(b.allocs["slurm.1"].jobs, vec![7]);
    }

    /// psched_slurm_restart once saw a job ended PREEMPTED right after its
    /// grant: a query asked before salloc said "granted" answered after it,
    /// still listing the job as pending.
    #[test]
    fn a_query_asked_before_a_grant_does_not_end_it_as_preempted() {
        let mut b = SlurmBackend::new(&mut Ledger::default(), "staletest".into()).unwrap();
        let key = SubKey {
            alloc: "slurm.1".into(),
            extend: false,
            seq: 0,
        };
        b.allocs.insert(
            "slurm.1".into(),
            super::super::Alloc {
                new: true,
                waiting: Some(super::super::Waiting {
                    key,
                    job: Some(7),
                    ask: super::super::ctl::Ask::default(),
                    name: "psched.staletest.slurm.1".into(),
                    again_at: None,
                    reason: None,
                    said: None,
                }),
                ..Default::default()
            },
        );
        let pending = || {
            Seen::Job(Job {
                state: JobState::Pending,
                ..match running(7, &[]) {
                    Seen::Job(j) => j,
                    Seen::Gone => unreachable!(),
                }
            })
        };
        b.showing = true;
        let out = b.ready("slurm.1", vec!["n1".into()], 1_000);
        assert!(matches!(out[..], [SourceEvent::Ready { .. }]), "{out:?}");
        let out = b.on_done(Done::Seen(vec![(7, Ok(pending()))]), 2_000);
        assert!(out.is_empty(), "the old answer ended the grant: {out:?}");
        assert_eq!(b.allocs["slurm.1"].jobs, vec![7]);
        // A query asked after the grant: the job was put back in the queue.
        let out = b.on_done(Done::Seen(vec![(7, Ok(pending()))]), 3_000);
        assert!(
            matches!(out[..], [SourceEvent::Ended(_)]),
            "a job pending after its grant ends it: {out:?}"
        );
    }

    #[test]
    fn a_slurm_command_under_way_is_a_wake_up_not_a_deadline() {
        // A job left to withdraw: the first tick asks Slurm about it.
        let mut ledger = Ledger {
            slurm_withdraw: vec![999_999],
            ..Ledger::default()
        };
        let mut b = SlurmBackend::new(&mut ledger, "waketest".into()).unwrap();
        let now = crate::psched::now_ms();
        assert!(b.what_happened(now).is_empty());
        assert!(b.showing, "the first tick asks Slurm");
        let next = b.next_deadline(now);
        assert!(
            next.is_none_or(|t| t >= now + POLL_MS),
            "no quick deadline while scontrol runs: {next:?} (now {now})"
        );
        // The first tick also asks for the partitions (sinfo): each
        // answer wakes the loop.
        for _ in 0..2 {
            if !b.showing && !b.listing {
                break;
            }
            assert!(woken_within(&b, 60), "Slurm's answer wakes the loop");
            b.what_happened(crate::psched::now_ms());
        }
        assert!(!b.showing && !b.listing, "the ticks took the answers");
        // No wake-up within a millisecond more.
        let mut fds = [PollFd::new(b.wake_fd(), PollFlags::POLLIN)];
        assert_eq!(
            poll(&mut fds, PollTimeout::from(1u8)).unwrap(),
            0,
            "quiet again"
        );
    }
}

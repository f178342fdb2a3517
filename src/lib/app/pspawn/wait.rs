//! A spawn into an allocation whose slots are busy waits for them, as
//! `srun` waits for its allocation's CPUs ("step creation temporarily
//! disabled, retrying"): the DVM answers `PMIX_ERR_JOB_FAILED_TO_MAP`
//! (PRRTE master, whose jobs do not share slots; pdvm's jobs of one
//! session share them, so there a job that fits never waits). pspawn says
//! so once on stderr when it is a terminal or with `-v` (a script's
//! captured stderr holds the job's bytes alone, as on pdvm) and tries again, backing off to one try every two
//! seconds, until the job starts, the allocation ends (the spawn is then
//! answered `PMIX_ERR_NOT_FOUND`) or a signal arrives. A job the
//! allocation could not hold even when idle is refused at once, and so is
//! every busy answer with `--immediate`; so is one whose slots a launch
//! the DVM lost keeps taken ([`super::lost_slots`]), looked for once the
//! wait reached its longest pause.

use std::time::{Duration, Instant};

use crate::cli::request::SpawnRequest;
use crate::ops::Session;

use crate::app::Ui;

/// The first pause between tries, doubled up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between tries.
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// What to do about a busy answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Busy {
    /// Try again after this pause.
    Retry(Duration),
    /// Give the refusal as it is.
    Refuse,
    /// The allocation can never hold the job now, for this reason (what
    /// is left of it after the node source took some of its nodes).
    Never(String),
    /// Launches the DVM lost keep this many of the allocation's nodes
    /// busy for ever ([`super::lost_slots`]): why.
    Lost(String, u32),
}

/// The waiting state of one spawn.
pub(crate) struct SlotWait {
    pause: Duration,
    /// Whether the job can ever fit; judged at the first busy answer.
    fits: Option<Fit>,
    /// The launches the DVM lost on the allocation's nodes, whose slots
    /// never free ([`super::lost_slots`]).
    lost: super::lost_slots::LostSlots,
}

impl SlotWait {
    /// A spawn that has not been refused yet.
    pub(crate) fn new() -> SlotWait {
        SlotWait {
            pause: FIRST_PAUSE,
            fits: None,
            lost: Default::default(),
        }
    }

    /// The DVM found no free slots for `req`: wait (said once, see [`Ui::aside`]),
    /// or refuse (`--immediate`, the default pool, a placement pspawn
    /// cannot judge, or a job larger than the allocation).
    pub(crate) fn on_busy(&mut self, s: &Session, req: &SpawnRequest, ui: &Ui) -> Busy {
        if req.immediate || req.targets.is_empty() || req.default_pool {
            return Busy::Refuse;
        }
        let first = self.fits.is_none();
        match self.fits.get_or_insert_with(|| could_fit(s, req)) {
            Fit::Yes => {}
            Fit::No => return Busy::Refuse,
            Fit::NotNow(why) => return Busy::Never(why.clone()),
        }
        // A short wait (steps taking turns) looks at nothing more; a long
        // one looks for lost launches at each try.
        if self.pause >= MAX_PAUSE {
            if let Some((why, nodes)) = self.lost_launch_holds_slots(s, req) {
                return Busy::Lost(why, nodes);
            }
        }
        if first {
            ui.aside(&format!(
                "the slots of allocation {} are busy (PMIX_ERR_JOB_FAILED_TO_MAP): waiting for \
them, as srun does (--immediate refuses instead)",
                req.targets.join(",")
            ));
        }
        let pause = self.pause;
        self.pause = (self.pause * 2).min(MAX_PAUSE);
        Busy::Retry(pause)
    }
}

impl SlotWait {
    /// Why the slots the job waits for never free: launches the DVM lost
    /// hold them ([`super::lost_slots`]); `None` while they may.
    fn lost_launch_holds_slots(
        &mut self,
        s: &Session,
        req: &SpawnRequest,
    ) -> Option<(String, u32)> {
        let look = super::lost_slots::look(s, req)?;
        let pe = u64::from(req.cpus_per_proc.unwrap_or(1).max(1));
        let needed: u64 = req.apps.iter().map(|a| u64::from(a.np) * pe).sum();
        self.lost
            .judge(&look, Instant::now(), needed, &req.targets.join(","))
    }
}

/// Wait `pause` before the next try, taking what the DVM sends meanwhile:
/// nothing of it is this pspawn's (a busy answer launched nothing), and
/// left queued it would fill the connection's queue over a long wait
/// (PRRTE master tells every tool of every launch that failed), after
/// which no answer could be read. The signal that cut it short, if one
/// did.
pub(crate) fn pause(s: &Session, pause: Duration) -> Option<i32> {
    use crate::conn::{Event, Unsolicited};
    let until = Instant::now() + pause;
    let extras: Vec<_> = crate::app::signals::fd().into_iter().collect();
    loop {
        if let Some(sig) = crate::app::signals::caught() {
            return Some(sig);
        }
        match s.conn().wait(&extras, Some(until)) {
            Event::Deadline => return None,
            Event::Ready(_) => crate::app::signals::drain(),
            // The next try says that the DVM has gone.
            Event::Message(Unsolicited::Closed(_)) => {
                return crate::app::signals::caught_by(until);
            }
            Event::Message(_) | Event::Reply(_) => {}
        }
    }
}

/// Whether a job fits its allocations when no other job holds their slots.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fit {
    /// It does (or pspawn cannot tell: unknown slots).
    Yes,
    /// It never does, or pspawn cannot judge its placement.
    No,
    /// It did, but the nodes the allocation still holds are too few: why.
    NotNow(String),
}

/// Whether the job could run in its allocations when no other job holds
/// their slots: its processes (times their CPUs each) are at most the
/// slots of the nodes it may use, and its placement is one pspawn can
/// judge (by slot or by node). Unknown slots count as fitting. The nodes
/// are those the scheduler still holds when it answers (PRRTE master keeps
/// listing a node the node source took away).
fn could_fit(s: &Session, req: &SpawnRequest) -> Fit {
    let judged = req.map_by.as_deref().is_none_or(|m| {
        let policy = m.split(':').next().unwrap_or("").to_ascii_lowercase();
        matches!(policy.as_str(), "" | "slot" | "core" | "hwthread" | "node")
    });
    if !judged {
        return Fit::No;
    }
    let want = crate::ops::status_query::Want {
        reservations: true,
        nodes: true,
        ..Default::default()
    };
    let answers = crate::ops::status_query::status(s, want);
    let (Some(Ok(res)), Some(Ok(nodes))) = (answers.reservations, answers.nodes) else {
        return Fit::Yes;
    };
    let mut names: Vec<&String> = res
        .iter()
        .filter(|r| req.targets.contains(&r.alloc_id))
        .flat_map(|r| r.nodes.iter())
        .collect();
    if req.apps.iter().all(|a| !a.hosts.is_empty()) {
        names.retain(|n| req.apps.iter().any(|a| a.hosts.contains(n)));
    }
    names.sort();
    names.dedup();
    let slots_of = |list: &[&String]| -> Option<u64> {
        let mut capacity = 0u64;
        for n in list {
            match nodes.iter().find(|r| &r.name == *n).map(|r| r.slots) {
                Some(slots) if slots > 0 => capacity += u64::from(slots),
                _ => return None,
            }
        }
        Some(capacity)
    };
    let pe = u64::from(req.cpus_per_proc.unwrap_or(1).max(1));
    let needed: u64 = req.apps.iter().map(|a| u64::from(a.np) * pe).sum();
    match slots_of(&names) {
        None => return Fit::Yes,
        Some(c) if needed > c => return Fit::No,
        Some(_) => {}
    }
    let Some(held) = crate::app::status_sched::held_nodes(s, &req.targets) else {
        return Fit::Yes;
    };
    let (kept, gone): (Vec<&String>, Vec<&String>) =
        names.into_iter().partition(|n| held.contains(n));
    // psched names none of them: its view lags the grant (seen as PSI/J's
    // jobs refused on a fresh grant), not a lost node; the job waits.
    if kept.is_empty() {
        return Fit::Yes;
    }
    match slots_of(&kept) {
        Some(c) if needed > c && !gone.is_empty() => {
            let list = |v: &[&String]| v.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(",");
            Fit::NotNow(format!(
                "allocation {} has {c} slot(s) left ({}) since {} left it (taken away by the \
scheduler's node source, or given back): the job needs {needed}; nothing was launched. Ask for \
fewer processes, or reserve more with `palloc --extend ID -N MORE`",
                req.targets.join(","),
                list(&kept),
                list(&gone)
            ))
        }
        _ => Fit::Yes,
    }
}

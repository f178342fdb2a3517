//! Slurm's controller out of reach, and back: psched says so to every tool
//! of the DVM (holders, queued pallocs: [`SourceEvent::Reach`], typed events),
//! keeps every session and request as it is, and asks only `scontrol
//! ping` every [`PING_MS`] meanwhile (no job query, no `sinfo`, no
//! `salloc`, whose failures would only say the same, more slowly). The
//! first answer ends the outage: the jobs are asked about and the requests
//! made meanwhile are submitted again at once, not after a backoff grown
//! through a long outage.

use super::super::source::SourceEvent;
use super::worker::Task;
use super::SlurmBackend;

/// How often psched asks whether the controller answers again while it
/// does not (ms): a request made during an outage is submitted again
/// within this (and one `scontrol ping`) of the controller's return.
pub(super) const PING_MS: u64 = 1000;

/// An outage that begins within this of the last one's end (ms) is not
/// said to the tools again, nor its end (psched's log says each): a
/// controller that answers `scontrol ping` but not the job query would
/// otherwise flap every period.
const QUIET_MS: u64 = 30_000;

/// An outage of Slurm's controller, as psched follows it.
#[derive(Debug, Default)]
pub(super) struct Outage {
    /// Since when the controller does not answer (ms), while it does not.
    since: Option<u64>,
    /// A `scontrol ping` is under way.
    pinging: bool,
    /// When to ping next (ms).
    next_ping: u64,
    /// The tools were told this outage began.
    announced: bool,
    /// When the last outage ended (ms).
    ended: Option<u64>,
    /// What the tools are to hear at the next turn.
    news: Vec<SourceEvent>,
}

impl Outage {
    /// Whether the controller is out of reach.
    pub(super) fn down(&self) -> bool {
        self.since.is_some()
    }
}

/// The sentence of an outage that began `secs` ago, for `why`.
fn down_text(secs: u64, why: &str) -> String {
    format!(
        "Slurm's controller does not answer (for {secs} s: {why}): running work goes on, \
         requests wait and are asked again as soon as it answers"
    )
}

impl SlurmBackend {
    /// Slurm could not be reached (`why`): the first time, say so (log,
    /// every tool) and start pinging.
    pub(super) fn unreachable(&mut self, why: &str, now: u64) {
        if self.outage.down() {
            return;
        }
        say!("psched: Slurm unreachable ({why}): sessions kept, requests wait");
        self.outage.since = Some(now);
        self.outage.next_ping = now + PING_MS;
        self.outage.announced = self.outage.ended.is_none_or(|t| now >= t + QUIET_MS);
        if self.outage.announced {
            self.outage.news.push(SourceEvent::Reach {
                up: false,
                text: down_text(0, why),
                alloc_id: None,
            });
        }
    }

    /// Slurm answered: an outage ends (said to the log and every tool);
    /// the jobs are asked about, the requests made meanwhile submitted
    /// again, at once.
    pub(super) fn reachable(&mut self, now: u64) {
        let Some(since) = self.outage.since.take() else {
            return;
        };
        let secs = now.saturating_sub(since) / 1000;
        say!("psched: Slurm reachable again (after {secs} s)");
        self.outage.ended = Some(now);
        self.next_show = 0;
        self.partitions_changed();
        for w in self.allocs.values_mut().filter_map(|a| a.waiting.as_mut()) {
            if w.again_at.is_some() {
                w.again_at = Some(now);
            }
        }
        if !self.outage.announced {
            return;
        }
        self.outage.news.push(SourceEvent::Reach {
            up: true,
            text: format!(
                "Slurm's controller answers again (after {secs} s): waiting requests are asked \
                 again now"
            ),
            alloc_id: None,
        });
    }

    /// The request of `id` waiting cannot reach Slurm: its requester
    /// hears of the outage (it may have asked after it was announced).
    pub(super) fn tell_waiting(&mut self, id: &str, why: &str, now: u64) {
        if !self.outage.announced {
            return;
        }
        let since = self.outage.since.unwrap_or(now);
        self.outage.news.push(SourceEvent::Reach {
            up: false,
            text: down_text(now.saturating_sub(since) / 1000, why),
            alloc_id: Some(id.to_string()),
        });
    }

    /// One turn of the outage: ping when due; what the tools are to hear.
    pub(super) fn outage_step(&mut self, now: u64) -> Vec<SourceEvent> {
        let o = &mut self.outage;
        if o.down() && !o.pinging && now >= o.next_ping {
            o.pinging = true;
            self.worker.send(Task::Ping);
        }
        std::mem::take(&mut self.outage.news)
    }

    /// A `scontrol ping` answered `up`.
    pub(super) fn pinged(&mut self, up: bool, now: u64) {
        self.outage.pinging = false;
        if up {
            self.reachable(now);
        } else {
            self.outage.next_ping = now + PING_MS;
        }
    }

    /// When the next ping is due (ms), during an outage.
    pub(super) fn next_ping(&self) -> Option<u64> {
        let o = &self.outage;
        (o.down() && !o.pinging).then_some(o.next_ping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psched::ledger::Ledger;

    #[test]
    fn an_outage_is_said_once_and_its_end_asks_again_at_once() {
        let mut b = SlurmBackend::new(&mut Ledger::default(), "outagetest".into()).unwrap();
        b.unreachable("connection refused", 1_000);
        b.unreachable("connection refused", 2_000);
        let news = b.outage_step(1_500);
        assert!(
            matches!(
                &news[..],
                [SourceEvent::Reach {
                    up: false,
                    alloc_id: None,
                    ..
                }]
            ),
            "{news:?}"
        );
        assert_eq!(b.next_ping(), Some(1_000 + PING_MS));
        // Pings fail for a long outage: the period does not grow.
        b.outage.pinging = true;
        b.pinged(false, 100_000);
        assert_eq!(b.next_ping(), Some(100_000 + PING_MS));
        b.outage.pinging = true;
        b.pinged(true, 101_000);
        assert!(!b.outage.down());
        assert_eq!(b.next_show, 0, "the jobs are asked about at once");
        let news = b.outage_step(101_000);
        assert!(
            matches!(&news[..], [SourceEvent::Reach { up: true, text, .. }] if text.contains("100 s")),
            "{news:?}"
        );
        // Down again at once (the job query fails, the ping answers): the
        // log says it, the tools are not told again.
        b.unreachable("bad answer", 102_000);
        b.outage.pinging = true;
        b.pinged(true, 103_000);
        assert!(b.outage_step(103_000).is_empty());
        b.unreachable("connection refused", 200_000);
        assert_eq!(b.outage_step(200_000).len(), 1, "a later outage is said");
    }
}

//! `pwatch`: stream events, or show reservations, namespaces and nodes.

use super::common::{ConnectArgs, OutputArgs};
use super::parse::{parse_count, parse_duration_secs, parse_id, parse_time_limit, parse_warn_secs};
use super::request::{EventKind, EventWatch, StatusState, StatusWatch, StatusWhat, WatchRequest};
use clap::Parser;

const ABOUT: &str = "Watch allocation and job events, or show reservations, namespaces and nodes";

const LONG_ABOUT: &str = "\
Events mode (the default) prints one line per event — allocation timeout \
warnings (allocation id, request id, seconds remaining), job ends, allocation \
and node changes — filtered by --alloc, --request-id, --job and --event. \
--exec runs a shell command per event with the event in PWATCH_* variables \
(PWATCH_EVENT, PWATCH_ALLOC_ID, PWATCH_REQUEST_ID, PWATCH_NSPACE, \
PWATCH_TIME_REMAINING, PWATCH_STATUS, PWATCH_EXIT_CODE, PWATCH_NODES), \
also under PMIx-style names (PMIX_EVENT, PMIX_ALLOC_ID, PMIX_ALLOC_REQ_ID, \
PMIX_NSPACE, PMIX_TIME_REMAINING, PMIX_EVENT_STATUS, PMIX_EXIT_STATUS, \
PMIX_NODES); empty when the event does not carry the field. Events the DVM \
replays from before pwatch started (PRRTE resends every earlier job end to a \
new listener) are skipped.

Status mode (--status) prints reservations (id, owning namespace, owner set, \
inheritance, share, nodes, expiry, state), namespaces (parent, number of \
processes, state, the allocations whose owner set holds them), nodes (slots, \
reservation, idle or busy) and the scheduler's queues (nodes, free nodes, \
pending requests: what `sinfo` shows), once or every --interval. Namespaces \
that ended are left out unless --all; pwatch's own namespace is never listed. \
--state keeps the rows in the states named (reservations: queued, active, \
draining; namespaces: running, killing, ended; nodes: idle, busy) and shows \
only the tables those states belong to. --mine keeps what is yours: the \
reservations whose owner set holds the namespace this pwatch acts for (the \
job's inside a job, the allocation's inside `palloc -- CMD`), the allocation \
in $PMIX_ALLOC_ID, and the allocations your own palloc --hold or palloc -- CMD \
hold in other shells (found in the holder registry); and the namespaces in \
those owner sets, the jobs your user started from any shell (where the DVM \
says who: pdvm), every job they launched, and the nodes those reservations \
hold or those jobs run on. The namespace table names each job's USER (pdvm) \
and COMMAND (PMIX_CMD_LINE). --interval redraws a terminal under an `Every \
Ns:` header with the time, and elsewhere prints a `--- DATE TIME UTC ---` \
line before each snapshot. With --json each snapshot is one JSON document \
(an object with reservations, namespaces, nodes and scheduler arrays) on one \
line; --interval prints one such line per snapshot. -vv traces every PMIx \
message sent and received (command, tag, size, keys) on stderr.

Timeout warnings go only to the process that requested the allocation, and \
the requester is refreshed by each EXTEND (spec 001 §8.2.1.9.5). So who sees \
them depends on the pattern:
  shell: `palloc … -- CMD` or `palloc --hold` is the requester and prints the \
warnings itself;
  batch script (run inside a job): palloc returns, so start \
`pwatch --alloc ID --warn-timeout 5m --extend-by 30m &` from the same job; it \
arms the warning at once with an EXTEND carrying only PMIX_ALLOC_WARN_TIMEOUT \
(the job's namespace owns the reservation, so it may), which makes pwatch the \
requester, and answers every warning with an EXTEND that re-arms it;
  orchestrator: a long-lived pwatch of the owning namespace does the same for \
each allocation it names with --alloc.
--exec lets any of them checkpoint or drain instead.";

const AFTER_HELP: &str = "\
EXIT STATUS:
  0 done (--count reached, stream ended)   2 usage error   3 cannot connect
  4 refused   5 not found   6 no permission (e.g. --extend-by on a reservation
  this namespace does not own)   7 not supported   8 --timeout before any match
  130 interrupted   1 other error

EXAMPLES:
  pwatch --status --what reservations --state queued
  pwatch --status --mine
  pwatch --status --what scheduler
  pwatch --status --json | python3 -m json.tool
  pwatch --status --json --interval 5s
  pwatch --event job-end --job myjob@1 --count 1
  pwatch --alloc alloc.3 --extend-by 30 --warn-timeout 5   (both in minutes)
  pwatch --event timeout-warning --alloc alloc.3 --warn-timeout 5m --exec 'kill -USR1 $(cat app.pid)'";

/// The allocation this pwatch runs inside (`$PMIX_ALLOC_ID`, set by
/// `palloc -- CMD`), if any.
fn inside_allocation() -> Option<String> {
    std::env::var("PMIX_ALLOC_ID")
        .ok()
        .filter(|v| !v.is_empty())
}

/// What `pwatch --complete` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompleteWhat {
    /// Live allocation ids.
    Allocs,
    /// Live job namespaces.
    Namespaces,
    /// The DVM's node names.
    Nodes,
}

/// `pwatch` flags.
#[derive(Debug, Clone, Parser)]
#[command(name = "pwatch", version, args_override_self = true, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct PwatchArgs {
    /// Show status instead of streaming events.
    #[arg(long)]
    pub status: bool,

    /// With --status: what to show (repeatable or comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "WHAT",
        requires = "status",
        default_value = "all"
    )]
    pub what: Vec<StatusWhat>,

    /// With --status: keep only rows in this state (repeatable or comma-separated,
    /// as squeue -t R,PD): queued,
    /// active, draining (reservations), running, killing, ended
    /// (namespaces), idle, busy (nodes); tables none of whose states is
    /// named are left out.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "STATE",
        requires = "status"
    )]
    pub state: Vec<StatusState>,

    /// With --status: only my reservations, the namespaces in their owner
    /// sets and the jobs those launched, and their nodes (see DESCRIPTION).
    #[arg(long, requires = "status")]
    pub mine: bool,

    /// With --status: also list namespaces that ended.
    #[arg(long, requires = "status")]
    pub all: bool,

    /// Print live allocation ids or namespaces, one per line, for the shell
    /// completions (they call `pwatch --complete allocs`); prints nothing
    /// and exits 0 when no DVM answers.
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        hide = true,
        conflicts_with = "status"
    )]
    pub complete: Option<CompleteWhat>,

    /// With --status: refresh every so often (a plain number is minutes; or 5s, 2m, MM:SS).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_secs, requires = "status")]
    pub interval: Option<u64>,

    /// Only events about this allocation id (repeatable or comma-separated).
    #[arg(long, value_name = "ALLOC_ID", value_delimiter = ',', value_parser = parse_id, conflicts_with = "status")]
    pub alloc: Vec<String>,

    /// Only events about this request id (repeatable or comma-separated).
    #[arg(long, value_name = "REQ_ID", value_delimiter = ',', value_parser = parse_id, conflicts_with = "status")]
    pub request_id: Vec<String>,

    /// Only events about this job namespace (repeatable or comma-separated). Not --nspace: that
    /// is the connection flag shared by every tool.
    #[arg(long = "job", value_name = "NSPACE", value_delimiter = ',', value_parser = parse_id, conflicts_with = "status")]
    pub job: Vec<String>,

    /// Event kinds to show (repeatable or comma-separated; default any).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "NAME",
        conflicts_with = "status"
    )]
    pub event: Vec<EventKind>,

    /// Stop after N matching events.
    #[arg(long, value_name = "N", value_parser = parse_count, conflicts_with = "status")]
    pub count: Option<u64>,

    /// Stop after this long (a plain number is minutes; or 30s, 2h, MM:SS); exit 8 if
    /// nothing matched.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_secs, conflicts_with = "status")]
    pub timeout: Option<u64>,

    /// Run this shell command for each event, fields in PWATCH_* variables.
    #[arg(long, value_name = "CMD", conflicts_with = "status")]
    pub exec: Option<String>,

    /// Answer each timeout warning with an EXTEND of this time (a plain number is
    /// minutes; or 30s, 2h, MM:SS, [D-]HH:MM:SS).
    #[arg(long, value_name = "DURATION", value_parser = parse_time_limit, conflicts_with = "status")]
    pub extend_by: Option<u64>,

    /// Arm the warning for each --alloc at start, and re-arm it on each
    /// --extend-by EXTEND (PMIX_ALLOC_WARN_TIMEOUT; a plain number is minutes, or 300s). Arming
    /// makes this pwatch the requester that receives the warnings.
    #[arg(long, value_name = "DURATION", value_parser = parse_warn_secs, conflicts_with = "status")]
    pub warn_timeout: Option<u32>,

    /// How to reach the DVM (the OpenPMIx connection flags).
    #[command(flatten)]
    pub connect: ConnectArgs,

    /// Output format and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl PwatchArgs {
    /// Checks spanning several flags (clap's `conflicts_with`/`requires` do
    /// most); an error means exit 2 before connecting.
    pub fn validate(&self) -> Result<(), String> {
        if self.event.contains(&EventKind::Any) && self.event.len() > 1 {
            return Err("--event any already includes every kind: give it alone".into());
        }
        if let WatchRequest::Status(w) = self.request() {
            if !self.state.is_empty() && w.what.is_empty() {
                return Err("--state names rows of tables that --what does not show: \
queued, active, draining are reservations; running, killing, ended namespaces; idle, busy nodes"
                    .into());
            }
        }
        let no_alloc = self.alloc.is_empty() && inside_allocation().is_none();
        if self.warn_timeout.is_some() && no_alloc && self.extend_by.is_none() {
            return Err(
                "--warn-timeout arms the warning for the allocations named by --alloc (inside \
`palloc -- CMD`, $PMIX_ALLOC_ID by default), or re-arms it on each --extend-by EXTEND: give \
--alloc ALLOC_ID or --extend-by DURATION"
                    .into(),
            );
        }
        if self.event == [EventKind::TimeoutWarning] && self.warn_timeout.is_none() {
            return Err(
                "--event timeout-warning alone sees nothing: a timeout warning goes only to \
the process that asked for it (spec 001 §8.2.1.9.5), so pwatch must ask for it too: add \
--warn-timeout DURATION, and --alloc ALLOC_ID outside `palloc -- CMD` (inside, $PMIX_ALLOC_ID is \
the default), as in `pwatch --event timeout-warning --alloc alloc.3 --warn-timeout 5m --exec \
'kill -USR1 $(cat app.pid)'`"
                    .into(),
            );
        }
        Ok(())
    }

    /// The allocations `--alloc` names, or `$PMIX_ALLOC_ID` (inside `palloc
    /// -- CMD`) when it names none and a warning is to be armed.
    fn alloc_ids(&self) -> Vec<String> {
        match inside_allocation() {
            Some(id) if self.alloc.is_empty() && self.warn_timeout.is_some() => vec![id],
            _ => self.alloc.clone(),
        }
    }

    /// The watch to perform.
    pub fn request(&self) -> WatchRequest {
        if self.status {
            let what = if self.what.is_empty() || self.what.contains(&StatusWhat::All) {
                vec![
                    StatusWhat::Reservations,
                    StatusWhat::Namespaces,
                    StatusWhat::Nodes,
                    StatusWhat::Scheduler,
                ]
            } else {
                let mut w = self.what.clone();
                w.dedup();
                w
            };
            let mut states = self.state.clone();
            states.dedup();
            // --state shows only the tables its states belong to.
            let what = if states.is_empty() {
                what
            } else {
                what.into_iter()
                    .filter(|t| states.iter().any(|s| s.table() == *t))
                    .collect()
            };
            return WatchRequest::Status(StatusWatch {
                what,
                interval_secs: self.interval,
                all: self.all || states.contains(&StatusState::Ended),
                states,
                mine: self.mine,
            });
        }
        WatchRequest::Events(EventWatch {
            events: if self.event.is_empty() {
                vec![EventKind::Any]
            } else {
                self.event.clone()
            },
            alloc_ids: self.alloc_ids(),
            request_ids: self.request_id.clone(),
            nspaces: self.job.clone(),
            count: self.count,
            timeout_secs: self.timeout,
            exec: self.exec.clone(),
            extend_by_secs: self.extend_by,
            warn_timeout: self.warn_timeout,
        })
    }
}

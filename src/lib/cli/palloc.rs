//! `palloc`: request an allocation (NEW) or extend one (EXTEND).

use super::common::{ConnectArgs, OutputArgs};
use super::parse::{
    parse_count, parse_id, parse_mem_mb, parse_nodelist_arg, parse_time_limit_or_unlimited,
    parse_warn_secs, NodeList, TimeLimit,
};
use super::request::{AllocAsk, RmOptions};
use crate::proto::AllocAttrs;
use crate::proto::Directive;
use crate::proto::{parse_inheritance, Inheritance};
use clap::Parser;

const ABOUT: &str = "Request an allocation of nodes from the DVM and say what was granted";

const LONG_ABOUT: &str = "\
Request an allocation of nodes from the DVM (PMIx_Allocation_request with \
PMIX_ALLOC_NEW, or PMIX_ALLOC_EXTEND with --extend/--extend-request) and print \
what was granted: the allocation id, the request id, the nodes, the time limit, \
whether the nodes are reserved or shared, and what becomes of the reservation \
when its owner ends.

Identity and ownership. A reservation belongs to a namespace and, unless a \
child-flavoured --inherit rule keeps it alive, its reservation ends when that \
namespace ends (spec 001 §8.2.1.9.2). Inside a job (a process launched by the \
DVM, e.g. a batch script run by `pdvm -- script` or `pspawn script`), palloc acts \
for that job's namespace: separate palloc, pspawn, prelease and pwatch \
invocations from one script allocate, spawn into, extend and release the same \
reservations. Outside any job, palloc connects as a fresh tool namespace and \
owns what it reserved only while it runs; so run the work under it \
(`palloc -N 2 -- CMD`), keep it alive with --hold, or reserve for a longer-lived \
job with --target NSPACE. --as-tool forces the tool identity inside a job. \
While a palloc holds an allocation (--hold, -- CMD, or the detached palloc of \
--no-wait), other shells of the same user act on it through that palloc: \
`pspawn --target ID`, `palloc --extend ID` and `prelease ID` (or \
`prelease --cancel REQ_ID` while it is queued) find it by the id in a private \
per-user directory, so the DVM still sees the request come from the owning \
namespace; another user, or a namespace acting on its own (--as-tool), is \
refused as the spec says.

Running a command (`palloc … -- CMD`). As with salloc, CMD runs on this \
machine as an ordinary child of palloc: it gets your whole environment, \
working directory, stdin and terminal, plus PMIX_ALLOC_ID (the allocation), \
PMIX_ALLOC_NODELIST and PMIX_ALLOC_NUM_NODES (its nodes, when the DVM names them) and \
PMIX_TOOLS_HOLDER (a private socket of palloc's). It takes none of the \
allocation's slots. palloc stays connected and relays the requests of the \
pmix-tools programs CMD runs, so the DVM sees them come from the namespace that \
owns the allocation: `pspawn` inside CMD launches into the allocation by \
default, and its jobs count as the allocation's for ownership and inheritance. \
Only processes of your user may use the socket. To change what CMD sees, \
change its environment as usual (`palloc -N 1 -- env -i PATH=$PATH CMD`); what \
a job launched by pspawn sees is set with pspawn's own -x. When CMD ends, \
palloc releases the allocation (back to the scheduler) and exits with CMD's \
status — unless you chose an --inherit rule (the DVM applies it when palloc's \
namespace ends: child and child-default keep it for the jobs still running \
in it, default leaves its nodes unreserved), or --keep is given. SIGTERM and SIGHUP to palloc are passed on \
to CMD; Ctrl-C at a terminal reaches CMD directly.

When palloc exits it says what becomes of the reservation: with \
--inherit none the nodes go back to the scheduler at once; with child they go \
back when the last job spawned into the reservation (and its descendants) ends; \
with default they stay in the DVM, unreserved, for anyone; with child-default \
they become unreserved when the last descendant ends. When you name no rule, \
palloc outside a job sends PMIX_ALLOC_INHERIT_CHILD (on a DVM that can carry \
it): palloc's own namespace owns the allocation and ends with palloc however \
palloc ends (Ctrl-C, SIGTERM, kill -9), and the spec's default rule would then \
leave the nodes unreserved in the DVM for ever, lost to the scheduler; under \
child they go back to the scheduler once palloc and the jobs started into the \
allocation have ended. A holder that ends on a signal, and palloc -- CMD when \
CMD ends, also release the allocation at once unless you chose a rule or \
--keep. Inside a job (the job owns what it reserves) nothing is sent and the \
DVM's default applies.

In a script (`ID=$(palloc -N 1 --parsable)`, as salloc --no-shell), palloc \
hands the request to a detached palloc in a session of its own, waits for the \
grant and prints it: the detached palloc holds the allocation until `prelease \
ID`, its time limit or the end of the DVM, and every command of the same user \
finds it by its id. `palloc --no-wait -N 1 -- SCRIPT` submits as sbatch does: \
it prints the request id at once; SCRIPT runs inside the allocation once it is \
granted, in a process group of its own, its output in palloc-NAME.out in the \
current directory (NAME from -J; without -J the log is REQ_ID.out, the \
generated id palloc-PID-MS). The log is never a link followed or another's \
file truncated: it is created anew, or, when a regular file of yours with that \
name exists, appended to; a symbolic link, another user's file or anything \
else there is refused and nothing is submitted. Its last line says how SCRIPT \
ended (`palloc: job.sh exited with status 3`, `palloc: job.sh was killed by \
signal SIGKILL`), and `pwatch --status --all` lists it (batch_jobs: state, \
exit_code, signal, stopped_by). `prelease REQ_ID` withdraws it while it is \
queued; once it runs, `prelease REQ_ID` (or the allocation id), the time limit \
or the end of the allocation stop SCRIPT: SIGTERM to its process group, SIGKILL \
10 s later, said in its log.

With no command, typed at a terminal (stdin and stdout) outside any job, \
palloc opens your $SHELL inside the allocation, as salloc and flux alloc do: \
`palloc` alone is `palloc -N 1 -- $SHELL`. In scripts (stdin or stdout not a \
terminal), inside a job, and with --json, --parsable, --hold, --no-wait or an \
EXTEND, it requests, prints the grant and exits. A NEW that names no nodes \
(-N, -w, -c) asks for one node, as salloc does.

Durations: -t and --warn-timeout follow the suite's one rule — a plain \
number is minutes (as in Slurm); 45s, 30m, 2h, 1d, MM:SS and [D-]HH:MM:SS are \
accepted by every duration flag; -t also takes UNLIMITED (no time limit \
asked for).

Output: the grant is one line on stdout; --parsable prints the allocation id \
alone (with --no-wait, the request id), like sbatch --parsable; --json prints \
the grant as ONE JSON document — with --hold or -- CMD, palloc then stays, \
and its later records (timeout warnings, the exit record) follow as JSON \
lines.

While the scheduler queues the request a spinner says so on a terminal; Ctrl-C \
cancels the queued request (PMIX_ALLOC_REQ_CANCEL) and exits 130 (SIGTERM: \
143).";

const AFTER_HELP: &str = "\
EXIT STATUS:
  0 granted (or, with -- CMD, CMD's own status; 128+N if CMD died of signal N)
  2 usage error   3 cannot connect   4 refused   5 not found   6 no permission
  7 not supported by this DVM   8 timed out   130 interrupted (SIGINT)
  143 ended by SIGTERM   1 other error

EXAMPLES:
  palloc                                a shell inside a 1-node allocation (at a terminal)
  palloc -N 2 -t 30 -- ./run.sh         hold 2 nodes for at most 30 minutes while run.sh runs
  ID=$(palloc -N 1 --parsable)          just the allocation id
  palloc -N 4 --inherit child --hold    print the id, keep it until Ctrl-C/SIGTERM
  palloc -w 'node[01-04]' --target prte-vm-1@1 --inherit child
  palloc --extend alloc.3 -N 1 -t 1h
  palloc -p debug -J nightly -N 2 -t UNLIMITED
  palloc -N 8 --no-wait --request-id nightly   return at once with the request id
  palloc --no-wait -N 2 -J nightly -- ./job.sh   submit job.sh (output in palloc-nightly.out)";

/// `palloc` flags.
/// Environment variable carrying a batch script's log path to the detached
/// palloc that runs the script.
pub(crate) const BATCH_LOG_ENV: &str = "PMIX_TOOLS_BATCH_LOG";

#[derive(Debug, Clone, Parser)]
#[command(name = "palloc", version, args_override_self = true, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct PallocArgs {
    /// Number of nodes (PMIX_ALLOC_NUM_NODES; a NEW naming no nodes asks for 1).
    #[arg(short = 'N', long, value_name = "N", value_parser = parse_count, allow_hyphen_values = true)]
    pub nodes: Option<u64>,

    /// Nodes to allocate, e.g. `node[01-04],gpu7` or file:PATH (PMIX_ALLOC_NODE_LIST).
    #[arg(short = 'w', long, value_name = "LIST", value_parser = parse_nodelist_arg)]
    pub nodelist: Option<NodeList>,

    /// Nodes that must not be allocated, same forms as --nodelist (PMIX_ALLOC_EXCLUDE).
    /// Long form only: `-x` means --env throughout the suite.
    #[arg(long, value_name = "LIST", value_parser = parse_nodelist_arg)]
    pub exclude: Option<NodeList>,

    /// Number of CPUs (PMIX_ALLOC_NUM_CPUS).
    #[arg(short = 'c', long, value_name = "N", value_parser = parse_count, allow_hyphen_values = true)]
    pub cpus: Option<u64>,

    /// Memory, e.g. 512M, 4G; plain numbers are megabytes (PMIX_ALLOC_MEM_SIZE).
    #[arg(long, value_name = "SIZE", value_parser = parse_mem_mb)]
    pub mem: Option<f32>,

    /// Time limit (PMIX_ALLOC_TIME): a plain number is minutes; or 45s, 30m, 2h, 1d,
    /// MM:SS, [D-]HH:MM:SS; UNLIMITED asks for none.
    #[arg(short = 't', long, value_name = "DURATION", value_parser = parse_time_limit_or_unlimited)]
    pub time: Option<TimeLimit>,

    /// Scheduler queue, Slurm's partition (PMIX_ALLOC_QUEUE).
    #[arg(short = 'p', long = "partition", visible_alias = "queue", value_name = "QUEUE", value_parser = parse_id)]
    pub queue: Option<String>,

    /// Account to charge (psched on Slurm: `salloc --account`). pdvm and psched's
    /// pool have no accounts and ignore it.
    #[arg(short = 'A', long, value_name = "ACCOUNT", value_parser = parse_id)]
    pub account: Option<String>,

    /// Quality of service (psched on Slurm: `salloc --qos`). pdvm and psched's
    /// pool ignore it.
    #[arg(long, value_name = "QOS", value_parser = parse_id)]
    pub qos: Option<String>,

    /// Run in this reservation of the resource manager (psched on Slurm: `salloc
    /// --reservation`). pdvm and psched's pool have no such reservations and ignore it.
    #[arg(long, value_name = "NAME", value_parser = parse_id)]
    pub reservation: Option<String>,

    /// Node features to require, e.g. `gpu&ib` (psched on Slurm: `salloc --constraint`).
    /// pdvm and psched's pool have no node features and ignore it.
    #[arg(short = 'C', long, value_name = "FEATURES", value_parser = parse_id)]
    pub constraint: Option<String>,

    /// Your own name for this request, echoed in the reply (PMIX_ALLOC_REQ_ID).
    #[arg(short = 'J', long, visible_alias = "job-name", value_name = "REQ_ID", value_parser = parse_id, conflicts_with = "extend_request")]
    pub request_id: Option<String>,

    /// A batch script's log (with `--no-wait -- SCRIPT` only, as sbatch -o):
    /// `%j` and `%x` are the request id, `%%` a `%`; relative to the current
    /// folder. Default: palloc-ID.out there.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        requires = "command"
    )]
    pub log: Option<String>,

    /// Reserve for this namespace instead of your own (PMIX_ALLOC_TARGET; tools only).
    #[arg(long, value_name = "NSPACE", value_parser = parse_id)]
    pub target: Option<String>,

    /// Whole nodes, shared with no other job of the resource manager (psched on
    /// Slurm: `salloc --exclusive`; without it Slurm is asked only for the CPUs
    /// wanted). pdvm and psched's pool always grant whole nodes.
    #[arg(long)]
    pub exclusive: bool,

    /// Put the nodes in the default session for everyone (PMIX_ALLOC_SHARE=true).
    #[arg(long)]
    pub share: bool,

    /// What happens when the owner ends: none, child, default, child-default
    /// (PMIX_ALLOC_INHERITANCE). Not given, palloc outside a job sends
    /// `child` (the nodes go back to the scheduler once palloc and the jobs
    /// it started have ended, so none is left behind, however palloc ends),
    /// and gives the allocation back itself when it ends; inside a job it
    /// sends nothing (the DVM's default, `default`). With `default` or
    /// `child-default` the nodes stay in the DVM unreserved (`pwatch
    /// --status` shows ORIGIN `scheduler`); `prelease $(palloc -w NODES
    /// --parsable)` gives them back.
    #[arg(long, value_name = "RULE", value_parser = parse_inheritance)]
    pub inherit: Option<Inheritance>,

    /// Ask for a warning this long before the time limit (PMIX_ALLOC_WARN_TIMEOUT):
    /// a plain number is minutes; or 45s, 30m, 2h, MM:SS, [D-]HH:MM:SS. Only
    /// with -- CMD or --hold (palloc prints the warning): where palloc returns
    /// at once nobody would hear it, so it is refused (exit 2).
    #[arg(long, value_name = "DURATION", value_parser = parse_warn_secs)]
    pub warn_timeout: Option<u32>,

    /// Extend the allocation with this id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_ID).
    #[arg(long, value_name = "ALLOC_ID", num_args = 0..=1, value_parser = parse_id)]
    pub extend: Option<Option<String>>,

    /// Extend the allocation requested under this request id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_REQ_ID).
    #[arg(long, value_name = "REQ_ID", value_parser = parse_id)]
    pub extend_request: Option<String>,

    /// Submit the request and return at once, printing its request id (like sbatch). Outside a
    /// job a detached palloc keeps the request, then holds the grant until it is released
    /// (`prelease ID`) or expires, or, with `-- SCRIPT`, runs SCRIPT in it (output in
    /// palloc-NAME.out, NAME from -J); `prelease REQ_ID` withdraws it while queued, or stops it.
    #[arg(long, conflicts_with = "hold")]
    pub no_wait: bool,

    /// After the grant, print the id and keep the allocation until SIGINT/SIGTERM.
    #[arg(long)]
    pub hold: bool,

    /// Submit batch jobs read from stdin, one a line, each a JSON array of the arguments of
    /// `palloc --no-wait` (e.g. `["-J","job1","-N","1","--","/bin/bash","job1.sh"]`), and answer
    /// each with one JSON line on stdout: `{"type":"request","request_id":ID,"state":"submitted"}`,
    /// or `{"type":"error",…,"message":…,"exit_code":N}` with the status palloc --no-wait would
    /// exit with (a line that is not such an array: exit code 2). One palloc serves a whole
    /// workflow (PSI/J's `pmix` executor) instead of one process per job; end of input ends it,
    /// and the jobs it submitted go on, each held by its detached palloc as with --no-wait.
    /// While it runs, the end of each job's detached palloc is said unasked, as soon as it
    /// happens: one line holding the job's batch record (`{"type":"batch",…}`, as `pwatch
    /// --status --all` lists it: its state, exit code or signal).
    #[arg(long, conflicts_with_all = ["hold", "no_wait", "extend", "extend_request", "command"])]
    pub stdin_requests: bool,

    /// The arguments this request was given, when not palloc's own command line (a line of
    /// --stdin-requests); the detached palloc that holds the job is started with them.
    #[arg(skip)]
    pub line_argv: Option<Vec<std::ffi::OsString>>,

    /// Print only the allocation id (with --no-wait, the request id), as sbatch --parsable.
    #[arg(long, conflicts_with = "json")]
    pub parsable: bool,

    /// With `-- CMD`: do not release the allocation when CMD ends (the --inherit rule then decides
    /// what becomes of it when its owner ends).
    #[arg(long, requires = "command")]
    pub keep: bool,

    /// How to reach the DVM (the OpenPMIx connection flags).
    #[command(flatten)]
    pub connect: ConnectArgs,

    /// Output format and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,

    /// Command to run inside the allocation once granted (after `--`): a local process with your
    /// environment, directory, stdin and terminal; the tools it runs act within the allocation.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// What palloc does after sending its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PallocMode {
    /// Wait for the grant, print it and exit.
    Print,
    /// Print the request id at once and exit (`--no-wait`).
    NoWait,
    /// Wait for the grant, print it, keep it until a signal (`--hold`).
    Hold,
    /// Wait for the grant and run this command inside it (`-- CMD`).
    Run(Vec<String>),
}

impl PallocArgs {
    /// Checks spanning several flags; an error here means exit 2 before connecting.
    pub fn validate(&self) -> Result<(), String> {
        let extending = self.is_extend();
        if matches!(self.extend, Some(None)) && self.extend_request.is_none() {
            return Err("an EXTEND needs a target: give --extend ALLOC_ID or --extend-request REQ_ID \
(§8.2.1.8: an EXTEND carrying neither PMIX_ALLOC_ID nor PMIX_ALLOC_REQ_ID is refused with PMIX_ERR_BAD_PARAM)"
                .into());
        }
        if extending && self.share {
            return Err(
                "--share sets the initial state of a new allocation and cannot be used with \
--extend/--extend-request (the extended reservation keeps its state)"
                    .into(),
            );
        }
        // The detached palloc running a batch script has no --no-wait; its
        // log is already open (BATCH_LOG_ENV names it).
        let running_batch = std::env::var_os(BATCH_LOG_ENV).is_some();
        if self.log.is_some() && !self.no_wait && !running_batch {
            return Err(
                "palloc does not take -o/--output here: palloc -- CMD writes to your terminal or redirections (`palloc -- CMD > out.txt`); -o names a batch script's log (`palloc --no-wait -o FILE -- SCRIPT`, as sbatch -o); for a job's files per rank: `pspawn -o PATTERN`"
                    .into(),
            );
        }
        if self.hold && !self.command.is_empty() {
            return Err(
                "--hold and `-- CMD` both keep the allocation while palloc runs: use one".into(),
            );
        }
        if let (Some(NodeList(list)), Some(NodeList(ex))) = (&self.nodelist, &self.exclude) {
            if let Some(n) = list.iter().find(|n| ex.contains(n)) {
                return Err(format!("node `{n}` is both in --nodelist and in --exclude"));
            }
        }
        Ok(())
    }

    /// Whether this is an EXTEND.
    pub fn is_extend(&self) -> bool {
        self.extend.is_some() || self.extend_request.is_some()
    }

    /// The request to send.
    pub fn request(&self) -> AllocAsk {
        let extending = self.is_extend();
        let names_nodes = self.nodes.is_some() || self.nodelist.is_some() || self.cpus.is_some();
        AllocAsk {
            directive: if extending {
                Directive::Extend
            } else {
                Directive::New
            },
            attrs: AllocAttrs {
                num_nodes: if extending || names_nodes {
                    self.nodes.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
                } else {
                    Some(1)
                },
                node_list: self.nodelist.clone().map(|l| l.0),
                exclude: self.exclude.clone().map(|l| l.0),
                num_cpus: self.cpus,
                mem_mb: self.mem.map(|m| m.max(0.0).ceil() as u64),
                time_secs: self
                    .time
                    .and_then(|t| t.0)
                    .map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
                queue: self.queue.clone(),
                rm: RmOptions {
                    account: self.account.clone(),
                    qos: self.qos.clone(),
                    reservation: self.reservation.clone(),
                    constraint: self.constraint.clone(),
                    exclusive: self.exclusive,
                },
                req_id: self
                    .extend_request
                    .clone()
                    .or_else(|| self.request_id.clone()),
                alloc_id: self.extend.clone().flatten(),
                target: self.target.clone(),
                share: self.share.then_some(true),
                inherit: self.inherit.map(Into::into),
                warn_timeout: self.warn_timeout,
            },
        }
    }

    /// What to do after sending the request (never a shell: see [`PallocArgs::mode_at`]).
    pub fn mode(&self) -> PallocMode {
        self.mode_at(false, None)
    }

    /// Whether palloc with no command opens a shell: typed at a terminal
    /// (`interactive`: stdin and stdout are terminals, outside any job) for a
    /// NEW without --json, --parsable, --hold or --no-wait.
    pub fn opens_shell(&self, interactive: bool) -> bool {
        interactive
            && self.command.is_empty()
            && !self.is_extend()
            && !self.no_wait
            && !self.hold
            && !self.parsable
            && !self.output.json
            && !self.stdin_requests
    }

    /// What to do after sending the request; `interactive` as for
    /// [`PallocArgs::opens_shell`], `shell` the user's `$SHELL`.
    pub fn mode_at(&self, interactive: bool, shell: Option<&str>) -> PallocMode {
        if self.opens_shell(interactive) {
            let sh = shell.filter(|s| !s.is_empty()).unwrap_or("/bin/sh");
            return PallocMode::Run(vec![sh.to_string()]);
        }
        if self.no_wait {
            PallocMode::NoWait
        } else if self.hold {
            PallocMode::Hold
        } else if !self.command.is_empty() {
            PallocMode::Run(self.command.clone())
        } else {
            PallocMode::Print
        }
    }

    /// The output flags.
    pub fn output(&self) -> OutputArgs {
        self.output.clone()
    }
}

/// The sentence palloc prints when it exits while it owns a reservation:
/// what now becomes of it and why. `owner_is_self` is true when palloc's
/// own (tool) namespace owns it, i.e. no `--target` and not acting for a job.
pub(crate) fn disposition_on_exit(
    inherit: Option<Inheritance>,
    owner_is_self: bool,
    alloc_id: &str,
) -> String {
    let rule = inherit.unwrap_or(Inheritance::Default);
    let why = if inherit.is_none() {
        " (no --inherit given: the default rule)"
    } else {
        ""
    };
    if !owner_is_self {
        return format!(
            "reservation {alloc_id} stays: it belongs to a namespace that outlives palloc; \
when that namespace ends, rule `{}`{why} applies",
            rule.word()
        );
    }
    let what = match rule {
        Inheritance::None => "its nodes return to the scheduler now, even if jobs still run on them",
        Inheritance::Child => {
            "it lives on until the last job spawned into it (and their descendants) ends, then its nodes return to the scheduler"
        }
        Inheritance::Default => "its nodes stay in the DVM, unreserved, usable by any job",
        Inheritance::ChildDefault => {
            "it lives on until the last job spawned into it (and their descendants) ends, then its nodes become unreserved in the DVM"
        }
    };
    format!(
        "palloc's namespace owned reservation {alloc_id} and is ending: under rule `{}`{why}, {what} (§8.2.1.9.2)",
        rule.word()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposition_sentences() {
        assert!(disposition_on_exit(None, true, "a1").contains("default rule"));
        assert!(disposition_on_exit(Some(Inheritance::None), true, "a1")
            .contains("return to the scheduler now"));
        assert!(disposition_on_exit(Some(Inheritance::Child), true, "a1").contains("last job"));
        assert!(
            disposition_on_exit(Some(Inheritance::ChildDefault), false, "a1")
                .contains("outlives palloc")
        );
    }
}

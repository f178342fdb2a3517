//! Slurm's side of `psched --backend slurm`: the commands a site already
//! has (`salloc --no-shell`, `scontrol`, `scancel`), each bounded in time
//! (but `salloc`, which waits for its grant), and their answers as types.
//! `SLURM_CONF` in psched's environment chooses the cluster, as for any
//! Slurm command. Everything here blocks: it runs on the worker threads of
//! [`super::worker`], never on psched's serving loop.
//!
//! Why the commands and not `slurmrestd`: every Slurm site has them, they
//! need no token or extra daemon. Why `salloc --no-shell` and not
//! `sbatch`: a batch job's first node (its batch host) cannot be given back
//! (`scontrol update NodeList=` refuses it), an allocation without a shell
//! has none, so any node can be released; and salloc says the job id it
//! was given, so psched never has to look for its job in the queue.
//!
//! A command that fails is followed by `scontrol ping`: a controller that
//! does not answer makes the failure [`Failure::Unreachable`] (retry
//! later), one that answers makes it Slurm's refusal ([`Failure::Refused`],
//! with Slurm's words).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::job::{self, Seen, Unreachable};

/// Longest any Slurm command may take before psched gives up on it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a Slurm command did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The controller did not answer (or answered with an error): nothing
    /// happened that psched knows of; try again later.
    Unreachable(String),
    /// Slurm answered and refused, in these words.
    Refused(String),
}

impl Failure {
    /// Slurm's words (or the command's).
    pub fn words(&self) -> &str {
        match self {
            Failure::Unreachable(w) | Failure::Refused(w) => w,
        }
    }
}

/// How psched asks Slurm about its jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `squeue --json` (Slurm 23.02 and later: it applies `--user`,
    /// `--jobs` and `--states` to its JSON as to its lines).
    Json,
    /// `squeue -o FORMAT` lines with `TZ=UTC` (Slurm 22.05: its
    /// `squeue --json` lists the whole queue, whatever the filters).
    Lines,
}

/// The fields of [`Dialect::Lines`], `|` between them, Slurm's reason (the
/// only one with spaces) last: job id, uid, state, nodes, end time, reason
/// (its description when it has one).
pub const LINE_FORMAT: &str = "%A|%U|%T|%N|%e|%r";

/// What to ask Slurm for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    /// How many nodes (when no list is named).
    pub count: Option<u32>,
    /// These nodes.
    pub list: Vec<String>,
    /// Nodes not to use.
    pub exclude: Vec<String>,
    /// The time limit, in seconds (Slurm counts whole minutes: rounded up).
    pub time_secs: u32,
    /// The partition.
    pub partition: Option<String>,
    /// CPUs, memory, account, QOS, reservation, features.
    pub opts: Options,
}

/// What salloc is told beyond nodes, time and partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// CPUs each node must have: `--mincpus` (psched runs no task, so
    /// `--cpus-per-task` would only describe an imagined one): on shared
    /// nodes, what Slurm grants on each node; with `--exclusive` the whole
    /// node is granted either way).
    pub cpus: Option<u64>,
    /// Memory per node in megabytes (`--mem`, rounded up).
    pub mem_mb: Option<u64>,
    /// `--account`.
    pub account: Option<String>,
    /// `--qos`.
    pub qos: Option<String>,
    /// `--reservation`.
    pub reservation: Option<String>,
    /// `--constraint`.
    pub constraint: Option<String>,
    /// `--exclusive`: whole nodes (else Slurm may run other jobs beside).
    pub exclusive: bool,
}

impl From<&crate::proto::AllocAttrs> for Options {
    fn from(a: &crate::proto::AllocAttrs) -> Self {
        let o = &a.rm;
        Options {
            cpus: a.num_cpus.filter(|c| *c > 0),
            mem_mb: a.mem_mb.filter(|m| *m > 0),
            account: o.account.clone(),
            qos: o.qos.clone(),
            reservation: o.reservation.clone(),
            constraint: o.constraint.clone(),
            exclusive: o.exclusive,
        }
    }
}

impl Options {
    /// On shared nodes (no `--exclusive`), at least the `slots` each node
    /// is said to have to PRRTE: Slurm grants what PRRTE will fill.
    pub fn with_slots(mut self, slots: u32) -> Options {
        if !self.exclusive && slots > 1 {
            self.cpus = Some(self.cpus.unwrap_or(0).max(u64::from(slots)));
        }
        self
    }

    /// The salloc arguments, each as one `--flag=value` word (a value can
    /// never be read as another flag).
    pub fn args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.exclusive {
            v.push("--exclusive".to_string());
        }
        if let Some(c) = self.cpus {
            v.push(format!("--mincpus={c}"));
        }
        if let Some(m) = self.mem_mb {
            v.push(format!("--mem={m}"));
        }
        for (flag, val) in [
            ("account", &self.account),
            ("qos", &self.qos),
            ("reservation", &self.reservation),
            ("constraint", &self.constraint),
        ] {
            if let Some(x) = val {
                v.push(format!("--{flag}={x}"));
            }
        }
        v
    }

    /// The names a command line may carry, each with what it is.
    pub fn names(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("--account", &self.account),
            ("--qos", &self.qos),
            ("--reservation", &self.reservation),
        ]
        .into_iter()
        .filter_map(|(f, v)| v.as_deref().map(|v| (f, v)))
    }
}

/// What a command's waiter hears of it.
enum Heard {
    /// One of its pipes is at its end.
    PipeClosed,
    /// It has exited (not yet reaped).
    Exited,
}

/// Read all of `r` on a thread of its own (so neither of a command's pipes
/// can fill and stall it while psched waits for the other); `heard` hears
/// when `r` is at its end.
fn drain(
    mut r: impl Read + Send + 'static,
    heard: std::sync::mpsc::Sender<Heard>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        let _ = heard.send(Heard::PipeClosed);
        s
    })
}

/// Hear the end of `child` on a thread of its own, which waits for it
/// without reaping it (`waitid` with `WNOWAIT`): the process stays ours to
/// kill and reap, its pid not reused, until [`run`] reaps it.
fn hear_exit(child: &Child, heard: std::sync::mpsc::Sender<Heard>) {
    use nix::sys::wait::{waitid, Id, WaitPidFlag};
    let Ok(pid) = i32::try_from(child.id()) else {
        return;
    };
    let pid = nix::unistd::Pid::from_raw(pid);
    std::thread::spawn(move || {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
        while waitid(Id::Pid(pid), flags) == Err(nix::errno::Errno::EINTR) {}
        let _ = heard.send(Heard::Exited);
    });
}

/// The outcome of a command run to its end: exit success, stdout, stderr.
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Run `cmd` to its end within [`COMMAND_TIMEOUT`]. Its end is heard, not
/// polled for: both its pipes close and its waiter hears it exit (one
/// channel, waited on with the deadline); only then is it reaped. A
/// command that has not exited at the deadline is killed.
fn run(mut cmd: Command) -> Result<Ran, Unreachable> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Unreachable(format!("cannot run {what}: {e}")))?;
    let (heard, hearing) = std::sync::mpsc::channel();
    let out = drain(child.stdout.take().expect("piped stdout"), heard.clone());
    let err = drain(child.stderr.take().expect("piped stderr"), heard.clone());
    hear_exit(&child, heard);
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let (mut open, mut exited) = (2, false);
    while open > 0 || !exited {
        match crate::psched::wait::recv_until(&hearing, deadline) {
            Some(Heard::PipeClosed) => open -= 1,
            Some(Heard::Exited) => exited = true,
            None => break,
        }
    }
    let status = match exited.then(|| child.wait().ok()).flatten() {
        Some(st) => st,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Unreachable(format!("{what} took too long")));
        }
    };
    Ok(Ran {
        ok: status.success(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Whether the controller answers (`scontrol ping`).
pub fn controller_up() -> bool {
    let mut c = Command::new("scontrol");
    c.arg("ping");
    run(c).is_ok_and(|r| r.ok)
}

/// The last line of `stderr`, Slurm's own words (its prefix dropped).
fn last_words(stderr: &str) -> String {
    let l = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let l = l.unwrap_or("no reason given").trim();
    let l = l.strip_prefix("salloc: ").unwrap_or(l);
    l.strip_prefix("error: ").unwrap_or(l).to_string()
}

/// Run a command that changes something; on failure, tell a refusal from
/// an unreachable controller.
fn change(cmd: Command) -> Result<(), Failure> {
    match run(cmd) {
        Ok(r) if r.ok => Ok(()),
        Ok(r) => Err(classify(last_words(&r.stderr))),
        Err(Unreachable(w)) => Err(Failure::Unreachable(w)),
    }
}

/// A failed command's words, as a refusal when the controller answers.
pub fn classify(words: String) -> Failure {
    if controller_up() {
        Failure::Refused(words)
    } else {
        Failure::Unreachable(words)
    }
}

/// Which [`Dialect`] this Slurm speaks (`squeue --version`: 22.05 and
/// older answer one line).
pub fn dialect() -> Dialect {
    let mut c = Command::new("squeue");
    c.arg("--version");
    let v = run(c).map(|r| r.stdout).unwrap_or_default();
    let major = v
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if m < 23 => Dialect::Lines,
        _ => Dialect::Json,
    }
}

/// How psched asks Slurm about its jobs each period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryForm {
    /// One `squeue --user=UID` for all of them (one job: `--jobs=J`). For a
    /// user other than root the controller sends only that user's jobs
    /// (`REQUEST_JOB_USER_INFO`): one RPC whatever the queue and however
    /// many jobs psched holds. For root squeue cannot ask that (it takes
    /// uid 0 for no user) and loads the whole queue (`REQUEST_JOB_INFO`).
    One(u32),
    /// One `squeue --jobs=J` each (`REQUEST_JOB_INFO_SINGLE`): the RPCs grow
    /// with the jobs held, not with the queue (root's default).
    Each,
}

/// Chooses the [`QueryForm`] (`one` or `each`); by default `one` for a
/// psched that is not root, `each` for root.
pub const QUERY_FORM: &str = "PSCHED_SLURM_QUERY";

/// The [`QueryForm`] of a psched running as `uid`, `asked` by
/// [`QUERY_FORM`] (an unknown word is said and left for the default).
pub fn query_form(uid: u32, asked: Option<&str>) -> QueryForm {
    match asked {
        Some("one") => return QueryForm::One(uid),
        Some("each") => return QueryForm::Each,
        Some(other) => say!("psched: {QUERY_FORM}={other:?} is not one or each: ignored"),
        None => {}
    }
    if uid == 0 {
        QueryForm::Each
    } else {
        QueryForm::One(uid)
    }
}

/// The `squeue` arguments (beyond the dialect's) of each query of `jobs`
/// in `form`.
pub fn query_args(form: QueryForm, jobs: &[u64]) -> Vec<Vec<String>> {
    let all = "--states=all".to_string();
    match (form, jobs) {
        (_, []) => Vec::new(),
        (QueryForm::One(uid), [one]) => {
            vec![vec![format!("--user={uid}"), all, format!("--jobs={one}")]]
        }
        // Not `--jobs` with several ids: squeue then loads the whole queue
        // even for one user.
        (QueryForm::One(uid), _) => vec![vec![format!("--user={uid}"), all]],
        (QueryForm::Each, _) => jobs
            .iter()
            .map(|j| vec![all.clone(), format!("--jobs={j}")])
            .collect(),
    }
}

/// What Slurm says of each of `jobs`, psched's own, asked in `form`. A
/// job an answer does not list is not psched's user's, or no longer
/// known: [`Seen::Gone`].
pub fn show_jobs(
    d: Dialect,
    form: QueryForm,
    jobs: &[u64],
) -> Vec<(u64, Result<Seen, Unreachable>)> {
    let mut out = Vec::new();
    for args in query_args(form, jobs) {
        let asked: Vec<u64> = match form {
            QueryForm::One(_) => jobs.to_vec(),
            QueryForm::Each => args
                .iter()
                .filter_map(|a| a.strip_prefix("--jobs=")?.parse().ok())
                .collect(),
        };
        out.extend(squeue(d, &args, &asked));
    }
    out
}

/// One `squeue ARGS` in dialect `d`, read for `jobs`.
fn squeue(d: Dialect, args: &[String], jobs: &[u64]) -> Vec<(u64, Result<Seen, Unreachable>)> {
    let all = |r: Result<Seen, Unreachable>| jobs.iter().map(|j| (*j, r.clone())).collect();
    let mut c = Command::new("squeue");
    c.args(args);
    match d {
        Dialect::Json => c.arg("--json"),
        Dialect::Lines => c
            .env("TZ", "UTC")
            .args(["--noheader", &format!("--format={LINE_FORMAT}")]),
    };
    let r = match run(c) {
        Ok(r) => r,
        Err(e) => return all(Err(e)),
    };
    let read = match d {
        // A failing command with no JSON: the controller's state decides.
        Dialect::Json if !r.ok && r.stdout.trim().is_empty() => None,
        Dialect::Json => Some(job::list_from_json(&r.stdout, jobs)),
        Dialect::Lines if !r.ok => None,
        Dialect::Lines => Some(job::list_from_lines(&r.stdout, jobs)),
    };
    match read {
        Some(Ok(v)) => v.into_iter().map(|(j, s)| (j, Ok(s))).collect(),
        Some(Err(e)) => all(Err(e)),
        // One job asked for by its id and unknown (22.05 gives no code).
        None => all(gone_or_unreachable(&r)),
    }
}

/// `squeue` failed without a typed answer: Slurm says no such job when
/// its controller answers.
fn gone_or_unreachable(r: &Ran) -> Result<Seen, Unreachable> {
    match classify(last_words(&r.stderr)) {
        Failure::Refused(_) => Ok(Seen::Gone),
        Failure::Unreachable(w) => Err(Unreachable(w)),
    }
}

/// Slurm's minutes for `secs` (rounded up, at least one).
pub fn minutes(secs: u32) -> u32 {
    secs.div_ceil(60).max(1)
}

/// What `salloc` said on its standard error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SallocSays {
    /// `Pending job allocation N` (queued) or `Granted job allocation N`.
    Job {
        /// The job id Slurm gave.
        id: u64,
        /// Granted (else queued).
        granted: bool,
    },
    /// `Nodes LIST are ready for job`: the granted job's nodes (expanded),
    /// ready for work (salloc asked the controller).
    Ready(Vec<String>),
    /// `error: …` (kept: Slurm's words for a refusal).
    Error(String),
    /// Anything else.
    Other,
}

/// One line of salloc's standard error.
pub fn salloc_line(line: &str) -> SallocSays {
    let l = line.trim();
    let Some(l) = l.strip_prefix("salloc: ") else {
        return SallocSays::Other;
    };
    if let Some(e) = l.strip_prefix("error: ") {
        return SallocSays::Error(e.to_string());
    }
    if let Some(list) = l
        .strip_prefix("Nodes ")
        .and_then(|r| r.strip_suffix(" are ready for job"))
    {
        if let Some(nodes) = super::hostlist::expand(list.trim()) {
            return SallocSays::Ready(nodes);
        }
    }
    for (prefix, granted) in [
        ("Granted job allocation ", true),
        ("Pending job allocation ", false),
    ] {
        if let Some(n) = l.strip_prefix(prefix).and_then(|n| n.trim().parse().ok()) {
            return SallocSays::Job { id: n, granted };
        }
    }
    SallocSays::Other
}

/// Start `salloc --no-shell --no-kill` for `ask` (`--exclusive` only when
/// asked: [`Options::exclusive`]), its job named
/// `name` (for the administrator's eyes only: psched knows its jobs by the
/// id salloc says); its standard error piped for [`salloc_line`].
/// `--no-kill`: a node that fails leaves the job (Slurm shrinks it) instead
/// of ending it (NODE_FAIL), so only the work on that node ends.
pub fn submit(
    ask: &Ask,
    name: &str,
) -> std::io::Result<(Child, BufReader<std::process::ChildStderr>)> {
    let mut c = Command::new("salloc");
    c.args(["--no-shell", "--no-kill", "--job-name", name]);
    if !ask.list.is_empty() {
        c.args(["--nodelist", &ask.list.join(",")]);
        c.args(["--nodes", &ask.list.len().to_string()]);
    } else if let Some(n) = ask.count {
        c.args(["--nodes", &n.to_string()]);
    }
    if !ask.exclude.is_empty() {
        c.args(["--exclude", &ask.exclude.join(",")]);
    }
    c.args(["--time", &minutes(ask.time_secs).to_string()]);
    if let Some(p) = &ask.partition {
        c.args(["--partition", p]);
    }
    c.args(ask.opts.args());
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let err = BufReader::new(child.stderr.take().expect("piped stderr"));
    Ok((child, err))
}

/// Read salloc's lines from `err` until it closes, calling `on` for each.
pub fn follow_salloc(err: BufReader<std::process::ChildStderr>, mut on: impl FnMut(SallocSays)) {
    for line in err.lines() {
        match line {
            Ok(l) => on(salloc_line(&l)),
            Err(_) => return,
        }
    }
}

/// Slurm's partitions, their state, nodes and idle nodes (one `sinfo`:
/// one RPC, whatever the queue).
pub fn partitions() -> Result<Vec<crate::psched::SourcePartition>, Unreachable> {
    let mut c = Command::new("sinfo");
    c.args(["-h", "-o", "%R|%a|%t|%N"]);
    let r = run(c)?;
    if !r.ok {
        return Err(Unreachable(last_words(&r.stderr)));
    }
    Ok(parse_partitions(&r.stdout))
}

/// `sinfo -h -o '%R|%a|%t|%N'` lines (one per partition and node state)
/// as partitions, in Slurm's order.
pub fn parse_partitions(out: &str) -> Vec<crate::psched::SourcePartition> {
    let mut v: Vec<crate::psched::SourcePartition> = Vec::new();
    for line in out.lines() {
        let f: Vec<&str> = line.trim().split('|').collect();
        let [name, avail, state, list] = f[..] else {
            continue;
        };
        let nodes = super::hostlist::expand(list).unwrap_or_default();
        let i = match v.iter().position(|p| p.name == name) {
            Some(i) => i,
            None => {
                v.push(crate::psched::SourcePartition {
                    name: name.to_string(),
                    state: avail.to_string(),
                    ..Default::default()
                });
                v.len() - 1
            }
        };
        let p = &mut v[i];
        if state == "idle" {
            p.idle.extend(nodes.iter().cloned());
        }
        p.nodes.extend(nodes);
    }
    for p in &mut v {
        p.nodes.sort();
        p.nodes.dedup();
        p.idle.sort();
    }
    v
}

/// End job `id` (`scancel`).
pub fn cancel(id: u64) -> Result<(), Failure> {
    let mut c = Command::new("scancel");
    c.arg(id.to_string());
    change(c)
}

/// Give job `id` `secs` more (`scontrol update TimeLimit=+MIN`).
pub fn add_time(id: u64, secs: u32) -> Result<(), Failure> {
    let mut c = Command::new("scontrol");
    c.args(["update", &format!("JobId={id}")]);
    c.arg(format!("TimeLimit=+{}", minutes(secs)));
    change(c)
}

/// Shrink job `id` to `keep` (`scontrol update NodeList=…`).
pub fn shrink(id: u64, keep: &[String]) -> Result<(), Failure> {
    let mut c = Command::new("scontrol");
    c.args(["update", &format!("JobId={id}")]);
    c.arg(format!("NodeList={}", keep.join(",")));
    change(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_counts_whole_minutes() {
        assert_eq!(minutes(1), 1);
        assert_eq!(minutes(60), 1);
        assert_eq!(minutes(61), 2);
        assert_eq!(minutes(0), 1);
    }

    #[test]
    fn options_reach_salloc_as_one_word_each() {
        let o = Options {
            cpus: Some(2),
            mem_mb: Some(256),
            account: Some("phys".into()),
            qos: Some("low".into()),
            reservation: Some("maint".into()),
            constraint: Some("gpu&ib".into()),
            exclusive: true,
        };
        assert_eq!(
            o.args(),
            [
                "--exclusive",
                "--mincpus=2",
                "--mem=256",
                "--account=phys",
                "--qos=low",
                "--reservation=maint",
                "--constraint=gpu&ib"
            ]
        );
        let w = crate::proto::AllocAttrs {
            mem_mb: Some(101),
            num_cpus: Some(0),
            ..Default::default()
        };
        let o = Options::from(&w);
        assert_eq!((o.mem_mb, o.cpus), (Some(101), None));
        assert!(!o.args().contains(&"--exclusive".to_string()));
        // Shared nodes: at least the slots PRRTE is told; whole nodes: as asked.
        assert_eq!(o.clone().with_slots(2).cpus, Some(2));
        assert_eq!(o.clone().with_slots(1).cpus, None);
        let whole = Options {
            exclusive: true,
            ..o
        };
        assert_eq!(whole.with_slots(2).cpus, None);
    }

    #[test]
    fn one_query_for_all_jobs_unless_root() {
        assert_eq!(query_form(1000, None), QueryForm::One(1000));
        assert_eq!(query_form(0, None), QueryForm::Each);
        assert_eq!(query_form(0, Some("one")), QueryForm::One(0));
        assert_eq!(query_form(1000, Some("each")), QueryForm::Each);
        let one = query_args(QueryForm::One(1000), &[4, 5, 6]);
        assert_eq!(one, [["--user=1000", "--states=all"]]);
        let single = query_args(QueryForm::One(1000), &[4]);
        assert_eq!(single, [["--user=1000", "--states=all", "--jobs=4"]]);
        let each = query_args(QueryForm::Each, &[4, 5]);
        assert_eq!(
            each,
            [["--states=all", "--jobs=4"], ["--states=all", "--jobs=5"]]
        );
        assert!(query_args(QueryForm::One(1), &[]).is_empty());
    }

    #[test]
    fn sinfo_lines_make_partitions() {
        let out = "batch|up|alloc|node02\nbatch|up|idle|node[03-04]\nshort|down|idle|node[03-04]\n";
        let p = parse_partitions(out);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].name, "batch");
        assert_eq!(p[0].state, "up");
        assert_eq!(p[0].nodes, ["node02", "node03", "node04"]);
        assert_eq!(p[0].idle, ["node03", "node04"]);
        assert_eq!(p[1].state, "down");
    }

    #[test]
    fn salloc_says_its_job_id() {
        assert_eq!(
            salloc_line("salloc: Granted job allocation 12"),
            SallocSays::Job {
                id: 12,
                granted: true
            }
        );
        assert_eq!(
            salloc_line("salloc: Pending job allocation 13"),
            SallocSays::Job {
                id: 13,
                granted: false
            }
        );
        assert_eq!(
            salloc_line("salloc: job 13 queued and waiting for resources"),
            SallocSays::Other
        );
        assert_eq!(
            salloc_line("salloc: error: Job submit/allocate failed: Requested node configuration is not available"),
            SallocSays::Error(
                "Job submit/allocate failed: Requested node configuration is not available".into()
            )
        );
        assert_eq!(
            salloc_line("salloc: Nodes node[02-03] are ready for job"),
            SallocSays::Ready(vec!["node02".into(), "node03".into()])
        );
        // Another program's line naming a job is not salloc's.
        assert_eq!(salloc_line("Granted job allocation 14"), SallocSays::Other);
    }
}

//! Slurm's side of `psched --backend slurm`: the commands a site already
//! has (`salloc --no-shell`, `squeue --json`, `scontrol`, `scancel`), each
//! bounded in time (but `salloc`, which waits for its grant in the
//! background), and their answers as types. `SLURM_CONF` in psched's environment
//! chooses the cluster, as for any Slurm command.
//!
//! Why the commands and not `slurmrestd`: every Slurm site has them, they
//! need no token or extra daemon, and `squeue --json` gives the job state,
//! node list and end time in one structured answer. Why `salloc --no-shell`
//! and not `sbatch`: a batch job's first node (its batch host) cannot be
//! given back (`scontrol update NodeList=` refuses it), an allocation
//! without a shell has none, so any node can be released.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::proto::status::Status;

pub use super::reason::JobState;

/// Longest any Slurm command may take before psched gives up on it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// One of psched's Slurm jobs as `squeue --json` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Slurm's job id.
    pub id: u64,
    /// Its name (psched names each job for its allocation).
    pub name: String,
    /// Its state.
    pub state: JobState,
    /// Its nodes in Slurm's hostlist form (`node[02-03]`), empty while pending.
    pub nodes: String,
    /// When Slurm will end it (seconds since the epoch; 0 when unknown).
    pub end_time: u64,
    /// Why it waits, as Slurm words it (`Resources`, `Priority`…).
    pub reason: String,
}

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
    pub time_secs: Option<u32>,
    /// The partition.
    pub partition: Option<String>,
}

/// Read all of `r` on a thread of its own (so neither of a command's pipes
/// can fill and stall it while psched waits for the other).
fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// Run `cmd` to its end within [`COMMAND_TIMEOUT`]; its stdout, or an error
/// carrying its stderr.
fn run(mut cmd: Command) -> Result<String> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(Status::ERR_NOT_AVAILABLE, format!("cannot run {what}: {e}")))?;
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(st) = child.try_wait().ok().flatten() {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::new(
                Status::ERR_TIMEOUT,
                format!("{what} took too long"),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.success() {
        return Ok(stdout);
    }
    Err(Error::new(
        Status::ERR_NOT_AVAILABLE,
        format!("{what}: {}", stderr.trim()),
    ))
}

/// Slurm's minutes for `secs` (rounded up, at least one).
fn minutes(secs: u32) -> u32 {
    secs.div_ceil(60).max(1)
}

/// Ask Slurm for the nodes of `ask` in a job named `name`: `salloc
/// --no-shell --exclusive`, left to wait for its grant in the background
/// (it exits 0 once granted, non-zero when Slurm refuses the request); the
/// job is found by its name in `squeue`.
pub fn submit(ask: &Ask, name: &str) -> Result<Child> {
    let mut c = Command::new("salloc");
    c.args(["--no-shell", "--exclusive", "--job-name", name]);
    if !ask.list.is_empty() {
        c.args(["--nodelist", &ask.list.join(",")]);
        c.args(["--nodes", &ask.list.len().to_string()]);
    } else if let Some(n) = ask.count {
        c.args(["--nodes", &n.to_string()]);
    }
    if !ask.exclude.is_empty() {
        c.args(["--exclude", &ask.exclude.join(",")]);
    }
    if let Some(t) = ask.time_secs {
        c.args(["--time", &minutes(t).to_string()]);
    }
    if let Some(p) = &ask.partition {
        c.args(["--partition", p]);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::new(Status::ERR_NOT_AVAILABLE, format!("cannot run salloc: {e}")))
}

/// The jobs Slurm lists (Slurm 22.05's `squeue --json` ignores `--name`
/// and `--jobs`: the caller picks psched's by name).
pub fn jobs() -> Result<Vec<Job>> {
    let mut c = Command::new("squeue");
    c.arg("--json");
    parse_jobs(&run(c)?)
}

/// The jobs of a `squeue --json` answer.
pub fn parse_jobs(json: &str) -> Result<Vec<Job>> {
    let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        Error::new(
            Status::ERR_BAD_PARAM,
            format!("squeue --json gave no JSON: {e}"),
        )
    })?;
    let list = doc["jobs"].as_array().cloned().unwrap_or_default();
    Ok(list
        .iter()
        .filter_map(|j| {
            Some(Job {
                id: j["job_id"].as_u64()?,
                name: j["name"].as_str().unwrap_or_default().to_string(),
                state: JobState::from_slurm(j["job_state"].as_str().unwrap_or_default()),
                nodes: j["nodes"].as_str().unwrap_or_default().to_string(),
                end_time: j["end_time"].as_u64().unwrap_or(0),
                reason: j["state_reason"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect())
}

/// `node[02-03]` as node names (`scontrol show hostnames`).
pub fn hostnames(list: &str) -> Result<Vec<String>> {
    if list.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = Command::new("scontrol");
    c.args(["show", "hostnames", list]);
    Ok(run(c)?.split_whitespace().map(String::from).collect())
}

/// End the job named `name` (`scancel --name`): one whose id psched has
/// not seen yet.
pub fn cancel_name(name: &str) -> Result<()> {
    let mut c = Command::new("scancel");
    c.arg(format!("--name={name}"));
    run(c).map(|_| ())
}

/// End job `id` (`scancel`).
pub fn cancel(id: u64) -> Result<()> {
    let mut c = Command::new("scancel");
    c.arg(id.to_string());
    run(c).map(|_| ())
}

/// Give job `id` `secs` more (`scontrol update TimeLimit=+MIN`).
pub fn add_time(id: u64, secs: u32) -> Result<()> {
    let mut c = Command::new("scontrol");
    c.args(["update", &format!("JobId={id}")]);
    c.arg(format!("TimeLimit=+{}", minutes(secs)));
    run(c).map(|_| ())
}

/// Shrink job `id` to `keep` (`scontrol update NodeList=…`).
pub fn shrink(id: u64, keep: &[String]) -> Result<()> {
    let mut c = Command::new("scontrol");
    c.args(["update", &format!("JobId={id}")]);
    c.arg(format!("NodeList={}", keep.join(",")));
    run(c).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_json_as_jobs() {
        let j = r#"{"jobs":[{"job_id":7,"job_state":"RUNNING","nodes":"node[02-03]",
            "end_time":1795587524,"state_reason":"None"},
            {"job_id":8,"job_state":"PENDING","nodes":"","end_time":0,"state_reason":"Resources"},
            {"job_id":9,"job_state":"TIMEOUT","nodes":"node04","end_time":5}]}"#;
        let v = parse_jobs(j).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].state, JobState::Running);
        assert_eq!(v[0].name, "");
        assert_eq!(v[0].nodes, "node[02-03]");
        assert_eq!(v[1].state, JobState::Pending);
        assert_eq!(v[1].reason, "Resources");
        assert!(matches!(v[2].state, JobState::Ended(_)));
        assert!(parse_jobs("not json").is_err());
    }

    #[test]
    fn slurm_counts_whole_minutes() {
        assert_eq!(minutes(1), 1);
        assert_eq!(minutes(60), 1);
        assert_eq!(minutes(61), 2);
        assert_eq!(minutes(0), 1);
    }
}

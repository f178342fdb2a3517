//! `pspawn`: launch a (possibly MPMD) job into the DVM.

use super::array_spec::ArraySpec;
use super::common::{ConnectArgs, OutputArgs};
use super::mpmd::split_apps;
use super::output_pattern::{OutputFiles, OutputPattern};
use super::parse::{
    parse_count_u32, parse_duration_secs, parse_env, parse_hostlist_arg, parse_id, EnvSpec,
    NodeList,
};
use super::pspawn_export::{self, parse_export, Export};
use super::pspawn_mapby::MapByParser;
use super::request::{AppSpec, SpawnRequest, StdinTarget};
use clap::Parser;

const ABOUT: &str = "Launch a job into the DVM, forward its output and return its exit status";

const LONG_ABOUT: &str = "\
Launch a job into the DVM (PMIx_Spawn), forward its stdout and stderr, and exit \
with the job's status (the first non-zero exit status among its processes; 128+N \
for a process killed by signal N).

MPMD: separate application contexts with a lone `:`. Options before the first \
program set defaults for every app; options after a `:` (-n/--np, -x/--env, \
--wdir, -H/--host, before that app's program) apply to that app only and \
override. A lone `:` always separates apps, so it cannot be passed as an \
argument.

Targeting (spec 001 §8.2.1.6): --target ALLOC_ID (repeatable or comma-separated) \
maps the job onto the union of those reservations' nodes \
(PMIX_SPAWN_TARGET); --default-pool adds the default session to that union. \
Without --target, a job started inside an allocation (PMIX_ALLOC_ID is set, e.g. \
under `palloc … -- CMD`) goes to that allocation, as srun inside salloc does; \
--default-pool alone sends it to the default session instead. Otherwise it uses \
the default session, or inside a job its parent's session. The job's namespace joins the owner set of each reservation it is \
spawned into, so it can spawn further jobs there.

Nodes (srun's -N): outside any allocation, -N COUNT reserves COUNT nodes \
for this job alone (a NEW request with inheritance CHILD), runs the job there \
and gives them back when it ends, however it ends (a refused spawn, a signal); \
a DVM without a scheduler to supply nodes is refused with exit 7 and nothing \
left reserved. Inside an allocation, the job runs on COUNT of its nodes. \
Without -n, one process per node; the processes are spread by node unless \
--map-by is given. -c N gives each process N slots (PMIX_CPUS_PER_PROC).

Older DVMs: --target needs a DVM with PMIx 7 or later (PRRTE master, pdvm); \
against an older one, which would silently launch into its default pool, \
pspawn exits 7 (PMIX_ERR_NOT_SUPPORTED) before anything runs. If the DVM never \
announces the job's end, pspawn asks it about the job once the job has been \
silent for 1 s (then with the gap doubling up to 16 s), and reports the best \
known status with a warning: 1 if a process was seen failing, else 0.

Input: pspawn forwards its stdin to rank 0 of the job (as srun and prun do; \
PMIx IOF push), and closes rank 0's stdin at end of input, so \
`echo hello | pspawn cat` prints hello. --stdin none gives the job no input \
(rank 0 reads end of file), --stdin RANK sends it to another rank, --stdin \
all a copy to every rank (as prun's --stdin all). With \
--detach nothing is forwarded.

Options before the program are parsed strictly: an unknown one is a usage \
error (exit 2) naming the nearest option, or for a Slurm flag with no meaning \
here (--pty, --mpi, -p …) why and what to type instead. The first word that is \
not an option starts the program; `--` starts it explicitly (for a program \
whose name begins with `-`).

Errors before anything runs are said plainly: a program that does not exist \
(exit 5, PMIX_ERR_NOT_FOUND) and a --wdir that is not a directory (exit 2, \
checked here when the DVM runs on this machine, else reported by the DVM) \
are named. A job stopped by --timeout says so and exits 8; a job the DVM \
stops because its allocation ended (time limit reached) says so and exits 8; \
one whose allocation the scheduler's node source ended (psched on Slurm) \
exits as palloc does for that cause, with Slurm's word: 8 TIMEOUT, 10 \
scancel or preemption, 1 NODE_FAIL.

Output: the job's output is forwarded as is; --tag-output prefixes each line \
with [rank]; --json makes the output a stream of JSON lines (one object per \
output line, then the job's end); --detach prints the job's namespace, and \
--parsable makes that the only thing printed.

Durations: --timeout follows the suite's one rule: a plain number is \
minutes (as in Slurm); 45s, 30m, 2h, 1d, MM:SS and [D-]HH:MM:SS are accepted.

Identity: inside a job, pspawn acts for that job's namespace (the new job is \
its child, which matters for CHILD inheritance rules and ownership); outside, it \
connects as a tool. --as-tool forces the latter.";

const AFTER_HELP: &str = "\
EXIT STATUS:
  the job's status (first non-zero; 128+N for signal N), or before launch:
  2 usage error   3 cannot connect   4 refused   5 not found   6 no permission
  7 not supported   8 timed out (--timeout, or the allocation's time limit)
  10 its allocation cancelled by the scheduler's node source (Slurm's scancel)
  130 interrupted (SIGINT)   143 ended by SIGTERM   1 other error

EXAMPLES:
  pspawn -n 4 ./a.out arg1                 four processes of a.out
  pspawn -n 1 ./manager : -n 8 ./worker    MPMD job with two apps
  pspawn --target alloc.3 --default-pool -n 16 ./solver
  pspawn -N 2 hostname                     two nodes reserved for this job, then given back
  echo hello | pspawn cat                  stdin goes to rank 0
  pspawn --timeout 90s ./step              stop it after 90 seconds (plain 90: minutes)
  NS=$(pspawn --detach --parsable -x OMP_NUM_THREADS=4 ./service)";

/// `pspawn` flags; the trailing `APP` holds the first program, its arguments
/// and any further `:`-separated apps.
#[derive(Debug, Clone, Parser)]
#[command(name = "pspawn", version, args_override_self = true, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct PspawnArgs {
    /// Number of processes (default 1, or with -N one per node; applies to every app
    /// without its own -n).
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = parse_count_u32, allow_hyphen_values = true)]
    pub np: Option<u32>,

    /// Nodes to run on, as srun -N: outside any allocation, reserve COUNT nodes for
    /// this job alone and give them back at its end; inside one, use COUNT of its nodes.
    /// Spreads the processes over them (--map-by node unless given).
    #[arg(short = 'N', long, value_name = "COUNT", value_parser = parse_count_u32, conflicts_with = "default_pool")]
    pub nodes: Option<u32>,

    /// Set VAR=VAL, or forward VAR from this environment, for every app (repeatable;
    /// a VAR that is not set here is refused).
    #[arg(short = 'x', long = "env", value_name = "VAR[=VAL]", value_parser = parse_env)]
    pub env: Vec<EnvSpec>,

    /// Which of this environment the job gets besides -x: ALL (default, as srun),
    /// NONE, or VAR[=VAL][,…]. ALL leaves out PMIX_*, PRTE_* and OMPI_* (this
    /// command's own PMIx connection and identity; the DVM gives each process its own),
    /// and sends TERM=dumb when this command's stdout is not a terminal (PRRTE gives
    /// a job's stdout a pty: a log would fill with colour codes); -x TERM sends yours.
    #[arg(long, value_name = "ALL|NONE|VARS", value_parser = parse_export)]
    pub export: Option<Export>,

    /// Working directory of the processes (srun's -D/--chdir); a relative
    /// program path such as ./run.sh is found there.
    #[arg(short = 'D', long, visible_alias = "chdir", value_name = "DIR")]
    pub wdir: Option<String>,

    /// Hosts to run on, node list forms such as `node[01-02]` or file:PATH;
    /// `NAME:N` uses N slots there (one by default), e.g. `-H node04:2`.
    #[arg(short = 'H', visible_short_alias = 'w', long = "host", value_name = "LIST", value_parser = parse_hostlist_arg)]
    pub host: Option<NodeList>,

    /// Mapping policy passed to the DVM (PMIX_MAPBY), e.g. slot, node, ppr:2:node,
    /// :OVERSUBSCRIBE (more processes than cores; they are then not bound to cores).
    #[arg(long, value_name = "POLICY", value_parser = MapByParser, hide_possible_values = true)]
    pub map_by: Option<String>,

    /// Allocation ids the job may use (PMIX_SPAWN_TARGET; repeatable, comma-separated).
    #[arg(long, value_name = "ALLOC_ID", value_delimiter = ',', value_parser = parse_id)]
    pub target: Vec<String>,

    /// Also allow the default pool (adds the invalid namespace to PMIX_SPAWN_TARGET); alone, it
    /// overrides the allocation of PMIX_ALLOC_ID.
    #[arg(long)]
    pub default_pool: bool,

    /// Prefix each forwarded output line with `[rank]` (srun's -l/--label).
    #[arg(short = 'l', long, visible_alias = "label", conflicts_with = "detach")]
    pub tag_output: bool,

    /// Kill the job and exit 8 after this long: a plain number is minutes; or 45s, 30m,
    /// 2h, 1d, MM:SS, [D-]HH:MM:SS.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_secs, conflicts_with = "detach")]
    pub timeout: Option<u64>,

    /// Print the job's namespace and return without waiting for it.
    #[arg(long)]
    pub detach: bool,

    /// With --detach: print only the job's namespace, nothing else (as sbatch --parsable).
    #[arg(long, requires = "detach", conflicts_with = "json")]
    pub parsable: bool,

    /// Write each process's stdout to this file instead of forwarding it
    /// (as srun -o): `%j` is the job's namespace, `%t` (or `%r`) the rank, `%a` the --array index, `%A` the array's id (the namespace of the pspawn running it),
    /// `%%` a `%`; a relative path is from the job's working directory.
    /// Each file is emptied once and shared by the ranks and streams that
    /// name it: pspawn writes whole lines into it (with --detach, each
    /// process appends to it itself). A link is never followed and a file
    /// that is not your own regular file is never emptied: both are refused
    /// before the job runs.
    #[arg(long = "output", short = 'o', value_name = "PATTERN", value_parser = OutputPattern::parse)]
    pub output_file: Option<OutputPattern>,

    /// The same for stderr (default: with --output, the same file).
    #[arg(long = "error", short = 'e', value_name = "PATTERN", value_parser = OutputPattern::parse, requires = "output_file")]
    pub error_file: Option<OutputPattern>,

    /// Inside an allocation whose slots are busy, refuse at once (exit 4)
    /// instead of waiting for them (srun's -I/--immediate).
    #[arg(short = 'I', long)]
    pub immediate: bool,

    /// Which rank gets pspawn's stdin: a rank number (default 0), `all` (each
    /// rank gets a copy, as prun's --stdin all) or `none`.
    #[arg(long, value_name = "RANK|all|none", value_parser = parse_stdin_target, conflicts_with = "detach")]
    pub stdin: Option<StdinTarget>,

    /// CPUs (slots) each process takes (srun's -c/--cpus-per-task; PMIX_CPUS_PER_PROC,
    /// which PRRTE reads as --map-by :PE=N and binds each process to N cores).
    #[arg(short = 'c', long = "cpus-per-task", visible_alias = "cpus-per-proc", value_name = "N", value_parser = parse_count_u32)]
    pub cpus_per_task: Option<u32>,

    /// A name for the job (srun's -J/--job-name), shown in pwatch's namespace
    /// table on pdvm; PMIx has no job-name attribute, so PRRTE ignores it.
    #[arg(short = 'J', long, value_name = "NAME", value_parser = parse_job_name)]
    pub job_name: Option<String>,

    /// Run the app once per index, as sbatch --array: 1-1000, 1-1000:2, 1,5,9 or
    /// 1-3,7, with %N for at most N tasks at once. Each task gets PMIX_ARRAY_TASK_ID
    /// and SLURM_ARRAY_TASK_{ID,COUNT,MIN,MAX}; %a in -o/-e is its index.
    #[arg(long, value_name = "SPEC", value_parser = ArraySpec::parse, conflicts_with_all = ["detach", "stdin"])]
    pub array: Option<ArraySpec>,

    /// Read tasks from stdin, one JSON object a line ({"id": …, "argv": [...],
    /// "env": {…}, "np": N, "cwd": DIR}; only argv is required), run at most N
    /// (default 32) at once over one connection, and print JSON lines: each task's
    /// output, then an array_task result (id, nspace, exit_code) as it ends.
    /// The other flags (-n, -x, --export, -D, --target, …) apply to every task.
    /// A line may hold up to 64 MiB, and a task's spawn request up to 16 MiB
    /// (what a DVM takes): a task beyond either, or not a task, fails alone
    /// (exit_code 2, the reason on stderr) and the stream goes on.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "32", value_parser = parse_count_u32,
        conflicts_with_all = ["array", "detach", "stdin", "app", "output_file", "tag_output"])]
    pub stdin_tasks: Option<u32>,

    /// How to reach the DVM (the OpenPMIx connection flags).
    #[command(flatten)]
    pub connect: ConnectArgs,

    /// Output format and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,

    /// PROGRAM [ARGS…] [: [APP OPTIONS] PROGRAM [ARGS…]]…
    #[arg(
        value_name = "APP",
        required_unless_present = "stdin_tasks",
        trailing_var_arg = true
    )]
    pub app: Vec<String>,
}

/// Check a `-J/--job-name`: not empty, one line.
pub fn parse_job_name(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("an empty job name: give a word such as `solver`".into());
    }
    if s.chars().any(char::is_control) {
        return Err(format!(
            "`{}`: a job name is one line without control characters",
            s.escape_debug()
        ));
    }
    Ok(s.to_string())
}

/// Parse `--stdin RANK|none`.
pub fn parse_stdin_target(s: &str) -> Result<StdinTarget, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(StdinTarget::None);
    }
    if t.eq_ignore_ascii_case("all") {
        return Ok(StdinTarget::All);
    }
    t.parse::<u32>().map(StdinTarget::Rank).map_err(|_| {
        format!("`{s}` is not a stdin target: expected a rank such as 0, all, or none")
    })
}

/// With --detach, each process writes its own files: its program runs
/// under `sh -c 'exec "$@" >> OUT 2>> ERR'`, appending, so that ranks and
/// streams sharing a file all keep their output (pspawn empties the files
/// it can name before the spawn).
fn redirect_in_process(files: &OutputFiles, apps: &mut [AppSpec]) {
    let out = files.out.shell_word();
    let redirect = match &files.err {
        Some(err) => format!("exec \"$@\" >> {out} 2>> {}", err.shell_word()),
        None => format!("exec \"$@\" >> {out} 2>&1"),
    };
    for a in apps {
        let mut args = vec!["-c".to_string(), redirect.clone(), "pspawn".to_string()];
        args.push(std::mem::take(&mut a.program));
        args.append(&mut a.args);
        a.program = "/bin/sh".into();
        a.args = args;
    }
}

impl PspawnArgs {
    /// Build the spawn request: splits the MPMD apps and applies defaults.
    /// An error means exit 2 before connecting.
    pub fn request(&self) -> Result<SpawnRequest, String> {
        if self.nodes.is_some() && self.detach && self.targets_or_context().is_empty() {
            return Err(
                "-N outside an allocation reserves nodes for this job until it ends, \
which --detach does not wait for: reserve them first, `palloc -N COUNT -- pspawn --detach …` \
or `palloc -N COUNT --hold`, then `pspawn --target ID --detach …`"
                    .into(),
            );
        }
        // With --stdin-tasks each line names its program: `true` stands
        // for it in the template the flags build.
        let placeholder = ["true".to_string()];
        let words = match self.stdin_tasks {
            Some(_) => &placeholder[..],
            None => &self.app[..],
        };
        let mut apps = split_apps(
            words,
            self.np.or(self.nodes),
            &self.env,
            self.wdir.as_deref(),
            self.host.as_ref().map(|h| h.0.as_slice()),
        )?;
        for app in &apps {
            pspawn_export::check_forwarded(&app.env)?;
        }
        pspawn_export::apply(&self.export.clone().unwrap_or_default(), &mut apps)?;
        let output_files = self.output_file.clone().map(|out| OutputFiles {
            out,
            err: self.error_file.clone(),
        });
        if output_files.as_ref().is_some_and(OutputFiles::names_index) && self.array.is_none() {
            return Err(
                "-o/-e: %a is the index of a --array task; without --array, use %j or %t".into(),
            );
        }
        if let (Some(files), true) = (&output_files, self.detach) {
            // Nobody stays to write: each process appends to its files.
            redirect_in_process(files, &mut apps);
        }
        Ok(SpawnRequest {
            apps,
            targets: self.targets_or_context(),
            default_pool: self.default_pool,
            map_by: self
                .map_by
                .clone()
                .or_else(|| self.nodes.map(|_| "node".to_string())),
            tag_output: self.tag_output,
            timeout_secs: self.timeout,
            detach: self.detach,
            stdin: if self.detach {
                StdinTarget::None
            } else {
                self.stdin.unwrap_or(StdinTarget::Rank(0))
            },
            job_name: self.job_name.clone(),
            output_files,
            immediate: self.immediate,
            cpus_per_proc: self.cpus_per_task,
        })
    }

    /// `--target`, else (unless `--default-pool`) the allocation this
    /// command runs in: `PMIX_ALLOC_ID`, set by `palloc … -- CMD` and by a
    /// DVM for a job launched into exactly one reservation.
    pub fn targets_or_context(&self) -> Vec<String> {
        if !self.target.is_empty() || self.default_pool {
            return self.target.clone();
        }
        std::env::var("PMIX_ALLOC_ID")
            .ok()
            .filter(|id| !id.is_empty())
            .map(|id| vec![id])
            .unwrap_or_default()
    }

    /// Checks spanning several flags (currently: the MPMD split).
    pub fn validate(&self) -> Result<(), String> {
        self.request().map(|_| ())
    }
}

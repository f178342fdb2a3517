//! psched's jobs as Slurm describes them, from either answer of one
//! `squeue --user=UID --states=all` (`--jobs=J` for one): `--json` (Slurm 23.02
//! and later; the schema of 23.11+, v0.0.40: states as flag arrays,
//! numbers as `{set, infinite, number}`, is read as well as the older plain
//! form) or, on Slurm 22.05, whose `squeue --json` ignores the filters (it
//! would list the whole queue), lines of [`super::ctl::LINE_FORMAT`]
//! (times in UTC as psched runs it with `TZ=UTC`).
//!
//! The answer lists the user's jobs, those asked about among them: a job it does
//! not list is [`Seen::Gone`] (ended long enough ago that Slurm forgot it,
//! or never this user's). An answer with errors is never read as "no
//! jobs": Slurm's "invalid job id" (`ESLURM_INVALID_JOB_ID`, 2017, when one
//! job alone was asked for) is [`Seen::Gone`], any other error is
//! [`Unreachable`].

use serde::Deserialize;

use super::hostlist;
use super::reason::{JobState, Reason};

/// `ESLURM_INVALID_JOB_ID`: Slurm does not know the job (any more).
const ESLURM_INVALID_JOB_ID: i64 = 2017;

/// What psched needs to know of one of its jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Slurm's job id.
    pub id: u64,
    /// The uid it runs as (`None` when Slurm did not say).
    pub user_id: Option<u32>,
    /// Its state.
    pub state: JobState,
    /// Its nodes, expanded (empty while it waits).
    pub nodes: Vec<String>,
    /// When Slurm will end it, seconds since the epoch (`None`: unknown or
    /// no limit).
    pub end_time: Option<u64>,
    /// Why it is in its state.
    pub reason: Reason,
    /// Slurm's words beyond the reason's identifier, when it gives some
    /// (`Reserved for maintenance` of `ReqNodeNotAvail`).
    pub reason_detail: Option<String>,
}

/// The detail of a reason: Slurm's description when it says more than
/// the identifier (JSON `state_description`; 22.05's one-line `Reason=`
/// after its first comma, `_` for spaces).
fn detail_of(id: &str, described: &str) -> Option<String> {
    let d = described.trim();
    let d = d.strip_prefix(id).unwrap_or(d);
    let d = d.trim_start_matches([',', ' ', '_']).replace('_', " ");
    let d = d.trim();
    (!d.is_empty()).then(|| d.to_string())
}

/// What Slurm said about one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Slurm describes it.
    Job(Job),
    /// Slurm answered that it does not know this job id (as this user's).
    Gone,
}

/// Slurm could not be asked, or answered with an error: nothing is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable(pub String);

/// A number as Slurm writes it: plain, or (v0.0.40+) an object.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum Num {
    Plain(i64),
    Obj {
        #[serde(default)]
        set: bool,
        #[serde(default)]
        infinite: bool,
        #[serde(default)]
        number: i64,
    },
}

impl Num {
    /// A set, finite, non-negative value (0 counts as unset for times).
    fn value(self) -> Option<u64> {
        match self {
            Num::Plain(n) => u64::try_from(n).ok(),
            Num::Obj {
                set: true,
                infinite: false,
                number,
            } => u64::try_from(number).ok(),
            Num::Obj { .. } => None,
        }
    }
}

/// `job_state`: one word (up to 23.02) or base state and flags.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum StateField {
    One(String),
    Flags(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct JsonJob {
    job_id: Num,
    #[serde(default)]
    user_id: Option<Num>,
    job_state: StateField,
    #[serde(default)]
    nodes: Option<String>,
    #[serde(default)]
    end_time: Option<Num>,
    #[serde(default)]
    state_reason: Option<String>,
    #[serde(default)]
    state_description: Option<String>,
}

#[derive(Debug, Deserialize)]
struct JsonError {
    #[serde(default, alias = "error_code")]
    error_number: Option<i64>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
struct JsonAnswer {
    #[serde(default)]
    jobs: Vec<JsonJob>,
    #[serde(default)]
    errors: Vec<JsonError>,
}

fn nodes_of(list: &str) -> Result<Vec<String>, Unreachable> {
    hostlist::expand(list).ok_or_else(|| Unreachable(format!("unreadable node list {list:?}")))
}

/// Each of `ids` in the JSON answer `text` of `squeue --json`.
pub fn list_from_json(text: &str, ids: &[u64]) -> Result<Vec<(u64, Seen)>, Unreachable> {
    let a: JsonAnswer = serde_json::from_str(text)
        .map_err(|e| Unreachable(format!("Slurm's answer is not the JSON expected: {e}")))?;
    if let Some(e) = a.errors.first() {
        if a.errors.len() == 1 && e.error_number == Some(ESLURM_INVALID_JOB_ID) {
            return Ok(ids.iter().map(|j| (*j, Seen::Gone)).collect());
        }
        let words = [e.error.as_deref(), e.description.as_deref()];
        let words: Vec<&str> = words
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        return Err(Unreachable(format!(
            "Slurm answered with an error ({}): {}",
            e.error_number.unwrap_or(0),
            words.join(": ")
        )));
    }
    ids.iter()
        .map(|&id| {
            let Some(j) = a.jobs.iter().find(|j| j.job_id.value() == Some(id)) else {
                return Ok((id, Seen::Gone));
            };
            Ok((id, Seen::Job(json_job(id, j)?)))
        })
        .collect()
}

/// Job `id` in the JSON answer `text` (one job's answer).
pub fn from_json(text: &str, id: u64) -> Result<Seen, Unreachable> {
    let mut v = list_from_json(text, &[id])?;
    Ok(v.pop().map_or(Seen::Gone, |(_, s)| s))
}

fn json_job(id: u64, j: &JsonJob) -> Result<Job, Unreachable> {
    let state = match &j.job_state {
        StateField::One(w) => JobState::from_words(&[w]),
        StateField::Flags(v) => JobState::from_words(v),
    }
    .with_reason(j.state_reason.as_deref().unwrap_or_default());
    Ok(Job {
        id,
        user_id: j
            .user_id
            .and_then(Num::value)
            .and_then(|u| u32::try_from(u).ok()),
        state,
        nodes: nodes_of(j.nodes.as_deref().unwrap_or_default())?,
        end_time: j.end_time.and_then(Num::value).filter(|t| *t > 0),
        reason: Reason::from_slurm(j.state_reason.as_deref().unwrap_or_default()),
        reason_detail: detail_of(
            j.state_reason.as_deref().unwrap_or_default(),
            j.state_description.as_deref().unwrap_or_default(),
        ),
    })
}

/// Each of `ids` in `squeue`'s lines of [`super::ctl::LINE_FORMAT`]
/// (Slurm 22.05); a line that cannot be read makes the whole answer
/// unreadable (never a job taken for gone).
pub fn list_from_lines(text: &str, ids: &[u64]) -> Result<Vec<(u64, Seen)>, Unreachable> {
    let mut jobs = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        jobs.push(from_line(l)?);
    }
    Ok(ids
        .iter()
        .map(|&id| match jobs.iter().find(|j| j.id == id) {
            Some(j) => (id, Seen::Job(j.clone())),
            None => (id, Seen::Gone),
        })
        .collect())
}

/// One line `ID|UID|STATE|NODES|END|REASON`.
fn from_line(line: &str) -> Result<Job, Unreachable> {
    let bad = || Unreachable(format!("unreadable squeue line {line:?}"));
    let mut f = line.trim().splitn(6, '|');
    let mut next = || f.next().ok_or_else(bad);
    let (id, uid, state, nodes, end, reason) =
        (next()?, next()?, next()?, next()?, next()?, next()?);
    let id: u64 = id.trim().parse().map_err(|_| bad())?;
    let nodes = match nodes.trim() {
        "" | "(null)" => Vec::new(),
        l => nodes_of(l)?,
    };
    let reason = reason.trim();
    let id_part = reason.split(',').next().unwrap_or_default();
    Ok(Job {
        id,
        user_id: uid.trim().parse().ok(),
        state: JobState::from_words(&[state.trim()]).with_reason(reason),
        nodes,
        end_time: utc_secs(end.trim()),
        reason: Reason::from_slurm(reason),
        reason_detail: detail_of(id_part, reason),
    })
}

/// `2026-11-26T01:37:44` (UTC) as seconds since the epoch; `None` for
/// `Unknown` and the like.
fn utc_secs(s: &str) -> Option<u64> {
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let t: Vec<i64> = time
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let ([y, m, day], [hh, mm, ss]) = (d[..].try_into().ok()?, t[..].try_into().ok()?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

#[cfg(test)]
mod tests {
    use super::super::reason::EndCause;
    use super::*;

    /// `scontrol --json show job 7` of Slurm 26.05 (v0.0.44), trimmed.
    const V44_RUNNING: &str = r#"{"jobs":[{"job_id":7,"user_id":0,"name":"psched.x.slurm.1",
        "job_state":["RUNNING"],"nodes":"node[02-03]",
        "end_time":{"set":true,"infinite":false,"number":1795651863},
        "time_limit":{"set":true,"infinite":false,"number":5},
        "state_reason":"None"}],
        "meta":{"slurm":{"release":"26.05.3"}},"errors":[],"warnings":[]}"#;

    /// `squeue --json` of Slurm 22.05 (v0.0.38), trimmed.
    const V38: &str = r#"{"meta":{},"errors":[],"jobs":[
        {"job_id":8,"user_id":1000,"job_state":"PENDING","nodes":"","end_time":0,
         "state_reason":"Resources"},
        {"job_id":9,"user_id":0,"job_state":"TIMEOUT","nodes":"node04","end_time":5,
         "state_reason":"None"}]}"#;

    #[test]
    fn a_reason_keeps_slurms_detail() {
        assert_eq!(
            detail_of(
                "ReqNodeNotAvail",
                "ReqNodeNotAvail, Reserved for maintenance"
            ),
            Some("Reserved for maintenance".into())
        );
        assert_eq!(
            detail_of("ReqNodeNotAvail", "_Reserved_for_maintenance"),
            Some("Reserved for maintenance".into())
        );
        assert_eq!(detail_of("Resources", ""), None);
        assert_eq!(detail_of("Resources", "Resources"), None);
    }

    fn job(s: Result<Seen, Unreachable>) -> Job {
        match s {
            Ok(Seen::Job(j)) => j,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_schema_of_23_11_and_later() {
        let j = job(from_json(V44_RUNNING, 7));
        assert_eq!(j.state, JobState::Running);
        assert_eq!(j.nodes, vec!["node02", "node03"]);
        assert_eq!(j.end_time, Some(1_795_651_863));
        assert_eq!(j.user_id, Some(0));
        assert_eq!(j.reason, Reason::None);
        let unlimited = V44_RUNNING.replace(
            r#""set":true,"infinite":false,"number":1795651863"#,
            r#""set":true,"infinite":true,"number":0"#,
        );
        assert_eq!(job(from_json(&unlimited, 7)).end_time, None);
        let unset = V44_RUNNING.replace(
            r#""set":true,"infinite":false,"number":1795651863"#,
            r#""set":false"#,
        );
        assert_eq!(job(from_json(&unset, 7)).end_time, None);
    }

    #[test]
    fn the_schema_of_22_05() {
        let p = job(from_json(V38, 8));
        assert_eq!(p.state, JobState::Pending);
        assert_eq!(p.reason, Reason::Waiting("Resources".into()));
        assert_eq!(p.end_time, None);
        assert_eq!(p.user_id, Some(1000));
        let t = job(from_json(V38, 9));
        assert_eq!(t.state, JobState::Ended(EndCause::TimeLimit));
        assert_eq!(t.nodes, vec!["node04"]);
    }

    #[test]
    fn errors_are_unreachable_never_an_end() {
        // 22.05 with the controller stopped: exit 0, an error, no jobs.
        let down = r#"{"meta":{},"errors":[{"description":"Failed while looking for jobs",
            "error_number":-1,"error":"Unspecified error","source":"slurm_load_jobs"}],"jobs":[]}"#;
        assert!(from_json(down, 8).is_err());
        let gone =
            r#"{"jobs":[],"errors":[{"error_number":2017,"error":"Invalid job id specified"}]}"#;
        assert_eq!(from_json(gone, 8), Ok(Seen::Gone));
        assert!(from_json("", 8).is_err());
        assert!(from_json("{\"jobs\": 3}", 8).is_err());
    }

    #[test]
    fn an_unknown_state_is_kept_unknown() {
        let odd = V44_RUNNING.replace(r#"["RUNNING"]"#, r#"["WARPING"]"#);
        assert!(matches!(
            job(from_json(&odd, 7)).state,
            JobState::Unknown(_)
        ));
    }

    #[test]
    fn the_lines_of_22_05() {
        let out = "2|0|PENDING||N/A|Resources\n\
                   1|1000|RUNNING|node[02-03]|2026-11-26T01:28:44|None\n\
                   4|0|PENDING||N/A|ReqNodeNotAvail, Reserved for maintenance\n";
        let v = list_from_lines(out, &[1, 2, 3, 4]).unwrap();
        let j = |i: usize| match &v[i].1 {
            Seen::Job(j) => j.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(j(1).state, JobState::Pending);
        assert_eq!(j(1).user_id, Some(0));
        assert!(j(1).nodes.is_empty());
        assert_eq!(j(1).end_time, None);
        assert_eq!(j(0).state, JobState::Running);
        assert_eq!(j(0).user_id, Some(1000));
        assert_eq!(j(0).nodes, vec!["node02", "node03"]);
        // date -u -d 2026-11-26T01:28:44 +%s
        assert_eq!(j(0).end_time, Some(1_795_656_524));
        assert_eq!(v[2].1, Seen::Gone, "not listed: gone");
        assert_eq!(j(3).reason, Reason::Waiting("ReqNodeNotAvail".into()));
        assert_eq!(
            j(3).reason_detail.as_deref(),
            Some("Reserved for maintenance")
        );
        assert!(list_from_lines("x|y\n", &[1]).is_err());
    }

    #[test]
    fn one_json_answer_for_several_jobs() {
        let v = list_from_json(V38, &[9, 8, 10]).unwrap();
        assert!(matches!(&v[0], (9, Seen::Job(j)) if j.nodes == ["node04"]));
        assert!(matches!(&v[1], (8, Seen::Job(j)) if j.state == JobState::Pending));
        assert_eq!(v[2], (10, Seen::Gone));
    }
}

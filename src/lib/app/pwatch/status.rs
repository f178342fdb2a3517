//! `pwatch --status`: reservations, namespaces, nodes and the scheduler's
//! queues, as tables or one JSON document per snapshot, from one status
//! request (see [`status_query::status`]). A DVM that answers none of the
//! reservation queries (PRRTE before spec 001) still lists its namespaces.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::cli::request::{StatusState, StatusWatch, StatusWhat};
use crate::conn::holder::{registered_path, HeldBy};
use crate::conn::Identity;
use crate::error::Error;
use crate::ops::{query, status_query, Session};
use crate::render::{
    table, BatchRecord, NamespaceRecord, NodeRecord, QueueRecord, ReservationRecord, StatusRecord,
};

use crate::app::{now_secs, Ui};

/// One snapshot of what was asked for; `None` where not asked, `Err` with
/// the status name the DVM answered where it did not report.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Reservations, or why not.
    pub reservations: Option<Result<Vec<ReservationRecord>, String>>,
    /// Namespaces, or why not.
    pub namespaces: Option<Result<Vec<NamespaceRecord>, String>>,
    /// Nodes, or why not.
    pub nodes: Option<Result<Vec<NodeRecord>, String>>,
    /// Scheduler queues, or why not.
    pub scheduler: Option<Result<Vec<QueueRecord>, String>>,
    /// This user's batch scripts on this DVM (see [`crate::app::batch_records`]).
    pub batch_jobs: Vec<BatchRecord>,
    /// Why the snapshot as a whole failed, if it did: a query that was not
    /// answered (time-out, lost connection, unreadable answer) or answered
    /// with an error other than "not supported"/"not found", or no table
    /// answered at all. `pwatch --status` exits non-zero with it.
    pub failure: Option<crate::error::Error>,
}

/// The failure of a status snapshot, from the answers of its tables (see
/// [`Snapshot::failure`]).
pub(crate) fn snapshot_failure(
    results: &[Option<&crate::error::Error>],
) -> Option<crate::error::Error> {
    use crate::proto::status::Status;
    let failed: Vec<&crate::error::Error> = results.iter().flatten().copied().collect();
    if let Some(e) = failed
        .iter()
        .find(|e| crate::ops::status_query::is_hard_failure(e))
    {
        return Some((*e).clone());
    }
    if let Some(e) = failed
        .iter()
        .find(|e| !matches!(e.status, Status::ERR_NOT_SUPPORTED | Status::ERR_NOT_FOUND))
    {
        return Some((*e).clone());
    }
    (!results.is_empty() && failed.len() == results.len())
        .then(|| failed.first().map(|e| (*e).clone()))
        .flatten()
}

/// The printed form of a node the DVM reported: `idle` or `busy`, with the
/// slots in use as a number (the table shows `busy 1/2`).
pub(crate) fn node(n: status_query::NodeEntry) -> NodeRecord {
    NodeRecord {
        state: if n.used > 0 { "busy" } else { "idle" }.into(),
        slots_used: Some(n.used),
        name: n.name,
        slots: Some(n.slots),
        alloc_id: (!n.session.is_empty()).then_some(n.session),
        origin: (!n.origin.is_empty()).then_some(n.origin),
        jobs: Vec::new(),
    }
}

/// At most this many jobs' process tables are asked for by [`place_jobs`].
const MAX_PLACED_JOBS: usize = 64;

/// The live processes per node, for a DVM that reports no slot in use
/// anywhere while jobs run (PRRTE names each job's nodes but not how many
/// slots it uses there): the process table (`PMIX_QUERY_PROC_TABLE`) of each
/// running job, at most [`MAX_PLACED_JOBS`] of them, each answered within
/// [`crate::ops::job::END_CHECK_WAIT`] or skipped; a job with no node named
/// gets them from it. Empty when some node reports its use (pdvm). The
/// DVM's own namespace (its daemons) is no job.
fn place_jobs(
    s: &Session,
    jobs: &mut [status_query::JobEntry],
    nodes: &[status_query::NodeEntry],
) -> HashMap<String, u32> {
    let server = s.conn().server().0.to_string();
    let mut per_node: HashMap<String, u32> = HashMap::new();
    if nodes.iter().any(|n| n.used > 0) {
        return per_node;
    }
    let live_jobs = jobs
        .iter_mut()
        .filter(|j| !ended(&j.state) && j.nspace != server)
        .take(MAX_PLACED_JOBS);
    for j in live_jobs {
        let Ok(procs) = query::proc_table_within(s, &j.nspace, crate::ops::job::END_CHECK_WAIT)
        else {
            continue;
        };
        let live = procs
            .iter()
            .filter(|p| p.state < crate::proto::proc_state::TERMINATED);
        for host in live.filter_map(|p| p.hostname.clone()) {
            *per_node.entry(host.clone()).or_default() += 1;
            if !j.nodes.contains(&host) {
                j.nodes.push(host);
            }
        }
    }
    per_node
}

/// What each node runs: the namespaces of the live jobs on it; its slots in
/// use raised to the processes counted there when the DVM reports fewer.
fn fill_node_jobs(
    nodes: &mut [NodeRecord],
    jobs: &[status_query::JobEntry],
    counted: &HashMap<String, u32>,
    server: &str,
) {
    for n in nodes.iter_mut() {
        n.jobs = jobs
            .iter()
            .filter(|j| !ended(&j.state) && j.nspace != server && j.nodes.contains(&n.name))
            .map(|j| j.nspace.clone())
            .collect();
        let seen = counted.get(&n.name).copied().unwrap_or(0);
        if seen > n.slots_used.unwrap_or(0) {
            n.slots_used = Some(seen);
            n.state = "busy".into();
        }
    }
}

/// The printed form of a job the DVM reported; `allocations` are the
/// reservations whose owner set holds it.
pub(crate) fn namespace(j: status_query::JobEntry, res: &[ReservationRecord]) -> NamespaceRecord {
    NamespaceRecord {
        allocations: res
            .iter()
            .filter(|r| r.owner_nspace == j.nspace || r.owners.contains(&j.nspace))
            .map(|r| r.alloc_id.clone())
            .collect(),
        nspace: j.nspace,
        parent: j.parent,
        nprocs: j.nprocs,
        state: j.state,
        command: j.cmdline,
        user: j.uid.map(user_name),
        name: j.name,
    }
}

/// A uid as a user name (the uid itself when it has none here).
fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name)
}

/// The printed form of a scheduler queue.
pub(crate) fn queue(q: status_query::QueueEntry) -> QueueRecord {
    QueueRecord {
        free: u32::try_from(q.free.len()).unwrap_or(u32::MAX),
        queue: q.queue,
        nodes: q.nodes,
        free_nodes: q.free,
        pending: q.pending,
        state: q.state,
        node_names: q.node_names,
    }
}

/// Sort key for namespaces: `prte-vm-1@10` after `prte-vm-1@9`.
pub(crate) fn nspace_order(n: &str) -> (String, u64, String) {
    match n.rsplit_once('@') {
        Some((base, num)) => match num.parse::<u64>() {
            Ok(k) => (base.to_string(), k, String::new()),
            Err(_) => (base.to_string(), u64::MAX, num.to_string()),
        },
        None => (n.to_string(), 0, String::new()),
    }
}

/// What "mine" means for `--mine`: the namespace this pwatch acts for (a
/// job's inside a job, the holder's inside an allocation), the allocation
/// in `$PMIX_ALLOC_ID`, and the allocations held by this user's pallocs
/// (registered holders) on this DVM.
struct Mine {
    nspaces: HashSet<String>,
    alloc_ids: HashSet<String>,
}

impl Mine {
    fn of(s: &Session, res: &[ReservationRecord]) -> Mine {
        let mut nspaces = HashSet::new();
        nspaces.insert(s.me().0);
        let mut alloc_ids: HashSet<String> = std::env::var("PMIX_ALLOC_ID")
            .ok()
            .filter(|v| !v.is_empty())
            .into_iter()
            .collect();
        let server = s.conn().target().uri.nspace.clone();
        for r in res {
            if registered_path(&server, &r.alloc_id, HeldBy::Alloc).is_some_and(|p| p.exists()) {
                alloc_ids.insert(r.alloc_id.clone());
            }
        }
        Mine { nspaces, alloc_ids }
    }

    fn owns(&self, r: &ReservationRecord) -> bool {
        self.alloc_ids.contains(&r.alloc_id)
            || self.nspaces.contains(&r.owner_nspace)
            || r.owners.iter().any(|o| self.nspaces.contains(o))
    }
}

/// What to ask the DVM for, for the tables `w` names.
fn want_for(w: &StatusWatch) -> status_query::Want {
    let asked = |t: StatusWhat| w.what.contains(&t);
    status_query::Want {
        // Namespaces need the reservations for their ALLOCATIONS column,
        // --mine needs them (and the jobs) to know what is mine, and the
        // nodes need them on a DVM that says which nodes a reservation has
        // but not which reservation holds a node (PRRTE).
        reservations: asked(StatusWhat::Reservations)
            || asked(StatusWhat::Namespaces)
            || asked(StatusWhat::Nodes),
        // The nodes' JOBS column needs the jobs too.
        jobs: asked(StatusWhat::Namespaces) || asked(StatusWhat::Nodes),
        ended_jobs: w.all,
        nodes: asked(StatusWhat::Nodes),
        sched: asked(StatusWhat::Scheduler),
    }
}

/// A table's error, if it was asked for: `Some(None)` when it came.
fn err_of<T>(r: &Option<Result<Vec<T>, Error>>) -> Option<Option<Error>> {
    match r {
        Some(Err(e)) => Some(Some(e.clone())),
        Some(Ok(_)) => Some(None),
        None => None,
    }
}

/// The status name a table's failure is shown with.
fn why(e: Error) -> String {
    e.status.name().to_string()
}

/// The job table as shown: without pwatch's own tool namespace, without
/// ended jobs unless `--all`; on a DVM with no job table, the bare
/// namespace list (not when the DVM did not answer at all: asking again
/// would only wait as long again).
fn job_table(
    s: &Session,
    answer: Option<Result<Vec<status_query::JobEntry>, Error>>,
    w: &StatusWatch,
) -> Option<Result<Vec<status_query::JobEntry>, String>> {
    let me = s.me().0;
    let as_tool = matches!(
        s.conn().identity(),
        Identity::Tool | Identity::ToolWithId { .. }
    );
    let hard = answer
        .as_ref()
        .and_then(|r| r.as_ref().err())
        .is_some_and(status_query::is_hard_failure);
    let jobs = answer.map(|r| {
        r.map_err(why).map(|mut v| {
            if as_tool {
                v.retain(|j| j.nspace != me);
            }
            if !w.all {
                v.retain(|j| !ended(&j.state));
            }
            v
        })
    });
    if !matches!(jobs, Some(Err(_))) || hard {
        return jobs;
    }
    let Ok(mut v) = query::namespaces(s) else {
        return jobs;
    };
    v.retain(|n| !as_tool || *n != me);
    v.sort_by_key(|n| nspace_order(n));
    Some(Ok(v
        .into_iter()
        .map(|n| status_query::JobEntry {
            nspace: n,
            state: "known".into(),
            ..Default::default()
        })
        .collect()))
}

/// My namespaces: what I act as, the owner sets of my reservations, the
/// jobs my user started (where the DVM says who: pdvm; so a `pspawn
/// --detach` job of another shell is mine, as `squeue --me` lists it), and
/// every job those launched (a parent comes before its children).
fn my_namespaces(
    mine: &Mine,
    my_res: &[&ReservationRecord],
    jobs: &Option<Result<Vec<status_query::JobEntry>, String>>,
) -> HashSet<String> {
    let mut set = mine.nspaces.clone();
    for r in my_res {
        set.insert(r.owner_nspace.clone());
        set.extend(r.owners.iter().cloned());
    }
    let Some(Ok(v)) = jobs else {
        return set;
    };
    let me = nix::unistd::geteuid().as_raw();
    set.extend(
        v.iter()
            .filter(|j| j.uid == Some(me))
            .map(|j| j.nspace.clone()),
    );
    loop {
        let before = set.len();
        for j in v {
            if j.parent.as_ref().is_some_and(|p| set.contains(p)) {
                set.insert(j.nspace.clone());
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// The nodes of my reservations and of my namespaces' jobs.
fn my_nodes(
    my_ns: &HashSet<String>,
    my_res: &[&ReservationRecord],
    jobs: &Option<Result<Vec<status_query::JobEntry>, String>>,
) -> HashSet<String> {
    let mut nodes: HashSet<String> = my_res.iter().flat_map(|r| r.nodes.clone()).collect();
    if let Some(Ok(v)) = jobs {
        for j in v.iter().filter(|j| my_ns.contains(&j.nspace)) {
            nodes.extend(j.nodes.iter().cloned());
        }
    }
    nodes
}

/// Ask the DVM for what `w` names: one request (pdvm), filtered as `w`
/// says.
pub(crate) fn snapshot(s: &Session, w: &StatusWatch) -> Snapshot {
    let asked = |t: StatusWhat| w.what.contains(&t);
    let want = want_for(w);
    let mut a = status_query::status(s, want);
    if let Some(sched) = crate::app::status_sched::ask_scheduler(s, &want) {
        crate::app::status_sched::amend(&mut a, sched);
    }
    // Only the tables asked for by the user count (reservations are also
    // asked for the namespaces' column; their failure then costs only that).
    let res_result = err_of(&a.reservations);
    let jobs_error = a.jobs.as_ref().and_then(|r| r.as_ref().err().cloned());
    let nodes_result = err_of(&a.nodes);
    let sched_result = err_of(&a.sched);
    let res: Result<Vec<ReservationRecord>, String> = a
        .reservations
        .unwrap_or_else(|| Ok(Vec::new()))
        .map_err(why);
    let all_res: &[ReservationRecord] = res.as_deref().unwrap_or(&[]);
    let mut jobs = job_table(s, a.jobs, w);
    let counted = match (&mut jobs, &a.nodes) {
        (Some(Ok(v)), Some(Ok(n))) => place_jobs(s, v, n),
        _ => HashMap::new(),
    };
    let placed: Vec<status_query::JobEntry> = match &jobs {
        Some(Ok(v)) => v.clone(),
        _ => Vec::new(),
    };
    let mine = w.mine.then(|| Mine::of(s, all_res));
    let is_mine = |r: &ReservationRecord| mine.as_ref().is_none_or(|m| m.owns(r));
    let my_res: Vec<&ReservationRecord> = all_res.iter().filter(|r| is_mine(r)).collect();
    let my_ns = mine.as_ref().map(|m| my_namespaces(m, &my_res, &jobs));
    let my_nodes = my_ns.as_ref().map(|ns| my_nodes(ns, &my_res, &jobs));
    let keep_state = |table: StatusWhat, state: &str| {
        let named: Vec<&StatusState> = w.states.iter().filter(|s| s.table() == table).collect();
        named.is_empty()
            || named
                .iter()
                .any(|s| s.word() == state || (**s == StatusState::Ended && ended(state)))
    };
    let mut snap = Snapshot {
        batch_jobs: crate::app::batch_records::records(&s.conn().target().uri.nspace, w.all),
        ..Default::default()
    };
    if asked(StatusWhat::Reservations) {
        snap.reservations = Some(res.clone().map(|v| {
            v.into_iter()
                .filter(|r| is_mine(r))
                .filter(|r| keep_state(StatusWhat::Reservations, &r.state))
                .collect()
        }));
    }
    if asked(StatusWhat::Namespaces) {
        snap.namespaces = jobs.map(|r| {
            r.map(|v| {
                v.into_iter()
                    .filter(|j| my_ns.as_ref().is_none_or(|m| m.contains(&j.nspace)))
                    .filter(|j| keep_state(StatusWhat::Namespaces, &j.state))
                    .map(|j| namespace(j, all_res))
                    .collect()
            })
        });
    }
    if let Some(n) = a.nodes {
        snap.nodes = Some(n.map_err(why).map(|v| {
            let mut v: Vec<NodeRecord> = v.into_iter().map(node).collect();
            fill_node_allocations(&mut v, all_res);
            fill_node_jobs(&mut v, &placed, &counted, s.conn().server().0);
            v.into_iter()
                .filter(|n| my_nodes.as_ref().is_none_or(|m| m.contains(&n.name)))
                .filter(|n| keep_state(StatusWhat::Nodes, &n.state))
                .collect()
        }));
    }
    if let Some(q) = a.sched {
        snap.scheduler = Some(q.map_err(why).map(|v| v.into_iter().map(queue).collect()));
    }
    let namespaces_failed = snap.namespaces.as_ref().map(Result::is_err);
    let results = asked_results(
        w,
        [res_result, nodes_result, sched_result],
        namespaces_failed.map(|failed| if failed { jobs_error } else { None }),
    );
    snap.failure = snapshot_failure(&results.iter().map(Option::as_ref).collect::<Vec<_>>());
    snap
}

/// The errors of the tables the user asked for, in table order:
/// `[reservations, nodes, scheduler]` (each `None` when not asked of the
/// DVM) and the namespaces' (when shown).
fn asked_results(
    w: &StatusWatch,
    [res, nodes, sched]: [Option<Option<Error>>; 3],
    namespaces: Option<Option<Error>>,
) -> Vec<Option<Error>> {
    let asked = |t: StatusWhat| w.what.contains(&t);
    let mut out = Vec::new();
    if asked(StatusWhat::Reservations) {
        out.extend(res);
    }
    out.extend(namespaces);
    if asked(StatusWhat::Nodes) {
        out.extend(nodes);
    }
    if asked(StatusWhat::Scheduler) {
        out.extend(sched);
    }
    out
}

/// A job state word meaning the job is over.
fn ended(state: &str) -> bool {
    matches!(state, "terminated" | "ended")
}

/// A DVM that does not say which reservation a node belongs to (PRRTE)
/// still says which nodes each reservation has: fill the node rows from
/// that.
fn fill_node_allocations(nodes: &mut [NodeRecord], res: &[ReservationRecord]) {
    for n in nodes.iter_mut().filter(|n| n.alloc_id.is_none()) {
        n.alloc_id = res
            .iter()
            .find(|r| r.nodes.contains(&n.name))
            .map(|r| r.alloc_id.clone());
    }
}

type Tables = BTreeMap<String, String>;

fn take<T: Clone>(
    name: &str,
    t: &Option<Result<Vec<T>, String>>,
    un: &mut Tables,
) -> Option<Vec<T>> {
    match t {
        Some(Ok(v)) => Some(v.clone()),
        Some(Err(why)) => {
            un.insert(name.to_string(), why.clone());
            None
        }
        None => None,
    }
}

/// The JSON document of a snapshot.
pub(crate) fn document(snap: &Snapshot) -> StatusRecord {
    let mut un = Tables::new();
    StatusRecord {
        time: now_secs(),
        reservations: take("reservations", &snap.reservations, &mut un),
        namespaces: take("namespaces", &snap.namespaces, &mut un),
        nodes: take("nodes", &snap.nodes, &mut un),
        scheduler: take("scheduler", &snap.scheduler, &mut un),
        batch_jobs: snap.batch_jobs.clone(),
        unreported: un,
    }
}

/// Print a snapshot: one JSON document on one line, or tables with a
/// heading each, written at once.
pub(crate) fn print(snap: &Snapshot, ui: &Ui) {
    if ui.json {
        ui.record(&document(snap));
        return;
    }
    let style = table::style(ui.stdout_tty);
    let now = now_secs() as u64;
    let several = [
        snap.reservations.is_some(),
        snap.namespaces.is_some(),
        snap.nodes.is_some(),
        snap.scheduler.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count()
        > 1;
    let mut out = String::new();
    let mut section = |h: &str, body: Result<String, &String>| {
        if several {
            out.push_str(h);
            out.push_str(":\n");
        }
        match body {
            Ok(t) => out.push_str(&t),
            Err(why) => out.push_str(&format!(
                "{}: not reported by this DVM ({why})",
                h.to_ascii_lowercase()
            )),
        }
        out.push('\n');
    };
    if let Some(r) = &snap.reservations {
        section(
            "RESERVATIONS",
            r.as_ref()
                .map(|rows| table::reservations(rows, now, style).to_string()),
        );
    }
    if let Some(r) = &snap.namespaces {
        section(
            "NAMESPACES",
            r.as_ref()
                .map(|rows| table::namespaces(rows, style).to_string()),
        );
    }
    if let Some(r) = &snap.nodes {
        section(
            "NODES",
            r.as_ref().map(|rows| table::nodes(rows, style).to_string()),
        );
    }
    if let Some(r) = &snap.scheduler {
        section(
            "SCHEDULER",
            r.as_ref()
                .map(|rows| table::queues(rows, style).to_string()),
        );
    }
    if !snap.batch_jobs.is_empty() && snap.reservations.is_some() {
        out.push_str("BATCH JOBS:\n");
        out.push_str(&table::batch_jobs(&snap.batch_jobs, style).to_string());
        out.push('\n');
    }
    ui.result(out.trim_end_matches('\n'));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let n = node(status_query::NodeEntry {
            name: "n1".into(),
            session: String::new(),
            slots: 4,
            used: 2,
            origin: "startup".into(),
        });
        assert_eq!(n.alloc_id, None);
        assert_eq!((n.state.as_str(), n.slots_used), ("busy", Some(2)));
        assert_eq!(n.state_text(), "busy 2/4");
        let doc = document(&Snapshot {
            nodes: Some(Ok(vec![n])),
            scheduler: Some(Err("PMIX_ERR_NOT_SUPPORTED".into())),
            ..Default::default()
        });
        let v = serde_json::to_value(&doc).unwrap();
        assert_eq!(v["type"], "status");
        assert_eq!(v["nodes"][0]["state"], "busy");
        assert_eq!(v["nodes"][0]["slots_used"], 2);
        assert!(v["reservations"].is_null() && v["scheduler"].is_null());
        assert_eq!(v["unreported"]["scheduler"], "PMIX_ERR_NOT_SUPPORTED");
    }

    #[test]
    fn nodes_list_the_live_jobs_on_them_and_counted_use() {
        let rec = |name: &str| {
            node(status_query::NodeEntry {
                name: name.into(),
                slots: 2,
                ..Default::default()
            })
        };
        let mut nodes = vec![rec("a"), rec("b"), rec("c")];
        let job = |ns: &str, state: &str, on: &[&str]| status_query::JobEntry {
            nspace: ns.into(),
            state: state.into(),
            nodes: on.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let jobs = vec![
            job("dvm@0", "running", &["a", "b", "c"]),
            job("j@1", "running", &["a", "b"]),
            job("j@2", "ended", &["b"]),
            job("j@3", "running", &["b"]),
        ];
        let counted = HashMap::from([("b".to_string(), 2)]);
        fill_node_jobs(&mut nodes, &jobs, &counted, "dvm@0");
        assert_eq!(nodes[0].jobs, ["j@1"]);
        assert_eq!(nodes[1].jobs, ["j@1", "j@3"]);
        assert!(nodes[2].jobs.is_empty());
        assert_eq!(nodes[1].state_text(), "busy 2/2");
        assert_eq!(
            (nodes[0].state.as_str(), nodes[0].slots_used),
            ("idle", Some(0))
        );
    }
}

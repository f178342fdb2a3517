//! Where a job's ranks sit on pdvm's simulated nodes, laid out once when
//! the job starts, and the job data its PMIx clients read at init (the
//! answer to `PMIX_REQ_CMD`): job-level values, one info array per node
//! and per app, and one packed blob per rank, in the order and form the
//! client's datastore (OpenPMIx `gds/hash`) reads them.

use crate::codec::{DataArray, Encoder, Info, Kval, Rank, Value};
use crate::error::Result;
use crate::proto::keys::{self, client as k};

/// A simulated node hosting some of a job's ranks.
#[derive(Debug, Clone)]
pub(crate) struct NodeLayout {
    /// Its name (what the job's processes see as their host name).
    pub name: String,
    /// Its number in the DVM.
    pub id: u32,
    /// The job's ranks on it, ascending.
    pub ranks: Vec<u32>,
}

/// One app of a job.
#[derive(Debug, Clone, Default)]
pub(crate) struct AppLayout {
    /// Its processes.
    pub size: u32,
    /// Its lowest rank.
    pub leader: u32,
    /// Its command line.
    pub argv: String,
    /// Its working directory, when it has one.
    pub wdir: Option<String>,
}

/// Where one rank sits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RankLayout {
    /// Its app.
    pub app: u32,
    /// Its node (index into [`JobLayout::nodes`]).
    pub node: usize,
    /// Its rank among the job's ranks on that node.
    pub local_rank: u16,
    /// Its rank within its app.
    pub app_rank: u32,
}

/// A job's layout: its nodes, apps and ranks.
#[derive(Debug, Clone, Default)]
pub(crate) struct JobLayout {
    /// Its namespace.
    pub nspace: String,
    /// Processes the job's session can hold (`PMIX_UNIV_SIZE`).
    pub univ_size: u32,
    /// The session's temporary directory.
    pub tmpdir: String,
    /// Nodes hosting it, in the order of their first rank.
    pub nodes: Vec<NodeLayout>,
    /// Its apps.
    pub apps: Vec<AppLayout>,
    /// Its ranks, by rank.
    pub ranks: Vec<RankLayout>,
}

/// A rank placed by the spawn plan: (rank, app, node name).
pub(crate) type Placed<'a> = (u32, usize, &'a str);

impl JobLayout {
    /// Lay out `placed` ranks of job `nspace`; `node_id` numbers a node of
    /// the DVM; `apps` gives each app's command line and directory.
    pub(crate) fn new(
        nspace: &str,
        placed: &[Placed],
        apps: Vec<AppLayout>,
        node_id: impl Fn(&str) -> u32,
    ) -> JobLayout {
        let mut l = JobLayout {
            nspace: nspace.to_string(),
            apps,
            ranks: vec![RankLayout::default(); placed.len()],
            ..JobLayout::default()
        };
        let mut sorted: Vec<&Placed> = placed.iter().collect();
        sorted.sort_by_key(|p| p.0);
        for &&(rank, app, node) in &sorted {
            l.place(rank, app, node, &node_id);
        }
        l
    }

    fn place(&mut self, rank: u32, app: usize, node: &str, node_id: &impl Fn(&str) -> u32) {
        let n = match self.nodes.iter().position(|n| n.name == node) {
            Some(i) => i,
            None => {
                self.nodes.push(NodeLayout {
                    name: node.to_string(),
                    id: node_id(node),
                    ranks: Vec::new(),
                });
                self.nodes.len() - 1
            }
        };
        let local_rank = self.nodes[n].ranks.len() as u16;
        self.nodes[n].ranks.push(rank);
        if self.apps.len() <= app {
            self.apps.resize(app + 1, AppLayout::default());
        }
        let a = &mut self.apps[app];
        if a.size == 0 {
            a.leader = rank;
        }
        let app_rank = a.size;
        a.size += 1;
        if let Some(r) = self.ranks.get_mut(rank as usize) {
            *r = RankLayout {
                app: app as u32,
                node: n,
                local_rank,
                app_rank,
            };
        }
    }

    /// Processes in the job.
    pub(crate) fn size(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// The node rank `rank` runs on, by name.
    pub(crate) fn node_of(&self, rank: u32) -> Option<&str> {
        let r = self.ranks.get(rank as usize)?;
        Some(self.nodes.get(r.node)?.name.as_str())
    }

    /// The job data, as `PMIX_REQ_CMD`'s answer carries it after the
    /// namespace: job-level values, node arrays, app arrays, rank blobs.
    pub(crate) fn encode(&self, e: &mut Encoder) -> Result<()> {
        for kv in self.job_kvals() {
            e.pack_one(&kv)?;
        }
        for rank in 0..self.size() {
            e.pack_one(&self.rank_blob(rank, e)?)?;
        }
        Ok(())
    }

    /// Job-level values, then one array per node and per app.
    pub(crate) fn job_kvals(&self) -> Vec<Kval> {
        let size = self.size();
        let nodes: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut v = vec![
            Kval::new(keys::UNIV_SIZE, Value::Uint32(self.univ_size.max(size))),
            Kval::new(k::TMPDIR, self.tmpdir.as_str()),
            Kval::new(keys::JOBID, self.nspace.as_str()),
            Kval::new(keys::JOB_SIZE, Value::Uint32(size)),
            Kval::new(k::MAX_PROCS, Value::Uint32(self.univ_size.max(size))),
            Kval::new(k::JOB_NUM_APPS, Value::Uint32(self.apps.len() as u32)),
            Kval::new(k::NUM_NODES, Value::Uint32(self.nodes.len() as u32)),
            Kval::new(keys::NODE_LIST, nodes.join(",").as_str()),
        ];
        v.extend(self.nodes.iter().map(node_array));
        v.extend(self.apps.iter().enumerate().map(|(i, a)| app_array(i, a)));
        v
    }

    /// What the job data says of rank `rank` alone.
    pub(crate) fn rank_kvals(&self, rank: u32) -> Vec<Kval> {
        let Some(r) = self.ranks.get(rank as usize) else {
            return Vec::new();
        };
        let node = &self.nodes[r.node];
        vec![
            Kval::new(k::LOCAL_RANK, Value::Uint16(r.local_rank)),
            Kval::new(k::NODE_RANK, Value::Uint16(r.local_rank)),
            Kval::new(k::APPNUM, Value::Uint32(r.app)),
            Kval::new(k::APP_RANK, Value::Rank(r.app_rank)),
            Kval::new(k::GLOBAL_RANK, Value::Rank(rank)),
            Kval::new(keys::HOSTNAME, node.name.as_str()),
            Kval::new(k::NODEID, Value::Uint32(node.id)),
        ]
    }

    /// `PMIX_PROC_BLOB`: the rank, then its values, packed as `like` packs.
    fn rank_blob(&self, rank: u32, like: &Encoder) -> Result<Kval> {
        let mut sub = Encoder::like(like);
        sub.pack_one(&Rank(rank))?;
        for kv in self.rank_kvals(rank) {
            sub.pack_one(&kv)?;
        }
        Ok(Kval::new(k::PROC_BLOB, Value::ByteObject(sub.into_bytes())))
    }
}

/// `PMIX_NODE_INFO_ARRAY` of one node.
fn node_array(n: &NodeLayout) -> Kval {
    let peers: Vec<String> = n.ranks.iter().map(u32::to_string).collect();
    let infos = vec![
        Info::new(keys::HOSTNAME, n.name.as_str()),
        Info::new(k::NODEID, Value::Uint32(n.id)),
        Info::new(k::LOCAL_PEERS, peers.join(",").as_str()),
        Info::new(k::LOCAL_SIZE, Value::Uint32(n.ranks.len() as u32)),
        Info::new(k::NODE_SIZE, Value::Uint32(n.ranks.len() as u32)),
        Info::new(
            k::LOCALLDR,
            Value::Rank(n.ranks.first().copied().unwrap_or(0)),
        ),
    ];
    Kval::new(
        k::NODE_INFO_ARRAY,
        Value::DataArray(DataArray::Infos(infos)),
    )
}

/// `PMIX_APP_INFO_ARRAY` of app `num`.
fn app_array(num: usize, a: &AppLayout) -> Kval {
    let mut infos = vec![
        Info::new(k::APPNUM, Value::Uint32(num as u32)),
        Info::new(k::APP_SIZE, Value::Uint32(a.size)),
        Info::new(k::APPLDR, Value::Rank(a.leader)),
        Info::new(k::APP_ARGV, a.argv.as_str()),
    ];
    if let Some(w) = &a.wdir {
        infos.push(Info::new(keys::WDIR, w.as_str()));
    }
    Kval::new(k::APP_INFO_ARRAY, Value::DataArray(DataArray::Infos(infos)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> JobLayout {
        let placed = [
            (0, 0, "n001"),
            (1, 0, "n001"),
            (2, 0, "n002"),
            (3, 1, "n002"),
        ];
        let apps = vec![AppLayout::default(), AppLayout::default()];
        JobLayout::new("job@1", &placed, apps, |n| if n == "n001" { 0 } else { 1 })
    }

    #[test]
    fn ranks_get_their_nodes_local_ranks_and_apps() {
        let l = layout();
        assert_eq!(l.nodes.len(), 2);
        assert_eq!(l.nodes[1].ranks, [2, 3]);
        assert_eq!(l.ranks[3].local_rank, 1);
        assert_eq!(l.ranks[3].app, 1);
        assert_eq!(l.ranks[3].app_rank, 0);
        assert_eq!(l.apps[0].size, 3);
        assert_eq!(l.apps[1].leader, 3);
        assert_eq!(l.node_of(2), Some("n002"));
    }

    #[test]
    fn node_arrays_name_the_local_peers() {
        let kv = node_array(&layout().nodes[0]);
        let Value::DataArray(DataArray::Infos(infos)) = kv.value else {
            panic!("not an info array")
        };
        let peers = infos.iter().find(|i| i.key == k::LOCAL_PEERS).unwrap();
        assert_eq!(peers.value.as_str(), Some("0,1"));
    }
}

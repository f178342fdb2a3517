//! The announcement that a job lost processes because the node source
//! took their nodes away (a node Slurm marked DOWN left the allocation):
//! one [`crate::proto::status::JOB_NODES_LOST`] per job, to every tool of
//! the DVM, sent just before the kill ([`super::stop`]). PRRTE master
//! announces status 0 for the processes a job control killed, so without it
//! the job's pspawn would read a lost node as a success; with it, pspawn
//! reports the node failure (`NODE_FAIL`, exit 1), as for an allocation
//! Slurm ended for a failed node.

use crate::codec::{Info, Proc, WireVersion};
use crate::error::Result;
use crate::proto::{keys, SessionEndCause};

/// The sentence for job processes `ranks` killed on `nodes`, lost by
/// `alloc_id`.
pub fn sentence(alloc_id: &str, nodes: &[String], ranks: &[u32]) -> String {
    let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
    format!(
        "{} of allocation {alloc_id} taken away by the scheduler's node source ({}): \
         rank {} killed there",
        nodes.join(","),
        SessionEndCause::NodeFailure.slurm_word(),
        list.join(",")
    )
}

/// The notices for the jobs of `procs` (killed on `nodes`, which
/// `alloc_id` lost): one per job, in the order the jobs first appear.
pub fn notices(
    wire: WireVersion,
    alloc_id: &str,
    nodes: &[String],
    procs: &[Proc],
) -> Result<Vec<Vec<u8>>> {
    let mut jobs: Vec<(&str, Vec<u32>)> = Vec::new();
    for p in procs {
        match jobs.iter_mut().find(|(ns, _)| *ns == p.nspace) {
            Some((_, ranks)) => ranks.push(p.rank),
            None => jobs.push((&p.nspace, vec![p.rank])),
        }
    }
    let list = nodes.join(",");
    jobs.into_iter()
        .map(|(ns, ranks)| {
            let infos = [
                Info::new(keys::NSPACE, ns),
                Info::new(keys::ALLOC_ID, alloc_id),
                Info::new(keys::NODE_LIST, list.as_str()),
                Info::new(keys::END_CAUSE, SessionEndCause::NodeFailure.word()),
                Info::new(
                    keys::EVENT_TEXT_MESSAGE,
                    sentence(alloc_id, nodes, &ranks).as_str(),
                ),
            ];
            super::wire::notify_all(wire, crate::proto::status::JOB_NODES_LOST, &infos)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_notice_per_job_naming_the_node_and_its_ranks() {
        let p = |ns: &str, rank| Proc {
            nspace: ns.into(),
            rank,
        };
        let procs = [p("dvm@3", 1), p("dvm@4", 0), p("dvm@3", 2)];
        let n = notices(WireVersion::V41, "slurm.2", &["node03".into()], &procs).unwrap();
        assert_eq!(n.len(), 2);
        assert_eq!(
            sentence("slurm.2", &["node03".into()], &[1, 2]),
            "node03 of allocation slurm.2 taken away by the scheduler's node source (NODE_FAIL): \
             rank 1,2 killed there"
        );
    }
}

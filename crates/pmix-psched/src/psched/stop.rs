//! Stopping the work on nodes the node source took away while the DVM
//! still runs processes there (a node Slurm marked DOWN left a job on
//! several nodes; Slurm ended the job of nodes the DVM retains under
//! DEFAULT or CHILD_DEFAULT). PMIx has no message that takes one node from
//! a session, so psched, as a tool of the DVM, asks where every job's
//! processes run (`PMIX_QUERY_NAMESPACE_INFO`) and kills those on the
//! nodes (`PMIX_JOB_CTRL_KILL` of those processes: PRRTE master carries it
//! out for named processes, where `PMIX_JOB_CTRL_TERMINATE` is only for
//! the whole DVM). The DVM's own daemons are never named.

use crate::codec::attrs::write_infos;
use crate::codec::{Cmd, Encoder, Info, Proc, Value, WireVersion};
use crate::error::Result;
use crate::proto::{cmd, keys};

/// The processes the answer to a `PMIX_QUERY_NAMESPACE_INFO` (`infos`)
/// shows on one of `nodes`, outside the namespace `daemons` (the DVM's).
pub fn procs_on(infos: &[Info], nodes: &[String], daemons: &str) -> Vec<Proc> {
    let Ok(blocks) = crate::schema::status::entries(infos, keys::QUERY_NAMESPACE_INFO) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for block in blocks {
        let Some(nspace) = block
            .iter()
            .find(|i| i.key == keys::NSPACE)
            .and_then(|i| i.value.as_str())
        else {
            continue;
        };
        if nspace == daemons {
            continue;
        }
        for p in block.iter().filter(|i| i.key == keys::PROC_INFO_ARRAY) {
            let Value::DataArray(d) = &p.value else {
                continue;
            };
            let Some(fields) = d.as_infos() else {
                continue;
            };
            let host = fields
                .iter()
                .find(|i| i.key == keys::HOSTNAME)
                .and_then(|i| i.value.as_str());
            let rank = fields
                .iter()
                .find(|i| i.key == keys::RANK)
                .and_then(|i| i.value.as_u32());
            if let (Some(h), Some(rank)) = (host, rank) {
                if nodes.iter().any(|n| n == h) {
                    out.push(Proc {
                        nspace: nspace.to_string(),
                        rank,
                    });
                }
            }
        }
    }
    out
}

/// `PMIX_JOB_CONTROL` killing `targets` (`PMIX_JOB_CTRL_KILL`).
pub fn kill(wire: WireVersion, targets: &[Proc]) -> Result<Vec<u8>> {
    let mut e = Encoder::new(wire);
    e.pack_one(&Cmd(cmd::JOB_CONTROL))?;
    crate::codec::attrs::write_sized(&mut e, targets)?;
    write_infos(&mut e, &[Info::new(keys::JOB_CTRL_KILL, true)])?;
    Ok(e.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::DataArray;

    fn proc_info(host: &str, rank: u32) -> Info {
        Info::new(
            keys::PROC_INFO_ARRAY,
            Value::DataArray(DataArray::infos(vec![
                Info::new(keys::RANK, Value::Rank(rank)),
                Info::new(keys::HOSTNAME, host),
            ])),
        )
    }

    fn job(nspace: &str, procs: Vec<Info>) -> Info {
        let mut v = vec![Info::new(keys::NSPACE, nspace)];
        v.extend(procs);
        Info::new("pmix.job.info.arr", Value::DataArray(DataArray::infos(v)))
    }

    #[test]
    fn only_the_processes_on_the_nodes_and_never_the_daemons() {
        let answer = [Info::new(
            keys::QUERY_NAMESPACE_INFO,
            Value::DataArray(DataArray::infos(vec![
                job("dvm@0", vec![proc_info("n1", 0), proc_info("n2", 1)]),
                job("dvm@3", vec![proc_info("n1", 0), proc_info("n2", 1)]),
                job("dvm@4", vec![proc_info("n2", 0)]),
            ])),
        )];
        let got = procs_on(&answer, &["n1".to_string()], "dvm@0");
        assert_eq!(
            got,
            vec![Proc {
                nspace: "dvm@3".into(),
                rank: 0
            }]
        );
        assert!(kill(WireVersion::V41, &got).is_ok());
    }
}

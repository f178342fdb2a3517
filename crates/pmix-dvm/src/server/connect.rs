//! What `MPI_Comm_spawn` (and `MPI_Comm_connect`/`accept`) asks of pdvm
//! beyond a spawn: publish and lookup (the two roots swap their lists of
//! participants under the port's name, the lookup waiting for the other
//! side's publish), and connect/disconnect, collectives over the processes
//! of several namespaces. A connect answers each participant with the job
//! data of every namespace it names, so a process learns its new peers'
//! layout as it learned its own at init.

use crate::codec::{ByteObject, Encoder, Info, PData, Proc, Size, RANK_WILDCARD};
use crate::error::{Error, Result};
use crate::proto::keys;
use crate::proto::status::Status;

use super::modex::{FenceStep, ProcKey, Waiter};
use super::peer::PeerInfo;
use super::state::Server;

/// Most keys published at once in the whole DVM.
const MAX_PUBLISHED: usize = 65_536;

/// The fence table's name for a connect (or disconnect) over `procs`: the
/// participants after a marker no namespace can be, so a fence over the
/// same processes is another collective.
fn collective_id(procs: &[Proc], disconnect: bool, peer: &PeerInfo) -> Vec<ProcKey> {
    let mut id: Vec<ProcKey> = procs.iter().map(|p| (p.nspace.clone(), p.rank)).collect();
    if id.is_empty() {
        id.push((peer.nspace().to_string(), RANK_WILDCARD));
    }
    id.sort();
    id.dedup();
    let marker = if disconnect {
        "\0disconnect"
    } else {
        "\0connect"
    };
    id.insert(0, (marker.to_string(), 0));
    id
}

impl Server {
    /// `PMIX_PUBLISHNB_CMD`: store the caller's keys (directives such as
    /// range and persistence are not keys); an existing key is refused
    /// `PMIX_ERR_DUPLICATE_KEY`. Waiting lookups may now be answered.
    pub(crate) fn on_publish(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        info: Vec<Info>,
    ) -> Result<()> {
        let owner = Proc {
            nspace: peer.nspace().to_string(),
            rank: peer.name.wire_rank(),
        };
        let data: Vec<Info> = info
            .into_iter()
            .filter(|i| !i.key.starts_with("pmix."))
            .collect();
        if data
            .iter()
            .any(|i| self.published.data.contains_key(&i.key))
        {
            return Err(Error::new(
                Status::ERR_DUPLICATE_KEY,
                "key already published",
            ));
        }
        if self.published.data.len() + data.len() > MAX_PUBLISHED {
            return Err(Error::new(
                Status::ERR_OUT_OF_RESOURCE,
                "too many published keys",
            ));
        }
        for i in data {
            self.published.data.insert(
                i.key.clone(),
                PData {
                    proc: owner.clone(),
                    key: i.key,
                    value: i.value,
                },
            );
        }
        self.reply_status(conn, tag, Status::SUCCESS);
        let waiting = std::mem::take(&mut self.published.waiting);
        for (w, keys) in waiting {
            match self.published.all(&keys) {
                Some(found) => self.reply_lookup(w, &found),
                None => self.published.waiting.push((w, keys)),
            }
        }
        Ok(())
    }

    /// `PMIX_LOOKUPNB_CMD`: the values of `keys`; those not published are
    /// `PMIX_ERR_NOT_FOUND` unless `PMIX_WAIT` asks to wait for them.
    pub(crate) fn on_lookup(
        &mut self,
        conn: u64,
        tag: u32,
        keys: Vec<String>,
        info: Vec<Info>,
    ) -> Result<()> {
        let w = Waiter { conn, tag };
        if let Some(found) = self.published.all(&keys) {
            self.reply_lookup(w, &found);
        } else if info.iter().any(|i| i.key == keys::WAIT) {
            self.published.waiting.push((w, keys));
        } else {
            self.reply_status(conn, tag, Status::ERR_NOT_FOUND);
        }
        Ok(())
    }

    /// `PMIX_UNPUBLISHNB_CMD`: withdraw the caller's `keys` (none: all).
    pub(crate) fn on_unpublish(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        keys: Vec<String>,
    ) -> Result<()> {
        let (ns, rank) = (peer.nspace(), peer.name.wire_rank());
        self.published.data.retain(|k, d| {
            !(d.proc.nspace == ns && d.proc.rank == rank && (keys.is_empty() || keys.contains(k)))
        });
        self.reply_status(conn, tag, Status::SUCCESS);
        Ok(())
    }

    fn reply_lookup(&mut self, w: Waiter, found: &[PData]) {
        let Some(c) = self.conns.get(w.conn) else {
            return;
        };
        let mut e = c.encoder();
        let packed = e
            .pack_one(&Status::SUCCESS)
            .and_then(|_| e.pack_one(&Size(found.len() as u64)))
            .and_then(|_| found.iter().try_for_each(|d| e.pack_one(d)));
        if packed.is_ok() {
            let bytes = e.into_bytes();
            self.send(w.conn, w.tag, &bytes);
        }
    }

    /// `PMIX_CONNECTNB_CMD` / `PMIX_DISCONNECTNB_CMD`: when every process
    /// named has entered, all are released; a connect's answer carries the
    /// job data of each namespace named.
    pub(crate) fn on_pmix_connect(
        &mut self,
        conn: u64,
        tag: u32,
        peer: &PeerInfo,
        procs: Vec<Proc>,
        disconnect: bool,
    ) -> Result<()> {
        let id = collective_id(&procs, disconnect, peer);
        let need = self.fence_members(&id[1..])?;
        if need.iter().any(|p| self.proc_has_ended(p)) {
            self.reply_status(conn, tag, Status::ERR_PROC_ABORTED);
            return Ok(());
        }
        let who = (peer.nspace().to_string(), peer.name.wire_rank());
        let nspaces: Vec<String> = id[1..].iter().map(|(ns, _)| ns.clone()).collect();
        let w = Waiter { conn, tag };
        if let FenceStep::Complete(all) = self.modex.enter_fence(id, need, who, w) {
            for w in all {
                if disconnect {
                    self.reply_status(w.conn, w.tag, Status::SUCCESS);
                } else {
                    self.reply_connected(w, &nspaces)?;
                }
            }
        }
        Ok(())
    }

    /// The connect's answer: success, then per namespace a byte object of
    /// its name and job data (as at init).
    fn reply_connected(&mut self, w: Waiter, nspaces: &[String]) -> Result<()> {
        let Some(c) = self.conns.get(w.conn) else {
            return Ok(());
        };
        let mut e = c.encoder();
        e.pack_one(&Status::SUCCESS)?;
        let mut last = None;
        for ns in nspaces {
            if last == Some(ns) {
                continue;
            }
            last = Some(ns);
            let Some(j) = self.jobs.get(ns) else { continue };
            let mut blob = Encoder::like(&e);
            blob.pack_one(ns)?;
            j.layout.encode(&mut blob)?;
            e.pack_one(&ByteObject(blob.into_bytes()))?;
        }
        let bytes = e.into_bytes();
        self.send(w.conn, w.tag, &bytes);
        Ok(())
    }
}

//! `pspawn --target A` from a tool outside A's owner set. pdvm refuses it
//! (spec 001 §8.2.1.7: only the reservation's owners spawn into it, exit
//! 6); PRRTE master launches it. psched knows each grant's owner
//! ([`crate::app::status_sched`]), so where it answers, pspawn refuses the same
//! spawn itself, before anything runs. It can tell only for a tool that
//! speaks to the DVM directly (a palloc holder speaks as the owner; a job's
//! own process may belong to the owner set through its job, which psched
//! does not see).

use crate::cli::exit::Exit;
use crate::conn::Identity;
use crate::ops::status_query::Want;
use crate::ops::Session;
use crate::proto::status::Status;

use crate::app::Failure;

/// Refuse a spawn into any of `targets` that psched holds for an owner
/// other than this tool.
pub(crate) fn refuse_foreign(s: &Session, targets: &[String]) -> Result<(), Failure> {
    let direct_tool = s.conn().target().holder_of.is_none()
        && !matches!(s.conn().identity(), Identity::Client { .. });
    if targets.iter().all(String::is_empty) || !direct_tool {
        return Ok(());
    }
    let want = Want {
        reservations: true,
        ..Want::default()
    };
    let Some(a) = crate::app::status_sched::ask_scheduler(s, &want) else {
        return Ok(());
    };
    let Some(Ok(grants)) = a.reservations else {
        return Ok(());
    };
    let me = s.me().0;
    let foreign = grants.iter().find(|g| {
        targets.contains(&g.alloc_id)
            && !g.share
            && !g.owner_nspace.is_empty()
            && g.owner_nspace != me
            && !g.owners.contains(&me)
    });
    match foreign {
        None => Ok(()),
        Some(g) => Err(Failure::with(
            Exit::NoPermission,
            Some(Status::ERR_NO_PERMISSIONS),
            format!(
                "spawn refused: allocation {} is reserved for {}, and this pspawn (tool {me}) is \
not of its owner set (PMIX_ERR_NO_PERMISSIONS, spec 001 §8.2.1.7, as psched granted it; PRRTE \
master does not check it); nothing was launched. Hint: run pspawn from the palloc holding {} \
(its command or shell), or from another shell without --as-tool so that it goes through that palloc",
                g.alloc_id, g.owner_nspace, g.alloc_id
            ),
        )),
    }
}

//! A grant for a node count that holds no node is not a success: PRRTE
//! master without a scheduler attached answers `palloc -N 1` with an empty
//! reservation (its reply never lists nodes, so the DVM's own view is
//! asked). palloc gives the empty reservation back and says which part is
//! missing.

use crate::cli::exit::Exit;
use crate::cli::request::AllocAsk;
use crate::codec::Info;
use crate::ops::alloc::allocate;
use crate::ops::status_query::{status, Want};
use crate::ops::Session;
use crate::proto::{keys, Directive, Status};
use crate::render::AllocationRecord;

use super::Failure;

/// The nodes the DVM's view of `alloc_id` holds; `None` when it does not
/// say (no reservation query, or the id is not listed).
fn nodes_of(s: &Session, alloc_id: &str) -> Option<Vec<String>> {
    let want = Want {
        reservations: true,
        ..Default::default()
    };
    let list = status(s, want).reservations?.ok()?;
    list.into_iter()
        .find(|r| r.alloc_id == alloc_id)
        .map(|r| r.nodes)
}

/// What the DVM says of a granted reservation's nodes, asked at most once:
/// the empty-grant check and the readiness probe both read it, and the
/// query is several round trips.
pub(crate) struct GrantView<'a> {
    s: &'a Session,
    alloc_id: &'a str,
    nodes: std::cell::OnceCell<Option<Vec<String>>>,
}

impl<'a> GrantView<'a> {
    /// The view of reservation `alloc_id` through `s`; nothing asked yet.
    pub(crate) fn new(s: &'a Session, alloc_id: &'a str) -> GrantView<'a> {
        GrantView {
            s,
            alloc_id,
            nodes: std::cell::OnceCell::new(),
        }
    }

    /// The reservation's nodes as the DVM lists them (asked the first
    /// time); `None` when it does not say.
    pub(crate) fn nodes(&self) -> Option<&[String]> {
        self.nodes
            .get_or_init(|| nodes_of(self.s, self.alloc_id))
            .as_deref()
    }

    /// Whether the reservation holds no node; `None` when the DVM does not
    /// say.
    pub(crate) fn holds_no_node(&self) -> Option<bool> {
        self.nodes().map(<[String]>::is_empty)
    }
}

/// For a NEW request with `-N`, a grant with no node (as `view` has it):
/// release it and return the failure naming the missing scheduler.
pub(crate) fn refuse_empty_grant(
    s: &Session,
    req: &AllocAsk,
    rec: &AllocationRecord,
    view: &GrantView<'_>,
) -> Option<Failure> {
    let asked = req.attrs.num_nodes.filter(|n| *n > 0)?;
    if req.directive != Directive::New || !rec.nodes.is_empty() {
        return None;
    }
    if view.holds_no_node() != Some(true) {
        return None;
    }
    let given_back = give_back(s, &rec.alloc_id);
    Some(Failure::with(
        Exit::NotSupported,
        Some(Status::ERR_NOT_SUPPORTED),
        format!(
            "the DVM granted allocation {} with no node for -N {asked}: no scheduler is \
attached to it to supply nodes ({given_back}; nothing was run). Attach a PMIx scheduler \
(PRRTE: --prtemca ras_pmix_system_scheduler 1), or reserve nodes of the DVM by name with \
`palloc -w HOST`",
            rec.alloc_id
        ),
    ))
}

/// Release allocation `id` that palloc will not use; what happened, for
/// the sentence that says why.
pub(crate) fn give_back(s: &Session, id: &str) -> String {
    let release = [Info::new(keys::ALLOC_ID, id)];
    match allocate(s, Directive::Release, &release) {
        Ok(_) => "it was given back".to_string(),
        Err(e) => format!("giving it back was refused ({e}); `prelease {id}`"),
    }
}

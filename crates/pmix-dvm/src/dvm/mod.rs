//! pdvm's session and reservation model, as plain logic with injected time.
//!
//! The model implements the node-reservation contract
//! (`spec/001`, §8.2.1.4–8.2.1.11) and allocation inheritance (`spec/000`,
//! §6.5.1.2–6.5.1.5) with no sockets, processes or threads: a server drives it
//! through [`Dvm::allocate`], [`Dvm::plan_spawn`]/[`Dvm::commit_spawn`],
//! [`Dvm::job_terminated`], [`Dvm::tool_connected`]/[`Dvm::tool_disconnected`],
//! [`Dvm::advance`] and [`Dvm::teardown`], and carries out the returned
//! [`Effect`]s (kill a job, relay a warning, answer a queued request…).
//!
//! The scheduler ([`crate::sched::Scheduler`]) is a separate value passed in
//! by the caller: the DVM forwards requests to it and relays what it reports;
//! it never decides time-outs itself.
//!
//! Decisions where the spec leaves room:
//! - EXTEND, RELEASE and REQ_CANCEL are honoured only when the requester's
//!   own namespace is in the owner set (or it is the scheduler), whatever
//!   `PMIX_ALLOC_TARGET` names: TARGET says whose reservation it is, not who
//!   is asking (§8.2.1.5.1, §8.2.1.9.1).
//! - `PMIX_ALLOC_TARGET` on any directive from an application is refused
//!   (§8.2.1.8 row 1 applies to "an application request", whatever directive).
//! - `PMIX_ALLOC_REAQUIRE` is answered `PMIX_ERR_NOT_SUPPORTED`: pdvm never
//!   lends nodes back to the scheduler, so nothing can be reacquired.
//! - Compat mode (§8.2.1.10) accepts an explicit `PMIX_ALLOC_INHERIT_DEFAULT`
//!   (it is the default, so honouring it misleads no one) and refuses the
//!   other three with `PMIX_ERR_NOT_SUPPORTED`.
//! - A shared allocation gets its own alloc id (for release and lifecycle);
//!   as a spawn target it resolves to the default session, where its nodes are.
//! - EXTEND keeps the original request id for warnings but moves the warning
//!   recipient to the EXTEND requester; an EXTEND carrying
//!   `PMIX_ALLOC_INHERITANCE` replaces the recorded disposition. Both happen
//!   only when the EXTEND is granted: a queued EXTEND that is cancelled
//!   leaves nothing behind. When the owning namespace has already ended, a
//!   disposition set by EXTEND is settled at once (a draining CHILD
//!   reservation switched to NONE/DEFAULT ends then, not never).
//! - An EXTEND that leaves the deadline where it was does not deliver again
//!   a warning already delivered for that deadline.
//! - `PMIX_ALLOC_REQ_CANCEL` naming nothing cancels every queued request
//!   (NEW or EXTEND) sent by the requester's namespace; naming the request
//!   id of a queued EXTEND cancels that EXTEND alone (RFC 002).
//! - An inheritance value outside 1..=4 is `PMIX_ERR_BAD_PARAM` in both
//!   modes; compat mode refuses valid non-default ones as NOT_SUPPORTED.
//! - EXTEND of a still-queued allocation is refused with
//!   `PMIX_ERR_RESOURCE_BUSY`.
//! - A reservation whose owning namespace has already ended when it is granted
//!   gets its disposition applied at once.

mod alloc;
mod error;
mod jobs;
mod lifecycle;
mod model;
mod names;
mod query;
mod spawn;
mod types;

pub use alloc::AllocRequest;
pub use error::{DvmError, Rule};
pub use model::{Dvm, DvmConfig, JOB_HISTORY};
pub use query::{JobView, NodeView, Snapshot};
pub use spawn::{AppAsk, MapBy, MapPolicy, Placement, ProcSlot, MAX_PROCS};
pub use types::{
    AllocAttrs, AllocOutcome, AllocStatus, Effect, EndHow, EndWhy, Requester, RequesterClass,
};

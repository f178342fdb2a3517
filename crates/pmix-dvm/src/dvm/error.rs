//! Typed refusals of the DVM model, each tied to the rule that produced it.

use crate::proto::Status;

/// The rule a refusal applies: the spec clause and the row text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// §8.2.1.8 row 1.
    AppTarget,
    /// §8.2.1.8 row 2.
    ExtendNotOwner,
    /// §8.2.1.8 row 3.
    ExtendNotFound,
    /// §8.2.1.8 row 4.
    ExtendNoId,
    /// §8.2.1.8 row 5.
    SpawnTargetNotFound,
    /// §8.2.1.8 row 6.
    SpawnTargetNotOwner,
    /// §8.2.1.8 row 7 (compat mode: only DEFAULT is known).
    InheritNotSupported,
    /// §6.5.1.2: inheritance value outside 1..=4.
    InheritInvalid,
    /// Directive outside 1..=5.
    BadDirective,
    /// §8.2.1.9.1 trigger 1: RELEASE names no allocation.
    ReleaseNoId,
    /// §8.2.1.9.1 trigger 1: RELEASE names an unknown allocation.
    ReleaseNotFound,
    /// §8.2.1.9.1 trigger 1: RELEASE by a non-owner.
    ReleaseNotOwner,
    /// Partial release names nodes or a count the allocation does not hold.
    ReleaseBadPart,
    /// REQ_CANCEL names no request.
    CancelNoId,
    /// REQ_CANCEL names nothing that is queued.
    CancelNotFound,
    /// REQ_CANCEL by a non-owner.
    CancelNotOwner,
    /// REAQUIRE: nothing is ever lent in this DVM.
    ReacquireNotSupported,
    /// NEW asks for no nodes.
    NoNodes,
    /// NUM_NODES and NODE_LIST disagree.
    CountListMismatch,
    /// A node list names a node the scheduler does not manage.
    UnknownNode,
    /// A node is listed twice, or both listed and excluded.
    DuplicateNode,
    /// More nodes than the scheduler could ever grant.
    TooManyNodes,
    /// ALLOC_TIME of zero seconds.
    ZeroTime,
    /// EXTEND of an allocation still waiting in the queue.
    ExtendQueued,
    /// The spawn's candidate pool has no slot at all.
    SpawnNoSlots,
    /// The spawn asks for no process.
    SpawnNoProcs,
    /// The spawn asks for more processes than one job may have.
    SpawnTooManyProcs,
    /// The namespace is already known.
    NamespaceExists,
    /// The namespace is not known.
    UnknownNamespace,
    /// PMIX_ALLOC_NUM_CPUS beyond the slots of the nodes asked for.
    TooManyCpus,
    /// PMIX_ALLOC_MEM_SIZE beyond one node's memory.
    TooMuchMemory,
    /// PMIX_HOST names no node of the DVM.
    SpawnUnknownHost,
    /// PMIX_HOST names nodes outside the job's candidate pool.
    SpawnHostOutsidePool,
    /// PMIX_MAPBY is no mapping policy.
    MapByInvalid,
    /// PMIX_MAPBY names a policy pdvm does not model.
    MapByNotModelled,
    /// More processes than the candidate nodes have slots.
    SpawnNotEnoughSlots,
}

impl Rule {
    /// The spec clause and the row or rule text.
    pub fn text(self) -> &'static str {
        match self {
            Rule::AppTarget => "§8.2.1.8 row 1: application request carries PMIX_ALLOC_TARGET",
            Rule::ExtendNotOwner => "§8.2.1.8 row 2: PMIX_ALLOC_EXTEND names an allocation the requester does not own",
            Rule::ExtendNotFound => "§8.2.1.8 row 3: PMIX_ALLOC_EXTEND names an allocation that does not exist",
            Rule::ExtendNoId => "§8.2.1.8 row 4: PMIX_ALLOC_EXTEND carries neither PMIX_ALLOC_ID nor PMIX_ALLOC_REQ_ID to name its target",
            Rule::SpawnTargetNotFound => "§8.2.1.8 row 5: PMIX_SPAWN_TARGET names an allocation that resolves to no session",
            Rule::SpawnTargetNotOwner => "§8.2.1.8 row 6: PMIX_SPAWN_TARGET names a session the requester does not own",
            Rule::InheritNotSupported => "§8.2.1.8 row 7: PMIX_ALLOC_INHERITANCE carries a non-default value the host does not support (§8.2.1.10 compat mode)",
            Rule::InheritInvalid => "§6.5.1.2: PMIX_ALLOC_INHERITANCE must be NONE(1), CHILD(2), DEFAULT(3) or CHILD_DEFAULT(4)",
            Rule::BadDirective => "§8.2.1.5: the allocation directive must be NEW(1), EXTEND(2), RELEASE(3), REAQUIRE(4) or REQ_CANCEL(5)",
            Rule::ReleaseNoId => "§8.2.1.9.1 trigger 1: PMIX_ALLOC_RELEASE carries neither PMIX_ALLOC_ID nor PMIX_ALLOC_REQ_ID",
            Rule::ReleaseNotFound => "§8.2.1.9.1 trigger 1: PMIX_ALLOC_RELEASE names an allocation that does not exist",
            Rule::ReleaseNotOwner => "§8.2.1.9.1 trigger 1: only a namespace in the owner set (or the scheduler) may release a reservation",
            Rule::ReleaseBadPart => "§8.2.1.9.1 trigger 1: a partial release must name nodes (or a count) the allocation holds",
            Rule::CancelNoId => "PMIX_ALLOC_REQ_CANCEL carries neither PMIX_ALLOC_ID nor PMIX_ALLOC_REQ_ID",
            Rule::CancelNotFound => "PMIX_ALLOC_REQ_CANCEL names no queued request",
            Rule::CancelNotOwner => "§8.2.1.7: only a namespace in the owner set (or the scheduler) may cancel a queued request",
            Rule::ReacquireNotSupported => "PMIX_ALLOC_REAQUIRE: pdvm never lends resources back, so there is nothing to reacquire",
            Rule::NoNodes => "PMIX_ALLOC_NEW asks for no nodes (give PMIX_ALLOC_NUM_NODES or PMIX_ALLOC_NODE_LIST)",
            Rule::CountListMismatch => "PMIX_ALLOC_NUM_NODES disagrees with the length of PMIX_ALLOC_NODE_LIST",
            Rule::UnknownNode => "PMIX_ALLOC_NODE_LIST names a node the scheduler does not manage",
            Rule::DuplicateNode => "PMIX_ALLOC_NODE_LIST names a node twice, or a node also in PMIX_ALLOC_EXCLUDE",
            Rule::TooManyNodes => "PMIX_ALLOC_NUM_NODES exceeds every node the scheduler could ever grant",
            Rule::ZeroTime => "PMIX_ALLOC_TIME of zero seconds",
            Rule::ExtendQueued => "PMIX_ALLOC_EXTEND names an allocation that is still queued (cancel it or wait for the grant)",
            Rule::SpawnNoSlots => "§8.2.1.6: the job's candidate pool (the union of its targeted sessions) has no slot",
            Rule::SpawnNoProcs => "a spawn must ask for at least one process",
            Rule::SpawnTooManyProcs => "a spawn may ask for at most 1,048,576 processes per job",
            Rule::NamespaceExists => "a namespace maps to exactly one job and is never reused",
            Rule::UnknownNamespace => "the namespace is not known to the DVM",
            Rule::TooManyCpus => "PMIX_ALLOC_NUM_CPUS exceeds the CPUs of the nodes asked for (a pdvm node has one CPU per slot)",
            Rule::TooMuchMemory => "PMIX_ALLOC_MEM_SIZE exceeds the memory of one node (a pdvm node has 4096 MB per slot)",
            Rule::SpawnUnknownHost => "PMIX_HOST names a node the DVM does not have",
            Rule::SpawnHostOutsidePool => "§8.2.1.6: PMIX_HOST names only nodes outside the job's candidate pool (target their reservation)",
            Rule::MapByInvalid => "PMIX_MAPBY is not a mapping policy (pdvm knows slot, node, ppr:N:node, core, hwthread; modifiers OVERSUBSCRIBE, NOOVERSUBSCRIBE)",
            Rule::MapByNotModelled => "PMIX_MAPBY names a policy pdvm does not model (it models nodes and slots: slot, node, ppr:N:node, core, hwthread)",
            Rule::SpawnNotEnoughSlots => "the job has more processes than its candidate nodes have slots (add :OVERSUBSCRIBE to the mapping policy to allow it)",
        }
    }
}

/// A refusal by the DVM model. Every variant maps to a PMIx status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DvmError {
    /// `PMIX_ERR_NO_PERMISSIONS`.
    NoPermissions(Rule),
    /// `PMIX_ERR_NOT_FOUND`.
    NotFound(Rule),
    /// `PMIX_ERR_BAD_PARAM`.
    BadParam(Rule),
    /// `PMIX_ERR_NOT_SUPPORTED`.
    NotSupported(Rule),
    /// `PMIX_ERR_OUT_OF_RESOURCE`.
    OutOfResource(Rule),
    /// `PMIX_ERR_RESOURCE_BUSY`.
    ResourceBusy(Rule),
    /// `PMIX_ERR_EXISTS`.
    Exists(Rule),
    /// `PMIX_ERR_JOB_FAILED_TO_MAP`.
    FailedToMap(Rule),
}

impl DvmError {
    /// The PMIx status this refusal answers with.
    pub fn status(&self) -> Status {
        match self {
            DvmError::NoPermissions(_) => Status::ERR_NO_PERMISSIONS,
            DvmError::NotFound(_) => Status::ERR_NOT_FOUND,
            DvmError::BadParam(_) => Status::ERR_BAD_PARAM,
            DvmError::NotSupported(_) => Status::ERR_NOT_SUPPORTED,
            DvmError::OutOfResource(_) => Status::ERR_OUT_OF_RESOURCE,
            DvmError::ResourceBusy(_) => Status::ERR_RESOURCE_BUSY,
            DvmError::Exists(_) => Status::ERR_EXISTS,
            DvmError::FailedToMap(_) => Status::ERR_JOB_FAILED_TO_MAP,
        }
    }

    /// The rule that applies.
    pub fn rule_id(&self) -> Rule {
        match *self {
            DvmError::NoPermissions(r)
            | DvmError::NotFound(r)
            | DvmError::BadParam(r)
            | DvmError::NotSupported(r)
            | DvmError::OutOfResource(r)
            | DvmError::ResourceBusy(r)
            | DvmError::Exists(r)
            | DvmError::FailedToMap(r) => r,
        }
    }

    /// The spec clause and row text of the rule that applies.
    pub fn rule(&self) -> &'static str {
        self.rule_id().text()
    }
}

/// `PMIX_ERR_…: rule text`, as pdvm logs and answers it.
impl std::fmt::Display for DvmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status().name(), self.rule())
    }
}

impl std::error::Error for DvmError {}

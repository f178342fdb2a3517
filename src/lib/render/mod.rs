//! Output for the tools: JSON lines ([`json`], [`events`]) whose field names
//! are the documented contract ([`records`]), comfy-table tables ([`table`])
//! and short human sentences ([`human`]).

pub(crate) mod events;
pub(crate) mod human;
pub(crate) mod json;
/// The records, from the schema layer ([`crate::schema::records`]).
pub(crate) use crate::schema::records;
pub(crate) mod table;

pub use events::EventWriter;
pub use records::{
    AllocationRecord, ArrayTaskRecord, BatchRecord, BatchState, BatchStop, ErrorRecord,
    EventRecord, ExitRecord, JobRecord, NamespaceRecord, NodeRecord, OutputRecord, QueueRecord,
    Record, ReleaseRecord, RequestRecord, ReservationRecord, ReservationState, StatusRecord,
};

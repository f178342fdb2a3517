//! Output for the tools: JSON lines ([`json`], [`events`]) whose field names
//! are the documented contract ([`records`]), comfy-table tables ([`table`])
//! and short human sentences ([`human`]).

pub mod events;
pub mod human;
pub mod json;
pub mod records;
pub mod table;

pub use events::EventWriter;
pub use records::{
    AllocationRecord, ErrorRecord, EventRecord, ExitRecord, JobRecord, NamespaceRecord, NodeRecord,
    OutputRecord, QueueRecord, Record, ReleaseRecord, RequestRecord, ReservationRecord,
    ReservationState, StatusRecord,
};

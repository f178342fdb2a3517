//! The PMIx vocabulary, once: attribute keys, command codes, data scopes, allocation
//! directives, inheritance rules, and status / event codes with their names.
//! It depends on nothing else in the crate: the codec and everything above
//! it build on it.
//!
//! Everything above the codec speaks these types: the client
//! (`conn`, `ops`), pdvm (`server`, `dvm`,
//! `sched`), the flags (`cli`) and the output
//! (`render`). A new PMIx attribute is added here first (see
//! `ARCHITECTURE.md`).

pub mod alloc;
pub mod cmd;
pub mod directive;
pub mod end_cause;
#[doc(hidden)]
pub mod enums;
pub(crate) mod inherit;
pub mod keys;
pub mod proc_state;
pub mod range;
pub mod scope;
pub mod status;
pub(crate) mod version;

pub use alloc::{AllocAttrs, RmOptions};
pub use directive::Directive;
pub use end_cause::SessionEndCause;
pub use enums::Received;
pub use inherit::{parse_inheritance, Inheritance, INHERIT_FORMS};
pub use status::Status;
pub use version::PmixVersion;

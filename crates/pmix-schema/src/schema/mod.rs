//! The typed records: what the tools show (one record per thing shown, with
//! its documented JSON fields) and what a status query carries, with its
//! wire form. Built on the vocabulary ([`crate::proto`]) and the codec; the
//! operations, pdvm's model and server, and the rendering all use these
//! types, so each thing has one definition.

pub mod records;
pub mod status;

//! Spec-001 (§8.2.1.4–8.2.1.11) and spec-000 (§6.5.1.2–6.5.1.5) conformance
//! suite: one black-box test per rule, each starting its own pdvm in a
//! private tmpdir and driving it only through the built binaries — tools run
//! from outside act as "tool" requesters, commands run inside pdvm's session
//! leader job act as the "application" requester.
//!
//! Test names follow the clause they check (`s8_2_1_8_extend_not_owner`);
//! docs/conformance.md maps every clause to its tests.

#[path = "../support/mod.rs"]
mod support;

mod prrte_master;
mod prrte_nodes;

mod s6_5_1_workflow;
mod s8_2_1_10_compat;
mod s8_2_1_11_summary;
mod s8_2_1_5_allocation;
mod s8_2_1_6_targeting;
mod s8_2_1_7_ownership;
mod s8_2_1_8_errors;
mod s8_2_1_9_5_warning;
mod s8_2_1_9_lifecycle;
mod s8_2_1_hostile;

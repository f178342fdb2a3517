//! The integration tests: one crate, one module per area (see
//! tests/README.md). Every module reaches the shared harness as
//! `crate::support` (tests/support/); tests that need a real peer fail when
//! it is missing (scripts/install-peers.sh installs them).

#[path = "../support/mod.rs"]
mod support;

mod cli_parse;
mod cli_robust;
mod client_decode_proptest;
mod client_hardening;
mod codec_budget;
mod codec_golden;
mod codec_malformed;
mod codec_proptest;
mod conn_faults;
mod discover_crowded;
mod docs_current;
mod dvm_model_genealogy;
mod dvm_model_rules;
mod dvm_model_sched;
mod end_causes;
mod habits;
mod holder_batch;
mod holder_cancel;
mod holder_death;
mod holder_failure;
mod holder_housekeeping;
mod holder_lifetime;
mod holder_orchestrator;
mod holder_owners;
mod holder_relay;
mod layers;
mod local_trust;
mod palloc_context;
mod parsers_proptest;
mod pdvm_events;
mod pdvm_flow;
mod pdvm_history;
mod pdvm_hostile;
mod pdvm_libpmix;
mod pdvm_lifecycle;
mod pdvm_master_tools;
mod pdvm_mpi;
mod pdvm_robust;
mod pdvm_terminal;
mod pdvm_timing;
mod peers_smoke;
mod pmix422_peer;
mod prte_wire;
mod psched_cancel;
mod psched_cluster;
mod psched_examples;
mod psched_hostile;
mod psched_load;
mod psched_rules;
mod psched_slurm;
mod psij_suite;
mod pspawn_array;
mod pspawn_busy_slots;
mod pspawn_nohang;
mod pspawn_output_files;
mod pspawn_paths;
mod pspawn_slurm;
mod pspawn_stdin_tasks;
mod pwatch_status;
mod server_backpressure;
mod server_decode_proptest;
mod server_identity;
mod server_pressure;
mod server_stale;
mod slurm_flags;
mod test_layout;
mod tools_cluster;
mod tools_master;
mod tools_prte;

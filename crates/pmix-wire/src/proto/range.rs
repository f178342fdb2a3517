//! `pmix_data_range_t`: who an event goes to (its wire codes).

/// `PMIX_RANGE_RM`: the resource manager (the DVM) only.
pub const RM: u8 = 1;
/// `PMIX_RANGE_NAMESPACE`: the source's namespace.
pub const NAMESPACE: u8 = 3;
/// `PMIX_RANGE_GLOBAL`: every process of the DVM.
pub const GLOBAL: u8 = 5;
/// `PMIX_RANGE_CUSTOM`: the processes its `PMIX_EVENT_CUSTOM_RANGE` names.
pub const CUSTOM: u8 = 6;
/// `PMIX_RANGE_PROC_LOCAL`: the source process only.
pub const PROC_LOCAL: u8 = 7;

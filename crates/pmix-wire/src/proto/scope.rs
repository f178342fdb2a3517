//! `pmix_scope_t`: who may see a value a process puts (its wire codes).

/// `PMIX_SCOPE_UNDEF`.
pub const UNDEF: u8 = 0;
/// `PMIX_LOCAL`: processes on the same node only.
pub const LOCAL: u8 = 1;
/// `PMIX_REMOTE`: processes on other nodes only.
pub const REMOTE: u8 = 2;
/// `PMIX_GLOBAL`: every process.
pub const GLOBAL: u8 = 3;

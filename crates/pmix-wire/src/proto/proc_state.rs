//! `pmix_proc_state_t`: a process's state as the DVM reports it (its wire
//! codes, OpenPMIx `pmix_common.h`).

/// `PMIX_PROC_STATE_RUNNING`: forked and running (a daemon that is up).
pub const RUNNING: u8 = 5;
/// `PMIX_PROC_STATE_UNTERMINATED`: every state below it is a live process.
pub const UNTERMINATED: u8 = 15;
/// `PMIX_PROC_STATE_TERMINATED`: no longer running (exited with status 0);
/// every state from here on is an end.
pub const TERMINATED: u8 = 20;
/// `PMIX_PROC_STATE_ERROR`: every state from here on is an abnormal end
/// (error, killed, aborted, failed to start, non-zero exit…).
pub const ERROR: u8 = 50;
/// `PMIX_PROC_STATE_FAILED_TO_START`: could not be started.
pub const FAILED_TO_START: u8 = 53;
/// `PMIX_PROC_STATE_TERM_NON_ZERO`: exited with a non-zero status.
pub const TERM_NON_ZERO: u8 = 62;

//! Command codes of the client/server protocol (first item of every request).

/// Ask for our job's data.
pub const REQ: u8 = 0;
/// `PMIX_ABORT_CMD`: a client asks for its job (or some processes) to end.
pub const ABORT: u8 = 1;
/// `PMIX_COMMIT_CMD`: a client hands over what it put.
pub const COMMIT: u8 = 2;
/// `PMIX_FENCENB_CMD`: a client enters a fence (barrier, data exchange).
pub const FENCE: u8 = 3;
/// `PMIX_GETNB_CMD`: a client asks for another process's data.
pub const GET: u8 = 4;
/// Finalize (orderly goodbye).
pub const FINALIZE: u8 = 5;
/// `PMIX_PUBLISHNB_CMD`: publish keys for others to look up.
pub const PUBLISH: u8 = 6;
/// `PMIX_LOOKUPNB_CMD`: look published keys up (perhaps waiting for them).
pub const LOOKUP: u8 = 7;
/// `PMIX_UNPUBLISHNB_CMD`: withdraw published keys.
pub const UNPUBLISH: u8 = 8;
/// Spawn a job.
pub const SPAWN: u8 = 9;
/// `PMIX_CONNECTNB_CMD`: processes of several namespaces connect.
pub const CONNECT: u8 = 10;
/// `PMIX_DISCONNECTNB_CMD`: connected processes disconnect.
pub const DISCONNECT: u8 = 11;
/// An event notification (server to client).
pub const NOTIFY: u8 = 12;
/// Register for events.
pub const REGEVENTS: u8 = 13;
/// Deregister events.
pub const DEREGEVENTS: u8 = 14;
/// Query.
pub const QUERY: u8 = 15;
/// Allocation request.
pub const ALLOC: u8 = 17;
/// Job control.
pub const JOB_CONTROL: u8 = 18;
/// `PMIX_SESSION_CTRL_CMD`: session control (either direction).
pub const SESSION_CTRL: u8 = 35;
/// Ask for forwarded output.
pub const IOF_PULL: u8 = 22;
/// Withdraw an earlier request for forwarded output.
pub const IOF_DEREG: u8 = 29;

/// What a request with command `code` is, for messages ("no answer from
/// the DVM to the allocation request after 30 s").
pub fn describe(code: u8) -> &'static str {
    match code {
        REQ => "the request for our job's data",
        FINALIZE => "our goodbye",
        SPAWN => "the spawn request",
        REGEVENTS => "the event registration",
        DEREGEVENTS => "the event deregistration",
        QUERY => "the query",
        ALLOC => "the allocation request",
        JOB_CONTROL => "the job-control request",
        IOF_PULL => "the output-forwarding request",
        IOF_DEREG => "the output-forwarding withdrawal",
        _ => "our request",
    }
}
/// `PMIX_IOF_PUSH_CMD`: push bytes to the stdin of processes.
pub const IOF_PUSH: u8 = 23;

/// The command's name as the PMIx headers spell it, for `-vv` traces.
pub fn name(code: u8) -> Option<&'static str> {
    Some(match code {
        REQ => "REQ",
        ABORT => "ABORT",
        COMMIT => "COMMIT",
        FENCE => "FENCENB",
        GET => "GETNB",
        FINALIZE => "FINALIZE",
        SPAWN => "SPAWN",
        NOTIFY => "NOTIFY",
        REGEVENTS => "REGEVENTS",
        DEREGEVENTS => "DEREGEVENTS",
        QUERY => "QUERY",
        ALLOC => "ALLOC",
        JOB_CONTROL => "JOB_CONTROL",
        IOF_PULL => "IOF_PULL",
        IOF_PUSH => "IOF_PUSH",
        IOF_DEREG => "IOF_DEREG",
        _ => return None,
    })
}

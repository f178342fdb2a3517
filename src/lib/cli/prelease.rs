//! `prelease`: give allocations back, cancel queued requests, reacquire.

use super::common::{ConnectArgs, OutputArgs};
use super::parse::{parse_count, parse_id, parse_nodelist_arg, parse_signal, NodeList};
use super::request::ReleaseRequest;
use crate::proto::Directive;
use clap::Parser;

const ABOUT: &str = "Release allocations, cancel queued requests, or reacquire released nodes";

const LONG_ABOUT: &str = "\
Release allocations (PMIX_ALLOC_RELEASE with PMIX_ALLOC_ID), wholly or in part \
(-N, -w), cancel a request the scheduler still queues (--cancel, \
PMIX_ALLOC_REQ_CANCEL), or reacquire a released allocation where the DVM \
supports it (--reacquire, PMIX_ALLOC_REAQUIRE).

Who may release (spec 001 §8.2.1.9.1): any namespace in the reservation's owner \
set — the namespace it was reserved for and every job spawned into it — and the \
scheduler. Inside a job, prelease acts for that job's namespace; outside any job \
it is a fresh tool namespace that owns nothing, so releasing someone's \
reservation from a plain shell is refused with PMIX_ERR_NO_PERMISSIONS (exit 6). \
An id that does not exist gives PMIX_ERR_NOT_FOUND (exit 5).

Several ids are released one by one, each through whatever holds it (the \
palloc of this user holding that id, in any shell); prelease reports each and \
exits with the first failure's code. As scancel takes any id, an id that is no \
allocation may be a request id (a queued request is withdrawn, a granted one \
released) or a running job's namespace (the job is cancelled: its processes \
are terminated; on PRRTE master, whose PMIX_JOB_CTRL_TERMINATE stops only the \
whole DVM, with PMIX_JOB_CTRL_KILL of the job's processes). `--cancel REQ_ID` of \
a request already granted releases what was granted, as scancel ends a running \
job: the script of `palloc --no-wait -- SCRIPT` is then stopped.

Output: one line per id on stdout; --json prints ONE JSON document: the \
release object for one id, or for several a `releases` object whose \
`results` lists them, with the overall `exit_code`.";

const AFTER_HELP: &str = "\
EXIT STATUS:
  0 all released   2 usage error   3 cannot connect   4 refused
  5 not found (PMIX_ERR_NOT_FOUND)   6 not yours (PMIX_ERR_NO_PERMISSIONS)
  7 not supported by this DVM   8 timed out   130 interrupted (SIGINT)
  143 ended by SIGTERM   1 other error

EXAMPLES:
  prelease alloc.3 alloc.4
  prelease --request-id nightly
  prelease alloc.3 -w node07          give back one node
  prelease --cancel nightly           withdraw a queued request
  prelease prte-vm-1@4                cancel a running job";

/// `prelease` flags.
#[derive(Debug, Clone, Parser)]
#[command(name = "prelease", version, args_override_self = true, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct PreleaseArgs {
    /// Allocation ids to release.
    #[arg(value_name = "ALLOC_ID", value_parser = parse_id)]
    pub alloc_ids: Vec<String>,

    /// Release the allocation requested under this request id (repeatable or
    /// comma-separated).
    #[arg(long, value_name = "REQ_ID", value_delimiter = ',', value_parser = parse_id)]
    pub request_id: Vec<String>,

    /// Release only this many nodes of the allocation (partial release).
    #[arg(short = 'N', long, value_name = "N", value_parser = parse_count, conflicts_with_all = ["cancel", "reacquire"])]
    pub nodes: Option<u64>,

    /// Release only these nodes, e.g. `node[07-08]` or file:PATH (partial release).
    #[arg(short = 'w', long, value_name = "LIST", value_parser = parse_nodelist_arg, conflicts_with_all = ["cancel", "reacquire"])]
    pub nodelist: Option<NodeList>,

    /// Cancel the queued request with this request id (PMIX_ALLOC_REQ_CANCEL); once granted,
    /// release what was granted.
    #[arg(long, value_name = "REQ_ID", value_parser = parse_id, conflicts_with_all = ["alloc_ids", "request_id", "reacquire"])]
    pub cancel: Option<String>,

    /// Reacquire this released allocation (PMIX_ALLOC_REAQUIRE).
    #[arg(long, value_name = "ALLOC_ID", value_parser = parse_id, conflicts_with_all = ["alloc_ids", "request_id"])]
    pub reacquire: Option<String>,

    /// Send this signal to every process of the jobs named (their
    /// namespaces, as `pspawn --detach` prints them) instead of ending them,
    /// as `scancel --signal` does: a name (USR1, SIGTERM) or a number.
    #[arg(long, value_name = "SIG", value_parser = parse_signal, conflicts_with_all = ["cancel", "reacquire", "request_id", "nodes", "nodelist"])]
    pub signal: Option<nix::sys::signal::Signal>,

    /// How to reach the DVM (the OpenPMIx connection flags).
    #[command(flatten)]
    pub connect: ConnectArgs,

    /// Output format and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl PreleaseArgs {
    /// Checks spanning several flags; an error means exit 2 before connecting.
    pub fn validate(&self) -> Result<(), String> {
        let targets = self.alloc_ids.len() + self.request_id.len();
        if targets == 0 && self.cancel.is_none() && self.reacquire.is_none() {
            return Err(
                "nothing to do: name allocation ids (prelease ALLOC_ID…), --request-id REQ_ID, \
--cancel REQ_ID or --reacquire ALLOC_ID"
                    .into(),
            );
        }
        if (self.nodes.is_some() || self.nodelist.is_some()) && targets != 1 {
            return Err(
                "a partial release (-N/-w) applies to exactly one allocation: name one ALLOC_ID \
or one --request-id"
                    .into(),
            );
        }
        Ok(())
    }

    /// The requests to send, in order.
    pub fn requests(&self) -> Vec<ReleaseRequest> {
        if let Some(r) = &self.cancel {
            return vec![ReleaseRequest {
                directive: Directive::ReqCancel,
                request_id: Some(r.clone()),
                ..Default::default()
            }];
        }
        if let Some(a) = &self.reacquire {
            return vec![ReleaseRequest {
                directive: Directive::Reaquire,
                alloc_id: Some(a.clone()),
                ..Default::default()
            }];
        }
        let partial = |alloc_id: Option<String>, request_id: Option<String>| ReleaseRequest {
            directive: Directive::Release,
            alloc_id,
            request_id,
            nodes: self.nodes,
            nodelist: self.nodelist.clone().unwrap_or_default().0,
        };
        self.alloc_ids
            .iter()
            .map(|a| partial(Some(a.clone()), None))
            .chain(
                self.request_id
                    .iter()
                    .map(|r| partial(None, Some(r.clone()))),
            )
            .collect()
    }
}

//! PMIx status and event codes.
//!
//! [`Status`] wraps the `pmix_status_t` integer carried on the wire. A
//! constant exists for every status/event code of OpenPMIx v5.0.11 and
//! master (`pmix_common.h.in`), spelled as in the header minus the `PMIX_`
//! prefix, plus the deprecated names from `pmix_deprecated.h` as aliases.

use std::fmt;

/// A PMIx status or event code (`pmix_status_t`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize)]
pub struct Status(pub i32);

/// Declares status constants (`doc` prefixes each one's doc) and their
/// (name, code) table `$table`.
macro_rules! status_codes {
    ($table:ident, $doc:literal, $table_doc:literal; $($name:ident = $val:expr,)*) => {
        impl Status {
            $(
                #[doc = concat!($doc, "`PMIX_", stringify!($name), "` (", stringify!($val), ").")]
                pub const $name: Status = Status($val);
            )*
        }
        #[doc = $table_doc]
        const $table: &[(&str, i32)] = &[$((concat!("PMIX_", stringify!($name)), $val),)*];
    };
}

/// Declares the canonical status constants and the name table.
macro_rules! status_table {
    ($($body:tt)*) => {
        status_codes!(CANONICAL, "", "Canonical (name, code) pairs, in header order of value."; $($body)*);
    };
}

/// Declares deprecated alias constants and their name table.
macro_rules! status_aliases {
    ($($body:tt)*) => {
        status_codes!(
            ALIASES,
            "Deprecated ",
            "Deprecated (name, code) pairs whose names are not canonical.";
            $($body)*
        );
    };
}

include!("status/table.rs");

impl Status {
    /// The header name of this code (`"PMIX_ERR_NOT_SUPPORTED"`); canonical
    /// names win over deprecated ones; `"UNKNOWN"` for codes with no name.
    pub fn name(self) -> &'static str {
        CANONICAL
            .iter()
            .chain(ALIASES.iter())
            .find(|(_, v)| *v == self.0)
            .map(|(n, _)| *n)
            .unwrap_or("UNKNOWN")
    }

    /// Looks a code up by name, with or without the `PMIX_` prefix,
    /// case-insensitively; deprecated names are accepted too.
    pub fn from_name(s: &str) -> Option<Status> {
        let s = s.trim();
        // `get` rather than slicing: a multi-byte character straddling
        // byte 5 must not panic (`Status::from_name("ααα")`).
        let bare = match s.get(..5) {
            Some(p) if p.eq_ignore_ascii_case("PMIX_") => &s[5..],
            _ => s,
        };
        CANONICAL
            .iter()
            .chain(ALIASES.iter())
            .find(|(n, _)| n[5..].eq_ignore_ascii_case(bare))
            .map(|(_, v)| Status(*v))
    }

    /// True for `PMIX_SUCCESS` only.
    pub fn is_success(self) -> bool {
        self.0 == 0
    }

    /// True when the code lies in the system-event range
    /// (`PMIX_EVENT_SYS_OTHER..=PMIX_EVENT_SYS_BASE`).
    pub fn is_system_event(self) -> bool {
        (Self::EVENT_SYS_OTHER.0..=Self::EVENT_SYS_BASE.0).contains(&self.0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "UNKNOWN" => write!(f, "PMIX_STATUS({})", self.0),
            n => f.write_str(n),
        }
    }
}

impl From<i32> for Status {
    fn from(v: i32) -> Self {
        Status(v)
    }
}

/// pdvm's own event code for node changes PMIx has no code for (a node
/// joining the DVM, a node becoming unreserved): `PMIX_EXTERNAL_ERR_BASE`
/// (-3000) minus one, the range the PMIx headers leave to hosts. The
/// [`CHANGE`] info says which change it is.
pub const NODE_CHANGE: Status = Status(-3001);

/// Name shown for [`NODE_CHANGE`] (PMIx has none).
pub const NODE_CHANGE_NAME: &str = "PDVM_EVENT_NODE_CHANGE";

/// psched's own event code, sent to a queued request's requester alone
/// (range custom) when the resource manager's reason for the wait changes:
/// [`super::keys::PENDING_REASON`] holds the reason,
/// `PMIX_EVENT_TEXT_MESSAGE` the sentence palloc shows. PMIx has no code
/// for it; -3002 is in the range its headers leave to hosts.
pub const PENDING_REASON: Status = Status(-3002);

/// Name shown for [`PENDING_REASON`] (PMIx has none).
pub const PENDING_REASON_NAME: &str = "PSCHED_EVENT_PENDING_REASON";

/// psched's own event code, sent to an allocation's requester alone (range
/// custom) when the resource manager took some of its nodes away on its
/// own (a node Slurm marked DOWN) and the allocation goes on with the
/// rest: `PMIX_ALLOC_ID`, `PMIX_NODE_LIST` (the nodes gone) and
/// `PMIX_EVENT_TEXT_MESSAGE` (the sentence palloc shows). PMIx has no code
/// for it; -3003 is in the range its headers leave to hosts.
pub const NODES_LOST: Status = Status(-3003);

/// Name shown for [`NODES_LOST`] (PMIx has none).
pub const NODES_LOST_NAME: &str = "PSCHED_EVENT_NODES_LOST";

/// pmix-tools' own event code, sent to every tool of the DVM (range
/// global) by `prelease JOB` just before it terminates job `JOB`:
/// `PMIX_NSPACE` (the job) and `PMIX_EVENT_TEXT_MESSAGE` (who cancels it).
/// A pspawn following that job reports its end as cancelled (exit 143, as
/// the SIGTERM pdvm sends gives), whatever status the DVM then announces:
/// PRRTE master announces status 0 for processes a job control killed.
/// PMIx has no code for it; -3004 is in the range its headers leave to
/// hosts.
pub const JOB_CANCELLED: Status = Status(-3004);

/// Name shown for [`JOB_CANCELLED`] (PMIx has none).
pub const JOB_CANCELLED_NAME: &str = "PMIX_TOOLS_EVENT_JOB_CANCELLED";

/// psched's own event code, sent to every tool of the DVM (range global)
/// just before it kills the processes of a job on nodes its node source
/// took away (a node Slurm marked DOWN): `PMIX_NSPACE` (the job),
/// `PMIX_ALLOC_ID`, `PMIX_NODE_LIST` (the nodes gone), `psched.end.cause`
/// (`node-failure`) and `PMIX_EVENT_TEXT_MESSAGE` (the sentence). A pspawn
/// following that job reports its end as the node failure (exit 1), whatever
/// status the DVM then announces: PRRTE master announces status 0 for
/// processes a job control killed. PMIx has no code for it; -3005 is in
/// the range its headers leave to hosts.
pub const JOB_NODES_LOST: Status = Status(-3005);

/// Name shown for [`JOB_NODES_LOST`] (PMIx has none).
pub const JOB_NODES_LOST_NAME: &str = "PSCHED_EVENT_JOB_NODES_LOST";

/// psched's own event code, sent to every tool of the DVM (range global)
/// when its node source (Slurm's controller) stops answering:
/// `PMIX_EVENT_TEXT_MESSAGE` (the sentence palloc shows). Running work is
/// untouched and requests wait; [`SOURCE_BACK`] follows when it answers
/// again. PMIx has no code for it; -3006 is in the range its headers leave
/// to hosts.
pub const SOURCE_UNREACHABLE: Status = Status(-3006);

/// Name shown for [`SOURCE_UNREACHABLE`] (PMIx has none).
pub const SOURCE_UNREACHABLE_NAME: &str = "PSCHED_EVENT_SOURCE_UNREACHABLE";

/// psched's own event code, sent to every tool of the DVM (range global)
/// when its node source answers again after [`SOURCE_UNREACHABLE`]:
/// `PMIX_EVENT_TEXT_MESSAGE` (the sentence, with how long it was away).
/// PMIx has no code for it; -3007 is in the range its headers leave to
/// hosts.
pub const SOURCE_BACK: Status = Status(-3007);

/// Name shown for [`SOURCE_BACK`] (PMIx has none).
pub const SOURCE_BACK_NAME: &str = "PSCHED_EVENT_SOURCE_BACK";

/// psched's own event code, sent by a restarted psched to the requester
/// alone (range custom) of each request that was queued when the psched
/// before it stopped: PRRTE master keeps such a request for ever and never
/// hands it to the new scheduler (docs/conformance.md P17), so the
/// requester sends it again. `PMIX_ALLOC_REQ_ID` (when the request had
/// one) and `PMIX_EVENT_TEXT_MESSAGE` (the sentence palloc shows). PMIx
/// has no code for it; -3008 is in the range its headers leave to hosts.
pub const REQUEST_LOST: Status = Status(-3008);

/// Name shown for [`REQUEST_LOST`] (PMIx has none).
pub const REQUEST_LOST_NAME: &str = "PSCHED_EVENT_REQUEST_LOST";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(Status::ERR_NOT_SUPPORTED.0, -47);
        assert_eq!(Status::ERR_NOT_SUPPORTED.name(), "PMIX_ERR_NOT_SUPPORTED");
        assert_eq!(Status::EVENT_JOB_END.0, -145);
        assert_eq!(Status::ERR_JOB_TERMINATED, Status::EVENT_JOB_END);
        assert_eq!(Status(-145).name(), "PMIX_EVENT_JOB_END");
        assert_eq!(Status::ALLOC_TIMEOUT_WARNING.0, -194);
        assert_eq!(Status::ERR_INVALID_NAMESPACE.0, -44);
        assert_eq!(Status(-44).name(), "PMIX_ERR_INVALID_NAMESPACE");
        for (n, v) in CANONICAL {
            assert_eq!(Status::from_name(n), Some(Status(*v)), "{n}");
        }
        assert_eq!(Status::from_name("err_timeout"), Some(Status::ERR_TIMEOUT));
        assert_eq!(
            Status::from_name("pmix_err_job_terminated"),
            Some(Status(-145))
        );
        assert_eq!(Status::from_name("nonsense"), None);
        assert_eq!(Status(-99999).name(), "UNKNOWN");
        assert_eq!(Status(-99999).to_string(), "PMIX_STATUS(-99999)");
        assert_eq!(Status::SUCCESS.to_string(), "PMIX_SUCCESS");
        assert!(Status::SUCCESS.is_success());
        assert!(!Status::ERROR.is_success());
    }

    #[test]
    fn canonical_values_are_unique() {
        for (i, (n, v)) in CANONICAL.iter().enumerate() {
            for (m, w) in &CANONICAL[i + 1..] {
                assert!(v != w || n == m, "{n} and {m} share {v}");
            }
        }
    }
}

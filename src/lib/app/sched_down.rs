//! Whether the scheduler attached to the DVM is down (issue 46.2). psched
//! writes its contact file ([`crate::conn::sched_contact`]) when it
//! attaches and removes it when it leaves; a psched that was killed leaves
//! it behind, its socket refusing connections. PRRTE master holds every
//! allocation request for such a scheduler unanswered until it comes back
//! (docs/conformance.md P17), so a tool that finds it down says so at once
//! instead of waiting out its timeout.

use std::net::TcpStream;
use std::time::Duration;

use crate::conn::discover::{ConnectOptions, ProcessEnv};
use crate::conn::{sched_contact, Rendezvous};
use crate::ops::Session;

/// Longest wait for the scheduler's socket to accept (it is local).
const KNOCK: Duration = Duration::from_secs(1);

/// Why the scheduler of the DVM `s` is connected to is known to be down
/// (its contact file names a socket that refuses connections); `None`
/// when it answers, or when nothing is known (no contact file: no psched,
/// or one that left in good order).
pub(crate) fn scheduler_down(s: &Session) -> Option<String> {
    let dvm = s.conn().server().0;
    let path = sched_contact::find(dvm, &ConnectOptions::default(), &ProcessEnv)?;
    let r = Rendezvous::read(&path).ok()?;
    let addr = r.uri.socket_addr().ok()?;
    match TcpStream::connect_timeout(&addr, KNOCK) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(format!(
            "the DVM's scheduler (psched) is not running: its status socket {} (contact file {}) \
refuses connections, and PRRTE master holds what is asked of it until it returns",
            r.uri.address,
            path.display()
        )),
        _ => None,
    }
}

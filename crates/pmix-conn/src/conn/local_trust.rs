//! What a tool checks before it says anything to a local peer that will
//! receive its requests (the program, its arguments, its whole
//! environment):
//! - a **holder** socket ([`super::holder`]) must be in a folder of the
//!   user's own that nobody else can write, be the user's own socket, and
//!   be listened on by a process of the user (`SO_PEERCRED`); a link in
//!   the registry (a request id's alias) is followed once, to a socket
//!   meeting the same rule;
//! - a **DVM on this machine** (a loopback or other local TCP address)
//!   must be listened on by the user or root: a port left by a DVM that
//!   ended and taken by another user is refused.
//!
//! Each refusal happens before a byte of the request is sent, and says
//! which path or port, who owns it, and what to do.

use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::proto::Status;

use super::registry::kind_of;

/// The effective uid of this process.
fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// `uid` as "uid N (name)" when the name is known.
pub(crate) fn who(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("uid {uid} ({})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// A refusal to speak to a local peer: nothing was sent.
fn refuse(what: String) -> Error {
    Error::of_kind(ErrorKind::NoServer, Status::ERR_NO_PERMISSIONS, what)
}

/// Why the holder socket at `path` is not to be trusted, or `Ok` when its
/// folder and the socket itself are the user's own (see the module
/// documentation). `source` says where the path came from, for the message.
pub(crate) fn check_holder_path(path: &Path, source: &str) -> Result<()> {
    let fail = |why: String| {
        refuse(format!(
            "refusing the holder socket {} ({source}): {why}; nothing was sent to it. A palloc of \
yours makes its socket in a folder only you can write; unset it, or name the server (--uri, --pid) \
to connect without a holder",
            path.display()
        ))
    };
    check_socket_in_private_folder(path).map_err(&fail)?;
    let m = std::fs::symlink_metadata(path).map_err(|e| fail(e.to_string()))?;
    if m.file_type().is_symlink() {
        let target = std::fs::read_link(path).map_err(|e| fail(e.to_string()))?;
        if !target.is_absolute() {
            return Err(fail(format!(
                "it links to {}, not an absolute path",
                target.display()
            )));
        }
        check_socket_in_private_folder(&target)
            .map_err(|why| fail(format!("it links to {}: {why}", target.display())))?;
    }
    Ok(())
}

/// Why `path` is not a socket of ours in a folder of ours that nobody else
/// can write (links are not followed: see [`check_holder_path`]).
fn check_socket_in_private_folder(path: &Path) -> std::result::Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let d = std::fs::metadata(&dir).map_err(|e| format!("its folder {}: {e}", dir.display()))?;
    if d.uid() != me() {
        return Err(format!(
            "its folder {} belongs to {}, not to you ({})",
            dir.display(),
            who(d.uid()),
            who(me())
        ));
    }
    if d.mode() & 0o022 != 0 {
        return Err(format!(
            "its folder {} can be written by others (mode {:o})",
            dir.display(),
            d.mode() & 0o7777
        ));
    }
    let m = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if m.file_type().is_symlink() {
        return Ok(());
    }
    use std::os::unix::fs::FileTypeExt;
    if !m.file_type().is_socket() || m.uid() != me() {
        return Err(format!("it is {} of {}", kind_of(&m), who(m.uid())));
    }
    Ok(())
}

/// Refuse a holder connection whose listening process is not the user's
/// (`SO_PEERCRED`), before anything is read or sent.
pub(crate) fn check_holder_peer(s: &UnixStream, path: &Path, source: &str) -> Result<()> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let uid = getsockopt(s, PeerCredentials).map(|c| c.uid()).ok();
    if uid == Some(me()) {
        return Ok(());
    }
    let by = uid.map_or_else(|| "an unknown user".to_string(), who);
    Err(refuse(format!(
        "refusing the holder socket {} ({source}): the process listening on it runs as {by}, not \
as you ({}); nothing was sent to it. Unset it, or name the server (--uri, --pid) to connect \
without a holder",
        path.display(),
        who(me())
    )))
}

/// Refuse a DVM connection to this machine whose listening socket belongs
/// to neither the user nor root, before anything is sent; else the
/// listener's uid when the kernel knows it. A server on another machine
/// (the kernel knows no such local socket) is not checked here.
pub(crate) fn check_local_server(s: &TcpStream, address: &str) -> Result<Option<u32>> {
    let Some(peer) = super::creds::peer_socket(s) else {
        return Ok(None);
    };
    if peer.uid == me() || peer.uid == 0 {
        return Ok(Some(peer.uid));
    }
    Err(refuse(format!(
        "refusing the server at {address}: the process listening there runs as {}, not as you \
({}) or root; nothing was sent to it. A DVM that ended may have left its port (and its rendezvous \
file) behind: start yours again, or name it with --uri or --pid",
        who(peer.uid),
        who(me())
    )))
}

/// The handshake's failure `e` explained when the DVM runs as another user
/// (`listener`: root, for a site's DVM) and refused us or closed the
/// connection: a DVM lets in the tools of its own user only, so starting
/// another DVM is not the advice; asking for access, or a DVM of one's
/// own, is.
pub(crate) fn refused_by_other_user(e: Error, listener: Option<u32>, address: &str) -> Error {
    match listener {
        Some(uid) if uid != me() => refuse(format!(
            "the DVM at {address} runs as {}, not as you ({}), and did not let you in ({}): a DVM \
accepts the tools of its own user only, unless its administrator allows others. Ask them for \
access, or start a DVM of your own (`pdvm`, `prte`) and point at it with --uri or --pid",
            who(uid),
            who(me()),
            e.context
        )),
        _ => e,
    }
}

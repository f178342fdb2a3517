//! How a tool connected to a DVM reaches the scheduler attached to it.
//!
//! PRRTE master keeps only a reservation's nodes as they were granted: not
//! its owner, its inheritance rule, its time left, nor the nodes a partial
//! release gave back. psched, the scheduler that granted it, knows them and
//! answers status queries on a loopback socket. Once attached to a DVM it
//! writes that socket's contact file, `pmix-tools.sched.<DVM namespace>`,
//! in the first directory tools search for rendezvous files
//! (`PMIX_SERVER_TMPDIR`, else `TMPDIR`, else `/tmp`): the socket's URI and
//! PMIx version, as a rendezvous file holds them. A tool reads it only
//! when it is trusted as a rendezvous file is
//! ([`super::discover::untrusted_reason`]), and connects only to a port
//! its own user or root listens on (as to any local DVM).

use std::path::{Path, PathBuf};

use super::discover::{search_dirs, untrusted_reason, ConnectOptions, Env};

/// The contact file's name before the DVM's escaped namespace.
pub const PREFIX: &str = "pmix-tools.sched.";
/// Longest escaped namespace kept in a file name (PMIx namespaces are at
/// most 255 bytes; escaped they could triple).
const MAX_NAME: usize = 240;

/// The contact file's name for the DVM whose namespace is `dvm`: letters,
/// digits and `@._-` as they are, any other byte as `%XX` (one name per
/// namespace, never a path separator); `None` when too long for a name.
pub fn file_name(dvm: &str) -> Option<String> {
    let mut s = String::from(PREFIX);
    for b in dvm.bytes() {
        if b.is_ascii_alphanumeric() || b"@._-".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    (!dvm.is_empty() && s.len() - PREFIX.len() <= MAX_NAME).then_some(s)
}

/// Where a scheduler running with environment `env` writes its contact
/// file: the first directory tools search.
pub fn publish_dir(env: &dyn Env) -> PathBuf {
    search_dirs(&ConnectOptions::default(), env)
        .into_iter()
        .next()
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// The trusted contact file of the scheduler attached to DVM `dvm`, in the
/// directories a tool with `opts` and `env` searches; `None` when there is
/// none (no scheduler, or one this tool does not trust).
pub fn find(dvm: &str, opts: &ConnectOptions, env: &dyn Env) -> Option<PathBuf> {
    let name = file_name(dvm)?;
    search_dirs(opts, env)
        .iter()
        .map(|d| d.join(&name))
        .find(|p| is_trusted(p))
}

fn is_trusted(p: &Path) -> bool {
    p.exists() && untrusted_reason(p).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_per_namespace_and_never_a_path() {
        assert_eq!(
            file_name("prte-node01-26357@0").as_deref(),
            Some("pmix-tools.sched.prte-node01-26357@0")
        );
        assert_ne!(file_name("a/b"), file_name("a_b"));
        assert!(!file_name("../x").unwrap().contains('/'));
        assert_eq!(file_name(""), None);
        assert_eq!(file_name(&"é".repeat(200)), None);
    }
}

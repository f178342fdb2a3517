//! psched's contact file for the DVM it serves
//! ([`crate::conn::sched_contact`]): written when psched attaches, removed
//! when it leaves that DVM, so `pwatch --status` connected to the DVM also
//! asks psched what the DVM does not keep.

use std::path::PathBuf;

use crate::conn::discover::ProcessEnv;
use crate::conn::sched_contact;

/// The contact file of one attachment; removed when dropped.
pub struct Published {
    path: Option<PathBuf>,
}

impl Published {
    /// Write `contact` (the status socket's URI and version) as the
    /// contact file for DVM `dvm`. A file that cannot be written (another
    /// user's of that name in a shared directory) is said once on stderr:
    /// tools then see only what the DVM keeps.
    pub fn new(dvm: &str, contact: &str) -> Published {
        let Some(name) = sched_contact::file_name(dvm) else {
            return Published { path: None };
        };
        let path = sched_contact::publish_dir(&ProcessEnv).join(name);
        match super::files::replace(&path, contact.as_bytes(), 0o644) {
            Ok(()) => Published { path: Some(path) },
            Err(e) => {
                say!(
                    "psched: cannot write the contact file {} ({e}): `pwatch --status` will show \
only what the DVM keeps of psched's grants",
                    path.display()
                );
                Published { path: None }
            }
        }
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

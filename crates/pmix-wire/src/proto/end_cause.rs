//! Why a scheduler's node source ended an allocation its owner did not
//! release: carried as a word under [`super::keys::END_CAUSE`] on the
//! `PMIX_EVENT_SESSION_END` psched announces, so the requester's tools
//! exit with that cause. PMIx defines no attribute for it.

use super::enums::pmix_enum;

pmix_enum! {
    /// The causes, with the word on the wire and Slurm's word for it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum SessionEndCause {
        /// Its time limit passed (Slurm `TIMEOUT`, `DEADLINE`).
        TimeLimit => ["time-limit", "TIMEOUT"],
        /// Cancelled in the node source (`scancel`, by its owner or an
        /// administrator).
        Cancelled => ["cancelled", "CANCELLED"],
        /// A node of it failed (Slurm `NODE_FAIL`, `BOOT_FAIL`).
        NodeFailure => ["node-failure", "NODE_FAIL"],
        /// Another job preempted it (or it was requeued).
        Preempted => ["preempted", "PREEMPTED"],
        /// It ended otherwise (completed, failed, or no longer known).
        Other => ["other", "ended"],
    }
    strings {
        /// The word on the wire.
        word,
        /// Slurm's word, as `squeue` shows it.
        slurm_word,
    }
}

impl SessionEndCause {
    /// The cause a wire word names, if it names one.
    pub fn from_word(w: &str) -> Option<SessionEndCause> {
        SessionEndCause::ALL.into_iter().find(|c| c.word() == w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_its_cause() {
        for c in SessionEndCause::ALL {
            assert_eq!(SessionEndCause::from_word(c.word()), Some(c));
        }
        assert_eq!(SessionEndCause::from_word("expired"), None);
    }
}

//! The tools' one way to a line on stderr outside their rendered output
//! ([`super::ui`] speaks through it too): one line at a time, never a
//! panic when stderr is closed or full — a detached palloc's stderr is its
//! log, and a full filesystem must not end it (`eprintln!` panics when the
//! write fails).

/// Write `args` as one line on stderr, whatever becomes of the write
/// ([`crate::conn::diag`]).
pub fn line(args: std::fmt::Arguments<'_>) {
    crate::conn::diag::line(false, args);
}

//! A batch script's output on its way to the log. The script writes into a
//! pipe and a thread of the detached palloc copies it into the log (the
//! palloc's own stdout), counting what could not be written: on a full
//! filesystem the log ends early, and the job's record then says how many
//! bytes were lost instead of nothing at all. One pipe serves stdout and
//! stderr, so their order in the log is the script's.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How long the end of the copy is awaited once the script has ended (a
/// process it left running may hold the pipe open; the copy goes on).
const DRAIN: Duration = Duration::from_secs(2);

/// The copy thread of one script.
pub(crate) struct LogCopy {
    lost: Arc<AtomicU64>,
    done: mpsc::Receiver<()>,
}

impl LogCopy {
    /// Start copying into this process's stdout; the pipe's write end, for
    /// the script's stdout and stderr.
    pub(crate) fn start() -> std::io::Result<(LogCopy, std::process::Stdio, std::process::Stdio)> {
        let (r, w) = nix::unistd::pipe()?;
        let log = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
        let lost = Arc::new(AtomicU64::new(0));
        let (tx, done) = mpsc::channel();
        let counted = Arc::clone(&lost);
        std::thread::spawn(move || {
            copy(std::fs::File::from(r), log, &counted);
            let _ = tx.send(());
        });
        let w2 = w.try_clone()?;
        Ok((LogCopy { lost, done }, w.into(), w2.into()))
    }

    /// The bytes lost so far, once the copy has ended or [`DRAIN`] has
    /// passed.
    pub(crate) fn finish(&self) -> u64 {
        let _ = crate::ops::wait::recv_until(&self.done, std::time::Instant::now() + DRAIN);
        self.lost.load(Ordering::Relaxed)
    }
}

/// Copy `from` into `to` until end of file; bytes `to` refuses are counted
/// in `lost` and reading goes on, so the script never blocks on a log that
/// cannot take more.
fn copy(mut from: std::fs::File, mut to: std::fs::File, lost: &AtomicU64) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut at = 0;
        while at < n {
            match to.write(&buf[at..n]) {
                Ok(0) => break,
                Ok(k) => at += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        lost.fetch_add((n - at) as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_log_refuses_is_counted_and_reading_goes_on() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let mut w = std::fs::File::from(w);
        std::thread::spawn(move || {
            let _ = w.write_all(&[7u8; 100_000]);
        });
        // /dev/full refuses every byte with ENOSPC.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let lost = AtomicU64::new(0);
        copy(std::fs::File::from(r), full, &lost);
        assert_eq!(lost.load(Ordering::Relaxed), 100_000);
    }
}

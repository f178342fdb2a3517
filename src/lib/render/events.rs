//! A buffered JSON-lines writer for event streams (pwatch, palloc warnings).
//!
//! Events are serialised straight into a `BufWriter` (no intermediate
//! `String`), so a stream of small events costs one serde pass each and a
//! write syscall per buffer, not per event.

use super::records::EventRecord;
use std::io::{self, BufWriter, Write};

/// Buffer size for the event writer.
const BUF_BYTES: usize = 64 * 1024;

/// JSON-lines writer over any `Write` (stdout in the tools, a `Vec` in tests).
pub struct EventWriter<W: Write> {
    out: BufWriter<W>,
    flush_each: bool,
}

impl<W: Write> EventWriter<W> {
    /// A writer that flushes only when its buffer fills or on [`Self::flush`].
    pub fn new(inner: W) -> Self {
        Self {
            out: BufWriter::with_capacity(BUF_BYTES, inner),
            flush_each: false,
        }
    }

    /// Flush after every event (for an interactive terminal or a pipe read
    /// line by line), at the cost of one write per event.
    pub fn flush_each_event(mut self, yes: bool) -> Self {
        self.flush_each = yes;
        self
    }

    /// Write one event as a JSON line.
    pub fn write(&mut self, ev: &EventRecord<'_>) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, ev).map_err(io::Error::other)?;
        self.out.write_all(b"\n")?;
        if self.flush_each {
            self.out.flush()?;
        }
        Ok(())
    }

    /// Flush buffered events.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flush and return the inner writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hundred_thousand_events_parse() {
        const N: usize = 100_000;
        let ids: Vec<String> = (0..16).map(|i| format!("alloc.{i}")).collect();
        let mut w = EventWriter::new(Vec::with_capacity(N * 120));
        for i in 0..N {
            let ev = EventRecord {
                event: if i % 2 == 0 {
                    "timeout-warning"
                } else {
                    "job-end"
                },
                time: 1_700_000_000.0 + i as f64 / 1000.0,
                alloc_id: Some(&ids[i % ids.len()]),
                request_id: (i % 3 == 0).then_some("req"),
                nspace: Some("job@1"),
                time_remaining: (i % 2 == 0).then_some((i % 600) as u32),
                status: None,
                exit_code: (i % 2 == 1).then_some((i % 7) as i32),
                nodes: None,
                change: None,
            };
            w.write(&ev).unwrap();
        }
        let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let mut n = 0;
        for (i, line) in out.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["type"], "event");
            assert_eq!(v["alloc_id"], ids[i % ids.len()].as_str());
            if i % 2 == 0 {
                assert_eq!(v["time_remaining"], (i % 600) as u64);
            } else {
                assert_eq!(v["exit_code"], (i % 7) as i64);
            }
            n += 1;
        }
        assert_eq!(n, N);
    }
}

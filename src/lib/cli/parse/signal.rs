//! Signals for job control (`--signal`-style flags and hold modes).

use nix::sys::signal::Signal;
use std::str::FromStr;

const SIGNAL_FORMS: &str = "a signal name such as TERM, SIGTERM, int, HUP, USR1, KILL, \
or its number such as 15";

/// Parse a signal by name (with or without `SIG`, any case) or number.
pub fn parse_signal(s: &str) -> Result<Signal, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a signal: expected {SIGNAL_FORMS}");
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let n: i32 = t.parse().map_err(|_| bad())?;
        return Signal::try_from(n).map_err(|_| bad());
    }
    let upper = t.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    Signal::from_str(&name).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::super::cases::{accepts, refuses};
    use super::*;

    #[test]
    fn signals() {
        accepts(
            parse_signal,
            &[
                ("TERM", Signal::SIGTERM),
                ("sigint", Signal::SIGINT),
                ("usr1", Signal::SIGUSR1),
                ("9", Signal::SIGKILL),
            ],
        );
        refuses(parse_signal, &["", "0", "999", "NOPE", "-9"], "SIGTERM");
    }
}

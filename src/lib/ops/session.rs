//! A session: a connection plus the wire version, the request time-out, and
//! the helpers every operation shares (building a request, reading the
//! status that leads every reply).

use std::sync::Arc;
use std::time::Duration;

use crate::codec::{Cmd, Decoder, Encoder, Info, Size, Value, WireVersion};
use crate::conn::{ConnectOptions, Connection};
use crate::error::{Error, Result};
use crate::proto::status::Status;

use crate::proto::cmd;

/// Most entries we accept in any reply array (bounds hostile replies; every
/// entry also costs at least one byte, which the decoder checks too).
pub const MAX_REPLY_ITEMS: usize = 1 << 20;
pub use crate::conn::client::REQUEST_TIMEOUT as DEFAULT_TIMEOUT;
/// Longest wait for the server's answer to our goodbye (and for requests
/// in flight before it).
pub const FINALIZE_WAIT: Duration = Duration::from_secs(2);
/// The same wait once the server has failed to answer a request in time:
/// a tool that timed out ends within `PMIX_TOOLS_TIMEOUT` plus this margin
/// (its goodbye does not come on top of the deadline).
pub const FINALIZE_WAIT_AFTER_TIMEOUT: Duration = Duration::from_millis(300);

/// A connected session with a PMIx server.
pub struct Session {
    /// The highest `@N` of a namespace this session launched (0: none).
    last_job: std::sync::atomic::AtomicU64,
    /// Launches the DVM lost and this session sent again, not yet told.
    lost: std::sync::Mutex<Vec<String>>,
    conn: Arc<Connection>,
    wire: WireVersion,
    timeout: Duration,
    /// The goodbye was said (by [`Session::finalize`] or on drop).
    finished: bool,
}

impl Session {
    /// Find, connect and handshake per `opts`.
    pub fn connect(opts: &ConnectOptions) -> Result<Session> {
        Ok(Session::from_connection(Connection::connect(opts)?))
    }

    /// Wrap an established connection.
    pub fn from_connection(conn: Connection) -> Session {
        let wire = conn.wire();
        Session {
            last_job: std::sync::atomic::AtomicU64::new(0),
            lost: std::sync::Mutex::new(Vec::new()),
            conn: Arc::new(conn),
            wire,
            timeout: crate::conn::client::env_timeout().unwrap_or(DEFAULT_TIMEOUT),
            finished: false,
        }
    }

    /// Change the reply time-out.
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }

    /// The reply time-out in force.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The underlying connection.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// A shared handle on the connection (for a holder relaying other
    /// tools' requests over it).
    pub fn shared_conn(&self) -> Arc<Connection> {
        Arc::clone(&self.conn)
    }

    /// Remember a namespace this session launched (`BASE@N`).
    pub fn launched(&self, nspace: &str) {
        if let Some(n) = nspace.rsplit_once('@').and_then(|(_, n)| n.parse().ok()) {
            self.last_job
                .fetch_max(n, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Job `nspace`'s launch was lost by the DVM and its spawn sent again
    /// ([`super::lost_launch`]).
    pub fn relaunched(&self, nspace: &str) {
        if let Ok(mut l) = self.lost.lock() {
            l.push(nspace.to_string());
        }
    }

    /// The jobs whose launch the DVM lost (and that were spawned again)
    /// since the last call.
    pub fn take_relaunched(&self) -> Vec<String> {
        self.lost
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    /// The highest `@N` of a namespace this session launched (0: none).
    pub fn last_launched(&self) -> u64 {
        self.last_job.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The wire version spoken.
    pub fn wire(&self) -> WireVersion {
        self.wire
    }

    /// Our namespace and rank.
    pub fn me(&self) -> (String, u32) {
        let (n, r) = self.conn.me();
        (n.to_string(), r)
    }

    /// The server's PMIx version string, when known.
    pub fn server_version(&self) -> Option<&str> {
        self.conn.target().version.as_deref()
    }

    /// A fresh encoder for this session's wire version.
    pub fn encoder(&self) -> Encoder {
        Encoder::new(self.wire)
    }

    /// A decoder over a reply payload.
    pub fn decoder<'a>(&self, bytes: &'a [u8]) -> Decoder<'a> {
        Decoder::new(bytes, self.wire)
    }

    /// Start a request with its command code.
    pub fn request(&self, command: u8) -> Result<Encoder> {
        let mut e = self.encoder();
        e.pack_one(&Cmd(command))?;
        Ok(e)
    }

    /// Send a request and return the reply payload (within the session's
    /// request deadline).
    pub fn call(&self, enc: Encoder) -> Result<Vec<u8>> {
        self.call_within(enc, self.timeout)
    }

    /// [`Self::call`] with its own deadline.
    pub fn call_within(&self, enc: Encoder, timeout: Duration) -> Result<Vec<u8>> {
        let what = self
            .decoder(enc.bytes())
            .unpack_one::<Cmd>()
            .map_or("our request", |Cmd(c)| cmd::describe(c));
        self.conn.request_for(enc.bytes(), timeout, what)
    }

    /// [`Self::call`], asking `quiet` after each `every` without an answer
    /// whether to give it up (`Ok(None)`: given up, a late reply dropped).
    pub fn call_watching(
        &self,
        enc: &Encoder,
        every: Duration,
        quiet: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let what = self
            .decoder(enc.bytes())
            .unpack_one::<Cmd>()
            .map_or("our request", |Cmd(c)| cmd::describe(c));
        self.conn
            .request_watching(enc.bytes(), self.timeout, what, every, quiet)
    }

    /// Check that every value can travel on this connection's wire version
    /// before anything is sent (e.g. type 75 to a `v41` server).
    pub fn check_infos(&self, infos: &[Info]) -> Result<()> {
        for i in infos {
            check_value(self.wire, &i.key, &i.value)?;
        }
        Ok(())
    }

    /// Let requests in flight be answered (at most [`FINALIZE_WAIT`]), say
    /// goodbye, wait for the server's answer (at most [`FINALIZE_WAIT`]),
    /// and close; once the server has failed to answer a request in time,
    /// all of it within [`FINALIZE_WAIT_AFTER_TIMEOUT`] (a silent server
    /// costs no more than that margin on top of the deadline).
    ///
    /// The wait matters: libpmix tools always wait for the answer, and PRRTE
    /// master corrupts its heap when a tool closes the socket between sending
    /// the goodbye and receiving it.
    pub fn finalize(mut self) -> Result<()> {
        self.goodbye()
    }

    /// The work of [`Session::finalize`], done once.
    fn goodbye(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        let gave_up = self.conn.gave_up();
        let wait = if gave_up {
            FINALIZE_WAIT_AFTER_TIMEOUT
        } else {
            FINALIZE_WAIT
        };
        let end = std::time::Instant::now() + wait;
        // Requests still in flight (a barrier, a timed-out query) are let
        // finish first: a server answering after we left may fall over.
        let _ = self.conn.settle(end);
        let enc = self.request(cmd::FINALIZE)?;
        let left = match gave_up {
            true => end.saturating_duration_since(std::time::Instant::now()),
            false => FINALIZE_WAIT,
        };
        let r = self
            .conn
            .request_for(enc.bytes(), left, cmd::describe(cmd::FINALIZE));
        self.conn.shutdown();
        r.and_then(|bytes| read_status(&mut self.decoder(&bytes)))
    }
}

/// The drop guard: a session left on any path (an early error, a `?`)
/// still lets its requests in flight be answered and says goodbye, as
/// [`Session::finalize`] does; a DVM must never see a tool vanish with a
/// request pending (PRRTE master falls over).
impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.goodbye();
    }
}

fn check_value(wire: WireVersion, key: &str, v: &Value) -> Result<()> {
    if !wire.supports(v.data_type()) {
        return Err(Error::new(
            Status::ERR_NOT_SUPPORTED,
            format!(
                "{key} is a {} value, which the server's wire version {} cannot carry",
                crate::codec::type_name(v.data_type()),
                wire.name()
            ),
        ));
    }
    Ok(())
}

/// Read the status that leads a reply; a non-success status becomes an error.
pub fn read_status(dec: &mut Decoder) -> Result<()> {
    let st: Status = dec.unpack_one()?;
    if st.is_success() {
        Ok(())
    } else {
        Err(Error::refused(st, "request"))
    }
}

/// Read `size` followed by that many infos.
pub fn read_infos(dec: &mut Decoder) -> Result<Vec<Info>> {
    if dec.is_empty() {
        return Ok(Vec::new());
    }
    let Size(n) = dec.unpack_one()?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= MAX_REPLY_ITEMS)
        .ok_or_else(|| {
            Error::new(
                Status::ERR_UNPACK_FAILURE,
                format!("reply claims {n} entries"),
            )
        })?;
    dec.unpack::<Info>(n)
}

/// Find an info by key.
pub fn find<'a>(infos: &'a [Info], key: &str) -> Option<&'a Value> {
    infos.iter().find(|i| i.key == key).map(|i| &i.value)
}

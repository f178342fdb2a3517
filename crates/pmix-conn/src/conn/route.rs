//! Which way a tool connects: through the palloc holder in charge of its
//! allocation, or to the server itself. The decision sits above both the
//! client ([`super::client`]) and the holder ([`super::holder`]), which do
//! not know each other's routing.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::proto::Status;

use super::client::{handshake_timeout, Connection};
use super::discover::{discover, ConnectOptions, ProcessEnv, Target};

/// The holder to connect through: inside `palloc … -- CMD` (its socket in
/// [`super::holder::HOLDER_ENV`]), unless a server, a tool identity or
/// `--as-tool` was asked for explicitly.
pub(crate) fn holder_in_charge(
    opts: &ConnectOptions,
    env: &dyn super::discover::Env,
) -> Option<std::path::PathBuf> {
    if !holders_apply(opts) {
        return None;
    }
    env.var(super::holder::HOLDER_ENV).map(Into::into)
}

/// Holders are bypassed when a server, a tool identity or `--as-tool` is
/// asked for explicitly.
fn holders_apply(opts: &ConnectOptions) -> bool {
    !(opts.names_a_server() || opts.force_tool || opts.tool_id.is_some())
}

/// The holder of the allocation the command acts on ([`ConnectOptions::alloc`])
/// on the DVM found (`target`, however it was named), registered by a palloc
/// in another shell of the same user; none inside a job, or when a tool
/// identity or `--as-tool` was asked for explicitly.
pub(crate) fn registered_holder(
    opts: &ConnectOptions,
    target: &Target,
) -> Option<std::path::PathBuf> {
    // A server named with --uri/--pid still finds the holder of that
    // server's allocation (its registration names the server).
    if opts.force_tool || opts.tool_id.is_some() || !target.identity.is_tool() {
        return None;
    }
    use super::holder::{registered_path, HeldBy};
    let id = opts.alloc.as_deref()?;
    [HeldBy::Alloc, HeldBy::Request]
        .into_iter()
        .filter_map(|h| registered_path(&target.uri.nspace, id, h))
        .find(|p| p.exists())
}

impl Connection {
    /// Find the server per `opts`, connect and handshake, retrying as asked.
    pub fn connect(opts: &ConnectOptions) -> Result<Connection> {
        if let Some(path) = holder_in_charge(opts, &ProcessEnv) {
            return super::holder::connect(&path, super::holder::HOLDER_ENV);
        }
        let attempts = opts.retries.saturating_add(1);
        let delay = opts.wait_to_connect.unwrap_or(Duration::from_secs(1));
        let mut last = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                let next = std::time::Instant::now() + delay;
                super::wait::until(next, super::wait::Retry::Connect);
            }
            let found = discover(opts, &ProcessEnv).and_then(|t| {
                // A holder that has gone leaves a stale socket: then
                // connect as usual.
                match registered_holder(opts, &t)
                    .map(|p| super::holder::connect(&p, "the holder registry"))
                {
                    Some(Ok(c)) => Ok(c),
                    _ => Connection::open(t, handshake_timeout()),
                }
            });
            match found {
                Ok(c) => return Ok(c),
                // A server that accepted but did not answer in time will not
                // do better on a second try within the same patience.
                Err(e) if e.status == Status::ERR_TIMEOUT => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last
            .unwrap_or_else(|| Error::new(Status::ERR_UNREACH, "no connection attempt was made")))
    }
}

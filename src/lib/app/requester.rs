//! Who palloc asks as (a tool, or the job's own client: [`acts_as_tool`]),
//! whether it was typed at a terminal ([`interactive`]), and the request id
//! it makes up when the user gave none ([`generated_request_id`]).

use crate::cli::PallocArgs;
use crate::conn::holder::HOLDER_ENV;

/// The request id palloc sends with a NEW when the user gave none, so the
/// request can be cancelled and named: `palloc-<pid>-<millis>`.
pub(super) fn generated_request_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("palloc-{}-{ms}", std::process::id())
}

/// Whether palloc will surely act as a tool, known before connecting: a
/// server or the tool identity is named, or no job (nor `palloc -- CMD`'s
/// holder, whose identity decides) is in the environment.
pub(super) fn acts_as_tool(args: &PallocArgs) -> bool {
    let c = &args.connect;
    let named = c.as_tool
        || c.uri.is_some()
        || c.pid.is_some()
        || c.nspace.is_some()
        || c.system_server_first
        || c.system_server_only;
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    named || (!set("PMIX_NAMESPACE") && !set(HOLDER_ENV))
}

/// Whether palloc was typed at a terminal outside any job: stdin and
/// stdout are terminals and no job's namespace is in the environment.
pub(super) fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var_os("PMIX_NAMESPACE").is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_distinct_per_process() {
        assert!(generated_request_id().starts_with(&format!("palloc-{}-", std::process::id())));
    }
}

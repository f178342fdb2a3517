//! No input makes a parser or a tool's command line panic: arbitrary strings
//! are either accepted or refused with a message.

use pmix_tools::cli::mpmd::split_apps;
use pmix_tools::cli::parse::*;
use pmix_tools::cli::{
    try_parse_validated, PallocArgs, PdvmArgs, PreleaseArgs, PspawnArgs, PwatchArgs,
};
use pmix_tools::proto::parse_inheritance;
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(":".to_string()),
        Just("--".to_string()),
        Just("-n".to_string()),
        Just("-x".to_string()),
        Just("-H".to_string()),
        Just("--extend".to_string()),
        Just("--target".to_string()),
        Just("-w".to_string()),
        Just("-t".to_string()),
        Just("--status".to_string()),
        Just("-q".to_string()),
        Just("-p".to_string()),
        Just("-J".to_string()),
        Just("--parsable".to_string()),
        Just("--stdin".to_string()),
        Just("UNLIMITED".to_string()),
        "[-a-zA-Z0-9:=\\[\\],é ]{0,12}",
    ]
}

proptest! {
    #[test]
    fn parsers_never_panic(s in "\\PC{0,40}") {
        let _ = parse_count(&s);
        let _ = parse_count_u32(&s);
        let _ = parse_time_limit(&s);
        let _ = parse_duration_secs(&s);
        let _ = parse_warn_secs(&s);
        let _ = parse_time_limit_or_unlimited(&s);
        let _ = parse_connect_secs(&s);
        let _ = pmix_tools::cli::common::parse_uri_spec(&s);
        let _ = pmix_tools::cli::pspawn::parse_stdin_target(&s);
        let _ = parse_inheritance(&s);
        let _ = parse_mem_mb(&s);
        let _ = parse_env(&s);
        let _ = parse_signal(&s);
        let _ = parse_id(&s);
        if !s.starts_with("file:") {
            let _ = parse_nodelist(&s);
        }
    }

    #[test]
    fn nodelist_grammar_never_panics(s in "[a-z0-9\\[\\],\\-é]{0,30}") {
        if let Ok(v) = expand_nodelist(&s) {
            prop_assert!(v.len() <= MAX_NODES);
            prop_assert!(v.iter().all(|n| !n.is_empty()));
        }
    }

    #[test]
    fn command_lines_never_panic(toks in proptest::collection::vec(token(), 0..10)) {
        let _ = split_apps(&toks, None, &[], None, None);
        for tool in ["palloc", "pspawn", "prelease", "pwatch", "pdvm"] {
            let args = std::iter::once(tool.to_string()).chain(toks.iter().cloned());
            let _ = match tool {
                "palloc" => try_parse_validated::<PallocArgs, _, _>(args).map(|_| ()),
                "pspawn" => try_parse_validated::<PspawnArgs, _, _>(args).map(|_| ()),
                "prelease" => try_parse_validated::<PreleaseArgs, _, _>(args).map(|_| ()),
                "pwatch" => try_parse_validated::<PwatchArgs, _, _>(args).map(|_| ()),
                _ => try_parse_validated::<PdvmArgs, _, _>(args).map(|_| ()),
            };
        }
    }
}

#[test]
fn multibyte_short_option_is_refused_not_panicking() {
    let args: Vec<String> = ["a", ":", "-é", "b"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(split_apps(&args, None, &[], None, None).is_err());
}

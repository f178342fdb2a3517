//! Every text parser of the library, fed arbitrary strings (any Unicode,
//! and strings shaped like what each expects), returns a value or an error
//! and never panics.

use std::path::Path;

use pmix_tools::cli::parse;
use pmix_tools::codec::{AllocInheritance, WireVersion};
use pmix_tools::conn::{Rendezvous, ServerUri};
use pmix_tools::proto::status::Status;
use proptest::prelude::*;

/// Arbitrary text, plus text built from the pieces the parsers look for.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(
            prop_oneof![
                Just("PMIX_".to_string()),
                Just("ERR_".to_string()),
                Just("tcp4://".to_string()),
                Just("127.0.0.1:".to_string()),
                Just(";".to_string()),
                Just(".".to_string()),
                Just("@".to_string()),
                Just("[".to_string()),
                Just("]".to_string()),
                Just("-".to_string()),
                Just(",".to_string()),
                Just(":".to_string()),
                Just("=".to_string()),
                Just("file:".to_string()),
                Just("\n".to_string()),
                Just("α".to_string()),
                Just("ß".to_string()),
                "[0-9]{1,12}",
                "[a-zA-Z]{1,6}",
            ],
            0..12
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn library_parsers_never_panic(s in text()) {
        let _ = Status::from_name(&s);
        let _ = WireVersion::from_name(&s);
        let _ = AllocInheritance::from_word(&s);
        let _ = ServerUri::parse(&s);
        let _ = Rendezvous::parse_text(Path::new("/nonexistent/pmix.x.tool"), &s);
    }

    #[test]
    fn flag_parsers_never_panic(s in text()) {
        // `file:` node lists read a file: keep them to paths that do not exist.
        let nodelist_arg = if s.starts_with("file:") { "file:/nonexistent/x".to_string() } else { s.clone() };
        let _ = parse::parse_count(&s);
        let _ = parse::parse_count_u32(&s);
        let _ = parse::parse_nonneg_count(&s);
        let _ = parse::parse_duration_secs(&s);
        let _ = parse::parse_time_limit(&s);
        let _ = parse::parse_warn_secs(&s);
        let _ = parse::parse_env(&s);
        let _ = parse::parse_id(&s);
        let _ = pmix_tools::proto::parse_inheritance(&s);
        let _ = parse::parse_mem_mb(&s);
        let _ = parse::parse_nodelist_arg(&nodelist_arg);
        let _ = parse::expand_nodelist(&s);
        let _ = parse::parse_signal(&s);
    }
}

#[test]
fn status_names_with_multibyte_prefixes() {
    // Used to panic: byte 5 fell inside a character.
    assert_eq!(Status::from_name("ααα"), None);
    assert_eq!(Status::from_name("PMIXα"), None);
    assert_eq!(
        Status::from_name("pmix_err_not_found"),
        Some(Status::ERR_NOT_FOUND)
    );
}

//! Man pages and shell completions generated from the clap definitions.
//!
//! `tests/docs_current.rs` compares [`doc_files`] with the committed files
//! under `man/` and `completions/`, and rewrites them when
//! `PMIX_TOOLS_REGEN_DOCS=1` is set.

use super::manual;
use super::{PallocArgs, PdvmArgs, PreleaseArgs, PschedArgs, PspawnArgs, PwatchArgs};
use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;
use std::path::PathBuf;

/// The shells completions are generated for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// The six commands' clap definitions.
pub fn commands() -> Vec<clap::Command> {
    vec![
        PallocArgs::command(),
        PspawnArgs::command(),
        PreleaseArgs::command(),
        PwatchArgs::command(),
        PdvmArgs::command(),
        PschedArgs::command(),
    ]
}

/// The man page (roff) for `cmd`: NAME, SYNOPSIS, DESCRIPTION, the option
/// sections, EXIT STATUS, JSON FIELDS, IDENTITY AND OWNERSHIP, TIMEOUT
/// WARNINGS, ENVIRONMENT, FILES, EXAMPLES, SEE ALSO, VERSION; text between
/// backticks is set in bold (see [`markup`]).
pub fn render_man(cmd: &clap::Command) -> Vec<u8> {
    markup(&render_plain_man(cmd)).into_bytes()
}

/// Text between a pair of backticks on one line of roff becomes bold
/// (`\fB…\fR`); a line with an odd number of backticks is left as it is.
pub fn markup(roff: &[u8]) -> String {
    let text = String::from_utf8_lossy(roff);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let n = line.matches('`').count();
        if n == 0 || n % 2 == 1 {
            out.push_str(line);
            continue;
        }
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 {
                out.push_str("\\fB");
                out.push_str(part);
                out.push_str("\\fR");
            } else {
                out.push_str(part);
            }
        }
    }
    out
}

fn render_plain_man(cmd: &clap::Command) -> Vec<u8> {
    let name = cmd.get_name().to_string();
    let man = Man::new(cmd.clone()).manual("pmix-tools");
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    let _ = man.render_options_section(&mut out);

    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in manual::exit_rows(&name) {
        r.control("TP", [])
            .text([bold(code)])
            .text([roman(meaning)]);
    }

    let kinds = manual::json_kinds(&name);
    if !kinds.is_empty() {
        r.control("SH", ["JSON FIELDS"]);
        r.text([roman(
            "With --json every result is one JSON object on its own line. Each object has a \"type\" \
field naming its kind, then the fields below, always present (null when unknown). These names \
are a stable contract: fields may be added, never renamed or removed.",
        )]);
        for (ty, fields) in kinds {
            r.control("SS", [format!("{ty} objects").as_str()]);
            for (f, meaning) in fields {
                r.control("TP", []).text([bold(*f)]).text([roman(*meaning)]);
            }
        }
    }

    r.control("SH", ["IDENTITY AND OWNERSHIP"]);
    paragraphs(&mut r, manual::IDENTITY);
    if !manual::is_daemon(&name) {
        r.control("SH", ["TIMEOUT WARNINGS"]);
        paragraphs(&mut r, manual::WARNINGS);
    }

    r.control("SH", ["ENVIRONMENT"]);
    for (var, meaning) in manual::environment(&name) {
        r.control("TP", []).text([bold(var)]).text([roman(meaning)]);
    }
    r.control("SH", ["FILES"]);
    for (path, meaning) in manual::files(&name) {
        r.control("TP", [])
            .text([italic(path)])
            .text([roman(meaning)]);
    }

    r.control("SH", ["EXAMPLES"]);
    for (cmdline, what) in manual::examples(&name) {
        r.control("TP", [])
            .text([bold(*cmdline)])
            .text([roman(*what)]);
    }
    r.control("SH", ["SEE ALSO"]);
    let also = manual::see_also(&name);
    let mut parts = Vec::with_capacity(also.len() * 2);
    for (i, t) in also.iter().enumerate() {
        parts.push(bold(*t));
        parts.push(roman(if i + 1 < also.len() { "(1), " } else { "(1)" }));
    }
    r.text(parts);
    let _ = r.to_writer(&mut out);
    let _ = man.render_version_section(&mut out);
    out
}

fn paragraphs(r: &mut Roff, text: &str) {
    for (i, p) in text.split("\n\n").enumerate() {
        if i > 0 {
            r.control("PP", []);
        }
        r.text([roman(p.replace('\n', " "))]);
    }
}

/// Placeholder value standing for the live allocation ids in a generated
/// script, replaced by a call of `pwatch --complete allocs`.
const LIVE_ALLOCS: &str = "__PMIX_TOOLS_LIVE_ALLOCS__";
/// Same for the live job namespaces (`pwatch --complete namespaces`).
const LIVE_NAMESPACES: &str = "__PMIX_TOOLS_LIVE_NAMESPACES__";
/// Same for the DVM's node names (`pwatch --complete nodes`).
const LIVE_NODES: &str = "__PMIX_TOOLS_LIVE_NODES__";

/// The values the completions offer for one argument of `tool`: the
/// enumerated values, live ids (see [`LIVE_ALLOCS`]), paths only where a
/// path is meant, and nothing (no file names) for other values.
fn completion_arg(tool: &str, a: clap::Arg) -> clap::Arg {
    use clap::ValueHint;
    if !a.get_num_args().is_some_and(|n| n.takes_values()) && !a.get_action().takes_values() {
        return a;
    }
    let id = a.get_id().as_str().to_string();
    let live = match (tool, id.as_str()) {
        (_, "alloc" | "alloc_ids" | "reacquire" | "extend")
        | ("pspawn", "target")
        | ("psched", "release") => Some(LIVE_ALLOCS),
        ("palloc", "target") | ("pwatch", "job") => Some(LIVE_NAMESPACES),
        ("pspawn", "host") | ("palloc", "nodelist" | "exclude") => Some(LIVE_NODES),
        _ => None,
    };
    if let Some(word) = live {
        return a.value_parser([word]);
    }
    if id == "inherit" {
        return a.value_parser(["none", "child", "default", "child-default"]);
    }
    if !a.get_possible_values().is_empty() {
        return a;
    }
    let hint = match id.as_str() {
        "wdir" | "tmpdir" => ValueHint::DirPath,
        "report_uri" | "ledger" => ValueHint::FilePath,
        "command" => ValueHint::CommandWithArguments,
        "exec" => ValueHint::CommandString,
        "app" => ValueHint::CommandWithArguments,
        "uri" | "pid" => return a,
        _ => ValueHint::Other,
    };
    a.value_hint(hint)
}

/// `cmd` as the completion generators should see it.
fn for_completion(cmd: &clap::Command) -> clap::Command {
    let tool = cmd.get_name().to_string();
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().as_str().to_string())
        .collect();
    let mut c = cmd.clone();
    for id in ids {
        c = c.mut_arg(id, |a| completion_arg(&tool, a));
    }
    c
}

/// The completion script for `cmd` in `shell`. Allocation ids and job
/// namespaces are completed live: the script runs `pwatch --complete
/// allocs` (or `namespaces`), which prints the ones the DVM knows, one per
/// line, and nothing when no DVM answers.
pub fn render_completions(cmd: &clap::Command, shell: Shell) -> Vec<u8> {
    let mut c = for_completion(cmd);
    let name = c.get_name().to_string();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut c, name, &mut out);
    let script = String::from_utf8_lossy(&out).into_owned();
    // Each placeholder as the shell's generator quotes it, and the live
    // call that replaces it.
    let live = |placeholder: &str, what: &str| {
        let call = format!("pwatch --complete {what} 2>/dev/null");
        match shell {
            Shell::Zsh => (format!("({placeholder})"), format!("($({call}))")),
            Shell::Fish => (format!("\"{placeholder}\\t''\""), format!("\"({call})\"")),
            _ => (placeholder.to_string(), format!("$({call})")),
        }
    };
    let script = [
        (LIVE_ALLOCS, "allocs"),
        (LIVE_NAMESPACES, "namespaces"),
        (LIVE_NODES, "nodes"),
    ]
    .into_iter()
    .fold(script, |script, (placeholder, what)| {
        let (from, to) = live(placeholder, what);
        script.replace(&from, &to)
    });
    script.into_bytes()
}

/// The file name a completion script is committed under.
pub fn completion_file(tool: &str, shell: Shell) -> String {
    match shell {
        Shell::Zsh => format!("{tool}.zsh"),
        Shell::Fish => format!("{tool}.fish"),
        _ => format!("{tool}.bash"),
    }
}

/// Every generated documentation file: (path relative to the crate root,
/// contents): `man/<tool>.1` and `completions/<tool>.{bash,zsh,fish}`.
pub fn doc_files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for cmd in commands() {
        let tool = cmd.get_name().to_string();
        files.push((
            PathBuf::from("man").join(format!("{tool}.1")),
            render_man(&cmd),
        ));
        for shell in SHELLS {
            files.push((
                PathBuf::from("completions").join(completion_file(&tool, shell)),
                render_completions(&cmd, shell),
            ));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_have_contract_sections() {
        for cmd in commands() {
            cmd.clone().debug_assert();
            let page = String::from_utf8(render_man(&cmd)).unwrap();
            for s in [
                "EXIT STATUS",
                "IDENTITY AND OWNERSHIP",
                "EXAMPLES",
                "SYNOPSIS",
                "ENVIRONMENT",
                "FILES",
                "SEE ALSO",
            ] {
                assert!(page.contains(s), "{} lacks {s}", cmd.get_name());
            }
            if !manual::is_daemon(cmd.get_name()) {
                assert!(
                    page.contains("JSON FIELDS") && page.contains("TIMEOUT WARNINGS"),
                    "{}",
                    cmd.get_name()
                );
            }
            let literal = page.lines().filter(|l| l.matches('`').count() >= 2).count();
            assert_eq!(literal, 0, "{}: backticks left in:\n{page}", cmd.get_name());
        }
    }

    #[test]
    fn markup_sets_backticked_text_bold() {
        assert_eq!(
            markup(b"run `palloc -- CMD` now\n"),
            "run \\fBpalloc -- CMD\\fR now\n"
        );
        assert_eq!(markup(b"odd ` stays\n"), "odd ` stays\n");
    }

    #[test]
    fn completions_offer_values_and_live_ids() {
        for cmd in commands() {
            for shell in SHELLS {
                let s = String::from_utf8(render_completions(&cmd, shell)).unwrap();
                assert!(
                    !s.contains("__PMIX_TOOLS_LIVE"),
                    "{} {shell:?}",
                    cmd.get_name()
                );
                if !manual::is_daemon(cmd.get_name()) {
                    assert!(
                        s.contains("pwatch --complete allocs"),
                        "{} {shell:?}: no live allocation ids",
                        cmd.get_name()
                    );
                }
                match cmd.get_name() {
                    "palloc" => assert!(
                        s.contains("child-default") && s.contains("pwatch --complete namespaces"),
                        "{shell:?}: {s}"
                    ),
                    "pwatch" => assert!(
                        s.contains("timeout-warning") && s.contains("draining"),
                        "{shell:?}"
                    ),
                    "pspawn" => assert!(
                        s.contains("pwatch --complete nodes") && s.contains("hwthread"),
                        "{shell:?}: no node names or --map-by policies"
                    ),
                    _ => {}
                }
            }
        }
    }
}

//! Man pages and shell completions generated from the clap definitions.
//!
//! `tests/docs_current.rs` compares [`doc_files`] with the committed files
//! under `man/` and `completions/`, and rewrites them when
//! `PMIX_TOOLS_REGEN_DOCS=1` is set.

use super::manual;
use super::{PallocArgs, PdvmArgs, PreleaseArgs, PspawnArgs, PwatchArgs};
use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;
use std::path::PathBuf;

/// The shells completions are generated for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// The five commands' clap definitions.
pub fn commands() -> Vec<clap::Command> {
    vec![
        PallocArgs::command(),
        PspawnArgs::command(),
        PreleaseArgs::command(),
        PwatchArgs::command(),
        PdvmArgs::command(),
    ]
}

/// The man page (roff) for `cmd`: NAME, SYNOPSIS, DESCRIPTION, the option
/// sections, EXIT STATUS, JSON FIELDS, IDENTITY AND OWNERSHIP, TIMEOUT
/// WARNINGS, EXAMPLES, VERSION.
pub fn render_man(cmd: &clap::Command) -> Vec<u8> {
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
    if name != "pdvm" {
        r.control("SH", ["TIMEOUT WARNINGS"]);
        paragraphs(&mut r, manual::WARNINGS);
    }

    r.control("SH", ["EXAMPLES"]);
    for (cmdline, what) in manual::examples(&name) {
        r.control("TP", [])
            .text([bold(*cmdline)])
            .text([roman(*what)]);
    }
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

/// The completion script for `cmd` in `shell`.
pub fn render_completions(cmd: &clap::Command, shell: Shell) -> Vec<u8> {
    let mut c = cmd.clone();
    let name = c.get_name().to_string();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut c, name, &mut out);
    out
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
            ] {
                assert!(page.contains(s), "{} lacks {s}", cmd.get_name());
            }
            if cmd.get_name() != "pdvm" {
                assert!(
                    page.contains("JSON FIELDS") && page.contains("TIMEOUT WARNINGS"),
                    "{}",
                    cmd.get_name()
                );
            }
        }
    }
}

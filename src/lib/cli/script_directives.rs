//! Options a batch script carries at its top, as sbatch reads `#SBATCH`
//! lines: `palloc … -- SCRIPT` reads, before the script's first command,
//! `#PALLOC` lines holding palloc's own options and `#SBATCH` lines holding
//! the sbatch options that mean the same here (a script brought from Slurm
//! keeps working). An option given on the command line wins, as with
//! sbatch. An sbatch option with no meaning here is named in a warning; a
//! `#PALLOC` option palloc does not know is refused as on the command line.

use std::ffi::OsString;
use std::io::{BufRead, Read};

use clap::parser::ValueSource;

/// Most bytes of a script read for its directives.
const MAX_HEAD: u64 = 1 << 20;

/// The sbatch options that mean the same for palloc: (sbatch's short,
/// sbatch's long, palloc's long).
const SBATCH: &[(Option<char>, &str, &str)] = &[
    (Some('N'), "nodes", "nodes"),
    (Some('w'), "nodelist", "nodelist"),
    (Some('x'), "exclude", "exclude"),
    (None, "mem", "mem"),
    (Some('t'), "time", "time"),
    (Some('p'), "partition", "partition"),
    (Some('A'), "account", "account"),
    (None, "qos", "qos"),
    (None, "reservation", "reservation"),
    (Some('C'), "constraint", "constraint"),
    (Some('J'), "job-name", "request-id"),
    (Some('o'), "output", "output"),
];

/// The arguments `argv` (the program's first) with the directives of the
/// script after `--` added where the command line sets no value of the
/// same option; and warnings for the directives not used. `cmd` is
/// palloc's clap definition. Without a readable script, or when the
/// command line does not parse, `argv` as it is (clap then says what is
/// wrong).
pub fn merged(argv: Vec<OsString>, cmd: &clap::Command) -> (Vec<OsString>, Vec<String>) {
    let Some(dashes) = argv.iter().position(|a| a == "--") else {
        return (argv, Vec::new());
    };
    let Some(script) = argv.get(dashes + 1).and_then(read_head) else {
        return (argv, Vec::new());
    };
    let Ok(given) = cmd.clone().try_get_matches_from(&argv) else {
        return (argv, Vec::new());
    };
    let mut warnings = Vec::new();
    let mut extra: Vec<OsString> = Vec::new();
    for d in directives(&script) {
        let tokens = match d.kind {
            Kind::Palloc => d.words,
            Kind::Sbatch => translate(&d.words, &mut warnings),
        };
        for (id, words) in options(cmd, &tokens, &mut warnings) {
            let on_line = given.value_source(&id) == Some(ValueSource::CommandLine);
            if !on_line {
                extra.extend(words.into_iter().map(OsString::from));
            }
        }
    }
    let mut out = Vec::with_capacity(argv.len() + extra.len());
    out.push(argv[0].clone());
    out.extend(extra);
    out.extend(argv.into_iter().skip(1));
    (out, warnings)
}

/// The first [`MAX_HEAD`] bytes of the regular file `path`, as text.
fn read_head(path: &OsString) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    // Line by line up to the first command (where the directives end), so
    // that a program named after `--` (`-- /bin/bash SCRIPT`) costs one
    // line's read, not a megabyte's.
    let mut head = std::io::BufReader::new(std::fs::File::open(path).ok()?.take(MAX_HEAD));
    let mut text = String::new();
    loop {
        let mut line = String::new();
        if head.read_line(&mut line).ok()? == 0 {
            break;
        }
        let t = line.trim();
        let command = !t.is_empty() && !t.starts_with('#');
        text.push_str(&line);
        if command {
            break;
        }
    }
    Some(text)
}

/// Whose options a directive line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Palloc,
    Sbatch,
}

/// One directive line, split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Directive {
    kind: Kind,
    words: Vec<String>,
}

/// The directives at the top of `script`: `#PALLOC` and `#SBATCH` lines
/// before its first line that is neither blank nor a comment (sbatch's
/// rule; the `#!` line is a comment).
fn directives(script: &str) -> Vec<Directive> {
    let mut out = Vec::new();
    for line in script.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('#') {
            break;
        }
        let kind = if let Some(rest) = t.strip_prefix("#PALLOC") {
            Some((Kind::Palloc, rest))
        } else {
            t.strip_prefix("#SBATCH").map(|rest| (Kind::Sbatch, rest))
        };
        if let Some((kind, rest)) = kind.filter(|(_, r)| r.starts_with([' ', '\t'])) {
            out.push(Directive {
                kind,
                words: split_words(rest),
            });
        }
    }
    out
}

/// Words as a shell splits them: blanks separate, `'…'` and `"…"` quote;
/// a `#` starting a word starts a comment.
fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// sbatch's words as palloc's: each option in [`SBATCH`] renamed, the
/// others left out with a warning.
fn translate(words: &[String], warnings: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        let (name, attached) = split_option(w);
        let found = SBATCH.iter().find(|(short, long, _)| match &name {
            Name::Long(l) => l == long,
            Name::Short(c) => Some(*c) == *short,
            Name::None => false,
        });
        match found {
            Some((_, _, ours)) => {
                out.push(format!("--{ours}"));
                match attached {
                    Some(v) => out.push(v),
                    None => out.extend(it.next().cloned()),
                }
            }
            None => {
                // An unknown option's value (a word not starting with -)
                // goes with it.
                if attached.is_none() && it.peek().is_some_and(|n| !n.starts_with('-')) {
                    it.next();
                }
                warnings.push(format!(
                    "#SBATCH {w}: not an option palloc takes from a script (it reads -N, -w, -x, \
--mem, -t, -p, -A, --qos, --reservation, -C, -J and -o); ignored"
                ));
            }
        }
    }
    out
}

/// An option word's name.
enum Name {
    Long(String),
    Short(char),
    None,
}

/// `--name=value`, `--name`, `-Xvalue`, `-X` or a plain word.
fn split_option(w: &str) -> (Name, Option<String>) {
    if let Some(long) = w.strip_prefix("--") {
        return match long.split_once('=') {
            Some((n, v)) => (Name::Long(n.into()), Some(v.into())),
            None => (Name::Long(long.into()), None),
        };
    }
    let mut chars = w.chars();
    match (chars.next(), chars.next()) {
        (Some('-'), Some(c)) => {
            let rest: String = chars.collect();
            (Name::Short(c), (!rest.is_empty()).then_some(rest))
        }
        _ => (Name::None, None),
    }
}

/// The options in `tokens` (palloc's words), each with its clap id and
/// its words as given; a word that is no palloc option is named in a
/// warning and left out.
fn options(
    cmd: &clap::Command,
    tokens: &[String],
    warnings: &mut Vec<String>,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut it = tokens.iter();
    while let Some(w) = it.next() {
        let (name, attached) = split_option(w);
        let arg = cmd.get_arguments().find(|a| match &name {
            Name::Long(l) => {
                a.get_long() == Some(l.as_str())
                    || a.get_all_aliases().is_some_and(|v| v.contains(&l.as_str()))
            }
            Name::Short(c) => a.get_short() == Some(*c),
            Name::None => false,
        });
        let Some(arg) = arg else {
            warnings.push(format!("#PALLOC {w}: not a palloc option; ignored"));
            continue;
        };
        let mut words = vec![w.clone()];
        if attached.is_none() && arg.get_action().takes_values() {
            words.extend(it.next().cloned());
        }
        out.push((arg.get_id().to_string(), words));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_stop_at_the_first_command() {
        let s = "#!/bin/sh\n#SBATCH -N 2 -t 30\n\n# a comment\n#PALLOC --inherit none\necho hi\n#SBATCH -N 9\n";
        let d = directives(s);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].words, ["-N", "2", "-t", "30"]);
        assert_eq!(d[1].kind, Kind::Palloc);
    }

    #[test]
    fn words_split_as_a_shell_does() {
        assert_eq!(
            split_words(" -J 'my job' --mem=\"4G\" # note"),
            ["-J", "my job", "--mem=4G"]
        );
    }

    #[test]
    fn sbatch_options_are_renamed_and_the_rest_warned_of() {
        let mut w = Vec::new();
        let t = translate(
            &split_words("-N2 --job-name=nightly --mail-user=me@x -t 30 --exclusive"),
            &mut w,
        );
        assert_eq!(
            t,
            ["--nodes", "2", "--request-id", "nightly", "--time", "30"]
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("--mail-user"));
    }
}

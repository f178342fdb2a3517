//! Issue 44.5, held for the project's own code (`src/` and
//! `crates/*/src/`, tests inside them included): no polling loop (every
//! wait is on an event or a deadline: the timed waits that are not on a
//! descriptor sit in one helper per crate, each with its doc comment
//! saying why it is not a poll), diagnostics through one place per binary
//! (no `eprintln!`: it panics on a full or closed stderr), and no function
//! over 100 lines. Read as text for the first two, as Rust (`syn`) for the
//! lengths.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The one file per crate that may hold a timed wait not on a descriptor.
const WAIT_HELPERS: [&str; 3] = [
    "src/lib/ops/wait.rs",
    "crates/pmix-conn/src/conn/wait.rs",
    "crates/pmix-psched/src/psched/wait.rs",
];

/// What a nap or a timed wait outside a descriptor looks like.
const TIMED_WAITS: [&str; 5] = [
    "thread::sleep",
    "recv_timeout",
    "wait_timeout",
    "park_timeout",
    "sleep_until",
];

/// The files that may touch stderr itself: the diagnostics modules, the
/// tools' ui (is stderr a terminal; the queued spinner drawn there) and a
/// launched job's own stderr forwarded (its output, not a diagnostic).
const STDERR_WRITERS: [&str; 6] = [
    "crates/pmix-conn/src/conn/diag.rs",
    "src/lib/app/diag.rs",
    "crates/pmix-dvm/src/server/diag.rs",
    "crates/pmix-psched/src/psched/diag.rs",
    "src/lib/app/ui.rs",
    "src/lib/app/launch.rs",
];

/// Longest a function may be, from `fn` to its closing brace.
const MAX_FN_LINES: usize = 100;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `.rs` file of the project's code, by path from the root.
fn project_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for e in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let src = e.expect("dir entry").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.sort();
    assert!(files.len() > 100, "too few files found: {}", files.len());
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
            (rel, text)
        })
        .collect()
}

/// The lines of `text` that are code, not comments, each with its number.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

#[test]
fn no_nap_or_timed_wait_outside_the_one_helper_of_each_crate() {
    let mut found = Vec::new();
    let mut helpers_seen = 0;
    for (rel, text) in project_files() {
        let helper = WAIT_HELPERS.contains(&rel.as_str());
        helpers_seen += usize::from(helper);
        for (n, line) in code_lines(&text) {
            if !helper && TIMED_WAITS.iter().any(|w| line.contains(w)) {
                found.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    assert_eq!(helpers_seen, WAIT_HELPERS.len(), "a wait helper moved");
    assert!(
        found.is_empty(),
        "a nap or a timed wait outside the crate's wait helper (wait on the event, or name \
         the retry in the helper):\n{}",
        found.join("\n")
    );
}

#[test]
fn stderr_is_written_through_one_place_per_binary() {
    let mut found = Vec::new();
    for (rel, text) in project_files() {
        let writer = STDERR_WRITERS.contains(&rel.as_str());
        for (n, line) in code_lines(&text) {
            let touches = line.contains("io::stderr()") && !writer;
            if line.contains("eprintln!") || line.contains("eprint!") || touches {
                found.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "stderr written outside the binary's diagnostics module (say!, app::diag, \
         server::diag, psched::diag, conn::diag under them):\n{}",
        found.join("\n")
    );
}

/// Every function's length, from `fn` to its closing brace.
struct Lengths<'a> {
    file: &'a str,
    found: Vec<(usize, String)>,
}

impl Lengths<'_> {
    fn add(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = block.brace_token.span.close().end().line;
        let name = format!("{}:{first} {}", self.file, sig.ident);
        self.found.push((last + 1 - first, name));
    }
}

impl<'ast> Visit<'ast> for Lengths<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(&f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add(&f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.add(&f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

#[test]
fn no_function_is_over_100_lines() {
    let mut all = Vec::new();
    for (rel, text) in project_files() {
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let mut l = Lengths {
            file: &rel,
            found: Vec::new(),
        };
        l.visit_file(&file);
        all.extend(l.found);
    }
    assert!(all.len() > 1000, "too few functions found: {}", all.len());
    all.sort_by_key(|f| std::cmp::Reverse(f.0));
    eprintln!("FIGURE longest function: {} lines, {}", all[0].0, all[0].1);
    let long: Vec<String> = all
        .iter()
        .take_while(|(n, _)| *n > MAX_FN_LINES)
        .map(|(n, f)| format!("{n} lines: {f}"))
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them):\n{}",
        long.join("\n")
    );
}

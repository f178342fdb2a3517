//! The library's layering, checked on the source against ARCHITECTURE.md:
//! the test reads the "Layers" table there (module, may import) and fails
//! when a module of `src/lib` names anything its row does not allow. A new
//! dependency between layers is a design change: it is made by editing that
//! table. Inside the connection layer no two files import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One row of the table: the module and what it may name (`a` for all of
/// module `a`, `a::b` for one part of it).
type Rules = BTreeMap<String, Vec<String>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The backticked words of a table cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The rows of ARCHITECTURE.md's layer table.
fn rules_from_architecture() -> Rules {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut rules = Rules::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| layer | module |") {
            in_table = true;
            continue;
        }
        if in_table && !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", layer, module, holds, may import, "".
        if !in_table || cells.len() < 6 || cells[2].starts_with("---") {
            continue;
        }
        let module = ticked(cells[2]).into_iter().next().expect("module cell");
        rules.insert(module, ticked(cells[4]));
    }
    rules
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// `a` or `a::b` at the start of `s` (a path after `crate::`).
fn path_at(s: &str) -> (String, Option<String>) {
    let a = ident(s);
    let b = s[a.len()..]
        .strip_prefix("::")
        .map(ident)
        .filter(|b| !b.is_empty());
    (a, b)
}

/// Every `crate::a` / `crate::a::b` named in code (comments stripped),
/// including each member of a `crate::{a::x, b}` group.
fn named(src: &str) -> BTreeSet<(String, Option<String>)> {
    let mut out = BTreeSet::new();
    for line in src.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                for member in inner.split(',') {
                    let m = member.trim();
                    if !m.is_empty() {
                        out.insert(path_at(m));
                    }
                }
            } else {
                out.insert(path_at(rest));
            }
        }
    }
    out
}

fn module_files(lib: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let dir = lib.join(module);
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    }
    let single = lib.join(format!("{module}.rs"));
    if single.is_file() {
        files.push(single);
    }
    files
}

#[test]
fn layers_import_only_what_architecture_allows() {
    let rules = rules_from_architecture();
    assert!(rules.len() >= 10, "layer table not found: {rules:?}");
    let lib = root().join("src/lib");
    let mut bad = Vec::new();
    for (module, allowed) in &rules {
        let files = module_files(&lib, module);
        assert!(!files.is_empty(), "module {module} has no source");
        for f in files {
            let src = std::fs::read_to_string(&f).expect("read source");
            for (a, b) in named(&src) {
                if a == *module {
                    continue;
                }
                let whole = allowed.contains(&a);
                let part = b
                    .as_ref()
                    .is_some_and(|b| allowed.contains(&format!("{a}::{b}")));
                if !whole && !part {
                    let what = b.map_or(a.clone(), |b| format!("{a}::{b}"));
                    bad.push(format!("{} names crate::{what}", f.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

#[test]
fn every_library_module_has_a_row() {
    let rules = rules_from_architecture();
    let src = std::fs::read_to_string(root().join("src/lib/lib.rs")).expect("read lib.rs");
    let mut modules = 0;
    for line in src.lines() {
        let l = line.trim();
        let Some(m) = l
            .strip_prefix("pub mod ")
            .or_else(|| l.strip_prefix("mod "))
            .and_then(|m| m.strip_suffix(';'))
        else {
            continue;
        };
        modules += 1;
        assert!(
            rules.contains_key(m),
            "module {m} is missing from ARCHITECTURE.md's layer table"
        );
    }
    assert_eq!(
        modules,
        rules.len(),
        "a table row names no module: {rules:?}"
    );
}

#[test]
fn the_import_reader_sees_groups_and_skips_comments() {
    let n = named("use crate::{proto::keys, codec}; // crate::x");
    assert!(n.contains(&("proto".to_string(), Some("keys".to_string()))));
    assert!(n.contains(&("codec".to_string(), None)));
    assert!(!n.iter().any(|(a, _)| a == "x"));
    assert_eq!(
        ticked("`proto`, `conn::frame` (why)"),
        ["proto", "conn::frame"]
    );
}

/// The files of `conn` that one file of it names (`super::x`, `crate::conn::x`).
fn conn_siblings(src: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in src.lines() {
        let code = line.split("//").next().unwrap_or("");
        for pat in ["super::", "crate::conn::"] {
            let mut rest = code;
            while let Some(i) = rest.find(pat) {
                rest = &rest[i + pat.len()..];
                let groups: Vec<String> = match rest.strip_prefix('{') {
                    Some(g) => g
                        .split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .map(|m| ident(m.trim()))
                        .collect(),
                    None => vec![ident(rest)],
                };
                out.extend(groups.into_iter().filter(|g| files.contains(g)));
            }
        }
    }
    out
}

#[test]
fn no_two_files_of_the_connection_layer_import_each_other() {
    let dir = root().join("src/lib/conn");
    let mut paths = Vec::new();
    rust_files(&dir, &mut paths);
    let stem = |p: &PathBuf| p.file_stem().unwrap().to_string_lossy().into_owned();
    let files: BTreeSet<String> = paths.iter().map(stem).filter(|s| s != "mod").collect();
    let mut uses = BTreeMap::new();
    for p in &paths {
        let src = std::fs::read_to_string(p).expect("read source");
        // Tests may reach anywhere; the circle that matters is in the code.
        let code = src.split("#[cfg(test)]").next().unwrap_or("");
        let mut named = conn_siblings(code, &files);
        named.remove(&stem(p));
        uses.insert(stem(p), named);
    }
    let mut circles = Vec::new();
    for (a, named) in &uses {
        for b in named {
            if a < b && uses.get(b).is_some_and(|n| n.contains(a)) {
                circles.push(format!("conn/{a}.rs ⇄ conn/{b}.rs"));
            }
        }
    }
    assert!(
        uses.get("route")
            .is_some_and(|n| n.contains("client") && n.contains("holder")),
        "the route file decides between client and holder: {uses:?}"
    );
    assert!(circles.is_empty(), "import circles: {circles:?}");
}

//! The library's layering (ARCHITECTURE.md), checked on the source: each
//! top-level module of `src/lib` may name only the modules its row allows.
//! A new dependency between layers is a design change: update
//! ARCHITECTURE.md and this table together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// (module, what it may name: a module, or `module::submodule` for one part).
const ALLOWED: &[(&str, &[&str])] = &[
    ("proto", &[]),
    ("error", &["proto"]),
    ("codec", &["proto", "error"]),
    ("conn", &["proto", "error", "codec"]),
    (
        "ops",
        &["proto", "error", "codec", "conn", "render::records"],
    ),
    (
        "render",
        &["proto", "error", "codec", "cli::common", "cli::parse"],
    ),
    (
        "cli",
        &["proto", "error", "codec", "conn", "render", "psched"],
    ),
    ("sched", &["proto", "error"]),
    ("psched", &["proto", "error", "codec", "conn", "sched"]),
    ("dvm", &["proto", "error", "sched", "render::records"]),
    (
        "server",
        &[
            "proto",
            "error",
            "codec",
            "conn::frame",
            "conn::handshake",
            "conn::discover",
            "ops::status_query",
            "render::records",
            "dvm",
            "sched",
        ],
    ),
    (
        "app",
        &["proto", "error", "codec", "conn", "ops", "render", "cli"],
    ),
];

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

/// Every `crate::a` / `crate::a::b` named in code (comments stripped).
fn named(src: &str) -> BTreeSet<(String, Option<String>)> {
    let mut out = BTreeSet::new();
    for line in src.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let ident = |s: &str| -> String {
                s.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            };
            let a = ident(rest);
            let after = &rest[a.len()..];
            let b = after
                .strip_prefix("::")
                .map(ident)
                .filter(|b| !b.is_empty());
            out.insert((a, b));
        }
    }
    out
}

#[test]
fn layers_import_only_what_architecture_allows() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib");
    let mut bad = Vec::new();
    for (module, allowed) in ALLOWED {
        let mut files = Vec::new();
        let dir = lib.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let single = lib.join(format!("{module}.rs"));
        if single.is_file() {
            files.push(single);
        }
        assert!(!files.is_empty(), "module {module} has no source");
        for f in files {
            let src = std::fs::read_to_string(&f).expect("read source");
            for (a, b) in named(&src) {
                if a == *module {
                    continue;
                }
                let ok = allowed.contains(&a.as_str())
                    || b.as_ref()
                        .is_some_and(|b| allowed.contains(&format!("{a}::{b}").as_str()));
                if !ok {
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
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib/lib.rs");
    let src = std::fs::read_to_string(lib).expect("read lib.rs");
    for line in src.lines() {
        let l = line.trim();
        let Some(m) = l
            .strip_prefix("pub mod ")
            .or_else(|| l.strip_prefix("mod "))
            .and_then(|m| m.strip_suffix(';'))
        else {
            continue;
        };
        assert!(
            ALLOWED.iter().any(|(n, _)| *n == m),
            "module {m} is missing from the layering table"
        );
    }
    assert!(named("use crate::proto::keys; // crate::x")
        .contains(&("proto".to_string(), Some("keys".to_string()))));
}

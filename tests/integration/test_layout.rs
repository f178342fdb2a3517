//! With `autotests = false`, a test file that no crate declares is never
//! compiled: these checks make such a file fail the suite instead of being
//! silently left out (tests/README.md says how to bring one in).

use std::path::Path;

/// The `.rs` files directly in `dir`, by stem, sorted.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(String::from))
        .collect();
    v.sort();
    v
}

fn tests_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests"))
}

#[test]
fn no_test_file_sits_outside_the_two_crates() {
    let loose = rust_files(tests_dir());
    assert!(
        loose.is_empty(),
        "tests/{{{}}}.rs would not be compiled: move each into tests/integration/ \
         and declare it in main.rs (see tests/README.md)",
        loose.join(",")
    );
}

#[test]
fn every_module_file_is_declared_by_its_crate() {
    for krate in ["integration", "conformance"] {
        let dir = tests_dir().join(krate);
        let main = std::fs::read_to_string(dir.join("main.rs")).expect("main.rs");
        let declared: Vec<&str> = main
            .lines()
            .filter_map(|l| l.trim().strip_prefix("mod "))
            .filter_map(|l| l.strip_suffix(';'))
            .collect();
        for stem in rust_files(&dir).iter().filter(|s| *s != "main") {
            assert!(
                declared.contains(&stem.as_str()),
                "tests/{krate}/{stem}.rs is not declared in tests/{krate}/main.rs \
                 (add `mod {stem};`): it would not be compiled"
            );
        }
    }
}

//! The committed man pages and shell completions must match what the clap
//! definitions generate. Run with `PMIX_TOOLS_REGEN_DOCS=1` to rewrite them.

use pmix_tools::cli::docs::doc_files;
use std::path::Path;

#[test]
fn docs_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let regen = std::env::var_os("PMIX_TOOLS_REGEN_DOCS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    let files = doc_files();
    assert_eq!(
        files.len(),
        6 * 4,
        "six commands, a man page and three completions each"
    );
    for (rel, want) in files {
        let path = root.join(&rel);
        let have = std::fs::read(&path).ok();
        if have.as_deref() == Some(want.as_slice()) {
            continue;
        }
        if regen {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).unwrap();
            }
            std::fs::write(&path, &want).unwrap();
        } else {
            stale.push(rel.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale: run `PMIX_TOOLS_REGEN_DOCS=1 cargo test --test integration docs_current` (out of date: {})",
        stale.join(", ")
    );
}

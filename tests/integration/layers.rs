//! The layering, checked against ARCHITECTURE.md. The layers are crates of
//! one workspace (issue 44): a crate names only the crates its Cargo.toml
//! lists, so an import upward or sideways between crates, or a circle of
//! crates, does not compile, and a listed crate the code never names fails
//! clippy (`unused_crate_dependencies`). What Cargo cannot say is held here,
//! from the "Layers" table (crate, module, may import, held by): which
//! modules of its own crate a module may name, and which part of a crate
//! below it when its row allows only a part (`sched` names `proto` of
//! pmix-wire, not its codec). The source is read as Rust (`syn`), not as
//! lines: use trees with nested groups, paths anywhere, macro arguments,
//! `super::` chains, paths through a workspace crate's name
//! (`pmix_wire::codec::…`); `#[cfg(test)]` code is left out. A new
//! dependency between layers is a design change: it is made by editing
//! that table (and, between crates, a Cargo.toml). Inside a crate no files
//! import each other round a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One row of the table.
#[derive(Debug, Clone)]
struct Row {
    /// The package that holds the module (`pmix-wire`).
    krate: String,
    /// What the module may name (`a` for all of module `a`, `a::b` for one
    /// part of it).
    allowed: Vec<String>,
    /// Who holds the row: `Cargo` (the crate's dependencies say all of it)
    /// or `layers test` (this test holds what is finer than a crate).
    held_by: String,
}

/// The table's rows by module.
type Rules = BTreeMap<String, Row>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The package whose source is at the workspace root.
const ROOT_PACKAGE: &str = "pmix-tools";

/// The library source of a workspace package.
fn src_of(krate: &str) -> PathBuf {
    if krate == ROOT_PACKAGE {
        root().join("src/lib")
    } else {
        root().join("crates").join(krate).join("src")
    }
}

/// Every package of the workspace: the root's and those under `crates/`.
fn packages() -> Vec<String> {
    let mut all = vec![ROOT_PACKAGE.to_string()];
    for e in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let p = e.expect("dir entry").path();
        if p.join("Cargo.toml").is_file() {
            all.push(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    all
}

/// The workspace packages `krate`'s Cargo.toml lists under
/// `[dependencies]` (`name.workspace = true` or `name = { path = … }`).
fn cargo_deps(krate: &str) -> BTreeSet<String> {
    let manifest = if krate == ROOT_PACKAGE {
        root().join("Cargo.toml")
    } else {
        root().join("crates").join(krate).join("Cargo.toml")
    };
    let text = std::fs::read_to_string(&manifest).expect("Cargo.toml");
    let ours: BTreeSet<String> = packages().into_iter().collect();
    let mut in_deps = false;
    let mut deps = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        let name = line.split(['.', '=', ' ']).next().unwrap_or("");
        if in_deps && ours.contains(name) {
            deps.insert(name.to_string());
        }
    }
    deps
}

/// The backticked words of a table cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The rows of ARCHITECTURE.md's layer table, its columns found by their
/// headings.
fn rules_from_architecture() -> Rules {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut rules = Rules::new();
    let mut columns: Option<Vec<String>> = None;
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if line.starts_with("| layer |") {
            columns = Some(cells.iter().map(|c| c.to_string()).collect());
            continue;
        }
        let Some(cols) = &columns else {
            continue;
        };
        if !line.starts_with('|') {
            break;
        }
        if cells.len() < cols.len() || cells[1].starts_with("---") {
            continue;
        }
        let cell = |name: &str| {
            let i = cols.iter().position(|c| c == name);
            cells[i.unwrap_or_else(|| panic!("the layer table has no `{name}` column"))]
        };
        let module = ticked(cell("module"))
            .into_iter()
            .next()
            .expect("module cell");
        let row = Row {
            krate: ticked(cell("crate"))
                .into_iter()
                .next()
                .expect("crate cell"),
            allowed: ticked(cell("may import")),
            held_by: cell("held by").to_string(),
        };
        rules.insert(module, row);
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

/// A path inside the crate, from its root: `["conn", "frame", "Frame"]`.
type CratePath = Vec<String>;

/// What the source of module `module` (its path from the crate root) names
/// inside the workspace, read as Rust: every `use` tree (groups, nested
/// groups, `self`, across lines), every path in code and types, and the
/// paths in macro arguments; `crate::`, `super::` (any number) and `self::`
/// are resolved against the module, inline `mod`s included, and a path
/// through a workspace crate's name (`pmix_wire::codec::Info`) is the
/// module path after it (`codec::Info`: module names are unique in the
/// workspace, and each crate imports the modules below it by those names).
/// Items under `#[cfg(test)]` are left out: tests may reach anywhere.
fn named_in(src: &str, module: &[String]) -> BTreeSet<CratePath> {
    let file = syn::parse_file(src).expect("the source parses");
    let mut r = Reader {
        module: module.to_vec(),
        crates: packages().iter().map(|p| p.replace('-', "_")).collect(),
        out: BTreeSet::new(),
    };
    syn::visit::Visit::visit_file(&mut r, &file);
    r.out
}

struct Reader {
    module: Vec<String>,
    /// The workspace's crate names as Rust spells them (`pmix_wire`).
    crates: BTreeSet<String>,
    out: BTreeSet<CratePath>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let t = a.meta.require_list().map(|l| l.tokens.to_string());
            t.is_ok_and(|t| t.split(|c: char| !c.is_alphanumeric()).any(|w| w == "test"))
        }
    })
}

impl Reader {
    /// `segs` as a path from the crate root, when it starts in the crate.
    fn resolve(&self, segs: &[String]) -> Option<CratePath> {
        let (base, rest): (Vec<String>, &[String]) = match segs.first()?.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            w if self.crates.contains(w) => (Vec::new(), &segs[1..]),
            "self" => (self.module.clone(), &segs[1..]),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let keep = self.module.len().checked_sub(ups)?;
                (self.module[..keep].to_vec(), &segs[ups..])
            }
            _ => return None,
        };
        let mut full = base;
        full.extend(rest.iter().filter(|s| *s != "self").cloned());
        Some(full)
    }

    fn add(&mut self, segs: &[String]) {
        if let Some(p) = self.resolve(segs) {
            if !p.is_empty() {
                self.out.insert(p);
            }
        }
    }

    /// Every path a `use` tree under `prefix` names.
    fn use_tree(&mut self, prefix: &mut Vec<String>, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                self.add(&[prefix.clone(), vec![n.ident.to_string()]].concat())
            }
            syn::UseTree::Rename(n) => {
                self.add(&[prefix.clone(), vec![n.ident.to_string()]].concat())
            }
            syn::UseTree::Glob(_) => self.add(prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths in a macro's arguments: `crate`/`super`/`self` followed by
    /// `::`-joined identifiers.
    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        let mut path: Vec<String> = Vec::new();
        let mut colons = 0;
        for tt in ts {
            match tt {
                proc_macro2::TokenTree::Ident(i) => {
                    let w = i.to_string();
                    if colons == 2 && !path.is_empty() {
                        path.push(w);
                    } else {
                        self.add(&path);
                        let starts = ["crate", "super", "self"].contains(&w.as_str())
                            || self.crates.contains(&w);
                        path = if starts { vec![w] } else { Vec::new() };
                    }
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
                proc_macro2::TokenTree::Group(g) => {
                    self.add(&std::mem::take(&mut path));
                    colons = 0;
                    self.tokens(g.stream());
                }
                _ => {
                    self.add(&std::mem::take(&mut path));
                    colons = 0;
                }
            }
        }
        self.add(&path);
    }
}

impl<'ast> syn::visit::Visit<'ast> for Reader {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(m) => &m.attrs,
            syn::Item::Struct(m) => &m.attrs,
            syn::Item::Enum(m) => &m.attrs,
            syn::Item::Const(m) => &m.attrs,
            syn::Item::Static(m) => &m.attrs,
            syn::Item::Trait(m) => &m.attrs,
            syn::Item::Type(m) => &m.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    /// `pub(super)`, `pub(in path)`: who may see an item, not an import.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.add(&segs);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The module a source file is: `src/lib/conn/client.rs` is
/// `conn::client`, `src/lib/conn/mod.rs` is `conn`.
fn module_of(lib: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(lib).expect("a file of the library");
    let mut m: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if m.last().is_some_and(|l| l == "mod" || l == "lib") {
        m.pop();
    }
    m
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

/// What `allowed` (a row's last cell) says of naming `p`: allowed by the
/// entry that allows it, or `None`.
fn allowance<'a>(allowed: &'a [String], p: &[String]) -> Option<&'a String> {
    allowed.iter().find(|a| {
        let parts: Vec<&str> = a.split("::").collect();
        parts.len() <= p.len() && parts.iter().zip(p).all(|(x, y)| x == y)
    })
}

/// The modules the table puts in crate `krate`.
fn modules_of<'a>(rules: &'a Rules, krate: &str) -> Vec<&'a String> {
    rules
        .iter()
        .filter(|(_, r)| r.krate == krate)
        .map(|(m, _)| m)
        .collect()
}

/// Whether Cargo holds all of `module`'s row: every module it could name
/// (the other modules of its crate, every module of the crates its
/// Cargo.toml lists) it may name whole, so no name that compiles breaks
/// the row. Otherwise this test holds the rest: the modules of its own
/// crate it may not name, and the parts of a crate below it it may not.
fn held_by_cargo(rules: &Rules, module: &str) -> bool {
    let row = &rules[module];
    let mut reachable: Vec<&String> = modules_of(rules, &row.krate);
    for dep in cargo_deps(&row.krate) {
        reachable.extend(modules_of(rules, &dep));
    }
    reachable
        .into_iter()
        .all(|m| m == module || row.allowed.contains(m))
}

#[test]
fn the_table_agrees_with_cargo() {
    let rules = rules_from_architecture();
    let packages = packages();
    let mut wrong = Vec::new();
    for (module, row) in &rules {
        if !packages.contains(&row.krate) {
            wrong.push(format!("{module}: no package {}", row.krate));
            continue;
        }
        let deps = cargo_deps(&row.krate);
        for a in &row.allowed {
            let target = a.split("::").next().unwrap_or("");
            match rules.get(target) {
                None => wrong.push(format!("{module} may import `{a}`, which has no row")),
                Some(t) if t.krate != row.krate && !deps.contains(&t.krate) => wrong.push(format!(
                    "{module} may import `{a}`, but {} does not depend on {}",
                    row.krate, t.krate
                )),
                Some(_) => {}
            }
        }
        let want = if held_by_cargo(&rules, module) {
            "Cargo"
        } else {
            "layers test"
        };
        if row.held_by != want {
            wrong.push(format!(
                "{module}'s row is held by {want}, the table says {:?}",
                row.held_by
            ));
        }
    }
    // A crate's dependency is there for a row that names it (the root
    // package's are there for its binaries too: pdvm's server, the
    // scheduler pdvm and psched share, which it re-exports).
    for krate in packages.iter().filter(|k| *k != ROOT_PACKAGE) {
        for dep in cargo_deps(krate) {
            let named = modules_of(&rules, krate).into_iter().any(|m| {
                rules[m].allowed.iter().any(|a| {
                    let target = a.split("::").next().unwrap_or("");
                    rules.get(target).is_some_and(|t| t.krate == dep)
                })
            });
            if !named {
                wrong.push(format!(
                    "{krate} depends on {dep}, which no row of it names"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's table and the Cargo.tomls disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn layers_import_only_what_architecture_allows() {
    let rules = rules_from_architecture();
    assert!(rules.len() >= 10, "layer table not found: {rules:?}");
    let mut bad = Vec::new();
    let mut unused = Vec::new();
    for (module, row) in &rules {
        let lib = src_of(&row.krate);
        let files = module_files(&lib, module);
        assert!(!files.is_empty(), "module {module} has no source");
        let mut used = BTreeSet::new();
        for f in files {
            let src = std::fs::read_to_string(&f).expect("read source");
            for p in named_in(&src, &module_of(&lib, &f)) {
                if p[0] == *module {
                    continue;
                }
                // A name into a crate the row may not name does not compile
                // (Cargo): what is left to refuse is inside the crate, or a
                // part of a crate below that the row leaves out.
                match allowance(&row.allowed, &p) {
                    Some(a) => {
                        used.insert(a.clone());
                    }
                    None => bad.push(format!("{} names crate::{}", f.display(), p.join("::"))),
                }
            }
        }
        for a in row.allowed.iter().filter(|a| !used.contains(*a)) {
            unused.push(format!("{module} may import `{a}` but its code does not"));
        }
    }
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
    assert!(
        unused.is_empty(),
        "ARCHITECTURE.md allows more than the code uses (tighten the row):\n{}",
        unused.join("\n")
    );
}

#[test]
fn every_library_module_has_a_row() {
    let rules = rules_from_architecture();
    let mut modules = 0;
    for krate in packages() {
        let lib = src_of(&krate).join("lib.rs");
        let src = std::fs::read_to_string(&lib).expect("read lib.rs");
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
                rules.get(m).is_some_and(|r| r.krate == krate),
                "module {m} of {krate} is missing from ARCHITECTURE.md's layer table \
(or its row names another crate)"
            );
        }
    }
    assert_eq!(
        modules,
        rules.len(),
        "a table row names no module: {rules:?}"
    );
}

#[test]
fn the_import_reader_reads_rust_not_lines() {
    let src = r#"
        use crate::{
            proto::keys,
            codec::{self, buffer::Decoder},
        };
        use super::super::ops::spawn;
        use pmix_wire::proto::cmd;
        // crate::commented::out
        fn f() -> crate::error::Result<()> {
            let _ = format!("{}", crate::render::table(1));
            let _ = super::sibling::x();
            let _ = vec![pmix_conn::conn::frame::MAX_PAYLOAD];
            Ok(())
        }
        mod inner {
            use super::super::conn as c;
        }
        #[cfg(test)]
        mod tests {
            use crate::server::only_in_tests;
        }
    "#;
    let module: Vec<String> = ["app", "launch"].iter().map(|s| s.to_string()).collect();
    let n = named_in(src, &module);
    let has = |p: &str| n.contains(&p.split("::").map(String::from).collect::<Vec<_>>());
    for want in [
        "proto::keys",
        "codec",
        "codec::buffer::Decoder",
        "ops::spawn",
        "error::Result",
        "render::table",
        "app::sibling::x",
        "app::conn",
        "proto::cmd",
        "conn::frame::MAX_PAYLOAD",
    ] {
        assert!(has(want), "{want} not seen in {n:?}");
    }
    assert!(!n.iter().any(|p| p[0] == "commented"), "{n:?}");
    assert!(
        !n.iter().any(|p| p[0] == "server"),
        "tests are left out: {n:?}"
    );
    assert_eq!(
        ticked("`proto`, `conn::frame` (why)"),
        ["proto", "conn::frame"]
    );
    let allowed = vec!["conn::frame".to_string(), "proto".to_string()];
    assert!(allowance(&allowed, &["conn".into(), "frame".into(), "Frame".into()]).is_some());
    assert!(allowance(&allowed, &["conn".into(), "client".into()]).is_none());
}

#[test]
fn no_two_files_of_the_connection_layer_import_each_other() {
    let lib = src_of("pmix-conn");
    let dir = lib.join("conn");
    let mut paths = Vec::new();
    rust_files(&dir, &mut paths);
    let stem = |p: &PathBuf| p.file_stem().unwrap().to_string_lossy().into_owned();
    let files: BTreeSet<String> = paths.iter().map(stem).filter(|s| s != "mod").collect();
    let mut uses = BTreeMap::new();
    for p in &paths {
        let src = std::fs::read_to_string(p).expect("read source");
        // Tests may reach anywhere (left out): the circle that matters is
        // in the code.
        let mut named: BTreeSet<String> = named_in(&src, &module_of(&lib, p))
            .into_iter()
            .filter(|n| n.len() >= 2 && n[0] == "conn" && files.contains(&n[1]))
            .map(|n| n[1].clone())
            .collect();
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

/// Every file of one crate's library with the files of that crate it names
/// (the file of the longest module prefix of each crate path it names;
/// itself left out). Circles between crates Cargo refuses.
fn file_imports(lib: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut paths = Vec::new();
    rust_files(lib, &mut paths);
    let modules: BTreeSet<Vec<String>> = paths.iter().map(|p| module_of(lib, p)).collect();
    let mut uses = BTreeMap::new();
    for p in &paths {
        let me = module_of(lib, p);
        let src = std::fs::read_to_string(p).expect("read source");
        let named: BTreeSet<Vec<String>> = named_in(&src, &me)
            .into_iter()
            .filter_map(|n| {
                (1..=n.len())
                    .rev()
                    .map(|k| n[..k].to_vec())
                    .find(|m| modules.contains(m))
            })
            .filter(|m| *m != me)
            .collect();
        uses.insert(me, named);
    }
    uses
}

/// The circles of `uses` (strongly connected sets of more than one file),
/// each sorted, by Tarjan's algorithm.
fn circles(uses: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        uses: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let i = self.index.len();
            self.index.insert(v, (i, i));
            self.stack.push(v);
            for w in self.uses.get(v).into_iter().flatten() {
                let Some((w, _)) = self.uses.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.stack.contains(&w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    set.push(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        uses,
        index: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in uses.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn the_circle_finder_finds_a_circle_and_only_one() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let mut uses = BTreeMap::new();
    uses.insert(m("a"), BTreeSet::from([m("b")]));
    uses.insert(m("b"), BTreeSet::from([m("c")]));
    uses.insert(m("c"), BTreeSet::from([m("a"), m("d")]));
    uses.insert(m("d"), BTreeSet::new());
    assert_eq!(circles(&uses), vec![vec!["a", "b", "c"]]);
    uses.get_mut(&m("c")).unwrap().remove(&m("a"));
    assert!(circles(&uses).is_empty());
}

/// Files that still import each other, each circle named by its files
/// (none since issue 44: a new circle is an error, and so is a circle
/// listed here that is gone).
const CIRCLES_LEFT: &[&[&str]] = &[];

#[test]
fn no_two_files_of_a_crate_import_each_other_round_a_circle() {
    let found: Vec<Vec<String>> = packages()
        .iter()
        .flat_map(|k| circles(&file_imports(&src_of(k))))
        .collect();
    let left: Vec<Vec<String>> = CIRCLES_LEFT
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let new: Vec<&Vec<String>> = found.iter().filter(|c| !left.contains(c)).collect();
    assert!(
        new.is_empty(),
        "files importing each other round a circle: {new:#?}"
    );
    let gone: Vec<&Vec<String>> = left.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        gone.is_empty(),
        "circles listed as left that are gone: {gone:#?}"
    );
}

/// The tools' rooms in `app` (issue 44.3): each tool's steps are files in
/// its own folder (`app/palloc/`, `app/pspawn/`, `app/pwatch/`) or its one
/// file (`app/prelease.rs`).
const ROOMS: [&str; 4] = ["palloc", "pspawn", "pwatch", "prelease"];

/// The room of module `m` of the library, if it is in one.
fn room_of(m: &[String]) -> Option<&str> {
    match m {
        [app, room, ..] if app == "app" && ROOMS.contains(&room.as_str()) => Some(room),
        _ => None,
    }
}

/// Which files of `app` import a file of a room not their own: `(file,
/// imported)`.
fn room_crossings(uses: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (me, named) in uses {
        if me.first().map(String::as_str) != Some("app") {
            continue;
        }
        for n in named {
            if room_of(n).is_some_and(|r| room_of(me) != Some(r)) {
                v.push((me.join("::"), n.join("::")));
            }
        }
    }
    v
}

#[test]
fn the_room_rule_finds_a_crossing() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let mut uses = BTreeMap::new();
    uses.insert(m("app::palloc::flow"), BTreeSet::from([m("app::launch")]));
    uses.insert(m("app::launch"), BTreeSet::new());
    assert!(room_crossings(&uses).is_empty());
    uses.insert(
        m("app::pspawn::alloc"),
        BTreeSet::from([m("app::palloc::flow")]),
    );
    uses.insert(m("app::alloc_wait"), BTreeSet::from([m("app::pspawn")]));
    assert_eq!(room_crossings(&uses).len(), 2);
}

#[test]
fn no_file_of_the_tools_imports_another_tools_room() {
    let crossings = room_crossings(&file_imports(&root().join("src/lib")));
    assert!(
        crossings.is_empty(),
        "files importing another tool's room (move what both need below the rooms, into app/): \
{crossings:#?}"
    );
}

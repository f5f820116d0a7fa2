//! The layers ARCHITECTURE.md draws are the ones the code has: every
//! top-level module of the `herald` crate sits in a numbered row of the
//! diagram under "Layers of the host crate", and each `crate::` path in a
//! module's code (tests and comments aside) names a module in its own row
//! or a lower one. A module added without a row, or an import pointing up,
//! fails here naming the file and the path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate's source directory.
fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The row of each module in ARCHITECTURE.md's diagram.
fn rows() -> BTreeMap<String, u32> {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .expect("reading ARCHITECTURE.md");
    let section = page
        .split("## Layers of the host crate")
        .nth(1)
        .expect("ARCHITECTURE.md has a section \"Layers of the host crate\"");
    let diagram = section
        .split("```")
        .nth(1)
        .expect("the section draws the layers in a code block");
    let mut rows = BTreeMap::new();
    let mut row = None;
    for line in diagram.lines() {
        if line.contains('─') {
            break;
        }
        let mut words = line.split_whitespace().peekable();
        if let Some(number) = words.peek().and_then(|w| w.parse::<u32>().ok()) {
            row = Some(number);
            words.next();
        }
        let Some(row) = row else { continue };
        for word in words.filter(|w| !w.starts_with('`')) {
            let name: String = word
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            let rest = &word[name.len()..];
            if !name.is_empty() && (rest.starts_with('/') || rest.starts_with(".rs")) {
                rows.insert(name, row);
            }
        }
    }
    rows
}

/// The top-level modules `lib.rs` declares.
fn modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(source().join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_owned())
        .collect()
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The modules `crate::` paths in `code` name, from the code before its
/// first `#[cfg(test)]`, comment lines left out.
fn imports(code: &str) -> BTreeSet<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    let mut named = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let before = line[..at].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue; // `herald_crate::…` and the like
            }
            let name: String = line[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                named.insert(name);
            }
        }
    }
    named
}

#[test]
fn every_module_has_a_row_and_no_import_points_up() {
    let rows = rows();
    let modules = modules();
    assert!(modules.len() >= 20, "too few modules read: {modules:?}");
    let missing: Vec<&String> = modules.iter().filter(|m| !rows.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "modules without a row in ARCHITECTURE.md's layer diagram: {missing:?}"
    );
    let mut upward = Vec::new();
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for module in &modules {
        let mut found = Vec::new();
        let dir = source().join(module);
        if dir.is_dir() {
            files(&dir, &mut found);
        } else {
            found.push(source().join(format!("{module}.rs")));
        }
        for file in found {
            let code = std::fs::read_to_string(&file).unwrap();
            for used in imports(&code) {
                if &used == module || !modules.contains(&used) {
                    continue;
                }
                edges.insert((module.clone(), used.clone()));
                if rows[&used] > rows[module] {
                    upward.push(format!(
                        "{} (row {}) uses crate::{used} (row {})",
                        file.strip_prefix(source()).unwrap().display(),
                        rows[module],
                        rows[&used]
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up the layers of ARCHITECTURE.md:\n{}",
        upward.join("\n")
    );
    // Within a row modules may use each other one way only: peel off the
    // modules that use none of the rest until none is left, or a cycle is.
    let mut left = edges;
    let mut nodes: BTreeSet<String> = modules.clone();
    loop {
        let leaves: Vec<String> = nodes
            .iter()
            .filter(|n| !left.iter().any(|(from, _)| from == *n))
            .cloned()
            .collect();
        if leaves.is_empty() {
            break;
        }
        for leaf in &leaves {
            nodes.remove(leaf);
        }
        left.retain(|(_, to)| !leaves.contains(to));
    }
    assert!(
        nodes.is_empty(),
        "modules that use each other in a cycle: {nodes:?} ({left:?})"
    );
}

#[test]
fn the_import_reader_skips_tests_comments_and_other_crates() {
    let code = "use crate::store::Store;\n// crate::daemon in a comment\nlet x = herald_crate::plugin;\n#[cfg(test)]\nmod tests { use crate::cli; }\n";
    assert_eq!(
        imports(code),
        BTreeSet::from(["store".to_owned()]),
        "only the import of the code itself"
    );
}

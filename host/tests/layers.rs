//! The layers ARCHITECTURE.md draws are the ones the code has: every
//! top-level module of the `herald` crate sits in a numbered row of the
//! diagram under "Layers of the host crate", each path into the crate a
//! module's code names (`crate::…`, `super::…`, `self::…`, `use` groups
//! included) reaches a module in its own row or a lower one, and no two
//! top-level modules use each other. Inside every folder the same one-way
//! rule holds between sibling modules (`capability/audit.rs` and
//! `capability/kube/` may not use each other). Comments, string literals and
//! the items under `#[cfg(test)]` (a test module's block, a test-only
//! function or file) are not read; everything after them is. A module added
//! without a row, an import pointing up, or a circle fails here naming the
//! files and the paths.
//!
//! A path through a re-export (`super::Thing`, where the folder's `mod.rs`
//! re-exports a sibling's `Thing`) is read as a use of the folder, not of
//! the sibling.

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

/// A module's path from the crate root: `capability/kube/stats.rs` is
/// `["capability", "kube", "stats"]`, `capability/kube/mod.rs` is
/// `["capability", "kube"]`.
type ModulePath = Vec<String>;

/// One source file: its module path and its code.
struct SourceFile {
    file: PathBuf,
    module: ModulePath,
    code: String,
}

/// Every file of the top-level modules in `modules`, with its module path,
/// leaving out the files a `#[cfg(test)] mod name;` declares.
fn sources(modules: &BTreeSet<String>) -> Vec<SourceFile> {
    let mut found = Vec::new();
    for module in modules {
        let file = source().join(format!("{module}.rs"));
        if file.is_file() {
            read_module(file, vec![module.clone()], &mut found);
        }
        let dir = source().join(module);
        if dir.is_dir() {
            read_folder(&dir, vec![module.clone()], &mut found);
        }
    }
    found
}

/// Reads the file of the module `module` (and through `read_folder`, its
/// children, unless test-only).
fn read_module(file: PathBuf, module: ModulePath, found: &mut Vec<SourceFile>) {
    let code = std::fs::read_to_string(&file).unwrap();
    found.push(SourceFile { file, module, code });
}

/// Reads the files in `dir`, the folder of the module `module`.
fn read_folder(dir: &Path, module: ModulePath, found: &mut Vec<SourceFile>) {
    let parent = if dir.join("mod.rs").is_file() {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    };
    let tests = std::fs::read_to_string(&parent)
        .map(|code| read_code(&code).1)
        .unwrap_or_default();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        if tests.contains(&stem) {
            continue;
        }
        let mut child = module.clone();
        if path.is_dir() {
            child.push(stem);
            read_folder(&path, child, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if stem != "mod" {
                child.push(stem);
            }
            read_module(path, child, found);
        }
    }
}

/// The child modules of the folder `folder` (a module path; empty for the
/// crate root), as the files and folders in it name them.
fn children(folder: &[String]) -> BTreeSet<String> {
    let mut dir = source();
    dir.extend(folder);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (path.is_dir() || (path.extension()? == "rs" && stem != "mod")).then_some(stem)
        })
        .collect()
}

/// `code` with comments, string and character literals blanked out, and
/// with every item under `#[cfg(test)]` removed (only that item: a test
/// module's block, a test-only function, a `mod name;` whose name is
/// returned too).
fn read_code(code: &str) -> (String, BTreeSet<String>) {
    let blank = blank_comments_and_literals(code);
    let mut kept = String::new();
    let mut test_files = BTreeSet::new();
    let mut rest = blank.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let end = item_end(item);
        let words: Vec<&str> = item[..end]
            .split(|c: char| c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .collect();
        if let [.., "mod", name] = words.as_slice() {
            test_files.insert((*name).to_owned());
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    (kept, test_files)
}

/// Where the item at the start of `code` (after its attributes) ends: after
/// its `;` or its block's closing `}`, whichever closes it at depth 0; or,
/// for an attribute on a field or a match arm, at the end of the enclosing
/// braces (the rest of that list is not read).
fn item_end(code: &str) -> usize {
    let mut depth = 0usize;
    for (at, c) in code.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return at,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 && c == '}' {
                    return at + 1;
                }
            }
            ';' if depth == 0 => return at + 1,
            _ => {}
        }
    }
    code.len()
}

/// `code` with every comment and the contents of every string and
/// character literal replaced by spaces (line breaks kept), so that neither
/// a word in a comment nor a brace in a string counts as code.
fn blank_comments_and_literals(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let previous = i.checked_sub(1).map(|p| chars[p]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && !previous.is_some_and(|p| ident(p) && p != 'b')
            && matches!(next, Some('"' | '#'))
        {
            // A raw string: r"…", r#"…"#, br"…".
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = i + 2 + hashes;
            let end = code_at(&chars, body, &closing).unwrap_or(chars.len());
            out.push('r');
            out.extend(std::iter::repeat_n(' ', hashes));
            out.push('"');
            out.extend(chars[body..end].iter().map(|c| blank(*c)));
            out.push_str(&closing);
            i = (end + closing.len()).min(chars.len());
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    out.push(blank(c));
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{1F600}'), not a lifetime.
            out.push('\'');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where `needle` next starts in `chars` at or after `from`.
fn code_at(chars: &[char], from: usize, needle: &str) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    (from..chars.len()).find(|&at| chars[at..].starts_with(&needle))
}

/// The paths into the crate `code` names (comments, literals and test
/// items left out), each from its first segment (`crate`, `super` or
/// `self`), `use` groups expanded: `use crate::a::{b, c::D}` names
/// `crate::a::b` and `crate::a::c::D`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let (code, _) = read_code(code);
    let mut tokens: Vec<String> = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut word = c.to_string();
            while let Some(&c) = chars.peek().filter(|c| c.is_alphanumeric() || **c == '_') {
                word.push(c);
                chars.next();
            }
            tokens.push(word);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            tokens.push("::".into());
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts = matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && !(i > 0 && tokens[i - 1] == "::");
        if starts {
            i = path_tree(&tokens, i, Vec::new(), &mut found);
        } else {
            i += 1;
        }
    }
    found
}

/// Reads the path (or `use` tree) at `tokens[i]` below `prefix` into
/// `found`; returns the index after it.
fn path_tree(
    tokens: &[String],
    mut i: usize,
    mut prefix: Vec<String>,
    found: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                while i < tokens.len() && tokens[i] != "}" {
                    let element = i;
                    i = path_tree(tokens, i, prefix.clone(), found);
                    if tokens.get(i).is_some_and(|t| t == ",") || i == element {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(word) if word.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                prefix.push(word.to_owned());
                i += 1;
                if tokens.get(i).is_some_and(|t| t == "::") {
                    i += 1;
                } else {
                    found.push(prefix);
                    return i;
                }
            }
            Some("*") => {
                found.push(prefix);
                return i + 1;
            }
            _ => {
                found.push(prefix);
                return i;
            }
        }
    }
}

/// The path from the crate root that `path`, named in the code of
/// `module`, reaches; `None` if it climbs above the root.
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let (mut reached, mut rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (module.to_vec(), &path[1..]),
        Some("super") => (module.to_vec(), path),
        _ => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        reached.pop()?;
        rest = &rest[1..];
    }
    reached.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(reached)
}

/// One module of a folder using a sibling: the folder, the two modules, and
/// where (the file and the path it names).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Use {
    folder: ModulePath,
    from: String,
    to: String,
    file: String,
    path: String,
}

/// Every use of a sibling module in `files`, in every folder (the crate
/// root's are the top-level modules'); `children` names the modules of a
/// folder.
fn sibling_uses(
    files: &[SourceFile],
    children: impl Fn(&[String]) -> BTreeSet<String>,
) -> BTreeSet<Use> {
    let mut uses = BTreeSet::new();
    let mut known: BTreeMap<ModulePath, BTreeSet<String>> = BTreeMap::new();
    for source in files {
        for path in paths(&source.code) {
            let Some(reached) = resolve(&source.module, &path) else {
                continue;
            };
            let common = source
                .module
                .iter()
                .zip(&reached)
                .take_while(|(a, b)| a == b)
                .count();
            if common == source.module.len() || common == reached.len() {
                continue; // a module of its own, or a parent's item
            }
            let folder = source.module[..common].to_vec();
            let siblings = known
                .entry(folder.clone())
                .or_insert_with(|| children(&folder));
            if !siblings.contains(&reached[common]) {
                continue; // an item of the folder's own module
            }
            uses.insert(Use {
                folder,
                from: source.module[common].clone(),
                to: reached[common].clone(),
                file: source.file.display().to_string(),
                path: path.join("::"),
            });
        }
    }
    uses
}

/// The circles among `edges`: each largest set of two or more modules that
/// all reach one another.
fn circles_among(edges: &BTreeSet<(String, String)>) -> Vec<BTreeSet<String>> {
    let reach = |start: &String| -> BTreeSet<String> {
        let mut reached = BTreeSet::new();
        let mut next = vec![start.clone()];
        while let Some(module) = next.pop() {
            for (_, to) in edges.iter().filter(|(from, _)| *from == module) {
                if reached.insert(to.clone()) {
                    next.push(to.clone());
                }
            }
        }
        reached
    };
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for (module, _) in edges {
        if found.iter().any(|circle| circle.contains(module)) {
            continue;
        }
        let reached = reach(module);
        if reached.contains(module) {
            found.push(
                reached
                    .into_iter()
                    .filter(|other| reach(other).contains(module))
                    .collect(),
            );
        }
    }
    found
}

/// A circle of sibling modules: its folder (`capability/`), its modules,
/// and one line per use between them.
#[derive(Debug, PartialEq, Eq)]
struct Circle {
    folder: String,
    modules: BTreeSet<String>,
    uses: Vec<String>,
}

/// The circles among sibling modules in `uses`, folder by folder.
fn circles(uses: &BTreeSet<Use>) -> Vec<Circle> {
    let mut by_folder: BTreeMap<&ModulePath, BTreeSet<(String, String)>> = BTreeMap::new();
    for used in uses {
        by_folder
            .entry(&used.folder)
            .or_default()
            .insert((used.from.clone(), used.to.clone()));
    }
    let mut found = Vec::new();
    for (folder, edges) in by_folder {
        for modules in circles_among(&edges) {
            let lines = uses
                .iter()
                .filter(|u| {
                    &u.folder == folder && modules.contains(&u.from) && modules.contains(&u.to)
                })
                .map(|u| format!("  {} -> {}: {} names {}", u.from, u.to, u.file, u.path))
                .collect();
            found.push(Circle {
                folder: format!("{}/", folder.join("/")),
                modules,
                uses: lines,
            });
        }
    }
    found
}

/// The circles between sibling modules the code had when this check came
/// (issue 40), each to be broken by its own change: a circle found must lie
/// within one of these, and one that is gone must be struck off. Nothing
/// may be added.
const KNOWN_CIRCLES: &[(&str, &[&str])] = &[
    ("plugin/", &["artifacts", "compiler", "engine", "world"]),
    ("plugin/", &["instance", "loaded"]),
];

/// What is wrong with the circles `found`, given those already `known`: a
/// circle that is new or grew, or a known one that is gone.
fn unknown_circles(found: &[Circle], known: &[(&str, &[&str])]) -> Vec<String> {
    let within = |circle: &Circle, (folder, modules): &(&str, &[&str])| {
        circle.folder == *folder && circle.modules.iter().all(|m| modules.contains(&m.as_str()))
    };
    let mut wrong: Vec<String> = found
        .iter()
        .filter(|circle| !known.iter().any(|k| within(circle, k)))
        .map(|circle| {
            format!(
                "{}: {:?} use each other\n{}",
                circle.folder,
                circle.modules,
                circle.uses.join("\n")
            )
        })
        .collect();
    wrong.extend(
        known
            .iter()
            .filter(|k| !found.iter().any(|circle| within(circle, k)))
            .map(|(folder, modules)| {
                format!(
                    "{folder}: the known circle {modules:?} is gone: strike it off KNOWN_CIRCLES"
                )
            }),
    );
    wrong
}

/// The source files, named relative to `src/` in what the tests print.
fn crate_sources() -> Vec<SourceFile> {
    let modules = modules();
    assert!(modules.len() >= 20, "too few modules read: {modules:?}");
    let mut files = sources(&modules);
    for file in &mut files {
        file.file = file.file.strip_prefix(source()).unwrap().to_path_buf();
    }
    files
}

#[test]
fn every_module_has_a_row_and_no_import_points_up() {
    let rows = rows();
    let modules = modules();
    let missing: Vec<&String> = modules.iter().filter(|m| !rows.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "modules without a row in ARCHITECTURE.md's layer diagram: {missing:?}"
    );
    let uses = sibling_uses(&crate_sources(), |_| modules.clone());
    let upward: Vec<String> = uses
        .iter()
        .filter(|u| u.folder.is_empty() && rows[&u.to] > rows[&u.from])
        .map(|u| {
            format!(
                "{} (row {}) names {} (row {})",
                u.file, rows[&u.from], u.path, rows[&u.to]
            )
        })
        .collect();
    assert!(
        upward.is_empty(),
        "imports that point up the layers of ARCHITECTURE.md:\n{}",
        upward.join("\n")
    );
    // Within a row modules may use each other one way only.
    let top: BTreeSet<Use> = uses.into_iter().filter(|u| u.folder.is_empty()).collect();
    let wrong = unknown_circles(&circles(&top), &[]);
    assert!(
        wrong.is_empty(),
        "top-level modules that use each other in a circle:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_modules_of_a_folder_use_each_other() {
    let uses = sibling_uses(&crate_sources(), children);
    assert!(
        uses.iter().any(|u| !u.folder.is_empty()),
        "no use between sibling modules read at all: the reader is broken"
    );
    let inside: BTreeSet<Use> = uses.into_iter().filter(|u| !u.folder.is_empty()).collect();
    let wrong = unknown_circles(&circles(&inside), KNOWN_CIRCLES);
    assert!(
        wrong.is_empty(),
        "modules of one folder that use each other in a circle:\n{}",
        wrong.join("\n")
    );
}

/// The top-level modules the code of the crate-root module `module` names.
fn top_level(module: &str, code: &str) -> BTreeSet<String> {
    paths(code)
        .iter()
        .filter_map(|path| resolve(&[module.to_owned()], path))
        .filter_map(|reached| reached.first().cloned())
        .filter(|name| name != module)
        .collect()
}

#[test]
fn the_import_reader_skips_tests_comments_literals_and_other_crates() {
    let code = r#"use crate::store::Store;
// crate::daemon in a comment
/* crate::ops in /* a nested */ block comment */
let x = herald_crate::plugin;
let s = "crate::cli in a string { with a brace";
let c = '{';
#[cfg(test)]
mod tests { use crate::cli; fn f() { let _ = crate::demo::x(); } }
"#;
    assert_eq!(
        top_level("dispatch", code),
        BTreeSet::from(["store".to_owned()]),
        "only the import of the code itself"
    );
}

#[test]
fn the_import_reader_reads_past_a_test_item() {
    let code = r#"
#[cfg(test)]
mod tests {
    use crate::cli::Args;
}
#[cfg(test)]
#[allow(dead_code)]
pub(super) fn for_tests<'a>(x: &'a str) -> &'a str { crate::demo::churn(x) }
#[cfg(test)]
mod fixtures;
pub fn after_the_tests() { crate::daemon::Daemon::run() }
use crate::service::{config::Config, self};
"#;
    assert_eq!(
        top_level("dispatch", code),
        BTreeSet::from(["daemon".to_owned(), "service".to_owned()]),
        "the code after the test module, the test function and the test file"
    );
    assert_eq!(read_code(code).1, BTreeSet::from(["fixtures".to_owned()]));
}

#[test]
fn paths_are_resolved_from_the_module_naming_them() {
    let stats = [
        "capability".to_owned(),
        "kube".to_owned(),
        "stats".to_owned(),
    ];
    let read = |code: &str| -> Vec<String> {
        paths(code)
            .iter()
            .filter_map(|p| resolve(&stats, p))
            .map(|p| p.join("::"))
            .collect()
    };
    assert_eq!(
        read(
            "use super::super::{audit::{self, Record}, grants};\nself::inner::f();\nsuper::host::g();"
        ),
        [
            "capability::audit",
            "capability::audit::Record",
            "capability::grants",
            "capability::kube::stats::inner::f",
            "capability::kube::host::g",
        ]
    );
}

#[test]
fn a_circle_between_sibling_modules_fails_and_a_one_way_use_passes() {
    let file = |module: &[&str], code: &str| SourceFile {
        file: PathBuf::from(format!("{}.rs", module.join("/"))),
        module: module.iter().map(|s| (*s).to_owned()).collect(),
        code: code.to_owned(),
    };
    let children = |folder: &[String]| -> BTreeSet<String> {
        match folder {
            [one] if one == "capability" => ["audit", "kube", "grants"].map(String::from).into(),
            [one, two] if one == "capability" && two == "kube" => {
                ["stats", "host"].map(String::from).into()
            }
            _ => BTreeSet::new(),
        }
    };
    let one_way = [
        file(
            &["capability", "audit"],
            "use super::grants::Grants;\npub fn f() {}",
        ),
        file(
            &["capability", "kube", "stats"],
            "use crate::capability::audit::f;\nuse super::host;",
        ),
        file(&["capability", "kube"], "use super::View;\nmod stats;"),
    ];
    let uses = sibling_uses(&one_way, children);
    assert_eq!(
        uses.len(),
        3,
        "audit -> grants, kube -> audit, stats -> host: {uses:#?}"
    );
    assert_eq!(circles(&uses), [], "{uses:#?}");

    // audit's use of kube's stats closes a circle, even after a test module.
    let circular = [
        file(
            &["capability", "audit"],
            "#[cfg(test)]\nmod tests {}\nuse super::kube::stats::KubeStats;",
        ),
        file(
            &["capability", "kube", "stats"],
            "use crate::capability::audit::f;",
        ),
    ];
    let found = circles(&sibling_uses(&circular, children));
    assert_eq!(
        found,
        [Circle {
            folder: "capability/".to_owned(),
            modules: ["audit", "kube"].map(String::from).into(),
            uses: vec![
                "  audit -> kube: capability/audit.rs names super::kube::stats::KubeStats"
                    .to_owned(),
                "  kube -> audit: capability/kube/stats.rs names crate::capability::audit::f"
                    .to_owned(),
            ],
        }]
    );
    let new = unknown_circles(&found, &[]);
    assert!(
        new.len() == 1 && new[0].contains("audit -> kube"),
        "{new:?}"
    );
    let known = unknown_circles(&found, &[("capability/", &["audit", "grants", "kube"])]);
    assert!(known.is_empty(), "{known:?}");
    let grown = unknown_circles(&found, &[("capability/", &["audit", "events"])]);
    assert_eq!(
        grown.len(),
        2,
        "grown past the known one, which is gone: {grown:?}"
    );
    let gone = unknown_circles(&[], &[("capability/", &["audit", "kube"])]);
    assert!(gone.len() == 1 && gone[0].contains("is gone"), "{gone:?}");
}

//! No import circles: inside every crate of the workspace, no module uses a module that
//! uses it back, directly or through others.
//!
//! Checked at two levels. **Rooms**: the top-level modules of a crate (`ir::expr`,
//! `ir::printer`, `runtime::device`, ...), each with all its files, form a graph without
//! cycles. **Files**: inside a room, the modules form a graph without cycles too, where a
//! module may use items of its own ancestors (a `mod.rs` holding what its children share)
//! without that counting as an edge.
//!
//! A module uses another when its code names a path into it: `use crate::a::b::C`, a
//! `crate::a::f()` in an expression, `super::x`, `self::y`, `use child::Z`, grouped
//! imports (`use crate::{a::B, c}`) expanded, and names the crate root re-exports
//! (`crate::Device` is `crate::device::Device`). Comments, string literals and
//! `#[cfg(test)]` modules, inline or in files of their own, are left out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// A module, as the path of its names below the crate root (`["device", "bound"]`).
type ModPath = Vec<String>;

/// The source files of a crate's `src/`, by module path.
fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let mut path: ModPath = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path.last().is_some_and(|l| l == "mod") {
            path.pop();
        }
        if path == ["lib"] || path == ["main"] {
            path.clear();
        }
        // `src/bin/*.rs` are crates of their own.
        if path.first().is_some_and(|p| p == "bin") {
            continue;
        }
        out.insert(path, f);
    }
    // A module its parent declares `#[cfg(test)] mod name;` is a test module in a file of
    // its own: left out with everything under it, as an inline one is.
    let mut tests: Vec<ModPath> = Vec::new();
    for (path, f) in &out {
        let text = fs::read_to_string(f).unwrap_or_default();
        for (at, _) in text.match_indices("#[cfg(test)]") {
            let rest = text[at + "#[cfg(test)]".len()..].trim_start();
            let Some(decl) = rest.strip_prefix("mod ") else {
                continue;
            };
            let name: String = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if decl[name.len()..].trim_start().starts_with(';') {
                let mut child = path.clone();
                child.push(name);
                tests.push(child);
            }
        }
    }
    out.retain(|path, _| !tests.iter().any(|t| path.starts_with(t)));
    out
}

/// `src` without comments, string and char literals, and `#[cfg(test)]` modules.
fn code_of(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            b'r' if matches!(b.get(i + 1), Some(b'"') | Some(b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string `r#"..."#`.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                // A char literal (`'x'`, `'\n'`), not a lifetime.
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    strip_test_modules(&out)
}

/// `code` without `#[cfg(test)] mod name { ... }` blocks.
fn strip_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        if trimmed.starts_with("mod ")
            && let Some(open) = trimmed.find('{')
            && !trimmed[..open].contains(';')
        {
            let mut depth = 0;
            let mut end = trimmed.len();
            for (k, ch) in trimmed[open..].char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = &trimmed[end..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Every path a `use` tree names: `crate::{a::B, c::{D, self}}` gives `crate::a::B`,
/// `crate::c::D` and `crate::c`.
fn expand_use(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(&tree);
        return vec![path.trim_end_matches("::*").to_string()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        for sub in expand_use(part) {
            if sub == "self" {
                out.push(prefix.to_string());
            } else if prefix.is_empty() {
                out.push(sub);
            } else {
                out.push(format!("{prefix}::{sub}"));
            }
        }
    }
    out
}

/// The paths `code` names: every `use` tree expanded, and every `crate::`, `super::` and
/// `self::` path elsewhere.
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    // `use` trees, which may name child modules without a prefix.
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        out.extend(expand_use(&after[..end]));
        rest = &after[end..];
    }
    // Paths in expressions and types.
    let bytes = code.as_bytes();
    for prefix in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(k) = code[from..].find(prefix) {
            let start = from + k;
            from = start + prefix.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let mut end = start;
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric()
                    || bytes[end] == b'_'
                    || (bytes[end] == b':' && bytes.get(end + 1) == Some(&b':'))
                    || (bytes[end] == b':' && end > 0 && bytes[end - 1] == b':'))
            {
                end += 1;
            }
            out.push(code[start..end].trim_end_matches(':').to_string());
        }
    }
    out
}

/// Where `word` starts in `text` as a whole word (the first time), if it does.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(k) = text[from..].find(word) {
        let at = from + k;
        let before = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let end = at + word.len();
        let after = b.get(end).is_some_and(|c| c.is_ascii_whitespace());
        if before && after {
            return Some(at);
        }
        from = end;
    }
    None
}

/// The module a path names, from the module `from` (a file's own module path): the
/// longest prefix of the resolved path that is a module, through the root's re-exports.
fn resolve(
    path: &str,
    from: &ModPath,
    mods: &BTreeMap<ModPath, PathBuf>,
    reexports: &HashMap<String, ModPath>,
) -> Option<ModPath> {
    let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
    let mut base: ModPath = match parts.first().copied() {
        Some("crate") => {
            parts.remove(0);
            Vec::new()
        }
        Some("self") => {
            parts.remove(0);
            from.clone()
        }
        Some("super") => {
            let mut base = from.clone();
            while parts.first() == Some(&"super") {
                parts.remove(0);
                base.pop();
            }
            base
        }
        // A bare first name: a child module of `from`, or nothing of this crate.
        Some(first) => {
            let mut child = from.clone();
            child.push(first.to_string());
            if !mods.contains_key(&child) {
                return None;
            }
            from.clone()
        }
        None => return None,
    };
    if base.is_empty()
        && let Some(first) = parts.first()
        && !mods.contains_key(&vec![first.to_string()])
    {
        // `crate::Name` re-exported at the root from a module.
        return reexports.get(*first).cloned();
    }
    let mut best = None;
    for p in parts {
        base.push(p.to_string());
        if mods.contains_key(&base) {
            best = Some(base.clone());
        } else {
            break;
        }
    }
    best
}

/// Names the crate root re-exports, with the module each comes from.
fn root_reexports(root: &str, mods: &BTreeMap<ModPath, PathBuf>) -> HashMap<String, ModPath> {
    let mut out = HashMap::new();
    let code = code_of(root);
    let mut rest = code.as_str();
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        for path in expand_use(&after[..end]) {
            let name = path.rsplit("::").next().unwrap_or(&path).to_string();
            let path = path.strip_prefix("crate::").unwrap_or(&path);
            if let Some(m) = resolve(path, &Vec::new(), mods, &HashMap::new()) {
                out.insert(name, m);
            }
        }
        rest = &after[end..];
    }
    out
}

/// The cycles of a graph: its strongly connected components with more than one node.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju: order by finish time, then walk the reversed graph.
    let nodes: BTreeSet<&String> = edges
        .keys()
        .chain(edges.values().flat_map(|s| s.iter()))
        .collect();
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for &n in &nodes {
        if seen.contains(n) {
            continue;
        }
        let mut stack = vec![(n.clone(), false)];
        while let Some((v, done)) = stack.pop() {
            if done {
                order.push(v);
                continue;
            }
            if !seen.insert(v.clone()) {
                continue;
            }
            stack.push((v.clone(), true));
            for w in edges.get(&v).into_iter().flatten() {
                if !seen.contains(w) {
                    stack.push((w.clone(), false));
                }
            }
        }
    }
    let mut reversed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, bs) in edges {
        for b in bs {
            reversed.entry(b.clone()).or_default().insert(a.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for v in order.into_iter().rev() {
        if assigned.contains(&v) {
            continue;
        }
        let mut comp = Vec::new();
        let mut stack = vec![v];
        while let Some(x) = stack.pop() {
            if !assigned.insert(x.clone()) {
                continue;
            }
            comp.push(x.clone());
            for w in reversed.get(&x).into_iter().flatten() {
                if !assigned.contains(w) {
                    stack.push(w.clone());
                }
            }
        }
        if comp.len() > 1 {
            comp.sort();
            out.push(comp);
        }
    }
    out
}

/// The edges between rooms and, inside each room, between files, of the crate at `dir`.
fn graphs(
    dir: &Path,
) -> (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<String, BTreeSet<String>>,
) {
    let src = dir.join("src");
    let mods = modules(&src);
    let root = mods
        .get(&Vec::new())
        .and_then(|f| fs::read_to_string(f).ok())
        .unwrap_or_default();
    let reexports = root_reexports(&root, &mods);
    let (mut rooms, mut files) = (BTreeMap::new(), BTreeMap::new());
    for (from, file) in &mods {
        if from.is_empty() {
            continue;
        }
        let code = code_of(&fs::read_to_string(file).unwrap_or_default());
        for path in paths_in(&code) {
            let Some(to) = resolve(&path, from, &mods, &reexports) else {
                continue;
            };
            if to.is_empty() || to == *from {
                continue;
            }
            if to[0] != from[0] {
                rooms
                    .entry(from[0].clone())
                    .or_insert_with(BTreeSet::new)
                    .insert(to[0].clone());
            } else if !from.starts_with(&to) {
                // Inside a room; using an ancestor's items is no edge.
                files
                    .entry(from.join("::"))
                    .or_insert_with(BTreeSet::new)
                    .insert(to.join("::"));
            }
        }
    }
    (rooms, files)
}

/// The workspace's crates with a `src/` of their own.
fn crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: Vec<PathBuf> = fs::read_dir(&root)
        .expect("the workspace root")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    out.sort();
    out
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    let mut checked = Vec::new();
    for dir in crates() {
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let (rooms, files) = graphs(&dir);
        for c in cycles(&rooms) {
            found.push(format!("{name}: rooms {}", c.join(" -> ")));
        }
        for c in cycles(&files) {
            found.push(format!("{name}: files {}", c.join(" -> ")));
        }
        checked.push(format!("{name} ({} rooms)", rooms.len()));
    }
    assert!(
        checked.iter().any(|c| c.starts_with("ir "))
            && checked.iter().any(|c| c.starts_with("runtime ")),
        "the crates were not found: {checked:?}"
    );
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
    eprintln!("no import circle in {}", checked.join(", "));
}

/// The check finds what it is for: a circle between two rooms, one between two files of
/// a room, through grouped imports, re-exports and expression paths; and not one where a
/// child uses its parent, nor through a test module in a file of its own.
#[test]
fn the_check_finds_circles() {
    let dir = std::env::temp_dir().join(format!("weft-imports-{}", std::process::id()));
    let src = dir.join("src");
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::Thing;\n");
    write(
        "a/mod.rs",
        "mod x;\nmod y;\npub struct Thing;\nuse crate::{b::B, c};\n",
    );
    write(
        "a/x.rs",
        "use super::y::Y;\nuse super::Thing; // the parent: no edge\n",
    );
    write("a/y.rs", "pub struct Y;\nfn f() { let _ = super::x::X; }\n");
    write(
        "b.rs",
        "pub struct B;\nfn g() -> crate::Thing { crate::Thing }\n",
    );
    write(
        "c.rs",
        "// use crate::b; in a comment\nconst S: &str = \"crate::b\";\n#[cfg(test)]\nmod tests;\n",
    );
    // A test module in a file of its own may use what uses its parent.
    write("c/tests.rs", "use crate::a::Thing;\n");
    let (rooms, files) = graphs(&dir);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(
        cycles(&rooms),
        [vec!["a".to_string(), "b".to_string()]],
        "{rooms:?}"
    );
    assert_eq!(
        cycles(&files),
        [vec!["a::x".to_string(), "a::y".to_string()]],
        "{files:?}"
    );
    assert!(
        !rooms
            .get("c")
            .is_some_and(|s| s.contains("b") || s.contains("a")),
        "{rooms:?}"
    );
}

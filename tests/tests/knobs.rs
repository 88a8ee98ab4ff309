//! `docs/knobs.md` names every environment variable weft reads: each `"WEFT_…"` string in
//! the library and binary sources (every crate's `src/`, not tests) appears on the page
//! in backquotes, and every variable the page names is one the sources read. The one
//! exception is `WEFT_COMMIT`, which `cli/build.rs` sets at build time (it is no
//! variable a user sets). A failure names the variable and the file that reads it.

mod repo;

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

/// The `WEFT_…` names in `text` (upper-case letters, digits and underscores after the
/// prefix), each with whether it stood inside double quotes.
fn names(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(at) = rest.find("WEFT_") {
        let start = offset + at;
        let tail = &text[start + 5..];
        let len = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = &text[start..start + 5 + len];
        let quoted = text[..start].ends_with('"') && tail[len..].starts_with('"');
        if len > 0 {
            out.push((name.trim_end_matches('_').to_string(), quoted));
        }
        offset = start + 5 + len;
        rest = &text[offset..];
    }
    out
}

#[test]
fn the_knobs_page_names_every_variable_weft_reads() {
    let root = repo::root();
    let mut read: BTreeMap<String, PathBuf> = BTreeMap::new();
    let crates = fs::read_dir(&root).unwrap();
    let mut dirs: Vec<PathBuf> = crates.flatten().map(|e| e.path().join("src")).collect();
    dirs.sort();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let mut files = Vec::new();
        repo::files(dir, "rs", &mut files);
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            for (name, quoted) in names(&text) {
                if quoted && name != "WEFT_COMMIT" {
                    read.entry(name).or_insert_with(|| file.clone());
                }
            }
        }
    }
    assert!(
        read.len() >= 20,
        "the sources read {} variables",
        read.len()
    );
    let page = fs::read_to_string(root.join("docs/knobs.md")).unwrap();
    let on_page: Vec<String> = names(&page)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| page.contains(&format!("`{n}`")))
        .collect();
    let missing: Vec<String> = read
        .iter()
        .filter(|(n, _)| !page.contains(&format!("`{n}`")))
        .map(|(n, f)| format!("{n} (read in {})", f.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/knobs.md does not name: {missing:?}"
    );
    let unknown: Vec<&String> = on_page.iter().filter(|n| !read.contains_key(*n)).collect();
    assert!(
        unknown.is_empty(),
        "docs/knobs.md names what no source reads: {unknown:?}"
    );
}

/// The scan finds a quoted name, skips an unquoted one, and stops at the name's end.
#[test]
fn names_are_found_where_they_are_quoted() {
    let found = names(r#"const A: &str = "WEFT_POOL_VEC"; // WEFT_OTHER; "WEFT_X1"."#);
    assert_eq!(
        found,
        vec![
            ("WEFT_POOL_VEC".to_string(), true),
            ("WEFT_OTHER".to_string(), false),
            ("WEFT_X1".to_string(), true),
        ]
    );
}

//! Every relative link in the documentation resolves: the README and every Markdown page
//! under `docs/`, `measurements/` and `scripts/`. A link is `[text](path)` or
//! `![alt](path)`, with an optional `#anchor`; its path must name a file or folder that
//! exists, relative to the page (or to the repository root when it starts with `/`).
//! Web and mail links and links to an anchor of the page itself are not checked, nor is
//! anything inside code (fenced blocks and `inline code`). A failure lists the page, the
//! line and the link.

mod repo;

use std::fs;
use std::path::Path;

/// `line` without its inline code spans (text between backticks, the backticks too).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        out.push_str(&rest[..open]);
        let ticks = rest[open..].len() - rest[open..].trim_start_matches('`').len();
        let fence = &rest[open..open + ticks];
        match rest[open + ticks..].find(fence) {
            Some(close) => rest = &rest[open + ticks + close + ticks..],
            // An unclosed backtick is a literal one.
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The link targets of a page as (line number, target), outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line = without_code(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            // `(path "title")`: the path is what comes before the title.
            let target = after[..end].split_whitespace().next().unwrap_or("");
            found.push((i + 1, target.to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// Whether a link is one this test checks: not a web, mail or same-page link.
fn is_relative(target: &str) -> bool {
    !(target.is_empty()
        || target.starts_with('#')
        || target.starts_with("http:")
        || target.starts_with("https:")
        || target.starts_with("mailto:"))
}

/// The links of `page` whose path does not exist, as `page:line: link`.
fn broken(root: &Path, page: &Path) -> Vec<String> {
    let text = fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let name = page
        .strip_prefix(root)
        .unwrap_or(page)
        .display()
        .to_string();
    let dir = page.parent().unwrap();
    let mut out = Vec::new();
    for (line, target) in links(&text) {
        if !is_relative(&target) {
            continue;
        }
        let path = target.split(['#', '?']).next().unwrap_or("");
        let path = path.replace("%20", " ");
        let resolved = match path.strip_prefix('/') {
            Some(from_root) => root.join(from_root),
            None => dir.join(&path),
        };
        if !resolved.exists() {
            out.push(format!("{name}:{line}: {target}"));
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = repo::root();
    let mut all = vec![root.join("README.md")];
    for dir in ["docs", "measurements", "scripts"] {
        repo::files(&root.join(dir), "md", &mut all);
    }
    assert!(all.len() > 20, "too few pages found: {all:?}");
    let bad: Vec<String> = all.iter().flat_map(|p| broken(&root, p)).collect();
    assert!(
        bad.is_empty(),
        "links that do not resolve ({}):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The check itself: a planted broken link is found, with its line; good links, web
/// links, anchors and links inside code are not reported.
#[test]
fn a_broken_link_is_reported_with_its_line() {
    let dir = std::env::temp_dir().join(format!("weft-docs-links-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("sub")).unwrap();
    fs::write(dir.join("sub/there.txt"), "").unwrap();
    let page = dir.join("page.md");
    let text = "\
# A page

[there](sub/there.txt) and [the folder](sub/) and ![img](sub/there.txt \"title\")
[web](https://example.com), [mail](mailto:a@b.c), [anchor](#a-page), [at](sub/there.txt#x)
`[in code](nowhere.md)` and [`code` text](missing.md)

```md
[fenced](nowhere.md)
```
[from the root](/sub/gone.txt)
";
    fs::write(&page, text).unwrap();
    let bad = broken(&dir, &page);
    assert_eq!(
        bad,
        ["page.md:5: missing.md", "page.md:10: /sub/gone.txt"],
        "{bad:?}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

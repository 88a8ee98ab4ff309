//! `weft report` keeps what it was not asked to redo: a run given only some inputs
//! (`--corpus` alone) writes every section and chart the page had, from the rows
//! `report.json` stores, on a copy of the repository's real `docs/results.md`,
//! `docs/report.json` and `docs/charts/`; and `report.json`'s format: an old file loads,
//! one from a newer weft is refused naming the file.

mod common;

use std::path::{Path, PathBuf};

use common::{bad_input, ok};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-keep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The page's headings (`## ` and `### ` lines), in order.
fn headings(page: &str) -> Vec<&str> {
    page.lines()
        .filter(|l| l.starts_with("## ") || l.starts_with("### "))
        .collect()
}

/// The charts the page links (`![alt](charts/x.svg)`), in order.
fn charts(page: &str) -> Vec<String> {
    page.lines()
        .filter(|l| l.starts_with("!["))
        .filter_map(|l| l.split_once("](").map(|(_, r)| r.trim_end_matches(')')))
        .map(str::to_string)
        .collect()
}

/// The page from its first section on, without the corpus's section (the header names
/// the command that wrote it).
fn body(page: &str) -> String {
    let page = &page[page.find("\n## ").unwrap_or(0)..];
    match page.find("\n## Corpus against PyTorch\n") {
        Some(start) => {
            let rest = &page[start + 1..];
            let end = rest.find("\n## ").map_or(rest.len(), |e| e + 1);
            format!("{}{}", &page[..start + 1], &rest[end..])
        }
        None => page.to_string(),
    }
}

/// How many rows of each kind `report.json` holds.
fn counts(data: &serde_json::Value) -> Vec<(&'static str, usize)> {
    [
        "runs",
        "offline",
        "models",
        "sweeps",
        "op_baselines",
        "corpus",
        "generation",
    ]
    .iter()
    .map(|&k| (k, data[k].as_array().map_or(0, Vec::len)))
    .collect()
}

/// Copies the files of `docs/` and its `charts/` into `out` (the page reads two of the
/// pages beside it: `timing-check.md`, `results-history.md`).
fn copy_docs(out: &Path) {
    for (from, to) in [
        (repo("docs"), out.to_path_buf()),
        (repo("docs/charts"), out.join("charts")),
    ] {
        std::fs::create_dir_all(&to).unwrap_or_else(|e| panic!("{e}"));
        for entry in std::fs::read_dir(&from).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_file() {
                let name = path.file_name().unwrap_or_default();
                std::fs::copy(&path, to.join(name)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

#[test]
fn a_corpus_only_run_on_the_real_docs_keeps_every_section_and_chart() {
    let out = scratch("docs");
    copy_docs(&out);
    let before = read(&out.join("results.md"));
    let data_before = json(&out.join("report.json"));
    // The real page has sweeps, whole models and per-op sections: what was dropped.
    let (h0, c0) = (headings(&before), charts(&before));
    assert!(
        h0.contains(&"## Configs without tuning, and across input sizes"),
        "{h0:?}"
    );
    assert!(c0.iter().any(|c| c.starts_with("charts/sweep-")), "{c0:?}");
    let svgs: Vec<(String, Vec<u8>)> = c0
        .iter()
        .map(|c| {
            let bytes = std::fs::read(out.join(c)).unwrap_or_else(|e| panic!("{c}: {e}"));
            (c.clone(), bytes)
        })
        .collect();

    let out_s = out.to_string_lossy().into_owned();
    let corpus = fixture("speed-b1.json");
    let args = [
        "report",
        "--no-run",
        "--no-compile",
        "--corpus",
        &corpus,
        "--out",
        &out_s,
    ];
    let printed = ok(&args);
    assert!(!printed.contains("removed"), "{printed}");
    let after = read(&out.join("results.md"));
    let (h1, c1) = (headings(&after), charts(&after));
    // Every section and chart of the page before, in the same order, and the corpus's.
    let kept: Vec<&str> = h1.iter().copied().filter(|h| h0.contains(h)).collect();
    assert_eq!(kept, h0, "sections lost or reordered:\n{after}");
    assert!(h1.contains(&"## Corpus against PyTorch"), "{h1:?}");
    let kept: Vec<&String> = c1.iter().filter(|c| c0.contains(c)).collect();
    assert_eq!(kept, c0.iter().collect::<Vec<_>>(), "charts lost:\n{after}");
    assert!(c1.contains(&"charts/corpus-speed.svg".to_string()));
    // Redrawn from the rows `report.json` stores: the same charts, byte for byte (but the
    // corpus's, which this run's file adds to where docs/ has one already).
    for (chart, bytes) in svgs.iter().filter(|(c, _)| c != "charts/corpus-speed.svg") {
        let now = std::fs::read(out.join(chart)).unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert!(now == *bytes, "{chart} changed");
    }
    // Everything but the header (it names this run) and the corpus's section is as it was.
    assert_eq!(body(&after), body(&before));
    // report.json lost no row and gained the corpus run; it now names its format.
    let data = json(&out.join("report.json"));
    let mut want = counts(&data_before);
    for (k, n) in &mut want {
        if *k == "corpus" {
            *n += 1;
        }
    }
    assert_eq!(counts(&data), want);
    assert_eq!(data["format"], 2);

    // Again, with nothing new: the same page (but its header), nothing removed.
    let printed = ok(&["report", "--no-run", "--no-compile", "--out", &out_s]);
    assert!(!printed.contains("removed"), "{printed}");
    let again = read(&out.join("results.md"));
    assert_eq!(body(&again), body(&after));
    assert_eq!(counts(&json(&out.join("report.json"))), want);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn report_json_of_an_older_format_loads_and_a_newer_one_is_refused() {
    let dir = scratch("format");
    let sweep = serde_json::json!({
        "shapes": "cubes:8:9", "part": null, "op": "matmul", "target": "cuda",
        "device": "gpu", "reference": null, "sample": 0, "fixed": [], "only": null,
        "commit": "c", "unix_time": 1,
        "rows": [{"shape": "m=8,n=8,k=8", "flops": 1024.0, "reference_ms": null,
                  "rule": {"config": "wm=1", "ms": 0.01, "note": null},
                  "rule_why": "rule", "tuned": null, "fixed": [], "timed": 1}]
    });
    // The earliest layout: no `format`, none of the kinds of rows added since.
    let old = serde_json::json!({
        "weft_version": "0.1.0", "commit": "c", "unix_time": 1, "command": "weft report",
        "runs": [], "offline": [], "sweeps": [sweep]
    });
    let old_dir = dir.join("old");
    std::fs::create_dir_all(&old_dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(old_dir.join("report.json"), old.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let old_s = old_dir.to_string_lossy().into_owned();
    ok(&["report", "--no-run", "--no-compile", "--out", &old_s]);
    let page = read(&old_dir.join("results.md"));
    assert!(
        page.contains("### `matmul` over `cubes:8:9` on cuda (gpu)"),
        "{page}"
    );
    assert!(old_dir.join("charts/sweep-matmul-1.svg").exists());
    let data = json(&old_dir.join("report.json"));
    assert_eq!(data["format"], 2);
    assert_eq!(data["sweeps"].as_array().map(Vec::len), Some(1));
    // Read through `--from` too, into another folder.
    let from = old_dir.join("report.json").to_string_lossy().into_owned();
    let other = dir.join("other").to_string_lossy().into_owned();
    ok(&[
        "report",
        "--no-run",
        "--no-compile",
        "--from",
        &from,
        "--out",
        &other,
    ]);
    assert!(read(&dir.join("other/results.md")).contains("`matmul` over `cubes:8:9`"));

    // A newer weft's file, in --out and through --from: refused, naming file and format,
    // and the folder is left as it was.
    let mut newer = data.clone();
    newer["format"] = serde_json::json!(3);
    let new_dir = dir.join("new");
    std::fs::create_dir_all(&new_dir).unwrap_or_else(|e| panic!("{e}"));
    let new_json = new_dir.join("report.json");
    std::fs::write(&new_json, newer.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let new_s = new_dir.to_string_lossy().into_owned();
    let new_json_s = new_json.to_string_lossy().into_owned();
    bad_input(
        &["report", "--no-run", "--no-compile", "--out", &new_s],
        &[&new_json_s, "format 3", "newer weft"],
    );
    assert!(!new_dir.join("results.md").exists());
    bad_input(
        &[
            "report",
            "--no-run",
            "--no-compile",
            "--from",
            &new_json_s,
            "--out",
            &other,
        ],
        &[&new_json_s, "format 3"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! `weft report`: a page, charts and `report.json` from a benchmark run here (the CPU
//! interpreter: every machine has it), from earlier runs' JSON, and typed errors for
//! inputs it cannot read.

mod common;

use std::path::{Path, PathBuf};

use common::{bad_input, ok};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 1000)
}

#[test]
fn report_benchmarks_here_and_writes_page_charts_and_data() {
    let out = scratch("run");
    let out_s = out.to_string_lossy().into_owned();
    let json = out.join("bench.json");
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{e}"));
    let printed = ok(&[
        "report",
        "--targets",
        "cpu",
        "--ops",
        "vecadd,window-sum",
        "--size",
        "small",
        "--iters",
        "2",
        "--no-compile",
        "--out",
        &out_s,
        "--json",
        &json.to_string_lossy(),
    ]);
    assert!(printed.contains("results.md"), "{printed}");
    let page = read(&out.join("results.md"));
    // Provenance, a row per schedule with its check, and the charts linked.
    for needle in [
        "# Results",
        "`weft report`",
        "| 1 |",
        "`cpu`",
        // The runs table names the ops each run measured.
        "| vecadd, window-sum | small |",
        "| split-bind | n=1000 | `cpu` |",
        "| shared-fetch |",
        "![vecadd](charts/vecadd.svg)",
        "![window-sum](charts/window-sum.svg)",
        "## Cross-vendor summary",
    ] {
        assert!(page.contains(needle), "`{needle}` not in the page:\n{page}");
    }
    assert!(
        !page.contains("WRONG") && !page.contains("FAILED"),
        "{page}"
    );
    for chart in ["vecadd", "window-sum", "cross-vendor"] {
        assert!(
            is_png(&out.join(format!("charts/{chart}.png"))),
            "{chart}.png"
        );
        let svg = read(&out.join(format!("charts/{chart}.svg")));
        assert!(
            svg.starts_with("<svg") || svg.contains("<svg"),
            "{chart}.svg"
        );
    }
    // report.json holds the run; the --json file is the bench run alone.
    let data: serde_json::Value =
        serde_json::from_str(&read(&out.join("report.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(data["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(data["runs"][0]["rows"].as_array().map(Vec::len), Some(4));
    let bench: serde_json::Value =
        serde_json::from_str(&read(&json)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bench["targets"][0]["target"], "cpu");

    // A second report from both files, running nothing: the bench run appears once from
    // each source (two runs), and the page is rewritten.
    let again = scratch("again");
    let from = format!("{},{}", out.join("report.json").display(), json.display());
    ok(&[
        "report",
        "--no-run",
        "--no-compile",
        "--from",
        &from,
        "--out",
        &again.to_string_lossy(),
    ]);
    let data: serde_json::Value =
        serde_json::from_str(&read(&again.join("report.json"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(data["runs"].as_array().map(Vec::len), Some(2));
    assert!(read(&again.join("results.md")).contains("| 2 |"));
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&again);
}

#[test]
fn report_refuses_what_it_cannot_read() {
    let dir = scratch("bad");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap_or_else(|e| panic!("{e}"));
    let junk_s = junk.to_string_lossy().into_owned();
    let out_s = dir.join("out").to_string_lossy().into_owned();
    bad_input(
        &[
            "report",
            "--no-run",
            "--no-compile",
            "--from",
            &junk_s,
            "--out",
            &out_s,
        ],
        &[&junk_s, "neither"],
    );
    let missing = dir.join("missing.json").to_string_lossy().into_owned();
    bad_input(
        &["report", "--no-run", "--from", &missing, "--out", &out_s],
        &["missing.json"],
    );
    bad_input(
        &["report", "--no-run", "--no-compile", "--out", &out_s],
        &["nothing to report"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

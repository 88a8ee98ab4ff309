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

#[test]
fn report_benchmarks_here_and_writes_page_charts_and_data() {
    let out = scratch("run");
    let out_s = out.to_string_lossy().into_owned();
    let json = out.join("bench.json");
    // Charts of an earlier page that this one does not draw (matmul is not measured), the
    // PNG an earlier weft wrote beside a chart this page draws (charts are SVG only now),
    // and a file of the user's: the first two go, the last stays.
    let charts = out.join("charts");
    std::fs::create_dir_all(&charts).unwrap_or_else(|e| panic!("{e}"));
    for name in ["matmul.png", "matmul.svg", "vecadd.png", "my-notes.png"] {
        std::fs::write(charts.join(name), "old").unwrap_or_else(|e| panic!("{e}"));
    }
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
    assert!(!charts.join("matmul.png").exists() && !charts.join("matmul.svg").exists());
    assert!(!charts.join("vecadd.png").exists());
    assert!(
        printed.contains("matmul.svg (a chart this page no longer draws)"),
        "{printed}"
    );
    assert_eq!(read(&charts.join("my-notes.png")), "old");
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
            !out.join(format!("charts/{chart}.png")).exists(),
            "{chart}.png written"
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

    // A second report from both files, running nothing: the bench run, read from both,
    // appears once, and the page is rewritten.
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
    assert_eq!(data["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(data["runs"][0]["rows"].as_array().map(Vec::len), Some(4));
    let page = read(&again.join("results.md"));
    assert!(page.contains("| 1 |") && !page.contains("| 2 |"), "{page}");
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

/// The runs of a report, as (unix time, device of the first target, rows).
fn runs_of(path: &Path) -> Vec<(u64, String, usize)> {
    let data: serde_json::Value =
        serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    data["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("no runs in {}", path.display()))
        .iter()
        .map(|r| {
            (
                r["unix_time"].as_u64().unwrap_or_default(),
                r["targets"][0]["device"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                r["rows"].as_array().map_or(0, Vec::len),
            )
        })
        .collect()
}

/// `weft report --size small` in a copy of the repository keeps the GPU runs of
/// `docs/report.json` (it once replaced them with its one CPU run), run after run.
#[test]
fn report_adds_to_the_report_in_its_folder_and_keeps_earlier_runs() {
    let out = scratch("keeps");
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{e}"));
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/report.json");
    let json = out.join("report.json");
    std::fs::copy(&docs, &json).unwrap_or_else(|e| panic!("{}: {e}", docs.display()));
    let earlier = runs_of(&json);
    assert!(
        earlier
            .iter()
            .any(|(_, device, rows)| device.contains("H100") && *rows > 100),
        "docs/report.json has no GPU run to keep: {earlier:?}"
    );
    let out_s = out.to_string_lossy().into_owned();
    let args = [
        "report",
        "--size",
        "small",
        "--targets",
        "cpu",
        "--ops",
        "vecadd",
        "--iters",
        "2",
        "--no-compile",
        "--out",
        &out_s,
    ];
    for round in 1..=2 {
        ok(&args);
        let now = runs_of(&json);
        // Every earlier run whole (the CPU run measured nothing they measured), then this
        // one; the second round's run replaces the first's, which measured the same rows.
        assert_eq!(now.len(), earlier.len() + 1, "round {round}: {now:?}");
        assert_eq!(&now[..earlier.len()], &earlier[..], "round {round}");
        let (_, device, rows) = &now[earlier.len()];
        assert_eq!(
            (device.as_str(), *rows),
            ("weft interpreter", 2),
            "round {round}"
        );
    }
    let page = read(&out.join("results.md"));
    for needle in [
        "NVIDIA H100",
        "weft interpreter",
        "### matmul",
        "### vecadd",
    ] {
        assert!(page.contains(needle), "`{needle}` not on the page");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// A `report.json` in `--out` that is not a report stops the command before it runs
/// anything, and stays as it was.
#[test]
fn report_never_replaces_a_report_it_cannot_read() {
    let out = scratch("unreadable");
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{e}"));
    let json = out.join("report.json");
    std::fs::write(&json, "{\"runs\": [").unwrap_or_else(|e| panic!("{e}"));
    let out_s = out.to_string_lossy().into_owned();
    bad_input(
        &[
            "report",
            "--targets",
            "cpu",
            "--ops",
            "vecadd",
            "--no-compile",
            "--out",
            &out_s,
        ],
        &[
            &json.to_string_lossy(),
            "does not replace one it cannot read",
        ],
    );
    assert_eq!(read(&json), "{\"runs\": [");
    assert!(!out.join("results.md").exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// `--models` over a zoo CNN with `--model-seq` (as a call measuring CNNs and
/// transformers together passes it): the CNN runs once at its resolution, its row on the
/// page, instead of the whole report being refused because a CNN takes no length.
#[test]
fn report_models_gives_lengths_to_transformers_only() {
    let out = scratch("cnn-seq");
    let out_s = out.to_string_lossy().into_owned();
    let text = ok(&[
        "report",
        "--no-run",
        "--no-compile",
        "--out",
        &out_s,
        "--models",
        "zoo:mobilenet_v2",
        "--model-targets",
        "cpu",
        "--model-seq",
        "4",
        "--model-resolution",
        "32",
        "--model-iters",
        "1",
    ]);
    assert!(text.contains("results.md"), "{text}");
    let page = read(&out.join("results.md"));
    assert!(
        page.contains("### zoo:mobilenet_v2, batch 1, 32²"),
        "no MobileNetV2 row at 32²:\n{page}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

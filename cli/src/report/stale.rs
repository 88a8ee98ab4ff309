//! Charts the page no longer draws. A chart left from an earlier report (an op whose rows
//! all failed this time, a roofline without roofs) would sit in `charts/` beside the page
//! as if it were current; they are removed. Only what weft itself writes there goes: a
//! `.svg` named after a chart weft draws (`cross-vendor`, `roofline`, `corpus-speed`, an op of weft's or
//! of the report's rows, `sweep-*`), and a `.png` so named or beside a chart this report
//! wrote (weft wrote each chart as PNG too until 2026-11-28); any other file in the
//! folder is left alone.

use std::path::{Path, PathBuf};

use super::{CHART_DIR, ReportData};
use crate::error::CliError;

/// The charts weft draws that are not named after an op.
const FIXED: [&str; 3] = ["cross-vendor", "roofline", super::corpus_page::CHART];

/// Removes from `out`'s chart folder the charts weft draws that this report did not write
/// (`written`: every file the page wrote); returns the files removed.
pub fn remove(
    out: &Path,
    written: &[PathBuf],
    data: &ReportData,
) -> Result<Vec<PathBuf>, CliError> {
    let dir = out.join(CHART_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        // No chart folder: nothing to remove.
        return Ok(Vec::new());
    };
    let ours = |stem: &str| {
        FIXED.contains(&stem)
            || stem.starts_with("sweep-")
            || weft_ops::OPS.iter().any(|o| o.name == stem)
            || data.runs.iter().flat_map(|r| &r.rows).any(|r| r.op == stem)
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let png = path.extension().is_some_and(|e| e == "png");
        let is_chart = png || path.extension().is_some_and(|e| e == "svg");
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        // The PNG an earlier weft wrote beside a chart this report wrote as SVG.
        let old_png = png && written.contains(&path.with_extension("svg"));
        let named = stem.as_deref().is_some_and(ours) || old_png;
        if !plain || !is_chart || !named || written.contains(&path) {
            continue;
        }
        std::fs::remove_file(&path).map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
        removed.push(path);
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_weft_charts_that_were_not_written_go() {
        let out = std::env::temp_dir().join(format!("weft-stale-{}", std::process::id()));
        let dir = out.join(CHART_DIR);
        let _ = std::fs::remove_dir_all(&out);
        // A folder with a chart's name is not a chart.
        std::fs::create_dir_all(dir.join("window-sum.png")).unwrap();
        let names = [
            "vecadd.png",
            "vecadd.svg",
            "matmul.png",
            "matmul.svg",
            "roofline.svg",
            "my-notes.png",
            "matmul.txt",
            "resnet50-b1-224.png",
            "resnet50-b1-224.svg",
            "gpt2-b1-128.png",
        ];
        for n in names {
            std::fs::write(dir.join(n), n).unwrap();
        }
        let written = vec![dir.join("vecadd.svg"), dir.join("resnet50-b1-224.svg")];
        let data = ReportData {
            format: crate::report::FORMAT,
            models: Vec::new(),
            sweeps: Vec::new(),
            op_baselines: Vec::new(),
            corpus: Vec::new(),
            generation: Vec::new(),
            weft_version: String::new(),
            commit: String::new(),
            unix_time: 0,
            command: String::new(),
            runs: Vec::new(),
            offline: Vec::new(),
        };
        let removed = remove(&out, &written, &data).unwrap();
        assert_eq!(
            removed,
            [
                dir.join("matmul.png"),
                dir.join("matmul.svg"),
                dir.join("resnet50-b1-224.png"),
                dir.join("roofline.svg"),
                dir.join("vecadd.png"),
            ]
        );
        // A model's chart is not named after an op: its PNG goes only beside its SVG.
        for kept in [
            "vecadd.svg",
            "resnet50-b1-224.svg",
            "gpt2-b1-128.png",
            "my-notes.png",
            "matmul.txt",
            "window-sum.png",
        ] {
            assert!(dir.join(kept).exists(), "{kept} was removed");
        }
        // No chart folder at all is not an error.
        assert!(remove(&out.join("nowhere"), &[], &data).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&out);
    }
}

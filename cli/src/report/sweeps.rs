//! The page's section of shape sweeps (`weft sweep --json`, read with `--sweeps`): per
//! sweep its summary (the rule's config against the tuned best, the fixed configs and
//! the vendor library), a chart of throughput over the shapes, and a table.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::charts::{self, Series};
use crate::error::CliError;
use crate::sweep::{Sweep, SweepRow};

/// Reads a file `weft sweep --json` wrote.
pub(crate) fn read(path: &Path) -> Result<Sweep, CliError> {
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut sweep: Sweep = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a sweep of `weft sweep --json`: {e}")))?;
    // Every config a `--trials` sweep timed is data for fitting a rule, not for the page
    // (nor for `report.json`, which would grow by megabytes).
    for row in &mut sweep.rows {
        row.trials.clear();
    }
    Ok(sweep)
}

/// Adds `new` to `sweeps`: the parts of one sweep (the same set, op, target and device,
/// timed the same way: sample, fixed configs, sub-space) become one, and a shape
/// measured again that way replaces its earlier row. A sweep timed another way (more
/// configs sampled, other fixed configs) stays a sweep of its own, with its own date and
/// sample on the page, and a Vulkan sweep still pairs with the CUDA sweep of its call
/// (`vendors::op_pairs`).
pub(crate) fn merge(sweeps: &mut Vec<Sweep>, new: Sweep) {
    let same = |s: &Sweep| {
        (&s.shapes, &s.op, &s.target, &s.device) == (&new.shapes, &new.op, &new.target, &new.device)
            && (s.sample, &s.fixed, &s.only) == (new.sample, &new.fixed, &new.only)
    };
    match sweeps.iter_mut().find(|s| same(s)) {
        Some(s) => {
            for row in new.rows {
                match s.rows.iter_mut().find(|r| r.shape == row.shape) {
                    Some(old) => *old = row,
                    None => s.rows.push(row),
                }
            }
            s.part = None;
            s.unix_time = s.unix_time.max(new.unix_time);
        }
        None => sweeps.push(new),
    }
}

/// `(m, n, k)` of a row's shape.
fn mnk(row: &SweepRow) -> Option<(i64, i64, i64)> {
    let get = |name: &str| -> Option<i64> {
        row.shape
            .split(',')
            .find_map(|p| p.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
    };
    Some((get("m")?, get("n")?, get("k")?))
}

/// The x of each row: the size where every shape is a cube (m = n = k), else its place
/// in the list (from 1).
fn xs(s: &Sweep) -> (Vec<f64>, &'static str) {
    let cubes: Option<Vec<f64>> = s
        .rows
        .iter()
        .map(|r| {
            mnk(r)
                .filter(|(m, n, k)| m == n && n == k)
                .map(|(m, _, _)| m as f64)
        })
        .collect();
    match cubes {
        Some(v) => (v, "m = n = k"),
        None => (
            (1..=s.rows.len()).map(|i| i as f64).collect(),
            "shape (its number in the table below)",
        ),
    }
}

/// A time in µs for the table.
fn us(ms: Option<f64>) -> String {
    ms.map_or("—".to_string(), |v| format!("{:.1}", v * 1e3))
}

/// The section; returns the chart files written.
pub(crate) fn section(
    md: &mut String,
    sweeps: &[Sweep],
    out: &Path,
    chart_dir: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    let mut written = Vec::new();
    if sweeps.is_empty() {
        return Ok(written);
    }
    md.push_str("## Configs without tuning, and across input sizes\n\n");
    md.push_str(
        "`weft sweep` over a set of shapes, in one process on one device: at each shape the \
         config the template's stated rule picks with no tuning record (what `weft run`, \
         `weft bench` and `weft model run` use), the fastest right config a tuning at that \
         shape found (a sample of the space, with the rule's and the fixed configs always \
         timed), fixed configs timed as they are, and the vendor library. Median kernel \
         time; speed ratios are time ÷ time (above 1.00x: the rule is faster).\n\n",
    );
    for (i, s) in sweeps.iter().enumerate() {
        let _ = writeln!(
            md,
            "### `{}` over `{}` on {} ({})\n",
            s.op, s.shapes, s.target, s.device
        );
        let _ = writeln!(
            md,
            "Ran {} at weft `{}`; tuning timed {} configs of the space at each shape{}.\n",
            super::utc(s.unix_time),
            s.commit,
            s.sample,
            if s.fixed.is_empty() {
                String::new()
            } else {
                format!("; fixed: {}", s.fixed.join(", "))
            }
        );
        for line in crate::sweep::summary(s) {
            let _ = writeln!(md, "- {line}");
        }
        md.push('\n');
        let (x, x_desc) = xs(s);
        let series_of =
            |name: String, reference: bool, f: &dyn Fn(&SweepRow) -> Option<f64>| Series {
                name,
                reference,
                points: s
                    .rows
                    .iter()
                    .zip(&x)
                    .filter_map(|(r, x)| Some((*x, r.flops / (f(r)? / 1e3))))
                    .collect(),
            };
        let mut series = Vec::new();
        if let Some(reference) = &s.reference {
            series.push(series_of(reference.clone(), true, &|r| r.reference_ms));
        }
        if s.sample > 0 {
            series.push(series_of("tuned at each shape".into(), false, &|r| {
                r.tuned.as_ref()?.ms
            }));
        }
        series.push(series_of("the rule (no record)".into(), false, &|r| {
            r.rule.ms
        }));
        for (j, name) in s.fixed.iter().enumerate() {
            series.push(series_of(name.clone(), false, &|r| r.fixed.get(j)?.ms));
        }
        let stem = chart_dir.join(format!("sweep-{}-{}", s.op, i + 1));
        let files = charts::lines(
            &format!("{} over {} on {}", s.op, s.shapes, s.device),
            (x_desc, "throughput", "FLOP/s"),
            &series,
            &stem,
        )
        .map_err(|e| CliError::Chart(Box::new(e)))?;
        super::image(md, &files, out, &format!("{} sweep", s.op));
        written.extend(files);
        table(md, s);
    }
    Ok(written)
}

/// The table of a sweep: a row per shape.
fn table(md: &mut String, s: &Sweep) {
    let mut head = vec!["#".to_string(), "shape".into()];
    if let Some(r) = &s.reference {
        head.push(format!("{r} µs"));
    }
    if s.sample > 0 {
        head.push("tuned µs".into());
    }
    head.push("rule µs".into());
    if s.sample > 0 {
        head.push("rule ÷ tuned speed".into());
    }
    for f in &s.fixed {
        head.push(format!("{f} µs"));
    }
    head.push("the rule's config".into());
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let _ = writeln!(md, "|{}", " --- |".repeat(head.len()));
    for (i, r) in s.rows.iter().enumerate() {
        let mut cells = vec![(i + 1).to_string(), r.shape.clone()];
        if s.reference.is_some() {
            cells.push(us(r.reference_ms));
        }
        if let Some(t) = &r.tuned {
            cells.push(us(t.ms));
        } else if s.sample > 0 {
            cells.push("—".into());
        }
        cells.push(us(r.rule.ms));
        if s.sample > 0 {
            cells.push(match (r.rule.ms, r.tuned.as_ref().and_then(|t| t.ms)) {
                (Some(rule), Some(t)) => format!("{:.2}x", t / rule),
                _ => "—".into(),
            });
        }
        for j in 0..s.fixed.len() {
            cells.push(us(r.fixed.get(j).and_then(|f| f.ms)));
        }
        cells.push(format!("`{}`", r.rule.config));
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Timed;

    fn row(shape: &str, rule: f64, tuned: f64) -> SweepRow {
        let t = |ms: f64| Timed {
            config: "wm=1".into(),
            ms: Some(ms),
            note: None,
        };
        SweepRow {
            bytes: None,
            shape: shape.into(),
            flops: 2e9,
            reference_ms: Some(1.0),
            rule: t(rule),
            rule_why: "rule: test".into(),
            tuned: Some(t(tuned)),
            fixed: vec![t(rule * 2.0)],
            timed: 3,
            trials: Vec::new(),
            unsplit: None,
        }
    }

    fn sweep(part: &str, rows: Vec<SweepRow>) -> Sweep {
        Sweep {
            shapes: "cubes:8:10".into(),
            part: Some(part.into()),
            op: "matmul".into(),
            target: "cuda".into(),
            device: "gpu".into(),
            reference: Some("cublas-sgemm".into()),
            sample: 3,
            fixed: vec!["the template's fixed default".into()],
            only: None,
            commit: "c".into(),
            unix_time: 1,
            rows,
        }
    }

    #[test]
    fn parts_of_a_sweep_join_and_a_shape_measured_again_replaces_its_row() {
        let mut all = Vec::new();
        merge(&mut all, sweep("1/2", vec![row("m=8,n=8,k=8", 2.0, 1.0)]));
        merge(
            &mut all,
            sweep(
                "2/2",
                vec![row("m=9,n=9,k=9", 2.0, 1.0), row("m=8,n=8,k=8", 4.0, 1.0)],
            ),
        );
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].rows.len(), 2);
        assert_eq!(all[0].rows[0].rule.ms, Some(4.0));
        assert_eq!(all[0].part, None);
        // Another device is another sweep.
        let mut other = sweep("1/1", vec![row("m=8,n=8,k=8", 2.0, 1.0)]);
        other.device = "other".into();
        merge(&mut all, other);
        assert_eq!(all.len(), 2);
        // So is a sweep that sampled more configs: its rows do not pose as the first's.
        let mut deeper = sweep("1/1", vec![row("m=8,n=8,k=8", 8.0, 1.0)]);
        deeper.sample = 64;
        merge(&mut all, deeper);
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].rows[0].rule.ms, Some(4.0));
    }

    #[test]
    fn the_section_has_the_summary_a_chart_and_a_row_per_shape() {
        let dir = std::env::temp_dir().join(format!("weft-sweeps-{}", std::process::id()));
        let s = sweep(
            "1/1",
            vec![row("m=8,n=8,k=8", 2.0, 1.0), row("m=9,n=9,k=9", 1.0, 1.0)],
        );
        let mut md = String::new();
        let files = section(&mut md, &[s], &dir, &dir.join("charts")).unwrap();
        assert_eq!(files, [dir.join("charts/sweep-matmul-1.svg")]);
        assert!(files.iter().all(|f| f.exists()));
        // The rule is half the tuned speed at one shape and as fast at the other.
        assert!(md.contains("worst 0.50x"), "{md}");
        assert!(
            md.contains("| 1 | m=8,n=8,k=8 | 1000.0 | 1000.0 | 2000.0 | 0.50x | 4000.0 |"),
            "{md}"
        );
        assert!(md.contains("| 2 | m=9,n=9,k=9 |"), "{md}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

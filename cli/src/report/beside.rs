//! Single kernels beside another engine's kernel for the same computation, measured in
//! the same call on the same GPU: `weft report --baselines` takes, besides the model
//! lines of `scripts/torch_models.py`, the op lines of `scripts/torch_attention.py`
//! (PyTorch's `scaled_dot_product_attention` on its flash backend, its output checked
//! against float64 by the script). The page puts each beside weft's row of the same op
//! and shape from the benchmark runs, with the speed ratio and the project's target for
//! that op stated as met or missed.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::{Kind, Row, Status};
use crate::error::CliError;

/// One kernel time of another engine at one of weft's op shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpBaseline {
    /// weft's op name (`attention-f16`).
    pub op: String,
    /// The shape as weft's workloads write it (`bh=12,s=128,t=128,d=64,causal=0`).
    pub shape: String,
    /// `PyTorch SDPA (flash)`, ...
    pub engine: String,
    pub device: String,
    /// Median kernel time of one call, in milliseconds.
    pub ms: f64,
    /// The engine's output against float64, relative to the output's scale, as the
    /// script measured it.
    #[serde(default)]
    pub error: Option<f64>,
    pub unix_time: u64,
}

/// The speed against the baseline (its time ÷ weft's) each op should reach, and where the
/// target comes from.
const TARGETS: &[(&str, f64, &str)] = &[(
    "attention-f16",
    0.8,
    "fused attention at least 0.8× SDPA's speed at every length",
)];

/// Reads the op lines of a baselines file (lines with an `"op"`; the model lines are
/// [`super::models::baselines`]'), measured on `device`.
pub(crate) fn read(path: &Path, device: &str) -> Result<Vec<OpBaseline>, CliError> {
    #[derive(Deserialize)]
    struct Attention {
        op: String,
        bh: i64,
        s: i64,
        t: i64,
        d: i64,
        causal: i64,
        backend: String,
        ms: f64,
        #[serde(default)]
        err: Option<f64>,
    }
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let value: serde_json::Value = match line.starts_with('{') {
            true => serde_json::from_str(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))?,
            false => continue,
        };
        let Some(op) = value.get("op").and_then(|o| o.as_str()) else {
            continue;
        };
        if op != "attention-f16" {
            return Err(bad(format!(
                "line {}: no baseline format for op `{op}` (attention-f16 only)",
                i + 1
            )));
        }
        let a: Attention =
            serde_json::from_value(value).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        if !(a.ms.is_finite() && a.ms > 0.0) {
            return Err(bad(format!("line {}: time {} ms", i + 1, a.ms)));
        }
        rows.push(OpBaseline {
            op: a.op,
            shape: format!(
                "bh={},s={},t={},d={},causal={}",
                a.bh, a.s, a.t, a.d, a.causal
            ),
            engine: format!("PyTorch SDPA ({})", a.backend),
            device: device.to_string(),
            ms: a.ms,
            error: a.err,
            unix_time: weft_tune::unix_now(),
        });
    }
    Ok(rows)
}

/// Adds `new` to `rows`, a new row replacing an old one of the same op, shape, engine and
/// device.
pub(crate) fn merge(rows: &mut Vec<OpBaseline>, new: Vec<OpBaseline>) {
    for n in new {
        let same = |r: &OpBaseline| {
            (&r.op, &r.shape, &r.engine, &r.device) == (&n.op, &n.shape, &n.engine, &n.device)
        };
        match rows.iter().position(same) {
            Some(i) => rows[i] = n,
            None => rows.push(n),
        }
    }
}

/// weft's fastest right row of `b`'s op and shape on `b`'s device.
fn weft_row<'a>(b: &OpBaseline, rows: &[&'a Row]) -> Option<&'a Row> {
    rows.iter()
        .copied()
        .filter(|r| {
            r.kind == Kind::Weft
                && r.status == Status::Ok
                && r.op == b.op
                && r.shape == b.shape
                && r.device == b.device
        })
        .filter(|r| r.median_ms.is_some())
        .min_by(|a, b| a.median_ms.partial_cmp(&b.median_ms).expect("finite times"))
}

/// The section: per op a table of its shapes, weft's time and config, the baseline's, the
/// speed ratio, then the op's target. `rows` are the benchmark rows the page shows (a
/// later run's replacing an earlier one's).
pub(crate) fn section(md: &mut String, baselines: &[OpBaseline], rows: &[&Row]) {
    if baselines.is_empty() {
        return;
    }
    md.push_str("## Kernels beside another engine\n\n");
    md.push_str(
        "One kernel of weft beside another engine's kernel for the same computation, both \
         timed in the same call on the same GPU: weft's row is its benchmark's (kernel \
         time, output checked against the float64 reference); the other's is CUDA-event \
         time per call over calls replayed in one CUDA graph, its output checked against \
         float64 by the script that timed it. Speed = the other's time ÷ weft's.\n\n",
    );
    let mut ops: Vec<&str> = Vec::new();
    for b in baselines {
        if !ops.contains(&b.op.as_str()) {
            ops.push(&b.op);
        }
    }
    for op in ops {
        let of: Vec<&OpBaseline> = baselines.iter().filter(|b| b.op == op).collect();
        let _ = writeln!(md, "### {op}\n");
        md.push_str("| shape | device | weft | config | engine | its time | its error | speed |\n");
        md.push_str("| --- | --- | ---: | --- | --- | ---: | ---: | ---: |\n");
        let mut ratios = Vec::new();
        for b in &of {
            let weft = weft_row(b, rows);
            let (time, config, speed) = match weft.and_then(|r| r.median_ms.map(|t| (r, t))) {
                Some((r, t)) => {
                    ratios.push((b.shape.as_str(), b.ms / t));
                    (
                        format!("{:.1} µs", t * 1e3),
                        format!("`{}`", r.config.as_deref().unwrap_or("-")),
                        format!("**{:.2}×**", b.ms / t),
                    )
                }
                None => ("not measured".into(), "-".into(), "-".into()),
            };
            let error = b.error.map_or("-".to_string(), |e| format!("{e:.1e}"));
            let _ = writeln!(
                md,
                "| {} | {} | {time} | {config} | {} | {:.1} µs | {error} | {speed} |",
                b.shape,
                b.device,
                b.engine,
                b.ms * 1e3
            );
        }
        md.push('\n');
        if let Some((_, want, what)) = TARGETS.iter().find(|(o, ..)| *o == op) {
            let worst = ratios
                .iter()
                .min_by(|a, b| a.1.partial_cmp(&b.1).expect("finite ratios"));
            if let Some((shape, ratio)) = worst {
                let verdict = if *ratio >= *want { "met" } else { "missed" };
                let _ = writeln!(
                    md,
                    "Target: {what}. Slowest: {ratio:.2}× at {shape} (target ≥ {want}×) — \
                     **{verdict}**.\n"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weft(shape: &str, ms: f64, device: &str) -> Row {
        let w = weft_ops::Workload::default_for("attention-f16").expect("a registered op");
        let mut r = Row::new(&w, "template", "cuda", device, Kind::Weft);
        r.shape = shape.into();
        r.status = Status::Ok;
        r.median_ms = Some(ms);
        r.config = Some("mma=16".into());
        r
    }

    #[test]
    fn lines_are_read_and_put_beside_weft() {
        let dir = std::env::temp_dir().join(format!("weft-beside-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.jsonl");
        let lines = [
            r#"{"model": "gpt2", "batch": 1, "resolution": 128, "dtype": "f16", "mode": "eager", "ms": 4.9}"#,
            r#"{"op": "attention-f16", "bh": 12, "s": 128, "t": 128, "d": 64, "causal": 0, "backend": "flash", "ms": 0.0050, "err": 3e-4}"#,
            r#"{"op": "attention-f16", "bh": 12, "s": 2048, "t": 2048, "d": 64, "causal": 0, "backend": "flash", "ms": 0.060}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let got = read(&path, "H100").unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].shape, "bh=12,s=128,t=128,d=64,causal=0");
        assert_eq!(got[0].engine, "PyTorch SDPA (flash)");

        // weft at 128: 1.25× (5.0 / 4.0 µs); at 2048 0.75× — the slowest, so missed. A row
        // of another device is not used.
        let rows = [
            weft("bh=12,s=128,t=128,d=64,causal=0", 0.0040, "H100"),
            weft("bh=12,s=2048,t=2048,d=64,causal=0", 0.080, "H100"),
            weft("bh=12,s=2048,t=2048,d=64,causal=0", 0.010, "other"),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let mut md = String::new();
        section(&mut md, &got, &refs);
        assert!(
            md.contains(
                "| 4.0 µs | `mma=16` | PyTorch SDPA (flash) | 5.0 µs | 3.0e-4 | **1.25×** |"
            ),
            "{md}"
        );
        assert!(md.contains("**0.75×**"), "{md}");
        assert!(
            md.contains(
                "Slowest: 0.75× at bh=12,s=2048,t=2048,d=64,causal=0 (target ≥ 0.8×) — **missed**"
            ),
            "{md}"
        );

        // A later line replaces an earlier one of the same shape; an unknown op is an error.
        let mut all = got.clone();
        let mut faster = got[1].clone();
        faster.ms = 0.050;
        merge(&mut all, vec![faster]);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].ms, 0.050);
        std::fs::write(&path, r#"{"op": "softmax", "ms": 1.0}"#).unwrap();
        let err = read(&path, "H100").unwrap_err().to_string();
        assert!(err.contains("no baseline format for op `softmax`"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

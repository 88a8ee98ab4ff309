//! The page's section of one GPU through two APIs (issue 28's figure): where the report
//! holds sweeps of an op at the same shapes on `cuda` and on a wgpu target of the same
//! GPU, each tuned for its own target (`weft sweep` with a sample of its space), and
//! whole models on both, the wgpu target's speed as a fraction of CUDA's.

use std::fmt::Write;

use super::gpu;
use super::models::ModelRow;
use crate::format::fmt_time;
use crate::sweep::{Sweep, SweepRow};

/// The speed an op row should reach through the wgpu target, as a fraction of CUDA's.
pub const OP_TARGET: f64 = 0.8;

/// The speed a whole model should reach through the wgpu target.
pub const MODEL_TARGET: f64 = 0.6;

fn is_cuda(target: &str) -> bool {
    target == "cuda" || target.starts_with("cuda ")
}

/// One shape of an op timed on both targets.
#[derive(Debug, PartialEq)]
pub(crate) struct OpPair<'a> {
    pub op: &'a str,
    pub shape: &'a str,
    pub gpu: &'a str,
    /// The wgpu target's name (`vulkan`).
    pub other: &'a str,
    pub cuda: &'a SweepRow,
    pub cuda_sample: usize,
    pub wgpu: &'a SweepRow,
    pub wgpu_sample: usize,
}

impl OpPair<'_> {
    /// CUDA's tuned time ÷ the wgpu target's (the wgpu target's speed as a fraction).
    fn tuned_speed(&self) -> Option<f64> {
        Some(self.cuda.tuned.as_ref()?.ms? / self.wgpu.tuned.as_ref()?.ms?)
    }

    fn rule_speed(&self) -> Option<f64> {
        Some(self.cuda.rule.ms? / self.wgpu.rule.ms?)
    }
}

/// The shapes both a CUDA sweep and a wgpu sweep of the same op on the same GPU tuned;
/// of several CUDA sweeps of a shape, the one measured nearest in time to the wgpu sweep
/// (the same call where one swept both: a later CUDA sweep with another sample or other
/// kernels is not a pair).
pub(crate) fn op_pairs(sweeps: &[Sweep]) -> Vec<OpPair<'_>> {
    let mut out = Vec::new();
    for w in sweeps
        .iter()
        .filter(|s| !is_cuda(&s.target) && s.sample > 0)
    {
        for row in &w.rows {
            let cuda = sweeps
                .iter()
                .filter(|c| {
                    is_cuda(&c.target)
                        && c.sample > 0
                        && c.op == w.op
                        && gpu(&c.device) == gpu(&w.device)
                })
                .filter_map(|c| c.rows.iter().find(|r| r.shape == row.shape).map(|r| (c, r)))
                .min_by_key(|(c, _)| c.unix_time.abs_diff(w.unix_time));
            if let Some((c, r)) = cuda {
                out.push(OpPair {
                    op: &w.op,
                    shape: &row.shape,
                    gpu: gpu(&w.device),
                    other: &w.target,
                    cuda: r,
                    cuda_sample: c.sample,
                    wgpu: row,
                    wgpu_sample: w.sample,
                });
            }
        }
    }
    out
}

/// One model (batch, size, dtype) run by weft on both targets: the latest of each.
#[derive(Debug, PartialEq)]
pub(crate) struct ModelPair<'a> {
    pub cuda: &'a ModelRow,
    pub wgpu: &'a ModelRow,
}

pub(crate) fn model_pairs(models: &[ModelRow]) -> Vec<ModelPair<'_>> {
    let weft: Vec<&ModelRow> = models.iter().filter(|m| m.engine == "weft").collect();
    let key = |m: &ModelRow| (m.model.clone(), m.batch, m.resolution, m.dtype.clone());
    let mut out = Vec::new();
    for w in weft.iter().filter(|m| !is_cuda(&m.target)) {
        let later = |a: &&&ModelRow, b: &&&ModelRow| a.unix_time.cmp(&b.unix_time);
        // Only the latest wgpu row of each model stands for it.
        let newest = weft
            .iter()
            .filter(|o| o.target == w.target && key(o) == key(w))
            .max_by(later);
        if newest.map(|n| std::ptr::eq(*n, *w)) != Some(true) {
            continue;
        }
        let cuda = weft
            .iter()
            .filter(|c| is_cuda(&c.target) && key(c) == key(w) && gpu(&c.device) == gpu(&w.device))
            .max_by(later);
        if let Some(c) = cuda {
            out.push(ModelPair { cuda: c, wgpu: w });
        }
    }
    out
}

fn ms(t: Option<f64>) -> String {
    t.map(|ms| fmt_time(std::time::Duration::from_secs_f64(ms / 1e3)))
        .unwrap_or_else(|| "-".into())
}

fn speed(s: Option<f64>) -> String {
    s.map(|s| format!("{s:.2}x")).unwrap_or_else(|| "-".into())
}

fn verdict(s: Option<f64>, target: f64) -> &'static str {
    match s {
        Some(s) if s >= target => "met",
        Some(_) => "**missed**",
        None => "-",
    }
}

/// Writes the section, where there is anything to pair.
pub(crate) fn section(md: &mut String, sweeps: &[Sweep], models: &[ModelRow]) {
    let ops = op_pairs(sweeps);
    let whole = model_pairs(models);
    if ops.is_empty() && whole.is_empty() {
        return;
    }
    md.push_str("## One GPU through CUDA and through Vulkan\n\n");
    let _ = writeln!(
        md,
        "The same op at the same shape on the same GPU through CUDA and through a wgpu \
         target, each tuned for its own target (`weft sweep`: the best of the configs of \
         its own space it timed there) and by the rule with no record; and whole models by \
         weft on both. Speed is CUDA's time ÷ the other's (1.00x: as fast as CUDA). \
         Targets: at least {OP_TARGET}x for every op row (tuned), at least {MODEL_TARGET}x \
         for every model. An op row pairs the wgpu sweep with the CUDA sweep holding its \
         shape that ran nearest in time to it (the same call where there is one), a model \
         row the latest run of each target: the sweeps' sections \
         above and the runs' rows say when each side ran.\n"
    );
    if !ops.is_empty() {
        md.push_str(
            "| op | shape | GPU | cuda tuned | other tuned | configs timed (cuda / other) | speed, tuned | target | cuda rule | other rule | speed, rule |\n",
        );
        md.push_str("|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|\n");
        for p in &ops {
            let tuned = p.tuned_speed();
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} `{}` | {} / {} | {} | {} | {} | {} | {} |",
                p.op,
                p.shape,
                p.gpu,
                ms(p.cuda.tuned.as_ref().and_then(|t| t.ms)),
                ms(p.wgpu.tuned.as_ref().and_then(|t| t.ms)),
                p.other,
                p.cuda_sample.min(p.cuda.timed),
                p.wgpu_sample.min(p.wgpu.timed),
                speed(tuned),
                verdict(tuned, OP_TARGET),
                ms(p.cuda.rule.ms),
                ms(p.wgpu.rule.ms),
                speed(p.rule_speed()),
            );
        }
        let speeds: Vec<f64> = ops.iter().filter_map(OpPair::tuned_speed).collect();
        if !speeds.is_empty() {
            let geo = (speeds.iter().map(|s| s.ln()).sum::<f64>() / speeds.len() as f64).exp();
            let met = speeds.iter().filter(|&&s| s >= OP_TARGET).count();
            let _ = writeln!(
                md,
                "\nTuned: at least {OP_TARGET}x at {met} of {} op rows, geometric mean {geo:.2}x.\n",
                speeds.len()
            );
        }
    }
    if !whole.is_empty() {
        md.push_str("| model | batch | size | dtype | GPU | cuda | other | speed | target |\n");
        md.push_str("|---|---:|---:|---|---|---:|---:|---:|---|\n");
        for p in &whole {
            let s = p.cuda.ms / p.wgpu.ms;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} `{}` | {s:.2}x | {} |",
                p.wgpu.model,
                p.wgpu.batch,
                p.wgpu.resolution,
                p.wgpu.dtype,
                gpu(&p.wgpu.device),
                ms(Some(p.cuda.ms)),
                ms(Some(p.wgpu.ms)),
                p.wgpu.target,
                verdict(Some(s), MODEL_TARGET),
            );
        }
        md.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Timed;

    fn row(shape: &str, rule: f64, tuned: f64) -> SweepRow {
        let t = |ms: f64| Timed {
            config: "c".into(),
            ms: Some(ms),
            note: None,
        };
        SweepRow {
            bytes: None,
            shape: shape.into(),
            flops: 1.0,
            reference_ms: None,
            rule: t(rule),
            rule_why: String::new(),
            tuned: Some(t(tuned)),
            fixed: Vec::new(),
            timed: 10,
            trials: Vec::new(),
            unsplit: None,
        }
    }

    fn sweep(target: &str, device: &str, time: u64, rows: Vec<SweepRow>) -> Sweep {
        Sweep {
            shapes: "list".into(),
            part: None,
            op: "matmul-f16".into(),
            target: target.into(),
            device: device.into(),
            reference: None,
            sample: 100,
            fixed: Vec::new(),
            only: None,
            commit: "c".into(),
            unix_time: time,
            rows,
        }
    }

    #[test]
    fn op_rows_pair_by_op_shape_and_gpu_and_take_the_cuda_sweep_nearest_in_time() {
        let h100 = "NVIDIA H100 80GB HBM3";
        let sweeps = vec![
            sweep(
                "cuda",
                &format!("{h100} (sm_90)"),
                1,
                vec![row("a", 2.0, 1.0)],
            ),
            sweep(
                "cuda",
                &format!("{h100} (sm_90)"),
                2,
                vec![row("a", 3.0, 0.5), row("b", 1.0, 1.0)],
            ),
            sweep(
                "vulkan",
                &format!("{h100} (Vulkan, DiscreteGpu)"),
                3,
                vec![row("a", 4.0, 2.0), row("c", 1.0, 1.0)],
            ),
            // Another GPU never pairs.
            sweep("vulkan", "AMD (Vulkan)", 4, vec![row("b", 1.0, 1.0)]),
            // A CUDA sweep of a later call: not the Vulkan sweep's pair.
            sweep(
                "cuda",
                &format!("{h100} (sm_90)"),
                100,
                vec![row("a", 1.0, 1.0)],
            ),
        ];
        let pairs = op_pairs(&sweeps);
        assert_eq!(pairs.len(), 1);
        let p = &pairs[0];
        assert_eq!((p.shape, p.gpu, p.other), ("a", h100, "vulkan"));
        assert_eq!(p.tuned_speed(), Some(0.25));
        assert_eq!(p.rule_speed(), Some(0.75));
        let mut md = String::new();
        section(&mut md, &sweeps, &[]);
        assert!(md.contains("| 0.25x | **missed** |"), "{md}");
        assert!(md.contains("at 0 of 1 op rows"), "{md}");
    }

    #[test]
    fn models_pair_the_latest_weft_rows_of_each_target() {
        let m = |target: &str, device: &str, ms: f64, time: u64| ModelRow {
            model: "zoo:bert_base".into(),
            batch: 1,
            resolution: 128,
            dtype: "f16".into(),
            engine: "weft".into(),
            target: target.into(),
            device: device.into(),
            ms,
            kernels: None,
            compile_s: None,
            unix_time: time,
            anchors: None,
            tuned: None,
        };
        let rows = vec![
            m("cuda", "H100 (sm_90)", 0.5, 1),
            m("vulkan", "H100 (Vulkan)", 2.0, 1),
            m("vulkan", "H100 (Vulkan)", 0.8, 2),
            ModelRow {
                engine: "torch.compile".into(),
                ..m("cuda", "H100 (sm_90)", 0.1, 3)
            },
        ];
        let pairs = model_pairs(&rows);
        assert_eq!(pairs.len(), 1);
        assert_eq!((pairs[0].cuda.ms, pairs[0].wgpu.ms), (0.5, 0.8));
        let mut md = String::new();
        section(&mut md, &[], &rows);
        assert!(md.contains("| 0.62x | met |"), "{md}");
    }
}

//! `weft sweep`: a template's config with no tuning record (the stated rule) against the
//! best that tuning finds and against fixed configs, over many shapes, beside the vendor
//! library — the figure behind the Hidet paper's claim that a hardware-centric space needs
//! no per-shape search to be fast at every size (§4.3, and its input-size sensitivity
//! figure). This module holds the shape sets and what a sweep records; the command is
//! `crate::commands::sweep` and the page's section `crate::report::sweeps`.

use serde::{Deserialize, Serialize};

/// One config as a sweep timed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    /// The config (`name=value,...`).
    pub config: String,
    /// Its median kernel time in ms; `None` where it could not run (see `note`).
    pub ms: Option<f64>,
    /// Why it has no time, or that it was not checked against the float64 reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One shape of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// `m=..,n=..,k=..`.
    pub shape: String,
    /// Floating-point operations of one run.
    pub flops: f64,
    /// Bytes one run reads and writes, for memory-bound ops (the skinny products),
    /// whose rows print GB/s: bytes ÷ median time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// The vendor library's median kernel time (cuBLAS, cuDNN: [`Sweep::reference`]), in
    /// ms.
    pub reference_ms: Option<f64>,
    /// The config with no tuning record: the template's stated rule for this shape.
    pub rule: Timed,
    /// Why the rule chose it.
    pub rule_why: String,
    /// The fastest right config of the tuning at this shape (`None`: not tuned).
    pub tuned: Option<Timed>,
    /// The sweep's fixed configs, each timed as it is ([`Sweep::fixed`]'s order).
    pub fixed: Vec<Timed>,
    /// Configs timed at this shape.
    pub timed: usize,
    /// Every config timed at this shape, where the sweep was asked to keep them
    /// (`--trials`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<Timed>,
    /// Where the rule splits the keys (split-KV attention): the one-kernel rule's config,
    /// timed beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsplit: Option<Timed>,
}

/// A sweep: the op, the device, the shapes and what each config did there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The shape set as given (`mixed`, `cubes:1984:2112:1`, or a list).
    pub shapes: String,
    /// The part of the set this run measured (`1/2`), if not all of it: the report joins
    /// the parts of one sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    pub op: String,
    pub target: String,
    pub device: String,
    /// The vendor call timed beside (`cublas-sgemm`), if any.
    pub reference: Option<String>,
    /// Configs of the space timed at each shape (besides the rule's and the fixed ones;
    /// 0: none, no tuning).
    pub sample: usize,
    /// What each fixed config is (`the template's default`, `tuned at m=2048,...`).
    pub fixed: Vec<String>,
    /// The sub-space tuning sampled (`--only`), if not the whole space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<String>,
    /// weft's commit and when the sweep ran (seconds since the Unix epoch).
    pub commit: String,
    pub unix_time: u64,
    pub rows: Vec<SweepRow>,
}

/// The named shape sets.
pub const SETS: &str = "`mixed` (60 matmul shapes: squares, primes, small M, long K, \
                        BERT/ViT/GPT-2 projections, ResNet-50's convolutions as GEMMs), \
                        `cubes:FROM:TO[:STEP]` (m = n = k), `resnet50` (the convolution \
                        ops: ResNet-50's distinct convolutions at batch 1), `grouped` (the \
                        grouped convolution ops: ResNeXt-50 32x4d's and RegNetY-400MF's \
                        grouped 3x3s at batch 1 and 8), `llama-decode` \
                        (TinyLlama-1.1B's decode products at batch 1 and 8: q/k/v fused, \
                        o, gate/up fused, down, the vocabulary head; for `attention-f16`, \
                        the decode step's attention over caches of 191 to 2048 positions), `depthwise` (the depthwise ops: \
                        ConvNeXt-tiny's and EfficientNet-B0's depthwise convolutions at \
                        batch 1 and 8)";

/// `llama-decode`: TinyLlama-1.1B's decode products `(n, k)` (hidden 2048, 4 KV heads of
/// 64, intermediate 5632, vocabulary 32000), each at [`LLAMA_BATCHES`] rows.
pub const LLAMA_DECODE: [(i64, i64); 5] = [
    (2560, 2048),
    (2048, 2048),
    (11264, 2048),
    (2048, 5632),
    (32000, 2048),
];

/// The batches (rows) of `llama-decode`.
pub const LLAMA_BATCHES: [i64; 2] = [1, 8];

/// `llama-decode` for `attention-f16`: a decode step's attention over its cache, the
/// query heads of a KV head as 8 rows of one head (`s` = 8, head size 64), at 4 and 32
/// KV heads (TinyLlama's, a Llama-7B-like model's) and batch 1 and 8 (`bh` = batch · KV
/// heads: 4, 32 and 256, the 32 of both), over caches of 191, 1152 and 2048 positions.
pub fn llama_decode_attention() -> Vec<String> {
    let mut heads: Vec<i64> = LLAMA_BATCHES
        .iter()
        .flat_map(|&b| [4, 32].map(|kv| b * kv))
        .collect();
    heads.sort_unstable();
    heads.dedup();
    heads
        .iter()
        .flat_map(|&bh| [191, 1152, 2048].map(move |t| format!("bh={bh},s=8,t={t},d=64,causal=0")))
        .collect()
}

/// `mixed`: 60 `(m, n, k)` products of the kinds the issue names, none tuned for.
pub const MIXED: [(i64, i64, i64); 60] = [
    // Squares, powers of two and not.
    (128, 128, 128),
    (256, 256, 256),
    (512, 512, 512),
    (768, 768, 768),
    (1024, 1024, 1024),
    (1536, 1536, 1536),
    (2048, 2048, 2048),
    (3072, 3072, 3072),
    (4096, 4096, 4096),
    // Primes and other odd sizes.
    (127, 127, 127),
    (257, 257, 257),
    (509, 509, 509),
    (1021, 1021, 1021),
    (2039, 2039, 2039),
    (3001, 3001, 3001),
    (1000, 1000, 1000),
    (999, 1001, 997),
    (1531, 769, 383),
    (333, 555, 777),
    (4095, 4097, 63),
    // Small M (batch-1 and small-batch projections, a GEMV).
    (1, 1000, 2048),
    (8, 4096, 4096),
    (16, 1024, 4096),
    (32, 4096, 1024),
    (64, 4096, 1024),
    (4096, 64, 1024),
    // Long K.
    (128, 128, 16384),
    (256, 256, 8192),
    (64, 64, 32768),
    (512, 512, 2048),
    (1024, 1024, 8192),
    // BERT-base and GPT-2 at sequence 128 (batch 1 and 8), ViT-B/16 (197 tokens).
    (128, 768, 768),
    (128, 2304, 768),
    (128, 3072, 768),
    (128, 768, 3072),
    (1024, 768, 768),
    (1024, 3072, 768),
    (1024, 768, 3072),
    (197, 768, 768),
    (197, 2304, 768),
    (197, 3072, 768),
    (197, 768, 3072),
    (128, 50257, 768),
    // ResNet-50's convolutions at batch 1 as implicit GEMMs (n·oh·ow × k × c·r·s).
    (12544, 64, 147),
    (3136, 64, 576),
    (3136, 256, 64),
    (3136, 64, 256),
    (784, 128, 1152),
    (784, 512, 128),
    (784, 128, 512),
    (196, 256, 2304),
    (196, 1024, 256),
    (196, 256, 1024),
    (49, 512, 4608),
    (49, 2048, 512),
    (49, 512, 2048),
    // Small and short-K products.
    (64, 64, 64),
    (17, 33, 65),
    (2048, 2048, 32),
    (2048, 512, 2048),
];

/// The set of the depthwise ops: ConvNeXt-tiny's and EfficientNet-B0's depthwise
/// convolutions at batch 1 and 8.
pub const DEPTHWISE: &str = "depthwise";

/// The depthwise ops, whose shapes `depthwise` names.
pub const DEPTHWISE_OPS: [&str; 2] = ["depthwise-conv2d", "depthwise-conv2d-f16"];

/// The distinct depthwise convolutions of ConvNeXt-tiny (7×7, stride 1, its four
/// stages) and EfficientNet-B0 (3×3 and 5×5, strides 1 and 2) at 224², as
/// `(channels, image side, window, stride)`: torchvision's models.
const DEPTHWISE_LAYERS: [(i64, i64, i64, i64); 16] = [
    (96, 56, 7, 1),
    (192, 28, 7, 1),
    (384, 14, 7, 1),
    (768, 7, 7, 1),
    (32, 112, 3, 1),
    (96, 112, 3, 2),
    (144, 56, 3, 1),
    (144, 56, 5, 2),
    (240, 28, 5, 1),
    (240, 28, 3, 2),
    (480, 14, 3, 1),
    (480, 14, 5, 1),
    (672, 14, 5, 1),
    (672, 14, 5, 2),
    (1152, 7, 5, 1),
    (1152, 7, 3, 1),
];

/// The `depthwise` set as the depthwise ops' shapes (`b=..,c=..,h=..,w=..,k=..,stride=..`):
/// every layer at batch 1, then every layer at batch 8.
pub fn depthwise_shapes() -> Vec<String> {
    [1, 8]
        .iter()
        .flat_map(|b| {
            DEPTHWISE_LAYERS
                .iter()
                .map(move |(c, hw, k, s)| format!("b={b},c={c},h={hw},w={hw},k={k},stride={s}"))
        })
        .collect()
}

/// The set of the convolution ops: ResNet-50's distinct convolutions.
pub const RESNET50: &str = "resnet50";

/// The convolution ops, whose shapes `resnet50` names.
pub const CONV_OPS: [&str; 4] = [
    "conv2d",
    "conv2d-bias-relu",
    "conv2d-f16",
    "conv2d-f16-bias-relu",
];

/// The set of the grouped convolution ops: ResNeXt-50 32×4d's and RegNetY-400MF's grouped
/// convolutions.
pub const GROUPED: &str = "grouped";

/// The grouped convolution ops, whose shapes `grouped` names (cuDNN beside them too).
pub const GROUPED_OPS: [&str; 2] = ["grouped-conv2d", "grouped-conv2d-f16"];

/// The distinct grouped 3×3 convolutions of torchvision's ResNeXt-50 32×4d (32 groups of
/// 4, 8, 16 and 32 channels) and RegNetY-400MF (groups of 8: 6, 13, 26 and 55 of them),
/// at 224², as hooks on the models' `Conv2d`s list them, at batch 1 and at batch 8.
pub fn grouped_convs() -> Vec<String> {
    // (c = k, h = w, stride, groups)
    const CONVS: [(i64, i64, i64, i64); 14] = [
        (128, 56, 1, 32),
        (256, 56, 2, 32),
        (256, 28, 1, 32),
        (512, 28, 2, 32),
        (512, 14, 1, 32),
        (1024, 14, 2, 32),
        (1024, 7, 1, 32),
        (48, 112, 2, 6),
        (104, 56, 2, 13),
        (104, 28, 1, 13),
        (208, 28, 2, 26),
        (208, 14, 1, 26),
        (440, 14, 2, 55),
        (440, 7, 1, 55),
    ];
    [1, 8]
        .into_iter()
        .flat_map(|n| {
            CONVS.iter().map(move |(c, hw, stride, g)| {
                format!("n={n},c={c},h={hw},w={hw},k={c},r=3,s=3,stride={stride},pad=1,g={g}")
            })
        })
        .collect()
}

/// ResNet-50's distinct convolutions at batch 1 and 224² (the zoo's model, as
/// torchvision builds it), in the order the model first runs them, as the convolution
/// ops' shapes (`n=1,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..`).
pub fn resnet50_convs() -> Result<Vec<String>, String> {
    use weft_graph::op::Op;
    let g = weft_graph::zoo::build("resnet50", &weft_graph::zoo::ZooOptions::resnet50())
        .map_err(|e| format!("building zoo:resnet50: {e}"))?;
    let mut out: Vec<String> = Vec::new();
    for node in &g.nodes {
        let Op::Conv(c) = &node.op else { continue };
        let (Some(x), Some(w)) = (node.inputs.first(), node.inputs.get(1)) else {
            continue;
        };
        let (x, w) = (&g.tensor(*x).shape, &g.tensor(*w).shape);
        // The ops' convolutions are dense, square-strided and padded alike on every
        // side; ResNet-50's all are.
        let alike = c.groups == 1
            && c.strides[0] == c.strides[1]
            && c.pads.iter().all(|&p| p == c.pads[0])
            && c.dilations == [1, 1];
        if !alike || x.len() != 4 || w.len() != 4 {
            continue;
        }
        let text = format!(
            "n={},c={},h={},w={},k={},r={},s={},stride={},pad={}",
            x[0], x[1], x[2], x[3], w[0], w[2], w[3], c.strides[0], c.pads[0]
        );
        if !out.contains(&text) {
            out.push(text);
        }
    }
    Ok(out)
}

/// The shapes (`m=..,n=..,k=..`) of a set: `mixed`, `cubes:FROM:TO[:STEP]`, or shapes
/// separated by `;`. An error says what is wrong with the text.
pub fn shapes(set: &str) -> Result<Vec<String>, String> {
    let text = |(m, n, k): (i64, i64, i64)| format!("m={m},n={n},k={k}");
    if set == "mixed" {
        return Ok(MIXED.iter().copied().map(text).collect());
    }
    if set == "llama-decode" {
        let shapes = LLAMA_BATCHES
            .iter()
            .flat_map(|&m| LLAMA_DECODE.iter().map(move |&(n, k)| (m, n, k)));
        return Ok(shapes.map(text).collect());
    }
    if let Some(range) = set.strip_prefix("cubes:") {
        let parts: Vec<&str> = range.split(':').collect();
        let num = |s: &str| -> Result<i64, String> {
            s.trim()
                .parse::<i64>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("`{s}` in `{set}` is not a positive integer"))
        };
        let (from, to, step) = match parts[..] {
            [a, b] => (num(a)?, num(b)?, 1),
            [a, b, c] => (num(a)?, num(b)?, num(c)?),
            _ => return Err(format!("`{set}` is not of the form cubes:FROM:TO[:STEP]")),
        };
        if from > to {
            return Err(format!("`{set}`: FROM ({from}) is past TO ({to})"));
        }
        return Ok((from..=to)
            .step_by(step as usize)
            .map(|s| text((s, s, s)))
            .collect());
    }
    let list: Vec<String> = set
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if list.is_empty() {
        return Err(format!(
            "no shapes in `{set}`; give {SETS}, or shapes separated by `;`"
        ));
    }
    Ok(list)
}

/// Part `i` of `n` (`i/n`, counted from 1) of `items`: consecutive, the parts as equal as
/// can be, so that a long sweep can run as several calls.
pub fn part<T: Clone>(items: &[T], which: &str) -> Result<Vec<T>, String> {
    let bad = || format!("`{which}` is not of the form I/N with 1 ≤ I ≤ N");
    let (i, n) = which.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || i > n {
        return Err(bad());
    }
    let (lo, hi) = (items.len() * (i - 1) / n, items.len() * i / n);
    Ok(items[lo..hi].to_vec())
}

/// The geometric mean and the worst of speed ratios (`None` for none).
fn spread(v: &[f64]) -> Option<(String, String)> {
    if v.is_empty() {
        return None;
    }
    let geo = (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    let worst = v.iter().copied().fold(f64::INFINITY, f64::min);
    Some((
        crate::format::fmt_ratio(geo),
        crate::format::fmt_ratio(worst),
    ))
}

/// The summary lines: how the rule does against tuning and each fixed config, and how
/// the tuned best does against the vendor library.
pub fn summary(s: &Sweep) -> Vec<String> {
    let mut out = Vec::new();
    let ratios = |f: &dyn Fn(&SweepRow) -> Option<f64>| -> Vec<f64> {
        s.rows
            .iter()
            .filter_map(|r| Some(f(r)? / r.rule.ms?))
            .collect()
    };
    let say = |what: &str, v: &[f64]| -> Option<String> {
        let (geo, worst) = spread(v)?;
        Some(format!(
            "the rule's speed as a fraction of {what}: geometric mean {geo}, worst {worst}, ≥ 0.8 at {} of {} shapes",
            v.iter().filter(|x| **x >= 0.8).count(),
            v.len()
        ))
    };
    out.extend(say("the tuned best", &ratios(&|r| r.tuned.as_ref()?.ms)));
    for (i, name) in s.fixed.iter().enumerate() {
        out.extend(say(name, &ratios(&|r| r.fixed.get(i)?.ms)));
    }
    let vendor = s.reference.as_deref().unwrap_or("the vendor library");
    out.extend(say(vendor, &ratios(&|r| r.reference_ms)));
    // The tuned best against the vendor library: what issue-level targets ("tuned at
    // least 0.9x cuBLAS", "at least 1.0x cuDNN") are stated over.
    let tuned: Vec<f64> = s
        .rows
        .iter()
        .filter_map(|r| Some(r.reference_ms? / r.tuned.as_ref()?.ms?))
        .collect();
    if let Some((geo, worst)) = spread(&tuned) {
        let at = |t: f64| tuned.iter().filter(|x| **x >= t).count();
        out.push(format!(
            "the tuned best's speed as a fraction of {vendor}: geometric mean {geo}, worst {worst}, ≥ 0.9 at {} and ≥ 1.0 at {} of {} shapes",
            at(0.9),
            at(1.0),
            tuned.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ResNet-50's distinct convolutions, as torchvision's model has them: the 7×7 stem,
    /// and per stage the 1×1 reductions and expansions, the 3×3s, the strided 3×3 and
    /// the strided 1×1 projection of its first block; every one a shape the ops parse.
    #[test]
    fn resnet50_lists_its_distinct_convolutions() {
        let convs = resnet50_convs().unwrap();
        assert_eq!(convs[0], "n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3");
        for layer in [
            "n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1",
            "n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1",
            "n=1,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0",
            "n=1,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1",
        ] {
            assert!(
                convs.iter().any(|c| c == layer),
                "{layer} not in {convs:#?}"
            );
        }
        let mut unique = convs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), convs.len());
        // 53 convolutions in the model, about twenty of them distinct.
        assert!((15..=25).contains(&convs.len()), "{convs:#?}");
        for c in &convs {
            weft_ops::Shape::parse("conv2d-f16", c).unwrap_or_else(|e| panic!("{c}: {e}"));
        }
    }

    #[test]
    fn the_grouped_set_lists_resnext_and_regnet_at_batch_1_and_8() {
        let convs = grouped_convs();
        assert_eq!(convs.len(), 28);
        assert!(convs.contains(&"n=8,c=440,h=7,w=7,k=440,r=3,s=3,stride=1,pad=1,g=55".into()));
        for op in GROUPED_OPS {
            for c in &convs {
                weft_ops::Shape::parse(op, c).unwrap_or_else(|e| panic!("{c}: {e}"));
            }
        }
    }

    #[test]
    fn the_sets_parse() {
        let mixed = shapes("mixed").unwrap();
        assert_eq!(mixed.len(), 60);
        let mut unique = mixed.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 60, "a shape is listed twice");
        let cubes = shapes("cubes:1984:2112").unwrap();
        assert_eq!(cubes.len(), 129);
        assert_eq!(cubes[1], "m=1985,n=1985,k=1985");
        assert_eq!(shapes("cubes:8:16:4").unwrap().len(), 3);
        assert_eq!(shapes("m=1,n=2,k=3; m=4,n=5,k=6").unwrap().len(), 2);
        for bad in ["cubes:9:3", "cubes:a:9", "cubes:1", ";"] {
            assert!(shapes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_decode_attention_set_parses_and_the_rule_splits_only_few_heads() {
        let shapes = llama_decode_attention();
        assert_eq!(shapes.len(), 9);
        assert_eq!(shapes[0], "bh=4,s=8,t=191,d=64,causal=0");
        let h200 = weft_codegen_common::TargetLimits {
            multiprocessors: 132,
            ..weft_codegen_common::TargetLimits::cuda()
        };
        let spec = weft_ops::find("attention-f16").unwrap().template.unwrap();
        for s in &shapes {
            let shape = weft_ops::Shape::parse("attention-f16", s).unwrap();
            let (config, why) = spec.untuned(&h200, &shape);
            // 4 heads split over the 132 multiprocessors; 32 (a batch of 8, slower split
            // on the H200) and 256 heads keep one kernel.
            let split = config.get("sk").is_some();
            assert_eq!(split, s.starts_with("bh=4,"), "{s}: {config} ({why})");
            (spec.build)(&shape, &config).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }

    #[test]
    fn the_depthwise_set_parses_for_both_depthwise_ops() {
        let shapes = depthwise_shapes();
        assert_eq!(shapes.len(), 32);
        assert_eq!(shapes[0], "b=1,c=96,h=56,w=56,k=7,stride=1");
        assert!(shapes[16].starts_with("b=8,"));
        for op in DEPTHWISE_OPS {
            for s in &shapes {
                weft_ops::Shape::parse(op, s).unwrap_or_else(|e| panic!("{op} {s}: {e}"));
            }
        }
    }

    #[test]
    fn parts_cover_the_items_once() {
        let items: Vec<usize> = (0..60).collect();
        let mut all = Vec::new();
        for i in 1..=7 {
            all.extend(part(&items, &format!("{i}/7")).unwrap());
        }
        assert_eq!(all, items);
        for bad in ["0/2", "3/2", "x", "1/0"] {
            assert!(part(&items, bad).is_err(), "{bad}");
        }
    }

    /// The summary states the tuned best against the vendor library over the rows that
    /// have both, counting the shapes at 0.9x and at 1.0x.
    #[test]
    fn the_summary_weighs_the_tuned_best_against_the_vendor() {
        let timed = |ms: Option<f64>| Timed {
            config: "x=1".into(),
            ms,
            note: None,
        };
        let row = |reference: Option<f64>, rule: f64, tuned: Option<f64>| SweepRow {
            bytes: None,
            shape: "m=1,n=1,k=1".into(),
            flops: 2.0,
            reference_ms: reference,
            rule: timed(Some(rule)),
            rule_why: String::new(),
            tuned: tuned.map(|t| timed(Some(t))),
            fixed: Vec::new(),
            timed: 1,
            trials: Vec::new(),
            unsplit: None,
        };
        let sweep = Sweep {
            shapes: "x".into(),
            part: None,
            op: "conv2d-f16".into(),
            target: "cuda".into(),
            device: "d".into(),
            reference: Some("cudnn".into()),
            sample: 1,
            fixed: Vec::new(),
            only: None,
            commit: "c".into(),
            unix_time: 0,
            rows: vec![
                // tuned 2x the vendor's speed, 0.95x, 0.5x; a row with no vendor time.
                row(Some(2.0), 1.0, Some(1.0)),
                row(Some(0.95), 1.0, Some(1.0)),
                row(Some(1.0), 2.0, Some(2.0)),
                row(None, 1.0, Some(1.0)),
            ],
        };
        let lines = summary(&sweep);
        let line = lines
            .iter()
            .find(|l| l.starts_with("the tuned best's speed as a fraction of cudnn"))
            .unwrap_or_else(|| panic!("{lines:#?}"));
        assert!(
            line.ends_with("worst 0.50x, ≥ 0.9 at 2 and ≥ 1.0 at 1 of 3 shapes"),
            "{line}"
        );
    }
}

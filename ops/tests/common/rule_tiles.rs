//! The fp32 matmul rule's data on an H100 (`data/h100-matmul-rule-tiles.csv`: the kernel
//! times of every tile the rule chooses among, with its splits, at the 60 `mixed`
//! shapes) and how near the fastest of them a rule's picks run: what `rule.rs` checks
//! the rule against and `fit_fp32_rule.rs` fits the cost model's constants on.

use std::collections::BTreeMap;

use weft_codegen_common::TargetLimits;
use weft_kernels::Config;
use weft_ops::Shape;

/// Per `(m, n, k)`: each timed config's median µs, by its text.
pub type Times = BTreeMap<(i64, i64, i64), BTreeMap<String, f64>>;

/// The measured times of `data/h100-matmul-rule-tiles.csv`.
pub fn h100_times() -> Times {
    let text = include_str!("../data/h100-matmul-rule-tiles.csv");
    let mut out: Times = Default::default();
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        // m,n,k,"config",us
        let (head, rest) = line.split_once(",\"").expect("a quoted config");
        let (config, us) = rest.split_once("\",").expect("a time after the config");
        let dims: Vec<i64> = head.split(',').map(|d| d.parse().unwrap()).collect();
        let old = out
            .entry((dims[0], dims[1], dims[2]))
            .or_default()
            .insert(config.to_string(), us.parse().unwrap());
        assert!(old.is_none(), "{head}: {config} twice");
    }
    out
}

/// The H100 the data was measured on, as the rule sees it: 132 multiprocessors, 227 KiB
/// of shared memory a block.
pub fn h100() -> TargetLimits {
    TargetLimits {
        multiprocessors: 132,
        max_shared_bytes: 227 * 1024,
        ..TargetLimits::cuda()
    }
}

/// How a rule's pick at one shape ran.
pub struct Pick {
    pub shape: (i64, i64, i64),
    /// The fastest time measured there over the pick's (0 where the pick was not timed).
    pub ratio: f64,
    /// The pick, its time, the fastest config and its time; or why there is no ratio.
    pub text: String,
}

/// The picks of `rule` (an op's config and why, as `TemplateSpec::untuned` gives them) at
/// every shape of `times`, against the fastest config timed there.
pub fn picks(times: &Times, rule: impl Fn(&Shape) -> (Config, String)) -> Vec<Pick> {
    times
        .iter()
        .map(|(&(m, n, k), timed)| {
            let shape = Shape::parse("matmul", &format!("m={m},n={n},k={k}")).unwrap();
            let (config, why) = rule(&shape);
            let (best_config, best) = timed
                .iter()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .expect("a shape has times");
            let (ratio, text) = match timed.get(&config.to_string()) {
                Some(us) => (
                    best / us,
                    format!("{config} {us} us, best {best_config} {best} us"),
                ),
                None => (0.0, format!("{config} ({why}) was not measured")),
            };
            Pick {
                shape: (m, n, k),
                ratio,
                text,
            }
        })
        .collect()
}

/// What a fit maximises and the test pins, over `picks`: how many run within 0.8× of the
/// fastest, their speeds' geometric mean (an unmeasured pick counted at 0.5×, a miss),
/// and the worst (0 where one was not measured).
pub fn figure<'a>(picks: impl IntoIterator<Item = &'a Pick>) -> (usize, f64, f64) {
    let (mut near, mut log, mut worst, mut count) = (0, 0.0, f64::INFINITY, 0);
    for p in picks {
        near += usize::from(p.ratio >= 0.8);
        log += if p.ratio > 0.0 { p.ratio } else { 0.5 }.ln();
        worst = worst.min(p.ratio);
        count += 1;
    }
    (near, (log / count.max(1) as f64).exp(), worst)
}

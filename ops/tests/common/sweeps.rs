//! Kernel times that `weft sweep` measured (`measurements/`: every config with
//! `--trials`, else the rule's pick and the tuning's best), read for the tests that check
//! a stated rule's picks against them, and the figure they report.

use std::collections::BTreeMap;
use std::path::Path;

/// One shape's times.
pub struct Measured {
    /// Each timed config's µs: the geometric mean of the sweeps that timed it.
    pub times: BTreeMap<String, f64>,
    /// The rule of the first sweep of the shape (the one a change replaces): its config
    /// and µs.
    pub old: (String, f64),
}

/// A shape's times as the sweeps give them: every time of each config, and the first
/// sweep's rule.
type Log = (BTreeMap<String, Vec<f64>>, Option<(String, f64)>);

/// Every shape of `sweeps` (paths under `measurements/`) with its times.
pub fn measured(sweeps: &[&str]) -> BTreeMap<String, Measured> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../measurements");
    let mut logs: BTreeMap<String, Log> = BTreeMap::new();
    for sweep in sweeps {
        let text = std::fs::read_to_string(dir.join(sweep)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        for row in json["rows"].as_array().unwrap() {
            let entry = logs
                .entry(row["shape"].as_str().unwrap().into())
                .or_default();
            // Every config timed (`--trials`), else the tuning's best alone.
            let timed = match row["trials"].as_array() {
                Some(trials) => trials.iter().collect(),
                None => vec![&row["tuned"]],
            };
            for trial in timed {
                let Some(config) = trial["config"].as_str() else {
                    continue;
                };
                // A config that could not run there (TMA at an odd n or k) has no time.
                let Some(ms) = trial["ms"].as_f64() else {
                    continue;
                };
                entry.0.entry(config.into()).or_default().push(ms * 1000.0);
            }
            // The rule's pick is a timed config too; the first sweep's is the old rule.
            let rule = &row["rule"];
            let config = rule["config"].as_str().unwrap().to_string();
            let us = rule["ms"].as_f64().unwrap() * 1000.0;
            entry.0.entry(config.clone()).or_default().push(us);
            entry.1.get_or_insert((config, us));
        }
    }
    logs.into_iter()
        .map(|(shape, (times, old))| {
            let times = times
                .into_iter()
                .map(|(c, us)| {
                    let log = us.iter().map(|t| t.ln()).sum::<f64>() / us.len() as f64;
                    (c, log.exp())
                })
                .collect();
            (
                shape,
                Measured {
                    times,
                    old: old.unwrap(),
                },
            )
        })
        .collect()
}

/// Speed as a fraction of the best: at how many shapes ≥ 0.8, the geometric mean, the
/// worst.
pub fn figure(ratios: &[f64]) -> (usize, f64, f64) {
    let near = ratios.iter().filter(|&&r| r >= 0.8).count();
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    (
        near,
        geo,
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
    )
}

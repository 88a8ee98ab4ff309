//! The search: every distinct anchor of a model measured over its candidates, all
//! anchors at once. Round `r` compiles the whole model with each anchor's `r`-th
//! candidate (an anchor with fewer candidates keeps its rule's choice), loads it, checks
//! its outputs against the rule's compile on the same inputs, and times each group's
//! kernels alone; an anchor keeps the fastest candidate it was timed with. One compile
//! per round serves every anchor, so a model of 50 distinct anchors costs as many
//! compiles as its longest candidate list, not 50 times that.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ndarray::ArrayD;
use weft_graph::Graph;
use weft_graph::passes::Precision;
use weft_runtime::Device;

use super::{AnchorChoice, AnchorKey, Choices, candidates, rule_choice};
use crate::compiled::{CompileOptions, CompiledModel};
use crate::error::ModelError;
use crate::measure::{Measure, Measured, Reference, measure};

/// How a tuning run goes.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Candidates per anchor, the rule's own included (the number of rounds).
    pub trials: usize,
    /// Untimed and timed runs of each group per round. A round whose outputs differ from
    /// the rule's compile by more than the precision's tolerance
    /// ([`crate::measure::tolerance`]) is discarded as wrong.
    pub warmup: usize,
    pub iters: usize,
}

/// One anchor's outcome.
#[derive(Clone, Debug)]
pub struct AnchorResult {
    pub key: AnchorKey,
    /// The kernels (group functions) that compute it.
    pub kernels: Vec<String>,
    /// The rule's choice and its time (mean over the anchor's groups).
    pub rule: AnchorChoice,
    pub rule_time: Duration,
    /// The fastest candidate and its time.
    pub best: AnchorChoice,
    pub best_time: Duration,
    /// Candidates timed.
    pub timed: usize,
    /// Candidates in its list.
    pub candidates: usize,
}

/// A tuning run's outcome.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub anchors: Vec<AnchorResult>,
    /// Rounds run, and those discarded: (round, why).
    pub rounds: usize,
    pub discarded: Vec<(usize, String)>,
    pub elapsed: Duration,
}

impl Tuned {
    /// The choices to compile with: each anchor's fastest candidate.
    pub fn choices(&self) -> Choices {
        let mut c = Choices::none();
        for a in &self.anchors {
            c.insert(
                &a.key,
                a.best.clone(),
                format!("tuned: {:.1} µs", a.best_time.as_secs_f64() * 1e6),
            );
        }
        c
    }
}

/// Tunes every anchor of `graph` compiled for `dev` in `precision`, running it on
/// `inputs`; `progress` hears one line per round. Each round goes the one measurement
/// path ([`measure`]): compiled, loaded, run once on poisoned buffers, checked against
/// the rule's round, each group timed.
pub fn tune(
    graph: &Graph,
    precision: Precision,
    dev: &mut dyn Device,
    inputs: &[ArrayD<f32>],
    opts: &TuneOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Tuned, ModelError> {
    let started = Instant::now();
    let limits = &dev.limits();
    let options = CompileOptions::default().with_precision(precision);
    let base = CompiledModel::compile(graph, limits, &options)?;
    // Each distinct anchor, the groups computing it, and its candidates.
    let mut order: Vec<AnchorKey> = Vec::new();
    let mut groups_of: HashMap<AnchorKey, Vec<usize>> = HashMap::new();
    for (i, gr) in base.groups.iter().enumerate() {
        if let Some(key) = &gr.anchor {
            if !groups_of.contains_key(key) {
                order.push(key.clone());
            }
            groups_of.entry(key.clone()).or_default().push(i);
        }
    }
    let lists: Vec<Vec<AnchorChoice>> = order
        .iter()
        .map(|k| candidates(limits, k, opts.trials))
        .collect();
    let rounds = lists.iter().map(Vec::len).max().unwrap_or(0);
    progress(&format!(
        "{} distinct anchors in {} groups, up to {} candidates each: {rounds} rounds",
        order.len(),
        base.groups.len(),
        opts.trials
    ));
    // times[a][c]: anchor a's time with candidate c.
    let mut times: Vec<Vec<Option<Duration>>> = lists.iter().map(|l| vec![None; l.len()]).collect();
    // The rule's round's outputs, which every later round must give.
    let mut reference: Option<Vec<ArrayD<f64>>> = None;
    let mut discarded = Vec::new();
    // `round` indexes every anchor's candidate list and time list alike.
    #[allow(clippy::needless_range_loop)]
    for round in 0..rounds {
        let mut choices = Choices::none();
        for (a, key) in order.iter().enumerate() {
            let choice = lists[a].get(round).unwrap_or(&lists[a][0]);
            choices.insert(key, choice.clone(), "candidate".into());
        }
        let m = Measure {
            inputs: Some(inputs),
            reference: reference
                .as_deref()
                .map_or(Reference::None, Reference::Outputs),
            warmup: opts.warmup,
            iters: opts.iters,
            // Each group alone: an anchor's time is its groups'.
            whole: false,
            each: true,
        };
        let options = options.clone().with_choices(choices);
        match measure(graph, dev, &options, &m).map_err(|e| e.source) {
            Ok(measured) => {
                if let Some(wrong) = measured.wrong() {
                    let err = format!(
                        "output `{}` differs from the rule's compile by {:.2e} (tolerance {:.0e})",
                        wrong.name, wrong.error, wrong.tolerance
                    );
                    progress(&format!("round {round}: discarded, {err}"));
                    discarded.push((round, err));
                    continue;
                }
                let Measured { outputs, each, .. } = measured;
                if reference.is_none() {
                    reference = Some(outputs.iter().map(|o| o.mapv(f64::from)).collect());
                }
                for (a, key) in order.iter().enumerate() {
                    if round >= lists[a].len() {
                        continue;
                    }
                    let gs = &groups_of[key];
                    let total: Duration = gs.iter().map(|&g| each[g].median).sum();
                    times[a][round] = Some(total / gs.len() as u32);
                }
                progress(&format!(
                    "round {round} of {rounds}: {:.0} s so far",
                    started.elapsed().as_secs_f64()
                ));
            }
            // The rule's own compile must work; a later round that does not (a kernel a
            // driver refuses) loses only its candidates.
            Err(e) if round == 0 => return Err(e),
            Err(e) => {
                progress(&format!("round {round}: discarded, {e}"));
                discarded.push((round, e.to_string()));
            }
        }
    }
    let anchors = order
        .iter()
        .enumerate()
        .filter_map(|(a, key)| {
            let rule_time = times[a][0]?;
            let (best, best_time) = times[a]
                .iter()
                .enumerate()
                .filter_map(|(c, t)| t.map(|t| (c, t)))
                .min_by_key(|&(_, t)| t)?;
            Some(AnchorResult {
                key: key.clone(),
                kernels: groups_of[key]
                    .iter()
                    .map(|&g| base.groups[g].func.name.clone())
                    .collect(),
                rule: rule_choice(limits, key),
                rule_time,
                best: lists[a][best].clone(),
                best_time,
                timed: times[a].iter().filter(|t| t.is_some()).count(),
                candidates: lists[a].len(),
            })
        })
        .collect();
    Ok(Tuned {
        anchors,
        rounds,
        discarded,
        elapsed: started.elapsed(),
    })
}

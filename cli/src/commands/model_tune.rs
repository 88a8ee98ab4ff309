//! `weft model tune`: every anchor of a model tuned on a device, the fastest candidates
//! saved as tuning records (their form and how runs read them: `crate::model_compile`).

use std::path::Path;

use weft_model::tune::{TuneOptions, Tuned, tune as search};
use weft_runtime::{Target, WgpuOptions};
use weft_tune::{Record, Records};

use super::tune::records_path;
use crate::error::CliError;
use crate::format::{Table, fmt_time};
use crate::model_args::{ModelDType, ModelTuneArgs};
use crate::model_compile::{OP, dtype_name, load, on_device, precision, random_inputs};
use crate::out::outln;
use crate::select;

/// `weft model tune`.
pub(crate) fn tune(a: &ModelTuneArgs) -> Result<(), CliError> {
    if !a.source.disable_pass.is_empty() {
        return Err(CliError::Usage(
            "`weft model tune` tunes the anchors of the model every pass has run on \
             (the records are keyed by them): --disable-pass is for run, graph and bench"
                .to_string(),
        ));
    }
    // Where the records go is checked before minutes of tuning.
    let path = records_path(a.records.clone())?;
    let g = load(&a.source)?;
    let mut opened = select::open_str(&a.target, WgpuOptions::default())?;
    let device = opened.device.name();
    let inputs = random_inputs(&g, a.seed);
    let opts = TuneOptions {
        trials: a.trials as usize,
        // The interpreter needs no warm-up, and each of its runs takes seconds.
        warmup: if matches!(opened.target, Target::Cpu) {
            0
        } else {
            2
        },
        iters: a.iters as usize,
    };
    let tuned = search(
        &g,
        precision(a.source.dtype),
        opened.device.as_mut(),
        &inputs,
        &opts,
        &mut |line| eprintln!("weft: {line}"),
    )
    .map_err(|e| on_device(format!("tuning on {}", opened.target), e))?;
    save(&tuned, &path, &opened.target, &device, a.source.dtype)?;
    report(&tuned, a, &opened.target, &device)?;
    outln!(
        "saved {} records to {}",
        tuned.anchors.len(),
        path.display()
    )?;
    Ok(())
}

fn save(
    tuned: &Tuned,
    path: &Path,
    target: &Target,
    device: &str,
    dtype: ModelDType,
) -> Result<(), CliError> {
    let seconds = tuned.elapsed.as_secs_f64() / tuned.anchors.len().max(1) as f64;
    for a in &tuned.anchors {
        let record = Record {
            op: OP.into(),
            schedule: a.key.template.name().into(),
            shape: a.key.to_string(),
            dtype: dtype_name(dtype).into(),
            target: target.to_string(),
            device: device.to_string(),
            weft_version: weft_tune::VERSION.into(),
            config: a.best.to_record(),
            time_us: a.best_time.as_secs_f64() * 1e6,
            reference_us: None,
            space: a.candidates,
            timed: a.timed,
            tuning_seconds: seconds,
            unix_time: weft_tune::unix_now(),
        };
        let stored = Records::store(path, record)?;
        if let Some((aside, why)) = stored.set_aside {
            eprintln!(
                "weft: warning: {} was not records ({why}); kept as {}",
                path.display(),
                aside.display()
            );
        }
    }
    Ok(())
}

fn report(tuned: &Tuned, a: &ModelTuneArgs, target: &Target, device: &str) -> Result<(), CliError> {
    outln!(
        "tuned {} on {target} ({device}), {}: {} anchors, {} rounds ({} discarded) in {:.0} s",
        a.source.model,
        dtype_name(a.source.dtype),
        tuned.anchors.len(),
        tuned.rounds,
        tuned.discarded.len(),
        tuned.elapsed.as_secs_f64()
    )?;
    for (round, why) in &tuned.discarded {
        outln!("  round {round} discarded: {why}")?;
    }
    let mut t = Table::new(&["anchor", "kernels", "rule", "tuned", "speed-up", "choice"])
        .align_right(&[1, 2, 3, 4]);
    let (mut rule_sum, mut best_sum) = (0.0, 0.0);
    for r in &tuned.anchors {
        let n = r.kernels.len() as f64;
        rule_sum += r.rule_time.as_secs_f64() * n;
        best_sum += r.best_time.as_secs_f64() * n;
        t.row(vec![
            format!("{} {}", r.key.template.name(), r.key),
            r.kernels.len().to_string(),
            fmt_time(r.rule_time),
            fmt_time(r.best_time),
            format!(
                "{:.2}x",
                r.rule_time.as_secs_f64() / r.best_time.as_secs_f64().max(1e-12)
            ),
            r.best.to_record(),
        ]);
    }
    crate::out::out!("{}", t.render())?;
    outln!(
        "anchors' kernel time: rule {} → tuned {} ({:.2}x)",
        fmt_time(std::time::Duration::from_secs_f64(rule_sum)),
        fmt_time(std::time::Duration::from_secs_f64(best_sum)),
        rule_sum / best_sum.max(1e-12)
    )?;
    Ok(())
}

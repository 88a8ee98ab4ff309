//! `weft report`: the command; what it writes is the `report` room's.

use crate::args::ReportArgs;
use crate::commands::bench::{collect, write_json};
use crate::error::CliError;
use crate::out::outln;
use crate::report::{ReportData, include, include_existing, merge_offline, supersede};
use crate::report::{beside, corpus, generation, models, offline, page, stale, sweeps};

/// Runs what `a` asks for and writes the page, the charts and `report.json`, adding to
/// the `report.json` already in `--out`. Fails (exit 1) when a row of this run is wrong or
/// failed, after writing everything.
pub fn report(a: &ReportArgs) -> Result<(), CliError> {
    // Checked first, whatever runs: with `--no-run --no-compile` nothing else would read
    // `--ops`, and a misspelt op would be ignored without a word.
    let ops = crate::select::ops(&a.bench.ops)?;
    // So are the places the results go: the benchmark and the compiles take minutes.
    crate::paths::output_dir("--out", &a.out)?;
    if let (Some(path), false) = (&a.bench.json, a.no_run) {
        crate::paths::output_file("--json", path)?;
    }
    let mut data = ReportData {
        format: crate::report::FORMAT,
        weft_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: crate::COMMIT.to_string(),
        unix_time: weft_tune::unix_now(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        runs: Vec::new(),
        offline: Vec::new(),
        models: Vec::new(),
        sweeps: Vec::new(),
        op_baselines: Vec::new(),
        corpus: Vec::new(),
        generation: Vec::new(),
    };
    // Read before anything runs: an unreadable report stops the command here, untouched.
    let json = a.out.join("report.json");
    let earlier = include_existing(&mut data, &json)?;
    if earlier > 0 {
        eprintln!(
            "weft: adding to {} ({earlier} earlier runs; rows measured again on the same \
             device replace theirs)",
            json.display()
        );
    }
    for path in &a.from {
        include(&mut data, path)?;
    }
    // Read before anything runs too: a file that cannot be read stops the command here.
    for path in &a.corpus {
        corpus::merge(&mut data.corpus, vec![corpus::read(path)?]);
    }
    for path in &a.generation {
        generation::merge(&mut data.generation, vec![generation::read(path)?]);
    }
    let mut verdict = Ok(());
    if !a.no_run {
        let run = collect(&a.bench)?;
        if let Some(path) = &a.bench.json {
            write_json(&run, path)?;
        }
        verdict = run.verdict();
        data.runs.push(run);
    }
    if !a.models.is_empty() {
        let rows = models::measure(
            &a.models,
            &a.model_targets,
            &a.model_dtypes,
            a.model_resolution,
            &a.model_seq,
            a.model_records.as_deref(),
            a.model_iters as usize,
        )?;
        // The baselines ran on the GPU weft's CUDA rows ran on.
        let device = rows
            .iter()
            .find(|r| r.target == "cuda")
            .map_or("cuda".to_string(), |r| r.device.clone());
        models::merge(&mut data.models, rows);
        if let Some(path) = &a.baselines {
            models::merge(&mut data.models, models::baselines(path, &device)?);
        }
    } else if let Some(path) = &a.baselines {
        models::merge(&mut data.models, models::baselines(path, "cuda")?);
    }
    if let Some(path) = &a.baselines {
        // Measured on the GPU of this call's CUDA rows (the latest run's).
        let device = data
            .runs
            .iter()
            .rev()
            .flat_map(|r| r.rows.iter())
            .find(|r| r.target == "cuda")
            .map_or("cuda".to_string(), |r| r.device.clone());
        beside::merge(&mut data.op_baselines, beside::read(path, &device)?);
    }
    for path in &a.sweeps {
        sweeps::merge(&mut data.sweeps, sweeps::read(path)?);
    }
    if !a.no_compile {
        eprintln!("weft: compiling every op x schedule offline (AMD through hipcc, MSL check)");
        merge_offline(&mut data.offline, offline::compile_all(&ops)?);
    }
    if data.runs.is_empty()
        && data.offline.is_empty()
        && data.models.is_empty()
        && data.sweeps.is_empty()
        && data.op_baselines.is_empty()
        && data.corpus.is_empty()
        && data.generation.is_empty()
    {
        return Err(CliError::EmptyReport);
    }
    supersede(&mut data.runs);
    let written = page::write(&data, &a.out)?;
    let removed = stale::remove(&a.out, &written, &data)?;
    let text = serde_json::to_string_pretty(&data)?;
    weft_tune::write_whole(&json, (text + "\n").as_bytes()).map_err(|source| CliError::Io {
        path: json.clone(),
        source,
    })?;
    outln!("wrote {}", json.display())?;
    for path in written {
        outln!("wrote {}", path.display())?;
    }
    for path in removed {
        outln!(
            "removed {} (a chart this page no longer draws)",
            path.display()
        )?;
    }
    verdict
}

//! `weft model`: whole models compiled, run, checked and timed.

use ndarray::ArrayD;
use weft_graph::Graph;
use weft_ir::dtype::DType;
use weft_model::CompiledModel;
use weft_model::measure::{Measure, OutputCheck, Reference, measure};
use weft_runtime::{SourceLanguage, Target, WgpuOptions};

use super::model_size::sized_for;
use crate::error::CliError;
use crate::format::Table;
use crate::format::fmt_time;
use crate::model_args::{
    ModelBenchArgs, ModelCommand, ModelDType, ModelExportArgs, ModelGraphArgs, ModelRunArgs,
};
use crate::model_compile::{
    bench_one, choices, compile, load, measure_failed, naming_sizes, options, random_inputs, warmup,
};
use crate::models;
use crate::out::{out, outln};
use crate::select;
use weft_graph::partition::GroupKind;

/// The largest model the float64 reference evaluates by default, in multiply-adds (a
/// ResNet-50 at 224² is 4.1 G: a few seconds).
const CHECK_MACS: f64 = 2e10;

/// Runs a `weft model` subcommand.
pub fn model(command: &ModelCommand) -> Result<(), CliError> {
    match command {
        ModelCommand::Run(a) => run(a),
        ModelCommand::Graph(a) => graph(a),
        ModelCommand::Bench(a) => bench(a),
        ModelCommand::Tune(a) => super::model_tune::tune(a),
        ModelCommand::Export(a) => export(a),
        ModelCommand::Check(a) => super::model_check::check(a),
        ModelCommand::Generate(a) => super::model_generate::generate(a),
    }
}

/// Bytes of the weights as the device stores them.
fn weight_bytes(g: &Graph) -> usize {
    g.tensors
        .iter()
        .filter(|t| t.is_constant())
        .map(|t| t.numel() * t.dtype.bytes())
        .sum()
}

/// `f32`, or `f16 (f32 accumulation)`.
fn dtype_text(dtype: ModelDType) -> &'static str {
    match dtype {
        ModelDType::F32 => "f32",
        ModelDType::F16 => "f16 storage, NHWC, f32 accumulation",
    }
}

fn graph(a: &ModelGraphArgs) -> Result<(), CliError> {
    let target = Target::parse(&a.target)?;
    if let Some(dir) = &a.emit {
        crate::paths::output_dir("--emit", dir)?;
    }
    let g = load(&a.source)?;
    let model = compile(&g, &target.limits(), &a.source)?;
    outln!(
        "graph {}: {} nodes, {} parameters; after the passes {} nodes in {} kernels",
        g.name,
        g.nodes.len(),
        g.parameter_count(),
        model.graph.nodes.len(),
        model.kernel_count()
    )?;
    for (i, s) in g.symbols.iter().enumerate() {
        outln!(
            "  symbol {s}: {}",
            super::model_symbolic::symbol_work(&model, i, s.max)
        )?;
    }
    for r in &model.passes {
        outln!("  pass {r}")?;
    }
    for h in &model.horizontal {
        outln!("  kernel {h}")?;
    }
    if a.nodes {
        outln!("{}", model.graph)?;
    }
    out!("{}", model.show())?;
    if let Some(dir) = &a.emit {
        let n = emit_sources(&model, &target, dir)?;
        outln!("wrote {n} sources to {}", dir.display())?;
    }
    Ok(())
}

/// Writes each group's kernels as one source the target compiles (the lowered IR for
/// `cpu`) into `dir`, `NNN-NAME.EXT` in run order, each written whole; returns how many.
fn emit_sources(
    model: &CompiledModel,
    target: &Target,
    dir: &std::path::Path,
) -> Result<usize, CliError> {
    let io = |path: &std::path::Path, source: std::io::Error| CliError::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let ext = match target.emit_language() {
        None => "ir",
        Some(SourceLanguage::Cuda) => "cu",
        Some(SourceLanguage::Hip) => "hip",
        Some(SourceLanguage::Wgsl) => "wgsl",
        Some(SourceLanguage::Msl) => "metal",
    };
    let mut written = 0;
    for (i, group) in model.groups.iter().enumerate() {
        // A group whose kernel runs inside another's (horizontal fusion) has no source
        // of its own: it is in that group's.
        if matches!(
            group.horizontal,
            weft_model::horizontal::Horizontal::CarriedBy(_)
        ) {
            continue;
        }
        written += 1;
        let mut text = match target.emit_language() {
            None => group.kernels.to_string(),
            Some(_) => target.emit_function(&group.kernels)?.source,
        };
        let comment = if target.emit_language().is_some() {
            "//"
        } else {
            "#"
        };
        let header = format!("{comment} {}: {}\n", group.func.name, group.schedule);
        text.insert_str(0, &header);
        let name = format!("{i:03}-{}.{ext}", models::clean_name(&group.func.name));
        let path = dir.join(&name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
    }
    Ok(written)
}

/// How the partition cut the model: its groups by kind, and the joins that cost no copy
/// (`weft model graph` prints each group).
fn partition_summary(model: &CompiledModel) -> String {
    let count = |kind: GroupKind| {
        model
            .partition
            .groups
            .iter()
            .filter(|g| g.kind == kind)
            .count()
    };
    let mut text = format!(
        "{} anchors (convolutions, products, attention on templates), {} reductions, {} injective groups",
        count(GroupKind::Anchor),
        count(GroupKind::Reduction),
        count(GroupKind::Injective)
    );
    if !model.partition.views.is_empty() {
        text.push_str(&format!(
            "; {} concats that copy nothing",
            model.partition.views.len()
        ));
    }
    if !model.partition.copies.is_empty() {
        text.push_str(&format!(", {} that copy", model.partition.copies.len()));
    }
    text.push_str(" (`weft model graph` shows each)");
    text
}

fn run(a: &ModelRunArgs) -> Result<(), CliError> {
    // Before any work: a run of minutes must not end in "cannot write".
    if let Some(dir) = &a.save {
        crate::paths::output_dir("--save", dir)?;
    }
    let chosen = a.target.is_none();
    let mut opened = match &a.target {
        Some(t) => select::open_str(t, WgpuOptions::default())?,
        None => select::best(WgpuOptions::default())?,
    };
    let (source, sized) = sized_for(&a.source, &opened);
    let a = &ModelRunArgs {
        source,
        ..a.clone()
    };
    let g = load(&a.source)?;
    if !a.dim_value.is_empty() {
        return super::model_symbolic::run_lengths(a, &g, &mut opened);
    }
    let choices = choices(
        a.records.as_deref(),
        &opened.target,
        &opened.device.name(),
        a.source.dtype,
    )?;
    let inputs: Vec<ArrayD<f32>> = match &a.inputs {
        Some(dir) => models::read_inputs(dir, &g)?,
        None => random_inputs(&g, a.seed),
    };
    let work = g.macs();
    let checked = !a.no_check && work <= CHECK_MACS;
    let m = Measure {
        inputs: Some(&inputs),
        reference: if checked {
            Reference::Float64
        } else {
            Reference::None
        },
        warmup: warmup(&opened.target),
        iters: a.iters as usize,
        whole: true,
        each: false,
    };
    let dev = opened.device.as_mut();
    let measured = measure(&g, dev, &options(&a.source, choices), &m)
        .map_err(|e| measure_failed(&opened.target, e))
        .map_err(naming_sizes(&a.source))?;
    let (model, outputs) = (&measured.model, &measured.outputs);
    let timing = measured.whole.as_ref().ok_or(CliError::NotTimed)?;
    let compile_time = measured.compile;

    outln!("model     {} ({})", a.source.model, g.name)?;
    let shapes: Vec<String> = g
        .inputs
        .iter()
        .map(|&t| format!("{} {:?}", g.tensor(t).name, g.tensor(t).shape))
        .collect();
    outln!(
        "input     {}, f32 in and out; runs in {}",
        shapes.join(", "),
        dtype_text(a.source.dtype)
    )?;
    if let Some(line) = &sized {
        outln!("size      {line}")?;
    }
    let how = if chosen {
        ": the best this machine has (--target to pick)"
    } else {
        ""
    };
    outln!("target    {} ({}){how}", opened.target, dev.name())?;
    outln!(
        "compiled  {} nodes → {} kernels in {:.2} s (passes, partition, lowering, device compile)",
        g.nodes.len(),
        model.kernel_count(),
        compile_time.as_secs_f64()
    )?;
    outln!("partition {}", partition_summary(model))?;
    outln!(
        "memory    peak {:.1} MiB on the device: weights {:.1} MiB, intermediates {:.1} MiB in {} reused buffers ({:.1} MiB without reuse)",
        mib(model.plan.peak_bytes(&model.graph)),
        mib(weight_bytes(&model.graph)),
        mib(model.plan.slot_bytes()),
        model.plan.slots.len(),
        mib(model.plan.unplanned_bytes)
    )?;
    if let Some(barriers) = &measured.barriers {
        let waits = barriers.iter().filter(|&&w| w).count();
        outln!(
            "barriers  {waits} of {} kernels wait behind a barrier for every kernel before them, {} run beside the ones before (the runtime orders them by the buffers they bind; WEFT_REUSE sets how the plan reuses buffers)",
            barriers.len(),
            barriers.len() - waits
        )?;
    }
    outln!(
        "median    {} kernel time of the whole model (min {}, {} samples)",
        fmt_time(timing.median),
        fmt_time(timing.min),
        timing.all.len()
    )?;
    if let Some(host) = timing.host {
        outln!(
            "host      {} per run launched and waited for",
            fmt_time(host)
        )?;
    }
    let mut wrong = None;
    for c in &measured.replayed {
        outln!(
            "replayed  {:.2e} = max |timed − checked| / max |checked| of `{}`: the last timed run against the checked one (tolerance {:.0e}): {}",
            c.error,
            c.name,
            c.tolerance,
            verdict(c)
        )?;
        if !c.ok() {
            wrong = Some(format!(
                "output `{}` of the timed runs differs from the checked run's by {:.2e}",
                c.name, c.error
            ));
        }
    }
    if a.no_check {
        outln!("check     skipped (--no-check)")?;
    } else if !checked {
        outln!(
            "check     skipped: {:.1} G multiply-adds is too many for the float64 reference here",
            work / 1e9
        )?;
    }
    for c in &measured.checked {
        outln!(
            "error     {:.2e} = max |weft − ref| / max |ref| of `{}` against the float64 reference (tolerance {:.0e}): {}",
            c.error,
            c.name,
            c.tolerance,
            verdict(c)
        )?;
        if !c.ok() {
            wrong = Some(format!(
                "output `{}`: error {:.2e} above {:.0e}",
                c.name, c.error, c.tolerance
            ));
        }
    }
    if let Some(dir) = &a.save {
        // Each tensor in its own element type (token ids as int64, masks as bool).
        let mut named: Vec<(&str, DType, &ArrayD<f32>)> = Vec::new();
        for (&t, x) in g.inputs.iter().zip(&inputs) {
            named.push((g.tensor(t).name.as_str(), g.tensor(t).dtype, x));
        }
        for (&t, y) in g.outputs.iter().zip(outputs) {
            named.push((g.tensor(t).name.as_str(), g.tensor(t).dtype, y));
        }
        let paths = models::write_tensors(dir, &named)?;
        outln!("saved     {} files in {}", paths.len(), dir.display())?;
        // Names a file cannot hold as they are (`a:b`, or two that clean to one name).
        for ((name, _, _), path) in named.iter().zip(&paths) {
            let file = path.file_name().unwrap_or_default().to_string_lossy();
            if format!("{name}.npy") != file {
                outln!("          `{name}` → {file}")?;
            }
        }
    }
    match wrong {
        Some(detail) => Err(CliError::Wrong {
            what: a.source.model.clone(),
            error: f64::INFINITY,
            detail,
        }),
        None => Ok(()),
    }
}

fn bench(a: &ModelBenchArgs) -> Result<(), CliError> {
    let g = load(&a.source)?;
    let iters = a.iters as usize;
    let mut rows = Table::new(&[
        "target", "device", "kernels", "compile", "median", "min", "host",
    ])
    .align_right(&[2, 3, 4, 5, 6]);
    let mut tables = Vec::new();
    for text in a
        .targets
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let m = bench_one(
            &g,
            &a.source,
            text,
            a.records.as_deref(),
            iters,
            !a.no_kernels,
        )?;
        let (model, whole, each) = (&m.model, &m.whole, &m.each);
        rows.row(vec![
            m.target.to_string(),
            m.device.clone(),
            model.kernel_count().to_string(),
            format!("{:.2} s", m.compile.as_secs_f64()),
            fmt_time(whole.median),
            fmt_time(whole.min),
            whole.host.map(fmt_time).unwrap_or_default(),
        ]);
        if !each.is_empty() {
            tables.push((
                m.target.to_string(),
                crate::kernel_table::kernel_table(model, each, m.barriers.as_deref()),
            ));
        }
    }
    outln!(
        "model {} ({}): {} nodes, input {:?}, {}",
        a.source.model,
        g.name,
        g.nodes.len(),
        g.inputs
            .first()
            .map(|&t| g.tensor(t).shape.clone())
            .unwrap_or_default(),
        dtype_text(a.source.dtype)
    )?;
    out!("{}", rows.render())?;
    for (target, table) in tables {
        outln!("\nper kernel on {target} (each timed alone; shares of their sum):")?;
        out!("{table}")?;
    }
    Ok(())
}

fn export(a: &ModelExportArgs) -> Result<(), CliError> {
    if !a.source.disable_pass.is_empty() {
        return Err(CliError::Usage(
            "`weft model export` writes the model as built, before any graph pass: \
             --disable-pass has nothing to leave out"
                .to_string(),
        ));
    }
    crate::paths::output_file("export PATH", &a.out)?;
    let g = load(&a.source)?;
    weft_onnx::save(&g, &a.out).map_err(|source| CliError::Export {
        path: a.out.clone(),
        source,
    })?;
    outln!(
        "wrote {} ({} nodes, {} parameters, opset {})",
        a.out.display(),
        g.nodes.len(),
        g.parameter_count(),
        weft_onnx::EXPORT_OPSET
    )
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `ok` or `WRONG`.
fn verdict(c: &OutputCheck) -> &'static str {
    if c.ok() { "ok" } else { "WRONG" }
}

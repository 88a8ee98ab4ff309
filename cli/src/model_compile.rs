//! Models compiled, loaded and timed for the commands that need them (`weft model run`,
//! `bench`, `tune`, and `weft report --models`), and the tuning records they compile
//! with. A model anchor's record is an ordinary tuning record: op `model-anchor`,
//! schedule the template (`matmul`, `matmul_f16`), shape the anchor's key
//! (`m=49,n=512,k=4608 conv x=1x512x7x7 ...`), config the template's config with
//! `splits=N` appended.

use std::path::Path;

use ndarray::ArrayD;
use weft_graph::Graph;
use weft_graph::passes::Precision;
use weft_model::measure::{Measure, MeasureError, Reference, Step, measure};
use weft_model::tune::{AnchorChoice, AnchorKey, AnchorTemplate, Choices};
use weft_model::{CompileOptions, CompiledModel, ModelError};
use weft_runtime::{Target, WgpuOptions};
use weft_tune::Records;

use crate::error::CliError;
use crate::model_args::{ModelDType, ModelSource};
use crate::models::{self, Instance};
use crate::select;

pub(crate) fn load(source: &ModelSource) -> Result<Graph, CliError> {
    Ok(models::load(&source.model, instance(source), &source.dim)?)
}

/// The batch, resolution and sequence length `source` asks for.
fn instance(source: &ModelSource) -> Instance {
    Instance {
        batch: source.batch as usize,
        resolution: source.resolution.map(|r| r as usize),
        seq: source.seq.map(|s| s as usize),
        llama: source.llama,
    }
}

/// A model too large for the device's memory, with the size options `source` gave
/// (`--batch`, `--resolution`, `--seq`) that made it so; other errors as they are.
pub(crate) fn naming_sizes(source: &ModelSource) -> impl Fn(CliError) -> CliError + '_ {
    move |e| match e {
        CliError::Model { context, source: s }
            if matches!(*s, ModelError::TooLargeForDevice { .. }) =>
        {
            let by = instance(source).sized_by();
            CliError::Model {
                context: Some(format!("{}{by}", context.unwrap_or_default())),
                source: s,
            }
        }
        other => other,
    }
}

/// What `--dtype` stores tensors in: f16 activations and filters, channels last, with
/// f32 accumulation; the model's inputs and outputs stay f32.
pub(crate) fn precision(dtype: ModelDType) -> Precision {
    match dtype {
        ModelDType::F32 => Precision::F32,
        ModelDType::F16 => Precision::F16,
    }
}

/// How `source` asks a model to be compiled: its dtype, without the passes it disables,
/// the anchors `choices` holds taking its configs.
pub(crate) fn options(source: &ModelSource, choices: Choices) -> CompileOptions {
    CompileOptions {
        precision: precision(source.dtype),
        choices,
        disabled: source.disable_pass.clone(),
        row_bound: None,
        skinny_prologue: false,
        gemv_kmajor: false,
        weight_prefetch: Default::default(),
        gated_store: false,
        l2_ahead: 0,
        l2_beside: 0,
    }
}

/// `g` compiled for `limits` as `source` asks.
pub(crate) fn compile(
    g: &Graph,
    limits: &weft_codegen_common::TargetLimits,
    source: &ModelSource,
) -> Result<CompiledModel, CliError> {
    CompiledModel::compile(g, limits, &options(source, Choices::none())).map_err(CliError::model)
}

/// Untimed runs before a timing on `target`: the interpreter needs no warm-up, and each
/// of its runs takes seconds.
pub(crate) fn warmup(target: &Target) -> usize {
    if matches!(target, Target::Cpu) { 0 } else { 3 }
}

/// A measurement's failure as the CLI reports it: a failure on the device while loading
/// or timing is the device's error (through [`on_device`]); a compile, a run or a
/// reference that fails is the model's.
pub(crate) fn measure_failed(target: &Target, e: MeasureError) -> CliError {
    match e.step {
        Step::Load => on_device(format!("loading onto {target}"), e.source),
        Step::Time | Step::Replay => on_device(e.step.to_string(), e.source),
        Step::Compile | Step::Run | Step::Reference => CliError::model(e.source),
    }
}

/// One random input per graph input, from `seed` (see [`weft_graph::inputs`]).
pub(crate) fn random_inputs(g: &Graph, seed: u64) -> Vec<ArrayD<f32>> {
    weft_graph::inputs::random_inputs(g, seed)
}

/// One model measured on one target.
pub(crate) struct Benched {
    pub(crate) target: Target,
    pub(crate) device: String,
    pub(crate) model: CompiledModel,
    /// Passes, partition, lowering and the device's compile of every kernel.
    pub(crate) compile: std::time::Duration,
    /// The whole launch list, timed as one unit.
    pub(crate) whole: weft_runtime::Timing,
    /// Each group alone (empty unless asked for).
    pub(crate) each: Vec<weft_runtime::Timing>,
    /// Per kernel of a run: whether it waits behind a barrier (wgpu; else `None`).
    pub(crate) barriers: Option<Vec<bool>>,
    /// Anchors (groups on a matmul template) the model has, and how many of them took a
    /// tuning record's config rather than the stated rule's.
    pub(crate) anchors: usize,
    pub(crate) tuned: usize,
}

/// Compiles `g` (from `source`) for the target `text` with the tuning records at
/// `records` (else the default file), loads it and times it: `iters` runs of the whole
/// model, and of each kernel where `kernels` (the measurement path's timing steps; no
/// run, no check).
pub(crate) fn bench_one(
    g: &Graph,
    source: &ModelSource,
    text: &str,
    records: Option<&std::path::Path>,
    iters: usize,
    kernels: bool,
) -> Result<Benched, CliError> {
    let mut opened = select::open_str(text, WgpuOptions::default())?;
    let choices = choices(records, &opened.target, &opened.device.name(), source.dtype)?;
    let options = options(source, choices);
    let m = Measure {
        inputs: None,
        reference: Reference::None,
        warmup: warmup(&opened.target),
        iters,
        whole: true,
        each: kernels,
    };
    let dev = opened.device.as_mut();
    let measured = measure(g, dev, &options, &m)
        .map_err(|e| measure_failed(&opened.target, e))
        .map_err(naming_sizes(source))?;
    let whole = measured.whole.ok_or(CliError::NotTimed)?;
    let anchors: Vec<_> = measured
        .model
        .groups
        .iter()
        .filter_map(|g| g.anchor.as_ref())
        .collect();
    let tuned = anchors
        .iter()
        .filter(|k| options.choices.get(k).is_some())
        .count();
    Ok(Benched {
        anchors: anchors.len(),
        tuned,
        target: opened.target.clone(),
        device: dev.name(),
        compile: measured.compile,
        whole,
        each: measured.each,
        barriers: measured.barriers,
        model: measured.model,
    })
}

/// A failure on the device is the device's error (exit 1, or 2 where the target refuses
/// a kernel); anything else about the model is bad input (exit 2).
pub(crate) fn on_device(context: String, e: ModelError) -> CliError {
    match e {
        ModelError::Device { kernel, source } => {
            CliError::device(format!("{context}: kernel `{kernel}`"), source)
        }
        ModelError::Run(source) => CliError::device(context, source),
        other => CliError::Model {
            context: Some(context),
            source: Box::new(other),
        },
    }
}

/// The op name of model-anchor records.
pub(crate) const OP: &str = "model-anchor";

pub(crate) fn dtype_name(dtype: ModelDType) -> &'static str {
    match dtype {
        ModelDType::F32 => "float32",
        ModelDType::F16 => "float16",
    }
}

/// The choices the records at `path` (else the default file) hold for models compiled
/// for `target` on `device` in `dtype`, by this weft version. A missing file holds none;
/// an unreadable one is warned about once and holds none.
pub(crate) fn choices(
    path: Option<&Path>,
    target: &Target,
    device: &str,
    dtype: ModelDType,
) -> Result<Choices, CliError> {
    let mut choices = Choices::none();
    let Some(path) = path.map(Path::to_path_buf).or_else(Records::default_path) else {
        return Ok(choices);
    };
    let (records, problem) = Records::load_or_empty(&path);
    if let Some(e) = problem {
        eprintln!("weft: warning: {e}: every anchor takes the stated rule's config");
    }
    let target = target.to_string();
    // Oldest first: a newer record for the same anchor replaces an older one.
    for r in records.all() {
        if r.op != OP
            || r.target != target
            || r.device != device
            || r.dtype != dtype_name(dtype)
            || r.weft_version != weft_tune::VERSION
        {
            continue;
        }
        // A record weft cannot read back (edited by hand, made by another version) is
        // not followed: its anchor takes the rule's config.
        let key = AnchorTemplate::from_name(&r.schedule)
            .ok_or_else(|| format!("schedule `{}` is no anchor template", r.schedule))
            .and_then(|t| AnchorKey::parse(t, &r.shape));
        match key.and_then(|k| Ok((k, AnchorChoice::from_record(&r.config)?))) {
            Ok((key, c)) => choices.insert(
                &key,
                c,
                format!("tuning record of {}: {:.1} µs", r.date(), r.time_us),
            ),
            Err(e) => eprintln!(
                "weft: warning: a record in {} for `{}` with config `{}` ({e}): ignored",
                path.display(),
                r.shape,
                r.config
            ),
        }
    }
    Ok(choices)
}

//! Turning names on the command line into ops, shapes, targets and open devices.

use std::path::PathBuf;

use weft_codegen_common::TargetLimits;
use weft_kernels::Config;
use weft_ops::{OPS, OpSpec, Shape, Workload};
use weft_runtime::wgpu_device::WgpuDevice;
use weft_runtime::{Device, DeviceError, Target, WgpuOptions, available_targets};
use weft_tune::{Choice, ChoiceSource, Records};

use crate::args::SizeClass;
use crate::error::CliError;

/// A device opened for a target, with the shapes that suit it by default.
pub struct Opened {
    pub target: Target,
    pub device: Box<dyn Device>,
    /// `Small` for the interpreter and CPU adapters (llvmpipe), `Bench` for GPUs.
    pub size: SizeClass,
}

/// Opens `target`. An absent backend is [`CliError::Unavailable`], listing the targets
/// this machine has.
pub fn open(target: &Target, options: WgpuOptions) -> Result<Opened, CliError> {
    let failed = |e: DeviceError| open_error(target, e);
    let (device, size): (Box<dyn Device>, SizeClass) = match target {
        Target::Cpu => (
            weft_runtime::open(target).map_err(failed)?,
            SizeClass::Small,
        ),
        Target::Wgpu { .. } => {
            let device = WgpuDevice::open(target, options).map_err(failed)?;
            let size = if device.adapter_info().device_type == wgpu::DeviceType::Cpu {
                SizeClass::Small
            } else {
                SizeClass::Bench
            };
            (Box::new(device), size)
        }
        // `rocm` has no runtime: opening it is the error that points at `weft compile`.
        Target::Cuda { .. } | Target::Rocm { .. } => (
            weft_runtime::open_with(target, options).map_err(failed)?,
            SizeClass::Bench,
        ),
    };
    Ok(Opened {
        target: target.clone(),
        device,
        size,
    })
}

/// Parses and opens a target string.
pub fn open_str(text: &str, options: WgpuOptions) -> Result<Opened, CliError> {
    open(&Target::parse(text)?, options)
}

fn open_error(target: &Target, e: DeviceError) -> CliError {
    if e.is_unavailable() {
        CliError::Unavailable {
            target: target.to_string(),
            reason: e.to_string(),
            available: available_list(),
        }
    } else {
        CliError::device(format!("opening target `{target}`"), e)
    }
}

/// The targets this machine can run, comma-separated.
pub fn available_list() -> String {
    available_targets()
        .iter()
        .filter(|i| i.is_available())
        .map(|i| i.target.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every GPU target (cuda, then vulkan / metal / dx12 on a GPU adapter); else the best
/// wgpu adapter (a CPU driver such as llvmpipe); else the interpreter. A target that is
/// listed as available but fails to open is skipped with a warning.
pub fn default_targets(options: WgpuOptions) -> Vec<Opened> {
    let infos = available_targets();
    let available = |name: &str| {
        infos
            .iter()
            .any(|i| i.target.name() == name && i.is_available())
    };
    let mut picked = Vec::new();
    let open = |name: &str, gpu_only: bool, picked: &mut Vec<Opened>| match open_str(name, options)
    {
        Ok(o) if !gpu_only || o.size == SizeClass::Bench => picked.push(o),
        Ok(_) => {}
        Err(e) => eprintln!("weft: skipping target `{name}`: {e}"),
    };
    if available("cuda") {
        open("cuda", false, &mut picked);
    }
    for name in ["vulkan", "metal", "dx12"] {
        if available(name) {
            open(name, true, &mut picked);
        }
    }
    if picked.is_empty() && available("wgpu") {
        open("wgpu", false, &mut picked);
    }
    if picked.is_empty() {
        open("cpu", false, &mut picked);
    }
    picked
}

/// The best target this machine has, opened: the first of [`default_targets`] (cuda, a
/// GPU adapter, a CPU driver, the interpreter).
pub fn best(options: WgpuOptions) -> Result<Opened, CliError> {
    match default_targets(options).into_iter().next() {
        Some(opened) => Ok(opened),
        None => open_str("cpu", options),
    }
}

/// The op's shapes of a size class.
pub fn shapes(op: &OpSpec, size: SizeClass) -> Result<Vec<Shape>, CliError> {
    let values = match size {
        SizeClass::Small => op.small,
        SizeClass::Bench => op.bench,
    };
    if values.is_empty() {
        return Ok(vec![Shape::defaults(op)]);
    }
    Ok(values
        .iter()
        .map(|v| Shape::from_values(op, v))
        .collect::<Result<_, _>>()?)
}

/// The shape `--shape` names for one op, or (without it) the first of `size`'s shapes
/// (`Small`) or the op's defaults (`Bench`: the seed's size).
pub fn shape(op: &OpSpec, text: Option<&str>, size: SizeClass) -> Result<Shape, CliError> {
    match (text, size) {
        (Some(text), _) => Ok(Shape::parse(op.name, text)?),
        (None, SizeClass::Bench) => Ok(Shape::defaults(op)),
        (None, SizeClass::Small) => Ok(shapes(op, size)?
            .into_iter()
            .next()
            .unwrap_or_else(|| Shape::defaults(op))),
    }
}

/// `--shape` for many ops at once: each op takes the parameters it has. A parameter that
/// no op in `ops` has is an error.
pub fn shape_for_each(ops: &[&OpSpec], text: &str) -> Result<Vec<Shape>, CliError> {
    let parts: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    for part in &parts {
        let key = part.split_once('=').map_or(*part, |(k, _)| k.trim());
        if !ops.iter().any(|op| op.dims.iter().any(|(n, _)| *n == key)) {
            return Err(CliError::ShapeParam {
                param: key.to_string(),
                valid: all_params(ops),
            });
        }
    }
    ops.iter()
        .map(|op| {
            let own: Vec<&str> = parts
                .iter()
                .copied()
                .filter(|p| {
                    let key = p.split_once('=').map_or(*p, |(k, _)| k.trim());
                    op.dims.iter().any(|(n, _)| *n == key)
                })
                .collect();
            Ok(Shape::parse(op.name, &own.join(","))?)
        })
        .collect()
}

fn all_params(ops: &[&OpSpec]) -> String {
    ops.iter()
        .map(|op| {
            let names: Vec<&str> = op.dims.iter().map(|(n, _)| *n).collect();
            format!("{} ({})", op.name, names.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The ops `names` list (all of them when empty), in the order given.
pub fn ops(names: &[String]) -> Result<Vec<&'static OpSpec>, CliError> {
    if names.is_empty() {
        return Ok(OPS.to_vec());
    }
    Ok(names
        .iter()
        .map(|n| weft_ops::find(n.trim()))
        .collect::<Result<_, _>>()?)
}

/// The op `name` at a shape, with its schedule name checked (the op's best by default).
pub fn workload(
    op: &str,
    schedule: Option<&str>,
    shape: &Shape,
) -> Result<(Workload, &'static str), CliError> {
    let w = Workload::new(op, shape)?;
    let schedule = match schedule {
        None => w.op.best,
        Some(s) => w.op.schedules.iter().copied().find(|x| *x == s).ok_or(
            weft_ops::OpError::UnknownSchedule {
                op: w.op.name.to_string(),
                schedule: s.to_string(),
                list: w.op.schedules.join(", "),
            },
        )?,
    };
    Ok((w, schedule))
}

/// The tuning records at `path`, else at the default place; `None` when there is no
/// default place (no `WEFT_RECORDS`, `XDG_CACHE_HOME` or `HOME`). A file that cannot be
/// read or is not records (torn, hand edited) is warned about once and counts as empty:
/// records only pick configs, so every run still works with the templates' defaults.
pub fn records(path: Option<&std::path::Path>) -> Result<Option<Records>, CliError> {
    let Some(path) = path.map(PathBuf::from).or_else(Records::default_path) else {
        return Ok(None);
    };
    let (records, problem) = Records::load_or_empty(&path);
    if let Some(e) = problem {
        let next = match e {
            weft_tune::RecordError::Format { .. } => format!(
                "; the next `weft tune` keeps this file as {}.corrupt-<unix time> and starts a \
                 new one",
                path.display()
            ),
            _ => String::new(),
        };
        eprintln!(
            "weft: warning: {e}; going on without them (template schedules use their default \
             configs{next})"
        );
    }
    Ok(Some(records))
}

/// The config `schedule` of `w` runs with on `target` with `limits` (`device`: the
/// device's name, for records): `given` (`--config`: its parameters override the
/// template's default) when there is one, else a matching record, else the default. `None` for a schedule that is not a template (and
/// then `given` is an error).
pub fn config(
    w: &Workload,
    schedule: &str,
    target: &Target,
    device: &str,
    limits: &TargetLimits,
    given: Option<&str>,
    records: Option<&Records>,
) -> Result<Option<Choice>, CliError> {
    let Some(spec) = w.template(schedule) else {
        return match given {
            Some(_) => Err(not_a_template(w.op, schedule)),
            None => Ok(None),
        };
    };
    if let Some(text) = given {
        let bad = |reason: String| CliError::Config {
            op: w.op.name.to_string(),
            schedule: schedule.to_string(),
            reason,
        };
        // The given parameters override the template's default for the target, so
        // `--config bk=16` changes one parameter. `ku` is the exception: absent means
        // the whole k step unrolled, so a config copied from `weft tune --list` (which
        // writes `ku` only where it is not) builds as listed.
        let mut config = (spec.default)(limits);
        config.0.retain(|(n, _)| n != "ku");
        for (name, value) in Config::parse(text).map_err(bad)?.0 {
            match config.0.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => config.0.push((name, value)),
            }
        }
        (spec.describe)(&config).map_err(bad)?;
        return Ok(Some(Choice {
            config,
            source: ChoiceSource::Given,
        }));
    }
    Ok(weft_tune::choose(
        w, schedule, target, device, limits, records,
    ))
}

/// The error of `--config` given for `schedule` of `op`, which is not a template: it names
/// the op's template schedule, or, for an op with none, the ops that have one.
fn not_a_template(op: &OpSpec, schedule: &str) -> CliError {
    let takes = match op.template {
        Some(t) => format!(
            "`{0}`'s schedule `{1}` does (`--schedule {1}`; `weft tune --op {0} --list --target \
             T` lists its configs)",
            op.name, t.schedule
        ),
        None => format!(
            "no schedule of `{}` does ({} are not templates); ops with a template: {}",
            op.name,
            op.schedules.join(", "),
            templates()
        ),
    };
    CliError::NotATemplate {
        op: op.name.to_string(),
        schedule: schedule.to_string(),
        takes,
    }
}

/// Every op with a template, with its template's schedule: `matmul (template), ...`.
pub fn templates() -> String {
    OPS.iter()
        .filter_map(|o| o.template.map(|t| format!("{} ({})", o.name, t.schedule)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The config for emitting or printing without a device: `given`, else the template's
/// default for `target`'s offline limits (CUDA's for the IR).
pub fn offline_config(
    w: &Workload,
    schedule: &str,
    target: &Target,
    given: Option<&str>,
) -> Result<Option<Config>, CliError> {
    let limits = target.limits();
    Ok(config(w, schedule, target, "", &limits, given, None)?.map(|c| c.config))
}

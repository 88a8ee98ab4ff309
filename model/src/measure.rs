//! The one path a model is measured by: compile → load → run on poisoned buffers →
//! check → time ([`measure`]). `weft model run`, `weft model bench`, `weft report
//! --models` and the model tuner ([`crate::tune::search`]) all go through it, each
//! asking for the steps it needs ([`Measure`]); so does anything that compiles many
//! models and compares them with another engine's outputs ([`Reference::Outputs`]).
//!
//! One tolerance table ([`tolerance`]) and one error measure ([`relative_error`]) serve
//! every check: weft against the float64 reference or another engine, a timed run
//! against the checked one, a tuning candidate against the rule's compile.

use std::fmt;
use std::time::{Duration, Instant};

use ndarray::ArrayD;
use thiserror::Error;
use weft_graph::Graph;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_runtime::{Device, Timing};

use crate::compiled::{CompileOptions, CompiledModel};
use crate::error::ModelError;

/// The largest [`relative_error`] a model's output may show in `precision`: f32
/// accumulates rounding through every layer (ResNet-50: about 1e-6 measured); fp16
/// rounds every activation to 11 bits.
pub fn tolerance(precision: Precision) -> f64 {
    match precision {
        Precision::F32 | Precision::F32ChannelsLast => 1e-3,
        Precision::F16 => 5e-2,
    }
}

/// `max |got − want| / max |want|` over two outputs of one shape, the maximum of `|want|`
/// over its finite elements. Where `want` holds an infinity or a NaN, `got` must hold the
/// same value there (a NaN for a NaN); elsewhere a NaN or infinity in `got` (a poisoned
/// element no kernel wrote) is wrong. Wrong, or shapes that differ, give infinity: the
/// result is never NaN, and only a real number can be within a tolerance.
pub fn relative_error<A, B>(got: &ArrayD<A>, want: &ArrayD<B>) -> f64
where
    A: Copy + Into<f64>,
    B: Copy + Into<f64>,
{
    if got.shape() != want.shape() {
        return f64::INFINITY;
    }
    let scale = want
        .iter()
        .map(|&w| w.into())
        .filter(|w: &f64| w.is_finite())
        .fold(0.0f64, |m, w| m.max(w.abs()))
        .max(f64::MIN_POSITIVE);
    let mut largest = 0.0f64;
    for (&g, &w) in got.iter().zip(want.iter()) {
        let (g, w): (f64, f64) = (g.into(), w.into());
        let d = if w.is_finite() {
            (g - w).abs()
        } else if g == w || (g.is_nan() && w.is_nan()) {
            0.0
        } else {
            f64::INFINITY
        };
        if !d.is_finite() {
            return f64::INFINITY;
        }
        largest = largest.max(d);
    }
    largest / scale
}

/// One output checked: its error against what it should be, and the tolerance.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputCheck {
    /// The graph output's name.
    pub name: String,
    /// [`relative_error`]: never NaN.
    pub error: f64,
    pub tolerance: f64,
}

impl OutputCheck {
    /// Whether the error is within the tolerance.
    pub fn ok(&self) -> bool {
        self.error <= self.tolerance
    }
}

/// What a measurement checks the run's outputs against.
#[derive(Clone, Copy, Debug)]
pub enum Reference<'a> {
    /// Nothing: the outputs are only kept.
    None,
    /// The float64 reference evaluator ([`weft_graph::reference::evaluate`]) on the
    /// graph as given, on the same inputs.
    Float64,
    /// Outputs given, one per graph output (another engine's, or another compile's).
    Outputs(&'a [ArrayD<f64>]),
}

/// The steps of a measurement beyond compiling and loading.
#[derive(Clone, Copy, Debug)]
pub struct Measure<'a> {
    /// The checked run's inputs, one per graph input; `None`: no run (timing only).
    pub inputs: Option<&'a [ArrayD<f32>]>,
    /// What the checked run's outputs are compared with.
    pub reference: Reference<'a>,
    /// Untimed runs before each timing.
    pub warmup: usize,
    /// Timed runs of each timing.
    pub iters: usize,
    /// Whether the whole launch list is timed as one unit (and, after a run, its last
    /// timed run's outputs compared with the checked run's).
    pub whole: bool,
    /// Whether each group is timed alone.
    pub each: bool,
}

/// What a measurement found.
#[derive(Debug)]
pub struct Measured {
    pub model: CompiledModel,
    /// Passes, partition, lowering, and the device's load and compile of every kernel.
    pub compile: Duration,
    /// The checked run's outputs (none without a run).
    pub outputs: Vec<ArrayD<f32>>,
    /// The whole launch list timed as one unit.
    pub whole: Option<Timing>,
    /// Each group alone, in run order (empty unless asked for).
    pub each: Vec<Timing>,
    /// The last timed run's outputs against the checked run's (where both ran): the timed
    /// runs overlap their kernels (a CUDA graph with programmatic edges, one submission
    /// on Vulkan), the checked run waits for each, and the two must agree.
    pub replayed: Vec<OutputCheck>,
    /// The checked run's outputs against the reference (where one was asked for).
    pub checked: Vec<OutputCheck>,
    /// Per kernel of a run, in run order: whether it waits behind a barrier for every
    /// kernel before it, on a device that orders kernels by the buffers they bind
    /// (`Device::barriers`: wgpu); `None` elsewhere.
    pub barriers: Option<Vec<bool>>,
}

impl Measured {
    /// The first output that is wrong: a replay, then a reference check.
    pub fn wrong(&self) -> Option<&OutputCheck> {
        self.replayed.iter().chain(&self.checked).find(|c| !c.ok())
    }
}

/// The step of a measurement that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Compile,
    Load,
    Run,
    Time,
    /// Reading back the outputs of the timed runs.
    Replay,
    /// Computing the float64 reference.
    Reference,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Compile => "compiling the model",
            Step::Load => "loading the model",
            Step::Run => "running the model",
            Step::Time => "timing the model",
            Step::Replay => "reading the timed runs' outputs",
            Step::Reference => "computing the float64 reference",
        })
    }
}

/// A measurement that failed, and at which step.
#[derive(Debug, Error)]
#[error("{step}: {source}")]
pub struct MeasureError {
    pub step: Step,
    #[source]
    pub source: ModelError,
}

/// Compiles `graph` for `dev` with `options`, loads it, and takes the steps `m` asks
/// for: a run on its inputs (outputs and intermediates poisoned first), the whole model
/// timed and its last timed run's outputs compared with the checked run's, each group
/// timed, and the outputs checked against the reference. Everything loaded is freed
/// before it returns. An output outside its tolerance is not an error: see
/// [`Measured::wrong`].
pub fn measure(
    graph: &Graph,
    dev: &mut dyn Device,
    options: &CompileOptions,
    m: &Measure,
) -> Result<Measured, MeasureError> {
    let at = |step| move |source| MeasureError { step, source };
    let started = Instant::now();
    // An index out of range is an error (ONNX), which the kernels would clamp instead.
    if let Some(inputs) = m.inputs {
        weft_graph::inputs::check_indices(graph, inputs)
            .map_err(|e| at(Step::Run)(ModelError::Graph(e)))?;
    }
    let model = CompiledModel::compile(graph, &dev.limits(), options).map_err(at(Step::Compile))?;
    let exe = model.load(dev).map_err(at(Step::Load))?;
    let compile = started.elapsed();
    let ran = on_device(&exe, dev, m);
    let barriers = dev.barriers(&exe.launches()).transpose();
    exe.free(dev);
    let (outputs, whole, each, timed_outputs) = ran?;
    let barriers = barriers.map_err(|e| at(Step::Time)(e.into()))?;
    let tol = tolerance(options.precision);
    let names: Vec<String> = exe
        .output_tensors()
        .iter()
        .map(|io| io.name.clone())
        .collect();
    // One check per output, named, against the one tolerance.
    let named = |errors: Vec<f64>| -> Vec<OutputCheck> {
        names
            .iter()
            .zip(errors)
            .map(|(name, error)| OutputCheck {
                name: name.clone(),
                error,
                tolerance: tol,
            })
            .collect()
    };
    let against = |want: &[ArrayD<f64>]| -> Vec<f64> {
        outputs
            .iter()
            .zip(want)
            .map(|(g, w)| relative_error(g, w))
            .collect()
    };
    let replayed = match &timed_outputs {
        Some(timed) => named(
            timed
                .iter()
                .zip(&outputs)
                .map(|(t, c)| relative_error(t, c))
                .collect(),
        ),
        None => Vec::new(),
    };
    let checked = match (m.reference, m.inputs) {
        (_, None) | (Reference::None, _) => Vec::new(),
        (Reference::Float64, Some(inputs)) => {
            let x: Vec<ArrayD<f64>> = inputs.iter().map(|x| x.mapv(f64::from)).collect();
            let want = evaluate(graph, &x).map_err(|e| MeasureError {
                step: Step::Reference,
                source: e.into(),
            })?;
            check_count(&outputs, want.len())?;
            named(against(&want))
        }
        (Reference::Outputs(want), Some(_)) => {
            check_count(&outputs, want.len())?;
            named(against(want))
        }
    };
    Ok(Measured {
        model,
        compile,
        outputs,
        whole,
        each,
        replayed,
        checked,
        barriers,
    })
}

/// A reference of another number of outputs than the model's is refused.
fn check_count(outputs: &[ArrayD<f32>], reference: usize) -> Result<(), MeasureError> {
    if outputs.len() == reference {
        return Ok(());
    }
    Err(MeasureError {
        step: Step::Reference,
        source: ModelError::Input {
            name: "reference".to_string(),
            what: format!(
                "{reference} outputs to check against, the model gives {}",
                outputs.len()
            ),
        },
    })
}

type OnDevice = (
    Vec<ArrayD<f32>>,
    Option<Timing>,
    Vec<Timing>,
    Option<Vec<ArrayD<f32>>>,
);

/// The steps on the device: the checked run, the whole model timed and its outputs read
/// back, each group timed.
fn on_device(
    exe: &crate::Executable,
    dev: &mut dyn Device,
    m: &Measure,
) -> Result<OnDevice, MeasureError> {
    let at = |step| move |source| MeasureError { step, source };
    let outputs = match m.inputs {
        Some(inputs) => exe.run(dev, inputs).map_err(at(Step::Run))?,
        None => Vec::new(),
    };
    let whole = if m.whole {
        Some(exe.time(dev, m.warmup, m.iters).map_err(at(Step::Time))?)
    } else {
        None
    };
    let timed_outputs = if whole.is_some() && m.inputs.is_some() {
        Some(exe.outputs(dev).map_err(at(Step::Replay))?)
    } else {
        None
    };
    let each = if m.each {
        exe.time_each(dev, m.warmup, m.iters)
            .map_err(at(Step::Time))?
    } else {
        Vec::new()
    };
    Ok((outputs, whole, each, timed_outputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    fn array(values: &[f32]) -> ArrayD<f32> {
        ArrayD::from_shape_vec(IxDyn(&[2, 2]), values.to_vec()).unwrap()
    }

    #[test]
    fn the_error_is_relative_to_the_largest_finite_reference_value() {
        let want = array(&[1.0, -4.0, 2.0, 0.5]);
        assert_eq!(relative_error(&want, &want), 0.0);
        let mut off = want.clone();
        off[[1, 0]] = 3.0;
        assert_eq!(relative_error(&off, &want), 0.25);
        // Another shape is never a match.
        let flat = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.0f32, -4.0, 2.0, 0.5]).unwrap();
        assert_eq!(relative_error(&flat, &want), f64::INFINITY);
    }

    #[test]
    fn a_nan_or_infinity_is_never_within_tolerance() {
        let want = array(&[1.0, -4.0, 2.0, 0.5]);
        // A poisoned element no kernel wrote, or an overflow.
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut got = want.clone();
            got[[0, 1]] = bad;
            let e = relative_error(&got, &want);
            assert_eq!(e, f64::INFINITY);
            let check = OutputCheck {
                name: "y".into(),
                error: e,
                tolerance: tolerance(Precision::F16),
            };
            assert!(!check.ok());
        }
        // Where the reference holds inf or NaN, the same value there is right, and the
        // scale is the largest finite value.
        let want = array(&[f32::INFINITY, f32::NAN, 2.0, -1.0]);
        let got = array(&[f32::INFINITY, f32::NAN, 2.5, -1.0]);
        assert_eq!(relative_error(&got, &want), 0.25);
        for (i, v) in [
            (0, f32::NEG_INFINITY),
            (0, 1e30),
            (1, 0.0),
            (1, f32::INFINITY),
        ] {
            let mut wrong = got.clone();
            wrong[[0, i]] = v;
            assert_eq!(relative_error(&wrong, &want), f64::INFINITY, "{v}");
        }
    }

    #[test]
    fn one_tolerance_table() {
        assert_eq!(tolerance(Precision::F32), 1e-3);
        assert_eq!(tolerance(Precision::F32ChannelsLast), 1e-3);
        assert_eq!(tolerance(Precision::F16), 5e-2);
    }
}

//! weft-ops: the seed workloads, each a te compute definition with named schedules and a
//! float64 reference.
//!
//! [`OPS`] is the table of ops, and each entry ([`OpSpec`]) carries the op's behaviour as
//! function values: [`Workload`] calls the entry's `define`, `apply`, `reference` and
//! template, and never looks at an op's name except to [`find`] its entry.
//!
//! **Adding an op.** Write one module, `src/<op>.rs`, with
//! - `fn define(&Shape) -> Result<Definition, TeError>`: the te definition (Func, inputs,
//!   output, flops and bytes);
//! - `fn apply(&mut Schedule, &str) -> Result<(), ScheduleError>`: its primitive
//!   schedules by name (only names in `schedules` reach it, never the template's);
//! - `fn reference(&[ArrayD<f64>], &Shape) -> ArrayD<f64>`: the float64 output;
//! - optionally a kernel template: the kernel library's ([`weft_kernels`]) bound to the
//!   op's shape by a [`templates::TemplateSpec`] in [`templates`];
//! - `pub(crate) const SPEC: OpSpec` naming these, with its shape parameters, schedules,
//!   best, bench and small shapes, and `check`.
//!
//! Then add `mod <op>;` and `&<op>::SPEC` to [`OPS`], and a row to the table below. Ops
//! that share code (the convolutions) pass a variant value to it from one small `fn` per
//! op. The tests that walk [`OPS`] (snapshots, emit, interp, bounds) then cover the op;
//! accept its new snapshots with `cargo insta review`.
//!
//! | op | seed | schedules |
//! | --- | --- | --- |
//! | `vecadd` | 001 | `split-bind`, `grid-stride` |
//! | `window-sum` | 001 | `split-bind`, `shared-fetch` |
//! | `matmul` | 001, 002 | `naive`, `local-blocking`, `shared-blocking`, `tiled-128`, `template` |
//! | `matmul-f16` | 004 | `template` (tensor cores, cooperative or simdgroup matrices) |
//! | `gemv`, `gemv-f16` | issue 60 | `template` (the skinny product, `B` `[k, n]`) |
//! | `gemv-kmajor`, `gemv-kmajor-f16` | issue 60 | `template` (the skinny product over a K-major `W` `[n, k]`) |
//! | `depthwise-conv2d` | 000 | `naive`, `v1`, `v2`, `v3`, `v4`, `tuned` (the depthwise template) |
//! | `depthwise-conv2d-f16` | 000 | `direct`, `tuned` (the depthwise template over f16 NHWC views) |
//! | `conv2d` | 003, 004 | `direct`, `implicit-gemm` |
//! | `conv2d-bias-relu` | 002, 003 | `direct`, `implicit-gemm` (one fused kernel) |
//! | `winograd-conv2d` | 003 | `direct`, `winograd` (F(2×2, 3×3), four kernels) |
//! | `conv2d-f16`, `conv2d-f16-bias-relu`, `conv2d-f16-nchw` | 004 | `direct`, `implicit-gemm` (tensor cores, one fused kernel) |
//! | `grouped-conv2d`, `grouped-conv2d-f16` | issue 59 | `direct`, `implicit-gemm` (a batched product per group or pack of groups, one fused kernel) |
//! | `attention-f16` | 002 | `template` (flash-attention style, one kernel; matrix units or CUDA cores) |
//!
//! Where they are: `vecadd.rs`, `window_sum.rs`, `matmul.rs` (`matmul` and `matmul-f16`),
//! `gemv.rs`, `gemv_kmajor.rs`, `depthwise.rs`, `depthwise_f16.rs`, `conv2d.rs` (`conv2d`, `conv2d-bias-relu`,
//! `winograd-conv2d`) and `conv2d_f16.rs` (the three fp16 convs), `grouped_conv.rs` (the
//! grouped convs) and `attention.rs` define the ops; `conv.rs` holds what the
//! convolutions share (sizes, each op's variant, the reference); [`templates`] binds the
//! kernel library's templates ([`weft_kernels`]) to the ops' shapes; `shape.rs` parses
//! shapes and [`check`] compares outputs with the reference.
//!
//! ```
//! let w = weft_ops::Workload::new("matmul", &weft_ops::Shape::parse("matmul", "m=64,n=64,k=64").unwrap()).unwrap();
//! let lowered = w.lower("shared-blocking").unwrap();
//! assert_eq!(lowered.kernels[0].block, [64, 1, 1]);
//! ```

mod attention;
pub mod check;
mod conv;
mod conv2d;
mod conv2d_f16;
mod depthwise;
mod depthwise_f16;
mod gemv;
mod gemv_kmajor;
mod grouped_conv;
mod matmul;
mod shape;
pub mod templates;
mod vecadd;
mod window_sum;

use ndarray::ArrayD;
use rand::{Rng, SeedableRng};
use thiserror::Error;
use weft_ir::expr::Buffer;
use weft_ir::func::Func;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::{LowerError, lower};
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;
use weft_kernels::{BuildError, Config};

pub use shape::Shape;

/// An op's te compute definition at a shape.
pub type DefineFn = fn(&Shape) -> Result<Definition, TeError>;
/// Applies an op's primitive schedule, by name, to a schedule of its definition.
pub type ApplyFn = fn(&mut Schedule, &str) -> Result<(), ScheduleError>;
/// An op's float64 output for inputs (in parameter order) at a shape.
pub type ReferenceFn = fn(&[ArrayD<f64>], &Shape) -> ArrayD<f64>;
/// One row of an op's float64 output (`None` where the inputs do not fit).
pub type RowReferenceFn = fn(&[ArrayD<f64>], usize) -> Option<Vec<f64>>;

/// What an op is, which shapes and schedules it has, and what it does: one entry of
/// [`OPS`].
#[derive(Debug)]
pub struct OpSpec {
    /// The op's name (`weft --op NAME`).
    pub name: &'static str,
    /// One line for `weft ops`.
    pub summary: &'static str,
    /// Shape parameters with their default (the seed's size).
    pub dims: &'static [(&'static str, i64)],
    /// Every schedule: the primitive ones `apply` knows, and the template's.
    pub schedules: &'static [&'static str],
    /// The schedule used when none is given.
    pub best: &'static str,
    /// Shapes `weft bench` measures on a GPU (the seeds' sizes).
    pub bench: &'static [&'static [i64]],
    /// Shapes small enough for the CPU interpreter and slow CPU drivers.
    pub small: &'static [&'static [i64]],
    /// Which seed document specifies it.
    pub seed: &'static str,
    /// The op's kernel template, offered as the schedule `template.schedule`, with its
    /// schedule space (see [`templates`]).
    pub template: Option<&'static templates::TemplateSpec>,
    /// Shape parameters that may be 0 (a padding); the others must be at least 1.
    pub zero_ok: &'static [&'static str],
    /// Checks a shape beyond each parameter's range (a kernel that fits its padded
    /// input, say); the message names what is wrong.
    pub check: fn(&Shape) -> Result<(), String>,
    /// Builds the op's te definition at a (checked) shape.
    pub define: DefineFn,
    /// Applies a primitive schedule: called with one of `schedules` that is not the
    /// template's.
    pub apply: ApplyFn,
    /// The float64 reference output.
    pub reference: ReferenceFn,
    /// How many times the rounding error of a direct sum the op's fastest algorithm may
    /// make (the `growth` of the check's rule, [`check`]): 1, except where a schedule
    /// computes the op another way (Winograd's transforms).
    pub rounding_growth: f64,
    /// Row `i` of the reference alone, for ops whose outputs are too large to check
    /// whole at benchmark sizes (a 4096³ matmul): then sampled rows are checked.
    pub row_reference: Option<RowReferenceFn>,
}

/// For ops whose every in-range shape is valid.
pub(crate) fn any_shape(_: &Shape) -> Result<(), String> {
    Ok(())
}

/// For ops whose every schedule is a template: there is no primitive one to apply.
pub(crate) fn no_primitives(_: &mut Schedule, _: &str) -> Result<(), ScheduleError> {
    Ok(())
}

/// Every op, in a stable order.
pub const OPS: &[&OpSpec] = &[
    &vecadd::SPEC,
    &window_sum::SPEC,
    &matmul::SPEC,
    &matmul::F16_SPEC,
    &gemv::SPEC,
    &gemv::F16_SPEC,
    &gemv_kmajor::SPEC,
    &gemv_kmajor::F16_SPEC,
    &depthwise::SPEC,
    &depthwise_f16::SPEC,
    &conv2d::SPEC,
    &conv2d::BIAS_RELU_SPEC,
    &conv2d::WINOGRAD_SPEC,
    &conv2d_f16::SPEC,
    &conv2d_f16::BIAS_RELU_SPEC,
    &conv2d_f16::NCHW_SPEC,
    &grouped_conv::SPEC,
    &grouped_conv::F16_SPEC,
    &attention::SPEC,
];

/// Errors naming the op, schedule or shape at fault.
#[derive(Debug, Error)]
pub enum OpError {
    #[error("unknown op {}; ops are: {list}", weft_ir::echo(.0), list = OPS.iter().map(|o| o.name).collect::<Vec<_>>().join(", "))]
    UnknownOp(String),
    #[error(
        "op `{op}` has no schedule {}; its schedules are: {list}",
        weft_ir::echo(schedule)
    )]
    UnknownSchedule {
        op: String,
        schedule: String,
        list: String,
    },
    #[error("shape for `{op}`: {msg}")]
    Shape { op: String, msg: String },
    #[error("`{op}` at {shape}: {source}")]
    Definition {
        op: String,
        shape: String,
        source: Box<TeError>,
    },
    #[error("schedule `{schedule}` of `{op}` at {shape}: {source}")]
    Schedule {
        op: String,
        schedule: String,
        shape: String,
        source: Box<ScheduleError>,
    },
    #[error("lowering `{schedule}` of `{op}` at {shape}: {source}")]
    Lower {
        op: String,
        schedule: String,
        shape: String,
        source: Box<LowerError>,
    },
    #[error("`{op}` expects {want} inputs, got {got}")]
    Inputs { op: String, want: usize, got: usize },
    #[error("template `{schedule}` of `{op}` at {shape}: {source}")]
    Template {
        op: String,
        schedule: String,
        shape: String,
        source: Box<BuildError>,
    },
    /// A config for a schedule that is not the op's template.
    #[error(
        "schedule `{schedule}` of `{op}` is not a template, so it takes no config; {}",
        which_take_config(op)
    )]
    NoTemplate { op: String, schedule: String },
}

/// Which schedule of `op` takes a config, for [`OpError::NoTemplate`]: its template's, or
/// none.
fn which_take_config(op: &str) -> String {
    match find(op).map(|o| (o.template, o.schedules)) {
        Ok((Some(t), _)) => format!("its template schedule `{}` does", t.schedule),
        Ok((None, schedules)) => format!(
            "no schedule of `{op}` does ({} are not templates)",
            schedules.join(", ")
        ),
        Err(_) => "it has no template".to_string(),
    }
}

/// The op named `name`.
pub fn find(name: &str) -> Result<&'static OpSpec, OpError> {
    OPS.iter()
        .copied()
        .find(|o| o.name == name)
        .ok_or_else(|| OpError::UnknownOp(name.to_string()))
}

/// One op at one shape: its default Func and what it computes.
#[derive(Debug)]
pub struct Workload {
    pub op: &'static OpSpec,
    pub shape: Shape,
    /// The unscheduled Func.
    pub func: Func,
    /// Input buffers, in parameter order (the output is the last parameter).
    pub inputs: Vec<Buffer>,
    pub output: Buffer,
    /// Floating-point operations of one run.
    pub flops: f64,
    /// Fewest bytes one run must move (each input read once, the output written once).
    pub bytes: f64,
}

impl Workload {
    /// The op `name` at `shape`.
    pub fn new(name: &str, shape: &Shape) -> Result<Workload, OpError> {
        let op = find(name)?;
        let def = (op.define)(shape).map_err(|source| OpError::Definition {
            op: op.name.to_string(),
            shape: shape.to_string(),
            source: Box::new(source),
        })?;
        Ok(Workload {
            op,
            shape: shape.clone(),
            func: def.func,
            inputs: def.inputs,
            output: def.output,
            flops: def.flops,
            bytes: def.bytes,
        })
    }

    /// The op at its default (seed) shape.
    pub fn default_for(name: &str) -> Result<Workload, OpError> {
        let op = find(name)?;
        Workload::new(name, &Shape::defaults(op))
    }

    /// The op's template, if `schedule` names it.
    pub fn template(&self, schedule: &str) -> Option<&'static templates::TemplateSpec> {
        self.op.template.filter(|t| t.schedule == schedule)
    }

    /// Applies the named schedule (the op's best when `None`). A template's schedule is
    /// built with its default config for CUDA and has an empty trace: a template is
    /// written directly, not derived by primitives.
    pub fn schedule(&self, name: Option<&str>) -> Result<Schedule, OpError> {
        let name = name.unwrap_or(self.op.best);
        if !self.op.schedules.contains(&name) {
            return Err(OpError::UnknownSchedule {
                op: self.op.name.to_string(),
                schedule: name.to_string(),
                list: self.op.schedules.join(", "),
            });
        }
        if self.template(name).is_some() {
            return Ok(Schedule::new(self.scheduled(name, None)?));
        }
        let mut s = Schedule::new(self.func.clone());
        (self.op.apply)(&mut s, name).map_err(|source| OpError::Schedule {
            op: self.op.name.to_string(),
            schedule: name.to_string(),
            shape: self.shape.to_string(),
            source: Box::new(source),
        })?;
        Ok(s)
    }

    /// The scheduled Func of `schedule`: a template's built with `config` (its default
    /// for CUDA when `None`), or the primitives' result (which take no config).
    pub fn scheduled(&self, schedule: &str, config: Option<&Config>) -> Result<Func, OpError> {
        match self.template(schedule) {
            Some(t) => {
                let default;
                let config = match config {
                    Some(c) => c,
                    None => {
                        default = (t.default)(&weft_codegen_common::TargetLimits::cuda());
                        &default
                    }
                };
                (t.build)(&self.shape, config).map_err(|source| OpError::Template {
                    op: self.op.name.to_string(),
                    schedule: schedule.to_string(),
                    shape: self.shape.to_string(),
                    source: Box::new(source),
                })
            }
            None if config.is_some() => Err(OpError::NoTemplate {
                op: self.op.name.to_string(),
                schedule: schedule.to_string(),
            }),
            None => Ok(self.schedule(Some(schedule))?.func().clone()),
        }
    }

    /// Schedules and lowers (a template with its default config).
    pub fn lower(&self, schedule: &str) -> Result<LoweredFunc, OpError> {
        self.lower_with(schedule, None)
    }

    /// Schedules and lowers; `config` picks a template's config.
    pub fn lower_with(
        &self,
        schedule: &str,
        config: Option<&Config>,
    ) -> Result<LoweredFunc, OpError> {
        let func = self.scheduled(schedule, config)?;
        lower(&func).map_err(|source| OpError::Lower {
            op: self.op.name.to_string(),
            schedule: schedule.to_string(),
            shape: self.shape.to_string(),
            source: Box::new(source),
        })
    }

    /// The float64 reference output for `inputs` (in parameter order).
    pub fn reference(&self, inputs: &[ArrayD<f64>]) -> Result<ArrayD<f64>, OpError> {
        if inputs.len() != self.inputs.len() {
            return Err(OpError::Inputs {
                op: self.op.name.to_string(),
                want: self.inputs.len(),
                got: inputs.len(),
            });
        }
        Ok((self.op.reference)(inputs, &self.shape))
    }

    /// Random inputs in `[0, 1)` (as the seeds draw them), reproducible from `seed`. For
    /// an f16 input the values are f16's (rounded once here), so that the float64
    /// reference sees exactly what the kernel reads.
    pub fn random_inputs(&self, seed: u64) -> Vec<ArrayD<f32>> {
        self.inputs_from(seed, Values::Uniform)
    }

    /// Random inputs drawn from `values`, reproducible from `seed` (f16 inputs rounded
    /// to f16 once, as [`Workload::random_inputs`]).
    pub fn inputs_from(&self, seed: u64, values: Values) -> Vec<ArrayD<f32>> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        self.inputs
            .iter()
            .map(|b| {
                let shape: Vec<usize> = b.shape().iter().map(|&d| d as usize).collect();
                let f16 = b.dtype() == weft_ir::dtype::DType::F16;
                ArrayD::from_shape_simple_fn(shape, || {
                    let x = values.draw(&mut rng);
                    if f16 {
                        half::f16::from_f32(x).to_f32()
                    } else {
                        x
                    }
                })
            })
            .collect()
    }

    /// True if an input or the output is f16 (the target must support it).
    pub fn uses_f16(&self) -> bool {
        self.inputs
            .iter()
            .chain([&self.output])
            .any(|b| b.dtype() == weft_ir::dtype::DType::F16)
    }

    /// The rule this workload's outputs are judged by ([`check`]).
    pub fn rule(&self) -> check::Rule {
        check::Rule::of(self)
    }
}

/// How random inputs are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Uniform in `[0, 1)`, as the seeds draw them: every sum of products is positive.
    Uniform,
    /// Standard normal (zero mean, unit variance): sums cancel, outputs come near zero,
    /// as in a network's activations and weights.
    Normal,
}

impl Values {
    fn draw(self, rng: &mut rand::rngs::StdRng) -> f32 {
        match self {
            Values::Uniform => rng.random::<f32>(),
            Values::Normal => {
                // Box–Muller: two uniforms in (0, 1] and [0, 1) give one normal.
                let u = 1.0 - rng.random::<f64>();
                let v = rng.random::<f64>();
                ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
            }
        }
    }
}

/// What an op's `define` gives: its te definition at one shape, and what one run of it
/// computes and moves. [`Workload::new`] keeps all of it.
#[derive(Debug)]
pub struct Definition {
    /// The unscheduled Func (its parameters: the inputs, then the output).
    pub func: Func,
    /// Input buffers, in parameter order.
    pub inputs: Vec<Buffer>,
    /// The output buffer.
    pub output: Buffer,
    /// Floating-point operations of one run.
    pub flops: f64,
    /// Fewest bytes one run must move (each input read once, the output written once).
    pub bytes: f64,
}

impl Workload {
    /// Arguments for a run: the inputs, then the output poisoned with NaN so that an
    /// element no thread writes is caught.
    pub fn args(&self, inputs: &[ArrayD<f32>]) -> Vec<weft_ir::data::Arg> {
        use weft_ir::data::{Arg, TensorData};
        let mut args: Vec<Arg> = inputs
            .iter()
            .zip(&self.inputs)
            .map(|(a, b)| {
                Arg::Tensor(match b.dtype() {
                    weft_ir::dtype::DType::F16 => {
                        TensorData::F16(a.iter().map(|&x| half::f16::from_f32(x)).collect())
                    }
                    _ => TensorData::F32(a.iter().copied().collect()),
                })
            })
            .collect();
        args.push(Arg::Tensor(TensorData::poisoned(
            self.output.dtype(),
            self.output.numel() as usize,
        )));
        args
    }

    /// The output (the last argument) as an array of the output's shape.
    pub fn output_of(&self, args: &[weft_ir::data::Arg]) -> Option<ArrayD<f32>> {
        let weft_ir::data::Arg::Tensor(t) = args.last()? else {
            return None;
        };
        let shape: Vec<usize> = self.output.shape().iter().map(|&d| d as usize).collect();
        let v: Vec<f32> = t.to_f64_vec().into_iter().map(|x| x as f32).collect();
        ArrayD::from_shape_vec(shape, v).ok()
    }

    /// Runs a lowered schedule of this workload in the CPU interpreter.
    pub fn run_interp(
        &self,
        lowered: &LoweredFunc,
        inputs: &[ArrayD<f32>],
    ) -> Result<ArrayD<f32>, weft_ir::interp::InterpError> {
        let mut args = self.args(inputs);
        weft_ir::interp::run(lowered, &mut args)?;
        Ok(self
            .output_of(&args)
            .unwrap_or_else(|| ArrayD::zeros(ndarray::IxDyn(&[0]))))
    }
}

//! weft's WGSL emitter: a lowered [`Kernel`] becomes one WGSL module with one
//! `@compute` entry point, plus the binding layout the runtime needs to run it.
//!
//! What the output looks like, and why:
//!
//! - buffer parameters are `@group(0) @binding(n) var<storage, read>` (or `read_write`),
//!   numbered in parameter order; scalar parameters share one uniform struct at the next
//!   binding ([`Uniform`](weft_codegen_common::Uniform)), copied into `let`s at the top of the entry point;
//! - thread and block indices are cast to `i32` once (`let threadIdx_x: i32 =
//!   i32(local_id.x);`): weft's index arithmetic is `i32` throughout;
//! - a loop the schedule unrolls is **emitted unrolled** (WGSL has no unroll pragma), with
//!   the loop variable replaced by each constant, so local arrays are indexed by literals.
//!   Under wgpu's default runtime bounds checks a dynamically indexed 64-element
//!   accumulator array cost a matmul on an H200 97% of its speed (0.75 vs 25.8 TFLOP/s);
//! - WGSL's `select()` evaluates both operands, so a select whose branches load memory is
//!   written as a `var` and an `if`: the untaken load never runs (out-of-range accesses
//!   are bugs the interpreter reports, not something WGSL's clamping may hide);
//! - a buffer whose every access is 4-wide is declared `array<vec4<T>>` and accessed by
//!   `vec4`; other vector accesses become scalar accesses;
//! - `enable f16;` when f16 appears (the target must allow it: [`TargetLimits::f16`]).
//!
//! Limits ([`WgslOptions::limits`], WebGPU's defaults unless the runtime passes its
//! adapter's) and the lowering contract are checked before writing. [`validate`] runs
//! naga's parser and validator on a module: the test suite's check.

mod expr;
mod index;
mod writer;

use weft_codegen_common::{EmitError, Emitted, Language, checked};
use weft_ir::kernel::{Kernel, LoweredFunc};

pub use index::{IndexForms, SWITCH as INDEX_SWITCH, reciprocal, unsigned_division};
pub use weft_codegen_common::TargetLimits;
pub use writer::SWITCH as BRANCH_FREE_SWITCH;

/// Options of the WGSL emitter.
#[derive(Clone, Debug)]
pub struct WgslOptions {
    /// Limits checked before emission: [`TargetLimits::webgpu_default`] by default; the
    /// runtime passes its adapter's.
    pub limits: TargetLimits,
}

impl Default for WgslOptions {
    fn default() -> Self {
        WgslOptions {
            limits: TargetLimits::webgpu_default(),
        }
    }
}

/// The backend's name in errors.
const BACKEND: &str = "WGSL";

/// `kernel` as a WGSL module, after checking the lowering contract and `opts.limits`.
///
/// The [`Emitted`] value's one entry point says how to bind the module: one storage
/// buffer per buffer parameter, in parameter order, all in `@group(0)`, then the
/// uniform buffer of the scalar parameters.
///
/// Guarded vector copies are written as an `if` around the load unless the environment's
/// [`BRANCH_FREE_SWITCH`] (`WEFT_VK_CONV`) is `1` or `2` ([`emit_with`]); a value other
/// than `0`, `1`, `2` or `deep` is refused, naming it. Index arithmetic takes the forms
/// [`INDEX_SWITCH`] (`WEFT_WGSL_INDEX`) asks for, by default unsigned divisions and eager
/// logic ([`IndexForms`]).
pub fn emit(kernel: &Kernel, opts: &WgslOptions) -> Result<Emitted, EmitError> {
    let branch_free = writer::branch_free_from_env(&kernel.name)?;
    emit_with(kernel, opts, branch_free)
}

/// [`emit`] with the form of guarded vector copies given: without a branch (a `select`
/// over a clamped index) where `branch_free`, else as an `if` (the default).
pub fn emit_with(
    kernel: &Kernel,
    opts: &WgslOptions,
    branch_free: bool,
) -> Result<Emitted, EmitError> {
    let forms = IndexForms::from_env(&kernel.name)?;
    emit_forms(kernel, opts, branch_free, forms)
}

/// [`emit_with`] with the index forms given too (what tests compare).
pub fn emit_forms(
    kernel: &Kernel,
    opts: &WgslOptions,
    branch_free: bool,
    forms: IndexForms,
) -> Result<Emitted, EmitError> {
    checked(kernel, Language::Wgsl, &opts.limits)?;
    writer::write_module(&prepared(kernel, forms), branch_free, forms)
}

/// `kernel` as the writer takes it: indices folded, divisions in the forms asked for.
fn prepared(kernel: &Kernel, forms: IndexForms) -> Kernel {
    let folded = weft_codegen_common::fold::fold_indices(kernel);
    if forms.unsigned_division {
        unsigned_division(&folded)
    } else {
        folded
    }
}

/// Every kernel of `func` in one WGSL module, in launch order: one `@compute` entry point
/// per kernel, each binding its own buffers from `@binding(0)` in `@group(0)` (a
/// pipeline is made per entry point), module-scope names kept apart (the second
/// kernel's `y` is `y_1`), the `enable` directives once at the top. What `weft emit`
/// prints for WGSL targets, and what a browser or another engine can compile as it is;
/// weft's runtime compiles each kernel alone ([`emit`]).
pub fn emit_lowered(func: &LoweredFunc, opts: &WgslOptions) -> Result<Emitted, EmitError> {
    if func.kernels.is_empty() {
        return Err(EmitError::Invalid {
            kernel: func.name.clone(),
            what: "the function has no kernels to emit".to_string(),
        });
    }
    let mut taken: Vec<String> = Vec::new();
    let mut enables: Vec<&'static str> = Vec::new();
    let mut parts = Vec::new();
    let mut kernels = Vec::new();
    for k in &func.kernels {
        checked(k, Language::Wgsl, &opts.limits)?;
        let branch_free = writer::branch_free_from_env(&k.name)?;
        let forms = IndexForms::from_env(&k.name)?;
        let (part, entry) = writer::write_part(&prepared(k, forms), &taken, branch_free, forms)?;
        taken.extend(part.globals);
        for e in part.enables {
            if !enables.contains(&e) {
                enables.push(e);
            }
        }
        parts.push(part.source);
        kernels.push(entry);
    }
    let mut source: String = enables.concat();
    if !source.is_empty() {
        source.push('\n');
    }
    let n = parts.len();
    for (i, (part, entry)) in parts.iter().zip(&kernels).enumerate() {
        if i > 0 {
            source.push('\n');
        }
        if n > 1 {
            // Each entry point is a pipeline of its own, binding its own buffers.
            source.push_str(&format!(
                "// {} ({} of {n}): its own pipeline; its @binding(i) is its i-th buffer\n",
                entry.name,
                i + 1
            ));
        }
        source.push_str(part);
    }
    Ok(Emitted {
        language: Language::Wgsl,
        source,
        kernels,
    })
}

/// Parses and validates `source` with naga (the version wgpu uses), with the `f16`
/// capability when the module enables it. The error is naga's report, with the source
/// line it points at.
pub fn validate(source: &str) -> Result<(), String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| format!("naga could not parse:\n{}", e.emit_to_string(source)))?;
    let mut caps = Capabilities::default();
    if source.contains("enable f16;") {
        caps |= Capabilities::SHADER_FLOAT16;
    }
    if source.contains("enable wgpu_cooperative_matrix;") {
        caps |= Capabilities::COOPERATIVE_MATRIX;
    }
    if source.contains("subgroupShuffleXor(") {
        caps |= Capabilities::SUBGROUP;
    }
    Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| format!("naga validation failed:\n{}", e.emit_to_string(source)))?;
    Ok(())
}

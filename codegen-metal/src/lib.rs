//! weft's Metal Shading Language emitter: a lowered [`Kernel`] becomes one `kernel void`
//! function, in the style of TVM's Metal codegen.
//!
//! Buffers are `device` pointers (`device const` when only read) at `[[buffer(i)]]`, where
//! `i` is the parameter's index in `kernel.params`; scalar parameters are `constant T&` at
//! their own index (the host binds each with `setBytes`). Thread and block indices come in
//! as `uint3 blockIdx [[threadgroup_position_in_grid]]` and `uint3 threadIdx
//! [[thread_position_in_threadgroup]]` and are cast to `int` once. Shared buffers are
//! `threadgroup` arrays, `threadgroup_barrier(mem_flags::mem_threadgroup)` synchronises,
//! f16 is `half`, vector copies go through `float4`/`half2`/... pointers in the buffer's
//! address space.
//!
//! Limits ([`MetalOptions::limits`]) and the lowering contract are checked before writing.
//! On Linux no Metal compiler exists: [`syntax_check`] runs the host C++ compiler on the
//! output against a shim of `<metal_stdlib>` (`shim/metal_stdlib_shim.h`, whose header
//! says what that proves and what it does not).

mod check;
mod writer;

use weft_codegen_common::cfamily::{emit_unit, entry_point, write_kernel};
use weft_codegen_common::{EmitError, Emitted, Language, checked};
use weft_ir::kernel::{Kernel, LoweredFunc};

pub use check::{SHIM, SyntaxCheck, TOOL, syntax_check};
pub use weft_codegen_common::TargetLimits;

/// Options of the MSL emitter.
#[derive(Clone, Debug)]
pub struct MetalOptions {
    /// Limits checked before emission; [`TargetLimits::metal`] by default.
    pub limits: TargetLimits,
}

impl Default for MetalOptions {
    fn default() -> Self {
        MetalOptions {
            limits: TargetLimits::metal(),
        }
    }
}

const PRELUDE: &str = "#include <metal_stdlib>\nusing namespace metal;\n\n";

/// `kernel` as one MSL source holding one `kernel void` function, checked once against
/// the lowering contract and `opts.limits`.
pub fn emit(kernel: &Kernel, opts: &MetalOptions) -> Result<Emitted, EmitError> {
    checked(kernel, Language::Msl, &opts.limits)?;
    Ok(Emitted {
        language: Language::Msl,
        source: format!("{PRELUDE}{}", write_kernel(&writer::Msl, kernel)?),
        kernels: vec![entry_point(&writer::Msl, kernel)],
    })
}

/// Every kernel of `func` in one MSL source (one Metal library), in launch order.
pub fn emit_lowered(func: &LoweredFunc, opts: &MetalOptions) -> Result<Emitted, EmitError> {
    emit_unit(&writer::Msl, Language::Msl, func, &opts.limits, |_, _| {
        PRELUDE.to_string()
    })
}

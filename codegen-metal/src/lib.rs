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

use weft_codegen_common::cfamily::{kernel_names, write_kernel};
use weft_codegen_common::contract::check_lowered;
use weft_codegen_common::{EmitError, check_limits};
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

const BACKEND: &str = "MSL";
const PRELUDE: &str = "#include <metal_stdlib>\nusing namespace metal;\n\n";

fn check(kernel: &Kernel, opts: &MetalOptions) -> Result<(), EmitError> {
    check_lowered(kernel, BACKEND)?;
    check_limits(kernel, &opts.limits)?;
    Ok(())
}

/// `kernel` as one MSL source holding one `kernel void` function named
/// [`entry_point`]`(kernel)`.
pub fn emit(kernel: &Kernel, opts: &MetalOptions) -> Result<String, EmitError> {
    check(kernel, opts)?;
    Ok(format!("{PRELUDE}{}", write_kernel(&writer::Msl, kernel)?))
}

/// Every kernel of `func` in one MSL source (one Metal library), in launch order.
pub fn emit_lowered(func: &LoweredFunc, opts: &MetalOptions) -> Result<String, EmitError> {
    let mut seen = std::collections::HashSet::new();
    for k in &func.kernels {
        check(k, opts)?;
        if !seen.insert(entry_point(k)) {
            return Err(EmitError::Invalid {
                kernel: k.name.clone(),
                what: format!(
                    "its entry point `{}` repeats in function `{}`",
                    entry_point(k),
                    func.name
                ),
            });
        }
    }
    let mut out = PRELUDE.to_string();
    for (i, k) in func.kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&write_kernel(&writer::Msl, k)?);
    }
    Ok(out)
}

/// The name of the emitted function: `kernel.name`, unless that is not a valid,
/// non-reserved identifier (lowering never produces such a name), then a sanitised one.
pub fn entry_point(kernel: &Kernel) -> String {
    kernel_names(&writer::Msl, kernel).kernel
}

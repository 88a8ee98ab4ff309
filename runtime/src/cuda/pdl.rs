//! Programmatic dependent launch (Hopper and later): a kernel launched with
//! `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` may launch as soon as the
//! blocks of the kernel before it on the stream have exited, instead of after that grid's
//! completion has been processed and its own launch has gone through. Between two
//! dependent kernels of a CUDA graph that gap is about a microsecond; a model of a
//! hundred kernels pays it a hundred times.
//!
//! What keeps it right is in the kernels: every kernel weft emits for CUDA starts with
//! `griddepcontrol.wait`, which waits until the kernel before it has finished and its
//! writes are visible, before touching memory. So a kernel runs its body only after its
//! predecessor has finished, as without the attribute; only the launch overlaps. (No
//! kernel triggers its dependents early: see `weft_codegen_cuda`'s prelude for why.)
//! Kernels whose source was written by hand lack the wait and are launched the ordinary
//! way
//! ([`weft_codegen_common::EntryPoint::waits_for_previous_grid`]). Stream capture keeps
//! the attribute as a programmatic edge of the graph.
//!
//! `WEFT_PDL=0` turns it off (every launch ordinary; the waits then return at once). A
//! device whose driver refuses the attribute turns it off by itself at the first refusal
//! ([`refused`]).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{
    self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchAttributeValue, CUlaunchConfig,
};
use cudarc::driver::{CudaFunction, CudaStream, DriverError};

/// The environment variable that turns programmatic dependent launch off (`0`).
pub const ENV: &str = "WEFT_PDL";

/// Whether a device of compute capability `major.x` launches with programmatic
/// dependence: sm_90 and later (the instructions and the attribute exist there), unless
/// `WEFT_PDL=0`.
pub fn enabled(major: i32) -> bool {
    major >= 9 && std::env::var(ENV).map_or(true, |v| v.trim() != "0")
}

/// Whether `err`, from [`launch`], says the driver does not take the attribute here (an
/// older driver, a stream capture that cannot hold a programmatic edge), so the kernel
/// should be launched the ordinary way instead.
pub fn refused(err: &DriverError) -> bool {
    use sys::cudaError_enum as E;
    matches!(
        err.0,
        E::CUDA_ERROR_NOT_SUPPORTED
            | E::CUDA_ERROR_INVALID_VALUE
            | E::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    )
}

/// `value`'s address as an entry of a kernel's parameter list.
pub fn address<T>(value: &T) -> *mut c_void {
    value as *const T as *mut c_void
}

/// A launch's grid, block and dynamic shared memory.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

/// Launches `function` on `stream`: with programmatic dependence on the kernel before it
/// where `programmatic`, the ordinary way otherwise (every launch of the `cuda` device
/// comes here, so its arguments are laid out in one place).
///
/// # Safety
/// `params` must hold one valid address per parameter of the kernel, of the parameter's
/// type and size, in order (as for any kernel launch); with `programmatic`, the kernel
/// must start with `griddepcontrol.wait` before any memory access.
pub unsafe fn launch(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    shape: Shape,
    params: &mut [*mut c_void],
    programmatic: bool,
) -> Result<(), DriverError> {
    stream.context().bind_to_thread()?;
    // SAFETY: an all-zero union is a valid value; the one field the attribute's id
    // names is set next.
    let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attrs = [CUlaunchAttribute {
        id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    }];
    let config = CUlaunchConfig {
        gridDimX: shape.grid[0],
        gridDimY: shape.grid[1],
        gridDimZ: shape.grid[2],
        blockDimX: shape.block[0],
        blockDimY: shape.block[1],
        blockDimZ: shape.block[2],
        sharedMemBytes: shape.shared_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: if programmatic { attrs.len() as u32 } else { 0 },
    };
    // SAFETY: `config` and `attrs` live through the call; the caller vouches for
    // `params`, and the driver copies the arguments before it returns.
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            function.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::cudaError_enum as E;

    #[test]
    fn only_hopper_and_later_launch_with_programmatic_dependence() {
        assert!(!enabled(8));
        assert!(!enabled(7));
    }

    /// A refusal of the attribute falls back to the ordinary launch; a kernel that fails
    /// for another reason is not retried.
    #[test]
    fn refusals_are_told_from_failures() {
        for code in [
            E::CUDA_ERROR_NOT_SUPPORTED,
            E::CUDA_ERROR_INVALID_VALUE,
            E::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        ] {
            assert!(refused(&DriverError(code)), "{code:?}");
        }
        for code in [
            E::CUDA_ERROR_LAUNCH_FAILED,
            E::CUDA_ERROR_OUT_OF_MEMORY,
            E::CUDA_ERROR_ILLEGAL_ADDRESS,
        ] {
            assert!(!refused(&DriverError(code)), "{code:?}");
        }
    }
}

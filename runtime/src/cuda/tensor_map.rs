//! Tensor maps for the TMA copies of Hopper kernels ([`weft_ir::tma`]): a 128-byte
//! `CUtensorMap` per [`Kernel::tensor_maps`] entry, encoded on the host from the buffer's
//! device pointer and shape (`cuTensorMapEncodeTiled`) and passed by value after the
//! kernel's other arguments.

use cudarc::driver::DeviceRepr;
use cudarc::driver::sys::{self, CUresult, CUtensorMap};
use weft_ir::kernel::{Kernel, TensorMap};
use weft_ir::tma::ROW;

use super::CudaError;

/// A tensor map as a kernel argument (the driver copies its 128 bytes into parameter
/// space).
#[repr(transparent)]
pub(crate) struct MapArg(CUtensorMap);

// SAFETY: a plain 128-byte, 64-byte-aligned C struct with no pointers the device
// dereferences through the argument itself: the kernel takes it by value as
// `const __grid_constant__ weft_tensor_map`, which has the same size and alignment.
unsafe impl DeviceRepr for MapArg {}

/// The tensor map of `map` over the f16 tensor at device address `ptr`: its dimensions
/// innermost first, rows of 16-byte-multiple strides, boxes of `rows × 64` elements, the
/// 128-byte swizzle, zeros outside.
pub(crate) fn encode(kernel: &Kernel, map: &TensorMap, ptr: u64) -> Result<MapArg, CudaError> {
    let shape = map.buffer.shape();
    let rank = shape.len();
    let fail = |why: String| CudaError::Launch {
        kernel: kernel.name.clone(),
        why,
    };
    let dims: Vec<u64> = shape.iter().rev().map(|&d| d as u64).collect();
    // Byte strides of every dimension but the innermost.
    let mut strides = Vec::with_capacity(rank.saturating_sub(1));
    let mut s = 2u64;
    for &d in &dims[..rank - 1] {
        s *= d;
        strides.push(s);
    }
    if strides.iter().any(|s| !s.is_multiple_of(16)) || !ptr.is_multiple_of(16) {
        return Err(fail(format!(
            "TMA needs 16-byte aligned rows: `{}` has shape {shape:?}",
            map.buffer.name()
        )));
    }
    let mut boxes = vec![ROW as u32, map.rows];
    boxes.resize(rank, 1);
    let elem = vec![1u32; rank];
    let mut out = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
    // SAFETY: every pointer argument points at `rank` (or `rank - 1` for strides)
    // values that live across the call; `out` is 128 writable bytes.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            out.as_mut_ptr(),
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            rank as u32,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != CUresult::CUDA_SUCCESS {
        return Err(fail(format!(
            "cuTensorMapEncodeTiled for `{}` (shape {shape:?}, box {}x64): {r:?}",
            map.buffer.name(),
            map.rows
        )));
    }
    // SAFETY: the driver wrote the whole map on success.
    Ok(MapArg(unsafe { out.assume_init() }))
}

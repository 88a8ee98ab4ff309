//! The checks every device makes before it touches memory: a function's arguments against
//! its parameters, a launch's arguments against its kernel, an upload against its buffer;
//! and how host data of each dtype is held on a device.

use weft_ir::data::{Arg, TensorData};
use weft_ir::dtype::DType;
use weft_ir::func::Param;
use weft_ir::kernel::{Kernel, KernelParam, LoweredFunc};

use super::{BufferId, KernelArg};
use crate::error::{ArgError, DeviceError};

/// Checks `args` against `func.params`: count, kinds, dtypes and lengths.
pub fn check_args(func: &LoweredFunc, args: &[Arg]) -> Result<(), ArgError> {
    if args.len() != func.params.len() {
        return Err(ArgError::Count {
            func: func.name.clone(),
            expected: func.params.len(),
            got: args.len(),
        });
    }
    for (param, arg) in func.params.iter().zip(args) {
        let kind = |expected, got| ArgError::Kind {
            func: func.name.clone(),
            param: param.name().to_string(),
            expected,
            got,
        };
        match (param, arg) {
            (Param::Buffer(b), Arg::Tensor(t)) => {
                if storage_dtype(b.dtype()) != t.dtype() {
                    return Err(ArgError::DType {
                        func: func.name.clone(),
                        param: b.name().to_string(),
                        expected: b.dtype(),
                        got: t.dtype(),
                    });
                }
                let expected = b.numel().max(0) as usize;
                if t.len() != expected {
                    return Err(ArgError::Len {
                        func: func.name.clone(),
                        param: b.name().to_string(),
                        expected,
                        got: t.len(),
                    });
                }
            }
            (Param::Scalar(v), Arg::Scalar(s)) => {
                if storage_dtype(v.dtype()) != s.dtype() {
                    return Err(ArgError::DType {
                        func: func.name.clone(),
                        param: v.name().to_string(),
                        expected: v.dtype(),
                        got: s.dtype(),
                    });
                }
            }
            (Param::Buffer(_), Arg::Scalar(_)) => return Err(kind("tensor", "scalar")),
            (Param::Scalar(_), Arg::Tensor(_)) => return Err(kind("scalar", "tensor")),
        }
    }
    Ok(())
}

/// Checks launch arguments against a kernel's parameters (kinds, and for buffers the
/// dtype and element count that `buffer_info` reports for a handle).
pub(crate) fn check_launch(
    kernel: &Kernel,
    args: &[KernelArg],
    buffer_info: impl Fn(BufferId) -> Result<(DType, usize), DeviceError>,
) -> Result<(), DeviceError> {
    if args.len() != kernel.params.len() {
        return Err(ArgError::LaunchCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            got: args.len(),
        }
        .into());
    }
    for (index, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let kind = |expected| ArgError::LaunchKind {
            kernel: kernel.name.clone(),
            index,
            param: p.name().to_string(),
            expected,
        };
        match (p, a) {
            (KernelParam::Buffer { buffer, .. }, KernelArg::Buffer(id)) => {
                let (dtype, len) = buffer_info(*id)?;
                let expected_len = buffer.numel().max(0) as usize;
                if storage_dtype(dtype) != storage_dtype(buffer.dtype()) || len < expected_len {
                    return Err(ArgError::LaunchBuffer {
                        kernel: kernel.name.clone(),
                        param: buffer.name().to_string(),
                        expected: buffer.dtype(),
                        expected_len,
                        got: dtype,
                        got_len: len,
                    }
                    .into());
                }
            }
            (KernelParam::Scalar(v), KernelArg::Scalar(s)) => {
                if storage_dtype(v.dtype()) != s.dtype() {
                    return Err(kind("scalar of the parameter's dtype").into());
                }
            }
            (KernelParam::Buffer { .. }, KernelArg::Scalar(_)) => {
                return Err(kind("buffer").into());
            }
            (KernelParam::Scalar(_), KernelArg::Buffer(_)) => return Err(kind("scalar").into()),
        }
    }
    Ok(())
}

/// The dtype host data of `dtype` is held in: [`TensorData`] and [`Scalar`] have no bool
/// variant, so bools are `u32` (0 or 1).
pub fn storage_dtype(dtype: DType) -> DType {
    match dtype {
        DType::Bool => DType::U32,
        d => d,
    }
}

/// Bytes per element on a device.
pub(crate) fn element_bytes(dtype: DType) -> usize {
    match storage_dtype(dtype) {
        DType::F16 => 2,
        _ => 4,
    }
}

/// Checks that host data fits a buffer of `dtype` x `len`.
pub(crate) fn check_upload(
    buf: BufferId,
    dtype: DType,
    len: usize,
    data: &TensorData,
) -> Result<(), DeviceError> {
    if data.dtype() != storage_dtype(dtype) || data.len() != len {
        return Err(ArgError::LaunchBuffer {
            kernel: "<upload>".to_string(),
            param: format!("buffer #{}", buf.0),
            expected: dtype,
            expected_len: len,
            got: data.dtype(),
            got_len: data.len(),
        }
        .into());
    }
    Ok(())
}

//! ndarray in and out: run a [`LoweredFunc`] on any [`Device`] from `ArrayD` inputs to
//! `ArrayD` outputs.
//!
//! A function's *outputs* are the buffer parameters some kernel writes; its *inputs* are
//! all other parameters (read-only buffers and scalars). Inputs are given by position, in
//! parameter order; outputs come back in parameter order. Outputs start as poison (NaN),
//! so an element no kernel writes is visible in the result.

use half::f16;
use ndarray::{ArrayD, IxDyn};
use thiserror::Error;
use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::func::Param;
use weft_ir::kernel::LoweredFunc;

use crate::device::{Device, DeviceError, storage_dtype};

/// A host array of one of the dtypes devices hold.
#[derive(Clone, Debug, PartialEq)]
pub enum HostArray {
    F32(ArrayD<f32>),
    F16(ArrayD<f16>),
    I32(ArrayD<i32>),
    U32(ArrayD<u32>),
}

impl HostArray {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            HostArray::F32(_) => DType::F32,
            HostArray::F16(_) => DType::F16,
            HostArray::I32(_) => DType::I32,
            HostArray::U32(_) => DType::U32,
        }
    }

    /// The extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        match self {
            HostArray::F32(a) => a.shape(),
            HostArray::F16(a) => a.shape(),
            HostArray::I32(a) => a.shape(),
            HostArray::U32(a) => a.shape(),
        }
    }

    /// The elements in row-major order, whatever the array's memory layout.
    pub fn to_tensor_data(&self) -> TensorData {
        match self {
            HostArray::F32(a) => TensorData::F32(a.iter().copied().collect()),
            HostArray::F16(a) => TensorData::F16(a.iter().copied().collect()),
            HostArray::I32(a) => TensorData::I32(a.iter().copied().collect()),
            HostArray::U32(a) => TensorData::U32(a.iter().copied().collect()),
        }
    }

    /// Shapes row-major `data` as an array; `None` if the element count does not match.
    pub fn from_tensor_data(data: TensorData, shape: &[usize]) -> Option<HostArray> {
        let shape = IxDyn(shape);
        Some(match data {
            TensorData::F32(v) => HostArray::F32(ArrayD::from_shape_vec(shape, v).ok()?),
            TensorData::F16(v) => HostArray::F16(ArrayD::from_shape_vec(shape, v).ok()?),
            TensorData::I32(v) => HostArray::I32(ArrayD::from_shape_vec(shape, v).ok()?),
            TensorData::U32(v) => HostArray::U32(ArrayD::from_shape_vec(shape, v).ok()?),
        })
    }

    /// The f32 array, if this is one.
    pub fn into_f32(self) -> Option<ArrayD<f32>> {
        match self {
            HostArray::F32(a) => Some(a),
            _ => None,
        }
    }
}

impl From<ArrayD<f32>> for HostArray {
    fn from(a: ArrayD<f32>) -> HostArray {
        HostArray::F32(a)
    }
}
impl From<ArrayD<f16>> for HostArray {
    fn from(a: ArrayD<f16>) -> HostArray {
        HostArray::F16(a)
    }
}
impl From<ArrayD<i32>> for HostArray {
    fn from(a: ArrayD<i32>) -> HostArray {
        HostArray::I32(a)
    }
}
impl From<ArrayD<u32>> for HostArray {
    fn from(a: ArrayD<u32>) -> HostArray {
        HostArray::U32(a)
    }
}

/// One input: an array for a buffer parameter, a scalar for a scalar parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Array(HostArray),
    Scalar(Scalar),
}

impl<T: Into<HostArray>> From<T> for Input {
    fn from(a: T) -> Input {
        Input::Array(a.into())
    }
}
impl From<Scalar> for Input {
    fn from(s: Scalar) -> Input {
        Input::Scalar(s)
    }
}

/// One output: the parameter's name and what the kernels wrote into it.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub name: String,
    pub array: HostArray,
}

/// Inputs that do not fit a function, or a failure running it.
#[derive(Debug, Error)]
pub enum ArrayError {
    #[error("`{func}` takes {} inputs ({}), got {got}", expected.len(), expected.join(", "))]
    InputCount {
        func: String,
        expected: Vec<String>,
        got: usize,
    },
    #[error("`{func}`: input `{param}` has shape {expected:?}, got {got:?}")]
    Shape {
        func: String,
        param: String,
        expected: Vec<i64>,
        got: Vec<usize>,
    },
    #[error("`{func}`: input `{param}` has dtype {expected}, got {got}")]
    DType {
        func: String,
        param: String,
        expected: DType,
        got: DType,
    },
    #[error("`{func}`: input `{param}` is a {expected}, got a {got}")]
    Kind {
        func: String,
        param: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("`{func}`: output `{param}` is {dtype}, not f32")]
    NotF32 {
        func: String,
        param: String,
        dtype: DType,
    },
    #[error(transparent)]
    Device(#[from] DeviceError),
}

fn written(func: &LoweredFunc, buffer_id: u64) -> bool {
    func.kernels.iter().any(|k| {
        k.buffer_params()
            .any(|(b, a)| b.id() == buffer_id && a.writes())
    })
}

/// The parameters that take inputs (every parameter that no kernel writes), in order.
pub fn input_params(func: &LoweredFunc) -> Vec<&Param> {
    func.params
        .iter()
        .filter(|p| match p {
            Param::Buffer(b) => !written(func, b.id()),
            Param::Scalar(_) => true,
        })
        .collect()
}

/// The parameters that are outputs (buffers some kernel writes), in order.
pub fn output_params(func: &LoweredFunc) -> Vec<&Param> {
    func.params
        .iter()
        .filter(|p| matches!(p, Param::Buffer(b) if written(func, b.id())))
        .collect()
}

/// Builds the full argument list of `func`: `inputs` (checked) for its inputs, poison for
/// its outputs.
pub fn to_args(func: &LoweredFunc, inputs: &[Input]) -> Result<Vec<Arg>, ArrayError> {
    let wanted = input_params(func);
    if wanted.len() != inputs.len() {
        return Err(ArrayError::InputCount {
            func: func.name.clone(),
            expected: wanted.iter().map(|p| p.name().to_string()).collect(),
            got: inputs.len(),
        });
    }
    let mut given = inputs.iter();
    let mut args = Vec::with_capacity(func.params.len());
    for p in &func.params {
        let input = match p {
            Param::Buffer(b) if written(func, b.id()) => {
                let len = b.numel().max(0) as usize;
                args.push(Arg::Tensor(TensorData::poisoned(b.dtype(), len)));
                continue;
            }
            _ => given.next(),
        };
        let Some(input) = input else {
            // Unreachable: the counts were checked above.
            break;
        };
        let kind = |expected, got| ArrayError::Kind {
            func: func.name.clone(),
            param: p.name().to_string(),
            expected,
            got,
        };
        let dtype = |expected, got| ArrayError::DType {
            func: func.name.clone(),
            param: p.name().to_string(),
            expected,
            got,
        };
        match (p, input) {
            (Param::Buffer(b), Input::Array(a)) => {
                if storage_dtype(b.dtype()) != a.dtype() {
                    return Err(dtype(b.dtype(), a.dtype()));
                }
                let same = b.shape().len() == a.shape().len()
                    && b.shape()
                        .iter()
                        .zip(a.shape())
                        .all(|(&e, &g)| e >= 0 && e as usize == g);
                if !same {
                    return Err(ArrayError::Shape {
                        func: func.name.clone(),
                        param: b.name().to_string(),
                        expected: b.shape().to_vec(),
                        got: a.shape().to_vec(),
                    });
                }
                args.push(Arg::Tensor(a.to_tensor_data()));
            }
            (Param::Scalar(v), Input::Scalar(s)) => {
                if storage_dtype(v.dtype()) != s.dtype() {
                    return Err(dtype(v.dtype(), s.dtype()));
                }
                args.push(Arg::Scalar(*s));
            }
            (Param::Buffer(_), Input::Scalar(_)) => return Err(kind("array", "scalar")),
            (Param::Scalar(_), Input::Array(_)) => return Err(kind("scalar", "array")),
        }
    }
    Ok(args)
}

/// Runs `func` on `device` and returns its outputs, shaped as their parameters.
pub fn run<D: Device + ?Sized>(
    device: &mut D,
    func: &LoweredFunc,
    inputs: &[Input],
) -> Result<Vec<Output>, ArrayError> {
    let mut args = to_args(func, inputs)?;
    device.run(func, &mut args)?;
    let mut outputs = Vec::new();
    for (p, arg) in func.params.iter().zip(args) {
        if let (Param::Buffer(b), Arg::Tensor(data)) = (p, arg)
            && written(func, b.id())
        {
            let shape: Vec<usize> = b.shape().iter().map(|&e| e.max(0) as usize).collect();
            let array =
                HostArray::from_tensor_data(data, &shape).ok_or_else(|| ArrayError::Shape {
                    func: func.name.clone(),
                    param: b.name().to_string(),
                    expected: b.shape().to_vec(),
                    got: shape.clone(),
                })?;
            outputs.push(Output {
                name: b.name().to_string(),
                array,
            });
        }
    }
    Ok(outputs)
}

/// [`run`] for functions whose inputs and outputs are all f32 arrays.
pub fn run_f32<D: Device + ?Sized>(
    device: &mut D,
    func: &LoweredFunc,
    inputs: &[ArrayD<f32>],
) -> Result<Vec<ArrayD<f32>>, ArrayError> {
    let inputs: Vec<Input> = inputs.iter().cloned().map(Input::from).collect();
    run(device, func, &inputs)?
        .into_iter()
        .map(|o| {
            let dtype = o.array.dtype();
            o.array.into_f32().ok_or(ArrayError::NotF32 {
                func: func.name.clone(),
                param: o.name,
                dtype,
            })
        })
        .collect()
}

//! `TensorProto` values: initializers, `Constant` nodes' tensors, the backend tests'
//! `input_N.pb`. Floats of any width are held as f32, integers as i64.

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use crate::error::ImportError;
use crate::proto::TensorProto;
use crate::proto::tensor_proto::{DataLocation, DataType};

/// A tensor whose value is known at import time.
#[derive(Clone, Debug)]
pub struct Const {
    /// Its dimensions (empty for a scalar).
    pub dims: Vec<usize>,
    /// Its elements.
    pub data: ConstData,
}

/// A constant's elements, by kind.
#[derive(Clone, Debug)]
pub enum ConstData {
    /// float, float16 or double, held in f32; `dtype` is what the graph runs it in
    /// (F16 for float16, F32 otherwise).
    Float { values: ArrayD<f32>, dtype: DType },
    /// Any integer type, held in i64 (shapes, axes, indices).
    Int(Vec<i64>),
    /// Bools, as 0 and 1 (masks).
    Bool(Vec<i64>),
}

impl Const {
    /// The elements as integers, if they are integers or bools.
    pub fn ints(&self) -> Option<&[i64]> {
        match &self.data {
            ConstData::Int(v) | ConstData::Bool(v) => Some(v),
            ConstData::Float { .. } => None,
        }
    }

    /// The value as a graph holds it: an f32 array and the graph's dtype (integers are
    /// i32 tensors, bools bool ones, their values in f32).
    pub fn to_float(&self) -> (ArrayD<f32>, DType) {
        let array = |v: &[i64]| {
            ArrayD::from_shape_vec(IxDyn(&self.dims), v.iter().map(|&x| x as f32).collect())
                .expect("element count checked when decoded")
        };
        match &self.data {
            ConstData::Float { values, dtype } => (values.clone(), *dtype),
            ConstData::Int(v) => (array(v), DType::I32),
            ConstData::Bool(v) => (array(v), DType::Bool),
        }
    }

    /// The elements as f64, whatever their kind.
    pub fn to_f64(&self) -> Vec<f64> {
        match &self.data {
            ConstData::Float { values, .. } => values.iter().map(|&v| f64::from(v)).collect(),
            ConstData::Int(v) | ConstData::Bool(v) => v.iter().map(|&v| v as f64).collect(),
        }
    }
}

/// The dtype a graph holds a tensor of ONNX element type `data_type` in: float and
/// double as f32, float16 as f16, the integers as i32 (weft indexes in 32 bits on every
/// device), bool as bool; `None` for the rest.
pub fn graph_dtype(data_type: i32) -> Option<DType> {
    Some(match DataType::try_from(data_type).ok()? {
        DataType::Float | DataType::Double => DType::F32,
        DataType::Float16 => DType::F16,
        DataType::Int64
        | DataType::Int32
        | DataType::Int16
        | DataType::Int8
        | DataType::Uint8
        | DataType::Uint16 => DType::I32,
        DataType::Bool => DType::Bool,
        _ => return None,
    })
}

/// ONNX's name of an element type (`FLOAT`, `INT64`, ...).
pub fn type_name(data_type: i32) -> String {
    DataType::try_from(data_type)
        .map(|t| t.as_str_name().to_string())
        .unwrap_or_else(|_| format!("element type {data_type}"))
}

/// The value of `t`, called `name` in errors.
pub fn decode(t: &TensorProto, name: &str) -> Result<Const, ImportError> {
    let err = |what: String| ImportError::Tensor {
        tensor: name.to_string(),
        what,
    };
    if t.data_location == DataLocation::External as i32 || !t.external_data.is_empty() {
        return Err(ImportError::ExternalData(name.to_string()));
    }
    if t.segment.is_some() {
        return Err(err("segmented tensors are not supported".into()));
    }
    let mut dims = Vec::with_capacity(t.dims.len());
    for &d in &t.dims {
        dims.push(usize::try_from(d).map_err(|_| err(format!("negative dimension {d}")))?);
    }
    let n = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| err(format!("dimensions {dims:?} overflow")))?;
    let raw = &t.raw_data;
    // Typed fields hold n values, raw_data n little-endian ones of `width` bytes.
    let counted = |got: usize, unit: &str| {
        if got == n {
            Ok(())
        } else {
            Err(err(format!(
                "holds {got} {unit} for {n} elements of {dims:?}"
            )))
        }
    };
    let chunks = |width: usize| -> Result<std::slice::ChunksExact<'_, u8>, ImportError> {
        if n.checked_mul(width) != Some(raw.len()) {
            return Err(err(format!(
                "raw_data has {} bytes, {n} elements of {} take {}",
                raw.len(),
                type_name(t.data_type),
                n.saturating_mul(width)
            )));
        }
        Ok(raw.chunks_exact(width))
    };
    let float = |values: Vec<f32>, dtype: DType| -> Result<ConstData, ImportError> {
        let values = ArrayD::from_shape_vec(IxDyn(&dims), values)
            .map_err(|e| err(format!("values do not fit {dims:?}: {e}")))?;
        Ok(ConstData::Float { values, dtype })
    };
    let data = match DataType::try_from(t.data_type) {
        Ok(DataType::Float) => {
            let values = if raw.is_empty() {
                counted(t.float_data.len(), "float_data values")?;
                t.float_data.clone()
            } else {
                chunks(4)?
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            };
            float(values, DType::F32)?
        }
        Ok(DataType::Float16) => {
            let values = if raw.is_empty() {
                // float16 values travel as their bit patterns in int32_data.
                counted(t.int32_data.len(), "int32_data values")?;
                t.int32_data
                    .iter()
                    .map(|&b| half::f16::from_bits(b as u16).to_f32())
                    .collect()
            } else {
                chunks(2)?
                    .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect()
            };
            float(values, DType::F16)?
        }
        Ok(DataType::Double) => {
            let values = if raw.is_empty() {
                counted(t.double_data.len(), "double_data values")?;
                t.double_data.iter().map(|&v| v as f32).collect()
            } else {
                chunks(8)?
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
                    .collect()
            };
            float(values, DType::F32)?
        }
        Ok(DataType::Int64) => ConstData::Int(if raw.is_empty() {
            counted(t.int64_data.len(), "int64_data values")?;
            t.int64_data.clone()
        } else {
            chunks(8)?
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        }),
        Ok(
            ty @ (DataType::Int32
            | DataType::Int16
            | DataType::Int8
            | DataType::Uint16
            | DataType::Uint8
            | DataType::Bool),
        ) => (if ty == DataType::Bool {
            ConstData::Bool
        } else {
            ConstData::Int
        })(if raw.is_empty() {
            counted(t.int32_data.len(), "int32_data values")?;
            t.int32_data.iter().map(|&v| i64::from(v)).collect()
        } else {
            let (width, signed) = match ty {
                DataType::Int32 => (4, true),
                DataType::Int16 => (2, true),
                DataType::Uint16 => (2, false),
                DataType::Int8 => (1, true),
                _ => (1, false),
            };
            chunks(width)?
                .map(|c| {
                    let mut b = [0u8; 8];
                    b[..width].copy_from_slice(c);
                    let v = i64::from_le_bytes(b);
                    // Sign-extend from `width` bytes.
                    let shift = 64 - 8 * width as u32;
                    if signed { (v << shift) >> shift } else { v }
                })
                .collect()
        }),
        _ => {
            return Err(err(format!(
                "{} tensors are not supported (weft holds float, float16, double and integer constants)",
                type_name(t.data_type)
            )));
        }
    };
    Ok(Const { dims, data })
}

/// A float tensor (`input_0.pb` of ONNX's backend tests, say) as an f32 array, for
/// tests and tools that feed models.
pub fn tensor_to_array(t: &TensorProto) -> Result<ArrayD<f32>, ImportError> {
    let c = decode(t, &t.name)?;
    Ok(c.to_float().0)
}

/// The value of `t` as [`ImportOptions::constants`](crate::ImportOptions) takes it (the
/// backend tests' `input_N.pb`, bound at import): floats in f32, integers in i64, bools.
pub fn tensor_to_const(t: &TensorProto) -> Result<Const, ImportError> {
    decode(t, &t.name)
}

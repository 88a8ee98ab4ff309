//! Host-side tensor data: what the interpreter and the runtimes read and write.

use half::f16;

use crate::dtype::DType;

/// The contents of one buffer, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    F16(Vec<f16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
}

impl TensorData {
    /// `len` elements of `dtype`, all set to a poison value (NaN for floats, a large
    /// recognisable pattern for integers), so that an element a kernel never writes is
    /// caught by comparison with a reference.
    pub fn poisoned(dtype: DType, len: usize) -> TensorData {
        match dtype {
            DType::F32 => TensorData::F32(vec![f32::NAN; len]),
            DType::F16 => TensorData::F16(vec![f16::NAN; len]),
            DType::I32 => TensorData::I32(vec![0x7eadbeef; len]),
            DType::U32 | DType::Bool => TensorData::U32(vec![0xdeadbeef; len]),
        }
    }

    /// `len` zeros of `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> TensorData {
        match dtype {
            DType::F32 => TensorData::F32(vec![0.0; len]),
            DType::F16 => TensorData::F16(vec![f16::ZERO; len]),
            DType::I32 => TensorData::I32(vec![0; len]),
            DType::U32 | DType::Bool => TensorData::U32(vec![0; len]),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F16(_) => DType::F16,
            TensorData::I32(_) => DType::I32,
            TensorData::U32(_) => DType::U32,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F16(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::U32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as `f64`.
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        Some(match self {
            TensorData::F32(v) => *v.get(i)? as f64,
            TensorData::F16(v) => v.get(i)?.to_f64(),
            TensorData::I32(v) => *v.get(i)? as f64,
            TensorData::U32(v) => *v.get(i)? as f64,
        })
    }

    /// All elements as `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.len()).filter_map(|i| self.get_f64(i)).collect()
    }

    /// The raw bytes (little-endian, as devices store them).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Rebuilds data of `dtype` from raw little-endian bytes (trailing bytes that do not
    /// make a whole element are ignored).
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> TensorData {
        match dtype {
            DType::F32 => TensorData::F32(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            DType::F16 => TensorData::F16(
                bytes
                    .chunks_exact(2)
                    .map(|c| f16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
            DType::I32 => TensorData::I32(
                bytes
                    .chunks_exact(4)
                    .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            DType::U32 | DType::Bool => TensorData::U32(
                bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
        }
    }
}

/// A scalar argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    F32(f32),
    F16(f16),
    I32(i32),
    U32(u32),
}

impl Scalar {
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::F16(_) => DType::F16,
            Scalar::I32(_) => DType::I32,
            Scalar::U32(_) => DType::U32,
        }
    }
}

/// One argument of a lowered function, in parameter order.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor(TensorData),
    Scalar(Scalar),
}

//! [`Tensor`]: a graph's values — name, static shape, element type, memory layout, and
//! the data of weights and constants.

use std::sync::Arc;

use ndarray::ArrayD;
use weft_ir::dtype::DType;

/// One tensor: its name, static shape and element type, and its value where it is known
/// at compile time (a weight, a constant).
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// The order its elements are kept in on the device (the shape stays logical).
    pub layout: Layout,
    /// The value of a weight or constant (f32, whatever `dtype` the model runs it in:
    /// a cast to f16 happens where it is uploaded). `None` for inputs and computed
    /// tensors.
    pub data: Option<Arc<ArrayD<f32>>>,
}

impl Tensor {
    /// Elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// True for a weight or constant.
    pub fn is_constant(&self) -> bool {
        self.data.is_some()
    }
}

/// The order a tensor's elements are kept in memory. The shape is always the logical
/// (ONNX) one; a layout only says how it is laid out on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Row-major in the logical shape (NCHW for activations, OIHW for filters).
    #[default]
    RowMajor,
    /// Channels last for a rank-4 tensor: NHWC activations, OHWI filters (what matrix
    /// units want for implicit-GEMM convolutions).
    ChannelsLast,
    /// A filter `[K, C, R, S]` stored `[C, R, S, K]`: the B matrix of an NCHW implicit
    /// GEMM (reduction index `(c, r, s)` by output channel) row-major.
    FilterCrsk,
    /// A filter `[K, C, R, S]` stored `[R, S, C, K]` (HWIO): the B matrix of an NHWC
    /// implicit GEMM (reduction index `(r, s, c)` by output channel) row-major.
    FilterRsck,
    /// A matrix `[N, K]` stored `[K, N]`: a Gemm's `transB` operand as the row-major B
    /// matrix the product reads.
    Transposed,
}

/// A tensor of a graph, by index into [`crate::Graph::tensors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub usize);

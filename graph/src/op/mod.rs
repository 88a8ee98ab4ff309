//! The typed operators of a graph, one module per op (or op family), each holding what
//! the op is: its attributes, shape and dtype inference, float64 reference, its ONNX
//! import (versions and attributes) and export, and how the partition groups it and the
//! lowering computes it — through [`OpDef`], the one interface the rest of the compiler
//! calls. [`Op::def`] is the one `match` that knows every op; every other question about
//! an op goes through it, so a new op is one module, one variant and one arm here
//! (`docs/architecture.md`, "Adding an ONNX op").
//!
//! Tensors are in ONNX's logical layouts (NCHW activations, OIHW filters); where a tensor
//! is kept in memory in another order (NHWC for fp16 convolutions on matrix units) is the
//! lowering's business, not the op's.

mod attention;
mod batch_norm;
mod binary;
mod cast;
mod clip;
mod concat;
mod conv;
mod expand;
mod export;
mod gather;
mod identity;
mod inline;
mod is_nan;
mod layer_norm;
mod loss;
pub mod onnx;
mod pad;
mod pool;
mod product;
mod reduce;
mod reshape;
mod rotary;
mod scatter;
mod select;
pub mod shapes;
mod slice;
mod softmax;
pub mod symbolic;
mod tensor_scatter;
mod tile;
mod transpose;
mod trilu;
mod unary;

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use crate::tensor::Tensor;

pub use attention::Attention;
pub use batch_norm::BatchNorm;
pub use binary::Binary;
pub use cast::{Cast, cast};
pub use clip::Clip;
pub use concat::Concat;
pub use conv::Conv;
pub use expand::Expand;
pub use export::{Attribute, Constant, EXPORT_OPSET, ExportNode};
pub use gather::{Gather, GatherElements, GatherNd, first_outside};
pub use identity::Identity;
pub use inline::{Inline, broadcast_index};
pub use is_nan::IsNaN;
pub use layer_norm::LayerNorm;
pub use pad::{Pad, PadMode};
pub use pool::{GlobalPool, Pool, PoolKind};
pub use product::{Gemm, MatMul};
pub use reduce::{Reduce, ReduceKind};
pub use reshape::{Flatten, Reshape, reindex, resolve_reshape};
pub use rotary::Rotary;
pub use scatter::{ScatterElements, ScatterNd, ScatterReduction};
pub use select::Where;
pub use slice::{Slice, resolve_slice};
pub use softmax::Softmax;
pub use tensor_scatter::TensorScatter;
pub use tile::Tile;
pub use transpose::Transpose;
pub use trilu::Trilu;
pub use unary::{Unary, erf};

/// One operator and its attributes; every op has one output. Each variant's payload is
/// defined, with everything about the op, in the op's own module.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// 2-D convolution ([`Conv`]).
    Conv(Conv),
    /// Inference batch normalization ([`BatchNorm`]).
    BatchNorm(BatchNorm),
    /// An elementwise function of one input ([`Unary`]).
    Unary(Unary),
    /// An elementwise function of two inputs with NumPy broadcasting ([`Binary`]).
    Binary(Binary),
    /// `min(max(x, min), max)` ([`Clip`]).
    Clip(Clip),
    /// Max or average pooling over a window ([`Pool`]).
    Pool(Pool),
    /// Pooling over the whole of H and W ([`GlobalPool`]).
    GlobalPool(GlobalPool),
    /// Inputs joined along an axis ([`Concat`]).
    Concat(Concat),
    /// `[d0, ..., dn]` → a matrix ([`Flatten`]).
    Flatten(Flatten),
    /// The same elements in another shape ([`Reshape`]).
    Reshape(Reshape),
    /// A general matrix product ([`Gemm`]).
    Gemm(Gemm),
    /// Matrix product with NumPy's batching rules ([`MatMul`]).
    MatMul,
    /// The input unchanged ([`Identity`]).
    Identity,
    /// Dimensions permuted ([`Transpose`]).
    Transpose(Transpose),
    /// A strided window of the input ([`Slice`]).
    Slice(Slice),
    /// The input broadcast to a shape ([`Expand`]).
    Expand(Expand),
    /// `cond ? x : y` ([`Where`]).
    Where,
    /// True where the input is NaN ([`IsNaN`]).
    IsNaN,
    /// Each element converted to another type ([`Cast`]).
    Cast(Cast),
    /// Slices picked by indices ([`Gather`]).
    Gather(Gather),
    /// Elements picked by indices along an axis ([`GatherElements`]).
    GatherElements(GatherElements),
    /// Slices addressed by index tuples ([`GatherNd`]).
    GatherNd,
    /// `exp(x − max) / Σ exp(x − max)` along an axis ([`Softmax`]).
    Softmax(Softmax),
    /// Normalization over the trailing dimensions ([`LayerNorm`]).
    LayerNorm(LayerNorm),
    /// A sum, mean, maximum or minimum over axes ([`Reduce`]).
    Reduce(Reduce),
    /// Scaled dot-product attention ([`Attention`]).
    Attention(Attention),
    /// The upper or lower triangle of matrices ([`Trilu`]).
    Trilu(Trilu),
    /// Padded (or cropped) along each dimension ([`Pad`]).
    Pad(Pad),
    /// Repeated along each dimension ([`Tile`]).
    Tile(Tile),
    /// Updates written to (or combined with) elements along an axis
    /// ([`ScatterElements`]).
    ScatterElements(ScatterElements),
    /// Updates written to (or combined with) slices addressed by index tuples
    /// ([`ScatterNd`]).
    ScatterNd(ScatterNd),
    /// Rows of a cache replaced at positions the graph computes ([`TensorScatter`]).
    TensorScatter(TensorScatter),
    /// `x · cos + rotate_half(x) · sin` over the last axis ([`Rotary`]).
    Rotary,
}

impl Op {
    /// What the op is: the one place that knows every variant.
    pub fn def(&self) -> &dyn OpDef {
        match self {
            Op::Conv(o) => o,
            Op::BatchNorm(o) => o,
            Op::Unary(o) => o,
            Op::Binary(o) => o,
            Op::Clip(o) => o,
            Op::Pool(o) => o,
            Op::GlobalPool(o) => o,
            Op::Concat(o) => o,
            Op::Flatten(o) => o,
            Op::Reshape(o) => o,
            Op::Gemm(o) => o,
            Op::MatMul => &MatMul,
            Op::Identity => &Identity,
            Op::Transpose(o) => o,
            Op::Slice(o) => o,
            Op::Expand(o) => o,
            Op::Where => &Where,
            Op::IsNaN => &IsNaN,
            Op::Cast(o) => o,
            Op::Gather(o) => o,
            Op::GatherElements(o) => o,
            Op::GatherNd => &GatherNd,
            Op::Softmax(o) => o,
            Op::LayerNorm(o) => o,
            Op::Reduce(o) => o,
            Op::Attention(o) => o,
            Op::Trilu(o) => o,
            Op::Pad(o) => o,
            Op::Tile(o) => o,
            Op::ScatterElements(o) => o,
            Op::ScatterNd(o) => o,
            Op::TensorScatter(o) => o,
            Op::Rotary => &Rotary,
        }
    }

    /// The op's name as ONNX writes it (`Conv`, `Relu`, `Add`, ...).
    pub fn name(&self) -> &'static str {
        self.def().name()
    }

    /// Every ONNX op type the ops' modules import, with its versions and converter.
    pub fn onnx_ops() -> impl Iterator<Item = &'static onnx::OnnxOp> {
        [
            attention::ONNX,
            batch_norm::ONNX,
            binary::ONNX,
            cast::ONNX,
            clip::ONNX,
            concat::ONNX,
            conv::ONNX,
            expand::ONNX,
            gather::ONNX,
            identity::ONNX,
            is_nan::ONNX,
            layer_norm::ONNX,
            loss::ONNX,
            pad::ONNX,
            pool::ONNX,
            product::ONNX,
            reduce::ONNX,
            reshape::ONNX,
            scatter::ONNX,
            select::ONNX,
            slice::ONNX,
            softmax::ONNX,
            tensor_scatter::ONNX,
            tile::ONNX,
            transpose::ONNX,
            trilu::ONNX,
            unary::ONNX,
        ]
        .into_iter()
        .flatten()
    }

    /// How the partition groups the op and which lowering computes it.
    pub fn role(&self) -> Role<'_> {
        self.def().role()
    }

    /// True for ops whose every output element reads at most one element of each input
    /// (elementwise, broadcasting, layout changes): what post-scheduling fusion may put
    /// before or after an anchor.
    pub fn is_injective(&self) -> bool {
        matches!(self.role(), Role::Injective(_) | Role::Join { .. })
    }

    /// True for the reductions the reduction schedules run as groups of their own:
    /// pooling, softmax, layer norm, the Reduce ops.
    pub fn is_reduction(&self) -> bool {
        matches!(self.role(), Role::Reduction(_))
    }

    /// True for the compute-heavy ops a sub-graph is built around (Hidet's anchors).
    pub fn is_anchor(&self) -> bool {
        matches!(self.role(), Role::Anchor(_))
    }
}

/// Everything weft knows about one op, implemented by each op's module. Every method but
/// [`OpDef::symbolic`] is required, so the compiler lists what a new op still needs.
pub trait OpDef {
    /// The op's name as ONNX writes it.
    fn name(&self) -> &'static str;

    /// The attributes as the graph prints them after the name: `(axis=1)`, or nothing.
    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;

    /// The output's shape and dtype for `inputs`, or what is wrong with them (naming
    /// the input and what was expected; the graph adds the node).
    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String>;

    /// The output in float64, for inputs whose shapes [`OpDef::infer`] accepted.
    fn reference(&self, inputs: &[&ArrayD<f64>]) -> ArrayD<f64>;

    /// How the partition groups it and which lowering computes it.
    fn role(&self) -> Role<'_>;

    /// For an injective op ([`Role::Injective`], [`Role::Join`]): its output's value at
    /// logical index `idx`, in f32, from its inputs' values — what the lowering inlines
    /// into a kernel's loads or stores. `None` for every other op.
    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr>;

    /// The op's ONNX node: its attributes, constant inputs and the opset it needs; an
    /// error where ONNX cannot express it.
    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String>;

    /// Multiply-adds to compute the output (its element count for everything but the
    /// anchors): what decides whether the float64 reference is affordable.
    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64;

    /// How the op reads input `input` where it holds integers: as data, as indices into
    /// a dimension (which random inputs must respect), or passed on unchanged.
    fn index_use(&self, input: usize, inputs: &[&Tensor]) -> IndexUse;

    /// How the op carries a symbolic dimension some input holds
    /// ([`symbolic::Carry`]): along which axes of its output, whether it mixes elements
    /// across it (and how the mixing is bounded to the run's length), or why weft
    /// cannot take it. The one method with a default, the refusal: an op nobody has
    /// looked at with symbols in mind is refused, never run at the wrong length.
    fn symbolic(&self, x: &symbolic::SymbolicIn<'_>) -> symbolic::Carry {
        x.refuse(self.name())
    }
}

/// How an op reads an integer input ([`OpDef::index_use`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexUse {
    /// As values.
    Data,
    /// As indices into a dimension of this many rows (`[-n, n)`; ONNX makes any other
    /// value an error: [`crate::indices`]).
    Rows(usize),
    /// As index tuples into the first dimensions of input 0: position `j` of the last
    /// axis indexes dimension `j` (ONNX's GatherND and ScatterND). `fewest` is the fewest
    /// rows of any dimension of input 0, what random inputs are drawn under.
    Tuples { fewest: usize },
    /// Passed on unchanged (a reshape, an identity, a cast): its readers decide.
    Through,
}

/// How the partition groups an op and which lowering computes it, with what that
/// lowering reads of the op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role<'a> {
    /// A compute-heavy op a group is built around, scheduled by a template.
    Anchor(Anchor<'a>),
    /// A reduction, a group of its own scheduled by a reduction schedule.
    Reduction(Reduction<'a>),
    /// Elementwise or a layout change: computed inline where it is read
    /// ([`OpDef::inline`]), or as an anchor's epilogue where [`Epilogue`] allows.
    Injective(Epilogue),
    /// Joins its inputs along `axis`: never computed inside a reader, and where each
    /// input is a group of its own read by nothing else, those groups write into its
    /// slices and it runs no kernel.
    Join { axis: usize },
    /// Writes rows of its input 0 at positions it reads from the graph (a KV cache's
    /// update): always a group of its own, never inside a reader or an anchor's
    /// epilogue; in place where `partition::in_place` says so (a kernel over the new rows only,
    /// the output in the input's buffer), else computed as an injective op.
    Update(&'a TensorScatter),
}

/// The anchors, by the template family that schedules them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Anchor<'a> {
    /// A convolution: implicit GEMM, depthwise, Winograd or direct.
    Conv(&'a Conv),
    /// A matrix product on a matmul template.
    Product(Product<'a>),
    /// Fused attention.
    Attention(&'a Attention),
}

/// The matrix products.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Product<'a> {
    Gemm(&'a Gemm),
    MatMul,
}

/// The reductions, by the schedule that runs them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction<'a> {
    /// A window over H and W (pooling), one thread per output.
    Window(Window<'a>),
    /// A normalization of rows by the rows template.
    Rows(Rows<'a>),
    /// A sum, mean, maximum or minimum over axes by the rows template.
    Reduce(&'a Reduce),
}

/// The pooling windows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Window<'a> {
    Pool(&'a Pool),
    Global(&'a GlobalPool),
}

/// The normalizations of rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rows<'a> {
    Softmax(&'a Softmax),
    LayerNorm(&'a LayerNorm),
}

/// Where an injective op may follow an anchor in its stores (post-scheduling fusion
/// rewrites each link into the anchor's store: it must map one stored element to one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// Never: it stays a prologue of its reader, or a group of its own.
    Never,
    /// Elementwise on its one input.
    Pointwise,
    /// Elementwise on several inputs: where its output has the anchor's shape (a
    /// broadcast of the anchor's output would store one element twice).
    SameShape,
    /// Elementwise where the anchor's output is its input 0 (batch norm's statistics
    /// are per channel).
    FirstInput,
    /// A reshape: not after a permutation, which it could merge axes of.
    Reshape,
    /// A permutation of the anchor's output, written where it belongs.
    Permute,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let def = self.def();
        f.write_str(def.name())?;
        def.fmt_attrs(f)
    }
}

/// A bool as a number: 1 or 0 (the float64 reference's bools).
pub(crate) fn truth(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

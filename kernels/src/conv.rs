//! The te pieces a whole convolution is written with: its placeholders in a memory
//! [`Layout`], the element reads at logical indices, the output's axes, the fp32 and fp16
//! epilogues, and the `direct` schedule's one step. A convolution's definition and the
//! implicit-GEMM builder ([`crate::implicit_gemm`]) are written with the same pieces, so
//! that the definition and every build of it agree on names, parameters and layouts.
//!
//! Sizes come as a [`ConvGeometry`], the implicit GEMM's own description of a convolution;
//! which convolution (element type, layout, bias) as a [`Variant`].

use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::schedule::{BlockRV, Schedule, ScheduleError};

use crate::conv_views::{ConvGeometry, ConvLayout};

/// The memory layout of input, filter and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Input `[N, H, W, C]`, filter `[R, S, C, K]`, output `[N, OH, OW, K]`.
    Nhwc,
    /// Input `[N, C, H, W]`, filter `[K, C, R, S]`, output `[N, K, OH, OW]`.
    Nchw,
}

impl Layout {
    /// The implicit GEMM's reduction order over this layout: channels innermost for
    /// NHWC, `(c, r, s)` for NCHW.
    pub fn views(self) -> ConvLayout {
        match self {
            Layout::Nhwc => ConvLayout::Nhwc,
            Layout::Nchw => ConvLayout::Nchw,
        }
    }
}

/// Which convolution is built: what a definition and the implicit-GEMM build are
/// parameterised by. The caller passes its own, so that nothing is read back from a
/// name.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// The Func's name (the kernels are named after it).
    pub name: &'static str,
    /// The element type of the inputs and the output (sums are f32 either way).
    pub dtype: DType,
    /// How input, filter and output lie in memory.
    pub layout: Layout,
    /// Bias and ReLU after the convolution (a folded BatchNorm).
    pub bias: bool,
}

/// Input, filter and (with a bias) bias placeholders, of the variant's type and layout.
pub fn placeholders(g: &ConvGeometry, v: &Variant) -> (Buffer, Buffer, Option<Buffer>) {
    let (x, w) = match v.layout {
        Layout::Nhwc => (
            te::placeholder("x", &[g.n, g.h, g.w, g.c], v.dtype),
            te::placeholder("w", &[g.r, g.s, g.c, g.k], v.dtype),
        ),
        Layout::Nchw => (
            te::placeholder("x", &[g.n, g.c, g.h, g.w], v.dtype),
            te::placeholder("w", &[g.k, g.c, g.r, g.s], v.dtype),
        ),
    };
    let b = v.bias.then(|| te::placeholder("bias", &[g.k], v.dtype));
    (x, w, b)
}

/// The output's axes in its layout, and where `(n, k, oh, ow)` sit among them.
pub fn out_axes(g: &ConvGeometry, layout: Layout) -> ([(&'static str, i64); 4], [usize; 4]) {
    match layout {
        Layout::Nhwc => (
            [("n", g.n), ("oh", g.oh), ("ow", g.ow), ("k", g.k)],
            [0, 3, 1, 2],
        ),
        Layout::Nchw => (
            [("n", g.n), ("k", g.k), ("oh", g.oh), ("ow", g.ow)],
            [0, 1, 2, 3],
        ),
    }
}

/// The input element at logical `[n, c, ih, iw]`, stored in `layout`.
pub fn input(x: &Buffer, layout: Layout, [n, c, ih, iw]: [Expr; 4]) -> Expr {
    match layout {
        Layout::Nhwc => x.at(&[n, ih, iw, c]),
        Layout::Nchw => x.at(&[n, c, ih, iw]),
    }
}

/// The filter element for output channel `k`, input channel `c`, position `(r, s)`.
pub fn filter(w: &Buffer, layout: Layout, [k, c, r, s]: [Expr; 4]) -> Expr {
    match layout {
        Layout::Nhwc => w.at(&[r, s, c, k]),
        Layout::Nchw => w.at(&[k, c, r, s]),
    }
}

/// The fp32 epilogue: `z = relu(y + bias[k])`, a tensor of its own over the convolution
/// `y` (so that the unfused build can store `y` and run it as a second kernel).
pub fn bias_relu(y: &Buffer, bias: &Buffer, g: &ConvGeometry, layout: Layout) -> Buffer {
    let (axes, [_, pk, _, _]) = out_axes(g, layout);
    te::compute("z", &axes, |i| {
        te::maximum(y.at(i) + bias.at(&[&i[pk]]), 0.0f32)
    })
}

/// The fp16 epilogue: what an f32 sum becomes, fp16, after bias and ReLU (applied in
/// f32, before the one rounding) when there is a bias.
pub fn finish(acc: Expr, bias: Option<&Buffer>, k: &Expr) -> Expr {
    match bias {
        Some(b) => te::maximum(acc + b.at(&[k]).cast(DType::F32), 0.0f32).cast(DType::F16),
        None => acc.cast(DType::F16),
    }
}

/// `func` with its parameters in a convolution's order: x, w, (bias), output (fusion
/// lists the inputs as the anchor met them).
pub fn in_op_order(mut func: Func) -> Func {
    let order = |name: &str| ["x", "w", "bias"].iter().position(|n| *n == name);
    func.params
        .sort_by_key(|p| order(p.name()).unwrap_or(usize::MAX));
    func
}

/// The `direct` schedule's step for one computed tensor: one thread per output element,
/// 256 threads a block.
pub fn one_thread_per_element(s: &mut Schedule, block: BlockRV) -> Result<(), ScheduleError> {
    let loops = s.get_loops(block)?;
    let fused = s.fuse(&loops[..4])?;
    let parts = s.split(fused, &[None, Some(256)])?;
    s.bind(parts[0], ThreadAxis::BlockIdxX)?;
    s.bind(parts[1], ThreadAxis::ThreadIdxX)?;
    Ok(())
}

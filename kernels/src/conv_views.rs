//! The implicit GEMM's views of a convolution: the im2col matrix `x_cols` (GEMM row
//! `i → (n, oh, ow)`, reduction index `kk → (c, r, s)`) and the filter as the
//! `[C·R·S, K]` matrix `w_cols`, as te computes a matmul template reads through its
//! prologues ([`weft_ir::fusion`]), and the map from an output pixel back to its GEMM row
//! that the epilogue reads the product with.
//!
//! One piece of code for every implicit-GEMM convolution: the benchmark workloads'
//! ([`super::implicit_gemm`]) read their placeholders, the whole-model compiler's
//! convolution anchors read the group's values (layouts, inlined producers, a padded
//! copy, zero taps). The caller says how an element is read — `x` at logical
//! `[n, c, ih, iw]`, `w` at `[k, c, r, s]` — and the views do the rest: the index
//! arithmetic, the padding predicate, the names (`x_cols`, `w_cols`, `i`, `kk`, `j`).
//!
//! The expression trees are exactly those the two builders wrote before they shared
//! this module, so the emitted code of every workload and model is what it was.

use weft_ir::prelude::*;

/// How the reduction index `kk` walks `(c, r, s)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvLayout {
    /// Channels innermost, `kk → (r, s, c)`: consecutive `kk` walk one input pixel's
    /// channels (an NHWC input), and an HWIO filter *is* the `[R·S·C, K]` matrix.
    Nhwc,
    /// `kk → (c, r, s)`, as an NCHW input and an OIHW filter lie.
    Nchw,
}

/// A convolution as its views read it: sizes, strides, padding and dilation.
#[derive(Clone, Copy, Debug)]
pub struct ConvGeometry {
    /// Batch.
    pub n: i64,
    /// The input channels one output reads (all of them: the views are of one group).
    pub c: i64,
    /// Input height and width.
    pub h: i64,
    pub w: i64,
    /// Output channels.
    pub k: i64,
    /// Window height and width.
    pub r: i64,
    pub s: i64,
    /// Output height and width.
    pub oh: i64,
    pub ow: i64,
    /// Vertical and horizontal stride.
    pub strides: [i64; 2],
    /// The padding before the first row and before the first column.
    pub pads: [i64; 2],
    /// Vertical and horizontal dilation. `None`: undilated, the window position added
    /// as it is; `Some` multiplies it, by 1 too (the two expression trees the workloads
    /// and the model have always emitted).
    pub dilations: Option<[i64; 2]>,
}

impl ConvGeometry {
    /// The implicit GEMM's product `(m, n, k)`: `n·oh·ow × k × c·r·s`.
    pub fn gemm(&self) -> (i64, i64, i64) {
        (self.n * self.oh * self.ow, self.k, self.c * self.r * self.s)
    }

    /// The reduction index `kk` as `[c, r, s]`.
    pub fn crs(&self, layout: ConvLayout, kk: &Expr) -> [Expr; 3] {
        match layout {
            ConvLayout::Nhwc => [
                kk.clone() % self.c,
                kk.clone() / (self.s * self.c),
                kk.clone() / self.c % self.s,
            ],
            ConvLayout::Nchw => [
                kk.clone() / (self.r * self.s),
                kk.clone() / self.s % self.r,
                kk.clone() % self.s,
            ],
        }
    }

    /// GEMM row `row` as the output pixel `[n, oh, ow]`.
    pub fn pixel(&self, row: &Expr) -> [Expr; 3] {
        [
            row.clone() / (self.oh * self.ow),
            row.clone() / self.ow % self.oh,
            row.clone() % self.ow,
        ]
    }

    /// The GEMM row of output pixel `[n, oh, ow]` (the inverse of [`Self::pixel`]): where
    /// an epilogue reads the product.
    pub fn row(&self, [n, oh, ow]: [Expr; 3]) -> Expr {
        n * (self.oh * self.ow) + oh * self.ow + ow
    }

    /// The input element output pixel `(n, oh, ow)` reads at channel `c` and window
    /// position `(r, s)`: `load` of logical `[n, c, ih, iw]` inside the input, zero of
    /// `dtype` in the padding.
    pub fn window(
        &self,
        [n, c, oh, ow, r, s]: [Expr; 6],
        dtype: DType,
        load: impl FnOnce([Expr; 4]) -> Expr,
    ) -> Expr {
        let (r, s) = match self.dilations {
            Some([dr, ds]) => (r * dr, s * ds),
            None => (r, s),
        };
        let ih = oh * self.strides[0] - self.pads[0] + r;
        let iw = ow * self.strides[1] - self.pads[1] + s;
        let inside = te::all([
            ih.clone().ge(0),
            ih.clone().lt(self.h),
            iw.clone().ge(0),
            iw.clone().lt(self.w),
        ]);
        te::if_then_else(inside, load([n, c, ih, iw]), Expr::zero(dtype))
    }
}

/// The im2col view `x_cols[i, kk]`, `[n·oh·ow, c·r·s]`: the input element GEMM row `i`
/// reads at reduction index `kk`, zero (of `dtype`, the operands' type) in the padding.
/// `x` reads the input at logical `[n, c, ih, iw]`.
pub fn x_cols(
    g: &ConvGeometry,
    layout: ConvLayout,
    dtype: DType,
    x: impl FnOnce([Expr; 4]) -> Expr,
) -> Buffer {
    let (m, _, k) = g.gemm();
    te::compute("x_cols", &[("i", m), ("kk", k)], |i| {
        let [c, r, s] = g.crs(layout, &i[1]);
        let [n, oh, ow] = g.pixel(&i[0]);
        g.window([n, c, oh, ow, r, s], dtype, x)
    })
}

/// The filter view `w_cols[kk, j]`, `[c·r·s, k]`. `w` reads the filter at logical
/// `[k, c, r, s]`.
pub fn w_cols(g: &ConvGeometry, layout: ConvLayout, w: impl FnOnce([Expr; 4]) -> Expr) -> Buffer {
    let (_, n, k) = g.gemm();
    te::compute("w_cols", &[("kk", k), ("j", n)], |i| {
        let [c, r, s] = g.crs(layout, &i[0]);
        w([i[1].clone(), c, r, s])
    })
}

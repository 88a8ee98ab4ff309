//! Winograd F(2×2, 3×3) convolution (seed 003: Lavin and Gray's algorithm as TVM
//! schedules it): a 3×3, stride-1 convolution as 16 small matrix products over 4×4 input
//! tiles that overlap by 2, each giving a 2×2 output tile.
//!
//! With `g` a 3×3 filter, `d` a 4×4 input tile and the constant matrices
//!
//! ```text
//!       [1  0 -1  0]        [1    0    0 ]
//! Bᵀ =  [0  1  1  0]    G = [1/2  1/2  1/2]     Aᵀ = [1  1  1  0]
//!       [0 -1  1  0]        [1/2 -1/2  1/2]          [0  1 -1 -1]
//!       [0  1  0 -1]        [0    0    1 ]
//! ```
//!
//! a 2×2 output tile is `Aᵀ [ Σ_c (G g Gᵀ) ⊙ (Bᵀ d Bᵀᵀ) ] A`. The sum over channels of
//! the element-wise products is, for each of the 16 positions `ξ` of the 4×4 tile, a
//! matrix product `M[ξ] = U[ξ] @ V[ξ]` (`K × C` by `C × P`, P the number of tiles). One
//! lowered function of four kernels:
//!
//! 1. the filter transform `U[ξ, k, c] = (G g Gᵀ)[ξ]`, one thread per filter;
//! 2. the input transform `V[ξ, c, p] = (Bᵀ d B)[ξ]`, one thread per 4×4 tile, held in
//!    registers (zero outside the image: the padding and the tiles past its edge);
//! 3. the 16 products as one batched [`super::matmul`] kernel (`blockIdx.z` = ξ). `V` is
//!    stored with the tiles contiguous and `P` rounded up to a multiple of 4, so every
//!    global load of the product is a 128-bit load and its shared layout is the
//!    template's conflict-free one (seed 003 transposed `V` for the same reason);
//! 4. the output transform, one thread per 2×2 output tile, stored where inside the
//!    output (sizes that are not even, such as seed 003's 122, give partial tiles).
//!
//! The transforms are written as sums and differences of named values, so the emitted
//! source holds constant arithmetic (`d0 - d2`, `(t0 + t1 + t2) * 0.5`), not the chains
//! of selects a reduction over a constant matrix lowers to.
//!
//! The batched product takes the matmul template's parameters and space ([`build`],
//! [`op_rule`]).

use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError, load_or};

use super::matmul::{self, MatmulParams};
use weft_codegen_common::TargetLimits;

use super::{BuildError, Config, ceil_div, per_item, rule};

/// Threads per block of the three transform kernels.
const THREADS: i64 = 256;

/// The config with no tuning record, and why: the matmul rule over the 16 batched
/// products of `K × P × C` (P the tiles, rounded up to 4), one grid layer each.
pub fn op_rule(limits: &TargetLimits, d: &WinogradDims) -> (Config, String) {
    let p = rule::Product::whole(d.k, d.p4(), d.c, 16);
    rule::for_op(matmul::rule_config(limits, p))
}

/// Builds the Winograd convolution of `d` (3×3, stride 1) with a matmul `config`
/// ([`matmul::PARAMS`], the batched product's).
pub fn build(d: &WinogradDims, config: &Config) -> Result<Func, BuildError> {
    let p = MatmulParams::from_config(config)?;
    Ok(template(d, &p)?)
}

/// Sizes of a Winograd convolution: `x[n, c, h, w]`, `w[k, c, 3, 3]`, zero padding
/// `pad`, output `[n, k, oh, ow]`.
#[derive(Clone, Copy, Debug)]
pub struct WinogradDims {
    /// Batch.
    pub n: i64,
    /// Input channels.
    pub c: i64,
    /// Input height.
    pub h: i64,
    /// Input width.
    pub w: i64,
    /// Output channels.
    pub k: i64,
    /// Zero padding on every side.
    pub pad: i64,
}

impl WinogradDims {
    /// Output rows and columns.
    pub fn out(&self) -> (i64, i64) {
        (self.h + 2 * self.pad - 2, self.w + 2 * self.pad - 2)
    }
    /// 2×2 output tiles per image, along rows and columns.
    pub fn tiles(&self) -> (i64, i64) {
        let (oh, ow) = self.out();
        (ceil_div(oh, 2), ceil_div(ow, 2))
    }
    /// Tiles of the whole batch.
    pub fn p(&self) -> i64 {
        let (th, tw) = self.tiles();
        self.n * th * tw
    }
    /// Tiles rounded up to a multiple of 4: the row length of `V` and `M`.
    pub fn p4(&self) -> i64 {
        ceil_div(self.p(), 4) * 4
    }
}

/// `p → (image, tile row, tile column)`.
fn tile_of(kb: &mut KernelBuilder, p: &Expr, d: &WinogradDims) -> (Expr, Expr, Expr) {
    let (th, tw) = d.tiles();
    let img = kb.let_("img", p.clone() / (th * tw));
    let ti = kb.let_("ti", p.clone() / tw % th);
    let tj = kb.let_("tj", p.clone() % tw);
    (img, ti, tj)
}

/// Four values: a row or a column of a 4×4 tile.
type Rows = [Expr; 4];

/// `Bᵀ r` for four values `r` (a column of the tile): the input transform's pattern.
fn bt(r: &Rows) -> Rows {
    [
        r[0].clone() - r[2].clone(),
        r[1].clone() + r[2].clone(),
        r[2].clone() - r[1].clone(),
        r[1].clone() - r[3].clone(),
    ]
}

/// `G r` for three values: the filter transform's pattern.
fn g3(r: &[Expr; 3]) -> Rows {
    let half = |e: Expr| e * 0.5f32;
    [
        r[0].clone(),
        half(r[0].clone() + r[1].clone() + r[2].clone()),
        half(r[0].clone() - r[1].clone() + r[2].clone()),
        r[2].clone(),
    ]
}

/// `Aᵀ r` for four values: the output transform's pattern.
fn at2(r: &Rows) -> [Expr; 2] {
    [
        r[0].clone() + r[1].clone() + r[2].clone(),
        r[1].clone() - r[2].clone() - r[3].clone(),
    ]
}

/// Binds each expression to a named `let`, so that later arithmetic reuses the value.
fn lets<const N: usize>(kb: &mut KernelBuilder, name: &str, values: [Expr; N]) -> [Expr; N] {
    values.map(|v| kb.let_(name, v))
}

/// The Winograd convolution at `d`; the 16 products use matmul parameters `p`.
pub fn template(d: &WinogradDims, p: &MatmulParams) -> Result<Func, TemplateError> {
    let (oh, ow) = d.out();
    let mut t = Template::new("winograd_conv2d");
    let x = t.input("x", &[d.n, d.c, d.h, d.w], DType::F32);
    let wt = t.input("w", &[d.k, d.c, 3, 3], DType::F32);
    let y = t.output("y", &[d.n, d.k, oh, ow], DType::F32);
    add_kernels(&mut t, d, &x, &wt, &y, p);
    t.finish()
}

/// The Winograd convolution `y = conv(x, w)` at `d` over given buffers (`x[n, c, h, w]`,
/// `w[k, c, 3, 3]`, `y[n, k, oh, ow]`, f32): te placeholders or computed tensors, into
/// which a model then fuses the views it reads its operands through (prologues, in the
/// filter and input transforms) and its epilogue chain (in the output transform).
pub fn template_over(
    name: &str,
    d: &WinogradDims,
    x: &Buffer,
    w: &Buffer,
    y: &Buffer,
    p: &MatmulParams,
) -> Result<Func, TemplateError> {
    let mut t = Template::new(name);
    for b in [x, w, y] {
        t.param(b);
    }
    add_kernels(&mut t, d, x, w, y, p);
    t.finish()
}

/// Adds the four kernels of the Winograd convolution `y = conv(x, w)` at `d` to `t`.
fn add_kernels(
    t: &mut Template,
    d: &WinogradDims,
    x: &Buffer,
    wt: &Buffer,
    y: &Buffer,
    p: &MatmulParams,
) {
    let (oh, ow) = d.out();
    let (pp, p4) = (d.p(), d.p4());
    let (x, wt, y) = (x.clone(), wt.clone(), y.clone());
    let u = t.temp("U", &[16, d.k, d.c], DType::F32);
    let v = t.temp("V", &[16, d.c, p4], DType::F32);
    let m = t.temp("M", &[16, d.k, p4], DType::F32);

    // 1. U = G g Gᵀ, one thread per (k, c).
    per_item(t, d.k * d.c, THREADS, |kb, idx| {
        let (kk, cc) = (kb.let_("k", idx.clone() / d.c), kb.let_("c", idx % d.c));
        let g: [[Expr; 3]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                wt.at(&[
                    kk.clone(),
                    cc.clone(),
                    Expr::int(i as i64),
                    Expr::int(j as i64),
                ])
            })
        });
        let g: [[Expr; 3]; 3] = g.map(|row| lets(kb, "g", row));
        // Columns of G g (4 rows × 3 columns), then G applied to each of its rows.
        let cols: [Rows; 3] =
            std::array::from_fn(|j| g3(&[g[0][j].clone(), g[1][j].clone(), g[2][j].clone()]));
        let gg: [[Expr; 3]; 4] =
            std::array::from_fn(|i| std::array::from_fn(|j| cols[j][i].clone()));
        let gg = gg.map(|row| lets(kb, "gg", row));
        for (i, row) in gg.iter().enumerate() {
            for (j, value) in g3(row).into_iter().enumerate() {
                let xi = (i * 4 + j) as i64;
                kb.store(&u, [Expr::int(xi), kk.clone(), cc.clone()], value);
            }
        }
    });

    // 2. V = Bᵀ d B, one thread per (c, tile); tiles past `P` are zero.
    per_item(t, d.c * p4, THREADS, |kb, idx| {
        let (cc, tile) = (kb.let_("c", idx.clone() / p4), kb.let_("p", idx % p4));
        let (img, ti, tj) = tile_of(kb, &tile, d);
        let h0 = kb.let_("h0", ti * 2 - d.pad);
        let w0 = kb.let_("w0", tj * 2 - d.pad);
        let real = tile.clone().lt(pp);
        let dt: [Rows; 4] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                let (hh, ww) = (h0.clone() + i as i64, w0.clone() + j as i64);
                let inside = te::all([
                    real.clone(),
                    hh.clone().ge(0),
                    hh.clone().lt(d.h),
                    ww.clone().ge(0),
                    ww.clone().lt(d.w),
                ]);
                load_or(&x, [img.clone(), cc.clone(), hh, ww], inside, 0.0f32)
            })
        });
        let dt = dt.map(|row| lets(kb, "d", row));
        // Bᵀ d: transform each column, then each resulting row by B.
        let cols: [Rows; 4] =
            std::array::from_fn(|j| bt(&std::array::from_fn(|i| dt[i][j].clone())));
        let bd: [Rows; 4] = std::array::from_fn(|i| std::array::from_fn(|j| cols[j][i].clone()));
        let bd = bd.map(|row| lets(kb, "t", row));
        for (i, row) in bd.iter().enumerate() {
            for (j, value) in bt(row).into_iter().enumerate() {
                let xi = (i * 4 + j) as i64;
                kb.store(&v, [Expr::int(xi), cc.clone(), tile.clone()], value);
            }
        }
    });

    // 3. M[ξ] = U[ξ] @ V[ξ], the 16 products batched.
    matmul::add_kernel(t, &u, &v, &m, p);

    // 4. Y = Aᵀ M A, one thread per (k, tile), 2×2 outputs each.
    per_item(t, d.k * pp, THREADS, |kb, idx| {
        let (kk, tile) = (kb.let_("k", idx.clone() / pp), kb.let_("p", idx % pp));
        let mt: [Rows; 4] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                m.at(&[Expr::int((i * 4 + j) as i64), kk.clone(), tile.clone()])
            })
        });
        let mt = mt.map(|row| lets(kb, "m", row));
        let cols: [[Expr; 2]; 4] =
            std::array::from_fn(|j| at2(&std::array::from_fn(|i| mt[i][j].clone())));
        let am: [Rows; 2] = std::array::from_fn(|i| std::array::from_fn(|j| cols[j][i].clone()));
        let am = am.map(|row| lets(kb, "s", row));
        let (img, ti, tj) = tile_of(kb, &tile, d);
        for (i, row) in am.iter().enumerate() {
            for (j, value) in at2(row).into_iter().enumerate() {
                let (r, c) = (ti.clone() * 2 + i as i64, tj.clone() * 2 + j as i64);
                let inside = r.clone().lt(oh).and(c.clone().lt(ow));
                kb.store_if(inside, &y, [img.clone(), kk.clone(), r, c], value);
            }
        }
    });
}

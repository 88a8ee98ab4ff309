//! Tiling helpers the matmul templates share ([`super::matmul`], [`super::matmul_f16`]):
//! how a block's threads cover a tile's loads ([`Coverage`]), the order blocks walk
//! the output tiles in ([`swizzle`]), and the untested loads of whole tiles
//! ([`tile_origin`], [`clamp_to_edge`], [`fetch_k_tile`]). They live apart from either kernel so that one
//! template does not reach into the other's internals.

use weft_ir::arith::simplify;
use weft_ir::mapping::spatial;
use weft_ir::prelude::*;
use weft_ir::template::KernelBuilder;

use super::ceil_div;
use weft_codegen_common::TargetLimits;

/// How the threads of a block cover a `rows × vecs` grid of loads (a vector of `lanes`
/// elements each): `passes` times `spatial(rows_per_pass, vecs_per_pass)`; when a row has
/// more vectors than the block has threads, a row takes `col_passes` passes. When the
/// rows per pass do not divide the rows (a tile of 48 rows, 32 rows a pass), the last
/// pass covers the rest and its other threads load nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coverage {
    /// Loads per thread (the registers it stages them in).
    pub(crate) passes: i64,
    rows: i64,
    /// Read by the fp32 template's padding choice for its transposed A tile.
    pub(crate) rows_per_pass: i64,
    pub(crate) vecs_per_pass: i64,
    col_passes: i64,
    /// See [`Coverage::spread_rows`].
    spread: bool,
}

impl Coverage {
    /// `vecs` and `threads` are powers of two (the configs' checks); `rows` need not be.
    pub(crate) fn new(rows: i64, vecs: i64, threads: i64) -> Coverage {
        if vecs > threads {
            let col_passes = vecs / threads;
            Coverage {
                passes: rows * col_passes,
                rows,
                rows_per_pass: 1,
                vecs_per_pass: threads,
                col_passes,
                spread: false,
            }
        } else {
            let rows_per_pass = (threads / vecs).min(rows);
            Coverage {
                passes: ceil_div(rows, rows_per_pass),
                rows,
                rows_per_pass,
                vecs_per_pass: vecs,
                col_passes: 1,
                spread: false,
            }
        }
    }

    /// For 16-byte copies into shared rows padded by 16 bytes: a store instruction is
    /// served 8 threads at a time, and when a row holds only 2 or 4 vectors those 8
    /// threads cover 4 or 2 consecutive rows, whose 16-byte slots collide in the banks
    /// (rows of 80 bytes: row 1's last slot is row 0's first). Spreading each group of 8
    /// rows so that the 8 threads write rows `a, a + vecs, a + 2·vecs, ...` puts them in
    /// distinct slots; the set of loads is unchanged. Measured on an H100 at 4096³ (bk =
    /// 32, 4 vectors a row): 9.1 M shared-store bank conflicts before.
    pub(crate) fn spread_rows(mut self) -> Coverage {
        self.spread = self.col_passes == 1
            && matches!(self.vecs_per_pass, 2 | 4)
            && self.rows_per_pass % 8 == 0;
        self
    }

    /// Runs `f(pass, row, vec)` for each load of this thread (`pass` indexes its
    /// registers).
    pub(crate) fn each(
        &self,
        k: &mut KernelBuilder,
        tx: &Expr,
        f: &dyn Fn(&mut KernelBuilder, Expr, Expr, Expr),
    ) {
        let c = *self;
        k.unroll("p", c.passes, |k, p| {
            let m = spatial(&[c.rows_per_pass, c.vecs_per_pass]);
            k.for_tasks("r, c", m, tx.clone(), |k, [r, v]| {
                let (row, vec) = if c.col_passes > 1 {
                    (
                        p.clone() / c.col_passes,
                        p.clone() % c.col_passes * c.vecs_per_pass + v,
                    )
                } else if c.spread {
                    // Row r of the pass: group r / 8, slot a = r % 8 / P of thread phase
                    // b = r % P (P = 8 / vecs rows per phase) -> row a + vecs·b.
                    let per_phase = 8 / c.vecs_per_pass;
                    let row = r.clone() / 8 * 8
                        + r.clone() % 8 / per_phase
                        + r % per_phase * c.vecs_per_pass;
                    (p.clone() * c.rows_per_pass + simplify(&row), v)
                } else {
                    (p.clone() * c.rows_per_pass + r, v)
                };
                if c.rows % c.rows_per_pass != 0 {
                    // Only the last pass reaches past the rows; the test is constant in
                    // the others once the passes are unrolled.
                    k.if_(row.clone().lt(c.rows), |k| f(k, p, row, vec));
                } else {
                    f(k, p, row, vec)
                }
            });
        });
    }
}

/// `(tile_m, tile_n)` of block `pid` among `tiles_m × tiles_n` tiles: groups of `g` tile
/// rows, each walked column by column (so the `g · tiles_n` blocks of a group reuse `g`
/// rows of A and every column of B while they are in L2). The divisors are constants: a
/// last, partial group uses its own.
pub(crate) fn swizzle(
    k: &mut KernelBuilder,
    pid: Expr,
    tiles_m: i64,
    tiles_n: i64,
    g: i64,
) -> (Expr, Expr) {
    let g = g.clamp(1, tiles_m);
    if g == 1 {
        let tm = k.let_("tile_m", pid.clone() / tiles_n);
        let tn = k.let_("tile_n", pid % tiles_n);
        return (tm, tn);
    }
    let per_group = g * tiles_n;
    let group = k.let_("group", pid.clone() / per_group);
    let within = k.let_("within", pid % per_group);
    let rem = tiles_m % g;
    let (row, col) = if rem == 0 {
        (within.clone() % g, within / g)
    } else {
        let full = group.clone().lt(tiles_m / g);
        (
            Expr::select(full.clone(), within.clone() % g, within.clone() % rem),
            Expr::select(full, within.clone() / g, within / rem),
        )
    };
    let tm = k.let_("tile_m", group * g + row);
    let tn = k.let_("tile_n", col);
    (tm, tn)
}

/// The first row (or column) of tile `tile` of `size`, at most the last of `tiles`
/// tiles' (`let name = min(tile · size, (tiles − 1) · size)`): always so at run time, and
/// what lets the bounds prover bound untested loads where the swizzle's partial last
/// group (or a fused view's index) hides the tile's range.
pub(crate) fn tile_origin(
    k: &mut KernelBuilder,
    name: &str,
    tile: Expr,
    size: i64,
    tiles: i64,
) -> Expr {
    k.let_(name, (tile * size).min((tiles - 1) * size))
}

/// `i` (a row or column of a block tile, read `lanes` at a time) kept inside a dimension
/// of length `len` that tiles of `tile` may overrun: `min(i, len − lanes)`, aligned to
/// `lanes` when `len` is (the vector path needs both). A row or column past the edge
/// reads the last one: it reaches only outputs that are never stored.
pub(crate) fn clamp_to_edge(i: Expr, len: i64, tile: i64, lanes: i64) -> Expr {
    if len % tile == 0 {
        i
    } else {
        i.min(len - lanes)
    }
}

/// Fetches k tile `tile` (an expression) by `load(k, tile, partial)` if it exists
/// (`tile < k_tiles`), `partial` for the ragged last tile only (where `bk` does not
/// divide k: `ragged`). Where that tile can be among those this call fetches (`first`,
/// the smallest `tile` can be, is below `k_tiles`), a uniform branch separates it, so
/// that every other tile loads without a test of k.
pub(crate) fn fetch_k_tile(
    k: &mut KernelBuilder,
    tile: Expr,
    (k_tiles, ragged, first): (i64, bool, i64),
    load: &dyn Fn(&mut KernelBuilder, Expr, bool),
) {
    let more = tile.clone().lt(k_tiles);
    if ragged && k_tiles > first {
        k.if_else(
            tile.clone().lt(k_tiles - 1),
            |k| load(k, tile.clone(), false),
            |k| k.if_(more, |k| load(k, tile.clone(), true)),
        );
    } else {
        k.if_(more, |k| load(k, tile, false));
    }
}

/// Indices into a global matrix that is one of a batch (`batched`: rank 3, the batch
/// element is the grid layer `blockIdx.z`) or alone (rank 2), as `at(row, col)`.
pub(crate) fn batched_at(
    kb: &KernelBuilder,
    batched: bool,
) -> impl Fn(Expr, Expr) -> Vec<Expr> + use<> {
    let bz = kb.block_z();
    move |row: Expr, col: Expr| {
        if batched {
            vec![bz.clone(), row, col]
        } else {
            vec![row, col]
        }
    }
}

/// The k sub-steps of one block step, most unrolled at once first, that a template picks
/// from where the target's compiler hoists the loads of an unrolled loop
/// ([`weft_codegen_common::TargetLimits::hoists_unrolled_loads`]): 8 sub-steps of loads
/// in flight cover a shared-memory load's latency, and past that the registers go to
/// waiting loads instead of resident warps.
pub(crate) const K_UNROLLS: [i64; 4] = [8, 4, 2, 1];

/// The most sub-steps of [`K_UNROLLS`] dividing `bk` for which `fits` holds.
pub(crate) fn most_unrolled(bk: i64, fits: impl Fn(i64) -> bool) -> Option<i64> {
    K_UNROLLS
        .into_iter()
        .filter(|&ku| bk % ku == 0)
        .find(|&ku| fits(ku))
}

/// The `bk` sub-steps of a block's k step: unrolled whole (`ku` = `bk`), or `ku` at a time
/// inside a loop over `bk / ku`; `body` gets the sub-step.
pub(crate) fn k_sub_steps(
    kb: &mut KernelBuilder,
    bk: i64,
    ku: i64,
    body: impl FnOnce(&mut KernelBuilder, Expr),
) {
    if ku == bk {
        kb.unroll("kk", bk, body);
        return;
    }
    kb.serial("kko", bk / ku, |kb, kko| {
        kb.unroll("kki", ku, |kb, kki| body(kb, kko * ku + kki));
    });
}

/// Registers an implicit GEMM's im2col addresses take beyond what the matmul templates'
/// estimates count, where the compiler hoists unrolled loads (and registers are short):
/// without them 2 of the 124 fp32 configs of gfx1100's space and 2 of its fp16 ones
/// spilled over views, none over matrices (hipcc 5.2, `docs/amd-registers.md`).
const VIEW_ADDRESS_REGISTERS: u64 = 16;

/// The limits a template's space over views (an implicit GEMM's im2col operands) is
/// enumerated, and its rule picks, within: `resources` with [`VIEW_ADDRESS_REGISTERS`]
/// fewer registers where its compiler hoists unrolled loads; elsewhere the same.
pub fn limits_over_views(resources: &TargetLimits) -> TargetLimits {
    let mut r = resources.clone();
    if r.hoists_unrolled_loads {
        r.max_registers = r.max_registers.saturating_sub(VIEW_ADDRESS_REGISTERS);
    }
    r
}

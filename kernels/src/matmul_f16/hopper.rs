//! The fp16 matmul on Hopper's matrix path (`wg` > 0, `cuda -arch=sm_90a`): TMA copies the
//! A and B tiles into a ring of `st` shared stages, each guarded by an mbarrier, and `wg`
//! warpgroups multiply them with `wgmma` straight from shared memory
//! ([`weft_ir::tma`]). Thread 0 issues the copies; every thread waits on the stage's
//! barrier before its warpgroup's `wgmma`s read it.
//!
//! ```text
//! for s in range(st): full[s].init(1)                       # thread 0
//! for s in range(st): tma(A_smem[s] <- A[m0, s·64]), tma(B_smem[s] <- B[s·64, n0])
//! for ko in range(K / 64):
//!     full[ko % st].wait(parity = ko / st % 2)
//!     wgmma.fence
//!     for kk in range(4):                                  # k16 steps of the 64-wide tile
//!         for i in range(fm): acc[i] += A_smem[s][wgi·64·fm + 64i :, 16kk] · B_smem[s][16kk, :]
//!     wgmma.commit; wgmma.wait(1)                          # tile ko - 1's wgmmas are done
//!     barrier
//!     tma tile ko - 1 + st into stage (ko - 1) % st        # thread 0, where there is one
//! wgmma.wait(0); barrier
//! for i in range(fm): acc[i] -> C_stage[wgi] -> C (converted, tested against the edges)
//! ```
//!
//! `C_stage` is laid over the stages (a shared overlay): the block holds the larger of
//! the two, not their sum.
//!
//! Tiles are `64·wg·fm × 16·fn × 64`: each warpgroup computes `fm` m64 × N tiles with
//! `N = 16·fn` (64, 128 or 256). TMA reads zeros outside A and B, so odd M, N and K need
//! no tests until the stores; its tensor maps need rows of a multiple of 16 bytes, so K
//! and N must be multiples of 8.

use weft_ir::fragment::{FragLayout, FragRole, Fragment, MmaShape, WGMMA_M};
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template};
use weft_ir::tma::{Major, ROW, SwizzledTile};

use super::F16Params;
use crate::tiling::{batched_at, swizzle};
use crate::{block_index, ceil_div, grid_for};

/// The k extent of one stage: one 128-byte swizzled row of halves.
pub const BLOCK_K: i64 = ROW;

/// Why `m × n × k` cannot run on the Hopper path, if it cannot: the tensor maps' rows
/// must be multiples of 16 bytes.
pub fn unfit(n: i64, k: i64) -> Option<String> {
    (k % 8 != 0 || n % 8 != 0).then(|| {
        format!(
            "TMA needs rows of a multiple of 16 bytes: k = {k} and n = {n} must be multiples of 8 \
             (use a config with wg = 0)"
        )
    })
}

/// The k tiles each of `parts` parts of a `k`-long reduction walks: a whole number of
/// 64-wide stages, the last part's past `k` read as zeros by TMA.
pub fn part_tiles(k: i64, parts: i64) -> i64 {
    ceil_div(ceil_div(k, BLOCK_K), parts)
}

/// The kernel over placeholders `a` (m × k), `b` (k × n) and `c` (m × n); or, where `c`
/// is `[parts, m, n]` (split-K's partials), one grid layer per part, each over its
/// [`part_tiles`] k tiles, storing its partial product into its layer.
pub(super) fn add_kernel(t: &mut Template, a: &Buffer, b: &Buffer, c: &Buffer, p: &F16Params) {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (bm, bn) = (p.block_m(), p.block_n());
    let groups = p.warps[0] / 4;
    let fm = p.frags[0];
    let stages = p.stages;
    let parts = if c.ndim() == 3 { c.shape()[0] } else { 1 };
    let (tiles_m, tiles_n, k_tiles) = (ceil_div(m, bm), ceil_div(n, bn), part_tiles(k, parts));
    let blocks = tiles_m * tiles_n;
    let grid = grid_for(blocks);
    let boxes_n = bn / ROW;
    let stage_bytes = ((bm + bn) * BLOCK_K * 2) as u32;

    t.kernel([grid[0], grid[1], parts], p.threads(), |kb| {
        let tx = kb.thread_x();
        let pid = block_index(kb, grid);
        // The part's first k tile, and where its results go (its grid layer).
        let first_tile = (parts > 1).then(|| kb.block_z() * k_tiles);
        let at = batched_at(kb, parts > 1);
        let body = |kb: &mut KernelBuilder| {
            let (tile_m, tile_n) = swizzle(kb, pid.clone(), tiles_m, tiles_n, p.group);
            let m0 = kb.let_("m0", tile_m * bm);
            let n0 = kb.let_("n0", tile_n * bn);
            let a_smem = kb.shared("A_smem", &[stages, bm, BLOCK_K], DType::F16);
            let b_smem = kb.shared("B_smem", &[stages, boxes_n, BLOCK_K, ROW], DType::F16);
            // The epilogue's staging tile lies over the stages, which the main loop is done
            // with by then: a block needs the larger of the two, not their sum, so a
            // 128×128 tile in 3 stages leaves room for a second block on a multiprocessor
            // (`docs/wgmma-epilogue.md`).
            let staging = kb.shared_over(
                "C_stage",
                &[groups, WGMMA_M as i64, bn + 4],
                DType::F32,
                &[&a_smem, &b_smem],
            );
            let full = kb.mbarrier("full", stages as u32);
            let shape = MmaShape {
                m: WGMMA_M,
                n: bn as u32,
                k: 16,
            };
            let acc = kb.fragment(
                "acc",
                FragRole::Accumulator,
                shape,
                DType::F32,
                FragLayout::RowMajor,
                fm as u32,
            );
            // k tile `kt` into stage `s`: A's rows from m0, B's 64-column boxes from n0.
            let issue = |kb: &mut KernelBuilder, kt: Expr, s: Expr| {
                kb.mbarrier_expect((&full, s.clone()), stage_bytes);
                let k0 = match &first_tile {
                    Some(first) => (first.clone() + kt) * BLOCK_K,
                    None => kt * BLOCK_K,
                };
                kb.tma_load(
                    &a_smem,
                    [s.clone(), Expr::int(0), Expr::int(0)],
                    a,
                    [m0.clone(), k0.clone()],
                    bm as u32,
                    (&full, s.clone()),
                );
                for j in 0..boxes_n {
                    kb.tma_load(
                        &b_smem,
                        [s.clone(), Expr::int(j), Expr::int(0), Expr::int(0)],
                        b,
                        [k0.clone(), n0.clone() + j * ROW],
                        BLOCK_K as u32,
                        (&full, s.clone()),
                    );
                }
            };
            let leader = tx.clone().eq_(0);
            kb.if_(leader.clone(), |kb| {
                for s in 0..stages {
                    kb.mbarrier_init((&full, Expr::int(s)), 1);
                }
            });
            kb.barrier();
            kb.if_(leader.clone(), |kb| {
                for s in 0..stages.min(k_tiles) {
                    issue(kb, Expr::int(s), Expr::int(s));
                }
            });
            let wgi = kb.let_("wgi", tx.clone() / 128);
            kb.unroll("i", fm, |kb, i| kb.frag_fill(&acc, i, 0.0f32));
            kb.serial("ko", k_tiles, |kb, ko| {
                let s = kb.let_("s", ko.clone() % stages);
                kb.mbarrier_wait((&full, s.clone()), ko.clone() / stages % 2);
                multiply_stage(kb, &acc, (&a_smem, &b_smem), &s, &wgi, fm);
                kb.wgmma_commit();
                // Tile ko - 1's multiplies are done: its stage takes tile ko - 1 + st.
                kb.wgmma_wait(1);
                kb.barrier();
                let next = ko.clone() + (stages - 1);
                let refill = leader
                    .clone()
                    .and(Expr::int(0).lt(ko.clone()))
                    .and(next.clone().lt(k_tiles));
                kb.if_(refill, |kb| {
                    issue(kb, next, (ko.clone() + (stages - 1)) % stages);
                });
            });
            let tile = Tile {
                origin: (&m0, &n0),
                dims: (m, n),
                wgi: &wgi,
                fm,
            };
            store_results(kb, &acc, &staging, &tx, &tile, c, &at);
        };
        if grid[0] * grid[1] > blocks {
            kb.if_(pid.clone().lt(blocks), body);
        } else {
            body(kb);
        }
    });
}

/// One stage's `wgmma`s (after the fence): the stage's 64-wide k tile in four k16 steps,
/// `fm` m64 tiles of warpgroup `wgi` against the stage's B boxes. Shared by the TMA path
/// and the gathered one ([`super::hopper_views`]), whose stages have the same layout.
pub(super) fn multiply_stage(
    kb: &mut KernelBuilder,
    acc: &Fragment,
    (a_smem, b_smem): (&Buffer, &Buffer),
    s: &Expr,
    wgi: &Expr,
    fm: i64,
) {
    kb.wgmma_fence();
    kb.unroll("kk", BLOCK_K / 16, |kb, kk| {
        kb.unroll("i", fm, |kb, i| {
            let row = wgi.clone() * (WGMMA_M as i64 * fm) + i.clone() * WGMMA_M as i64;
            let a_tile = SwizzledTile {
                buffer: a_smem.clone(),
                origin: vec![s.clone(), row, kk.clone() * 16],
                major: Major::K,
                box_elems: 0,
            };
            let b_tile = SwizzledTile {
                buffer: b_smem.clone(),
                origin: vec![s.clone(), Expr::int(0), kk.clone() * 16, Expr::int(0)],
                major: Major::Mn,
                box_elems: BLOCK_K * ROW,
            };
            kb.wgmma((acc, i), a_tile, b_tile);
        });
    });
}

/// Where a block's results go: its tile's origin in C, C's extent, and the warpgroup
/// (`wgi`, with `fm` m64 tiles each).
pub(super) struct Tile<'a> {
    pub origin: (&'a Expr, &'a Expr),
    pub dims: (i64, i64),
    pub wgi: &'a Expr,
    pub fm: i64,
}

/// The epilogue: every warpgroup past its last `wgmma` (a barrier before anyone writes
/// the staging tile over the stages they read), then each accumulator through the
/// warpgroup's staging tile to `c`, converted and tested against its edges.
pub(super) fn store_results(
    kb: &mut KernelBuilder,
    acc: &Fragment,
    staging: &Buffer,
    tx: &Expr,
    tile: &Tile,
    c: &Buffer,
    at: &dyn Fn(Expr, Expr) -> Vec<Expr>,
) {
    let ((m0, n0), (m, n), wgi, fm) = (tile.origin, tile.dims, tile.wgi, tile.fm);
    let bn = acc.shape().n as i64;
    kb.wgmma_wait(0);
    kb.barrier();
    let lane = kb.let_("lane", tx.clone() % 128);
    let per_thread = WGMMA_M as i64 * bn / 128;
    kb.unroll("i", fm, |kb, i| {
        kb.frag_store(
            acc,
            i.clone(),
            staging,
            [wgi.clone(), Expr::int(0), Expr::int(0)],
        );
        kb.barrier();
        let first = m0.clone() + wgi.clone() * (WGMMA_M as i64 * fm) + i.clone() * WGMMA_M as i64;
        let stores = |kb: &mut KernelBuilder, tested: bool| {
            kb.unroll("e", per_thread, |kb, e| {
                let idx = e * 128 + lane.clone();
                let (r, col) = (idx.clone() / bn, idx % bn);
                let row = first.clone() + r.clone();
                let col_g = n0.clone() + col.clone();
                let v = staging.at(&[wgi.clone(), r, col]).cast(c.dtype());
                if tested {
                    let inside = row.clone().lt(m).and(col_g.clone().lt(n));
                    kb.store_if(inside, c, at(row, col_g), v);
                } else {
                    kb.store(c, at(row, col_g), v);
                }
            });
        };
        // A fragment wholly inside C stores without a test per element: the tests were
        // branches that kept the compiler from issuing the loads of a fused epilogue (a
        // residual) ahead of the stores, one round trip an element.
        kb.if_else(
            whole_inside(&first, WGMMA_M as i64, m, n0, bn, n),
            |kb| stores(kb, false),
            |kb| stores(kb, true),
        );
        kb.barrier();
    });
}

/// Whether the `rows × cols` fragment at rows `first..` and columns `col0..` lies wholly
/// inside an `m × n` result: its epilogue then stores without testing each element.
/// Measured on the H200 (2026-11-30, tenth session): ResNet-50's batch-8 layer3 1×1
/// convolution with its residual add ran 12.9 µs in the model against 7.2 µs for the op
/// alone — its 32 stores a thread each behind a branch, each branch's residual load a
/// round trip of its own (SASS: `LDG`, `LDS`, `STG` and a `BRA` an element, in order);
/// with the test split off, 10.0 µs (the 32 loads issued back to back), ConvNeXt-tiny's
/// products at batch 8 498 → 473 µs in all. The mma.sync template's epilogue (8 stores a
/// lane a 16 × 16 fragment, between barriers) was tried the same way and left as it is:
/// its kernels alone moved by ±0.3 µs, and ResNet-50 at batch 1 (nearly all mma.sync)
/// went 357 → 363 µs in the model.
fn whole_inside(first: &Expr, rows: i64, m: i64, col0: &Expr, cols: i64, n: i64) -> Expr {
    (first.clone() + (rows - 1))
        .lt(m)
        .and((col0.clone() + (cols - 1)).lt(n))
}

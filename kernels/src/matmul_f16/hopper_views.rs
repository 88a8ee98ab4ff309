//! Hopper's `wgmma` over computed operands (`wg` > 0 over views: an implicit GEMM's
//! im2col and filter): TMA copies boxes of stored tensors, and an im2col is not one, so
//! here the block's threads gather the tiles with 16-byte `cp.async` copies straight
//! into the 128-byte swizzled stages that `wgmma` reads ([`weft_ir::tma`]: the emitter
//! writes each thread's address through the swizzle, so the IR keeps logical order).
//! Where `b` is stored (a model's HWIO filter, which is the `[R·S·C, K]` matrix) thread
//! 0 copies its tiles by TMA instead, each stage's arrival on an mbarrier that the
//! step waits on before its `wgmma`s.
//!
//! ```text
//! for t in range(st - 2): gather tile t into stage t; barrier
//! for ko in range(K / 64):
//!     barrier                                 # tile ko landed: cp.async wait, fence.proxy.async
//!     gather tile ko + st - 2 into stage (ko + st - 2) % st   # read by tile ko - 2's wgmmas: retired
//!     wgmma.fence
//!     for kk in range(4): for i in range(fm): acc[i] += A_smem[s][.., 16kk] · B_smem[s][16kk, ..]
//!     wgmma.commit; wgmma.wait(1)             # tile ko - 1's wgmmas are done
//! wgmma.wait(0); barrier; epilogue as on the TMA path
//! ```
//!
//! The threads' copies are the generic proxy and `wgmma` reads through the async proxy:
//! each barrier of a kernel with asynchronous copies and `wgmma`s fences the two (CUDA:
//! `fence.proxy.async.shared::cta` after the copies' wait), which the interpreter checks
//! (`hopper_exec`). One stage of the ring is the `wgmma` batch still in flight, so `st`
//! stages keep `st - 2` tiles of copies ahead of the multiplies.

use weft_ir::arith::simplify;
use weft_ir::fragment::{FragLayout, FragRole, MmaShape, WGMMA_M};
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template};
use weft_ir::tma::ROW;

use super::F16Params;
use super::hopper::{BLOCK_K, Tile, multiply_stage, part_tiles, store_results};
use crate::tiling::{Coverage, batched_at, fetch_k_tile, swizzle, tile_origin};
use crate::{block_index, ceil_div, grid_for};

/// Halves per copy: 16 bytes where `len` (the row length of the operand) keeps them
/// aligned, else the widest that divides it.
fn lanes(len: i64) -> i64 {
    [8, 4, 2].into_iter().find(|l| len % l == 0).unwrap_or(1)
}

/// The kernel over `a` (m × k) and `b` (k × n), computed tensors the fusion inlines into
/// the gathers, and `c` (m × n); or, where `c` is `[parts, m, n]` (split-K's partials),
/// one grid layer per part, each over its [`part_tiles`] k tiles (as on the TMA path).
pub(super) fn add_kernel(t: &mut Template, a: &Buffer, b: &Buffer, c: &Buffer, p: &F16Params) {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let parts = if c.ndim() == 3 { c.shape()[0] } else { 1 };
    let (bm, bn) = (p.block_m(), p.block_n());
    let groups = p.warps[0] / 4;
    let fm = p.frags[0];
    let stages = p.stages;
    let ahead = stages - 2;
    let threads = p.threads();
    let (va, vb) = (lanes(k), lanes(n));
    // A stored `b` (a model's HWIO filter read as the `[R·S·C, K]` matrix it is) comes
    // by TMA into the same stages, guarded by an mbarrier a stage; rows of a multiple
    // of 16 bytes only.
    let tma_b = b.producer().is_none() && n % 8 == 0;
    let a_cov = Coverage::new(bm, BLOCK_K / va, threads);
    let b_cov = Coverage::new(BLOCK_K, bn / vb, threads);
    let (tiles_m, tiles_n, k_tiles) = (ceil_div(m, bm), ceil_div(n, bn), part_tiles(k, parts));
    // Unsplit, only the last tile can reach past k; split, a part's tiles are tested
    // (the last parts may lie wholly past k, read as zeros).
    let ragged = k % BLOCK_K != 0 || parts > 1;
    let blocks = tiles_m * tiles_n;
    let grid = grid_for(blocks);
    let boxes_n = bn / ROW;

    t.kernel([grid[0], grid[1], parts], threads, |kb| {
        // A copy is read `ahead` barriers after it was issued (one group of copies a
        // barrier): `cp.async.wait_group ahead - 1`.
        kb.async_pipeline((ahead + 1) as u32);
        let tx = kb.thread_x();
        let pid = block_index(kb, grid);
        // The operands' indices, and where the results go (the part's grid layer).
        let first_tile = (parts > 1).then(|| kb.block_z() * k_tiles);
        let at_ab = batched_at(kb, false);
        let at = batched_at(kb, parts > 1);
        let body = |kb: &mut KernelBuilder| {
            let (tile_m, tile_n) = swizzle(kb, pid.clone(), tiles_m, tiles_n, p.group);
            let m0 = tile_origin(kb, "m0", tile_m, bm, tiles_m);
            let n0 = tile_origin(kb, "n0", tile_n, bn, tiles_n);
            let a_smem = kb.shared("A_smem", &[stages, bm, BLOCK_K], DType::F16);
            let b_smem = kb.shared("B_smem", &[stages, boxes_n, BLOCK_K, ROW], DType::F16);
            let staging = kb.shared_over(
                "C_stage",
                &[groups, WGMMA_M as i64, bn + 4],
                DType::F32,
                &[&a_smem, &b_smem],
            );
            let full = tma_b.then(|| kb.mbarrier("full", stages as u32));
            let acc = kb.fragment(
                "acc",
                FragRole::Accumulator,
                MmaShape {
                    m: WGMMA_M,
                    n: bn as u32,
                    k: 16,
                },
                DType::F32,
                FragLayout::RowMajor,
                fm as u32,
            );
            // Over views a ragged dimension keeps its test (see the mma.sync kernel: a
            // clamped row would hide the view's padding guards from the prover); only the
            // last k tile, where 64 does not divide k, tests k.
            let edge = |i: Expr, len: i64, tile: i64| -> (Expr, Option<Expr>) {
                if len % tile == 0 {
                    (i, None)
                } else {
                    (i.clone(), Some(i.lt(len)))
                }
            };
            // Tile `tile` into stage `s`, zero outside the operands.
            let gather = |kb: &mut KernelBuilder, tile: Expr, s: Expr, partial: bool| {
                let k0 = match &first_tile {
                    Some(first) => (first.clone() + tile) * BLOCK_K,
                    None => tile * BLOCK_K,
                };
                let partial = partial || parts > 1;
                let zero = || Expr::zero(DType::F16);
                a_cov.each(kb, &tx, &|kb, _, r, v| {
                    let (row, row_test) = edge(m0.clone() + r.clone(), m, bm);
                    let col = simplify(&(k0.clone() + v.clone() * va));
                    let inside = Expr::all(
                        [row_test, partial.then(|| col.clone().lt(k))]
                            .into_iter()
                            .flatten(),
                    );
                    let to = [s.clone(), r, v * va];
                    kb.copy_if(va, &a_smem, to, a, at_ab(row, col), inside, zero());
                });
                if let Some(full) = &full {
                    kb.if_(tx.clone().eq_(0), |kb| {
                        kb.mbarrier_expect((full, s.clone()), (BLOCK_K * bn * 2) as u32);
                        for j in 0..boxes_n {
                            kb.tma_load(
                                &b_smem,
                                [s.clone(), Expr::int(j), Expr::int(0), Expr::int(0)],
                                b,
                                [k0.clone(), n0.clone() + j * ROW],
                                BLOCK_K as u32,
                                (full, s.clone()),
                            );
                        }
                    });
                    return;
                }
                b_cov.each(kb, &tx, &|kb, _, r, v| {
                    let row = simplify(&(k0.clone() + r.clone()));
                    let j = v * vb;
                    let (col, col_test) = edge(n0.clone() + j.clone(), n, bn);
                    let inside = Expr::all(
                        [partial.then(|| row.clone().lt(k)), col_test]
                            .into_iter()
                            .flatten(),
                    );
                    let to = [
                        s.clone(),
                        simplify(&(j.clone() / ROW)),
                        r,
                        simplify(&(j % ROW)),
                    ];
                    kb.copy_if(vb, &b_smem, to, b, at_ab(row, col), inside, zero());
                });
            };
            let fetch = |kb: &mut KernelBuilder, tile: Expr, first: i64| {
                fetch_k_tile(kb, tile, (k_tiles, ragged, first), &|kb, tile, partial| {
                    gather(kb, tile.clone(), tile % stages, partial)
                });
            };
            if let Some(full) = &full {
                kb.if_(tx.clone().eq_(0), |kb| {
                    for s in 0..stages {
                        kb.mbarrier_init((full, Expr::int(s)), 1);
                    }
                });
                kb.barrier();
            }
            for s in 0..ahead {
                if s < k_tiles {
                    gather(kb, Expr::int(s), Expr::int(s), ragged && s == k_tiles - 1);
                }
                kb.barrier();
            }
            let wgi = kb.let_("wgi", tx.clone() / 128);
            kb.unroll("i", fm, |kb, i| kb.frag_fill(&acc, i, 0.0f32));
            kb.serial("ko", k_tiles, |kb, ko| {
                // Tile ko is in its stage, and every warpgroup is past tile ko - 2's
                // wgmmas (their wait(1) in the step before), whose stage the next copy
                // fills.
                kb.barrier();
                fetch(kb, ko.clone() + ahead, ahead);
                let s = kb.let_("s", ko.clone() % stages);
                if let Some(full) = &full {
                    kb.mbarrier_wait((full, s.clone()), ko.clone() / stages % 2);
                }
                multiply_stage(kb, &acc, (&a_smem, &b_smem), &s, &wgi, fm);
                kb.wgmma_commit();
                kb.wgmma_wait(1);
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

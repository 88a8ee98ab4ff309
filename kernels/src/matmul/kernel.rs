//! The matmul template's kernel, written with [`weft_ir::template`].

use weft_ir::arith::simplify;
use weft_ir::mapping::spatial;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError};

use super::MatmulParams;
use crate::split_last::{self, LastPart};
use crate::tiling::{
    Coverage, batched_at, clamp_to_edge, fetch_k_tile, k_sub_steps, swizzle, tile_origin,
};
use crate::{block_index, ceil_div, grid_for};

/// Words of padding per row of the transposed A tile: the choice among 0 and 4 (which
/// keep rows 16-byte aligned for vector reads) under which the first warp's stores
/// `A_smem[k][m]` hit the fewest words in one bank.
fn a_padding(bm: i64, cov: &Coverage, lanes: i64) -> i64 {
    let degree = |pad: i64| {
        let mut banks = vec![Vec::new(); 32];
        for t in 0..32.min(cov.rows_per_pass * cov.vecs_per_pass) {
            let (r, v) = (t / cov.vecs_per_pass, t % cov.vecs_per_pass);
            let word = v * lanes * (bm + pad) + r;
            let bank: &mut Vec<i64> = &mut banks[(word % 32) as usize];
            if !bank.contains(&word) {
                bank.push(word);
            }
        }
        banks.iter().map(Vec::len).max().unwrap_or(1)
    };
    if degree(4) < degree(0) { 4 } else { 0 }
}

/// The matmul template at `m × n × k` with parameters `p` (already checked), over new
/// buffers `A`, `B`, `C`.
pub fn template(
    m: i64,
    n: i64,
    k: i64,
    p: &MatmulParams,
) -> Result<weft_ir::func::Func, TemplateError> {
    let a = te::placeholder("A", &[m, k], DType::F32);
    let b = te::placeholder("B", &[k, n], DType::F32);
    let c = te::placeholder("C", &[m, n], DType::F32);
    template_over("matmul", &a, &b, &c, p)
}

/// The matmul template computing `c = a @ b` over given tensors (te placeholders, or
/// computed tensors that [`weft_ir::fusion`] then inlines): how an op built on a matmul
/// (an implicit-GEMM convolution) schedules its anchor.
pub fn template_over(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &MatmulParams,
) -> Result<weft_ir::func::Func, TemplateError> {
    let mut t = Template::new(name);
    for x in [a, b, c] {
        t.param(x);
    }
    add_kernel(&mut t, a, b, c, p);
    t.finish()
}

/// Adds the matmul kernel `c = a @ b` to `t`, whose buffers `a`, `b`, `c` already are
/// (parameters or global temporaries). Buffers of rank 3 make it a batched matmul,
/// `c[z] = a[z] @ b[z]`, with one grid layer (`blockIdx.z`) per batch element: how
/// Winograd's 16 products run as one kernel.
pub fn add_kernel(t: &mut Template, a: &Buffer, b: &Buffer, c: &Buffer, p: &MatmulParams) {
    add_kernel_summing(t, a, b, c, p, None)
}

/// [`template_over`]'s batched form over split parts (`a` `[splits, m, k]`, `b`
/// `[splits, k, n]`, `partial` `[splits, m, n]`), each tile's last part summing the parts
/// into `last.sum` ([`crate::split_last`]).
pub fn template_over_last(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    partial: &Buffer,
    last: LastPart,
    p: &MatmulParams,
) -> Result<weft_ir::func::Func, TemplateError> {
    let mut t = Template::new(name);
    for x in [a, b, partial, last.sum] {
        t.param(x);
    }
    add_kernel_summing(&mut t, a, b, partial, p, Some(last));
    t.finish()
}

/// [`add_kernel`], with the last part of each tile summing split parts where `last`.
fn add_kernel_summing(
    t: &mut Template,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &MatmulParams,
    last: Option<LastPart>,
) {
    let batched = a.ndim() == 3;
    let d = usize::from(batched);
    let batch = if batched { a.shape()[0] } else { 1 };
    // C's columns; B may have more (an aligned copy's, `align`), read but not stored.
    let (m, k, n) = (a.shape()[d], a.shape()[d + 1], c.shape()[d + 1]);
    let nb = b.shape()[d + 1];
    let (bm, bn, bk, ku) = (p.block_m(), p.block_n(), p.bk, p.k_unroll);
    let ([wm, wn], [rm, rn], [lm, ln], [tm, tn]) = (p.warps, p.repeat, p.lanes, p.tile);
    let threads = p.threads();
    // 128-bit global accesses where every row starts 16-byte aligned; scalar ones
    // otherwise. 64-bit ones where rows are 8-byte aligned (k or n = 2 mod 4) were tried
    // and ran 3% slower (H200, cubes 2030-2050, `docs/matmul-template.md`).
    let va = if k % 4 == 0 { 4 } else { 1 };
    let vb = if nb % 4 == 0 && p.block_n() % 4 == 0 {
        4
    } else {
        1
    };
    let vc = if n % 4 == 0 && tn % 4 == 0 { 4 } else { 1 };
    let (tiles_m, tiles_n, k_tiles) = (ceil_div(m, bm), ceil_div(n, bn), ceil_div(k, bk));
    let a_cov = Coverage::new(bm, bk / va, threads);
    let b_cov = Coverage::new(bk, bn / vb, threads);
    let pad = a_padding(bm, &a_cov, va);
    let blocks = tiles_m * tiles_n;
    let grid = grid_for(blocks);
    let counters = last.map(|_| split_last::counters(t, blocks));

    t.kernel([grid[0], grid[1], batch], threads, |kb| {
        if p.min_blocks > 0 {
            kb.min_blocks_per_sm(p.min_blocks as u32);
        }
        let tx = kb.thread_x();
        let at = batched_at(kb, batched);
        let pid = block_index(kb, grid);
        let body = |kb: &mut KernelBuilder| {
            let (tile_m, tile_n) = swizzle(kb, pid.clone(), tiles_m, tiles_n, p.group);
            let m0 = tile_origin(kb, "m0", tile_m, bm, tiles_m);
            let n0 = tile_origin(kb, "n0", tile_n, bn, tiles_n);
            let a_smem = kb.shared("A_smem", &[2, bk, bm + pad], DType::F32);
            let b_smem = kb.shared("B_smem", &[2, bk, bn], DType::F32);
            let a_ldg = kb.local("A_ldg", &[a_cov.passes, va], DType::F32);
            let b_ldg = kb.local("B_ldg", &[b_cov.passes, vb], DType::F32);
            let a_frag = kb.local("A_frag", &[rm * tm], DType::F32);
            let b_frag = kb.local("B_frag", &[rn * tn], DType::F32);
            let acc = kb.local("acc", &[rm * tm, rn * tn], DType::F32);

            // Global -> registers: tile `k0` of A (rows of the block, k0 .. k0 + bk) and
            // of B. Rows of A and columns of B past the matrix's edge read the last one
            // instead (clamped): they only reach rows and columns of C that are never
            // stored, and a clamped address is loop-invariant where a test is not (ptxas
            // re-evaluated one test per load every k step, 7 predicate registers hold
            // few of them). Only a `partial` tile, the last where `bk` does not divide
            // k, tests k and reads zero past it.
            let load = |kb: &mut KernelBuilder, k0: Expr, partial: bool| {
                a_cov.each(kb, &tx, &|kb, p, r, v| {
                    let (row, col) = (
                        clamp_to_edge(m0.clone() + r, m, bm, 1),
                        simplify(&(k0.clone() + v * va)),
                    );
                    let inside = if partial {
                        col.clone().lt(k)
                    } else {
                        Expr::Bool(true)
                    };
                    kb.copy_if(
                        va,
                        &a_ldg,
                        [p, Expr::int(0)],
                        a,
                        at(row, col),
                        inside,
                        0.0f32,
                    );
                });
                b_cov.each(kb, &tx, &|kb, p, r, v| {
                    let (row, col) = (
                        simplify(&(k0.clone() + r)),
                        clamp_to_edge(n0.clone() + v * vb, nb, bn, vb),
                    );
                    let inside = if partial {
                        row.clone().lt(k)
                    } else {
                        Expr::Bool(true)
                    };
                    kb.copy_if(
                        vb,
                        &b_ldg,
                        [p, Expr::int(0)],
                        b,
                        at(row, col),
                        inside,
                        0.0f32,
                    );
                });
            };
            // Registers -> shared stage `s`: A transposed (`A_smem[s, k, m]`), so that
            // the inner product reads consecutive rows; B as it is.
            let store = |kb: &mut KernelBuilder, s: Expr| {
                a_cov.each(kb, &tx, &|kb, p, r, v| {
                    kb.unroll("e", va, |kb, e| {
                        let value = a_ldg.at(&[p.clone(), e.clone()]);
                        kb.store(&a_smem, [s.clone(), v.clone() * va + e, r.clone()], value);
                    });
                });
                b_cov.each(kb, &tx, &|kb, p, r, v| {
                    kb.copy(
                        vb,
                        &b_smem,
                        [s.clone(), r, v * vb],
                        &b_ldg,
                        [p, Expr::int(0)],
                    );
                });
            };

            kb.unroll("i", rm * tm, |kb, i| {
                kb.unroll("j", rn * tn, |kb, j| kb.store(&acc, [i, j], 0.0f32));
            });
            // The tile at `ko` is partial when it is the last and `bk` does not divide k.
            let ragged = k % bk != 0;
            load(kb, Expr::int(0), ragged && k_tiles == 1);
            store(kb, Expr::int(0));
            kb.barrier();

            let warp = kb.let_("warp", tx.clone() / 32);
            let lane = kb.let_("lane", tx.clone() % 32);
            kb.for_tasks("wi, wj", spatial(&[wm, wn]), warp, |kb, [wi, wj]| {
                kb.for_tasks("li, lj", spatial(&[lm, ln]), lane, |kb, [li, lj]| {
                    // The thread's first row and column in the block tile; repeat `ri`
                    // of the warp tile adds `ri · lm · tm` rows.
                    let row0 = kb.let_("row0", wi * (rm * lm * tm) + li * tm);
                    let col0 = kb.let_("col0", wj * (rn * ln * tn) + lj * tn);
                    kb.serial("ko", k_tiles, |kb, ko| {
                        let more = (ko.clone() + 1).lt(k_tiles);
                        let next = ko.clone() + 1;
                        fetch_k_tile(kb, next, (k_tiles, ragged, 1), &|kb, tile, partial| {
                            load(kb, tile * bk, partial)
                        });
                        let s = ko.clone() % 2;
                        k_sub_steps(kb, bk, ku, |kb, kk| {
                            let (fm, fn_) = (tm.min(4), tn.min(4));
                            kb.unroll("ri", rm, |kb, ri| {
                                kb.unroll("e", tm / fm, |kb, e| {
                                    let row =
                                        row0.clone() + ri.clone() * (lm * tm) + e.clone() * fm;
                                    let at = [s.clone(), kk.clone(), row];
                                    kb.copy(fm, &a_frag, [ri.clone() * tm + e * fm], &a_smem, at);
                                });
                            });
                            kb.unroll("rj", rn, |kb, rj| {
                                kb.unroll("e", tn / fn_, |kb, e| {
                                    let col =
                                        col0.clone() + rj.clone() * (ln * tn) + e.clone() * fn_;
                                    let at = [s.clone(), kk.clone(), col];
                                    kb.copy(fn_, &b_frag, [rj.clone() * tn + e * fn_], &b_smem, at);
                                });
                            });
                            kb.unroll("i", rm * tm, |kb, i| {
                                kb.unroll("j", rn * tn, |kb, j| {
                                    let prod = a_frag.at(&[&i]) * b_frag.at(&[&j]);
                                    let sum = acc.at(&[i.clone(), j.clone()]) + prod;
                                    kb.store(&acc, [i.clone(), j], sum);
                                });
                            });
                        });
                        kb.if_(more, |kb| store(kb, (ko.clone() + 1) % 2));
                        kb.barrier();
                    });

                    // Registers -> C, tested against the matrix's edges.
                    kb.unroll("ri", rm, |kb, ri| {
                        kb.unroll("e", tm, |kb, e| {
                            let i = ri.clone() * tm + e.clone();
                            let row = m0.clone() + row0.clone() + ri * (lm * tm) + e;
                            kb.unroll("rj", rn, |kb, rj| {
                                kb.unroll("f", tn / vc, |kb, f| {
                                    let j = rj.clone() * tn + f.clone() * vc;
                                    let col = n0.clone() + col0.clone() + rj * (ln * tn) + f * vc;
                                    let inside = row.clone().lt(m).and(col.clone().lt(n));
                                    kb.if_(inside, |kb| {
                                        kb.copy(vc, c, at(row.clone(), col), &acc, [i.clone(), j]);
                                    });
                                });
                            });
                        });
                    });
                });
            });
            if let (Some(last), Some(counters)) = (last, &counters) {
                let tile = split_last::Tile {
                    m0: &m0,
                    n0: &n0,
                    bm,
                    bn,
                    index: &pid,
                    tx: &tx,
                    threads,
                };
                split_last::append(kb, last, c, counters, &tile);
            }
        };
        if grid[0] * grid[1] > blocks {
            kb.if_(pid.clone().lt(blocks), body);
        } else {
            body(kb);
        }
    });
}

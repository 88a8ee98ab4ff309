//! The attention template's kernel (see the module docs for its shape).

use weft_ir::expr::ReduceOp;
use weft_ir::fragment::{FragLayout, FragRole, Fragment, MmaShape};
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, load_or};

use super::{AttnParams, MASKED, Masking, Operands, PAD_F16, PAD_F32};
use crate::ceil_div;

/// Adds the kernel to `t`, whose buffers `ops` are already parameters. Loops over a
/// tile's elements are serial (the compilers unroll them as they see fit; WGSL writes an
/// unrolled loop out, and a CPU Vulkan driver then compiles minutes): only loops that
/// index registers (the per-row state, the fragments) are unrolled.
///
/// With `split` (the split-KV form, `split.rs`: one pass, `rg` = 0), the grid gains a
/// third dimension of `split.splits` blocks, each walking its chunk of
/// `split.chunk_tiles` key steps, and the kernel ends by writing its rows' unnormalised
/// output, maximum and sum to `split`'s partials instead of `y` (then, in the one-kernel
/// form, the block arriving last at its row tile and head combines them into `y`).
pub(super) fn add_kernel(
    t: &mut Template,
    ops: &Operands,
    p: &AttnParams,
    split: Option<&super::split::Partials>,
) {
    let Operands {
        q,
        k,
        v,
        mask,
        y,
        scale,
        masking,
    } = ops;
    let (bh, sq, d, skv, dv) = ops.dims();
    let f = p.mma;
    let (dp, dvp) = (p.padded(d), p.padded(dv));
    let AttnParams { bq, bkv, warps, .. } = *p;
    let threads = warps * 32;
    // The softmax step: `lr` threads per row, rows `tx / lr + it · rp`.
    let lr = (threads / bq).max(1);
    let rp = threads / lr;
    let ri = bq / rp;
    let q_tiles = ceil_div(sq, bq);
    let kv_tiles = ceil_div(skv, bkv);
    // f16 operands stay f16 in shared memory (on CUDA cores too: half the bytes, the
    // products still in f32); f32 ones stay f32.
    let f16 = [q, k, v].iter().all(|x| x.dtype() == DType::F16);
    let tiles_dt = if f16 { DType::F16 } else { DType::F32 };
    let pad = if f16 { PAD_F16 } else { PAD_F32 };
    let scale = *scale as f32;
    let causal = *masking == Masking::Causal;

    let splits = split.map_or(1, |sp| sp.splits);
    t.kernel([q_tiles, bh, splits], [threads, 1, 1], |kb| {
        let tx = kb.thread_x();
        // The first key step of this block's chunk (split-KV), 0 otherwise.
        let first_tile = split.map(|sp| kb.let_("first_tile", kb.block_z() * sp.chunk_tiles));
        let q0 = kb.let_("q0", kb.block_x() * bq);
        let z = kb.block_y();
        let q_s = kb.shared("Q_s", &[bq, dp + pad], tiles_dt);
        // One tile for both where they share it (`kv` = 1: V loaded over K once the
        // scores are taken).
        let (k_s, v_s) = if p.shared_kv {
            let kv_s = kb.shared("KV_s", &[bkv, dp.max(dvp) + pad], tiles_dt);
            (kv_s.clone(), kv_s)
        } else {
            (
                kb.shared("K_s", &[bkv, dp + pad], tiles_dt),
                kb.shared("V_s", &[bkv, dvp + pad], tiles_dt),
            )
        };
        let s_s = kb.shared("S_s", &[bq, bkv + PAD_F32], DType::F32);
        // The probabilities as the second product's A operand (f16); on CUDA cores they
        // stay in `S_s`, overwriting the scores they came from.
        let p_s = (f > 0).then(|| kb.shared("P_s", &[bq, bkv + PAD_F16], DType::F16));
        let o_s = kb.shared("O_s", &[bq, dvp + PAD_F32], DType::F32);
        // A row's threads' partials, where they do not shuffle them.
        let part_max = (!p.shuffle).then(|| kb.shared("part_max", &[bq, lr], DType::F32));
        let part_sum = (!p.shuffle).then(|| kb.shared("part_sum", &[bq, lr], DType::F32));
        let m_reg = kb.local("m_run", &[ri], DType::F32);
        let l_reg = kb.local("l_run", &[ri], DType::F32);

        // `rows × cols` of `dst` from `src(row, col)` (zero where `inside` fails), the
        // block's threads walking the tile row by row.
        let fill = |kb: &mut KernelBuilder,
                    dst: &Buffer,
                    rows: i64,
                    cols: i64,
                    value: &dyn Fn(Expr, Expr) -> Expr| {
            let total = rows * cols;
            kb.serial("e", ceil_div(total, threads), |kb, e| {
                let idx = kb.let_("idx", e * threads + tx.clone());
                let (r, c) = (idx.clone() / cols, idx.clone() % cols);
                let v = value(r.clone(), c.clone());
                if total % threads == 0 {
                    kb.store(dst, [r, c], v);
                } else {
                    kb.store_if(idx.lt(total), dst, [r, c], v);
                }
            });
        };
        // `dst[r, c] = init(r, c) + Σ_e term(r, c, e)` over `e < len`, an f32 sum a
        // thread, the threads walking the tile row by row (CUDA cores).
        let fill_dot = |kb: &mut KernelBuilder,
                        (dst, rows, cols, len): (&Buffer, i64, i64, i64),
                        init: &dyn Fn(Expr, Expr) -> Expr,
                        term: &dyn Fn(Expr, Expr, Expr) -> Expr| {
            let total = rows * cols;
            let acc = kb.local("dot", &[1], DType::F32);
            kb.serial("e", ceil_div(total, threads), |kb, e| {
                let idx = kb.let_("idx", e * threads + tx.clone());
                let (r, c) = (idx.clone() / cols, idx.clone() % cols);
                let body = |kb: &mut KernelBuilder| {
                    kb.store(&acc, [0], init(r.clone(), c.clone()));
                    kb.serial("kd", len, |kb, kd| {
                        let t = term(r.clone(), c.clone(), kd);
                        kb.store(&acc, [0], acc.at(&[0]) + t);
                    });
                    kb.store(dst, [r.clone(), c.clone()], acc.at(&[0]));
                };
                if total % threads == 0 {
                    body(kb);
                } else {
                    kb.if_(idx.clone().lt(total), body);
                }
            });
        };
        let load_tile = |kb: &mut KernelBuilder,
                         dst: &Buffer,
                         x: &Buffer,
                         row0: &Expr,
                         dims: (i64, i64, i64, i64)| {
            load_tile(kb, (dst, x, row0), None, dims, (&tx, threads, &z));
        };
        load_tile(kb, &q_s, q, &q0, (bq, sq, d, dp));
        // The two passes' output starts in the accumulators, not in `O_s`.
        if !p.two_pass {
            fill(kb, &o_s, bq, dvp, &|_, _| Expr::f32(0.0));
        }
        kb.unroll("it", ri, |kb, it| {
            kb.store(&m_reg, [it.clone()], Expr::f32(MASKED));
            kb.store(&l_reg, [it], Expr::f32(0.0));
        });
        kb.barrier();

        // Matrix units: each warp owns `rw` rows of the tile, `fq` fragments high.
        let shape = MmaShape {
            m: f.max(1) as u32,
            n: f.max(1) as u32,
            k: f.max(1) as u32,
        };
        let warp = kb.let_("warp", tx.clone() / 32);
        // The warps' grid over the tile (`AttnParams::warp_grid`): where several warps
        // share a fragment row, `warp_col` picks their share of its columns.
        let (row_warps, col_warps) = p.warp_grid();
        let (warp_row, warp_col) = if col_warps > 1 {
            (
                kb.let_("warp_row", warp.clone() / col_warps),
                Some(kb.let_("warp_col", warp.clone() % col_warps)),
            )
        } else {
            (warp.clone(), None)
        };
        let rw = bq / row_warps;
        let fq = if f > 0 { rw / f } else { 0 };
        // Fragment column `j` of this warp's share of `nf` (a share of the whole).
        let col_frag = |j: Expr, nf: i64| match &warp_col {
            Some(wc) => wc.clone() * nf + j,
            None => j,
        };
        let q_frags = (f > 0).then(|| {
            let kd = dp / f;
            let qa = kb.fragment(
                "q_frag",
                FragRole::A,
                shape,
                DType::F16,
                FragLayout::RowMajor,
                (fq * kd) as u32,
            );
            kb.unroll("i", fq, |kb, i| {
                kb.unroll("kk", kd, |kb, kk| {
                    let row = warp_row.clone() * rw + i.clone() * f;
                    kb.frag_load(&qa, i.clone() * kd + kk.clone(), &q_s, [row, kk * f]);
                });
            });
            qa
        });

        // Each accumulator tile of this warp's strip, `nf` tiles wide: its index, and
        // where its first element sits in a `[bq, ..]` shared tile.
        let strip = |kb: &mut KernelBuilder,
                     nf: i64,
                     body: &dyn Fn(&mut KernelBuilder, Expr, Expr, Expr)| {
            kb.unroll("i", fq, |kb, i| {
                kb.unroll("j", nf, |kb, j| {
                    let row = warp_row.clone() * rw + i.clone() * f;
                    body(kb, i * nf + j.clone(), row, col_frag(j, nf) * f);
                });
            });
        };
        // Row `tx / lr + it · rp` of the tile, and of the queries.
        let row_of = |kb: &mut KernelBuilder, it: &Expr| {
            let r = kb.let_("r", tx.clone() / lr + it.clone() * rp);
            let grow = kb.let_("grow", q0.clone() + r.clone());
            (r, grow)
        };
        // S = Q · Kᵀ of the key tile in `K_s` into `S_s` (matrix units).
        let scores = |kb: &mut KernelBuilder, qa: &Fragment| {
            let (kd, nf) = (dp / f, bkv / f / col_warps);
            let kb_frag = kb.fragment(
                "k_frag",
                FragRole::B,
                shape,
                DType::F16,
                FragLayout::ColMajor,
                1,
            );
            let s_acc = kb.fragment(
                "s_acc",
                FragRole::Accumulator,
                shape,
                DType::F32,
                FragLayout::RowMajor,
                (fq * nf) as u32,
            );
            kb.unroll("i", fq * nf, |kb, i| kb.frag_fill(&s_acc, i, 0.0f32));
            kb.unroll("kk", kd, |kb, kk| {
                kb.unroll("j", nf, |kb, j| {
                    // Kᵀ's tile (d rows, key columns): K_s's rows read as columns.
                    let key = col_frag(j.clone(), nf) * f;
                    kb.frag_load(&kb_frag, 0, &k_s, [key, kk.clone() * f]);
                    kb.unroll("i", fq, |kb, i| {
                        let acc = i.clone() * nf + j.clone();
                        kb.mma(
                            (&s_acc, acc.clone()),
                            (qa, i * kd + kk.clone()),
                            (&kb_frag, Expr::int(0)),
                            (&s_acc, acc),
                        );
                    });
                });
            });
            strip(kb, nf, &|kb, t, row, col| {
                kb.frag_store(&s_acc, t, &s_s, [row, col])
            });
        };
        // The score of row `r` (query `grow`) and column `c` of the tile at key `j0`, as
        // the softmax sees it: scaled, the mask added, `MASKED` past the keys and, under
        // a causal mask, past the query.
        let score = |kb: &mut KernelBuilder, r: &Expr, grow: &Expr, c: &Expr, j0: &Expr| {
            let col = j0.clone() + c.clone();
            let mut s = s_s.at(&[r.clone(), c.clone()]) * scale;
            if let Some(m) = mask {
                let inside = grow.clone().lt(sq).and(col.clone().lt(skv));
                let add = load_or(
                    m,
                    [z.clone(), grow.clone(), col.clone()],
                    inside,
                    Expr::zero(m.dtype()),
                );
                s = s + add.cast(DType::F32);
            }
            let mut keep = col.clone().lt(skv);
            if causal {
                keep = keep.and(col.le(grow.clone()));
            }
            kb.let_("s", Expr::select(keep, s, Expr::f32(MASKED)))
        };
        // The fragments of O += P · V (matrix units): P's and V's, one each, and the
        // warp's output accumulators.
        let pv_fragments = |kb: &mut KernelBuilder| {
            let nf = dvp / f / col_warps;
            let pa = kb.fragment(
                "p_frag",
                FragRole::A,
                shape,
                DType::F16,
                FragLayout::RowMajor,
                1,
            );
            let vb = kb.fragment(
                "v_frag",
                FragRole::B,
                shape,
                DType::F16,
                FragLayout::RowMajor,
                1,
            );
            let o_acc = kb.fragment(
                "o_acc",
                FragRole::Accumulator,
                shape,
                DType::F32,
                FragLayout::RowMajor,
                (fq * nf) as u32,
            );
            (pa, vb, o_acc)
        };
        // O += P · V of the tiles in `P_s` and `V_s`, into the accumulators.
        let multiply_pv =
            |kb: &mut KernelBuilder,
             p_s: &Buffer,
             (pa, vb, o_acc): &(Fragment, Fragment, Fragment)| {
                let (kd, nf) = (bkv / f, dvp / f / col_warps);
                kb.unroll("i", fq, |kb, i| {
                    kb.unroll("kk", kd, |kb, kk| {
                        let row = warp_row.clone() * rw + i.clone() * f;
                        kb.frag_load(pa, 0, p_s, [row, kk.clone() * f]);
                        kb.unroll("j", nf, |kb, j| {
                            let col = col_frag(j.clone(), nf) * f;
                            kb.frag_load(vb, 0, &v_s, [kk.clone() * f, col]);
                            let acc = i.clone() * nf + j;
                            kb.mma(
                                (o_acc, acc.clone()),
                                (pa, Expr::int(0)),
                                (vb, Expr::int(0)),
                                (o_acc, acc),
                            );
                        });
                    });
                });
            };
        if let (true, Some(qa)) = (p.two_pass, &q_frags) {
            let p_s = p_s.as_ref().expect("matrix units stage the probabilities");
            let lane = if lr > 1 {
                kb.let_("lane", tx.clone() % lr)
            } else {
                Expr::int(0)
            };
            let per = bkv / lr;
            // Pass 1: each thread's maximum and sum over its share of each row's scores,
            // the sum kept at the running maximum; then the row's, over its threads.
            kb.serial("jt", kv_tiles, |kb, jt| {
                let j0 = kb.let_("j0", jt * bkv);
                load_tile(kb, &k_s, k, &j0, (bkv, skv, d, dp));
                kb.barrier();
                scores(kb, qa);
                kb.barrier();
                kb.unroll("it", ri, |kb, it| {
                    let (r, grow) = row_of(kb, &it);
                    let mx = kb.local("mx", &[1], DType::F32);
                    kb.store(&mx, [0], Expr::f32(MASKED));
                    kb.serial("e", per, |kb, e| {
                        let c = kb.let_("c", e * lr + lane.clone());
                        let s = score(kb, &r, &grow, &c, &j0);
                        kb.store(&s_s, [r.clone(), c], s.clone());
                        kb.store(&mx, [0], mx.at(&[0]).max(s));
                    });
                    let m_old = kb.let_("m_old", m_reg.at(std::slice::from_ref(&it)));
                    let m_new = kb.let_("m_new", m_old.clone().max(mx.at(&[0])));
                    let sum = kb.local("sum", &[1], DType::F32);
                    kb.store(&sum, [0], Expr::f32(0.0));
                    kb.serial("e", per, |kb, e| {
                        let c = e * lr + lane.clone();
                        let pr = te::exp(s_s.at(&[r.clone(), c]) - m_new.clone());
                        kb.store(&sum, [0], sum.at(&[0]) + pr);
                    });
                    let alpha = te::exp(m_old - m_new.clone());
                    kb.store(&m_reg, [it.clone()], m_new);
                    kb.store(
                        &l_reg,
                        [it.clone()],
                        l_reg.at(std::slice::from_ref(&it)) * alpha + sum.at(&[0]),
                    );
                });
            });
            // The rows' maximum and the reciprocal of their sum, in `m_run` and `l_run`.
            kb.unroll("it", ri, |kb, it| {
                let (r, _) = row_of(kb, &it);
                let m_own = kb.let_("m_own", m_reg.at(std::slice::from_ref(&it)));
                let m_row = combine(kb, part_max.as_ref(), &r, &lane, lr, m_own.clone(), true);
                let m_row = kb.let_("m_row", m_row);
                let own = l_reg.at(std::slice::from_ref(&it)) * te::exp(m_own - m_row.clone());
                let l_row = combine(kb, part_sum.as_ref(), &r, &lane, lr, own, false);
                kb.store(&m_reg, [it.clone()], m_row);
                kb.store(&l_reg, [it], Expr::f32(1.0) / l_row);
            });
            // Pass 2: P = exp(S − m) / l, and O += P · V in the accumulators.
            let nf = dvp / f / col_warps;
            let pv = pv_fragments(kb);
            kb.unroll("i", fq * nf, |kb, i| kb.frag_fill(&pv.2, i, 0.0f32));
            kb.serial("jt", kv_tiles, |kb, jt| {
                let j0 = kb.let_("j0", jt * bkv);
                load_tile(kb, &k_s, k, &j0, (bkv, skv, d, dp));
                load_tile(kb, &v_s, v, &j0, (bkv, skv, dv, dvp));
                kb.barrier();
                scores(kb, qa);
                kb.barrier();
                kb.unroll("it", ri, |kb, it| {
                    let (r, grow) = row_of(kb, &it);
                    let m_row = kb.let_("m_row", m_reg.at(std::slice::from_ref(&it)));
                    let inv_l = kb.let_("inv_l", l_reg.at(&[it]));
                    kb.serial("e", per, |kb, e| {
                        let c = kb.let_("c", e * lr + lane.clone());
                        let s = score(kb, &r, &grow, &c, &j0);
                        let pr = te::exp(s - m_row.clone()) * inv_l.clone();
                        kb.store(p_s, [r.clone(), c], pr.cast(DType::F16));
                    });
                });
                kb.barrier();
                multiply_pv(kb, p_s, &pv);
                kb.barrier();
            });
            // y = O (already normalised), rounded to y's type, where the row and column
            // exist.
            strip(kb, nf, &|kb, t, row, col| {
                kb.frag_store(&pv.2, t, &o_s, [row, col])
            });
            kb.barrier();
            kb.unroll("it", ri, |kb, it| {
                let (r, grow) = row_of(kb, &it);
                kb.serial("e", ceil_div(dv, lr), |kb, e| {
                    let c = kb.let_("c", e * lr + lane.clone());
                    let inside = grow.clone().lt(sq).and(c.clone().lt(dv));
                    let value = o_s.at(&[r.clone(), c.clone()]).cast(y.dtype());
                    kb.store_if(inside, y, [z.clone(), grow.clone(), c], value);
                });
            });
            return;
        }
        let tile = |kb: &mut KernelBuilder, jt: Expr| {
            let j0 = kb.let_("j0", jt * bkv);
            load_tile(kb, &k_s, k, &j0, (bkv, skv, d, dp));
            if !p.shared_kv {
                load_tile(kb, &v_s, v, &j0, (bkv, skv, dv, dvp));
            }
            kb.barrier();

            // S = Q · Kᵀ into `S_s`.
            if let Some(qa) = &q_frags {
                scores(kb, qa);
            } else {
                fill_dot(
                    kb,
                    (&s_s, bq, bkv, dp),
                    &|_, _| Expr::f32(0.0),
                    &|r, c, e| {
                        q_s.at(&[r, e.clone()]).cast(DType::F32) * k_s.at(&[c, e]).cast(DType::F32)
                    },
                );
            }
            kb.barrier();

            // The online softmax, `lr` threads per row: scores scaled and masked, the
            // row's new maximum, the probabilities, their sum; the running output rows
            // rescaled by `exp(m_old − m_new)`.
            let lane = if lr > 1 {
                kb.let_("lane", tx.clone() % lr)
            } else {
                Expr::int(0)
            };
            let per = bkv / lr;
            // K is read: V goes over it while the softmax runs (the barrier before the
            // output's product orders both).
            if p.shared_kv {
                load_tile(kb, &v_s, v, &j0, (bkv, skv, dv, dvp));
            }
            kb.unroll("it", ri, |kb, it| {
                let (r, grow) = row_of(kb, &it);
                let mx = kb.local("mx", &[1], DType::F32);
                kb.store(&mx, [0], Expr::f32(MASKED));
                kb.serial("e", per, |kb, e| {
                    let c = e * lr + lane.clone();
                    let s = score(kb, &r, &grow, &c, &j0);
                    kb.store(&s_s, [r.clone(), c], s.clone());
                    kb.store(&mx, [0], mx.at(&[0]).max(s));
                });
                let m_tile = combine(kb, part_max.as_ref(), &r, &lane, lr, mx.at(&[0]), true);
                let m_old = kb.let_("m_old", m_reg.at(std::slice::from_ref(&it)));
                let m_new = kb.let_("m_new", m_old.clone().max(m_tile));
                let sum = kb.local("sum", &[1], DType::F32);
                kb.store(&sum, [0], Expr::f32(0.0));
                kb.serial("e", per, |kb, e| {
                    let c = e * lr + lane.clone();
                    let pr = kb.let_(
                        "p",
                        te::exp(s_s.at(&[r.clone(), c.clone()]) - m_new.clone()),
                    );
                    match &p_s {
                        Some(p_s) => kb.store(p_s, [r.clone(), c], pr.clone().cast(DType::F16)),
                        None => kb.store(&s_s, [r.clone(), c], pr.clone()),
                    }
                    kb.store(&sum, [0], sum.at(&[0]) + pr);
                });
                let l_tile = combine(kb, part_sum.as_ref(), &r, &lane, lr, sum.at(&[0]), false);
                let alpha = kb.let_("alpha", te::exp(m_old - m_new.clone()));
                kb.store(&m_reg, [it.clone()], m_new);
                kb.store(
                    &l_reg,
                    [it.clone()],
                    l_reg.at(&[it]) * alpha.clone() + l_tile,
                );
                kb.serial("e", ceil_div(dvp, lr), |kb, e| {
                    let c = e * lr + lane.clone();
                    let scaled = o_s.at(&[r.clone(), c.clone()]) * alpha.clone();
                    if dvp % lr == 0 {
                        kb.store(&o_s, [r.clone(), c], scaled);
                    } else {
                        kb.store_if(c.clone().lt(dvp), &o_s, [r.clone(), c], scaled);
                    }
                });
            });
            kb.barrier();

            // O += P · V.
            if let Some(p_s) = &p_s {
                let nf = dvp / f / col_warps;
                let pv = pv_fragments(kb);
                strip(kb, nf, &|kb, t, row, col| {
                    kb.frag_load(&pv.2, t, &o_s, [row, col])
                });
                multiply_pv(kb, p_s, &pv);
                strip(kb, nf, &|kb, t, row, col| {
                    kb.frag_store(&pv.2, t, &o_s, [row, col])
                });
            } else {
                fill_dot(
                    kb,
                    (&o_s, bq, dvp, bkv),
                    &|r, c| o_s.at(&[r, c]),
                    &|r, c, e| s_s.at(&[r, e.clone()]) * v_s.at(&[e, c]).cast(DType::F32),
                );
            }
            kb.barrier();
        };
        let steps = split.map_or(kv_tiles, |sp| sp.chunk_tiles);
        kb.serial("jt", steps, |kb, jt| {
            let jt = match &first_tile {
                Some(first) => kb.let_("jg", first.clone() + jt),
                None => jt,
            };
            if causal && p.skip && kv_tiles > 1 {
                // Key tiles wholly after the block's last query row hold only masked
                // scores: skipped (the condition is the block's, uniform over it).
                let last = q0.clone() + (bq - 1);
                kb.if_((jt.clone() * bkv).le(last), |kb| tile(kb, jt));
            } else {
                tile(kb, jt);
            }
        });

        if let Some(sp) = split {
            let lane = if lr > 1 {
                tx.clone() % lr
            } else {
                Expr::int(0)
            };
            sp.store(
                kb,
                (&o_s, &m_reg, &l_reg),
                (ri, lr, dv, sq),
                &lane,
                &|kb, it| row_of(kb, it),
            );
            return;
        }
        // y = O / l, rounded to y's type, where the row and column exist.
        kb.unroll("it", ri, |kb, it| {
            let (r, grow) = row_of(kb, &it);
            let l = l_reg.at(&[it]);
            let inv = kb.let_("inv_l", Expr::f32(1.0) / l);
            let lane = if lr > 1 {
                tx.clone() % lr
            } else {
                Expr::int(0)
            };
            kb.serial("e", ceil_div(dv, lr), |kb, e| {
                let c = kb.let_("c", e * lr + lane.clone());
                let inside = grow.clone().lt(sq).and(c.clone().lt(dv));
                let value = (o_s.at(&[r.clone(), c.clone()]) * inv.clone()).cast(y.dtype());
                kb.store_if(inside, y, [z.clone(), grow.clone(), c], value);
            });
        });
    });
}

/// Rows `row0 ..` of `x` (`rows` of them, `len` columns, `x` holding `total` rows, head
/// `z`) into tile `dst` of `cols` ≥ `len` columns, zero outside, by the block's `threads`
/// threads: vectors of the widest lanes (16 bytes at most) that divide `len`, so that no
/// vector straddles its end and each is tested once; element by element where `x` is not
/// of the tile's type. With `stage`, `dst` is staged (`[stages, rows, cols]`) and the
/// tile goes into that stage. `row0` is a multiple of `rows` below `total` (a tile's
/// start), so where `rows` divides `total` no row is tested.
pub(super) fn load_tile(
    kb: &mut KernelBuilder,
    (dst, x, row0): (&Buffer, &Buffer, &Expr),
    stage: Option<&Expr>,
    (rows, total, len, cols): (i64, i64, i64, i64),
    (tx, threads, z): (&Expr, i64, &Expr),
) {
    let tiles_dt = dst.dtype();
    let widest = if tiles_dt == DType::F16 { 8 } else { 4 };
    let lanes = if x.dtype() == tiles_dt {
        [widest, 4, 2, 1]
            .into_iter()
            .find(|l| len % l == 0 && cols % l == 0)
            .unwrap_or(1)
    } else {
        1
    };
    let vecs = cols / lanes;
    let count = rows * vecs;
    kb.serial("e", ceil_div(count, threads), |kb, e| {
        let idx = kb.let_("idx", e * threads + tx.clone());
        let (r, col) = (idx.clone() / vecs, idx.clone() % vecs * lanes);
        let row = row0.clone() + r.clone();
        let inside = if total % rows == 0 {
            col.clone().lt(len)
        } else {
            row.clone().lt(total).and(col.clone().lt(len))
        };
        let body = |kb: &mut KernelBuilder| {
            let at = [z.clone(), row.clone(), col.clone()];
            let to: Vec<Expr> = stage
                .cloned()
                .into_iter()
                .chain([r.clone(), col.clone()])
                .collect();
            if lanes > 1 {
                let zero = Expr::zero(tiles_dt);
                kb.copy_if(lanes, dst, to, x, at, inside.clone(), zero);
            } else {
                let zero = Expr::zero(x.dtype());
                let v = load_or(x, at, inside.clone(), zero).cast(tiles_dt);
                kb.store(dst, to, v);
            }
        };
        if count % threads == 0 {
            body(kb);
        } else {
            kb.if_(idx.clone().lt(count), body);
        }
    });
}

/// The row's combination of each of its `lr` threads' `partial` (the maximum, or the
/// sum): through `part[r, lane]` and one barrier, every thread of the row reading all
/// `lr` partials (few: `lr` is at most the block's threads over its rows).
///
/// Without `part` (`sh` = 1), by butterfly shuffles across the row's `lr` consecutive
/// lanes instead (no shared memory, no barrier; the kernel's threads arrive here
/// together).
fn combine(
    kb: &mut KernelBuilder,
    part: Option<&Buffer>,
    r: &Expr,
    lane: &Expr,
    lr: i64,
    partial: Expr,
    max: bool,
) -> Expr {
    if lr == 1 {
        return kb.let_("row_total", partial);
    }
    let Some(part) = part else {
        let reduce = if max { ReduceOp::Max } else { ReduceOp::Sum };
        return crate::rows::butterfly(kb, "row_total", reduce, partial, lr);
    };
    kb.store(part, [r.clone(), lane.clone()], partial);
    kb.barrier();
    let mut total = part.at(&[r.clone(), Expr::int(0)]);
    for l in 1..lr {
        let next = part.at(&[r.clone(), Expr::int(l)]);
        total = if max { total.max(next) } else { total + next };
    }
    kb.let_("row_total", total)
}

//! The attention kernel with the scores, probabilities and output rows in registers
//! (`rg` = 1; FlashAttention-2's form), on a target whose fragments expose their
//! elements ([`weft_ir::fragment::elements`]).
//!
//! Warp `w` owns query rows `w·bq/warps ..` of the block's tile, `fq` fragments high. A
//! key step is then, per 16-row fragment `i` of the warp:
//!
//! ```text
//! S[i, :]  = Q[i] · K_sᵀ                      # accumulators, nf = bkv/16 tiles
//! S[i, :]  = masked(log2(e)·(scale·S + mask))  # map (the element's row and key known)
//! m_new    = max(m[i], rowmax(S[i, :]))        # row reduction: quad shuffles
//! P[i, :]  = 2^(S − m_new);  α = 2^(m[i] − m_new)
//! l[i]     = α·l[i] + rowsum(P);  m[i] = m_new
//! O[i, :] *= α;  O[i, :] += f16(P[i, :]) · V_s # P becomes an A operand in place
//! ```
//!
//! with two barriers a step (the K and V tiles loaded, then read by every warp) where the
//! shared-memory form has six, and no score or output row crossing shared memory until
//! `O / l` is written out at the end.
//!
//! With two stages (`st` = 2) `K_s` and `V_s` are double buffers: step `j` first issues
//! the copies of key tile `j + 1` into the other stage (`cp.async` on CUDA: straight into
//! shared memory, complete at the thread's next barrier), then computes on its own, and
//! one barrier ends the step — the copies then are complete and every warp is done with
//! the stage the step after next overwrites.

use weft_ir::fragment::{FragLayout, FragRole, MmaShape, RowOp};
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, load_or};

use super::kernel::load_tile;
use super::{AttnParams, MASKED, Masking, Operands, PAD_F16, PAD_F32};
use crate::ceil_div;

/// Adds the register form of the kernel to `t` (`p.regs`, `p.mma` = 16, f16 operands).
pub(super) fn add_kernel(t: &mut Template, ops: &Operands, p: &AttnParams) {
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
    let (q_tiles, kv_tiles) = (ceil_div(sq, bq), ceil_div(skv, bkv));
    // Scores are kept in base 2: log2(e) folded into the scale (and the mask), so that
    // each probability is one `exp2` (`ex2` on CUDA) rather than `exp`'s range reduction.
    let log2e = std::f32::consts::LOG2_E;
    let scale = *scale as f32 * log2e;
    let causal = *masking == Masking::Causal;
    // Fragments a warp holds: `fq` high, Q's `kd` along the head, S's `nf` along the
    // keys, O's `nv` along the output's head.
    let rw = bq / warps;
    let (fq, kd, nf, nv) = (rw / f, dp / f, bkv / f, dvp / f);
    let shape = MmaShape {
        m: f as u32,
        n: f as u32,
        k: f as u32,
    };

    t.kernel([q_tiles, bh, 1], [threads, 1, 1], |kb| {
        let tx = kb.thread_x();
        let q0 = kb.let_("q0", kb.block_x() * bq);
        let z = kb.block_y();
        let q_s = kb.shared("Q_s", &[bq, dp + PAD_F16], DType::F16);
        let staged = p.stages > 1;
        // One stage is a plain tile, two a `[2, rows, cols]` double buffer.
        let tile_shape = |cols: i64| {
            let stages = staged.then_some(p.stages);
            stages
                .into_iter()
                .chain([bkv, cols + PAD_F16])
                .collect::<Vec<_>>()
        };
        let k_s = kb.shared("K_s", &tile_shape(dp), DType::F16);
        let v_s = kb.shared("V_s", &tile_shape(dvp), DType::F16);
        if staged {
            kb.async_pipeline(p.stages as u32);
        }
        let o_s = kb.shared("O_s", &[bq, dvp + PAD_F32], DType::F32);
        let warp = kb.let_("warp", tx.clone() / 32);
        let frag = |kb: &mut KernelBuilder, name: &str, role, layout, count: i64| {
            let dt = if matches!(role, FragRole::A | FragRole::B) {
                DType::F16
            } else {
                DType::F32
            };
            kb.fragment(name, role, shape, dt, layout, count as u32)
        };
        let row_major = FragLayout::RowMajor;
        let q_frag = frag(kb, "q_frag", FragRole::A, row_major, fq * kd);
        let k_frag = frag(kb, "k_frag", FragRole::B, FragLayout::ColMajor, 1);
        let v_frag = frag(kb, "v_frag", FragRole::B, row_major, 1);
        let p_frag = frag(kb, "p_frag", FragRole::A, row_major, nf);
        let s_acc = frag(kb, "s_acc", FragRole::Accumulator, row_major, fq * nf);
        let o_acc = frag(kb, "o_acc", FragRole::Accumulator, row_major, fq * nv);
        let m_run = frag(kb, "m_run", FragRole::Rows, row_major, fq);
        let l_run = frag(kb, "l_run", FragRole::Rows, row_major, fq);
        // The step's row maximum (then the new running one), α, and the row sum.
        let m_new = frag(kb, "m_new", FragRole::Rows, row_major, 1);
        let alpha = frag(kb, "alpha", FragRole::Rows, row_major, 1);
        let l_step = frag(kb, "l_step", FragRole::Rows, row_major, 1);
        let zero = Expr::int(0);

        let threads_at = (&tx, threads, &z);
        // The K and V rows of the key tile at `j0` into stage `stage` (the tile itself,
        // when not staged).
        let fetch = |kb: &mut KernelBuilder, j0: Expr, stage: Option<Expr>| {
            let stage = stage.as_ref();
            load_tile(kb, (&k_s, k, &j0), stage, (bkv, skv, d, dp), threads_at);
            load_tile(kb, (&v_s, v, &j0), stage, (bkv, skv, dv, dvp), threads_at);
        };
        load_tile(kb, (&q_s, q, &q0), None, (bq, sq, d, dp), threads_at);
        if staged {
            fetch(kb, zero.clone(), Some(zero.clone()));
        }
        kb.unroll("i", fq, |kb, i| {
            kb.frag_fill(&m_run, i.clone(), MASKED);
            kb.frag_fill(&l_run, i.clone(), 0.0f32);
            kb.unroll("j", nv, |kb, j| {
                kb.frag_fill(&o_acc, i.clone() * nv + j, 0.0f32)
            });
        });
        kb.barrier();
        kb.unroll("i", fq, |kb, i| {
            kb.unroll("kk", kd, |kb, kk| {
                let row = warp.clone() * rw + i.clone() * f;
                kb.frag_load(&q_frag, i.clone() * kd + kk.clone(), &q_s, [row, kk * f]);
            });
        });

        // Whether key tile `jt` is computed at all (causal: not wholly after the block's
        // last query row, where skipped; the condition is the block's, uniform over it).
        let skipping = causal && p.skip && kv_tiles > 1;
        let needed = |jt: Expr| {
            let last = q0.clone() + (bq - 1);
            (jt * bkv).le(last)
        };
        let step = |kb: &mut KernelBuilder, jt: Expr| {
            let j0 = kb.let_("j0", jt.clone() * bkv);
            // This step's stage of K_s and V_s (indices prefix).
            let cur: Vec<Expr> = if staged {
                let next = jt.clone() + 1;
                let mut wanted = next.clone().lt(kv_tiles);
                if skipping {
                    wanted = wanted.and(needed(next.clone()));
                }
                kb.if_(wanted, |kb| {
                    fetch(kb, next.clone() * bkv, Some(next.clone() % p.stages))
                });
                vec![jt.clone() % p.stages]
            } else {
                fetch(kb, j0.clone(), None);
                kb.barrier();
                vec![]
            };
            let at =
                |r: Expr, c: Expr| -> Vec<Expr> { cur.iter().cloned().chain([r, c]).collect() };
            // S = Q · Kᵀ, K_s's rows read as Kᵀ's columns.
            kb.unroll("t", fq * nf, |kb, t| kb.frag_fill(&s_acc, t, 0.0f32));
            kb.unroll("kk", kd, |kb, kk| {
                kb.unroll("j", nf, |kb, j| {
                    kb.frag_load(&k_frag, 0, &k_s, at(j.clone() * f, kk.clone() * f));
                    kb.unroll("i", fq, |kb, i| {
                        let acc = i.clone() * nf + j.clone();
                        kb.mma(
                            (&s_acc, acc.clone()),
                            (&q_frag, i * kd + kk.clone()),
                            (&k_frag, zero.clone()),
                            (&s_acc, acc),
                        );
                    });
                });
            });
            kb.unroll("i", fq, |kb, i| {
                let row0 = kb.let_("row0", q0.clone() + warp.clone() * rw + i.clone() * f);
                // Scale, mask; keys past the end and after the row (causal) masked.
                kb.unroll("j", nf, |kb, j| {
                    let col0 = j0.clone() + j.clone() * f;
                    let t = i.clone() * nf + j;
                    kb.frag_map((&s_acc, t.clone()), &[(&s_acc, t)], |r, c, x| {
                        let (grow, col) = (row0.clone() + r, col0.clone() + c);
                        let mut s = x[0].clone() * scale;
                        if let Some(m) = mask {
                            let inside = grow.clone().lt(sq).and(col.clone().lt(skv));
                            let at = [z.clone(), grow.clone(), col.clone()];
                            let add = load_or(m, at, inside, Expr::zero(m.dtype()));
                            s = s + add.cast(DType::F32) * log2e;
                        }
                        // Keys past the end exist only where the tiles do not divide them.
                        let mut keep = Vec::new();
                        if skv % bkv != 0 {
                            keep.push(col.clone().lt(skv));
                        }
                        if causal {
                            keep.push(col.le(grow));
                        }
                        if keep.is_empty() {
                            s
                        } else {
                            Expr::select(Expr::all(keep), s, Expr::f32(MASKED))
                        }
                    });
                });
                let strip = (&s_acc, i.clone() * nf);
                let this = (&m_run, i.clone());
                kb.frag_row_reduce((&m_new, zero.clone()), strip.clone(), nf as u32, RowOp::Max);
                let m_new_at = || (&m_new, zero.clone());
                kb.frag_map(m_new_at(), &[m_new_at(), this.clone()], |_, _, x| {
                    x[0].clone().max(x[1].clone())
                });
                kb.unroll("j", nf, |kb, j| {
                    let t = i.clone() * nf + j;
                    kb.frag_map(
                        (&s_acc, t.clone()),
                        &[(&s_acc, t), m_new_at()],
                        |_, _, x| te::exp2(x[0].clone() - x[1].clone()),
                    );
                });
                kb.frag_row_reduce((&l_step, zero.clone()), strip, nf as u32, RowOp::Sum);
                kb.frag_map(
                    (&alpha, zero.clone()),
                    &[this.clone(), m_new_at()],
                    |_, _, x| te::exp2(x[0].clone() - x[1].clone()),
                );
                let l_at = (&l_run, i.clone());
                let parts = [
                    l_at.clone(),
                    (&alpha, zero.clone()),
                    (&l_step, zero.clone()),
                ];
                kb.frag_map(l_at, &parts, |_, _, x| {
                    x[0].clone() * x[1].clone() + x[2].clone()
                });
                kb.frag_map(this, &[m_new_at()], |_, _, x| x[0].clone());
                // O = α·O + P · V, P turned into A operands where it is.
                kb.unroll("j", nv, |kb, j| {
                    let t = i.clone() * nv + j;
                    kb.frag_map(
                        (&o_acc, t.clone()),
                        &[(&o_acc, t), (&alpha, zero.clone())],
                        |_, _, x| x[0].clone() * x[1].clone(),
                    );
                });
                kb.unroll("kk", nf, |kb, kk| {
                    kb.frag_convert((&p_frag, kk.clone()), (&s_acc, i.clone() * nf + kk));
                });
                kb.unroll("kk", nf, |kb, kk| {
                    kb.unroll("j", nv, |kb, j| {
                        kb.frag_load(&v_frag, 0, &v_s, at(kk.clone() * f, j.clone() * f));
                        let acc = i.clone() * nv + j;
                        kb.mma(
                            (&o_acc, acc.clone()),
                            (&p_frag, kk.clone()),
                            (&v_frag, zero.clone()),
                            (&o_acc, acc),
                        );
                    });
                });
            });
            kb.barrier();
        };
        kb.serial("jt", kv_tiles, |kb, jt| {
            if skipping {
                // Key tiles wholly after the block's last query row hold only masked
                // scores: skipped.
                kb.if_(needed(jt.clone()), |kb| step(kb, jt));
            } else {
                step(kb, jt);
            }
        });

        // y = O / l through `O_s`, rounded to y's type where the row and column exist.
        kb.unroll("i", fq, |kb, i| {
            kb.unroll("j", nv, |kb, j| {
                let t = i.clone() * nv + j.clone();
                let l = (&l_run, i.clone());
                kb.frag_map((&o_acc, t.clone()), &[(&o_acc, t.clone()), l], |_, _, x| {
                    x[0].clone() / x[1].clone()
                });
                let row = warp.clone() * rw + i.clone() * f;
                kb.frag_store(&o_acc, t, &o_s, [row, j * f]);
            });
        });
        kb.barrier();
        let total = bq * dv;
        kb.serial("e", ceil_div(total, threads), |kb, e| {
            let idx = kb.let_("idx", e * threads + tx.clone());
            let (r, c) = (idx.clone() / dv, idx.clone() % dv);
            let grow = q0.clone() + r.clone();
            let inside = idx.lt(total).and(grow.clone().lt(sq));
            let value = o_s.at(&[r, c.clone()]).cast(y.dtype());
            kb.store_if(inside, y, [z.clone(), grow, c], value);
        });
    });
}

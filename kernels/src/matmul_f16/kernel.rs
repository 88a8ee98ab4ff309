//! The fp16 matmul template's kernel (see the module docs for its shape).

use weft_ir::arith::simplify;
use weft_ir::fragment::{FragLayout, FragRole, MmaShape};
use weft_ir::mapping::spatial;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError};

use super::F16Params;
use crate::split_last::{self, LastPart};
use crate::tiling::{
    Coverage, batched_at, clamp_to_edge, fetch_k_tile, k_sub_steps, swizzle, tile_origin,
};
use crate::{block_index, ceil_div, grid_for};

/// Halves of padding per shared row: 16 bytes, so rows stay 16-byte aligned (`ldmatrix`,
/// 16-byte copies) and consecutive rows start in different banks.
const PAD: i64 = 8;

/// The fp16 matmul template at `m × n × k` over new buffers `A`, `B`, `C` (f16).
pub fn template(
    m: i64,
    n: i64,
    k: i64,
    p: &F16Params,
) -> Result<weft_ir::func::Func, TemplateError> {
    let a = te::placeholder("A", &[m, k], DType::F16);
    let b = te::placeholder("B", &[k, n], DType::F16);
    let c = te::placeholder("C", &[m, n], DType::F16);
    let mut t = Template::new("matmul_f16");
    for x in [&a, &b, &c] {
        t.param(x);
    }
    if p.warpgroups > 0 {
        super::hopper::add_kernel(&mut t, &a, &b, &c, p);
    } else {
        // Placeholders: a dimension the tiles divide needs no bounds test.
        add_kernel(&mut t, &a, &b, &c, p, true, None);
    }
    t.finish()
}

/// The template computing `c = a @ b` over given tensors (placeholders, or computed
/// tensors that [`weft_ir::fusion`] inlines into the loads: an im2col); an epilogue (a
/// layout, a bias and ReLU) is fused into its stores the same way. Where `a` and `b` are
/// placeholders (`[m, k]` and `[k, n]`: stored operands read as they are) the kernel is
/// [`template`]'s — Hopper's path (`wg` > 0) and fragment copies included — with `c`
/// the only difference. Over computed operands `wg` > 0 gathers them with the threads
/// ([`super::hopper_views`]).
pub fn template_over(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &F16Params,
) -> Result<weft_ir::func::Func, TemplateError> {
    let placeholders = [a, b]
        .iter()
        .all(|x| x.producer().is_none() && x.ndim() == 2 && x.dtype() == DType::F16);
    let two_d = [a, b]
        .iter()
        .all(|x| x.ndim() == 2 && x.dtype() == DType::F16);
    if p.warpgroups > 0 && !two_d {
        return Err(TemplateError::Invalid {
            template: name.to_string(),
            what: "`wg` > 0 (wgmma) multiplies two f16 matrices, not split parts or batches; \
                   use a config with wg = 0"
                .to_string(),
        });
    }
    if p.warpgroups > 0
        && placeholders
        && let Some(why) = super::hopper::unfit(b.shape()[1], a.shape()[1])
    {
        return Err(TemplateError::Invalid {
            template: name.to_string(),
            what: why,
        });
    }
    let mut t = Template::new(name);
    for x in [a, b, c] {
        t.param(x);
    }
    if p.warpgroups > 0 && placeholders {
        super::hopper::add_kernel(&mut t, a, b, c, p);
    } else if p.warpgroups > 0 {
        // Computed operands (an im2col): TMA cannot copy them, the threads gather them.
        super::hopper_views::add_kernel(&mut t, a, b, c, p);
    } else {
        // Through a fused prologue (an im2col) the loads are clamped like a stored
        // operand's; the tile origins' clamp is what bounds the inlined indices for the
        // prover. Fragment copies take stored operands only.
        add_kernel(&mut t, a, b, c, p, placeholders, None);
    }
    t.finish()
}

/// [`template_over`]'s batched form over split parts (`a` `[splits, m, k]`, `b`
/// `[splits, k, n]`, `partial` `[splits, m, n]`), each tile's last part summing the parts
/// into `last.sum` ([`crate::split_last`]). Not on Hopper's path (`wg` > 0), which keeps
/// its summing kernel.
pub fn template_over_last(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    partial: &Buffer,
    last: LastPart,
    p: &F16Params,
) -> Result<weft_ir::func::Func, TemplateError> {
    if p.warpgroups > 0 || a.ndim() != 3 {
        return Err(TemplateError::Invalid {
            template: name.to_string(),
            what:
                "the last part sums split parts on the mma.sync and CUDA-core paths (wg = 0) only"
                    .to_string(),
        });
    }
    let mut t = Template::new(name);
    for x in [a, b, partial, last.sum] {
        t.param(x);
    }
    add_kernel(&mut t, a, b, partial, p, false, Some(last));
    t.finish()
}

/// The kernel; `drop_whole` (operands that are stored tensors, not computed views) lets
/// whole tiles go through fragment copies where the config asks for them.
/// Buffers of rank 3 make it a batched product, `c[z] = a[z] @ b[z]`, one grid layer
/// (`blockIdx.z`) per batch element: how a split-K anchor computes its partial products.
fn add_kernel(
    t: &mut Template,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &F16Params,
    drop_whole: bool,
    last: Option<LastPart>,
) {
    let batched = a.ndim() == 3;
    let d = usize::from(batched);
    let batch = if batched { a.shape()[0] } else { 1 };
    let (m, k, n) = (a.shape()[d], a.shape()[d + 1], b.shape()[d + 1]);
    let (bm, bn, bk) = (p.block_m(), p.block_n(), p.bk);
    let ([wm, wn], [fm, fn_]) = (p.warps, p.frags);
    let f = p.tile();
    let threads = p.threads();
    // `vec`-half (16- or 8-byte) global loads where rows keep them aligned.
    let lanes = |len: i64| {
        [p.vec, 4, 2]
            .into_iter()
            .find(|l| len % l == 0)
            .unwrap_or(1)
    };
    let (va, vb) = (lanes(k), lanes(n));
    let (tiles_m, tiles_n, k_tiles) = (ceil_div(m, bm), ceil_div(n, bn), ceil_div(k, bk));
    // 16-byte copies: rows spread against shared-store bank conflicts.
    let spread = |c: Coverage, lanes: i64| if lanes == 8 { c.spread_rows() } else { c };
    let a_cov = spread(Coverage::new(bm, bk / va, threads), va);
    let b_cov = spread(Coverage::new(bk, bn / vb, threads), vb);
    let blocks = tiles_m * tiles_n;
    let grid = grid_for(blocks);
    let cdt = c.dtype();
    // Copies through fragments need whole tiles: every fragment load reads inside A and B.
    let coop = p.coop_copy && !batched && drop_whole && m % bm == 0 && n % bn == 0 && k % bk == 0;
    let counters = last.map(|_| split_last::counters(t, blocks));

    t.kernel([grid[0], grid[1], batch], threads, |kb| {
        let tx = kb.thread_x();
        let at = batched_at(kb, batched);
        let pid = block_index(kb, grid);
        let body = |kb: &mut KernelBuilder| {
            let (tile_m, tile_n) = swizzle(kb, pid.clone(), tiles_m, tiles_n, p.group);
            let m0 = tile_origin(kb, "m0", tile_m, bm, tiles_m);
            let n0 = tile_origin(kb, "n0", tile_n, bn, tiles_n);
            let stages = p.stages;
            let a_smem = kb.shared("A_smem", &[stages, bm, bk + PAD], DType::F16);
            let b_smem = kb.shared("B_smem", &[stages, bk, bn + PAD], DType::F16);
            // Register staging, unless the copies go global -> shared asynchronously or
            // through fragments.
            // With `pf` = 2, two sets of them (set `t % 2` holds tile `t`), indexed by
            // constants: the k loop is unrolled by two.
            let ldg = !p.async_copy && !coop;
            let sets = if ldg { p.prefetch } else { 1 };
            let a_ldg = kb.local(
                "A_ldg",
                &[if ldg { a_cov.passes * sets } else { 1 }, va],
                DType::F16,
            );
            let b_ldg = kb.local(
                "B_ldg",
                &[if ldg { b_cov.passes * sets } else { 1 }, vb],
                DType::F16,
            );
            if p.async_copy {
                kb.async_pipeline(stages as u32);
            }
            // Rows of A and columns of B past the matrix's edge read the last one
            // (clamped): they reach only outputs never stored, and a clamped address is
            // loop-invariant where a test is not. Only a `partial` tile (the last, where
            // `bk` does not divide k) tests k and reads zero past it.
            //
            // Over computed operands (an im2col view) a ragged dimension keeps its test
            // instead: a clamped row is an atom `min(row, M - 1)` the simplifier folds the
            // view's `row // W * (W·C) + row % W * C` into (`min(..) * C`), which leaves
            // the prover without the padding guards' hold on its parts. The test is
            // loop-invariant; what the k loop sheds is the test of k.
            let edge = |i: Expr, len: i64, tile: i64, lanes: i64| -> (Expr, Option<Expr>) {
                if drop_whole || len % tile == 0 {
                    (clamp_to_edge(i, len, tile, lanes), None)
                } else {
                    (i.clone(), Some(i.lt(len)))
                }
            };
            // The tile at k0, predicated and zero outside the matrices, into this thread's
            // registers (`None`: staging set `set`) or straight into shared stage `s`
            // (`Some(s)`: `cp.async` on CUDA sm_80+, complete at the next barrier).
            let gather =
                |kb: &mut KernelBuilder, k0: Expr, stage: Option<Expr>, set: i64, partial: bool| {
                    let zero = || Expr::zero(DType::F16);
                    a_cov.each(kb, &tx, &|kb, p, r, v| {
                        let ((row, row_test), col) = (
                            edge(m0.clone() + r.clone(), m, bm, 1),
                            simplify(&(k0.clone() + v.clone() * va)),
                        );
                        let inside = Expr::all(
                            [row_test, partial.then(|| col.clone().lt(k))]
                                .into_iter()
                                .flatten(),
                        );
                        let (dst, to) = match &stage {
                            Some(s) => (&a_smem, vec![s.clone(), r, v * va]),
                            None => (&a_ldg, vec![in_set(p, set, a_cov.passes), Expr::int(0)]),
                        };
                        kb.copy_if(va, dst, to, a, at(row, col), inside, zero());
                    });
                    b_cov.each(kb, &tx, &|kb, p, r, v| {
                        let (row, (col, col_test)) = (
                            simplify(&(k0.clone() + r.clone())),
                            edge(n0.clone() + v.clone() * vb, n, bn, vb),
                        );
                        let inside = Expr::all(
                            [partial.then(|| row.clone().lt(k)), col_test]
                                .into_iter()
                                .flatten(),
                        );
                        let (dst, to) = match &stage {
                            Some(s) => (&b_smem, vec![s.clone(), r, v * vb]),
                            None => (&b_ldg, vec![in_set(p, set, b_cov.passes), Expr::int(0)]),
                        };
                        kb.copy_if(vb, dst, to, b, at(row, col), inside, zero());
                    });
                };
            // Staging set `set` into shared stage `s`.
            let store = |kb: &mut KernelBuilder, s: Expr, set: i64| {
                a_cov.each(kb, &tx, &|kb, p, r, v| {
                    kb.copy(
                        va,
                        &a_smem,
                        [s.clone(), r, v * va],
                        &a_ldg,
                        [in_set(p, set, a_cov.passes), Expr::int(0)],
                    );
                });
                b_cov.each(kb, &tx, &|kb, p, r, v| {
                    kb.copy(
                        vb,
                        &b_smem,
                        [s.clone(), r, v * vb],
                        &b_ldg,
                        [in_set(p, set, b_cov.passes), Expr::int(0)],
                    );
                });
            };

            let copies = coop.then(|| FragmentCopies::new(kb, p, &tx, (a, b), (&a_smem, &b_smem)));

            // The tile at `ko` is partial when it is the last and `bk` does not divide k.
            let ragged = k % bk != 0;
            let partial = |tile: i64| ragged && tile == k_tiles - 1;
            // Tile `tile` (an expression, at least `first`) into `stage`.
            let fetch =
                |kb: &mut KernelBuilder, tile: Expr, stage: Option<Expr>, set: i64, first: i64| {
                    fetch_k_tile(kb, tile, (k_tiles, ragged, first), &|kb, tile, partial| {
                        gather(kb, tile * bk, stage.clone(), set, partial)
                    });
                };
            if let Some(cc) = &copies {
                cc.load(kb, (&m0, &n0), Expr::int(0));
                cc.store(kb, Expr::int(0));
                kb.barrier();
            } else if p.async_copy {
                // The first `stages - 1` tiles, one barrier (one group of copies) each.
                for s in 0..stages - 1 {
                    if s < k_tiles {
                        gather(kb, Expr::int(s * bk), Some(Expr::int(s)), 0, partial(s));
                    }
                    kb.barrier();
                }
            } else {
                gather(kb, Expr::int(0), None, 0, partial(0));
                store(kb, Expr::int(0), 0);
                if p.prefetch == 2 && k_tiles > 1 {
                    // Tile 1 waits in set 1 through step 0.
                    gather(kb, Expr::int(bk), None, 1, partial(1));
                }
                kb.barrier();
            }

            let warp = kb.let_("warp", tx.clone() / 32);
            let lane = kb.let_("lane", tx.clone() % 32);
            let stage = Stage {
                a_smem: &a_smem,
                b_smem: &b_smem,
                m0: &m0,
                n0: &n0,
                lane: &lane,
                at: &at,
                c,
                cdt,
                dims: (m, n, k_tiles),
            };
            kb.for_tasks(
                "wi, wj",
                spatial(&[wm, wn]),
                warp.clone(),
                |kb, [wi, wj]| {
                    let wrow = kb.let_("wrow", wi * (fm * f));
                    let wcol = kb.let_("wcol", wj * (fn_ * f));
                    let step =
                        |kb: &mut KernelBuilder,
                         ko: &Expr,
                         parity: i64,
                         inner: &dyn Fn(&mut KernelBuilder, Expr),
                         tail: &dyn Fn(&mut KernelBuilder, Expr)| {
                            if let Some(cc) = &copies {
                                // Unconditional (after the last tile, tile 0 again, into a
                                // stage nobody reads): cooperative-matrix operations need
                                // uniform control flow, and naga takes a branch on the
                                // loop variable as non-uniform.
                                let next = (ko.clone() + 1) % k_tiles;
                                cc.load(kb, (&m0, &n0), next * bk);
                                inner(kb, ko.clone() % 2);
                                cc.store(kb, (ko.clone() + 1) % 2);
                            } else if p.async_copy {
                                // Tile ko + stages - 1 goes to the stage last read before
                                // the previous step's barrier, while this step computes;
                                // it is read stages - 1 barriers later.
                                let next = ko.clone() + (stages - 1);
                                fetch(kb, next.clone(), Some(next % stages), 0, stages - 1);
                                inner(kb, ko.clone() % stages);
                            } else if p.prefetch == 2 {
                                // Tile ko + 2 into set ko % 2 (tile ko's, stored a step
                                // ago) while tile ko multiplies; tile ko + 1, loaded a
                                // step ago, from set (ko + 1) % 2 into its stage.
                                let set = parity;
                                let more = (ko.clone() + 1).lt(k_tiles);
                                fetch(kb, ko.clone() + 2, None, set, 2);
                                inner(kb, ko.clone() % 2);
                                kb.if_(more, |kb| store(kb, (ko.clone() + 1) % 2, 1 - set));
                            } else {
                                let more = (ko.clone() + 1).lt(k_tiles);
                                fetch(kb, ko.clone() + 1, None, 0, 1);
                                inner(kb, ko.clone() % 2);
                                kb.if_(more, |kb| store(kb, (ko.clone() + 1) % 2, 0));
                            }
                            kb.barrier();
                            // After the barrier, tile ko + 1 is in its stage.
                            tail(kb, (ko.clone() + 1) % stages);
                        };
                    if p.mma == 0 {
                        stage.cuda_cores(kb, p, &wrow, &wcol, &step);
                    } else {
                        stage.matrix_units(kb, p, &warp, &wrow, &wcol, &step);
                    }
                },
            );
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

/// One step of the main loop at `ko`: fetch a later tile, `inner` on stage `ko`'s tile,
/// the barrier, then `tail` with the stage that holds tile `ko + 1`.
type Step<'s> = &'s dyn Fn(
    &mut KernelBuilder,
    &Expr,
    i64,
    &dyn Fn(&mut KernelBuilder, Expr),
    &dyn Fn(&mut KernelBuilder, Expr),
);

/// Pass `p`'s row of the staging registers in set `set` (of `passes` rows each).
fn in_set(p: Expr, set: i64, passes: i64) -> Expr {
    if set == 0 { p } else { p + set * passes }
}

/// The k loop over `k_tiles` steps, `body(kb, ko, parity)`. With `pairs` it is unrolled by
/// two (and an odd last step peeled), so that `parity` = `ko % 2` is a constant a step can
/// index registers by; without, `parity` is 0.
fn k_loop(
    kb: &mut KernelBuilder,
    k_tiles: i64,
    pairs: bool,
    body: &dyn Fn(&mut KernelBuilder, Expr, i64),
) {
    if !pairs {
        kb.serial("ko", k_tiles, |kb, ko| body(kb, ko, 0));
        return;
    }
    if k_tiles >= 2 {
        kb.serial("ko2", k_tiles / 2, |kb, h| {
            body(kb, h.clone() * 2, 0);
            body(kb, h * 2 + 1, 1);
        });
    }
    if k_tiles % 2 == 1 {
        body(kb, Expr::int(k_tiles - 1), 0);
    }
}

/// What the main loop and the epilogue share.
struct Stage<'a> {
    a_smem: &'a Buffer,
    b_smem: &'a Buffer,
    m0: &'a Expr,
    n0: &'a Expr,
    lane: &'a Expr,
    /// C's indices of an element (a batch index first where batched).
    at: &'a dyn Fn(Expr, Expr) -> Vec<Expr>,
    c: &'a Buffer,
    cdt: DType,
    dims: (i64, i64, i64),
}

impl Stage<'_> {
    /// `c[row, col] = value` (converted to C's type) where the element is inside C.
    fn put(&self, kb: &mut KernelBuilder, row: Expr, col: Expr, value: Expr) {
        let (m, n, _) = self.dims;
        let inside = row.clone().lt(m).and(col.clone().lt(n));
        let v = value.cast(self.cdt);
        kb.store_if(inside, self.c, (self.at)(row, col), v);
    }

    /// The main loop on matrix units, then each accumulator through the warp's staging
    /// tile to C.
    fn matrix_units(
        &self,
        kb: &mut KernelBuilder,
        p: &F16Params,
        warp: &Expr,
        wrow: &Expr,
        wcol: &Expr,
        step: Step,
    ) {
        let f = p.mma;
        let ([wm, wn], [fm, fn_]) = (p.warps, p.frags);
        let shape = MmaShape {
            m: f as u32,
            n: f as u32,
            k: f as u32,
        };
        let row_major = FragLayout::RowMajor;
        // `fb` sets of A and B fragments: with 2, sub-step kk + 1's are loaded while kk's
        // multiply (the shared-memory latency hides behind the tensor cores).
        let nbuf = p.frag_buffers;
        let fa = kb.fragment(
            "a_frag",
            FragRole::A,
            shape,
            DType::F16,
            row_major,
            (fm * nbuf) as u32,
        );
        let fb = kb.fragment(
            "b_frag",
            FragRole::B,
            shape,
            DType::F16,
            row_major,
            (fn_ * nbuf) as u32,
        );
        let acc = kb.fragment(
            "acc",
            FragRole::Accumulator,
            shape,
            DType::F32,
            row_major,
            (fm * fn_) as u32,
        );
        let staging = kb.shared("C_stage", &[wm * wn, f, f + 4], DType::F32);
        kb.unroll("i", fm * fn_, |kb, i| kb.frag_fill(&acc, i, 0.0f32));
        let (_, _, k_tiles) = self.dims;
        let sub_steps = p.bk / f;
        // Sub-step kk's fragments of stage s into fragment set `set`.
        let load = |kb: &mut KernelBuilder, s: &Expr, kk: Expr, set: Expr| {
            kb.unroll("i", fm, |kb, i| {
                let at = [s.clone(), wrow.clone() + i.clone() * f, kk.clone() * f];
                kb.frag_load(&fa, simplify(&(set.clone() * fm + i)), self.a_smem, at);
            });
            kb.unroll("j", fn_, |kb, j| {
                let at = [s.clone(), kk.clone() * f, wcol.clone() + j.clone() * f];
                kb.frag_load(&fb, simplify(&(set.clone() * fn_ + j)), self.b_smem, at);
            });
        };
        let multiply = |kb: &mut KernelBuilder, set: Expr| {
            kb.unroll("i", fm, |kb, i| {
                kb.unroll("j", fn_, |kb, j| {
                    let t = i.clone() * fn_ + j.clone();
                    let a = simplify(&(set.clone() * fm + i.clone()));
                    let b = simplify(&(set.clone() * fn_ + j));
                    kb.mma((&acc, t.clone()), (&fa, a), (&fb, b), (&acc, t));
                });
            });
        };
        if nbuf == 2 {
            // Two fragment sets, pipelined across tiles: sub-step kk + 1's fragments load
            // while kk's multiply, and the last sub-step multiplies after the barrier,
            // while the next tile's first fragments load (the shared-memory latency
            // never stands alone after a barrier). Sub-step kk of tile ko uses set
            // (ko * sub_steps + kk) % 2. With an even number of sub-steps every tile
            // starts on set 0; with one (`bk` = `mma`: the large Vulkan tiles, whose k
            // step of 16 is all that fits 48 KiB) tile ko starts on set ko % 2, so the
            // loop is unrolled by two to make it a constant.
            let odd = sub_steps % 2 == 1;
            load(kb, &Expr::int(0), Expr::int(0), Expr::int(0));
            k_loop(kb, k_tiles, p.prefetch == 2 || odd, &|kb, ko, parity| {
                let first = if odd { parity } else { 0 };
                let set = |kk: Expr| simplify(&((kk + first) % 2));
                step(
                    kb,
                    &ko,
                    parity,
                    &|kb, s| {
                        if sub_steps > 1 {
                            kb.unroll("kk", sub_steps - 1, |kb, kk| {
                                let next = kk.clone() + 1;
                                load(kb, &s, next.clone(), set(next));
                                multiply(kb, set(kk));
                            });
                        }
                    },
                    &|kb, s| {
                        // Unconditional, also after the last tile (stale, unused shared
                        // data that no thread writes any more): cooperative-matrix loads
                        // need uniform control flow, and naga takes a branch on the loop
                        // variable (a function variable) as non-uniform.
                        load(kb, &s, Expr::int(0), set(Expr::int(sub_steps)));
                        multiply(kb, set(Expr::int(sub_steps - 1)));
                    },
                );
            });
        } else {
            k_loop(kb, k_tiles, p.prefetch == 2, &|kb, ko, parity| {
                step(
                    kb,
                    &ko,
                    parity,
                    &|kb, s| {
                        kb.unroll("kk", sub_steps, |kb, kk| {
                            load(kb, &s, kk, Expr::int(0));
                            multiply(kb, Expr::int(0));
                        });
                    },
                    &|_, _| {},
                );
            });
        }
        // Epilogue: one accumulator at a time through the warp's staging tile, with a
        // barrier on each side (the lanes read what the fragment store wrote).
        let per_lane = f * f / 32;
        kb.unroll("i", fm, |kb, i| {
            kb.unroll("j", fn_, |kb, j| {
                let t = i.clone() * fn_ + j.clone();
                kb.frag_store(
                    &acc,
                    t,
                    &staging,
                    [warp.clone(), Expr::int(0), Expr::int(0)],
                );
                kb.barrier();
                kb.unroll("e", per_lane, |kb, e| {
                    let idx = e * 32 + self.lane.clone();
                    let (r, cc) = (simplify(&(idx.clone() / f)), simplify(&(idx % f)));
                    let row = self.m0.clone() + wrow.clone() + i.clone() * f + r.clone();
                    let col = self.n0.clone() + wcol.clone() + j.clone() * f + cc.clone();
                    let v = staging.at(&[warp.clone(), r, cc]);
                    self.put(kb, row, col, v);
                });
                kb.barrier();
            });
        });
    }

    /// The main loop on CUDA cores: lane `(li, lj)` of `spatial(4, 8)` accumulates rows
    /// `wrow + li + 4a` and columns `wcol + lj + 8b` of the warp tile in f32.
    fn cuda_cores(
        &self,
        kb: &mut KernelBuilder,
        p: &F16Params,
        wrow: &Expr,
        wcol: &Expr,
        step: Step,
    ) {
        let (rows, cols) = p.lane_tile();
        let acc = kb.local("acc", &[rows, cols], DType::F32);
        let a_reg = kb.local("a_reg", &[rows], DType::F32);
        let b_reg = kb.local("b_reg", &[cols], DType::F32);
        kb.unroll("i", rows, |kb, i| {
            kb.unroll("j", cols, |kb, j| kb.store(&acc, [i, j], 0.0f32));
        });
        let (_, _, k_tiles) = self.dims;
        kb.for_tasks(
            "li, lj",
            spatial(&[4, 8]),
            self.lane.clone(),
            |kb, [li, lj]| {
                k_loop(kb, k_tiles, p.prefetch == 2, &|kb, ko, parity| {
                    step(
                        kb,
                        &ko,
                        parity,
                        &|kb, s| {
                            k_sub_steps(kb, p.bk, p.k_unroll, |kb, kk| {
                                kb.unroll("i", rows, |kb, i| {
                                    let row = wrow.clone() + li.clone() + i.clone() * 4;
                                    let v = self
                                        .a_smem
                                        .at(&[s.clone(), row, kk.clone()])
                                        .cast(DType::F32);
                                    kb.store(&a_reg, [i], v);
                                });
                                kb.unroll("j", cols, |kb, j| {
                                    let col = wcol.clone() + lj.clone() + j.clone() * 8;
                                    let v = self
                                        .b_smem
                                        .at(&[s.clone(), kk.clone(), col])
                                        .cast(DType::F32);
                                    kb.store(&b_reg, [j], v);
                                });
                                kb.unroll("i", rows, |kb, i| {
                                    kb.unroll("j", cols, |kb, j| {
                                        let prod = a_reg.at(&[&i]) * b_reg.at(&[&j]);
                                        let sum = acc.at(&[i.clone(), j.clone()]) + prod;
                                        kb.store(&acc, [i.clone(), j], sum);
                                    });
                                });
                            });
                        },
                        &|_, _| {},
                    );
                });
                kb.unroll("i", rows, |kb, i| {
                    kb.unroll("j", cols, |kb, j| {
                        let row = self.m0.clone() + wrow.clone() + li.clone() + i.clone() * 4;
                        let col = self.n0.clone() + wcol.clone() + lj.clone() + j.clone() * 8;
                        self.put(kb, row, col, acc.at(&[i, j]));
                    });
                });
            },
        );
    }
}

/// Tiles copied global → shared through operand fragments (`cc = 1`): each warp loads its
/// share of the A and B tiles' `F × F` fragment tiles from global memory with the matrix
/// units' loads and stores them whole into the shared stage (WGSL: `coopLoadT` and
/// `coopStoreT`, where element-wise copies store one f16 at a time). Only where the tiles
/// divide the matrices, so that no fragment load reads past an edge.
struct FragmentCopies<'a> {
    f: i64,
    warps: i64,
    warp: Expr,
    /// A, then B: the matrix, the copy fragments, the shared tile, and the fragment
    /// tiles along a row of the tile (`bk / F` for A, `BN / F` for B).
    operands: [(&'a Buffer, weft_ir::fragment::Fragment, &'a Buffer, i64); 2],
}

impl<'a> FragmentCopies<'a> {
    fn new(
        kb: &mut KernelBuilder,
        p: &F16Params,
        tx: &Expr,
        (a, b): (&'a Buffer, &'a Buffer),
        (a_smem, b_smem): (&'a Buffer, &'a Buffer),
    ) -> FragmentCopies<'a> {
        let f = p.mma;
        let warps = p.warps[0] * p.warps[1];
        let shape = MmaShape {
            m: f as u32,
            n: f as u32,
            k: f as u32,
        };
        // A `rows × cols` tile's fragment tiles, spread evenly over the warps
        // (`from_config` checked that they are).
        let mut operand = |name: &str, role, global, smem, rows: i64, cols: i64| {
            let count = ((rows / f) * (cols / f) / warps) as u32;
            let frag = kb.fragment(name, role, shape, DType::F16, FragLayout::RowMajor, count);
            (global, frag, smem, cols / f)
        };
        let operands = [
            operand("a_copy", FragRole::A, a, a_smem, p.block_m(), p.bk),
            operand("b_copy", FragRole::B, b, b_smem, p.bk, p.block_n()),
        ];
        FragmentCopies {
            f,
            warps,
            warp: tx.clone() / 32,
            operands,
        }
    }

    /// Runs `body(t, row, col)` for each fragment tile `t` of this warp in an operand
    /// tile `per_row` fragments wide, with its first element's place in the tile.
    fn each(
        &self,
        kb: &mut KernelBuilder,
        frag: &weft_ir::fragment::Fragment,
        per_row: i64,
        body: impl Fn(&mut KernelBuilder, Expr, Expr, Expr),
    ) {
        kb.unroll("t", frag.count() as i64, |kb, t| {
            let idx = self.warp.clone() + t.clone() * self.warps;
            let row = simplify(&(idx.clone() / per_row * self.f));
            let col = simplify(&(idx % per_row * self.f));
            body(kb, t, row, col);
        });
    }

    /// This warp's fragment tiles of the tiles at `k0` (A's rows from `m0`, B's columns
    /// from `n0`) into its copy fragments.
    fn load(&self, kb: &mut KernelBuilder, (m0, n0): (&Expr, &Expr), k0: Expr) {
        let origins = [(m0.clone(), k0.clone()), (k0, n0.clone())];
        for ((global, frag, _, per_row), (r0, c0)) in self.operands.iter().zip(origins) {
            self.each(kb, frag, *per_row, |kb, t, r, c| {
                kb.frag_load(frag, t, global, [r0.clone() + r, c0.clone() + c]);
            });
        }
    }

    /// The copy fragments into shared stage `s`.
    fn store(&self, kb: &mut KernelBuilder, s: Expr) {
        for (_, frag, smem, per_row) in &self.operands {
            self.each(kb, frag, *per_row, |kb, t, r, c| {
                kb.frag_store(frag, t, smem, [s.clone(), r, c]);
            });
        }
    }
}

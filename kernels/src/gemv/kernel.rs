//! The skinny-product template's kernel, written with [`weft_ir::template`].

use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError, load_or};

use super::{COMBINE_BYTES, GemvParams, LOAD_BYTES, Lead, RowNorm, vec_of};
use crate::{block_index, ceil_div, grid_for, split_last};

/// The unit DRAM and L2 move (bytes): what one prefetch of [`Lead::Sectors`] covers.
const SECTOR_BYTES: i64 = 32;

/// `x` as f32 (a cast where it is not).
fn as_f32(x: Expr) -> Expr {
    if x.dtype() == DType::F32 {
        x
    } else {
        x.cast(DType::F32)
    }
}

/// The skinny-product template computing `c = a · b` over given tensors (`a` of `m × k`,
/// `b` of `k × n`, `c` of `m × n`: te placeholders, or computed tensors that
/// [`weft_ir::fusion`] inlines), one kernel.
pub fn template_over(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &GemvParams,
) -> Result<Func, TemplateError> {
    template_normed(name, a, b, c, p, None)
}

/// The skinny-product template with an RMS norm of `a`'s rows folded in where `norm` is
/// given: `c[i, j] = r[i] · Σ_k a[i, k] · γ[k] · b[k, j]`, `r[i] = 1 / sqrt(mean_k
/// a[i, k]² + ε)` — the product of `RMSNorm(a) · b` without the norm's kernel. The
/// squares are summed in f32 in the same pass over `a` as the product (each block reads
/// every row of `a` anyway) and combined in the same fixed order as the sums; `r` scales
/// each sum at the store, before the caller's epilogue.
pub fn template_normed(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &GemvParams,
    norm: Option<&RowNorm>,
) -> Result<Func, TemplateError> {
    template_split(name, a, b, c, p, norm, 1)
}

/// [`template_normed`] with the reduction split over `splits` grid layers (1: whole),
/// each over its slice of `k` ([`super::split_rows`] rows, the last part the rest),
/// whose last part to arrive sums ([`crate::split_last`]): each part stores its `m × bn`
/// sums in f32 to a temporary (`partial`, `[splits, m, n]`) and, with a norm, its
/// sums of squares (`partial_squares`, `[tiles, splits, m]`: every column block sums
/// them for itself); the column block's last part sums the parts in order `0..splits`
/// (the bits do not depend on which arrives last), applies the norm's factor, and
/// stores `c`, into which the caller fuses its epilogue. Only for targets with a
/// device-scope fence ([`weft_codegen_common::TargetLimits::device_fence`]).
pub fn template_split(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &GemvParams,
    norm: Option<&RowNorm>,
    splits: i64,
) -> Result<Func, TemplateError> {
    template_prefetched(name, a, b, c, p, norm, splits, Lead::Off)
}

/// [`template_split`] doing `lead` before it waits for the kernel launched before it
/// ([`weft_ir::func::GridControl::Wait`], placed by the template unless `lead` is
/// [`Lead::Off`]): with [`Lead::Rows`] or [`Lead::Sectors`], where `b` is stored (a
/// placeholder, not a view that fusion inlines), each thread first prefetches into L2
/// the rows of `b` it will load. A weight does not depend on the kernel before, so under
/// CUDA's programmatic dependent launch its bytes stream while that kernel finishes; a
/// target without that wait ([`weft_codegen_common::TargetLimits::grid_dependency`]) has
/// no use for it. A view of `b` is not prefetched ([`Lead::Wait`] then).
#[allow(clippy::too_many_arguments)]
pub fn template_prefetched(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &GemvParams,
    norm: Option<&RowNorm>,
    splits: i64,
    lead: Lead,
) -> Result<Func, TemplateError> {
    let k = a.shape()[1];
    if splits < 1 || (splits > 1 && !super::split_fits(k, splits)) {
        return Err(TemplateError::Invalid {
            template: name.to_string(),
            what: format!("k = {k} cannot be split in {splits} parts, none of them empty"),
        });
    }
    let mut t = Template::new(name);
    for x in [a, b, c] {
        t.param(x);
    }
    if let Some(nm) = norm {
        t.param(&nm.gamma);
    }
    add_kernel(&mut t, a, b, c, p, norm, splits, lead.over(b), false);
    t.finish()
}

/// The skinny-product template storing a gated MLP's activation instead of its product:
/// `b` holds the gate's columns then the up projection's (`[k, 2·n]`, the gate/up
/// product of the siblings pass), `c` is `[m, n]`, and
/// `c[i, j] = silu(s[i, j]) · s[i, n + j]` with `s` the product `a · b` (with `a`'s rows
/// RMS-normalized where `norm` is given, the norm's factor scaling both sums). A block owns `bn / 2` columns of `c`:
/// the first `nt / 2` threads of a row segment load the gate's columns, the others the
/// up projection's same columns, so that after the combine the block holds both sums of
/// each of its outputs in shared memory; each output is stored once. The product's `2·n`
/// sums never reach memory and `silu(gate) · up` is no kernel of its own. Needs an even
/// `nt` and `n` a multiple of the 16-byte loads' elements (every load whole); one part
/// (no split), no prefetch.
pub fn template_gated(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &GemvParams,
    norm: Option<&RowNorm>,
) -> Result<Func, TemplateError> {
    let (n, vec) = (c.shape()[1], vec_of(b.dtype()));
    let invalid = |what: String| TemplateError::Invalid {
        template: name.to_string(),
        what,
    };
    if b.shape()[1] != 2 * n {
        return Err(invalid(format!(
            "b has {} columns, not the gate's and the up projection's 2 × {n}",
            b.shape()[1]
        )));
    }
    if p.nt % 2 != 0 {
        return Err(invalid(format!(
            "{} threads a row segment cannot be split between the gate and the up projection",
            p.nt
        )));
    }
    if n % vec != 0 {
        return Err(invalid(format!(
            "{n} columns a half are no multiple of a 16-byte load's {vec} elements"
        )));
    }
    let mut t = Template::new(name);
    for x in [a, b, c] {
        t.param(x);
    }
    if let Some(nm) = norm {
        t.param(&nm.gamma);
    }
    add_kernel(&mut t, a, b, c, p, norm, 1, Lead::Off, true);
    t.finish()
}

/// Adds the kernel `c = a · b` (with `a`'s rows RMS-normalized where `norm` is given),
/// its reduction in `splits` parts, to `t`, doing `lead` before the kernel's wait; with
/// `gated`, `c = silu(gate) · up` of the product's two halves ([`template_gated`]).
#[allow(clippy::too_many_arguments)]
fn add_kernel(
    t: &mut Template,
    a: &Buffer,
    b: &Buffer,
    c: &Buffer,
    p: &GemvParams,
    norm: Option<&RowNorm>,
    splits: i64,
    lead: Lead,
    gated: bool,
) {
    // `n`: the columns stored (`c`'s: with `gated`, each half of `b`'s).
    let (m, k, n) = (a.shape()[0], a.shape()[1], c.shape()[1]);
    let (threads, nt, unroll) = (p.threads, p.nt, p.unroll);
    let vec = vec_of(b.dtype());
    // One 16-byte load where every row of `b` starts 16-byte aligned; element by element
    // (each tested against `n`) where it does not.
    let lanes = if n % vec == 0 { vec } else { 1 };
    let bn = nt * vec;
    // The columns of `c` a block stores: its `bn` sums', or with `gated` half of them
    // (the gate's; the up projection's same columns are the other half).
    let ob = if gated { bn / 2 } else { bn };
    let kt = p.kt();
    let tiles = ceil_div(n, ob);
    let grid = grid_for(tiles);
    let step = kt * unroll;
    // Each part's rows of `b`: `chunk` (the last part the rest, `last_rows`). Steps that
    // every part fills are not tested; the rest (a part's ragged end, and the steps past
    // the last part's end) test each row against the part's end and `k`.
    let chunk = super::split_rows(k, splits);
    let last_rows = k - (splits - 1) * chunk;
    let (full, tail) = (last_rows / step, ceil_div(chunk, step) - last_rows / step);
    let split = splits > 1;
    let partials = split.then(|| {
        let sums = t.temp("partial", &[splits, m, n], DType::F32);
        let squares = norm.map(|_| t.temp("partial_squares", &[tiles, splits, m], DType::F32));
        (sums, squares, split_last::counters(t, tiles))
    });
    // The combine: butterflies over the thread rows within a run of `shuffle` lanes
    // (lanes `nt` apart hold the same columns), leaving `parts` partials a column.
    let run = if p.shuffle > nt { p.shuffle } else { 1 };
    let rows_a_run = if run > 1 { run / nt } else { 1 };
    let parts = kt / rows_a_run;
    // Rows of `c` combined a round, as shared memory allows (with the norm, one more
    // partial a row: its sum of squares).
    let per_row = bn + i64::from(norm.is_some());
    let per_round = (1..=m)
        .rev()
        .find(|&r| parts * r * per_row * 4 <= COMBINE_BYTES)
        .unwrap_or(1);

    t.kernel([grid[0], grid[1], splits], threads, |kb| {
        let tx = kb.thread_x();
        // Blocks past the last tile (a two-dimensional grid's surplus) load and store
        // nothing — their columns are past `n` — but reach every barrier and shuffle.
        let pid = block_index(kb, grid);
        // The part's first row of `b` (split only).
        let z = split.then(|| kb.block_z());
        let offset = z.as_ref().map(|z| kb.let_("k0", z.clone() * chunk));
        let nq = kb.let_("nq", tx.clone() % nt);
        let kq = kb.let_("kq", tx.clone() / nt);
        let n0 = kb.let_("n0", pid.clone() * ob);
        // The thread's first column of `b`, and of its half (tested against `n`): with
        // `gated`, a row segment's first `nt / 2` threads read the gate's columns, the
        // others the up projection's, `n` further.
        let (col0, cin0) = if gated {
            let half = nt / 2;
            let cin0 = kb.let_("cin0", n0.clone() + (nq.clone() % half) * vec);
            (
                kb.let_("col0", (nq.clone() / half) * n + cin0.clone()),
                cin0,
            )
        } else {
            let col0 = kb.let_("col0", n0.clone() + nq.clone() * vec);
            (col0.clone(), col0)
        };
        // One prefetch a 32-byte sector: the threads whose 16-byte piece starts one
        // (with 16-byte loads; element loads prefetch every piece).
        let per_sector = (SECTOR_BYTES / LOAD_BYTES).min(nt);
        let prefetchers = (lead == Lead::Sectors && lanes == vec && per_sector > 1)
            .then(|| (nq.clone() % per_sector).eq_(0));
        if matches!(lead, Lead::Rows | Lead::Sectors) {
            // Every row of `b` the thread's loads below will read (the same rows, steps
            // and tests), before anything that depends on the kernel before: a hint
            // that touches no value, so the part's ragged end only needs to stay
            // inside `b`.
            kb.serial("kp", full + tail, |kb, s| {
                kb.unroll("e", unroll, |kb, e| {
                    let local = s * step + e * kt + kq.clone();
                    let row = match &offset {
                        Some(o) => o.clone() + local.clone(),
                        None => local.clone(),
                    };
                    let mut inside = vec![row.clone().lt(k), cin0.clone().lt(n)];
                    inside.extend(prefetchers.clone());
                    if split {
                        inside.push(local.lt(chunk));
                    }
                    kb.if_(Expr::all(inside), |kb| kb.prefetch(b, [row, col0.clone()]));
                });
            });
        }
        let acc = kb.local("acc", &[m, vec], DType::F32);
        let w = kb.local("w", &[unroll, vec], b.dtype());
        // With `Lead::Loads`, the first step's loads of `b` are issued before the wait
        // (`b` is a constant of the run: no kernel before writes it), so that they are in
        // flight while the kernel before finishes.
        let early = lead == Lead::Loads && full + tail > 0;
        // The first step is a tested one where no step is whole.
        let first_partial = full == 0;
        // The norm's sums of squares, a row each: every thread of a thread row sums the
        // same rows of `a` (its `nt` threads read the same elements), and only the one
        // at column offset 0 hands its sum to the combine.
        let squares = norm.map(|_| kb.local("sq", &[m], DType::F32));

        // One step: `unroll` rows of `b` from `base` (from the part's first row), every
        // load issued before the first product; `partial` (the last step, where `step`
        // does not divide `k`, and a split's tail steps) tests the rows against `k` (and
        // the part's end). `load` issues the step's loads of `b` into `w`, `use_` its
        // products.
        let local = |base: &Expr, e: &Expr| base.clone() + e.clone() * kt + kq.clone();
        let row_of = |base: &Expr, e: &Expr| match &offset {
            Some(o) => o.clone() + local(base, e),
            None => local(base, e),
        };
        let test = |base: &Expr, e: &Expr, row: &Expr| match split {
            true => local(base, e).lt(chunk).and(row.clone().lt(k)),
            false => row.clone().lt(k),
        };
        let load = |kb: &mut KernelBuilder, base: Expr, partial: bool| {
            let row_of = |e: &Expr| row_of(&base, e);
            let test = |e: &Expr, row: &Expr| test(&base, e, row);
            kb.unroll("e", unroll, |kb, e| {
                let row = row_of(&e);
                let row_test = partial.then(|| test(&e, &row));
                if lanes == vec {
                    let inside = Expr::all(row_test.into_iter().chain([cin0.clone().lt(n)]));
                    let zero = Expr::zero(b.dtype());
                    kb.copy_if(
                        vec,
                        &w,
                        [e, Expr::int(0)],
                        b,
                        [row, col0.clone()],
                        inside,
                        zero,
                    );
                } else {
                    kb.unroll("v", vec, |kb, v| {
                        let col = col0.clone() + v.clone();
                        let cin = cin0.clone() + v.clone();
                        let inside = Expr::all(row_test.clone().into_iter().chain([cin.lt(n)]));
                        let value = load_or(b, [row.clone(), col], inside, Expr::zero(b.dtype()));
                        kb.store(&w, [e.clone(), v], value);
                    });
                }
            });
        };
        let use_ = |kb: &mut KernelBuilder, base: Expr, partial: bool| {
            let row_of = |e: &Expr| row_of(&base, e);
            let test = |e: &Expr, row: &Expr| test(&base, e, row);
            kb.unroll("e", unroll, |kb, e| {
                let row = row_of(&e);
                let inside = test(&e, &row);
                // The norm's scale at this row, read once for the `m` rows of `a`.
                let gamma = norm.map(|nm| {
                    let g = match partial {
                        true => load_or(
                            &nm.gamma,
                            [row.clone()],
                            inside.clone(),
                            Expr::zero(nm.gamma.dtype()),
                        ),
                        false => nm.gamma.at(std::slice::from_ref(&row)),
                    };
                    kb.let_("g", as_f32(g))
                });
                kb.unroll("i", m, |kb, i| {
                    let x = match partial {
                        true => load_or(
                            a,
                            [i.clone(), row.clone()],
                            inside.clone(),
                            Expr::zero(a.dtype()),
                        ),
                        false => a.at(&[i.clone(), row.clone()]),
                    };
                    let x = kb.let_("x", as_f32(x));
                    let x = match (&squares, &gamma) {
                        (Some(sq), Some(g)) => {
                            let sum = sq.at(std::slice::from_ref(&i)) + x.clone() * x.clone();
                            kb.store(sq, [i.clone()], sum);
                            kb.let_("xg", x * g.clone())
                        }
                        _ => x,
                    };
                    kb.unroll("v", vec, |kb, v| {
                        let prod = x.clone() * as_f32(w.at(&[e.clone(), v.clone()]));
                        let sum = acc.at(&[i.clone(), v.clone()]) + prod;
                        kb.store(&acc, [i.clone(), v], sum);
                    });
                });
            });
        };
        let chunk = |kb: &mut KernelBuilder, base: Expr, partial: bool| {
            load(kb, base.clone(), partial);
            use_(kb, base, partial);
        };
        if early {
            load(kb, Expr::int(0), first_partial);
        }
        if lead != Lead::Off {
            kb.grid_wait();
        }
        kb.unroll("i", m, |kb, i| {
            kb.unroll("v", vec, |kb, v| kb.store(&acc, [i, v], 0.0f32));
        });
        if let Some(sq) = &squares {
            kb.unroll("i", m, |kb, i| kb.store(sq, [i], 0.0f32));
        }
        // The steps the loop below takes: all of them, or without the first where its
        // loads came before the wait (its products first, over that `w`).
        let (full_left, tail_left) = match (early, first_partial) {
            (false, _) => (full, tail),
            (true, false) => (full - 1, tail),
            (true, true) => (0, tail - 1),
        };
        let (full_from, tail_from) = (full - full_left, full + tail - tail_left);
        if early {
            use_(kb, Expr::int(0), first_partial);
        }
        // Step `i` of a loop starting at step `from` (no `+ 0` where it starts at 0).
        let from = |i: Expr, from: i64| if from == 0 { i } else { i + from };
        match full_left {
            0 => {}
            _ => kb.serial("ko", full_left, |kb, ko| {
                chunk(kb, from(ko, full_from) * step, false)
            }),
        }
        match tail_left {
            0 => {}
            1 => chunk(kb, Expr::int(tail_from * step), true),
            _ => kb.serial("kr", tail_left, |kb, kr| {
                chunk(kb, from(kr, tail_from) * step, true);
            }),
        }

        // Within a run of lanes: thread rows `kq` and `kq ^ (mask / nt)` hold the same
        // columns; after the butterflies every lane of the run holds the run's sums.
        if run > 1 {
            kb.unroll("i", m, |kb, i| {
                kb.unroll("v", vec, |kb, v| {
                    let mut s = kb.let_("s", acc.at(&[i.clone(), v.clone()]));
                    let mut mask = nt;
                    while mask < run {
                        s = kb.let_("s", s.clone() + Expr::shuffle_xor(s, mask));
                        mask *= 2;
                    }
                    kb.store(&acc, [i.clone(), v], s);
                });
                if let Some(sq) = &squares {
                    let mut s = kb.let_("s", sq.at(std::slice::from_ref(&i)));
                    let mut mask = nt;
                    while mask < run {
                        s = kb.let_("s", s.clone() + Expr::shuffle_xor(s, mask));
                        mask *= 2;
                    }
                    kb.store(sq, [i], s);
                }
            });
        }
        // One partial a run (its first `nt` lanes'), `parts` a column, into shared
        // memory; halving steps, each behind a barrier; the total stored.
        let sh = kb.shared("partials", &[parts, per_round * bn], DType::F32);
        // The sums of squares' partials, `parts` a row, combined in the same steps.
        let sh_sq = squares
            .as_ref()
            .map(|_| kb.shared("partial_squares", &[parts, per_round], DType::F32));
        let (first, part) = if run > 1 {
            let lane = kb.let_("lane", tx.clone() % run);
            (Some(lane.lt(nt)), kb.let_("part", kq.clone() / rows_a_run))
        } else {
            (None, kq.clone())
        };
        for (round, r0) in (0..m).step_by(per_round as usize).enumerate() {
            let rows = per_round.min(m - r0);
            let width = rows * bn;
            if round > 0 {
                // The last round's totals are read before this round overwrites them.
                kb.barrier();
            }
            let put = |kb: &mut KernelBuilder| {
                kb.unroll("i", rows, |kb, i| {
                    let to = [part.clone(), i.clone() * bn + nq.clone() * vec];
                    kb.copy(vec, &sh, to, &acc, [i + r0, Expr::int(0)]);
                });
                if let (Some(sq), Some(shs)) = (&squares, &sh_sq) {
                    // Once a thread row: the thread at column offset 0.
                    kb.if_(nq.clone().eq_(0), |kb| {
                        kb.unroll("i", rows, |kb, i| {
                            let value = sq.at(&[i.clone() + r0]);
                            kb.store(shs, [part.clone(), i], value);
                        });
                    });
                }
            };
            match &first {
                Some(f) => kb.if_(f.clone(), put),
                None => put(kb),
            }
            kb.barrier();
            let mut half = parts / 2;
            while half >= 1 {
                each(kb, &tx, threads, half * width, |kb, idx| {
                    let (r, j) = (idx.clone() / width, idx % width);
                    let sum =
                        sh.at(&[r.clone(), j.clone()]) + sh.at(&[r.clone() + half, j.clone()]);
                    kb.store(&sh, [r, j], sum);
                });
                if let Some(shs) = &sh_sq {
                    each(kb, &tx, threads, half * rows, |kb, idx| {
                        let (r, i) = (idx.clone() / rows, idx % rows);
                        let sum = shs.at(&[r.clone(), i.clone()])
                            + shs.at(&[r.clone() + half, i.clone()]);
                        kb.store(shs, [r, i], sum);
                    });
                }
                kb.barrier();
                half /= 2;
            }
            if let (Some((sums, squares, _)), Some(z)) = (&partials, &z) {
                // A part's sums, and its sums of squares (once a column block, which
                // sums them for itself), as they are: the last part combines them.
                each(kb, &tx, threads, width, |kb, idx| {
                    let (i, j) = (idx.clone() / bn, idx.clone() % bn);
                    let col = n0.clone() + j;
                    let value = sh.at(&[Expr::int(0), idx]);
                    kb.store_if(col.clone().lt(n), sums, [z.clone(), i + r0, col], value);
                });
                if let (Some(sq), Some(shs)) = (squares, &sh_sq) {
                    each(kb, &tx, threads, rows, |kb, i| {
                        let value = shs.at(&[Expr::int(0), i.clone()]);
                        let at = [pid.clone(), z.clone(), i + r0];
                        kb.store_if(pid.clone().lt(tiles), sq, at, value);
                    });
                }
                continue;
            }
            each(kb, &tx, threads, rows * ob, |kb, idx| {
                let (i, j) = (idx.clone() / ob, idx.clone() % ob);
                let col = n0.clone() + j.clone();
                // The norm's factor scales the whole sum, after the combine and before
                // the caller's epilogue.
                let scaled = |value: Expr| match (norm, &sh_sq) {
                    (Some(nm), Some(shs)) => {
                        let mean = shs.at(&[Expr::int(0), i.clone()]) * (1.0 / k as f64) as f32;
                        value * te::rsqrt(mean + nm.epsilon)
                    }
                    _ => value,
                };
                let sum = |j: Expr| sh.at(&[Expr::int(0), i.clone() * bn + j]);
                let value = if gated {
                    let g = kb.let_("gate", scaled(sum(j.clone())));
                    let u = scaled(sum(j + ob));
                    g.clone() * te::sigmoid(g) * u
                } else {
                    // `idx` is `i · bn + j` here (`ob` = `bn`): read as it is.
                    scaled(sh.at(&[Expr::int(0), idx]))
                };
                let value = if c.dtype() == DType::F32 {
                    value
                } else {
                    value.cast(c.dtype())
                };
                kb.store_if(col.clone().lt(n), c, [i + r0, col], value);
            });
        }
        if let Some((sums, squares, counters)) = &partials {
            let last = |kb: &mut KernelBuilder| {
                split_last::arrive(kb, counters, &pid, &tx, splits, |kb| {
                    // The parts in order 0..splits, whichever arrived last.
                    each(kb, &tx, threads, m * bn, |kb, idx| {
                        let (i, j) = (idx.clone() / bn, idx.clone() % bn);
                        let col = kb.let_("col", n0.clone() + j);
                        kb.if_(col.clone().lt(n), |kb| {
                            let part = |z: i64| sums.at(&[Expr::int(z), i.clone(), col.clone()]);
                            let value = (1..splits).fold(part(0), |acc, z| acc + part(z));
                            let value = match (norm, squares) {
                                (Some(nm), Some(sq)) => {
                                    let part =
                                        |z: i64| sq.at(&[pid.clone(), Expr::int(z), i.clone()]);
                                    let total = (1..splits).fold(part(0), |acc, z| acc + part(z));
                                    let mean = total * (1.0 / k as f64) as f32;
                                    value * te::rsqrt(mean + nm.epsilon)
                                }
                                _ => value,
                            };
                            let value = if c.dtype() == DType::F32 {
                                value
                            } else {
                                value.cast(c.dtype())
                            };
                            kb.store(c, [i, col], value);
                        });
                    });
                });
            };
            // Blocks past the last tile (a two-dimensional grid's surplus) count nowhere.
            if grid[0] * grid[1] > tiles {
                kb.if_(pid.clone().lt(tiles), last);
            } else {
                last(kb);
            }
        }
    });
}

/// Runs `body` for each item of `0..items`, spread over the block's `threads` threads
/// (`tx` the thread's index): item `it · threads + tx` at step `it`.
fn each(
    kb: &mut KernelBuilder,
    tx: &Expr,
    threads: i64,
    items: i64,
    body: impl Fn(&mut KernelBuilder, Expr),
) {
    let steps = ceil_div(items, threads);
    kb.unroll("it", steps, |kb, it| {
        let idx = kb.let_("idx", it * threads + tx.clone());
        if items % threads == 0 {
            body(kb, idx);
        } else {
            let inside = idx.clone().lt(items);
            kb.if_(inside, |kb| body(kb, idx));
        }
    });
}

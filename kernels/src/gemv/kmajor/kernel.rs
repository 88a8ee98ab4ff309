//! The K-major skinny-product template's kernel, written with [`weft_ir::template`].

use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError, load_or};

use super::{KmajorParams, WARP, invalid};
use crate::gemv::{RowNorm, vec_of};
use crate::{block_index, ceil_div, grid_for};

/// `x` as f32 (a cast where it is not).
fn as_f32(x: Expr) -> Expr {
    if x.dtype() == DType::F32 {
        x
    } else {
        x.cast(DType::F32)
    }
}

/// The K-major skinny-product template computing `c[i, j] = Σ_k a[i, k] · w[j, k]` over
/// given tensors (`a` of `m × k`, `w` of `n × k`, `c` of `m × n`: te placeholders, or
/// computed tensors that [`weft_ir::fusion`] inlines), one kernel. Refused (a typed
/// error naming the template) where the shapes do not match or `m` is past
/// [`crate::gemv::MAX_M`].
pub fn template_over(
    name: &str,
    a: &Buffer,
    w: &Buffer,
    c: &Buffer,
    p: &KmajorParams,
) -> Result<Func, TemplateError> {
    template_normed(name, a, w, c, p, None)
}

/// [`template_over`] with an RMS norm of `a`'s rows folded in where `norm` is given:
/// `c[i, j] = r[i] · Σ_k a[i, k] γ[k] w[j, k]` with `r[i] = 1 / sqrt(Σ_k a[i, k]² / k +
/// ε)`, the product of `RMSNorm(a) · wᵀ` without the norm's kernel (as
/// `crate::gemv::template_normed` for the row-major weight). Each lane sums the squares
/// of the elements of `a` it reads anyway, in f32 beside its products; they are combined
/// by the same butterflies and the same in-order parts as the sums, and the factor
/// scales each sum at the store, before the caller's epilogue. Every column group of
/// every block sums the same squares in the same order, so every output of a row is
/// scaled by the same bits (the first group's are the ones kept).
pub fn template_normed(
    name: &str,
    a: &Buffer,
    w: &Buffer,
    c: &Buffer,
    p: &KmajorParams,
    norm: Option<&RowNorm>,
) -> Result<Func, TemplateError> {
    let (ash, wsh, csh) = (a.shape(), w.shape(), c.shape());
    let matches = ash.len() == 2
        && wsh.len() == 2
        && csh.len() == 2
        && ash[1] == wsh[1]
        && csh[0] == ash[0]
        && csh[1] == wsh[0];
    if !matches {
        return Err(invalid(
            name,
            format!("a {ash:?} · w {wsh:?}ᵀ cannot give c {csh:?} (a [m, k], w [n, k], c [m, n])"),
        ));
    }
    if !crate::gemv::takes(ash[0]) {
        return Err(invalid(
            name,
            format!(
                "{} rows of a: the template takes 1 to {}",
                ash[0],
                crate::gemv::MAX_M
            ),
        ));
    }
    if let Some(nm) = norm
        && nm.gamma.shape() != [ash[1]]
    {
        return Err(invalid(
            name,
            format!(
                "the norm's scale {:?} is not a's {} columns",
                nm.gamma.shape(),
                ash[1]
            ),
        ));
    }
    let mut t = Template::new(name);
    for x in [a, w, c] {
        t.param(x);
    }
    if let Some(nm) = norm {
        t.param(&nm.gamma);
    }
    add_kernel(&mut t, a, w, c, p, norm);
    t.finish()
}

/// Adds the kernel `c = a · wᵀ` (with `a`'s rows RMS-normalized where `norm` is given)
/// to `t`.
fn add_kernel(
    t: &mut Template,
    a: &Buffer,
    w: &Buffer,
    c: &Buffer,
    p: &KmajorParams,
    norm: Option<&RowNorm>,
) {
    let (m, k, n) = (a.shape()[0], a.shape()[1], w.shape()[0]);
    let KmajorParams {
        cols,
        unroll,
        ksplit,
        shuffle,
        ..
    } = *p;
    let vec = vec_of(w.dtype());
    // 16-byte loads where every row of `w` (and of `a`) starts 16-byte aligned; element
    // by element where it does not.
    let wide = k % vec == 0;
    let groups = p.warps / ksplit;
    let bn = p.block_cols();
    let tiles = ceil_div(n, bn);
    let grid = grid_for(tiles);
    // Elements of a column one load instruction of a warp covers, and one step of the
    // `ksplit` warps sharing the column.
    let span = WARP * vec;
    let step = span * unroll * ksplit;
    let (full, tail) = (k / step, ceil_div(k, step) - k / step);
    // Columns are tested where the blocks' columns run past `n`.
    let ragged_n = n % bn != 0 || grid[0] * grid[1] > tiles;
    let runs = WARP / shuffle;
    let parts = p.parts();
    let outs = m * bn;

    t.kernel([grid[0], grid[1], 1], p.threads(), |kb| {
        let tx = kb.thread_x();
        let pid = block_index(kb, grid);
        let lane = kb.let_("lane", tx.clone() % WARP);
        let warp = kb.let_("warp", tx.clone() / WARP);
        // The warp's column group and its share of the columns' `k`.
        let g = kb.let_("g", warp.clone() % groups);
        let z = kb.let_("z", warp.clone() / groups);
        let n0 = kb.let_("n0", pid.clone() * bn);
        let col0 = kb.let_("col0", n0.clone() + g.clone() * cols);
        let acc = kb.local("acc", &[m, cols], DType::F32);
        let wv = kb.local("wv", &[cols, unroll, vec], w.dtype());
        let xv = kb.local("xv", &[unroll, m, vec], a.dtype());
        kb.unroll("i", m, |kb, i| {
            kb.unroll("c", cols, |kb, cc| kb.store(&acc, [i, cc], 0.0f32));
        });
        // The norm's scale at the lane's elements, and its sums of squares a row.
        let gv = norm.map(|nm| kb.local("gv", &[unroll, vec], nm.gamma.dtype()));
        let sq = norm.map(|_| {
            let sq = kb.local("sq", &[m], DType::F32);
            kb.unroll("i", m, |kb, i| kb.store(&sq, [i], 0.0f32));
            sq
        });
        // The lane's first element of load `e` of a step from `base`.
        let first = |base: &Expr, e: &Expr| {
            base.clone() + (e.clone() * ksplit + z.clone()) * span + lane.clone() * vec
        };

        // One step from `base`: every load of `w` issued before the first product;
        // `partial` (the last step, where `step` does not divide `k`) tests `k`.
        let one = |kb: &mut KernelBuilder, base: Expr, partial: bool| {
            kb.unroll("c", cols, |kb, cc| {
                let col = col0.clone() + cc.clone();
                let col_ok = ragged_n.then(|| col.clone().lt(n));
                kb.unroll("e", unroll, |kb, e| {
                    let k0 = first(&base, &e);
                    if wide {
                        let test = partial.then(|| k0.clone().lt(k));
                        let inside = Expr::all(test.into_iter().chain(col_ok.clone()));
                        let zero = Expr::zero(w.dtype());
                        kb.copy_if(
                            vec,
                            &wv,
                            [cc.clone(), e, Expr::int(0)],
                            w,
                            [col.clone(), k0],
                            inside,
                            zero,
                        );
                    } else {
                        kb.unroll("v", vec, |kb, v| {
                            let kk = k0.clone() + v.clone();
                            let test = partial.then(|| kk.clone().lt(k));
                            let inside = Expr::all(test.into_iter().chain(col_ok.clone()));
                            let value =
                                load_or(w, [col.clone(), kk], inside, Expr::zero(w.dtype()));
                            kb.store(&wv, [cc.clone(), e.clone(), v], value);
                        });
                    }
                });
            });
            // The `m` rows of `a` at the lane's elements of each load, read once for all
            // `cols` columns (after the loads of `w`: those are the stream).
            kb.unroll("e", unroll, |kb, e| {
                let k0 = first(&base, &e);
                kb.unroll("i", m, |kb, i| {
                    if wide {
                        let inside = if partial {
                            k0.clone().lt(k)
                        } else {
                            Expr::Bool(true)
                        };
                        let zero = Expr::zero(a.dtype());
                        kb.copy_if(
                            vec,
                            &xv,
                            [e.clone(), i.clone(), Expr::int(0)],
                            a,
                            [i, k0.clone()],
                            inside,
                            zero,
                        );
                    } else {
                        kb.unroll("v", vec, |kb, v| {
                            let kk = k0.clone() + v.clone();
                            let value = match partial {
                                true => load_or(
                                    a,
                                    [i.clone(), kk.clone()],
                                    kk.lt(k),
                                    Expr::zero(a.dtype()),
                                ),
                                false => a.at(&[i.clone(), kk]),
                            };
                            kb.store(&xv, [e.clone(), i.clone(), v], value);
                        });
                    }
                });
            });
            // The norm's scale at the same elements, once for the `m` rows.
            if let (Some(nm), Some(gv)) = (norm, &gv) {
                let gamma = &nm.gamma;
                kb.unroll("e", unroll, |kb, e| {
                    let k0 = first(&base, &e);
                    if wide {
                        let inside = if partial {
                            k0.clone().lt(k)
                        } else {
                            Expr::Bool(true)
                        };
                        let zero = Expr::zero(gamma.dtype());
                        kb.copy_if(vec, gv, [e, Expr::int(0)], gamma, [k0], inside, zero);
                    } else {
                        kb.unroll("v", vec, |kb, v| {
                            let kk = k0.clone() + v.clone();
                            let value = match partial {
                                true => load_or(
                                    gamma,
                                    [kk.clone()],
                                    kk.lt(k),
                                    Expr::zero(gamma.dtype()),
                                ),
                                false => gamma.at(&[kk]),
                            };
                            kb.store(gv, [e.clone(), v], value);
                        });
                    }
                });
            }
            // The products with the element outermost and the load innermost: the first
            // `unroll` products already need every load, so the compiler keeps them all
            // in flight (with the load outermost, ptxas issued the later loads between
            // the products of the first: 2–3 in flight a thread, not `unroll`).
            kb.unroll("v", vec, |kb, v| {
                kb.unroll("e", unroll, |kb, e| {
                    kb.unroll("i", m, |kb, i| {
                        let x = kb.let_("x", as_f32(xv.at(&[e.clone(), i.clone(), v.clone()])));
                        // With the norm: `x²` summed, and the product taken of `x · γ`.
                        let x = match (&sq, &gv) {
                            (Some(sq), Some(gv)) => {
                                let sum = sq.at(std::slice::from_ref(&i)) + x.clone() * x.clone();
                                kb.store(sq, [i.clone()], sum);
                                let g = as_f32(gv.at(&[e.clone(), v.clone()]));
                                kb.let_("xg", x * g)
                            }
                            _ => x,
                        };
                        kb.unroll("c", cols, |kb, cc| {
                            let wk = as_f32(wv.at(&[cc.clone(), e.clone(), v.clone()]));
                            let sum = acc.at(&[i.clone(), cc.clone()]) + x.clone() * wk;
                            kb.store(&acc, [i.clone(), cc], sum);
                        });
                    });
                });
            });
        };
        if full > 0 {
            kb.serial("ko", full, |kb, ko| one(kb, ko * step, false));
        }
        if tail > 0 {
            one(kb, Expr::int(full * step), true);
        }

        // Butterflies across runs of `shuffle` lanes: every lane of a run then holds the
        // run's sums (a + b and b + a are the same bits).
        if shuffle > 1 {
            kb.unroll("i", m, |kb, i| {
                kb.unroll("c", cols, |kb, cc| {
                    let mut s = kb.let_("s", acc.at(&[i.clone(), cc.clone()]));
                    let mut mask = 1;
                    while mask < shuffle {
                        s = kb.let_("s", s.clone() + Expr::shuffle_xor(s, mask));
                        mask *= 2;
                    }
                    kb.store(&acc, [i.clone(), cc], s);
                });
                if let Some(sq) = &sq {
                    let mut s = kb.let_("s", sq.at(std::slice::from_ref(&i)));
                    let mut mask = 1;
                    while mask < shuffle {
                        s = kb.let_("s", s.clone() + Expr::shuffle_xor(s, mask));
                        mask *= 2;
                    }
                    kb.store(sq, [i], s);
                }
            });
        }
        // Each run's first lane puts its partials in shared memory (part `z · runs +
        // run`); after one barrier each output is summed over its parts in order.
        // With the norm, `m` more slots a part: the first column group's sums of squares.
        let slots = outs + if norm.is_some() { m } else { 0 };
        let sh = kb.shared("partials", &[parts, slots], DType::F32);
        let part = kb.let_("part", z.clone() * runs + lane.clone() / shuffle);
        let put = |kb: &mut KernelBuilder| {
            kb.unroll("i", m, |kb, i| {
                kb.unroll("c", cols, |kb, cc| {
                    let at = i.clone() * bn + g.clone() * cols + cc.clone();
                    kb.store(&sh, [part.clone(), at], acc.at(&[i.clone(), cc]));
                });
            });
            if let Some(sq) = &sq {
                kb.if_(g.clone().eq_(0), |kb| {
                    kb.unroll("i", m, |kb, i| {
                        let value = sq.at(std::slice::from_ref(&i));
                        kb.store(&sh, [part.clone(), i + outs], value);
                    });
                });
            }
        };
        if shuffle > 1 {
            kb.if_((lane.clone() % shuffle).eq_(0), put);
        } else {
            put(kb);
        }
        kb.barrier();
        let threads = p.threads();
        let steps = ceil_div(outs, threads);
        kb.unroll("it", steps, |kb, it| {
            let idx = kb.let_("idx", it * threads + tx.clone());
            let body = |kb: &mut KernelBuilder| {
                let (i, j) = (idx.clone() / bn, idx.clone() % bn);
                let col = n0.clone() + j;
                let value = (1..parts).fold(sh.at(&[Expr::int(0), idx.clone()]), |s, q| {
                    s + sh.at(&[Expr::int(q), idx.clone()])
                });
                // The norm's factor scales the whole sum, after the combine and before
                // the caller's epilogue; the squares summed over the parts in order.
                let value = match norm {
                    Some(nm) => {
                        let at = |q: i64| sh.at(&[Expr::int(q), i.clone() + outs]);
                        let squares = (1..parts).fold(at(0), |s, q| s + at(q));
                        let mean = squares * (1.0 / k as f64) as f32;
                        value * te::rsqrt(mean + nm.epsilon)
                    }
                    None => value,
                };
                let value = if c.dtype() == DType::F32 {
                    value
                } else {
                    value.cast(c.dtype())
                };
                kb.store_if(col.clone().lt(n), c, [i, col], value);
            };
            if outs % threads == 0 {
                body(kb);
            } else {
                kb.if_(idx.clone().lt(outs), body);
            }
        });
    });
}

//! The skinny-product template over an `a` that is computed, not stored (a prologue the
//! model compiler leaves in its loads: `weft_graph::partition::skinny`): a gated MLP's
//! `a[i, k] = silu(gu[i, k]) · gu[i, K + k]`, the gate/up product's one output read at
//! two offsets, fusion inlining it into every load of `a` (the partial steps' guarded
//! loads included). Against float64 in the interpreter (races and bounds checked, output
//! poisoned) at m = 1 to 8, k not a multiple of a step (100, 1000), n odd, f32 and f16,
//! whole and split over k in 2 and 3 parts (the last part summing), without and with a
//! folded RMS norm of `a`'s rows; proven in bounds.

mod common;

use half::f16;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::func::Param;
use weft_ir::fusion::fuse;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::gemv::{self, GemvParams, RowNorm};

/// The tests' data: `len` floats in [-1, 1) from `seed` (`common::uniform`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform(seed, len, 1.0)
}

#[derive(Clone, Copy, Debug)]
struct Case {
    m: i64,
    k: i64,
    n: i64,
    splits: i64,
    dtype: DType,
    /// An RMS norm of `a`'s rows folded in (ε = 0.25).
    norm: bool,
}

const EPSILON: f32 = 0.25;

/// `y = cast(c + bias)` over `c = a · b`, `a` computed from `gu`: rounded to the operand
/// type as the model compiler's view of a computed `a` is, or (folded norm) in f32.
fn build(case: Case, p: &GemvParams) -> LoweredFunc {
    let Case { m, k, n, dtype, .. } = case;
    let gu = te::placeholder("gu", &[m, 2 * k], dtype);
    let a = te::compute("a", &[("i", m), ("kk", k)], |ix| {
        let f32_of = |e: Expr| {
            if dtype == DType::F32 {
                e
            } else {
                e.cast(DType::F32)
            }
        };
        let g = f32_of(gu.at(&[ix[0].clone(), ix[1].clone()]));
        let u = f32_of(gu.at(&[ix[0].clone(), ix[1].clone() + k]));
        let v = g.clone() * te::sigmoid(g) * u;
        if case.norm || dtype == DType::F32 {
            v
        } else {
            v.cast(dtype)
        }
    });
    let gamma = te::placeholder("gamma", &[k], dtype);
    let b = te::placeholder("b", &[k, n], dtype);
    let c = te::placeholder("c", &[m, n], DType::F32);
    let bias = te::placeholder("bias", &[n], DType::F32);
    let norm = RowNorm {
        gamma,
        epsilon: EPSILON,
    };
    let norm = case.norm.then_some(&norm);
    let anchor = gemv::template_split("gemv_gated", &a, &b, &c, p, norm, case.splits).unwrap();
    let y = te::compute("y", &[("i", m), ("j", n)], |ix| {
        let v = c.at(ix) + bias.at(&[ix[1].clone()]);
        if dtype == DType::F32 {
            v
        } else {
            v.cast(dtype)
        }
    });
    let mut lowered = lower(&fuse(&anchor, &y).unwrap().func).unwrap();
    // A split's counters zeroed by the test (the executable zeroes them at allocation).
    if let Some(at) = lowered
        .temps
        .iter()
        .position(|t| t.name() == "tile_arrivals")
    {
        let counter = lowered.temps.remove(at);
        lowered.params.push(Param::Buffer(counter));
    }
    lowered
}

fn check(case: Case, p: &GemvParams, seed: u64) {
    let Case { m, k, n, dtype, .. } = case;
    let lowered = build(case, p);
    assert_eq!(lowered.kernels.len(), 1);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{case:?} {p:?}: {r}");
    }
    // Row i scaled by 1 + i: every row has its own norm factor; values up to ±3 so that
    // the sigmoid's curve matters.
    let mut guv = randoms(seed, (m * 2 * k) as usize);
    for (j, v) in guv.iter_mut().enumerate() {
        *v *= 3.0 * (1.0 + (j as i64 / (2 * k)) as f32);
    }
    let (gu, gu_data) = common::tensor(guv, dtype);
    let gv = randoms(seed + 1, k as usize)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    let (gamma, g_data) = common::tensor(gv, dtype);
    let (b, b_data) = common::tensor(randoms(seed + 2, (k * n) as usize), dtype);
    let bias = randoms(seed + 3, n as usize);
    let given = [
        ("gu", gu_data),
        ("gamma", g_data),
        ("b", b_data),
        ("bias", TensorData::F32(bias.clone())),
    ];
    let mut args: Vec<Arg> = lowered
        .params
        .iter()
        .map(|q| {
            let t = match q {
                Param::Buffer(buf) if buf.name() == "y" => {
                    TensorData::poisoned(buf.dtype(), buf.numel() as usize)
                }
                Param::Buffer(buf) if buf.name() == "tile_arrivals" => {
                    TensorData::I32(vec![0; buf.numel() as usize])
                }
                q => given
                    .iter()
                    .find(|(name, _)| *name == q.name())
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| panic!("no tensor for {}", q.name())),
            };
            Arg::Tensor(t)
        })
        .collect();
    weft_ir::interp::run(&lowered, &mut args).unwrap_or_else(|e| panic!("{case:?} {p:?}: {e}"));
    let at = lowered.params.iter().position(|q| q.name() == "y").unwrap();
    let Arg::Tensor(out) = &args[at] else {
        panic!("no output y")
    };
    let got = out.to_f64_vec();
    let (m, k, n) = (m as usize, k as usize, n as usize);
    // `a` in float64 (rounded to f16 where the kernel's view rounds it: a one-ulp flip
    // of a near-tie rounding is within the tolerance below).
    let f16_a = dtype == DType::F16 && !case.norm;
    for i in 0..m {
        let a: Vec<f64> = (0..k)
            .map(|kk| {
                let (g, u) = (gu[i * 2 * k + kk], gu[i * 2 * k + k + kk]);
                let v = g / (1.0 + (-g).exp()) * u;
                if f16_a { f16::from_f64(v).to_f64() } else { v }
            })
            .collect();
        let f = if case.norm {
            let ms = a.iter().map(|v| v * v).sum::<f64>() / k as f64;
            1.0 / (ms + EPSILON as f64).sqrt()
        } else {
            1.0
        };
        for j in 0..n {
            let terms = (0..k).map(|kk| {
                let g = if case.norm { gamma[kk] } else { 1.0 };
                a[kk] * f * g * b[kk * n + j]
            });
            let (sum, size) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + f64::abs(t)));
            let want = sum + bias[j] as f64;
            let (terms_tol, out_tol) = match (dtype, f16_a) {
                (DType::F32, _) => (1.0 / 1048576.0, 1e-7),
                (_, true) => (1.0 / 2048.0, 1e-3),
                (_, false) => (1.0 / 1048576.0, 1e-3),
            };
            let tol = size * terms_tol + out_tol * (1.0 + want.abs());
            let g = got[i * n + j];
            assert!(
                (g - want).abs() <= tol,
                "{case:?} {p:?}: y[{i}, {j}] is {g}, want {want}"
            );
        }
    }
}

#[test]
fn a_computed_a_is_right_whole_split_and_normed() {
    // (threads, nt, unroll, shuffle): shuffles across 32 lanes; shared memory alone with
    // a ragged unroll.
    let ps = [
        GemvParams {
            threads: 128,
            nt: 4,
            unroll: 2,
            shuffle: 32,
        },
        GemvParams {
            threads: 64,
            nt: 2,
            unroll: 3,
            shuffle: 1,
        },
    ];
    let mut seed = 1;
    for (pi, p) in ps.iter().enumerate() {
        for dtype in [DType::F32, DType::F16] {
            for m in 1..=8 {
                for (k, n, splits) in [(100, 33, 1), (1000, 17, 3), (1000, 5, 2)] {
                    for norm in [false, true] {
                        // Every combination at the first params, a sample at the other.
                        if pi > 0 && (m + splits + i64::from(norm)) % 3 != 0 {
                            continue;
                        }
                        let case = Case {
                            m,
                            k,
                            n,
                            splits,
                            dtype,
                            norm,
                        };
                        check(case, p, seed);
                        seed += 1;
                    }
                }
            }
        }
    }
}

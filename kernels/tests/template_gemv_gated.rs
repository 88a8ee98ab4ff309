//! The skinny-product template storing a gated MLP's activation (`gemv::template_gated`:
//! `c = silu(s[.., :n]) · s[.., n:]` of `s = a · b`, or of `RMSNorm(a) · b`): right
//! against a float64 reference at odd sizes (m = 1, 2, 3, 8; k = 1, 7, 67, 2049; halves
//! of 8 to 5632 columns, their last block ragged), f32 and f16 operands, with and without
//! a folded norm, for the rule's params and forced ones (each way of combining the sums;
//! 2, 4 and 8 threads a row segment), in the interpreter (which checks races and bounds)
//! with the output poisoned; proven in bounds; refused where a block cannot hold both
//! halves of its columns; emitted for CUDA (compiled by NVRTC where installed) and WGSL
//! (validated by naga).

mod common;

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::gemv::{GemvParams, RowNorm};

/// One product's sizes (`n`: the columns of `c`, each half of `b`'s), the operands'
/// type, and whether an RMS norm of `a` is folded in.
#[derive(Clone, Copy, Debug)]
struct Case {
    m: i64,
    k: i64,
    n: i64,
    dtype: DType,
    norm: bool,
}

const EPSILON: f32 = 1e-5;

/// `y = silu(gate) · up` in the output type (f16 for f16 operands), the template's
/// store cast by the fused epilogue.
fn build(case: Case, p: &GemvParams) -> Result<LoweredFunc, String> {
    let Case {
        m,
        k,
        n,
        dtype,
        norm,
    } = case;
    let a = te::placeholder("a", &[m, k], dtype);
    let b = te::placeholder("b", &[k, 2 * n], dtype);
    let gamma = te::placeholder("gamma", &[k], DType::F32);
    let c = te::placeholder("c", &[m, n], DType::F32);
    let y = te::compute("y", &[("i", m), ("j", n)], |ix| {
        let v = c.at(ix);
        if dtype == DType::F32 {
            v
        } else {
            v.cast(dtype)
        }
    });
    let rn = norm.then(|| RowNorm {
        gamma: gamma.clone(),
        epsilon: EPSILON,
    });
    let anchor = p
        .template_gated("gated", &a, &b, &c, rn.as_ref())
        .map_err(|e| e.to_string())?;
    let fused = fuse(&anchor, &y).unwrap();
    Ok(lower(&fused.func).unwrap())
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// Runs `case` with `p` in the interpreter (proven in bounds first, the output poisoned)
/// against the float64 reference: each sum within the rounding of an f32 sum of its terms
/// (`2⁻²⁰ · Σ|terms|`), carried through `silu(g) · u`, plus the output's own rounding.
fn check(case: Case, p: &GemvParams, seed: u64) {
    let Case { m, k, n, dtype, .. } = case;
    let lowered = build(case, p).unwrap_or_else(|e| panic!("{case:?} {p:?}: {e}"));
    assert_eq!(lowered.kernels.len(), 1);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{case:?} {p:?}: {r}");
    }
    // Activations of a realistic scale: sums of a few units, where silu bends.
    let (a, a_data) = common::tensor(common::uniform(seed, (m * k) as usize, 2.0), dtype);
    let width = 2.0 / (k as f64).sqrt();
    let (b, b_data) = common::tensor(
        common::uniform(seed + 1, (k * 2 * n) as usize, width),
        dtype,
    );
    let gamma = common::uniform(seed + 2, k as usize, 1.0);
    let mut given = vec![
        ("a", a_data),
        ("b", b_data),
        ("y", TensorData::poisoned(dtype, (m * n) as usize)),
    ];
    if case.norm {
        given.push(("gamma", TensorData::F32(gamma.clone())));
    }
    let mut args: Vec<Arg> = lowered
        .params
        .iter()
        .map(|q| {
            let at = given.iter().position(|(name, _)| *name == q.name());
            let (_, t) = given.swap_remove(at.unwrap_or_else(|| panic!("no {}", q.name())));
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
    for i in 0..m {
        let row = &a[i * k..(i + 1) * k];
        let r = match case.norm {
            true => {
                let mean = row.iter().map(|x| x * x).sum::<f64>() / k as f64;
                1.0 / (mean + EPSILON as f64).sqrt()
            }
            false => 1.0,
        };
        let x = |kk: usize| match case.norm {
            true => row[kk] * gamma[kk] as f64,
            false => row[kk],
        };
        let sum = |col: usize| {
            let terms = (0..k).map(|kk| x(kk) * b[kk * 2 * n + col]);
            let (s, size) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + t.abs()));
            (s * r, size * r / 1048576.0 + 1e-9)
        };
        for j in 0..n {
            let ((g, eg), (u, eu)) = (sum(j), sum(n + j));
            let want = silu(g) * u;
            let rounding = if dtype == DType::F16 { 1e-3 } else { 1e-7 };
            let tol = 1.1 * eg * u.abs() + silu(g).abs() * eu + rounding * (1.0 + want.abs());
            let got = got[i * n + j];
            assert!(
                (got - want).abs() <= tol,
                "{case:?} {p:?}: y[{i}, {j}] is {got}, want {want}"
            );
        }
    }
}

fn gated_rule(limits: &TargetLimits, m: i64, n: i64, dtype: DType) -> GemvParams {
    let (p, why) = GemvParams::gated_rule(limits, m, n, dtype);
    assert!(p.fits(limits) && p.nt % 2 == 0, "{why}");
    p
}

#[test]
fn gated_products_are_right_with_the_rules_params() {
    let mut seed = 1;
    for dtype in [DType::F32, DType::F16] {
        for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
            for (m, k, n) in [(1, 67, 40), (3, 7, 24), (8, 100, 64), (1, 515, 5632)] {
                for norm in [false, true] {
                    let case = Case {
                        m,
                        k,
                        n,
                        dtype,
                        norm,
                    };
                    check(case, &gated_rule(&limits, m, n, dtype), seed);
                    seed += 3;
                }
            }
        }
    }
}

#[test]
fn gated_products_are_right_with_forced_params() {
    // (threads, nt, unroll, shuffle): the shared-memory combine alone; shuffles across
    // runs of 8 and 32; 2, 4 and 8 threads a row segment (1, 2 and 4 a half); a ragged
    // last step (unroll 3).
    let params = [
        (256, 2, 8, 1),
        (256, 4, 4, 8),
        (128, 8, 3, 8),
        (64, 2, 1, 32),
        (512, 4, 8, 32),
    ];
    for (i, &(threads, nt, unroll, shuffle)) in params.iter().enumerate() {
        let p = GemvParams {
            threads,
            nt,
            unroll,
            shuffle,
        };
        for dtype in [DType::F32, DType::F16] {
            for (m, k, n) in [(1, 7, 8), (2, 2049, 40), (3, 1, 16)] {
                for norm in [false, true] {
                    let case = Case {
                        m,
                        k,
                        n,
                        dtype,
                        norm,
                    };
                    check(case, &p, 300 + i as u64);
                }
            }
        }
    }
}

/// A block must hold both halves of its columns, every load of `b` whole: an odd `nt`,
/// halves of a size no 16-byte load divides, or a `b` that is not two halves are
/// refused, naming what is wrong.
#[test]
fn what_cannot_be_gated_is_refused() {
    let p = |nt| GemvParams {
        threads: 256,
        nt,
        unroll: 4,
        shuffle: 32,
    };
    let case = |n, dtype| Case {
        m: 1,
        k: 64,
        n,
        dtype,
        norm: false,
    };
    let err = build(case(64, DType::F16), &p(1)).unwrap_err();
    assert!(err.contains("cannot be split between the gate"), "{err}");
    let err = build(case(36, DType::F16), &p(4)).unwrap_err();
    assert!(err.contains("36 columns a half"), "{err}");
    let a = te::placeholder("a", &[1, 64], DType::F32);
    let b = te::placeholder("b", &[64, 100], DType::F32);
    let c = te::placeholder("c", &[1, 40], DType::F32);
    let err = p(4)
        .template_gated("gated", &a, &b, &c, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not the gate's and the up projection's 2 × 40"),
        "{err}"
    );
}

#[test]
fn cuda_and_wgsl_emit_it() {
    use weft_codegen_wgsl::WgslOptions;
    let cuda = TargetLimits::cuda();
    for dtype in [DType::F16, DType::F32] {
        for norm in [false, true] {
            let case = Case {
                m: 1,
                k: 2048,
                n: 5632,
                dtype,
                norm,
            };
            let lowered = build(case, &gated_rule(&cuda, 1, 5632, dtype)).unwrap();
            let src = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
            weft_codegen_cuda::nvrtc::check(&src.source)
                .unwrap_or_else(|e| panic!("{case:?}: {e}\n{}", src.source));
            let plain = TargetLimits {
                f16: true,
                ..TargetLimits::webgpu_default()
            };
            let lowered = build(case, &gated_rule(&plain, 1, 5632, dtype)).unwrap();
            let opts = WgslOptions { limits: plain };
            let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts).unwrap();
            weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        }
    }
}

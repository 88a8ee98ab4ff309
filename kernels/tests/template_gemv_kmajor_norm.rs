//! The K-major skinny-product template with an RMS norm of `a`'s rows folded in
//! (`gemv::kmajor::template_normed`: `y = r ⊙ ((x ⊙ γ) · wᵀ) + bias` with
//! `r = 1 / sqrt(mean(x²) + ε)` a factor a row, `w` stored `[n, k]`): right against a
//! float64 reference (the norm, then the product, in float64) at m = 1, 2, 3, 8, k odd
//! (element loads: 13, 100, 2049) and a multiple of 8 (16-byte loads: 2056, 4104), n odd,
//! f32 and f16, rows of different scales (a factor applied to the wrong row shows), two
//! epsilons (a dropped one shows at 0.25), for the rule's params and forced ones (each
//! combine: shared memory alone, shuffles across 8 and 32 lanes, `k` over 1, 2, 4 warps,
//! several column groups a block), in the interpreter (races and bounds checked) with the
//! output poisoned; proven in bounds. Emitted for CUDA (NVRTC where installed), MSL and
//! WGSL (naga).

mod common;

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::gemv::RowNorm;
use weft_kernels::gemv::kmajor::{KmajorParams, template_normed};

/// The tests' data: `len` floats in [-1, 1) from `seed` (`common::uniform`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform(seed, len, 1.0)
}

#[derive(Clone, Copy, Debug)]
struct Case {
    m: i64,
    k: i64,
    n: i64,
    dtype: DType,
    epsilon: f32,
}

/// The type `γ` is stored in: f32 beside f16 operands at odd rows (as an f16 model
/// keeps it: two 16-byte loads a piece of `w`), else the operands'.
fn gamma_dtype(case: Case) -> DType {
    if case.dtype == DType::F16 && case.m % 2 == 1 {
        DType::F32
    } else {
        case.dtype
    }
}

/// `y = r ⊙ ((x ⊙ γ) · b) + bias` in the operands' type, the bias and the cast fused into
/// the stores.
fn build(case: Case, p: &KmajorParams) -> LoweredFunc {
    let Case {
        m,
        k,
        n,
        dtype,
        epsilon,
    } = case;
    let x = te::placeholder("x", &[m, k], dtype);
    let gamma = te::placeholder("gamma", &[k], gamma_dtype(case));
    let b = te::placeholder("b", &[n, k], dtype);
    let bias = te::placeholder("bias", &[n], DType::F32);
    let c = te::placeholder("c", &[m, n], DType::F32);
    let y = te::compute("y", &[("i", m), ("j", n)], |ix| {
        let v = c.at(ix) + bias.at(&[ix[1].clone()]);
        if dtype == DType::F32 {
            v
        } else {
            v.cast(dtype)
        }
    });
    let norm = RowNorm { gamma, epsilon };
    let anchor = template_normed("gemv_kmajor_norm", &x, &b, &c, p, Some(&norm)).unwrap();
    let fused = fuse(&anchor, &y).unwrap();
    lower(&fused.func).unwrap()
}

/// Runs `case` with `p` in the interpreter: the output and the inputs (as float64).
struct Run {
    got: Vec<f64>,
    x: Vec<f64>,
    gamma: Vec<f64>,
    b: Vec<f64>,
    bias: Vec<f32>,
}

fn run(case: Case, p: &KmajorParams, seed: u64) -> Run {
    let Case { m, k, n, dtype, .. } = case;
    let lowered = build(case, p);
    assert_eq!(lowered.kernels.len(), 1);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{case:?} {p:?}: {r}");
    }
    // Row i scaled by 1 + 2i: every row has its own factor.
    let mut xv = randoms(seed, (m * k) as usize);
    for (j, v) in xv.iter_mut().enumerate() {
        *v *= 1.0 + 2.0 * (j as i64 / k) as f32;
    }
    let (x, x_data) = common::tensor(xv, dtype);
    let gv: Vec<f32> = randoms(seed + 3, k as usize)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    let (gamma, g_data) = common::tensor(gv, gamma_dtype(case));
    let (b, b_data) = common::tensor(randoms(seed + 1, (k * n) as usize), dtype);
    let bias = randoms(seed + 2, n as usize);
    let mut given = [
        ("x", Some(x_data)),
        ("gamma", Some(g_data)),
        ("b", Some(b_data)),
        ("bias", Some(TensorData::F32(bias.clone()))),
        ("y", Some(TensorData::poisoned(dtype, (m * n) as usize))),
    ];
    let mut args: Vec<Arg> = lowered
        .params
        .iter()
        .map(|p| {
            let slot = given.iter_mut().find(|(name, _)| *name == p.name());
            let t = slot.and_then(|(_, t)| t.take());
            Arg::Tensor(t.unwrap_or_else(|| panic!("no tensor for parameter {}", p.name())))
        })
        .collect();
    weft_ir::interp::run(&lowered, &mut args).unwrap_or_else(|e| panic!("{case:?} {p:?}: {e}"));
    let at = lowered.params.iter().position(|p| p.name() == "y");
    let got = match at.map(|i| &args[i]) {
        Some(Arg::Tensor(t)) => t.to_f64_vec(),
        _ => panic!("no output y"),
    };
    Run {
        got,
        x,
        gamma,
        b,
        bias,
    }
}

/// The float64 reference: the norm (its output rounded by `round`, as an unfused path
/// would store it), then the product and the bias; and the sum of the terms' sizes.
fn reference(case: Case, r: &Run, round: &dyn Fn(f64) -> f64) -> Vec<(f64, f64)> {
    let (m, k, n) = (case.m as usize, case.k as usize, case.n as usize);
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        let row = &r.x[i * k..(i + 1) * k];
        let ms = row.iter().map(|v| v * v).sum::<f64>() / k as f64;
        let f = 1.0 / (ms + case.epsilon as f64).sqrt();
        let normed: Vec<f64> = (0..k).map(|kk| round(row[kk] * f * r.gamma[kk])).collect();
        for j in 0..n {
            let terms = (0..k).map(|kk| normed[kk] * r.b[j * k + kk]);
            let (sum, size) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + t.abs()));
            out.push((sum + r.bias[j] as f64, size));
        }
    }
    out
}

/// Each element within the rounding of an f32 sum of its terms (`2⁻²⁰ · Σ|terms|`) plus
/// the output's own rounding.
fn check(case: Case, p: &KmajorParams, seed: u64) {
    let r = run(case, p, seed);
    let want = reference(case, &r, &|v| v);
    let rounding = if case.dtype == DType::F16 { 1e-3 } else { 1e-7 };
    for (e, (&g, &(w, size))) in r.got.iter().zip(&want).enumerate() {
        let tol = size / 1048576.0 + rounding * (1.0 + w.abs());
        let (i, j) = (e / case.n as usize, e % case.n as usize);
        assert!(
            (g - w).abs() <= tol,
            "{case:?} {p:?}: y[{i}, {j}] is {g}, want {w}"
        );
    }
}

fn cases(dtype: DType) -> Vec<Case> {
    let mut out = Vec::new();
    for (m, epsilon) in [(1, 1e-5), (2, 0.25), (3, 1e-5), (8, 0.25)] {
        for k in [13, 100] {
            for n in [1, 33] {
                out.push(Case {
                    m,
                    k,
                    n,
                    dtype,
                    epsilon,
                });
            }
        }
        for k in [2049, 2056, 4104] {
            out.push(Case {
                m,
                k,
                n: 67,
                dtype,
                epsilon,
            });
        }
    }
    out
}

/// `(warps, cols, unroll, ksplit, shuffle)` as params.
fn params((warps, cols, unroll, ksplit, shuffle): (i64, i64, i64, i64, i64)) -> KmajorParams {
    KmajorParams {
        warps,
        cols,
        unroll,
        ksplit,
        shuffle,
    }
}

#[test]
fn normed_products_are_right_with_the_rules_params() {
    for (seed, dtype) in [(1, DType::F32), (100, DType::F16)] {
        for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
            for (i, case) in cases(dtype).into_iter().enumerate() {
                let (p, why) = KmajorParams::rule(&limits, case.m, case.n, case.k, dtype);
                assert!(p.fits(&limits, case.m), "{why}");
                check(case, &p, seed + i as u64);
            }
        }
    }
}

#[test]
fn normed_products_are_right_with_forced_params() {
    // The shared-memory combine alone; shuffles across runs of 8 and 32; 1 to 4 columns
    // a warp; k over 1, 2 and 4 warps; several column groups a block (their squares the
    // same: the first group's are kept); unrolls of 1 and 3.
    let forced = [
        (4, 1, 2, 1, 1),
        (4, 2, 2, 2, 8),
        (8, 1, 8, 1, 32),
        (8, 4, 2, 4, 32),
        (2, 3, 1, 2, 32),
        (4, 2, 3, 4, 32),
        (1, 1, 4, 1, 32),
    ];
    for (i, &f) in forced.iter().enumerate() {
        let p = params(f);
        for dtype in [DType::F32, DType::F16] {
            for (m, k, n) in [
                (1, 13, 33),
                (3, 2049, 33),
                (8, 1000, 67),
                (2, 1, 1),
                (2, 4104, 5),
            ] {
                let epsilon = if m % 2 == 0 { 0.25 } else { 1e-5 };
                let case = Case {
                    m,
                    k,
                    n,
                    dtype,
                    epsilon,
                };
                check(case, &p, 200 + i as u64);
            }
        }
    }
}

#[test]
fn every_language_emits_it() {
    use weft_codegen_wgsl::WgslOptions;
    for dtype in [DType::F16, DType::F32] {
        let case = Case {
            m: 3,
            k: 2056,
            n: 67,
            dtype,
            epsilon: 1e-5,
        };
        let (p, _) = KmajorParams::rule(&TargetLimits::cuda(), case.m, case.n, case.k, dtype);
        let lowered = build(case, &p);
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(cuda.source.contains("rsqrt"), "{}", cuda.source);
        weft_codegen_cuda::nvrtc::check(&cuda.source)
            .unwrap_or_else(|e| panic!("{case:?}: {e}\n{}", cuda.source));
        weft_codegen_metal::emit_lowered(&lowered, &Default::default()).unwrap();
        for limits in [
            common::nvidia_vulkan_limits(),
            TargetLimits {
                f16: true,
                ..TargetLimits::webgpu_default()
            },
        ] {
            let (p, _) = KmajorParams::rule(&limits, case.m, case.n, case.k, dtype);
            let lowered = build(case, &p);
            let opts = WgslOptions { limits };
            let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts).unwrap();
            weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        }
    }
}

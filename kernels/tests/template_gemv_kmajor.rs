//! The K-major skinny-product template (`c = a · wᵀ`, `w` stored `[n, k]`): right against
//! a float64 reference at odd sizes (m = 1, 2, 3, 8; k odd and not a multiple of 8 — 1,
//! 7, 13, 1001, 2049 — and multiples of it, 2048, 4104; n = 1, 33, 67), f32 and f16, with
//! a fused prologue on `a` and a fused epilogue (bias, ReLU, a cast to f16), for the
//! rule's params on CUDA and plain WebGPU and for forced ones (each combine: shared
//! memory alone, shuffles across 8 and 32 lanes; 1 to 4 columns a warp; `k` over 1, 2
//! and 4 warps; unrolls that leave a ragged last step), in the interpreter (which checks
//! races and bounds) with the output poisoned; proven in bounds; its barrier needed; the
//! same bits whatever the order the warps arrive in (a sum whose f32 value depends on
//! the order); emitted for CUDA (compiled by NVRTC where installed), HIP (hipcc), MSL and
//! WGSL (validated by naga).

mod common;

use common::strip_barriers;
use half::f16;
use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::interp::InterpError;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::gemv::MAX_M;
use weft_kernels::gemv::kmajor::{KmajorParams, template_over};

/// One product's sizes and the operands' type.
#[derive(Clone, Copy, Debug)]
struct Case {
    m: i64,
    k: i64,
    n: i64,
    dtype: DType,
}

/// `y = relu(a' · wᵀ + bias)` in the output type (f16 for f16 operands), with the
/// prologue `a' = a · 0.5` fused into the loads of `a` and the epilogue into the stores.
fn build(case: Case, p: &KmajorParams) -> LoweredFunc {
    let Case { m, k, n, dtype } = case;
    let a = te::placeholder("a", &[m, k], dtype);
    let scaled = te::compute("scaled", &[("i", m), ("kk", k)], |ix| {
        a.at(ix) * Expr::Float(0.5, dtype)
    });
    let w = te::placeholder("w", &[n, k], dtype);
    let bias = te::placeholder("bias", &[n], DType::F32);
    let c = te::placeholder("c", &[m, n], DType::F32);
    let y = te::compute("y", &[("i", m), ("j", n)], |ix| {
        let v = c.at(ix) + bias.at(&[ix[1].clone()]);
        let v = Expr::select(v.clone().lt(0.0f32), 0.0f32, v);
        if dtype == DType::F32 {
            v
        } else {
            v.cast(dtype)
        }
    });
    let anchor = template_over("gemv_kmajor", &scaled, &w, &c, p).unwrap();
    let fused = fuse(&anchor, &y).unwrap();
    assert_eq!(fused.prologues, ["scaled"]);
    lower(&fused.func).unwrap()
}

/// The product alone, `c = a · wᵀ` in `dtype` (what the `gemv-kmajor` ops build).
fn build_plain(case: Case, p: &KmajorParams) -> LoweredFunc {
    let Case { m, k, n, dtype } = case;
    let a = te::placeholder("a", &[m, k], dtype);
    let w = te::placeholder("w", &[n, k], dtype);
    let c = te::placeholder("c", &[m, n], dtype);
    lower(&template_over("gemv_kmajor", &a, &w, &c, p).unwrap()).unwrap()
}

/// `given` (tensors by parameter name) in `lowered`'s parameter order.
fn in_order<const N: usize>(lowered: &LoweredFunc, given: [(&str, TensorData); N]) -> Vec<Arg> {
    let mut given: Vec<(&str, Option<TensorData>)> =
        given.into_iter().map(|(n, t)| (n, Some(t))).collect();
    lowered
        .params
        .iter()
        .map(|p| {
            let slot = given.iter_mut().find(|(n, _)| *n == p.name());
            let t = slot.and_then(|(_, t)| t.take());
            Arg::Tensor(t.unwrap_or_else(|| panic!("no tensor for parameter {}", p.name())))
        })
        .collect()
}

/// The values of `y` in `args` (in `lowered`'s order).
fn output(lowered: &LoweredFunc, args: &[Arg]) -> Vec<f64> {
    let at = lowered.params.iter().position(|p| p.name() == "y");
    match at.map(|i| &args[i]) {
        Some(Arg::Tensor(t)) => t.to_f64_vec(),
        _ => panic!("no output y"),
    }
}

/// Runs `lowered` on `a`, `w` and `bias` with the output (`out_len` of `dtype`)
/// poisoned; `y`'s values.
fn run(
    lowered: &LoweredFunc,
    (a, w, bias): (TensorData, TensorData, Vec<f32>),
    out_len: i64,
    dtype: DType,
) -> Vec<f64> {
    let given = [
        ("a", a),
        ("w", w),
        ("bias", TensorData::F32(bias)),
        ("y", TensorData::poisoned(dtype, out_len as usize)),
    ];
    let mut args = in_order(lowered, given);
    weft_ir::interp::run(lowered, &mut args).unwrap_or_else(|e| panic!("{e}"));
    output(lowered, &args)
}

/// Runs `case` with `p` in the interpreter (proven in bounds first) against the float64
/// reference: each element within the rounding of an f32 sum of its terms (`2⁻²⁰ ·
/// Σ|terms|`) plus the output's own rounding.
fn check(case: Case, p: &KmajorParams, seed: u64) {
    let Case { m, k, n, dtype } = case;
    let lowered = build(case, p);
    assert_eq!(lowered.kernels.len(), 1);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{case:?} {p:?}: {r}");
    }
    let (a, a_data) = common::tensor(common::uniform(seed, (m * k) as usize, 1.0), dtype);
    let (w, w_data) = common::tensor(common::uniform(seed + 1, (k * n) as usize, 1.0), dtype);
    let bias = common::uniform(seed + 2, n as usize, 1.0);
    let got = run(&lowered, (a_data, w_data, bias.clone()), m * n, dtype);
    let (m, k, n) = (m as usize, k as usize, n as usize);
    // The scaled operand, rounded as the kernel computes it (a product in its type).
    let scale = |v: f64| match dtype {
        DType::F16 => f16::from_f64(v * 0.5).to_f64(),
        _ => (v as f32 * 0.5) as f64,
    };
    for i in 0..m {
        for j in 0..n {
            // `w[j, kk]`: the weight is K-major.
            let terms = (0..k).map(|kk| scale(a[i * k + kk]) * w[j * k + kk]);
            let (sum, size) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + t.abs()));
            let want = (sum + bias[j] as f64).max(0.0);
            let rounding = if dtype == DType::F16 { 1e-3 } else { 1e-7 };
            let tol = size / 1048576.0 + rounding * (1.0 + want.abs());
            let g = got[i * n + j];
            assert!(
                (g - want).abs() <= tol,
                "{case:?} {p:?}: y[{i}, {j}] is {g}, want {want}"
            );
        }
    }
}

/// The sizes of the task: m = 1, 2, 3, 8 against k odd (not a multiple of 8: element
/// loads), a multiple of 8 (16-byte loads) with and without a ragged last step, and
/// long; n odd.
fn cases(dtype: DType) -> Vec<Case> {
    let mut out = Vec::new();
    for m in [1, 2, 3, 8] {
        for (k, n) in [
            (1, 1),
            (7, 33),
            (13, 67),
            (1001, 33),
            (2048, 33),
            (4104, 67),
        ] {
            out.push(Case { m, k, n, dtype });
        }
    }
    out.push(Case {
        m: 1,
        k: 2049,
        n: 67,
        dtype,
    });
    out
}

/// `(warps, cols, unroll, ksplit, shuffle)`.
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
fn products_are_right_with_the_rules_params() {
    let plain = TargetLimits {
        f16: true,
        ..TargetLimits::webgpu_default()
    };
    for (seed, dtype) in [(1, DType::F32), (100, DType::F16)] {
        for limits in [TargetLimits::cuda(), plain.clone()] {
            for (i, case) in cases(dtype).into_iter().enumerate() {
                let (p, why) = KmajorParams::rule(&limits, case.m, case.n, case.k, dtype);
                assert!(p.fits(&limits, case.m), "{why}");
                check(case, &p, seed + i as u64);
            }
        }
    }
}

#[test]
fn products_are_right_with_forced_params() {
    // The shared-memory combine alone (32 parts a warp); shuffles across runs of 8
    // (lavapipe's subgroups) and 32 (a warp); 1 to 4 columns a warp (3: a block's
    // columns not a power of two); k over 1, 2 and 4 warps; unrolls of 1 and 3 (every
    // k leaves a ragged last step at 3).
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
                (1, 7, 33),
                (3, 2049, 33),
                (8, 1000, 67),
                (2, 1, 1),
                (2, 4104, 5),
            ] {
                check(Case { m, k, n, dtype }, &p, 200 + i as u64);
            }
        }
    }
}

/// The `ksplit` warps' partials are summed in order 0, 1, …: with `k` over 4 warps and
/// one term a warp (2²⁴, 1, −2²⁴, 1 in f32: in order the sum is 1 — 2²⁴ + 1 rounds to
/// 2²⁴ — and not 0 or 2), the result is the in-order one, every run.
#[test]
fn the_warps_partials_are_summed_in_order() {
    let p = params((4, 1, 1, 4, 32));
    let (m, k, n) = (1, 4 * 32 * 4, 1);
    let case = Case {
        m,
        k,
        n,
        dtype: DType::F32,
    };
    let lowered = build(case, &p);
    // Warp z's first piece of the column is k = z · 128 (one load of 32 lanes × 4).
    let mut a = vec![0.0f32; k as usize];
    for (z, v) in [(0, 16777216.0f32), (1, 1.0), (2, -16777216.0), (3, 1.0)] {
        a[z * 128] = v;
    }
    // `a` is halved by the prologue: the weight doubles it back.
    let w = vec![2.0f32; k as usize];
    let inputs = (TensorData::F32(a), TensorData::F32(w), vec![0.0]);
    let got = run(&lowered, inputs, 1, DType::F32);
    assert_eq!(got, vec![1.0], "parts summed out of order");
}

/// The rule on the H200-like CUDA profile at TinyLlama's decode products.
#[test]
fn the_rule_gives_every_multiprocessor_blocks() {
    let cuda = TargetLimits::cuda();
    let sms = cuda.multiprocessors as i64;
    for m in [1, 2, 3, 8] {
        for (n, k) in [
            (2560, 2048),
            (2048, 2048),
            (11264, 2048),
            (2048, 5632),
            (32000, 2048),
        ] {
            let (p, why) = KmajorParams::rule(&cuda, m, n, k, DType::F16);
            assert!(p.fits(&cuda, m), "{why}");
            assert_eq!(p.shuffle, 32, "{why}");
            assert!((2..=8).contains(&p.warps), "{why}");
            assert!(p.cols * p.unroll == 8, "8 loads in flight a thread: {why}");
            let blocks = (n + p.block_cols() - 1) / p.block_cols();
            let several = blocks >= 4 * sms || p.warps == 2.max(p.ksplit);
            assert!(several, "m={m} n={n} k={k}: {blocks} blocks ({why})");
            assert!(
                blocks >= 2 * sms,
                "m={m} n={n} k={k}: {blocks} blocks ({why})"
            );
            assert!(p.parts() <= 4, "{why}");
        }
    }
    let one = |m, n, k| KmajorParams::rule(&cuda, m, n, k, DType::F16).0;
    assert_eq!((one(1, 2048, 2048).ksplit, one(1, 2048, 2048).cols), (1, 1));
    assert_eq!((one(8, 2048, 2048).ksplit, one(8, 2048, 2048).cols), (4, 4));
    assert_eq!(one(8, 11264, 2048).ksplit, 1);
    // Plain WebGPU: no subgroups, the combine's shared memory within 16 KB.
    let plain = TargetLimits::webgpu_default();
    let (p, why) = KmajorParams::rule(&plain, MAX_M, 2048, 2048, DType::F32);
    assert_eq!(p.shuffle, 1, "{why}");
    assert!(p.fits(&plain, MAX_M), "{why}");
}

/// Configs that are not one, and tensors that do not match, are refused with the reason.
#[test]
fn bad_configs_and_shapes_are_refused() {
    use weft_kernels::Config;
    let bad = [
        "warps=8,cols=5,unroll=2,ksplit=1,shuffle=32",
        "warps=6,cols=1,unroll=2,ksplit=4,shuffle=32",
        "warps=8,cols=1,unroll=2,ksplit=3,shuffle=32",
        "warps=8,cols=1,unroll=9,ksplit=1,shuffle=32",
        "warps=8,cols=1,unroll=2,ksplit=1,shuffle=64",
        "warps=8,cols=1,unroll=2,ksplit=1,shuffle=32,nt=4",
        "warps=8,cols=1,unroll=2,ksplit=1",
    ];
    for text in bad {
        let config = Config::parse(text).unwrap();
        assert!(
            KmajorParams::from_config(&config).is_err(),
            "{text} accepted"
        );
    }
    let p = params((8, 1, 8, 1, 32));
    let a = te::placeholder("a", &[9, 64], DType::F16);
    let w = te::placeholder("w", &[16, 64], DType::F16);
    let c = te::placeholder("c", &[9, 16], DType::F16);
    let e = template_over("g", &a, &w, &c, &p).unwrap_err().to_string();
    assert!(e.contains("9 rows"), "{e}");
    let a = te::placeholder("a", &[2, 64], DType::F16);
    let c = te::placeholder("c", &[2, 17], DType::F16);
    let e = template_over("g", &a, &w, &c, &p).unwrap_err().to_string();
    assert!(e.contains("[2, 17]"), "{e}");
}

/// Without its barrier the shared-memory combine races (the interpreter says so).
#[test]
fn without_its_barrier_the_combine_races() {
    let p = params((4, 2, 2, 2, 1));
    let case = Case {
        m: 3,
        k: 100,
        n: 33,
        dtype: DType::F32,
    };
    let mut lowered = build(case, &p);
    let before = format!("{lowered}");
    lowered.kernels[0].body = strip_barriers(&lowered.kernels[0].body);
    assert_ne!(before, format!("{lowered}"));
    let given = [
        ("a", TensorData::F32(common::uniform(1, 300, 1.0))),
        ("w", TensorData::F32(common::uniform(2, 3300, 1.0))),
        ("bias", TensorData::F32(common::uniform(3, 33, 1.0))),
        ("y", TensorData::poisoned(DType::F32, 99)),
    ];
    let mut args = in_order(&lowered, given);
    let err = weft_ir::interp::run(&lowered, &mut args).unwrap_err();
    assert!(matches!(err, InterpError::SharedRace { .. }), "{err}");
}

/// The rule at TinyLlama's decode products on the H200 (132 multiprocessors), as
/// `gemv::kmajor::KmajorParams::rule`'s doc states it: `(warps, cols, unroll, ksplit)`.
#[test]
fn the_rule_at_tinyllamas_products_on_the_h200() {
    let h200 = TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    };
    let want = [
        (1, 2560, 2048, (4, 1, 8, 1)),
        (1, 2048, 2048, (2, 1, 8, 1)),
        (1, 11264, 2048, (8, 1, 8, 1)),
        (1, 2048, 5632, (2, 1, 8, 1)),
        (1, 32000, 2048, (8, 1, 8, 1)),
        (8, 2560, 2048, (4, 4, 2, 4)),
        (8, 2048, 2048, (4, 4, 2, 4)),
        (8, 11264, 2048, (4, 4, 2, 1)),
        (8, 2048, 5632, (4, 4, 2, 4)),
        (8, 32000, 2048, (8, 4, 2, 1)),
    ];
    for (m, n, k, (warps, cols, unroll, ksplit)) in want {
        let (p, why) = KmajorParams::rule(&h200, m, n, k, DType::F16);
        assert_eq!(
            (p.warps, p.cols, p.unroll, p.ksplit, p.shuffle),
            (warps, cols, unroll, ksplit, 32),
            "m={m} n={n} k={k}: {why}"
        );
    }
}

#[test]
fn every_language_emits_it() {
    use weft_codegen_wgsl::WgslOptions;
    let cuda_limits = TargetLimits::cuda();
    for dtype in [DType::F16, DType::F32] {
        for (m, k, n) in [(1, 2048, 2048), (8, 5632, 2048), (3, 2049, 33)] {
            let case = Case { m, k, n, dtype };
            let (p, _) = KmajorParams::rule(&cuda_limits, m, n, k, dtype);
            let lowered = build(case, &p);
            let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
            assert!(cuda.source.contains("__shfl_xor_sync("), "{case:?}");
            if k % 8 == 0 {
                // 16-byte loads of w and a where their rows keep them aligned.
                let wide = if dtype == DType::F16 {
                    "uint4"
                } else {
                    "float4"
                };
                assert!(cuda.source.contains(wide), "{case:?}\n{}", cuda.source);
            }
            weft_codegen_cuda::nvrtc::check(&cuda.source)
                .unwrap_or_else(|e| panic!("{case:?}: {e}\n{}", cuda.source));
            let hip = weft_codegen_cuda::hip::emit_lowered(&lowered, &Default::default()).unwrap();
            let entries: Vec<String> = hip.kernels.iter().map(|k| k.name.clone()).collect();
            weft_codegen_cuda::hipcc::check(&hip.source, &entries)
                .unwrap_or_else(|e| panic!("{case:?}: {e}"));
            let msl = weft_codegen_metal::emit_lowered(&lowered, &Default::default()).unwrap();
            assert!(msl.source.contains("simd_shuffle_xor("), "{case:?}");
            weft_codegen_metal::syntax_check(&msl.source)
                .unwrap_or_else(|e| panic!("{case:?}: {e}"));
            let adapter = WgslOptions {
                limits: TargetLimits {
                    subgroup: Some(weft_codegen_common::SubgroupSize::fixed(32)),
                    f16: true,
                    ..TargetLimits::webgpu_default()
                },
            };
            let (p, _) = KmajorParams::rule(&adapter.limits, m, n, k, dtype);
            let lowered = build(case, &p);
            let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &adapter).unwrap();
            assert!(wgsl.source.contains("subgroupShuffleXor("), "{case:?}");
            weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            // Plain WebGPU's rule: the shared-memory combine, no subgroups.
            let plain = TargetLimits {
                f16: true,
                ..TargetLimits::webgpu_default()
            };
            let (p, _) = KmajorParams::rule(&plain, m, n, k, dtype);
            let lowered = build(case, &p);
            let opts = WgslOptions { limits: plain };
            let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts).unwrap();
            assert!(wgsl.source.contains("workgroupBarrier()"), "{case:?}");
            weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        }
    }
}

/// The rule's configs at TinyLlama's decode products (1, 2, 3 and 8 rows, f16 and f32),
/// the product alone as the ops build it, compile for sm_90 with no stack frame and
/// nothing spilled (ptxas's own report, through NVRTC), within the registers their block
/// size leaves a thread. Skipped with a
/// printed reason where NVRTC is absent, unless `WEFT_REQUIRE` names it.
#[test]
fn the_rules_configs_compile_without_spills() {
    use weft_codegen_cuda::nvrtc;
    if let Err(e) = nvrtc::probe() {
        let skipped = nvrtc::check("");
        assert!(skipped.is_ok(), "{}", skipped.unwrap_err());
        eprintln!("(nvrtc: {e})");
        return;
    }
    let h200 = TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    };
    for dtype in [DType::F16, DType::F32] {
        for m in [1, 2, 3, 8] {
            for (n, k) in [(2560, 2048), (2048, 5632), (32000, 2048)] {
                let case = Case { m, k, n, dtype };
                let (p, why) = KmajorParams::rule(&h200, m, n, k, dtype);
                let lowered = build_plain(case, &p);
                let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
                let report = nvrtc::ptxas_report(&cuda.source, "sm_90")
                    .unwrap_or_else(|e| panic!("{case:?}: {e}"));
                let what = format!("{case:?} {why}");
                let registers = common::ptxas_registers(&report, &what);
                assert!(
                    registers <= 65536 / p.threads() && registers <= 255,
                    "{what}"
                );
                eprintln!("{dtype:?} m={m} n={n} k={k}: {registers} registers ({why})");
            }
        }
    }
}

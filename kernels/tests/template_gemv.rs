//! The skinny-product template (`c = a · b` for few rows of `a`): right against a float64
//! reference at odd sizes (m = 1, 3, 8; k = 1, 7, 2049; n = 1, 33, 5632), f32 and f16
//! operands, with a fused epilogue (bias, ReLU, a cast to f16) and a fused prologue on
//! `a`, for the rule's params on CUDA and plain WebGPU and for forced ones (each way of
//! combining the sums: shared memory only, shuffles across 8 and 32 lanes; one to eight
//! threads a row; unrolls that leave a ragged last step), in the interpreter (which
//! checks races and bounds) with the output poisoned; proven in bounds; its barriers
//! needed; emitted for CUDA (compiled by NVRTC where installed), HIP, MSL and WGSL
//! (validated by naga).

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
use weft_kernels::gemv::{GemvParams, MAX_M, template_over};

/// The tests' data: `len` floats in [-1, 1) from `seed` (`common::uniform`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform(seed, len, 1.0)
}

/// One product's sizes and the operands' type.
#[derive(Clone, Copy, Debug)]
struct Case {
    m: i64,
    k: i64,
    n: i64,
    dtype: DType,
}

/// `y = relu(a' · b + bias)` in the output type (f16 for f16 operands), with the prologue
/// `a' = a · 0.5` fused into the loads of `a` and the epilogue into the stores.
fn build(case: Case, p: &GemvParams) -> LoweredFunc {
    let Case { m, k, n, dtype } = case;
    let a = te::placeholder("a", &[m, k], dtype);
    let scaled = te::compute("scaled", &[("i", m), ("kk", k)], |ix| {
        a.at(ix) * Expr::Float(0.5, dtype)
    });
    let b = te::placeholder("b", &[k, n], dtype);
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
    let anchor = template_over("gemv", &scaled, &b, &c, p).unwrap();
    let fused = fuse(&anchor, &y).unwrap();
    assert_eq!(fused.prologues, ["scaled"]);
    lower(&fused.func).unwrap()
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

/// Runs `case` with `p` in the interpreter (proven in bounds first) against the float64
/// reference: each element within the rounding of an f32 sum of its terms (`2⁻²⁰ · Σ|terms|`)
/// plus the output's own rounding.
fn check(case: Case, p: &GemvParams, seed: u64) {
    let Case { m, k, n, dtype } = case;
    let lowered = build(case, p);
    assert_eq!(lowered.kernels.len(), 1);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{case:?} {p:?}: {r}");
    }
    let (a, a_data) = common::tensor(randoms(seed, (m * k) as usize), dtype);
    let (b, b_data) = common::tensor(randoms(seed + 1, (k * n) as usize), dtype);
    let bias = randoms(seed + 2, n as usize);
    let out = TensorData::poisoned(dtype, (m * n) as usize);
    let given = [
        ("a", a_data),
        ("b", b_data),
        ("bias", TensorData::F32(bias.clone())),
        ("y", out),
    ];
    let mut args = in_order(&lowered, given);
    weft_ir::interp::run(&lowered, &mut args).unwrap_or_else(|e| panic!("{case:?} {p:?}: {e}"));
    let got = output(&lowered, &args);
    let (m, k, n) = (m as usize, k as usize, n as usize);
    // The scaled operand, rounded as the kernel computes it (a product in its type).
    let scale = |v: f64| match dtype {
        DType::F16 => f16::from_f64(v * 0.5).to_f64(),
        _ => (v as f32 * 0.5) as f64,
    };
    for i in 0..m {
        for j in 0..n {
            let terms = (0..k).map(|kk| scale(a[i * k + kk]) * b[kk * n + j]);
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

/// The sizes of the task: every m, k and n of it, their cross product where the
/// interpreter runs it quickly, the largest products once each.
fn cases(dtype: DType) -> Vec<Case> {
    let mut out = Vec::new();
    for m in [1, 3, 8] {
        for k in [1, 7, 2049] {
            for n in [1, 33] {
                out.push(Case { m, k, n, dtype });
            }
        }
        out.push(Case {
            m,
            k: 7,
            n: 5632,
            dtype,
        });
    }
    out.push(Case {
        m: 1,
        k: 2049,
        n: 5632,
        dtype,
    });
    out
}

#[test]
fn products_are_right_with_the_rules_params() {
    for (seed, dtype) in [(1, DType::F32), (100, DType::F16)] {
        for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
            for (i, case) in cases(dtype).into_iter().enumerate() {
                let (p, why) = GemvParams::rule(&limits, case.m, case.n, dtype);
                assert!(p.fits(&limits), "{why}");
                check(case, &p, seed + i as u64);
            }
        }
    }
}

#[test]
fn products_are_right_with_forced_params() {
    // (threads, nt, unroll, shuffle): the shared-memory combine alone; shuffles across
    // runs of 8 (lavapipe's subgroups) and 32 (a warp); a thread a row (no run to
    // shuffle across above it), 8 threads a row (runs of 8 hold one thread row); an
    // unroll of 3 (steps of 3 · kt rows: every k leaves a ragged last step); 64 threads.
    let params = [
        (256, 2, 8, 1),
        (256, 2, 4, 8),
        (256, 1, 2, 32),
        (128, 8, 3, 8),
        (64, 4, 1, 32),
        (256, 8, 8, 32),
    ];
    for (i, &(threads, nt, unroll, shuffle)) in params.iter().enumerate() {
        let p = GemvParams {
            threads,
            nt,
            unroll,
            shuffle,
        };
        for dtype in [DType::F32, DType::F16] {
            for (m, k, n) in [(1, 7, 33), (3, 2049, 33), (8, 100, 70), (2, 1, 1)] {
                check(Case { m, k, n, dtype }, &p, 200 + i as u64);
            }
        }
    }
}

/// The rule as fitted on the H200: 32 warps a block (16 past 2 rows) with 4 loads in
/// flight a thread, 64-byte row segments at TinyLlama's narrow products (n = 2048: 64
/// blocks in f16) and whole 128-byte lines where they still give two blocks a
/// multiprocessor (the vocabulary's 32000 columns); 16 warps with 8 loads in flight
/// where 32-warp blocks would take more than one wave (gate/up, the head), within the
/// target's thread limit.
#[test]
fn the_rule_is_the_fitted_one() {
    let cuda = TargetLimits::cuda();
    for dtype in [DType::F16, DType::F32] {
        let bytes = dtype.bytes() as i64;
        let vec = weft_kernels::gemv::vec_of(dtype);
        let (p, why) = GemvParams::rule(&cuda, 1, 2048, dtype);
        assert_eq!((p.threads, p.unroll, p.shuffle), (1024, 4, 32), "{why}");
        assert_eq!(p.nt * vec * bytes, 64, "{why}");
        let (wide, why) = GemvParams::rule(&cuda, 1, 32000, dtype);
        assert_eq!(wide.nt * vec * bytes, 128, "{why}");
    }
    // TinyLlama's gate/up (11264 columns: 352 blocks of 32 in f16) on the H200's 132
    // multiprocessors: 512 threads with 8 loads in flight, every block resident at once;
    // 2560 columns (80 blocks) keep 1024 threads; at 3 rows 512 threads as before.
    let h200 = TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    };
    let (p, why) = GemvParams::rule(&h200, 1, 11264, DType::F16);
    assert_eq!((p.threads, p.nt, p.unroll), (512, 4, 8), "{why}");
    assert!(
        why.contains("all are resident at once (352 > 2 blocks"),
        "{why}"
    );
    // The head (32000 columns: 500 blocks of 64 in f16): one wave too, of 512 threads.
    let (p, why) = GemvParams::rule(&h200, 1, 32000, DType::F16);
    assert_eq!((p.threads, p.nt, p.unroll), (512, 8, 8), "{why}");
    assert!(
        why.contains("all are resident at once (500 > 2 blocks"),
        "{why}"
    );
    let (p, why) = GemvParams::rule(&h200, 1, 2560, DType::F16);
    assert_eq!((p.threads, p.nt, p.unroll), (1024, 4, 4), "{why}");
    assert!(!why.contains("resident"), "{why}");
    let (p, _) = GemvParams::rule(&h200, 3, 11264, DType::F16);
    assert_eq!((p.threads, p.unroll), (512, 4));
    let (p, _) = GemvParams::rule(&h200, MAX_M, 11264, DType::F16);
    assert_eq!(
        p.threads, 512,
        "8 rows of sums in 1024 threads' registers would spill"
    );
    // Few columns over several rows (fewer 64-byte-segment blocks than multiprocessors):
    // 256 threads on 16-byte segments, four times the blocks — the batch-8 decode step's
    // q/k/v, o and down, the CNN classifiers' 8-row heads; not at one or two rows, not in
    // f32, not where the 64-byte segments already fill the GPU.
    for (m, n) in [(MAX_M, 2048), (MAX_M, 2560), (MAX_M, 1000), (3, 2048)] {
        let (p, why) = GemvParams::rule(&h200, m, n, DType::F16);
        assert_eq!((p.threads, p.nt, p.unroll), (256, 1, 4), "{m}×{n}: {why}");
        assert!(why.contains("fewer than the 132 multiprocessors"), "{why}");
    }
    for (m, n, dtype) in [
        (2, 2048, DType::F16),
        (MAX_M, 2048, DType::F32),
        (MAX_M, 8448, DType::F16),
    ] {
        let (p, why) = GemvParams::rule(&h200, m, n, dtype);
        assert!(p.nt > 1, "{m}×{n} {dtype:?}: {why}");
    }
    let (p, _) = GemvParams::rule(&TargetLimits::webgpu_default(), MAX_M, 2048, DType::F32);
    assert_eq!(p.shuffle, 1);
    assert_eq!(p.threads, 256, "WebGPU holds 256 invocations a workgroup");
    assert!(weft_kernels::gemv::takes(MAX_M) && !weft_kernels::gemv::takes(MAX_M + 1));
}

/// Without its barriers the shared-memory combine races (the interpreter says so).
#[test]
fn without_its_barriers_the_combine_races() {
    let p = GemvParams {
        threads: 256,
        nt: 2,
        unroll: 2,
        shuffle: 1,
    };
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
        ("a", TensorData::F32(randoms(1, 300))),
        ("b", TensorData::F32(randoms(2, 3300))),
        ("bias", TensorData::F32(randoms(3, 33))),
        ("y", TensorData::poisoned(DType::F32, 99)),
    ];
    let mut args = in_order(&lowered, given);
    let err = weft_ir::interp::run(&lowered, &mut args).unwrap_err();
    assert!(matches!(err, InterpError::SharedRace { .. }), "{err}");
}

#[test]
fn every_language_emits_it() {
    use weft_codegen_wgsl::WgslOptions;
    let cuda_limits = TargetLimits::cuda();
    for dtype in [DType::F16, DType::F32] {
        for (m, k, n) in [(1, 2048, 2048), (8, 2049, 33)] {
            let case = Case { m, k, n, dtype };
            let (p, _) = GemvParams::rule(&cuda_limits, m, n, dtype);
            let lowered = build(case, &p);
            let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
            assert!(cuda.source.contains("__shfl_xor_sync("), "{case:?}");
            if n % 8 == 0 {
                // 16-byte loads of b where its rows keep them aligned.
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
            let adapter = WgslOptions {
                limits: TargetLimits {
                    subgroup: Some(weft_codegen_common::SubgroupSize::fixed(32)),
                    f16: true,
                    ..TargetLimits::webgpu_default()
                },
            };
            // The adapter's own rule: WebGPU holds 256 invocations a workgroup.
            let (p, _) = GemvParams::rule(&adapter.limits, m, n, dtype);
            let lowered = build(case, &p);
            let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &adapter).unwrap();
            weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            // Plain WebGPU's rule: the shared-memory combine, no subgroups.
            let plain = TargetLimits {
                f16: true,
                ..TargetLimits::webgpu_default()
            };
            let (p, _) = GemvParams::rule(&plain, m, n, dtype);
            let lowered = build(case, &p);
            let opts = WgslOptions { limits: plain };
            let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts).unwrap();
            assert!(wgsl.source.contains("workgroupBarrier()"), "{case:?}");
            weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        }
    }
}

/// The rule's configs at TinyLlama's one-row decode products in f16 (q/k/v, o, gate/up,
/// down, the head), as built above, compile for sm_90 with no stack frame and nothing
/// spilled (ptxas's report through NVRTC), and in registers that leave room for the
/// blocks the rule counts on: at gate/up's 512 threads, the ⌈352 / 132⌉ = 3 blocks a
/// multiprocessor that make one wave. Skipped with a printed reason where NVRTC is
/// absent, unless `WEFT_REQUIRE` names it.
#[test]
fn the_rules_configs_compile_without_spills_and_in_one_wave() {
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
    let dtype = DType::F16;
    for (n, k) in [
        (2560, 2048),
        (2048, 2048),
        (11264, 2048),
        (2048, 5632),
        (32000, 2048),
    ] {
        let case = Case { m: 1, k, n, dtype };
        let (p, why) = GemvParams::rule(&h200, 1, n, dtype);
        let cuda = weft_codegen_cuda::emit_lowered(&build(case, &p), &Default::default()).unwrap();
        let report =
            nvrtc::ptxas_report(&cuda.source, "sm_90").unwrap_or_else(|e| panic!("{case:?}: {e}"));
        let what = format!("{case:?} {why}");
        let registers = common::ptxas_registers(&report, &what);
        let bn = p.nt * weft_kernels::gemv::vec_of(dtype);
        let blocks = (n + bn - 1) / bn;
        let resident = ((blocks + 131) / 132).min(2048 / p.threads);
        assert!(
            registers * p.threads * resident <= 65536,
            "{what}: {registers} registers"
        );
        eprintln!(
            "n={n} k={k}: {registers} registers, {} threads ({why})",
            p.threads
        );
    }
}

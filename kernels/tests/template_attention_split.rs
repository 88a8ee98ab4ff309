//! Split-KV attention (`template_split_over`: the keys cut into chunks, a block each,
//! and a kernel combining the chunks' partial softmax states): right against a float64
//! reference in the interpreter (which checks races and bounds) with the output
//! poisoned, f32 and f16, at 1–8 heads, 1, 3, 8 and 16 query rows, 1 to 1100 keys and
//! head sizes 64 and 37, under additive masks that cut chunks in the middle and mask
//! whole chunks; a row masked everywhere gives what the unsplit kernel gives; proven in
//! bounds; emitted for CUDA (NVRTC), WGSL (naga), MSL and HIP; the rule's choice.

mod common;

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::attention::{AttnParams, Masking, Operands, template_split_over};

/// The tests' data: `len` floats in [-2, 2) from `seed` (`common::uniform_mixed`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform_mixed(seed, len, 2.0)
}

/// How the additive mask `[bh, s, t]` is made.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mask {
    None,
    /// Keys `lo..hi` of every row masked by `value` (cutting chunks where `lo` and `hi`
    /// are not chunk bounds; whole chunks where the range spans them), and keys past row
    /// `i`'s own limit `t − 1 − i` masked too (the decode step's cache rows past the
    /// position).
    Band {
        lo: i64,
        hi: i64,
        value: f32,
    },
    /// Every key of row 0 masked by `-inf`; the other rows as `Band` with `f32::MIN`.
    RowDead {
        lo: i64,
        hi: i64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Case {
    bh: i64,
    s: i64,
    t: i64,
    d: i64,
    mask: Mask,
}

fn mask_value(c: &Case, z: i64, i: i64, j: i64) -> f32 {
    let past = j > c.t - 1 - i.min(c.t - 1);
    match c.mask {
        Mask::None => 0.0,
        Mask::Band { lo, hi, value } => {
            if (lo..hi).contains(&j) || past {
                value
            } else {
                0.25 * ((z + i + j) % 3) as f32
            }
        }
        Mask::RowDead { lo, hi } => {
            if i == 0 {
                f32::NEG_INFINITY
            } else if (lo..hi).contains(&j) || past {
                f32::MIN
            } else {
                0.0
            }
        }
    }
}

/// The case's function with `p` in `splits` parts: `q` scaled by a view fused into the
/// loads (a prologue, as the model's are), the output in `dtype`.
fn build(c: &Case, dtype: DType, p: &AttnParams, splits: i64) -> LoweredFunc {
    let Case { bh, s, t, d, .. } = *c;
    let qa = te::placeholder("qa", &[bh, s, d], dtype);
    let q = te::compute("q", &[("z", bh), ("i", s), ("e", d)], |ix| {
        (qa.at(ix).cast(DType::F32) * 2.0f32).cast(dtype)
    });
    let k = te::placeholder("k", &[bh, t, d], dtype);
    let v = te::placeholder("v", &[bh, t, d], dtype);
    let m = te::placeholder("m", &[bh, s, t], DType::F32);
    let y = te::placeholder("y", &[bh, s, d], dtype);
    let ops = Operands {
        q: &q,
        k: &k,
        v: &v,
        mask: (c.mask != Mask::None).then_some(&m),
        y: &y,
        scale: 1.0 / (d as f64).sqrt(),
        masking: Masking::None,
    };
    let anchor = template_split_over("attention", &ops, p, splits)
        .unwrap_or_else(|e| panic!("{c:?} {p:?} sk={splits}: {e}"));
    let fused = fuse(&anchor, &y).unwrap();
    lower(&fused.func).unwrap()
}

fn tensor(dtype: DType, values: &[f32]) -> (Arg, Vec<f64>) {
    let data = match dtype {
        DType::F16 => TensorData::F16(values.iter().map(|&x| half::f16::from_f32(x)).collect()),
        _ => TensorData::F32(values.to_vec()),
    };
    let rounded = data.to_f64_vec();
    (Arg::Tensor(data), rounded)
}

/// Float64 attention; `None` for a row masked everywhere by `-inf`.
fn reference(c: &Case, q: &[f64], k: &[f64], v: &[f64], m: &[f64]) -> Vec<Option<f64>> {
    let (bh, s, t, d) = (c.bh as usize, c.s as usize, c.t as usize, c.d as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![None; bh * s * d];
    for z in 0..bh {
        for i in 0..s {
            let scores: Vec<f64> = (0..t)
                .map(|j| {
                    let dot: f64 = (0..d)
                        .map(|e| q[(z * s + i) * d + e] * k[(z * t + j) * d + e])
                        .sum();
                    dot * scale + m[(z * s + i) * t + j]
                })
                .collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if max == f64::NEG_INFINITY {
                continue;
            }
            let p: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = p.iter().sum();
            for e in 0..d {
                let acc: f64 = (0..t).map(|j| p[j] * v[(z * t + j) * d + e]).sum();
                out[(z * s + i) * d + e] = Some(acc / sum);
            }
        }
    }
    out
}

/// Runs the case with `p` in `splits` parts in the interpreter: the output.
fn run(c: &Case, dtype: DType, p: &AttnParams, splits: i64, seed: u64) -> Vec<f64> {
    let lowered = build(c, dtype, p, splits);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{c:?} {p:?}: {r}");
    }
    let Case { bh, s, t, d, .. } = *c;
    let (qa, _) = tensor(dtype, &randoms(seed, (bh * s * d) as usize));
    let (k, _) = tensor(dtype, &randoms(seed + 1, (bh * t * d) as usize));
    let (v, _) = tensor(dtype, &randoms(seed + 2, (bh * t * d) as usize));
    let mvals: Vec<f32> = (0..bh * s * t)
        .map(|x| mask_value(c, x / (s * t), x / t % s, x % t))
        .collect();
    let (m, _) = tensor(DType::F32, &mvals);
    let y = Arg::Tensor(TensorData::poisoned(dtype, (bh * s * d) as usize));
    let mut named = vec![("qa", qa), ("k", k), ("v", v), ("m", m), ("y", y)];
    let mut args: Vec<Arg> = lowered
        .params
        .iter()
        .map(|prm| {
            let at = named
                .iter()
                .position(|(n, _)| *n == prm.name())
                .unwrap_or_else(|| panic!("no argument for `{}`", prm.name()));
            named.remove(at).1
        })
        .collect();
    weft_ir::interp::run(&lowered, &mut args)
        .unwrap_or_else(|e| panic!("{c:?} {p:?} sk={splits}: {e}"));
    let Some(Arg::Tensor(got)) = args.last() else {
        unreachable!("the output is the last parameter")
    };
    got.to_f64_vec()
}

fn check(c: Case, dtype: DType, p: &AttnParams, splits: i64, seed: u64) {
    let got = run(&c, dtype, p, splits, seed);
    let Case { bh, s, t, d, .. } = c;
    let round = |x: &[f32]| tensor(dtype, x).1;
    let q64: Vec<f64> = round(&randoms(seed, (bh * s * d) as usize))
        .iter()
        .map(|x| x * 2.0)
        .collect();
    let k64 = round(&randoms(seed + 1, (bh * t * d) as usize));
    let v64 = round(&randoms(seed + 2, (bh * t * d) as usize));
    let m64: Vec<f64> = (0..bh * s * t)
        .map(|x| f64::from(mask_value(&c, x / (s * t), x / t % s, x % t)))
        .collect();
    let want = reference(&c, &q64, &k64, &v64, &m64);
    let tol = if dtype == DType::F16 { 4e-3 } else { 2e-5 };
    let scale = want.iter().flatten().fold(1e-3f64, |a, w| a.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        match w {
            Some(w) => assert!(
                (g - w).abs() <= tol * scale,
                "{c:?} {dtype} {p:?} sk={splits}: element {i} is {g}, want {w}"
            ),
            // A row masked everywhere by -inf: 0 / 0 as unsplit (the graph's guard makes
            // zeros of it), or 0 where keys past the end pad the last step (each a term
            // of 1 with a zero value).
            None => assert!(
                g.is_nan() || *g == 0.0,
                "{c:?} sk={splits}: element {i} is {g}, want NaN or 0"
            ),
        }
    }
}

fn cores(bq: i64, bkv: i64, shuffle: bool) -> AttnParams {
    AttnParams {
        mma: 0,
        bq,
        bkv,
        warps: 2,
        skip: false,
        regs: false,
        stages: 1,
        two_pass: false,
        shuffle,
        shared_kv: false,
    }
}

/// The decode shapes and odd ones, f32 and f16, split in several ways (splits dividing
/// the key steps), against the float64 reference.
#[test]
fn split_attention_is_right() {
    // (heads, rows, keys, head size, bkv, splits, mask)
    let band = |lo, hi| Mask::Band {
        lo,
        hi,
        value: -10000.0,
    };
    let cases = [
        // TinyLlama's decode: 8 query heads of one KV head as rows, 191 keys in 12
        // steps of 16; the band cuts chunks 2 and 3 mid-way.
        (4, 8, 191, 64, 16, 12, band(40, 57)),
        (4, 8, 191, 64, 16, 4, band(40, 57)),
        (1, 1, 63, 64, 16, 2, Mask::None),
        (2, 3, 63, 37, 16, 4, band(0, 16)),
        // Whole chunks masked (keys 64..128 are chunk 1 of 3 at 64 keys a chunk).
        (8, 16, 191, 64, 32, 3, band(64, 128)),
        (
            3,
            16,
            191,
            37,
            64,
            3,
            Mask::Band {
                lo: 64,
                hi: 128,
                value: f32::MIN,
            },
        ),
        (2, 8, 1100, 64, 64, 6, band(500, 700)),
        (1, 1, 1100, 64, 16, 23, Mask::None),
        // One key: one step, nothing to split.
        (2, 3, 1, 64, 16, 1, Mask::None),
    ];
    for (n, &(bh, s, t, d, bkv, splits, mask)) in cases.iter().enumerate() {
        let c = Case { bh, s, t, d, mask };
        for (i, dtype) in [DType::F32, DType::F16].into_iter().enumerate() {
            let p = cores(16, bkv, i == 1);
            check(c, dtype, &p, splits, 100 * n as u64 + i as u64);
        }
    }
    // The rule's eight warps (16 threads a row, by shuffles and without): TinyLlama's
    // decode and a remainder of keys in the last chunk.
    for (n, (t, bkv, splits)) in [(191, 16, 12), (1100, 64, 6)].into_iter().enumerate() {
        let c = Case {
            bh: 4,
            s: 8,
            t,
            d: 64,
            mask: band(40, 57),
        };
        for (i, dtype) in [DType::F32, DType::F16].into_iter().enumerate() {
            let p = AttnParams {
                warps: 8,
                ..cores(16, bkv, i == 1)
            };
            check(c, dtype, &p, splits, 900 + 10 * n as u64 + i as u64);
        }
    }
    // Matrix units in the shared-memory form split the same way.
    let p = AttnParams {
        mma: 16,
        ..cores(16, 32, false)
    };
    let c = Case {
        bh: 2,
        s: 8,
        t: 191,
        d: 64,
        mask: band(30, 100),
    };
    check(c, DType::F16, &p, 3, 7);
}

/// A row masked everywhere by `-inf` gives what the unsplit kernel gives (NaN, which the
/// graph's guard turns to zeros), and a row of `f32::MIN` keys outside the band what the
/// unsplit kernel gives too.
#[test]
fn masked_rows_combine_as_unsplit() {
    // 191 keys: the last step's padding key gives the dead row 0; 192: 0 / 0.
    for t in [191, 192] {
        let c = Case {
            bh: 2,
            s: 3,
            t,
            d: 64,
            mask: Mask::RowDead { lo: 16, hi: 100 },
        };
        let p = cores(16, 16, false);
        let whole = run(&c, DType::F32, &p, 1, 5);
        assert_eq!(whole[0].is_nan(), t == 192, "{}", whole[0]);
        for splits in [2, 3, 4, 6, 12] {
            let split = run(&c, DType::F32, &p, splits, 5);
            for (i, (a, b)) in whole.iter().zip(&split).enumerate() {
                assert!(
                    (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-5 * a.abs().max(1.0),
                    "sk={splits}: element {i}: {a} unsplit, {b} split"
                );
            }
        }
        check(c, DType::F32, &p, 12, 5);
    }
}

/// Splits that do not divide the key steps, or in the register and two-pass forms, are
/// refused by name.
#[test]
fn bad_splits_are_refused() {
    let q = te::placeholder("q", &[1, 8, 64], DType::F16);
    let k = te::placeholder("k", &[1, 191, 64], DType::F16);
    let ops = Operands {
        q: &q,
        k: &k,
        v: &k,
        mask: None,
        y: &q,
        scale: 1.0,
        masking: Masking::None,
    };
    let err = |p: &AttnParams, sk| {
        template_split_over("attention", &ops, p, sk)
            .unwrap_err()
            .to_string()
    };
    assert!(err(&cores(16, 16, false), 5).contains("divide the 12 key steps"));
    assert!(err(&cores(16, 16, false), 65).contains("1 to 64"));
    let regs = AttnParams {
        mma: 16,
        regs: true,
        warps: 1,
        ..cores(16, 16, false)
    };
    let e = err(&regs, 2);
    assert!(e.contains("one-pass"), "{e}");
}

/// The rule splits a decode step's few blocks over many keys, and nothing else.
#[test]
fn the_split_rule_takes_decode_steps_only() {
    let h200 = TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    };
    let (p, sk, why) = AttnParams::rule_split(&h200, (4, 8, 191, 64), true).unwrap();
    assert_eq!((p.mma, p.bq, p.bkv, sk), (0, 16, 16, 12), "{why}");
    // Eight warps: 16 threads a row of the softmax, combined by shuffles.
    assert_eq!(
        (p.warps, p.threads_per_row(), p.shuffle),
        (8, 16, true),
        "{why}"
    );
    assert!(
        why.contains("split-KV") && why.contains("48 blocks"),
        "{why}"
    );
    let (p, sk, _) = AttnParams::rule_split(&h200, (4, 8, 2048, 64), true).unwrap();
    assert_eq!((p.bkv, sk), (64, 32));
    let (p, sk, _) = AttnParams::rule_split(&h200, (16, 8, 191, 64), true).unwrap();
    assert_eq!((p.bkv, sk), (32, 6));
    // Enough blocks already (32 heads: a batch of 8 ran slower split on the H200), a
    // prefill's rows, self-attention, too few keys: unsplit.
    for hstd in [
        (32, 8, 191, 64),
        (256, 8, 191, 64),
        (4, 1024, 1151, 64),
        (12, 64, 64, 64),
        (4, 8, 16, 64),
    ] {
        assert!(
            AttnParams::rule_split(&h200, hstd, true).is_none(),
            "{hstd:?}"
        );
    }
    // Every target's limits take it (the interpreter's are CUDA's; lavapipe's WebGPU's).
    // (f32 tiles at a head size of 64 pass plain WebGPU's 16 KiB, as unsplit.)
    for (limits, f16) in [
        (TargetLimits::webgpu_default(), true),
        (TargetLimits::metal(), false),
    ] {
        let (p, sk, _) = AttnParams::rule_split(&limits, (4, 8, 191, 64), f16).unwrap();
        assert!(sk > 1 && p.fits(&limits, 64, 64, f16), "{}", limits.name);
    }
}

/// The split form emits for every language: CUDA (compiled by NVRTC where it is
/// installed), WGSL (validated by naga), MSL and HIP.
#[test]
fn every_language_emits_the_split_form() {
    let c = Case {
        bh: 4,
        s: 8,
        t: 191,
        d: 64,
        mask: Mask::Band {
            lo: 3,
            hi: 9,
            value: f32::MIN,
        },
    };
    for (dtype, shuffle) in [(DType::F16, true), (DType::F32, false)] {
        let lowered = build(&c, dtype, &cores(16, 16, shuffle), 12);
        assert!(lowered.kernels.len() == 2, "{}", lowered.kernels.len());
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        match weft_codegen_cuda::nvrtc::check_arch(&cuda.source, "sm_80") {
            Ok(_) => {} // passed, or skipped with the reason printed
            Err(e) => panic!("{e}"),
        }
        let opts = weft_codegen_wgsl::WgslOptions {
            limits: common::nvidia_vulkan_limits(),
        };
        let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts).unwrap();
        weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{e}"));
        weft_codegen_metal::emit_lowered(&lowered, &Default::default()).unwrap();
        weft_codegen_cuda::hip::emit_lowered(&lowered, &Default::default()).unwrap();
    }
}

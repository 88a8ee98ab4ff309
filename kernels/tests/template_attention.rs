//! The fused attention template: right against a float64 reference at odd sequence
//! lengths (1, 7, 100, 129) and head sizes (32, 64, 80, 128), causal and not, with an
//! additive mask through a broadcast view and a prologue fused into the loads, on
//! matrix units (f16) and on CUDA cores (f32), in the interpreter (which checks races
//! and bounds) with the output poisoned; proven in bounds; its barriers needed; emitted
//! for CUDA, WGSL (naga) and MSL.

mod common;

use common::strip_barriers;

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::interp::InterpError;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::attention::{AttnParams, Masking, Operands, template_over};

/// The tests' data: `len` floats in [-2, 2) from `seed` (`common::uniform`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform(seed, len, 2.0)
}

/// One case: heads, query rows, keys, head size; causal; an additive mask.
#[derive(Clone, Copy, Debug)]
struct Case {
    bh: i64,
    s: i64,
    t: i64,
    d: i64,
    causal: bool,
    mask: bool,
}

/// The case's function: `q = qa · 2` fused into Q's loads, the mask `[1, s, t]`
/// broadcast over the heads by a view, the output in `dtype`.
fn build(c: Case, dtype: DType, p: &AttnParams) -> LoweredFunc {
    let Case { bh, s, t, d, .. } = c;
    let qa = te::placeholder("qa", &[bh, s, d], dtype);
    let q = te::compute("q", &[("z", bh), ("i", s), ("e", d)], |ix| {
        (qa.at(ix).cast(DType::F32) * 2.0f32).cast(dtype)
    });
    let k = te::placeholder("k", &[bh, t, d], dtype);
    let v = te::placeholder("v", &[bh, t, d], dtype);
    let m = te::placeholder("m", &[1, s, t], DType::F32);
    let mask = te::compute("mask", &[("z", bh), ("i", s), ("j", t)], |ix| {
        m.at(&[Expr::int(0), ix[1].clone(), ix[2].clone()])
    });
    let y = te::placeholder("y", &[bh, s, d], dtype);
    let ops = Operands {
        q: &q,
        k: &k,
        v: &v,
        mask: c.mask.then_some(&mask),
        y: &y,
        scale: 1.0 / (d as f64).sqrt(),
        masking: if c.causal {
            Masking::Causal
        } else {
            Masking::None
        },
    };
    let anchor = template_over("attention", &ops, p).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let fused = fuse(&anchor, &y).unwrap();
    assert!(
        fused.prologues.contains(&"q".to_string()),
        "{:?}",
        fused.prologues
    );
    lower(&fused.func).unwrap()
}

/// Float64 attention of the case's (rounded) inputs.
fn reference(c: Case, q: &[f64], k: &[f64], v: &[f64], m: &[f64]) -> Vec<f64> {
    let (bh, s, t, d) = (c.bh as usize, c.s as usize, c.t as usize, c.d as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![0.0; bh * s * d];
    for z in 0..bh {
        for i in 0..s {
            let scores: Vec<f64> = (0..t)
                .map(|j| {
                    if c.causal && j > i {
                        return f32::MIN as f64;
                    }
                    let dot: f64 = (0..d)
                        .map(|e| q[(z * s + i) * d + e] * k[(z * t + j) * d + e])
                        .sum();
                    dot * scale + if c.mask { m[i * t + j] } else { 0.0 }
                })
                .collect();
            let max = scores.iter().copied().fold(f64::MIN, f64::max);
            let p: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = p.iter().sum();
            for e in 0..d {
                let acc: f64 = (0..t).map(|j| p[j] * v[(z * t + j) * d + e]).sum();
                out[(z * s + i) * d + e] = acc / sum;
            }
        }
    }
    out
}

fn tensor(dtype: DType, values: &[f32]) -> (Arg, Vec<f64>) {
    let data = match dtype {
        DType::F16 => TensorData::F16(values.iter().map(|&x| half::f16::from_f32(x)).collect()),
        _ => TensorData::F32(values.to_vec()),
    };
    let rounded = data.to_f64_vec();
    (Arg::Tensor(data), rounded)
}

/// The arguments by name, in the fused function's parameter order (fusion puts a
/// prologue's inputs where it meets them); names it does not take are dropped.
fn in_order(lowered: &LoweredFunc, mut named: Vec<(&str, Arg)>) -> Vec<Arg> {
    lowered
        .params
        .iter()
        .map(|p| {
            let at = named
                .iter()
                .position(|(n, _)| *n == p.name())
                .unwrap_or_else(|| panic!("no argument for `{}`", p.name()));
            named.remove(at).1
        })
        .collect()
}

fn check(c: Case, dtype: DType, p: &AttnParams, seed: u64) {
    let lowered = build(c, dtype, p);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{c:?} {p:?}: {r}");
    }
    let Case { bh, s, t, d, .. } = c;
    let (qa, qa64) = tensor(dtype, &randoms(seed, (bh * s * d) as usize));
    let (k, k64) = tensor(dtype, &randoms(seed + 1, (bh * t * d) as usize));
    let (v, v64) = tensor(dtype, &randoms(seed + 2, (bh * t * d) as usize));
    // A mask of zeros and large negatives, as a padding mask has.
    let mvals: Vec<f32> = randoms(seed + 3, (s * t) as usize)
        .iter()
        .map(|&x| if x < -1.5 { -10000.0 } else { x })
        .collect();
    let (m, m64) = tensor(DType::F32, &mvals);
    let q64: Vec<f64> = qa64.iter().map(|x| x * 2.0).collect();
    let want = reference(c, &q64, &k64, &v64, &m64);
    let y = Arg::Tensor(TensorData::poisoned(dtype, want.len()));
    let mut args = in_order(
        &lowered,
        vec![("qa", qa), ("k", k), ("v", v), ("m", m), ("y", y)],
    );
    weft_ir::interp::run(&lowered, &mut args).unwrap_or_else(|e| panic!("{c:?} {p:?}: {e}"));
    let Some(Arg::Tensor(got)) = args.last() else {
        unreachable!("the output is a tensor, the last parameter")
    };
    let got = got.to_f64_vec();
    // f16: the probabilities enter the second product rounded to f16 and the output is
    // rounded once (a few units of 2⁻¹¹ of the output's scale); f32: the sums' rounding.
    let tol = if dtype == DType::F16 { 4e-3 } else { 2e-5 };
    let scale = want.iter().fold(1e-3f64, |a, w| a.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= tol * scale,
            "{c:?} {p:?}: element {i} is {g}, want {w}"
        );
    }
}

/// Matrix units (`mma` = 16, f16) at every length and head size of the issue, causal and
/// not, a mask on half of them.
#[test]
fn attention_is_right_on_matrix_units() {
    let cases = [
        (1, 32),
        (7, 64),
        (100, 80),
        (129, 128),
        (129, 32),
        (100, 64),
        (7, 128),
        (1, 80),
    ];
    for (i, &(n, d)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let c = Case {
                bh: 2,
                s: n,
                t: n,
                d,
                causal,
                mask: i % 2 == 1,
            };
            let p = AttnParams {
                mma: 16,
                bq: if n > 64 { 64 } else { 32 },
                bkv: if d > 64 { 32 } else { 64 },
                warps: 2,
                skip: true,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: false,
                shared_kv: false,
            };
            // The causal variants combine the rows' statistics by shuffles.
            let p = AttnParams {
                shuffle: causal && p.threads_per_row() > 1,
                ..p
            };
            check(c, DType::F16, &p, 10 * i as u64);
        }
    }
}

/// The two-pass form (`tp` = 1: the rows' maxima and sums first, then the normalised
/// output in the accumulators) at every length and head size of the issue, causal and
/// not, a mask on half of them; one and several threads a row, one and two fragments of
/// rows a warp, and 8×8 fragments (Metal's).
#[test]
fn attention_is_right_in_two_passes() {
    // (length, head size, bq, bkv, warps, mma)
    let cases = [
        (1, 32, 32, 64, 2, 16),
        (7, 64, 64, 16, 4, 16),
        (100, 80, 32, 32, 1, 16),
        (129, 128, 64, 32, 2, 16),
        (129, 32, 16, 16, 1, 16),
        (100, 64, 32, 64, 2, 8),
    ];
    for (i, &(n, d, bq, bkv, warps, mma)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let c = Case {
                bh: 2,
                s: n,
                t: n,
                d,
                causal,
                mask: i % 2 == 1,
            };
            let p = AttnParams {
                mma,
                bq,
                bkv,
                warps,
                skip: false,
                regs: false,
                stages: 1,
                two_pass: true,
                shuffle: false,
                shared_kv: false,
            };
            let p = AttnParams {
                shuffle: causal && p.threads_per_row() > 1,
                ..p
            };
            check(c, DType::F16, &p, 700 + 10 * i as u64);
        }
    }
    // Cross attention: more keys than queries and the reverse.
    for (i, (s, t)) in [(7, 100), (100, 7)].into_iter().enumerate() {
        let c = Case {
            bh: 1,
            s,
            t,
            d: 48,
            causal: false,
            mask: true,
        };
        let p = AttnParams {
            mma: 16,
            bq: 32,
            bkv: 32,
            warps: 2,
            skip: false,
            regs: false,
            stages: 1,
            two_pass: true,
            shuffle: false,
            shared_kv: false,
        };
        check(c, DType::F16, &p, 800 + i as u64);
    }
}

/// Warps sharing a fragment row (`w` > `bq` / `mma`: the warps split the score and
/// output columns), in one pass and in two, causal and not, a mask on half of them;
/// 8×8 fragments too; a head size whose output fragments do not split evenly refused.
#[test]
fn attention_is_right_with_warps_sharing_rows() {
    // (length, head size, bq, bkv, warps, mma, two passes)
    let cases = [
        (7, 64, 16, 64, 4, 16, false),
        (129, 32, 16, 32, 2, 16, false),
        (100, 128, 32, 32, 4, 16, true),
        (129, 64, 16, 64, 4, 16, true),
        (65, 48, 16, 32, 4, 8, false),
        (1, 64, 16, 32, 2, 16, false),
    ];
    for (i, &(n, d, bq, bkv, warps, mma, two_pass)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let c = Case {
                bh: 2,
                s: n,
                t: n,
                d,
                causal,
                mask: i % 2 == 0,
            };
            let p = AttnParams {
                mma,
                bq,
                bkv,
                warps,
                skip: false,
                regs: false,
                stages: 1,
                two_pass,
                shuffle: false,
                shared_kv: false,
            };
            assert!(p.warp_grid().1 > 1, "{p:?} splits no columns");
            let p = AttnParams {
                shuffle: causal && !two_pass,
                ..p
            };
            check(c, DType::F16, &p, 900 + 10 * i as u64);
        }
    }
    // Cross attention.
    for (i, (s, t)) in [(7, 100), (100, 7)].into_iter().enumerate() {
        let c = Case {
            bh: 1,
            s,
            t,
            d: 32,
            causal: false,
            mask: true,
        };
        let p = AttnParams {
            mma: 16,
            bq: 16,
            bkv: 32,
            warps: 2,
            skip: false,
            regs: false,
            stages: 1,
            two_pass: i == 1,
            shuffle: false,
            shared_kv: false,
        };
        check(c, DType::F16, &p, 980 + i as u64);
    }
    // 80 columns are five fragments: four warps cannot share them.
    let p = AttnParams {
        mma: 16,
        bq: 16,
        bkv: 64,
        warps: 4,
        skip: false,
        regs: false,
        stages: 1,
        two_pass: false,
        shuffle: false,
        shared_kv: false,
    };
    assert!(!p.fits(&TargetLimits::cuda(), 80, 80, true));
    let q = te::placeholder("q", &[1, 16, 80], DType::F16);
    let ops = Operands {
        q: &q,
        k: &q,
        v: &q,
        mask: None,
        y: &q,
        scale: 1.0,
        masking: Masking::None,
    };
    let err = template_over("attention", &ops, &p)
        .unwrap_err()
        .to_string();
    assert!(err.contains("split the output"), "{err}");
    // Nor does the register form split columns, nor a key step of one fragment.
    for (bkv, regs) in [(64, true), (16, false)] {
        let p = AttnParams { bkv, regs, ..p };
        assert!(AttnParams::from_config(&p.config()).is_err(), "{p:?}");
    }
}

/// One shared K/V tile (`kv` = 1: V loaded over K once the scores are taken) in the
/// one-pass form: the lengths and head sizes, causal and not, a mask on half,
/// steps of 64 and 128 keys, warps owning rows and sharing them, 8×8 fragments; cross
/// attention; refused in two passes.
#[test]
fn attention_is_right_with_a_shared_kv_tile() {
    // (length, head size, bq, bkv, warps, mma)
    let cases = [
        (1, 32, 16, 64, 1, 16),
        (7, 64, 16, 128, 4, 16),
        (100, 80, 32, 64, 2, 16),
        (129, 128, 16, 64, 4, 16),
        (129, 64, 32, 128, 8, 16),
        (100, 48, 16, 64, 4, 8),
    ];
    for (i, &(n, d, bq, bkv, warps, mma)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let c = Case {
                bh: 2,
                s: n,
                t: n,
                d,
                causal,
                mask: i % 2 == 1,
            };
            let p = AttnParams {
                mma,
                bq,
                bkv,
                warps,
                skip: false,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: causal,
                shared_kv: true,
            };
            let p = AttnParams {
                shuffle: p.shuffle && p.threads_per_row() > 1,
                ..p
            };
            check(c, DType::F16, &p, 1100 + 10 * i as u64);
        }
    }
    for (i, (s, t)) in [(7, 100), (100, 7)].into_iter().enumerate() {
        let c = Case {
            bh: 1,
            s,
            t,
            d: 64,
            causal: false,
            mask: true,
        };
        let p = AttnParams {
            mma: 16,
            bq: 16,
            bkv: 128,
            warps: 4,
            skip: false,
            regs: false,
            stages: 1,
            two_pass: false,
            shuffle: false,
            shared_kv: true,
        };
        check(c, DType::F16, &p, 1180 + i as u64);
    }
    let p = AttnParams {
        mma: 16,
        bq: 16,
        bkv: 64,
        warps: 1,
        skip: false,
        regs: false,
        stages: 1,
        two_pass: true,
        shuffle: false,
        shared_kv: true,
    };
    let err = AttnParams::from_config(&p.config())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`kv` = 1"), "{err}");
    // 16 rows and 128 keys a step fit NVIDIA's Vulkan (48 KiB) only with the shared tile.
    let vk = common::nvidia_vulkan_limits();
    let long = AttnParams {
        bkv: 128,
        warps: 4,
        two_pass: false,
        shuffle: true,
        ..p
    };
    assert!(long.fits(&vk, 64, 64, true));
    assert!(
        !AttnParams {
            shared_kv: false,
            ..long
        }
        .fits(&vk, 64, 64, true)
    );
    // Its WGSL passes naga.
    let c = Case {
        bh: 12,
        s: 128,
        t: 128,
        d: 64,
        causal: true,
        mask: false,
    };
    let opts = weft_codegen_wgsl::WgslOptions { limits: vk };
    let wgsl = weft_codegen_wgsl::emit_lowered(&build(c, DType::F16, &long), &opts).unwrap();
    assert!(wgsl.source.contains("KV_s"), "{}", wgsl.source);
    weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{e}"));
}

/// The register form (`rg` = 1: S, P and O in the warps' registers, CUDA's element
/// layout) at every length and head size of the issue, causal and not, a mask on half of
/// them; one and two fragments of rows a warp, one to eight key fragments a step.
#[test]
fn attention_is_right_in_registers() {
    // The last column: key/value stages (2: the next key tile fetched while this one
    // computes; with causal skipping at 129 rows, one block's next tile is not fetched).
    let cases = [
        (1, 32, 64, 64, 4, 1),
        (7, 64, 32, 64, 2, 2),
        (100, 80, 64, 32, 2, 1),
        (129, 128, 64, 64, 4, 2),
        (129, 32, 128, 128, 4, 2),
        (100, 64, 32, 16, 1, 2),
        (128, 64, 64, 64, 4, 2),
    ];
    for (i, &(n, d, bq, bkv, warps, stages)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let c = Case {
                bh: 2,
                s: n,
                t: n,
                d,
                causal,
                mask: i % 2 == 1,
            };
            let p = AttnParams {
                mma: 16,
                bq,
                bkv,
                warps,
                skip: i % 3 != 2,
                regs: true,
                stages,
                two_pass: false,
                shuffle: false,
                shared_kv: false,
            };
            check(c, DType::F16, &p, 500 + 10 * i as u64);
        }
    }
    // Cross attention: more keys than queries and the reverse.
    for (i, (s, t)) in [(7, 100), (100, 7)].into_iter().enumerate() {
        let c = Case {
            bh: 1,
            s,
            t,
            d: 48,
            causal: false,
            mask: true,
        };
        let p = AttnParams {
            mma: 16,
            bq: 32,
            bkv: 32,
            warps: 2,
            skip: false,
            regs: true,
            stages: 1 + i as i64,
            two_pass: false,
            shuffle: false,
            shared_kv: false,
        };
        check(c, DType::F16, &p, 600 + i as u64);
    }
}

/// CUDA cores (`mma` = 0) in f32, and in f16 storage.
#[test]
fn attention_is_right_on_cuda_cores() {
    let cases = [(1, 32), (7, 80), (100, 64), (129, 128)];
    for (i, &(n, d)) in cases.iter().enumerate() {
        for causal in [false, true] {
            let c = Case {
                bh: 2,
                s: n,
                t: n,
                d,
                causal,
                mask: i % 2 == 0,
            };
            let p = AttnParams {
                mma: 0,
                bq: 16,
                bkv: 32,
                warps: 2,
                skip: true,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: causal,
                shared_kv: false,
            };
            check(c, DType::F32, &p, 100 + i as u64);
        }
    }
    let c = Case {
        bh: 3,
        s: 33,
        t: 17,
        d: 40,
        causal: false,
        mask: true,
    };
    for warps in [1, 4] {
        let p = AttnParams {
            mma: 0,
            bq: 32,
            bkv: 16,
            warps,
            skip: false,
            regs: false,
            stages: 1,
            two_pass: false,
            shuffle: false,
            shared_kv: false,
        };
        check(c, DType::F16, &p, 200);
    }
}

/// More keys than queries and the reverse (cross attention), several threads a row and
/// a row a thread, 8×8 fragments (Metal's).
#[test]
fn attention_is_right_at_other_tilings() {
    let shapes = [(7, 100), (100, 7), (65, 129)];
    for (i, &(s, t)) in shapes.iter().enumerate() {
        for (mma, bq, bkv, warps) in [
            (16, 16, 16, 1),
            (16, 64, 16, 4),
            (8, 32, 32, 2),
            (16, 128, 64, 8),
        ] {
            let c = Case {
                bh: 1,
                s,
                t,
                d: 48,
                causal: i == 2,
                mask: true,
            };
            let p = AttnParams {
                mma,
                bq,
                bkv,
                warps,
                skip: true,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: false,
                shared_kv: false,
            };
            check(c, DType::F16, &p, 300 + i as u64);
        }
    }
}

#[test]
fn the_rule_fits_every_target() {
    for limits in [
        TargetLimits::cuda(),
        TargetLimits::webgpu_default(),
        TargetLimits::metal(),
    ] {
        for (heads, n, d) in [(12, 128, 64), (96, 512, 64), (1, 7, 128), (12, 2048, 80)] {
            for f16 in [false, true] {
                let Some((p, why)) =
                    AttnParams::rule(&limits, (heads, n, n, d), f16, Masking::None)
                else {
                    // Only where not even the smallest tiles fit (f32 tiles at d = 128
                    // in 16 or 32 KiB): then the caller keeps the unfused kernels.
                    let smallest = AttnParams {
                        mma: 0,
                        bq: 16,
                        bkv: 16,
                        warps: 1,
                        skip: false,
                        regs: false,
                        stages: 1,
                        two_pass: false,
                        shuffle: false,
                        shared_kv: false,
                    };
                    assert!(!smallest.fits(&limits, d, d, f16), "{} d={d}", limits.name);
                    continue;
                };
                assert!(p.fits(&limits, d, d, f16), "{why}");
                assert_eq!(
                    p.mma > 0,
                    f16 && !limits.f16_mma_sizes().is_empty(),
                    "{why}"
                );
            }
        }
    }
    // BERT's 12 heads of 128 on CUDA: the register form, 64 rows and 128 keys a block
    // (the H100's fastest at 128 and 512 tokens); 64 keys past a head size of 64 or 512
    // tokens; WGSL and
    // MSL keep the shared-memory form, whose rule still gives each SM a block (Metal's 8×8
    // fragments, 16-row tiles: 96 blocks).
    let cuda = TargetLimits::cuda();
    let (p, why) = AttnParams::rule(&cuda, (12, 128, 128, 64), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.warps, p.regs), (64, 128, 4, true), "{why}");
    let (p, why) = AttnParams::rule(&cuda, (12, 512, 512, 128), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.regs), (64, 64, true), "{why}");
    let (p, why) = AttnParams::rule(&cuda, (12, 2048, 2048, 64), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.regs, p.stages), (64, 64, true, 2), "{why}");
    // Past a block per multiprocessor (GPT-2's batch 8: 96 heads of 512, 768 blocks), 64
    // keys a step; at 96 heads of 128 one step of 128 still holds every key.
    let (p, why) = AttnParams::rule(&cuda, (96, 512, 512, 64), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.stages), (64, 64, 2), "{why}");
    let (p, why) = AttnParams::rule(&cuda, (12, 512, 512, 64), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.stages), (64, 128, 2), "{why}");
    // Causal (GPT-2 at 512 tokens): 64 keys a step, the diagonal skipped at finer grain;
    // at 128 keys one step still holds them all.
    let (p, why) = AttnParams::rule(&cuda, (12, 512, 512, 64), true, Masking::Causal).unwrap();
    assert_eq!((p.bq, p.bkv, p.stages), (64, 64, 2), "{why}");
    let (p, why) = AttnParams::rule(&cuda, (96, 128, 128, 64), true, Masking::Causal).unwrap();
    assert_eq!((p.bkv, p.stages), (128, 1), "{why}");
    let (p, why) = AttnParams::rule(&cuda, (96, 128, 128, 64), true, Masking::None).unwrap();
    assert_eq!((p.bkv, p.stages), (128, 1), "{why}");
    // One key step: nothing to fetch ahead.
    let (p, why) = AttnParams::rule(&cuda, (12, 128, 128, 64), true, Masking::None).unwrap();
    assert_eq!(p.stages, 1, "{why}");
    let (p, why) = AttnParams::rule(&cuda, (2, 7, 7, 64), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.regs), (16, 16, true), "{why}");
    let (p, why) = AttnParams::rule(
        &TargetLimits::metal(),
        (12, 128, 128, 64),
        true,
        Masking::None,
    )
    .unwrap();
    assert_eq!((p.mma, p.bq, p.regs), (8, 16, false), "{why}");
}

/// On NVIDIA's Vulkan (opaque cooperative matrices, 48 KiB, subgroups of 32) the rule
/// gives a block four warps a 16-row fragment row, sharing its columns: 16 rows at 12
/// heads of 128 (96 blocks), 32 rows and eight warps past a block per multiprocessor,
/// one pass at 512 keys; a head size of five fragments, or a single key fragment, keeps
/// the previous rule.
#[test]
fn the_rule_shares_rows_among_warps_on_opaque_fragments() {
    let limits = TargetLimits {
        multiprocessors: 132,
        ..common::nvidia_vulkan_limits()
    };
    for (shape, masking, want) in [
        ((12, 128, 128, 64), Masking::None, (16, 64, 4)),
        ((12, 128, 128, 64), Masking::Causal, (16, 64, 4)),
        ((96, 128, 128, 64), Masking::Causal, (32, 64, 8)),
        ((12, 512, 512, 64), Masking::None, (32, 64, 8)),
        ((96, 512, 512, 64), Masking::None, (32, 64, 8)),
    ] {
        let (p, why) = AttnParams::rule(&limits, shape, true, masking).unwrap();
        assert_eq!((p.bq, p.bkv, p.warps), want, "{shape:?}: {why}");
        assert!(!p.two_pass && p.shuffle && p.warp_grid().1 == 4, "{why}");
        assert!(why.contains("warps sharing"), "{why}");
    }
    let (p, why) = AttnParams::rule(&limits, (12, 512, 512, 80), true, Masking::None).unwrap();
    assert_eq!(p.warp_grid().1, 1, "{why}");
    assert!(p.two_pass, "{why}");
    // Seven keys: a key step of one fragment, which warps cannot share.
    let (p, why) = AttnParams::rule(&limits, (2, 7, 7, 64), true, Masking::None).unwrap();
    assert_eq!((p.bq, p.bkv, p.warps), (16, 16, 1), "{why}");
    // Its pick emits WGSL that naga takes.
    let c = Case {
        bh: 12,
        s: 128,
        t: 128,
        d: 64,
        causal: true,
        mask: true,
    };
    let (p, _) = AttnParams::rule(&limits, (12, 128, 128, 64), true, Masking::Causal).unwrap();
    let opts = weft_codegen_wgsl::WgslOptions { limits };
    let wgsl = weft_codegen_wgsl::emit_lowered(&build(c, DType::F16, &p), &opts).unwrap();
    assert!(wgsl.source.contains("warp_col"), "{}", wgsl.source);
    weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn without_its_barriers_attention_races() {
    let c = Case {
        bh: 1,
        s: 20,
        t: 40,
        d: 32,
        causal: false,
        mask: false,
    };
    let p = AttnParams {
        mma: 16,
        bq: 32,
        bkv: 32,
        warps: 2,
        skip: true,
        regs: false,
        stages: 1,
        two_pass: false,
        shuffle: false,
        shared_kv: false,
    };
    for (regs, stages) in [(false, 1), (true, 1), (true, 2)] {
        let mut lowered = build(c, DType::F16, &AttnParams { regs, stages, ..p });
        lowered.kernels[0].body = strip_barriers(&lowered.kernels[0].body);
        let named = vec![
            ("qa", tensor(DType::F16, &randoms(1, 20 * 32)).0),
            ("k", tensor(DType::F16, &randoms(2, 40 * 32)).0),
            ("v", tensor(DType::F16, &randoms(3, 40 * 32)).0),
            ("y", Arg::Tensor(TensorData::poisoned(DType::F16, 20 * 32))),
        ];
        let mut args = in_order(&lowered, named);
        let err = weft_ir::interp::run(&lowered, &mut args).unwrap_err();
        assert!(
            matches!(err, InterpError::SharedRace { .. }),
            "regs={regs} stages={stages}: {err}"
        );
    }
}

#[test]
fn every_language_emits_it() {
    let c = Case {
        bh: 2,
        s: 100,
        t: 100,
        d: 80,
        causal: true,
        mask: true,
    };
    let at = |mma, bq| AttnParams {
        mma,
        bq,
        bkv: 32,
        warps: 2,
        skip: mma != 0 && bq == 64,
        regs: false,
        stages: 1,
        two_pass: false,
        shuffle: false,
        shared_kv: false,
    };
    let cuda = build(c, DType::F16, &at(16, 64));
    let src = weft_codegen_cuda::emit_lowered(&cuda, &Default::default()).unwrap();
    assert!(src.source.contains("weft_mma_f32"), "{}", src.source);
    // The register form: element-wise maps, row reductions and P as an A operand in
    // registers, compiled by NVRTC where it is installed.
    let regs = build(
        c,
        DType::F16,
        &AttnParams {
            regs: true,
            stages: 1,
            ..at(16, 64)
        },
    );
    let src = weft_codegen_cuda::emit_lowered(&regs, &Default::default()).unwrap();
    for needle in ["weft_row_reduce<", "weft_acc_to_a(", "weft_acc_row(weft_q)"] {
        assert!(src.source.contains(needle), "no {needle}: {}", src.source);
    }
    assert!(!src.source.contains("S_s"), "{}", src.source);
    match weft_codegen_cuda::nvrtc::check_arch(&src.source, "sm_80") {
        Ok(weft_codegen_common::testing::Checked::Passed) => {}
        Ok(_) => {} // skipped, with the reason printed
        Err(e) => panic!("{e}"),
    }
    // Two stages: the next key tile's copies are cp.async, waited for at the barrier.
    let staged = build(
        c,
        DType::F16,
        &AttnParams {
            regs: true,
            stages: 2,
            ..at(16, 64)
        },
    );
    let src = weft_codegen_cuda::emit_lowered(&staged, &Default::default()).unwrap();
    for needle in ["cp.async", "weft_row_reduce<"] {
        assert!(src.source.contains(needle), "no {needle}: {}", src.source);
    }
    match weft_codegen_cuda::nvrtc::check_arch(&src.source, "sm_80") {
        Ok(weft_codegen_common::testing::Checked::Passed) => {}
        Ok(_) => {}
        Err(e) => panic!("{e}"),
    }
    // Opaque fragments refuse it by name.
    let err = weft_codegen_wgsl::emit_lowered(
        &regs,
        &weft_codegen_wgsl::WgslOptions {
            limits: common::nvidia_vulkan_limits(),
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("rows"), "{err}");
    // An H100's Vulkan: 16×16 cooperative matrices, 48 KiB of workgroup memory.
    let opts = weft_codegen_wgsl::WgslOptions {
        limits: common::nvidia_vulkan_limits(),
    };
    for mma in [16, 0] {
        let lowered = build(c, DType::F16, &at(mma, 32));
        let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts)
            .unwrap_or_else(|e| panic!("mma={mma}: {e}"));
        weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("mma={mma}: {e}"));
    }
    // The rows' statistics by shuffles (two threads a row here), in one and two passes:
    // WGSL (naga), CUDA (NVRTC), MSL; plain WebGPU refuses them.
    for two_pass in [false, true] {
        let p = AttnParams {
            shuffle: true,
            two_pass,
            ..at(16, 32)
        };
        assert!(
            p.shuffles_on(&opts.limits) && !p.fits(&TargetLimits::webgpu_default(), 80, 80, true)
        );
        let lowered = build(c, DType::F16, &p);
        let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &opts).unwrap();
        assert!(
            wgsl.source.contains("subgroupShuffleXor("),
            "{}",
            wgsl.source
        );
        assert!(!wgsl.source.contains("part_max"), "{}", wgsl.source);
        weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(cuda.source.contains("__shfl_xor_sync("), "{}", cuda.source);
        match weft_codegen_cuda::nvrtc::check_arch(&cuda.source, "sm_80") {
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
        let msl = weft_codegen_metal::emit_lowered(
            &build(
                c,
                DType::F16,
                &AttnParams {
                    shuffle: true,
                    two_pass,
                    ..at(8, 16)
                },
            ),
            &Default::default(),
        )
        .unwrap();
        assert!(msl.source.contains("simd_shuffle_xor("), "{}", msl.source);
    }
    let metal = build(c, DType::F16, &at(8, 16));
    let msl = weft_codegen_metal::emit_lowered(&metal, &Default::default()).unwrap();
    assert!(
        msl.source.contains("simdgroup_multiply_accumulate"),
        "{}",
        msl.source
    );
}

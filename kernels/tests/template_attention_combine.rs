//! Split-KV attention in one kernel (`template_split_form` with
//! `Combine::LastArrival`: the chunk whose block arrives last at its row tile and head
//! combines the chunks) against the two-kernel form (`Combine::Kernel`) on the
//! interpreter, which checks races, bounds and the blocks' ordering through the counter:
//! **bit for bit** the same output, f32 and f16, at decode shapes (heads over KV heads
//! 32/4 and 8/2 stacked as 8 and 4 rows, batch 1 and 3), caches that fill the last key
//! step and caches that do not, positions 1, 37 and 128 (the keys past the position
//! masked), and a row masked everywhere by `-inf`, with the chunks arriving in order and
//! in reverse; a second launch with the counters the first left gives the same bits and
//! leaves them at zero; the float64 reference agrees;
//! one kernel where the target has a device-scope fence, two on WGSL and Metal; CUDA
//! (NVRTC) and HIP (hipcc) compile it where their compilers are installed.

mod common;

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::expr::ThreadAxis;
use weft_ir::func::Param;
use weft_ir::fusion::fuse;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::attention::{AttnParams, Combine, Masking, Operands, template_split_form};

/// The tests' data: `len` floats in [-2, 2) from `seed` (`common::uniform_mixed`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform_mixed(seed, len, 2.0)
}

/// A decode step's attention: `batch` sequences of `kv_heads` KV heads, each with
/// `rows` query heads stacked as rows, over a cache of `t` positions of which those up
/// to sequence `b`'s position are seen (`positions[b % len]`); `dead`: row 0 of head 0
/// masked everywhere by `-inf`.
#[derive(Clone, Copy, Debug)]
struct Case {
    batch: i64,
    kv_heads: i64,
    rows: i64,
    t: i64,
    position: i64,
    dead: bool,
}

const D: i64 = 64;

impl Case {
    fn bh(&self) -> i64 {
        self.batch * self.kv_heads
    }

    /// The additive mask at head `z`, row `i`, key `j`: `-inf` past the position (each
    /// sequence of the batch a position of its own: `position + 5 · b`, at most the
    /// cache's last), a small bias elsewhere.
    fn mask(&self, z: i64, i: i64, j: i64) -> f32 {
        let b = z / self.kv_heads;
        let position = (self.position + 5 * b).min(self.t - 1);
        if j > position || (self.dead && z == 0 && i == 0) {
            f32::NEG_INFINITY
        } else {
            0.125 * ((z + i + j) % 5) as f32
        }
    }
}

/// The case's function with `p` in `splits` chunks combined as `combine`: `q` scaled by
/// a view fused into the loads, the output in `dtype` through a fused epilogue (`+ 1`,
/// cast), the counters (where there are) made a parameter so the test reads them back.
fn build(c: &Case, dtype: DType, (p, splits): (&AttnParams, i64), combine: Combine) -> LoweredFunc {
    let (bh, s, t) = (c.bh(), c.rows, c.t);
    let qa = te::placeholder("qa", &[bh, s, D], dtype);
    let q = te::compute("q", &[("z", bh), ("i", s), ("e", D)], |ix| {
        (qa.at(ix).cast(DType::F32) * 2.0f32).cast(dtype)
    });
    let k = te::placeholder("k", &[bh, t, D], dtype);
    let v = te::placeholder("v", &[bh, t, D], dtype);
    let m = te::placeholder("m", &[bh, s, t], DType::F32);
    let y = te::placeholder("y", &[bh, s, D], DType::F32);
    let out = te::compute("out", &[("z", bh), ("i", s), ("e", D)], |ix| {
        (y.at(ix) + 1.0f32).cast(dtype)
    });
    let ops = Operands {
        q: &q,
        k: &k,
        v: &v,
        mask: Some(&m),
        y: &y,
        scale: 1.0 / (D as f64).sqrt(),
        masking: Masking::None,
    };
    let anchor = template_split_form("attention", &ops, p, splits, combine)
        .unwrap_or_else(|e| panic!("{c:?} {p:?} sk={splits}: {e}"));
    let fused = fuse(&anchor, &out).unwrap();
    let mut lowered = lower(&fused.func).unwrap();
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

fn tensor(dtype: DType, values: &[f32]) -> TensorData {
    match dtype {
        DType::F16 => TensorData::F16(values.iter().map(|&x| half::f16::from_f32(x)).collect()),
        _ => TensorData::F32(values.to_vec()),
    }
}

/// The case's inputs by name.
fn inputs(c: &Case, dtype: DType, seed: u64) -> Vec<(&'static str, TensorData)> {
    let (bh, s, t) = (c.bh(), c.rows, c.t);
    let mask: Vec<f32> = (0..bh * s * t)
        .map(|x| c.mask(x / (s * t), x / t % s, x % t))
        .collect();
    vec![
        ("qa", tensor(dtype, &randoms(seed, (bh * s * D) as usize))),
        (
            "k",
            tensor(dtype, &randoms(seed + 1, (bh * t * D) as usize)),
        ),
        (
            "v",
            tensor(dtype, &randoms(seed + 2, (bh * t * D) as usize)),
        ),
        ("m", TensorData::F32(mask)),
    ]
}

/// `lowered` with its blocks taking the chunks in reverse (`blockIdx.z` read as
/// `splits − 1 − blockIdx.z`): the interpreter runs blocks in order, so the last to
/// arrive at a row tile and head then holds chunk 0, not the last chunk — another
/// arrival order, which must give the same bits.
fn reversed_arrivals(lowered: &LoweredFunc, splits: i64) -> LoweredFunc {
    let mut out = lowered.clone();
    for k in &mut out.kernels {
        k.body = k.body.map_exprs(&mut |e| {
            e.rewrite(&mut |n| match n {
                Expr::Builtin(ThreadAxis::BlockIdxZ) => Expr::int(splits - 1) - n,
                other => other,
            })
        });
    }
    out
}

/// One launch of `lowered` on `given` with the output poisoned and the counters (where
/// the function has them) as given: the output's bits and values, and the counters
/// after.
fn launch(
    lowered: &LoweredFunc,
    given: &[(&str, TensorData)],
    counters: Option<TensorData>,
) -> (Vec<u32>, Vec<f64>, Option<TensorData>) {
    let mut args: Vec<Arg> = lowered
        .params
        .iter()
        .map(|p| {
            let t = match p {
                Param::Buffer(b) if b.name() == "out" => {
                    TensorData::poisoned(b.dtype(), b.numel() as usize)
                }
                Param::Buffer(b) if b.name() == "tile_arrivals" => counters
                    .clone()
                    .unwrap_or_else(|| TensorData::I32(vec![0; b.numel() as usize])),
                p => given
                    .iter()
                    .find(|(n, _)| *n == p.name())
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| panic!("no tensor for {}", p.name())),
            };
            Arg::Tensor(t)
        })
        .collect();
    weft_ir::interp::run(lowered, &mut args).unwrap_or_else(|e| panic!("{e}"));
    let find = |name: &str| lowered.params.iter().position(|p| p.name() == name);
    let Some(Arg::Tensor(out)) = find("out").map(|i| &args[i]) else {
        panic!("no output")
    };
    let bits = match out {
        TensorData::F32(v) => v.iter().map(|v| v.to_bits()).collect(),
        TensorData::F16(v) => v.iter().map(|v| v.to_bits() as u32).collect(),
        _ => panic!("a float output"),
    };
    let after = find("tile_arrivals").map(|i| match &args[i] {
        Arg::Tensor(t) => t.clone(),
        Arg::Scalar(_) => panic!("counters are a tensor"),
    });
    (bits, out.to_f64_vec(), after)
}

/// Float64 attention of the inputs as the kernel reads them (`+ 1`); `None` for a row
/// masked everywhere.
fn reference(c: &Case, given: &[(&str, TensorData)]) -> Vec<Option<f64>> {
    let get = |name: &str| {
        given
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.to_f64_vec())
            .unwrap()
    };
    let (q, k, v, m) = (get("qa"), get("k"), get("v"), get("m"));
    let (bh, s, t, d) = (c.bh() as usize, c.rows as usize, c.t as usize, D as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![None; bh * s * d];
    for z in 0..bh {
        for i in 0..s {
            let scores: Vec<f64> = (0..t)
                .map(|j| {
                    let dot: f64 = (0..d)
                        .map(|e| 2.0 * q[(z * s + i) * d + e] * k[(z * t + j) * d + e])
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
                out[(z * s + i) * d + e] = Some(acc / sum + 1.0);
            }
        }
    }
    out
}

/// The H200's limits (132 multiprocessors).
fn h200() -> TargetLimits {
    TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    }
}

/// The case split as `split` says (the rule's config and splits where `None`), one
/// kernel against two: the same bits; the counters back at zero and a second launch
/// the same bits; the float64 reference within f16's or f32's rounding.
fn check(c: Case, dtype: DType, split: Option<(AttnParams, i64)>, seed: u64) {
    let f16 = dtype == DType::F16;
    let hstd = (c.bh(), c.rows, c.t, D);
    let (p, splits) = split.unwrap_or_else(|| {
        let (p, sk, _) = AttnParams::rule_split_form(&h200(), hstd, f16, Combine::LastArrival)
            .unwrap_or_else(|| panic!("{c:?}: the rule does not split"));
        (p, sk)
    });
    let one = build(&c, dtype, (&p, splits), Combine::LastArrival);
    let two = build(&c, dtype, (&p, splits), Combine::Kernel);
    assert_eq!((one.kernels.len(), two.kernels.len()), (1, 2), "{c:?}");
    for r in prove_all(&one) {
        assert!(r.is_proven(), "{c:?} {p:?}: {r}");
    }
    let given = inputs(&c, dtype, seed);
    let (bits, got, counters) = launch(&one, &given, None);
    let (want_bits, _, _) = launch(&two, &given, None);
    let what = format!("{c:?} {dtype} bkv={} sk={splits}", p.bkv);
    for (i, (a, b)) in bits.iter().zip(&want_bits).enumerate() {
        assert_eq!(
            a, b,
            "{what}: element {i}: {a:#x} in one kernel, {b:#x} in two"
        );
    }
    // The last to arrive holding chunk 0 instead of the last chunk: the same bits.
    let (reversed, _, _) = launch(&reversed_arrivals(&one, splits), &given, None);
    assert!(
        reversed == want_bits,
        "{what}: chunks arriving in reverse differ"
    );
    let tiles = ((c.rows + p.bq - 1) / p.bq * c.bh()) as usize;
    let zeros = TensorData::I32(vec![0; tiles]);
    assert_eq!(counters.as_ref(), Some(&zeros), "{what}: the counters");
    let (again, _, after) = launch(&one, &given, counters);
    assert_eq!(bits, again, "{what}: a second launch differs");
    assert_eq!(
        after,
        Some(zeros),
        "{what}: the counters after a second launch"
    );
    let want = reference(&c, &given);
    let tol = if f16 { 4e-3 } else { 2e-5 };
    let scale = want.iter().flatten().fold(1.0f64, |a, w| a.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        match w {
            Some(w) => assert!(
                (g - w).abs() <= tol * scale,
                "{what}: element {i} is {g}, want {w}"
            ),
            // A row masked everywhere: 0 / 0 (+ 1), or 1 where keys past the cache pad
            // the last step (terms of 1 with zero values), as in two kernels.
            None => assert!(g.is_nan() || *g == 1.0, "{what}: element {i} is {g}"),
        }
    }
}

/// The decode shapes at the rule's splits, f32 and f16: TinyLlama's heads (32 over 4 KV
/// heads: 4 × 8 rows a sequence) and 8 over 2 (2 × 4 rows), batch 1 and 3, caches of
/// 192 positions (12 whole steps of 16) and 191 (the last step one key short), the
/// position at 1, 37, 128 and the cache's last.
#[test]
fn one_kernel_gives_the_two_kernels_bits() {
    let mut seed = 1;
    for (kv_heads, rows) in [(4, 8), (2, 4)] {
        for batch in [1, 3] {
            for t in [192, 191] {
                // The last: a full cache, whose last chunk holds real scores (with
                // every chunk after the position masked, the order of their zero
                // terms would not show).
                for position in [1, 37, 128, t - 1] {
                    // Every position at batch 1; two a cache at batch 3.
                    if batch == 3 && (position + t) % 2 == 0 {
                        continue;
                    }
                    let c = Case {
                        batch,
                        kv_heads,
                        rows,
                        t,
                        position,
                        dead: false,
                    };
                    for dtype in [DType::F32, DType::F16] {
                        check(c, dtype, None, seed);
                        seed += 10;
                    }
                }
            }
        }
    }
}

/// Chunks of several key steps (the 1152-key cache of a 1024-token prompt cut in 24
/// chunks of three 16-key steps; 191 keys in 3 chunks of 64 with the last step short),
/// threads that take several rows (64-row tiles), and a row masked everywhere by `-inf`
/// (0 / 0 in both forms where the keys fill the last step, 1 / n where padding keys
/// count) at the rule's splits.
#[test]
fn long_chunks_wide_tiles_and_dead_rows_give_the_two_kernels_bits() {
    let cores = |bq, bkv, warps| {
        let p = AttnParams {
            mma: 0,
            bq,
            bkv,
            warps,
            skip: false,
            regs: false,
            stages: 1,
            two_pass: false,
            shuffle: false,
            shared_kv: false,
        };
        // Shuffles where a row has several threads, as the rule does on CUDA.
        AttnParams {
            shuffle: p.threads_per_row() > 1,
            ..p
        }
    };
    let base = Case {
        batch: 1,
        kv_heads: 4,
        rows: 8,
        t: 1152,
        position: 1151,
        dead: false,
    };
    for dtype in [DType::F32, DType::F16] {
        check(base, dtype, Some((cores(16, 16, 2), 24)), 3);
        let short = Case { t: 191, ..base };
        check(short, dtype, Some((cores(16, 64, 2), 3)), 5);
        // 40 rows in one 64-row tile of one warp: two rows a thread in the combination.
        let wide = Case {
            rows: 40,
            t: 160,
            position: 159,
            ..base
        };
        check(wide, dtype, Some((cores(64, 16, 1), 5)), 7);
        for t in [192, 191] {
            let dead = Case {
                t,
                position: 128,
                dead: true,
                ..base
            };
            check(dead, dtype, None, 9);
        }
    }
}

/// One kernel where the target has a device-scope fence (CUDA, HIP, the interpreter's
/// CUDA limits); WGSL and Metal keep the second kernel.
#[test]
fn only_fenced_targets_combine_in_one_kernel() {
    assert_eq!(
        Combine::on(&TargetLimits::cuda(), true),
        Combine::LastArrival
    );
    assert_eq!(Combine::on(&TargetLimits::cuda(), false), Combine::Kernel);
    for limits in [TargetLimits::webgpu_default(), TargetLimits::metal()] {
        assert!(!limits.device_fence, "{}", limits.name);
        assert_eq!(
            Combine::on(&limits, true),
            Combine::Kernel,
            "{}",
            limits.name
        );
    }
}

/// The one-kernel rule splits from twice the rows' keys (the two-kernel rule from four
/// times), keeps the heads' bound and says how the chunks combine.
#[test]
fn the_one_kernel_rule() {
    let rule = |hstd, combine| AttnParams::rule_split_form(&h200(), hstd, true, combine);
    let (p, sk, why) = rule((4, 8, 191, 64), Combine::LastArrival).unwrap();
    assert_eq!((p.bq, p.bkv, sk), (16, 16, 12), "{why}");
    assert!(why.contains("the last to arrive combining them"), "{why}");
    assert!(!why.contains("combining kernel"), "{why}");
    // 16 to 31 keys for 8 rows: split in one kernel only (two 16-key steps from 17).
    assert!(rule((4, 8, 24, 64), Combine::Kernel).is_none());
    let (_, sk, _) = rule((4, 8, 24, 64), Combine::LastArrival).unwrap();
    assert_eq!(sk, 2);
    // Self-attention and prefill rows, and 32 heads, stay whole in both forms.
    for hstd in [(4, 16, 16, 64), (4, 128, 1024, 64), (32, 8, 191, 64)] {
        assert!(rule(hstd, Combine::LastArrival).is_none(), "{hstd:?}");
    }
}

/// CUDA (NVRTC where installed: the fence before the count) and HIP (hipcc where
/// installed) compile the one-kernel form.
#[test]
fn cuda_and_hip_compile_the_one_kernel_form() {
    let c = Case {
        batch: 1,
        kv_heads: 4,
        rows: 8,
        t: 191,
        position: 128,
        dead: false,
    };
    for dtype in [DType::F16, DType::F32] {
        let (p, sk, _) =
            AttnParams::rule_split_form(&h200(), (4, 8, 191, D), true, Combine::LastArrival)
                .unwrap();
        let lowered = build(&c, dtype, (&p, sk), Combine::LastArrival);
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(cuda.source.contains("__threadfence()"), "{dtype}");
        assert!(cuda.source.contains("atomicAdd("), "{dtype}");
        weft_codegen_cuda::nvrtc::check_arch(&cuda.source, "sm_80")
            .unwrap_or_else(|e| panic!("{dtype}: {e}\n{}", cuda.source));
        let hip = weft_codegen_cuda::hip::emit_lowered(&lowered, &Default::default()).unwrap();
        let entries: Vec<String> = hip.kernels.iter().map(|k| k.name.clone()).collect();
        weft_codegen_cuda::hipcc::check(&hip.source, &entries)
            .unwrap_or_else(|e| panic!("{dtype}: {e}"));
    }
}

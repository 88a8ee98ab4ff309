//! The skinny-product template split over k, its last part summing
//! (`gemv::template_split`): against float64 in the interpreter (races, bounds and the
//! blocks' ordering through the counter checked) at m = 1, 2, 3, 8, k leaving a
//! remainder in the last part, n odd, 2, 3 and 4 parts, with and without an epilogue
//! (bias + residual + cast) and a folded RMS norm; a second launch gives the same bits
//! and finds the counters back at zero; the parts are summed in order 0..sk (data whose
//! f32 sum depends on the order); the split rule at TinyLlama's shapes; emitted for CUDA
//! and HIP (NVRTC, hipcc where installed). With the weight's rows prefetched before the
//! kernel's wait (`gemv::template_prefetched`, whole and split): the same results, every
//! prefetch inside `b` (the interpreter checks each), the wait after the prefetches in
//! CUDA's source.

mod common;

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::func::Param;
use weft_ir::fusion::fuse;
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::gemv::{self, GemvParams, Lead, RowNorm};

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
    /// `y = cast(c + bias + residual)` fused into the store (else `y = c`, f32).
    epilogue: bool,
    /// An RMS norm of `x`'s rows folded in (ε = 0.25).
    norm: bool,
    /// What the kernel does before its wait (`Lead::Off`: no wait placed).
    lead: Lead,
}

const EPSILON: f32 = 0.25;

/// The kernel, its counters (split only) made a parameter (`tile_arrivals`) so that the
/// test reads them back.
fn build(case: Case, p: &GemvParams) -> LoweredFunc {
    let Case { m, k, n, dtype, .. } = case;
    let x = te::placeholder("x", &[m, k], dtype);
    let gamma = te::placeholder("gamma", &[k], dtype);
    let b = te::placeholder("b", &[k, n], dtype);
    let c = te::placeholder("c", &[m, n], DType::F32);
    let norm = RowNorm {
        gamma,
        epsilon: EPSILON,
    };
    let norm = case.norm.then_some(&norm);
    let anchor = match case.lead {
        Lead::Off => gemv::template_split("gemv_split", &x, &b, &c, p, norm, case.splits),
        lead => gemv::template_prefetched("gemv_split", &x, &b, &c, p, norm, case.splits, lead),
    }
    .unwrap();
    let func = if case.epilogue {
        let bias = te::placeholder("bias", &[n], DType::F32);
        let res = te::placeholder("res", &[m, n], dtype);
        let y = te::compute("y", &[("i", m), ("j", n)], |ix| {
            let v = c.at(ix) + bias.at(&[ix[1].clone()]);
            let r = res.at(ix);
            let v = v + if dtype == DType::F32 {
                r
            } else {
                r.cast(DType::F32)
            };
            if dtype == DType::F32 {
                v
            } else {
                v.cast(dtype)
            }
        });
        fuse(&anchor, &y).unwrap().func
    } else {
        anchor
    };
    let mut lowered = lower(&func).unwrap();
    let at = lowered
        .temps
        .iter()
        .position(|t| t.name() == "tile_arrivals");
    assert_eq!(
        at.is_some(),
        case.splits > 1,
        "{case:?}: a counter temporary"
    );
    if let Some(at) = at {
        let counter = lowered.temps.remove(at);
        lowered.params.push(Param::Buffer(counter));
    }
    lowered
}

/// Inputs by name, as float64 and as the kernel's tensors.
struct Inputs {
    x: Vec<f64>,
    gamma: Vec<f64>,
    b: Vec<f64>,
    bias: Vec<f64>,
    res: Vec<f64>,
    data: Vec<(&'static str, TensorData)>,
}

fn inputs(case: Case, seed: u64) -> Inputs {
    let Case { m, k, n, dtype, .. } = case;
    // Row i scaled by 1 + 2i: every row has its own norm factor.
    let mut xv = randoms(seed, (m * k) as usize);
    for (j, v) in xv.iter_mut().enumerate() {
        *v *= 1.0 + 2.0 * (j as i64 / k) as f32;
    }
    let (x, xd) = common::tensor(xv, dtype);
    let gv = randoms(seed + 1, k as usize)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    let (gamma, gd) = common::tensor(gv, dtype);
    let (b, bd) = common::tensor(randoms(seed + 2, (k * n) as usize), dtype);
    let bias = randoms(seed + 3, n as usize);
    let (res, rd) = common::tensor(randoms(seed + 4, (m * n) as usize), dtype);
    Inputs {
        x,
        gamma,
        b,
        bias: bias.iter().map(|&v| v as f64).collect(),
        res,
        data: vec![
            ("x", xd),
            ("gamma", gd),
            ("b", bd),
            ("bias", TensorData::F32(bias)),
            ("res", rd),
        ],
    }
}

/// Runs `lowered` on `given`, the output poisoned and the counters (where it has them) as
/// given; the output and the counters after (none: empty).
fn launch(
    lowered: &LoweredFunc,
    given: &[(&str, TensorData)],
    out: &str,
    counters: TensorData,
) -> (Vec<f64>, Vec<u32>, TensorData) {
    let mut args: Vec<Arg> = lowered
        .params
        .iter()
        .map(|p| {
            let t = match p {
                Param::Buffer(b) if b.name() == out => {
                    TensorData::poisoned(b.dtype(), b.numel() as usize)
                }
                Param::Buffer(b) if b.name() == "tile_arrivals" => counters.clone(),
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
    let (Some(o_at), cn_at) = (find(out), find("tile_arrivals")) else {
        panic!("no output {out}")
    };
    let none = Arg::Tensor(TensorData::I32(Vec::new()));
    let (Arg::Tensor(o), Arg::Tensor(cn)) = (&args[o_at], cn_at.map_or(&none, |at| &args[at]))
    else {
        panic!("tensors expected")
    };
    let bits = match o {
        TensorData::F32(v) => v.iter().map(|v| v.to_bits()).collect(),
        TensorData::F16(v) => v.iter().map(|v| v.to_bits() as u32).collect(),
        _ => panic!("a float output"),
    };
    (o.to_f64_vec(), bits, cn.clone())
}

/// `case` under `p` against float64, launched twice: the counters come back to zero
/// and the second launch gives the same bits.
fn check(case: Case, p: &GemvParams, seed: u64) {
    let lowered = build(case, p);
    assert_eq!(lowered.kernels.len(), 1);
    assert_eq!(lowered.kernels[0].grid[2], case.splits as u32, "{case:?}");
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{case:?} {p:?}: {r}");
    }
    let inp = inputs(case, seed);
    let out = if case.epilogue { "y" } else { "c" };
    let tiles = lowered
        .params
        .iter()
        .find(|q| q.name() == "tile_arrivals")
        .map_or(0, |q| match q {
            Param::Buffer(b) => b.numel() as usize,
            Param::Scalar(_) => 0,
        });
    let zeros = TensorData::I32(vec![0; tiles]);
    let (got, bits, counters) = launch(&lowered, &inp.data, out, zeros);
    assert_eq!(
        counters,
        TensorData::I32(vec![0; tiles]),
        "{case:?} {p:?}: counters"
    );
    let (_, again, _) = launch(&lowered, &inp.data, out, counters);
    assert_eq!(bits, again, "{case:?} {p:?}: a second launch differs");
    let (m, k, n) = (case.m as usize, case.k as usize, case.n as usize);
    let rounding = if case.dtype == DType::F16 && case.epilogue {
        1e-3
    } else {
        1e-7
    };
    for i in 0..m {
        let row = &inp.x[i * k..(i + 1) * k];
        let f = if case.norm {
            let ms = row.iter().map(|v| v * v).sum::<f64>() / k as f64;
            1.0 / (ms + EPSILON as f64).sqrt()
        } else {
            1.0
        };
        for j in 0..n {
            let terms = (0..k).map(|kk| {
                let g = if case.norm { inp.gamma[kk] } else { 1.0 };
                row[kk] * f * g * inp.b[kk * n + j]
            });
            let (sum, size) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + f64::abs(t)));
            let want = match case.epilogue {
                true => sum + inp.bias[j] + inp.res[i * n + j],
                false => sum,
            };
            let g = got[i * n + j];
            let tol = size / 1048576.0 + rounding * (1.0 + want.abs());
            assert!(
                (g - want).abs() <= tol,
                "{case:?} {p:?}: y[{i}, {j}] is {g}, want {want}"
            );
        }
    }
}

fn params(threads: i64, nt: i64, unroll: i64, shuffle: i64) -> GemvParams {
    GemvParams {
        threads,
        nt,
        unroll,
        shuffle,
    }
}

#[test]
fn split_products_are_right_and_relaunch_bit_identically() {
    // (threads, nt, unroll, shuffle): shuffles across 32 lanes, shared memory alone, a
    // thread a row with a ragged unroll.
    let ps = [
        params(128, 4, 2, 32),
        params(64, 2, 4, 1),
        params(64, 1, 3, 8),
    ];
    let mut seed = 1;
    for (pi, p) in ps.iter().enumerate() {
        for dtype in [DType::F32, DType::F16] {
            // k = 1000 in 3: 334, 334, 332 rows; 777 in 4: 195 × 3 and 192; 301 in 2.
            for (m, k, n, splits) in [
                (1, 1000, 33, 3),
                (2, 777, 67, 4),
                (3, 301, 33, 2),
                (8, 1000, 5, 3),
            ] {
                for (epilogue, norm) in [(false, false), (true, false), (true, true)] {
                    // Every combination at the first params, a sample at the others.
                    if pi > 0 && (m + i64::from(epilogue) + i64::from(norm)) % 2 == 1 {
                        continue;
                    }
                    let case = Case {
                        m,
                        k,
                        n,
                        splits,
                        dtype,
                        epilogue,
                        norm,
                        lead: Lead::Off,
                    };
                    check(case, p, seed);
                    seed += 10;
                }
            }
        }
    }
}

/// The rule's params on CUDA (1024 threads, 4 loads in flight: 1024 rows a step) over
/// parts of fewer and more rows than a step.
#[test]
fn split_products_are_right_with_the_rules_params() {
    let cuda = TargetLimits::cuda();
    for (m, k, n, splits, norm) in [(1, 2048, 40, 4, false), (2, 2600, 24, 2, true)] {
        let (p, _) = GemvParams::rule(&cuda, m, n, DType::F16);
        let case = Case {
            m,
            k,
            n,
            splits,
            dtype: DType::F16,
            epilogue: true,
            norm,
            lead: Lead::Off,
        };
        check(case, &p, 7);
    }
}

/// Data whose f32 sum depends on the order of the parts: part 0 sums to 2²⁴, part 1 to
/// 1, part 2 to −2²⁴, part 3 to 1 (each exactly). Summed 0..4 in f32 that is
/// `((2²⁴ + 1) − 2²⁴) + 1 = 1` (2²⁴ + 1 rounds to 2²⁴); the last part's own first gives
/// 0, the reverse order 2. The kernel must give 1 at every element.
#[test]
fn the_parts_are_summed_in_order() {
    let (m, k, n, splits) = (2, 2048, 33, 4);
    let case = Case {
        m,
        k,
        n,
        splits,
        dtype: DType::F32,
        epilogue: false,
        norm: false,
        lead: Lead::Off,
    };
    let p = params(128, 4, 2, 32);
    let lowered = build(case, &p);
    let rows = gemv::split_rows(k, splits);
    let mut b = vec![0.0f32; (k * n) as usize];
    for (part, value) in [(0, 16777216.0f32), (1, 1.0), (2, -16777216.0), (3, 1.0)] {
        for j in 0..n {
            b[(part * rows * n + j) as usize] = value;
        }
    }
    let given = [
        ("x", TensorData::F32(vec![1.0; (m * k) as usize])),
        ("b", TensorData::F32(b)),
    ];
    let counters = lowered
        .params
        .iter()
        .find_map(|q| match q {
            Param::Buffer(b) if b.name() == "tile_arrivals" => Some(b.numel() as usize),
            _ => None,
        })
        .unwrap();
    let zeros = TensorData::I32(vec![0; counters]);
    let (got, _, _) = launch(&lowered, &given, "c", zeros);
    assert!(got.iter().all(|&v| v == 1.0), "{got:?}");
}

/// Split where the column blocks are fewer than the multiprocessors and the target has
/// a device-scope fence: TinyLlama's q/k/v (2560 columns: 80 blocks) in 2, o (2048:
/// 64 blocks) in 4, down (2048 columns, k = 5632) in 4; gate/up (11264: 352 blocks) and
/// the vocabulary head whole; parts never under 512 rows; never on WebGPU.
#[test]
fn the_split_rule() {
    let cuda = TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    };
    let rule = |n: i64, k: i64, limits: &TargetLimits| {
        let (p, _) = GemvParams::rule(limits, 1, n, DType::F16);
        gemv::split_rule(limits, &p, n, k, DType::F16).map(|(sk, _)| sk)
    };
    assert_eq!(rule(2560, 2048, &cuda), Some(2));
    assert_eq!(rule(2048, 2048, &cuda), Some(4));
    assert_eq!(rule(2048, 5632, &cuda), Some(4));
    assert_eq!(rule(11264, 2048, &cuda), None);
    assert_eq!(rule(32000, 2048, &cuda), None);
    // 1000 rows: parts of 500 would be under 512; 1100 rows: 2 parts of 550.
    assert_eq!(rule(2048, 1000, &cuda), None);
    assert_eq!(rule(2048, 1100, &cuda), Some(2));
    let webgpu = TargetLimits {
        f16: true,
        ..TargetLimits::webgpu_default()
    };
    assert_eq!(rule(2048, 2048, &webgpu), None);
    let (_, why) = {
        let (p, _) = GemvParams::rule(&cuda, 1, 2048, DType::F16);
        gemv::split_rule(&cuda, &p, 2048, 2048, DType::F16).unwrap()
    };
    assert!(why.contains("64 blocks < 132"), "{why}");
    assert!(!gemv::split_fits(5, 4) && gemv::split_fits(7, 4));
}

/// Emitted for CUDA (the fence before the count; NVRTC compiles it) and HIP (hipcc),
/// each skipped with its reason where the compiler is absent.
#[test]
fn cuda_and_hip_emit_it() {
    let cuda_limits = TargetLimits::cuda();
    for (m, k, n, splits, norm) in [(1, 2048, 2048, 4, false), (3, 2049, 33, 3, true)] {
        let case = Case {
            m,
            k,
            n,
            splits,
            dtype: DType::F16,
            epilogue: true,
            norm,
            lead: Lead::Off,
        };
        let (p, _) = GemvParams::rule(&cuda_limits, m, n, DType::F16);
        let lowered = build(case, &p);
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(cuda.source.contains("__threadfence()"), "{case:?}");
        assert!(cuda.source.contains("atomicAdd("), "{case:?}");
        weft_codegen_cuda::nvrtc::check(&cuda.source)
            .unwrap_or_else(|e| panic!("{case:?}: {e}\n{}", cuda.source));
        let hip = weft_codegen_cuda::hip::emit_lowered(&lowered, &Default::default()).unwrap();
        let entries: Vec<String> = hip.kernels.iter().map(|k| k.name.clone()).collect();
        weft_codegen_cuda::hipcc::check(&hip.source, &entries)
            .unwrap_or_else(|e| panic!("{case:?}: {e}"));
    }
}

/// The weight's rows prefetched before the kernel's wait (every piece, or a piece a
/// sector), or the wait alone, whole and split, k and n ragged (the last step's rows and
/// the last block's columns past `b`'s edges), with and without the norm: the results
/// of the kernel without them, every prefetch inside `b` (the interpreter reports one
/// outside), one wait after them, and CUDA's source issuing them before
/// `griddepcontrol.wait` (NVRTC compiles it where installed).
#[test]
fn prefetched_products_are_right_and_stay_inside_b() {
    let ps = [params(128, 4, 2, 32), params(64, 1, 3, 8)];
    let mut seed = 3;
    for p in &ps {
        for dtype in [DType::F32, DType::F16] {
            for (m, k, n, splits, norm) in [
                (1, 1000, 33, 1, false),
                (3, 301, 67, 1, true),
                (2, 777, 67, 4, true),
                (1, 1000, 5, 3, false),
            ] {
                let lead = [Lead::Rows, Lead::Sectors, Lead::Wait][(seed / 10 % 3) as usize];
                let case = Case {
                    m,
                    k,
                    n,
                    splits,
                    dtype,
                    epilogue: true,
                    norm,
                    lead,
                };
                check(case, p, seed);
                seed += 10;
                let lowered = build(case, p);
                let mut waits = 0;
                let mut prefetches = 0;
                lowered.kernels[0].body.visit(&mut |s| match s {
                    weft_ir::kernel::KStmt::Grid(weft_ir::func::GridControl::Wait) => waits += 1,
                    weft_ir::kernel::KStmt::Prefetch { buffer, .. } => {
                        assert_eq!(buffer.name(), "b", "{case:?}");
                        prefetches += 1;
                    }
                    _ => {}
                });
                let prefetched = matches!(lead, Lead::Rows | Lead::Sectors);
                assert_eq!((waits, prefetches > 0), (1, prefetched), "{case:?}");
            }
        }
    }
    let cuda_limits = TargetLimits::cuda();
    let case = Case {
        m: 1,
        k: 2049,
        n: 2048,
        splits: 1,
        dtype: DType::F16,
        epilogue: true,
        norm: true,
        lead: Lead::Sectors,
    };
    let (p, _) = GemvParams::rule(&cuda_limits, case.m, case.n, DType::F16);
    let cuda = weft_codegen_cuda::emit_lowered(&build(case, &p), &Default::default()).unwrap();
    let body = cuda.source.split("__global__").nth(1).unwrap();
    let (prefetch, wait) = (
        body.find("weft_prefetch_l2(").expect("a prefetch"),
        body.find("weft_grid_dependency();").expect("a wait"),
    );
    assert!(prefetch < wait, "{}", cuda.source);
    assert_eq!(body.matches("weft_grid_dependency();").count(), 1);
    weft_codegen_cuda::nvrtc::check(&cuda.source)
        .unwrap_or_else(|e| panic!("{e}\n{}", cuda.source));
}

/// The first step's loads of `b` issued before the wait (`Lead::Loads`), whole and split,
/// k and n ragged (k under one step too: nothing early), with and without the norm: the
/// results of the kernel without them, one wait; in CUDA's source, with `b` marked a
/// constant of the run, `b`'s first loads come before `griddepcontrol.wait` (NVRTC
/// compiles it where installed), and without the mark the emitter refuses the kernel.
#[test]
fn early_loads_of_b_are_right_and_come_before_the_wait() {
    use weft_ir::kernel::{Access, KStmt, KernelParam};
    let ps = [params(128, 4, 2, 32), params(64, 1, 3, 8)];
    let mut seed = 7;
    for p in &ps {
        for dtype in [DType::F32, DType::F16] {
            for (m, k, n, splits, norm) in [
                (1, 1000, 33, 1, false),
                (3, 301, 67, 1, true),
                (2, 777, 67, 4, true),
                (1, 5, 9, 1, false),
            ] {
                let case = Case {
                    m,
                    k,
                    n,
                    splits,
                    dtype,
                    epilogue: true,
                    norm,
                    lead: Lead::Loads,
                };
                check(case, p, seed);
                seed += 10;
                let lowered = build(case, p);
                let mut waits = 0;
                lowered.kernels[0].body.visit(&mut |s| {
                    waits += matches!(s, KStmt::Grid(weft_ir::func::GridControl::Wait)) as usize
                });
                assert_eq!(waits, 1, "{case:?}");
            }
        }
    }
    let cuda_limits = TargetLimits::cuda();
    let case = Case {
        m: 1,
        k: 2049,
        n: 2048,
        splits: 1,
        dtype: DType::F16,
        epilogue: true,
        norm: true,
        lead: Lead::Loads,
    };
    let (p, _) = GemvParams::rule(&cuda_limits, case.m, case.n, DType::F16);
    let mut lowered = build(case, &p);
    let refused = weft_codegen_cuda::emit_lowered(&lowered, &Default::default());
    let text = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("a load of `b`"), "{text}");
    for param in &mut lowered.kernels[0].params {
        if let KernelParam::Buffer { buffer, access } = param
            && buffer.name() == "b"
        {
            *access = Access::Constant;
        }
    }
    let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
    let body = cuda.source.split("__global__").nth(1).unwrap();
    // A vector load of `b` (`*(const uint4*)(b + …)`) or an element one (`b[…]`).
    let load = [body.find("(b + "), body.find(" b[")]
        .into_iter()
        .flatten()
        .min()
        .expect("a load of b");
    let wait = body.find("weft_grid_dependency();").expect("a wait");
    assert!(load < wait, "{}", cuda.source);
    assert_eq!(body.matches("weft_grid_dependency();").count(), 1);
    weft_codegen_cuda::nvrtc::check(&cuda.source)
        .unwrap_or_else(|e| panic!("{e}\n{}", cuda.source));
}

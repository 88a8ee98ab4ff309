//! The row-reduction template (softmax, layer norm, sum/mean/max/min of rows): right
//! against a float64 reference at odd row lengths and counts, for the rule's params and
//! forced ones (a thread per row, a warp per row, lanes past the row, rows read again
//! each pass), with a fused prologue, in the interpreter (which checks races and
//! bounds) with the output and temporaries poisoned; proven in bounds; its barriers
//! needed; emitted for CUDA, WGSL (naga) and MSL. The same for the split form (rows
//! cut into parts, two kernels), with the rule that chooses it. The trees both ways:
//! in shared memory, and by subgroup shuffles across runs of 4 to 32 lanes (the
//! interpreter holds a shuffle to every thread of the block arriving).

mod common;

use common::strip_barriers;
use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::interp::InterpError;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_kernels::rows::{RowOp, RowParams, template_over};

/// The tests' data: `len` floats in [-3, 3) from `seed` (`common::uniform`).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    common::uniform(seed, len, 3.0)
}

/// The float64 reference of `op` over the rows of `x` (`rows × n`, row-major).
fn reference(op: RowOp, x: &[f64], rows: usize, n: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for r in 0..rows {
        let row = &x[r * n..(r + 1) * n];
        match op {
            RowOp::Softmax => {
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
                out.extend(row.iter().map(|v| (v - m).exp() / s));
            }
            RowOp::LayerNorm { epsilon } => {
                let mean = row.iter().sum::<f64>() / n as f64;
                let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                let k = 1.0 / (var + epsilon as f64).sqrt();
                out.extend(row.iter().map(|v| (v - mean) * k));
            }
            RowOp::RmsNorm { epsilon } => {
                let sq = row.iter().map(|v| v * v).sum::<f64>() / n as f64;
                let k = 1.0 / (sq + epsilon as f64).sqrt();
                out.extend(row.iter().map(|v| v * k));
            }
            RowOp::Sum => out.push(row.iter().sum()),
            RowOp::Mean => out.push(row.iter().sum::<f64>() / n as f64),
            RowOp::Max => out.push(row.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
            RowOp::Min => out.push(row.iter().cloned().fold(f64::INFINITY, f64::min)),
        }
    }
    out
}

const OPS: [RowOp; 7] = [
    RowOp::Softmax,
    RowOp::LayerNorm { epsilon: 1e-5 },
    RowOp::RmsNorm { epsilon: 1e-6 },
    RowOp::Sum,
    RowOp::Mean,
    RowOp::Max,
    RowOp::Min,
];

/// `op` over `rows × n` with `p`, through a prologue `x = a · 0.5 + 1` fused into the
/// loads; returns the lowered function.
fn build(op: RowOp, rows: i64, n: i64, p: &RowParams) -> weft_ir::kernel::LoweredFunc {
    build_with(op, rows, n, p, (0.5, 1.0))
}

/// [`build`] with the prologue `x = a · scale + shift`.
fn build_with(
    op: RowOp,
    rows: i64,
    n: i64,
    p: &RowParams,
    (scale, shift): (f32, f32),
) -> weft_ir::kernel::LoweredFunc {
    let a = te::placeholder("a", &[rows, n], DType::F32);
    let x = te::compute("x", &[("r", rows), ("j", n)], |ix| a.at(ix) * scale + shift);
    let y_shape: Vec<i64> = if op.per_row() {
        vec![rows]
    } else {
        vec![rows, n]
    };
    let y = te::placeholder("y", &y_shape, DType::F32);
    let anchor = template_over("rows", &x, &y, op, p).unwrap();
    let fused = fuse(&anchor, &y).unwrap();
    assert_eq!(fused.prologues, ["x"]);
    lower(&fused.func).unwrap()
}

fn check(op: RowOp, rows: i64, n: i64, p: &RowParams, seed: u64) {
    let a = randoms(seed, (rows * n) as usize);
    check_on(op, rows, n, p, a, (0.5, 1.0), 1e-5);
}

/// `op` with `p` over `a` through the prologue `x = a · scale + shift`: proven in
/// bounds, run in the interpreter (races and bounds checked) with its output poisoned,
/// and each element within `tol · (1 + |want|)` of the float64 reference (plus `1e-6 · n`
/// for sums).
fn check_on(
    op: RowOp,
    rows: i64,
    n: i64,
    p: &RowParams,
    a: Vec<f32>,
    (scale, shift): (f32, f32),
    tol: f64,
) {
    let lowered = build_with(op, rows, n, p, (scale, shift));
    let kernels = if p.parts > 1 { 2 } else { 1 };
    assert_eq!(lowered.kernels.len(), kernels, "{op:?} {p:?}");
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{op:?} {rows}×{n} {p:?}: {r}");
    }
    let x: Vec<f64> = a
        .iter()
        .map(|&v| v as f64 * scale as f64 + shift as f64)
        .collect();
    let want = reference(op, &x, rows as usize, n as usize);
    let mut args = vec![
        Arg::Tensor(TensorData::F32(a)),
        Arg::Tensor(TensorData::poisoned(DType::F32, want.len())),
    ];
    weft_ir::interp::run(&lowered, &mut args)
        .unwrap_or_else(|e| panic!("{op:?} {rows}×{n} {p:?}: {e}"));
    let Arg::Tensor(got) = &args[1] else {
        unreachable!("the output is a tensor")
    };
    let got = got.to_f64_vec();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let tol = tol * (1.0 + w.abs())
            + if op == RowOp::Sum {
                1e-6 * n as f64
            } else {
                0.0
            };
        assert!(
            (g - w).abs() <= tol,
            "{op:?} {rows}×{n} {p:?}: element {i} is {g}, want {w}"
        );
    }
}

#[test]
fn rows_are_right_with_the_rules_params() {
    let cuda = TargetLimits::cuda();
    let webgpu = TargetLimits::webgpu_default();
    for (i, &(rows, n)) in [(1, 1), (3, 7), (5, 100), (2, 129), (9, 768), (2, 3001)]
        .iter()
        .enumerate()
    {
        for op in OPS {
            for limits in [&cuda, &webgpu] {
                let (p, why) = RowParams::rule(limits, rows, n);
                assert!(p.threads() <= limits.max_threads_per_block as i64, "{why}");
                check(op, rows, n, &p, i as u64);
            }
        }
    }
}

#[test]
fn rows_are_right_with_forced_params() {
    // A thread per row; a warp per row, several rows a block with a ragged last block;
    // lanes past the row's end; a row longer than registers keep (read each pass).
    let cases = [
        (5, 33, 1, 4),
        (7, 100, 32, 4),
        (3, 5, 64, 2),
        (2, 1000, 32, 1),
        (6, 129, 16, 8),
    ];
    for (i, &(rows, n, lanes, rpb)) in cases.iter().enumerate() {
        // The shared-memory tree; shuffles across runs of 8 (lavapipe's subgroups) and
        // 32 (a warp), where the row has that many lanes.
        for shuffle in [1, 8, 32].into_iter().filter(|&s| s <= lanes) {
            let p = RowParams {
                lanes,
                rows_per_block: rpb,
                parts: 1,
                shuffle,
            };
            for op in OPS {
                check(op, rows, n, &p, 100 + i as u64);
            }
        }
    }
}

#[test]
fn rows_are_right_with_shuffles_of_every_width() {
    // Runs of 4 lanes under rows of 256 (64 partials, read in turn), of 16 under 64 (4
    // partials, shuffled again), of 2 under 4; each odd row length, ragged block.
    let cases = [
        (3, 1000, 256, 1, 4),
        (5, 129, 64, 2, 16),
        (9, 7, 4, 8, 2),
        (2, 3001, 1024, 1, 32),
    ];
    for (i, &(rows, n, lanes, rpb, shuffle)) in cases.iter().enumerate() {
        let p = RowParams {
            lanes,
            rows_per_block: rpb,
            parts: 1,
            shuffle,
        };
        for op in OPS {
            check(op, rows, n, &p, 150 + i as u64);
        }
    }
}

#[test]
fn the_rule_shuffles_where_the_target_has_subgroups() {
    // CUDA: whole warps; a row of 8 lanes shuffles across its 8.
    let cuda = TargetLimits::cuda();
    assert_eq!(RowParams::rule(&cuda, 128, 768).0.shuffle, 32);
    assert_eq!(RowParams::rule(&cuda, 4096, 64).0.lanes, 8);
    assert_eq!(RowParams::rule(&cuda, 4096, 64).0.shuffle, 8);
    // Plain WebGPU has none; an adapter of subgroups of 8 to 64 shuffles across 8 where
    // the block fills subgroups of 64.
    assert_eq!(
        RowParams::rule(&TargetLimits::webgpu_default(), 128, 768)
            .0
            .shuffle,
        1
    );
    let some = TargetLimits {
        subgroup: Some(weft_codegen_common::SubgroupSize { min: 8, max: 64 }),
        ..TargetLimits::webgpu_default()
    };
    assert_eq!(RowParams::rule(&some, 128, 768).0.shuffle, 8);
    let (p, why) = RowParams::rule(&some, 1, 1);
    assert_eq!((p.threads(), p.shuffle), (32, 1), "{why}");
}

#[test]
fn the_rule_picks_a_warp_or_a_block_by_row_length() {
    let cuda = TargetLimits::cuda();
    // Attention scores of 128 (12 heads of 128 rows): 8 threads a row would keep 16
    // elements each, but 48 blocks of 32 rows leave multiprocessors idle: 32 threads a
    // row, 8 rows a block (192 blocks).
    let (p, why) = RowParams::rule(&cuda, 1536, 128);
    assert_eq!((p.lanes, p.rows_per_block), (32, 8), "{why}");
    // Batch 8 of BERT's hidden 768: 64 threads a row, 12 elements a thread kept in
    // registers, 4 rows a block; at batch 1 (128 rows) a block per row, 128 blocks.
    let (p, why) = RowParams::rule(&cuda, 4096, 768);
    assert_eq!((p.lanes, p.rows_per_block), (64, 4), "{why}");
    assert!(why.contains("4 rows per block"), "{why}");
    let (p, why) = RowParams::rule(&cuda, 128, 768);
    assert_eq!((p.lanes, p.rows_per_block), (256, 1), "{why}");
    // A row past 16 elements a thread of the largest block: a block per row.
    let (p, why) = RowParams::rule(&cuda, 128, 8000);
    assert_eq!((p.lanes, p.rows_per_block), (512, 1), "{why}");
    assert!(why.contains("a block per row"), "{why}");
    // WebGPU's 256 threads cap a long row's block.
    let (p, _) = RowParams::rule(&TargetLimits::webgpu_default(), 4, 3072);
    assert_eq!(p.lanes, 256);
}

#[test]
fn without_its_barriers_the_tree_is_a_race() {
    for shuffle in [1, 8] {
        let p = RowParams {
            lanes: 32,
            rows_per_block: 2,
            parts: 1,
            shuffle,
        };
        let mut lowered = build(RowOp::Softmax, 4, 64, &p);
        races_without_its_first_kernels_barriers(&mut lowered, 256, 1);
    }
}

#[test]
fn a_shuffle_under_a_branch_is_refused_by_the_interpreter() {
    // The shuffles of a 32-lane row sit outside the `live` guard of the row past the
    // end (every thread arrives). The same kernel with its last shuffle's `let` put
    // under a thread-dependent `if` (half of each warp) is reported.
    use weft_ir::kernel::KStmt;
    let p = RowParams {
        lanes: 32,
        rows_per_block: 2,
        parts: 1,
        shuffle: 32,
    };
    let mut lowered = build(RowOp::Sum, 3, 40, &p);
    fn guard_first_shuffle(s: KStmt, done: &mut bool) -> KStmt {
        match s {
            KStmt::Seq(items) => KStmt::Seq(
                items
                    .into_iter()
                    .map(|i| guard_first_shuffle(i, done))
                    .collect(),
            ),
            KStmt::Let { var, value, body } => {
                let shuffles = value.to_string().contains("shuffle_xor");
                let body = Box::new(guard_first_shuffle(*body, done));
                let s = KStmt::Let { var, value, body };
                if shuffles && !*done {
                    *done = true;
                    let tx = Expr::Builtin(ThreadAxis::ThreadIdxX);
                    return KStmt::If {
                        cond: tx.lt(16),
                        then: Box::new(s),
                        otherwise: None,
                    };
                }
                s
            }
            s => s,
        }
    }
    let mut done = false;
    let body = std::mem::replace(&mut lowered.kernels[0].body, KStmt::Seq(Vec::new()));
    lowered.kernels[0].body = guard_first_shuffle(body, &mut done);
    assert!(done, "the kernel has a shuffle:\n{lowered}");
    let mut args = vec![
        Arg::Tensor(TensorData::F32(randoms(7, 120))),
        Arg::Tensor(TensorData::poisoned(DType::F32, 3)),
    ];
    let err = weft_ir::interp::run(&lowered, &mut args).unwrap_err();
    assert!(matches!(err, InterpError::DivergentShuffle { .. }), "{err}");
    assert!(
        err.to_string().contains("not every thread of the block"),
        "{err}"
    );
}

#[test]
fn every_language_emits_it() {
    for op in OPS {
        let (p, _) = RowParams::rule(&TargetLimits::webgpu_default(), 6, 129);
        let lowered = build(op, 6, 129, &p);
        emits_with_barriers_everywhere(op, &lowered);
    }
}

#[test]
fn every_language_emits_the_shuffles_and_webgpu_refuses_them() {
    use weft_codegen_wgsl::WgslOptions;
    let p = RowParams {
        lanes: 64,
        rows_per_block: 2,
        parts: 1,
        shuffle: 32,
    };
    for op in OPS {
        let lowered = build(op, 6, 129, &p);
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(
            cuda.source.contains("__shfl_xor_sync(0xffffffffu, "),
            "{op:?}"
        );
        // NVRTC and hipcc (gfx90a's wavefronts of 64 hold the runs of 32) compile them,
        // where they are installed (else skipped with the reason printed).
        weft_codegen_cuda::nvrtc::check(&cuda.source).unwrap_or_else(|e| panic!("{op:?}: {e}"));
        let hip = weft_codegen_cuda::hip::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(hip.source.contains("__shfl_xor("), "{op:?}");
        let entries: Vec<String> = hip.kernels.iter().map(|k| k.name.clone()).collect();
        weft_codegen_cuda::hipcc::check(&hip.source, &entries)
            .unwrap_or_else(|e| panic!("{op:?}: {e}"));
        let msl = weft_codegen_metal::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(msl.source.contains("simd_shuffle_xor("), "{op:?}");
        // An adapter with subgroups of 32: naga validates the shuffles.
        let adapter = WgslOptions {
            limits: TargetLimits {
                subgroup: Some(weft_codegen_common::SubgroupSize::fixed(32)),
                ..TargetLimits::webgpu_default()
            },
        };
        let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &adapter).unwrap();
        assert!(wgsl.source.contains("subgroupShuffleXor("), "{op:?}");
        weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{op:?}: {e}"));
        // Plain WebGPU: no subgroups. Subgroups of 8: a mask of 16 spans more.
        let err = weft_codegen_wgsl::emit_lowered(&lowered, &Default::default()).unwrap_err();
        assert!(
            err.to_string().contains("has no subgroup operations"),
            "{err}"
        );
        let eight = WgslOptions {
            limits: TargetLimits {
                subgroup: Some(weft_codegen_common::SubgroupSize::fixed(8)),
                ..TargetLimits::webgpu_default()
            },
        };
        let err = weft_codegen_wgsl::emit_lowered(&lowered, &eight).unwrap_err();
        assert!(
            err.to_string().contains("from 1 to 7 (subgroups of 8)"),
            "{err}"
        );
    }
}

/// With its first kernel's barriers stripped, `lowered` (over `len` elements) races in
/// the interpreter.
fn races_without_its_first_kernels_barriers(
    lowered: &mut weft_ir::kernel::LoweredFunc,
    len: usize,
    seed: u64,
) {
    let before = format!("{lowered}");
    lowered.kernels[0].body = strip_barriers(&lowered.kernels[0].body);
    assert_ne!(
        before,
        format!("{lowered}"),
        "the kernel had barriers to remove"
    );
    let mut args = vec![
        Arg::Tensor(TensorData::F32(randoms(seed, len))),
        Arg::Tensor(TensorData::poisoned(DType::F32, len)),
    ];
    let err = weft_ir::interp::run(lowered, &mut args).unwrap_err();
    assert!(matches!(err, InterpError::SharedRace { .. }), "{err}");
}

/// `lowered` emits for CUDA, WGSL (valid to naga) and MSL, with each language's barrier.
fn emits_with_barriers_everywhere(op: RowOp, lowered: &weft_ir::kernel::LoweredFunc) {
    let cuda = weft_codegen_cuda::emit_lowered(lowered, &Default::default()).unwrap();
    assert!(cuda.source.contains("__syncthreads()"), "{op:?}");
    let wgsl = weft_codegen_wgsl::emit_lowered(lowered, &Default::default()).unwrap();
    weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{op:?}: {e}"));
    assert!(wgsl.source.contains("workgroupBarrier()"), "{op:?}");
    let msl = weft_codegen_metal::emit_lowered(lowered, &Default::default()).unwrap();
    assert!(msl.source.contains("threadgroup_barrier"), "{op:?}");
}

/// A split form's params: `parts` chunks a row, `lanes` threads a chunk.
fn split(parts: i64, lanes: i64) -> RowParams {
    RowParams {
        lanes,
        rows_per_block: 1,
        parts,
        shuffle: 1,
    }
}

/// [`split`] with trees by shuffles across runs of `shuffle` lanes.
fn split_shuffled(parts: i64, lanes: i64, shuffle: i64) -> RowParams {
    RowParams {
        shuffle,
        ..split(parts, lanes)
    }
}

#[test]
fn split_rows_are_right() {
    // Parts that do not divide the row, threads that overrun their chunk, one row and
    // a few; at 20011 in 2 parts a thread's elements are read again each pass.
    let mut seed = 200;
    for rows in [1, 3] {
        for (n, lanes) in [(1000, 32), (4099, 128), (20011, 256)] {
            for parts in [2, 3, 7] {
                for op in OPS {
                    seed += 1;
                    check(op, rows, n, &split(parts, lanes), seed);
                    check(op, rows, n, &split_shuffled(parts, lanes, 32), seed);
                }
            }
        }
    }
}

#[test]
fn split_rows_with_empty_or_tiny_parts_are_right() {
    // 10 in 7 parts of 2: the last two parts are empty (identity states); 1 in 2 parts;
    // lanes below a warp; the most parts.
    let cases = [
        (3, 10, 7, 32),
        (1, 1, 2, 32),
        (2, 33, 3, 8),
        (2, 700, 64, 16),
    ];
    for (i, &(rows, n, parts, lanes)) in cases.iter().enumerate() {
        for op in OPS {
            check(op, rows, n, &split(parts, lanes), 300 + i as u64);
        }
    }
}

/// The layer norm of `x` (rows of `n`) in f32 by a sum and a sum of squares: the
/// formula the split form does not use.
fn naive_layer_norm(x: &[f32], n: usize, epsilon: f32) -> Vec<f32> {
    x.chunks(n)
        .flat_map(|row| {
            let sum: f32 = row.iter().sum();
            let sq: f32 = row.iter().map(|v| v * v).sum();
            let mean = sum / n as f32;
            let var = (sq / n as f32 - mean * mean).max(0.0);
            let k = 1.0 / (var + epsilon).sqrt();
            row.iter().map(move |v| (v - mean) * k)
        })
        .collect()
}

#[test]
fn split_layer_norm_keeps_a_small_spread_about_a_large_mean() {
    // x = 1000 + u, u in [-1, 1): a sum of squares (1e6 a term, its f32 ulp 0.06)
    // loses the variance (1/3) to cancellation; Chan's merge of the parts' (count,
    // mean, M2) does not.
    let (rows, n) = (3, 20011);
    let op = RowOp::LayerNorm { epsilon: 1e-5 };
    let a: Vec<f32> = randoms(400, rows * n)
        .iter()
        .map(|v| 1000.0 + v / 3.0)
        .collect();
    let tol = 5e-4;
    for (parts, lanes) in [(2, 256), (7, 128)] {
        check_on(
            op,
            rows as i64,
            n as i64,
            &split(parts, lanes),
            a.clone(),
            (1.0, 0.0),
            tol,
        );
    }
    // The tolerance tells the two formulas apart.
    let x: Vec<f64> = a.iter().map(|&v| v as f64).collect();
    let want = reference(op, &x, rows, n);
    let naive = naive_layer_norm(&a, n, 1e-5);
    let worst = naive
        .iter()
        .zip(&want)
        .map(|(g, w)| (*g as f64 - w).abs() / (1.0 + w.abs()))
        .fold(0.0f64, f64::max);
    assert!(
        worst > 10.0 * tol,
        "the naive formula's error is only {worst:e}"
    );
}

#[test]
fn the_rule_splits_long_rows_when_they_are_few() {
    let cuda = TargetLimits::cuda();
    assert_eq!(cuda.multiprocessors, 128);
    // One row of 65536: 16 parts of 4096 (the smallest part), 1024 threads each.
    let (p, why) = RowParams::rule(&cuda, 1, 65536);
    assert_eq!(p, split_shuffled(16, 1024, 32), "{why}");
    assert_eq!(
        why,
        "rule: a block per row, split in 16 parts (two kernels) for 1 row of 65536"
    );
    // Four rows of a million: 32 parts make 128 blocks, one per multiprocessor.
    let (p, why) = RowParams::rule(&cuda, 4, 1 << 20);
    assert_eq!((p.parts, p.lanes), (32, 1024), "{why}");
    // At most 64 parts.
    let (p, why) = RowParams::rule(&cuda, 1, 1 << 24);
    assert_eq!(p.parts, 64, "{why}");
    // The shortest row that splits, and one shorter that does not.
    assert_eq!(
        RowParams::rule(&cuda, 1, 8192).0,
        split_shuffled(2, 1024, 32)
    );
    let (p, why) = RowParams::rule(&cuda, 1, 8191);
    assert_eq!(p.parts, 1, "{why}");
    assert!(!why.contains("split"), "{why}");
    // WebGPU's 256 threads a block: the same parts, smaller blocks.
    let (p, why) = RowParams::rule(&TargetLimits::webgpu_default(), 1, 65536);
    assert_eq!(p, split(16, 256), "{why}");
    // Rows enough to fill the multiprocessors a block each: no split, however long.
    let (p, why) = RowParams::rule(&cuda, 128, 65536);
    assert_eq!((p.parts, p.rows_per_block), (1, 1), "{why}");
    // Short or many rows keep today's one kernel (BERT's 768, attention's 128).
    for (rows, n) in [(1, 768), (4, 3000), (128, 768), (1536, 128), (1, 4096)] {
        let (p, why) = RowParams::rule(&cuda, rows, n);
        assert_eq!(p.parts, 1, "{why}");
    }
    // The multiprocessors count: 3 rows of 8192 split in 2 on 4 of them, not on 3.
    let four = TargetLimits {
        multiprocessors: 4,
        ..TargetLimits::cuda()
    };
    assert_eq!(RowParams::rule(&four, 3, 8192).0.parts, 2);
    let three = TargetLimits {
        multiprocessors: 3,
        ..TargetLimits::cuda()
    };
    assert_eq!(RowParams::rule(&three, 3, 8192).0.parts, 1);
}

#[test]
fn split_rows_are_right_with_the_rules_params() {
    let cuda = TargetLimits::cuda();
    let webgpu = TargetLimits::webgpu_default();
    for (i, &(rows, n)) in [(1, 20011), (3, 8192)].iter().enumerate() {
        for limits in [&cuda, &webgpu] {
            let (p, why) = RowParams::rule(limits, rows, n);
            assert!(p.parts > 1, "{why}");
            for op in OPS {
                check(op, rows, n, &p, 500 + i as u64);
            }
        }
    }
}

#[test]
fn split_params_that_cannot_be_are_refused() {
    let x = te::placeholder("x", &[2, 100], DType::F32);
    let y = te::placeholder("y", &[2, 100], DType::F32);
    let too_many = template_over("rows", &x, &y, RowOp::Softmax, &split(65, 32)).unwrap_err();
    assert!(
        too_many.to_string().contains("split in 65 parts"),
        "{too_many}"
    );
    let p = RowParams {
        lanes: 32,
        rows_per_block: 2,
        parts: 2,
        shuffle: 1,
    };
    let shared = template_over("rows", &x, &y, RowOp::Softmax, &p).unwrap_err();
    assert!(shared.to_string().contains("2 rows per block"), "{shared}");
    let wide = template_over("rows", &x, &y, RowOp::Softmax, &split_shuffled(2, 32, 64));
    assert!(
        wide.unwrap_err()
            .to_string()
            .contains("shuffles across 64 lanes of 32")
    );
    let odd = template_over("rows", &x, &y, RowOp::Softmax, &split_shuffled(2, 32, 12));
    assert!(odd.unwrap_err().to_string().contains("a power of two"));
}

#[test]
fn without_its_barriers_the_split_partials_race() {
    let mut lowered = build(RowOp::LayerNorm { epsilon: 1e-5 }, 2, 1000, &split(3, 64));
    assert_eq!(lowered.kernels.len(), 2);
    races_without_its_first_kernels_barriers(&mut lowered, 2000, 2);
}

#[test]
fn every_language_emits_the_split_form() {
    for op in OPS {
        let lowered = build(op, 3, 4099, &split(3, 64));
        assert_eq!(lowered.kernels.len(), 2, "{op:?}");
        emits_with_barriers_everywhere(op, &lowered);
    }
}

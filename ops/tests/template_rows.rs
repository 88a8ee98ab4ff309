//! The row-reduction template (softmax, layer norm, sum/mean/max/min of rows): right
//! against a float64 reference at odd row lengths and counts, for the rule's params and
//! forced ones (a thread per row, a warp per row, lanes past the row, rows read again
//! each pass), with a fused prologue, in the interpreter (which checks races and
//! bounds) with the output poisoned; proven in bounds; its barriers needed; emitted
//! for CUDA, WGSL (naga) and MSL.

mod common;

use common::strip_barriers;
use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::fuse;
use weft_ir::interp::InterpError;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ops::templates::rows::{RowOp, RowParams, template_over};

/// A seeded stream of floats in [-3, 3) (a small LCG: the test needs no crate).
fn randoms(seed: u64, len: usize) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64 * 6.0 - 3.0) as f32
        })
        .collect()
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
            RowOp::Sum => out.push(row.iter().sum()),
            RowOp::Mean => out.push(row.iter().sum::<f64>() / n as f64),
            RowOp::Max => out.push(row.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
            RowOp::Min => out.push(row.iter().cloned().fold(f64::INFINITY, f64::min)),
        }
    }
    out
}

const OPS: [RowOp; 6] = [
    RowOp::Softmax,
    RowOp::LayerNorm { epsilon: 1e-5 },
    RowOp::Sum,
    RowOp::Mean,
    RowOp::Max,
    RowOp::Min,
];

/// `op` over `rows × n` with `p`, through a prologue `x = a · 0.5 + 1` fused into the
/// loads; returns the lowered function.
fn build(op: RowOp, rows: i64, n: i64, p: &RowParams) -> weft_ir::kernel::LoweredFunc {
    let a = te::placeholder("a", &[rows, n], DType::F32);
    let x = te::compute("x", &[("r", rows), ("j", n)], |ix| {
        a.at(ix) * 0.5f32 + 1.0f32
    });
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
    let lowered = build(op, rows, n, p);
    for r in prove_all(&lowered) {
        assert!(r.is_proven(), "{op:?} {rows}×{n} {p:?}: {r}");
    }
    let a = randoms(seed, (rows * n) as usize);
    let x: Vec<f64> = a.iter().map(|&v| v as f64 * 0.5 + 1.0).collect();
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
        let tol = 1e-5 * (1.0 + w.abs())
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
        let p = RowParams {
            lanes,
            rows_per_block: rpb,
        };
        for op in OPS {
            check(op, rows, n, &p, 100 + i as u64);
        }
    }
}

#[test]
fn the_rule_picks_a_warp_or_a_block_by_row_length() {
    let cuda = TargetLimits::cuda();
    // Attention scores of 128: 32 threads a row, 8 rows a block.
    let (p, why) = RowParams::rule(&cuda, 1536, 128);
    assert_eq!((p.lanes, p.rows_per_block), (32, 8), "{why}");
    // BERT's hidden 768: a block per row, 3 elements a thread, kept in registers.
    let (p, why) = RowParams::rule(&cuda, 128, 768);
    assert_eq!((p.lanes, p.rows_per_block), (256, 1), "{why}");
    assert!(why.contains("a block per row"), "{why}");
    // WebGPU's 256 threads cap a long row's block.
    let (p, _) = RowParams::rule(&TargetLimits::webgpu_default(), 4, 3072);
    assert_eq!(p.lanes, 256);
}

#[test]
fn without_its_barriers_the_tree_is_a_race() {
    let p = RowParams {
        lanes: 32,
        rows_per_block: 2,
    };
    let mut lowered = build(RowOp::Softmax, 4, 64, &p);
    let before = format!("{lowered}");
    lowered.kernels[0].body = strip_barriers(&lowered.kernels[0].body);
    assert_ne!(
        before,
        format!("{lowered}"),
        "the kernel had barriers to remove"
    );
    let mut args = vec![
        Arg::Tensor(TensorData::F32(randoms(1, 256))),
        Arg::Tensor(TensorData::poisoned(DType::F32, 256)),
    ];
    let err = weft_ir::interp::run(&lowered, &mut args).unwrap_err();
    assert!(matches!(err, InterpError::SharedRace { .. }), "{err}");
}

#[test]
fn every_language_emits_it() {
    for op in OPS {
        let (p, _) = RowParams::rule(&TargetLimits::webgpu_default(), 6, 129);
        let lowered = build(op, 6, 129, &p);
        let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(cuda.source.contains("__syncthreads()"), "{op:?}");
        let wgsl = weft_codegen_wgsl::emit_lowered(&lowered, &Default::default()).unwrap();
        weft_codegen_wgsl::validate(&wgsl.source).unwrap_or_else(|e| panic!("{op:?}: {e}"));
        assert!(wgsl.source.contains("workgroupBarrier()"), "{op:?}");
        let msl = weft_codegen_metal::emit_lowered(&lowered, &Default::default()).unwrap();
        assert!(msl.source.contains("threadgroup_barrier"), "{op:?}");
    }
}

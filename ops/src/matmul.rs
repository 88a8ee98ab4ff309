//! `matmul`: `C[i, j] = sum_k A[i, k] * B[k, j]` (seed 001).

use ndarray::{ArrayD, Ix2, IxDyn};
use weft_ir::prelude::*;
use weft_ir::schedule::{BlockRV, LoopRV, Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "matmul",
    summary: "fp32 matrix product C[m, n] = A[m, k] @ B[k, n]",
    dims: &[("m", 1024), ("n", 1024), ("k", 1024)],
    schedules: &[
        "naive",
        "local-blocking",
        "shared-blocking",
        "tiled-128",
        "template",
    ],
    best: "template",
    bench: &[&[1024, 1024, 1024], &[4096, 4096, 4096]],
    small: &[&[128, 128, 128], &[100, 72, 136]],
    seed: "001, 002",
    zero_ok: &[],
    check: crate::any_shape,
    template: Some(&crate::templates::MATMUL),
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: Some(row_reference),
};

/// `matmul-f16`: fp16 inputs and output, fp32 accumulation (cuBLAS's HGEMM with fp32
/// compute, PyTorch's `torch.matmul` on half tensors), on matrix units where the target
/// has them.
pub(crate) const F16_SPEC: OpSpec = OpSpec {
    name: "matmul-f16",
    summary: "fp16 matrix product on tensor cores, fp32 accumulation: C[m, n] = A[m, k] @ B[k, n]",
    dims: &[("m", 1024), ("n", 1024), ("k", 1024)],
    schedules: &["template"],
    best: "template",
    bench: &[
        &[1024, 1024, 1024],
        &[2039, 2039, 2039],
        &[4096, 4096, 4096],
    ],
    small: &[&[64, 48, 80], &[37, 29, 53]],
    seed: "004",
    zero_ok: &[],
    check: crate::any_shape,
    template: Some(&crate::templates::MATMUL_F16),
    define: define_f16,
    // Its one schedule is the template.
    apply: crate::no_primitives,
    reference,
    rounding_growth: 1.0,
    row_reference: Some(row_reference),
};

fn define_f16(shape: &Shape) -> Result<Definition, TeError> {
    let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
    let a = te::placeholder("A", &[m, k], DType::F16);
    let b = te::placeholder("B", &[k, n], DType::F16);
    let r = te::reduce_axis("k", k);
    let acc = te::compute("C_acc", &[("i", m), ("j", n)], |i| {
        let prod = a.at(&[i[0].clone(), r.expr()]).cast(DType::F32)
            * b.at(&[r.expr(), i[1].clone()]).cast(DType::F32);
        te::sum(prod, &[&r])
    });
    let c = te::compute("C", &[("i", m), ("j", n)], |i| {
        acc.at(&[i[0].clone(), i[1].clone()]).cast(DType::F16)
    });
    Ok(Definition {
        func: te::create_func("matmul_f16", [&a, &b, &c])?,
        inputs: vec![a, b],
        output: c,
        flops: 2.0 * (m * n * k) as f64,
        bytes: 2.0 * (m * k + k * n + m * n) as f64,
    })
}

fn define(shape: &Shape) -> Result<Definition, TeError> {
    let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
    let a = te::placeholder("A", &[m, k], DType::F32);
    let b = te::placeholder("B", &[k, n], DType::F32);
    let r = te::reduce_axis("k", k);
    let c = te::compute("C", &[("i", m), ("j", n)], |i| {
        te::sum(
            a.at(&[i[0].clone(), r.expr()]) * b.at(&[r.expr(), i[1].clone()]),
            &[&r],
        )
    });
    Ok(Definition {
        func: te::create_func("matmul", [&a, &b, &c])?,
        inputs: vec![a, b],
        output: c,
        flops: 2.0 * (m * n * k) as f64,
        bytes: 4.0 * (m * k + k * n + m * n) as f64,
    })
}

fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    match name {
        "naive" => naive(s),
        "local-blocking" => blocking(s, 8, 8, 8, 8, 4),
        "shared-blocking" => blocking_with_shared(s, 8, 8, 8, 8, 8),
        "tiled-128" => tiled(s, 8, 16, 8),
        // The template is built by `weft_kernels::matmul`, not by primitives.
        _ => Ok(()),
    }
}

/// One thread per output element, 16×16 threads per block.
fn naive(s: &mut Schedule) -> Result<(), ScheduleError> {
    let c = s.get_block("C")?;
    let l = s.get_loops(c)?;
    let i = s.split(l[0], &[None, Some(16)])?;
    let j = s.split(l[1], &[None, Some(16)])?;
    s.reorder(&[i[0], j[0], i[1], j[1], l[2]])?;
    s.bind(i[0], ThreadAxis::BlockIdxY)?;
    s.bind(j[0], ThreadAxis::BlockIdxX)?;
    s.bind(i[1], ThreadAxis::ThreadIdxY)?;
    s.bind(j[1], ThreadAxis::ThreadIdxX)?;
    Ok(())
}

/// Seed 001's `blocking`: each thread computes a `tile_local_y × tile_local_x` tile in
/// local memory.
fn blocking(
    s: &mut Schedule,
    tile_local_y: i64,
    tile_local_x: i64,
    tile_block_y: i64,
    tile_block_x: i64,
    tile_k: i64,
) -> Result<(), ScheduleError> {
    let c = s.get_block("C")?;
    let c_local = s.cache_write(c, 0, "local")?;
    let l = s.get_loops(c)?;
    let i = s.split(l[0], &[None, Some(tile_block_y), Some(tile_local_y)])?;
    let j = s.split(l[1], &[None, Some(tile_block_x), Some(tile_local_x)])?;
    let k = s.split(l[2], &[None, Some(tile_k)])?;
    s.unroll(k[1])?;
    s.reorder(&[i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]])?;
    s.reverse_compute_at(c_local, j[1])?;
    s.bind(i[0], ThreadAxis::BlockIdxY)?;
    s.bind(j[0], ThreadAxis::BlockIdxX)?;
    s.bind(i[1], ThreadAxis::ThreadIdxY)?;
    s.bind(j[1], ThreadAxis::ThreadIdxX)?;
    s.decompose_reduction(c, k[0])?;
    Ok(())
}

/// Seed 001's `cache_read_and_coop_fetch`: stage a tile in shared memory with a
/// vectorized cooperative fetch by all `nthread` threads.
fn cache_read_and_coop_fetch(
    s: &mut Schedule,
    block: BlockRV,
    nthread: i64,
    read_idx: usize,
    read_loc: LoopRV,
) -> Result<(), ScheduleError> {
    let read_cache = s.cache_read(block, read_idx, "shared")?;
    s.compute_at(read_cache, read_loc)?;
    let loops = s.get_loops(read_cache)?;
    let inner = s.fuse(&loops[loops.len() - 2..])?;
    let p = s.split(inner, &[None, Some(nthread), Some(4)])?;
    s.vectorize(p[2])?;
    s.bind(p[1], ThreadAxis::ThreadIdxX)?;
    Ok(())
}

/// Seed 001's `blocking_with_shared`.
fn blocking_with_shared(
    s: &mut Schedule,
    tile_local_y: i64,
    tile_local_x: i64,
    tile_block_y: i64,
    tile_block_x: i64,
    tile_k: i64,
) -> Result<(), ScheduleError> {
    let c = s.get_block("C")?;
    let c_local = s.cache_write(c, 0, "local")?;
    let l = s.get_loops(c)?;
    let i = s.split(l[0], &[None, Some(tile_block_y), Some(tile_local_y)])?;
    let j = s.split(l[1], &[None, Some(tile_block_x), Some(tile_local_x)])?;
    let k = s.split(l[2], &[None, Some(tile_k)])?;
    s.reorder(&[i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]])?;
    s.reverse_compute_at(c_local, j[1])?;
    s.bind(i[0], ThreadAxis::BlockIdxY)?;
    s.bind(j[0], ThreadAxis::BlockIdxX)?;
    let tx = s.fuse(&[i[1], j[1]])?;
    s.bind(tx, ThreadAxis::ThreadIdxX)?;
    let nthread = tile_block_y * tile_block_x;
    cache_read_and_coop_fetch(s, c, nthread, 0, k[0])?;
    cache_read_and_coop_fetch(s, c, nthread, 1, k[0])?;
    s.decompose_reduction(c, k[0])?;
    Ok(())
}

/// A 128×128 tile per block of 256 threads, each accumulating 8×8 outputs in registers.
/// A thread's rows and columns are strided by 16 (`i = i_0 * 128 + i_2 * 16 + i_1`), so
/// that the 16 threads of a half-warp read consecutive shared-memory words (no bank
/// conflicts) and write consecutive words of C. The register loops are unrolled so the
/// accumulators stay in registers on every backend (WGSL has no unroll pragma).
fn tiled(s: &mut Schedule, reg: i64, threads: i64, tile_k: i64) -> Result<(), ScheduleError> {
    let c = s.get_block("C")?;
    let c_local = s.cache_write(c, 0, "local")?;
    let l = s.get_loops(c)?;
    let i = s.split(l[0], &[None, Some(reg), Some(threads)])?;
    let j = s.split(l[1], &[None, Some(reg), Some(threads)])?;
    let k = s.split(l[2], &[None, Some(tile_k)])?;
    s.reorder(&[i[0], j[0], i[2], j[2], k[0], k[1], i[1], j[1]])?;
    s.reverse_compute_at(c_local, j[2])?;
    s.bind(i[0], ThreadAxis::BlockIdxY)?;
    s.bind(j[0], ThreadAxis::BlockIdxX)?;
    let tx = s.fuse(&[i[2], j[2]])?;
    s.bind(tx, ThreadAxis::ThreadIdxX)?;
    for l in [k[1], i[1], j[1]] {
        s.unroll(l)?;
    }
    let nthread = threads * threads;
    cache_read_and_coop_fetch(s, c, nthread, 0, k[0])?;
    cache_read_and_coop_fetch(s, c, nthread, 1, k[0])?;
    let init = s.decompose_reduction(c, k[0])?;
    for b in [init, c_local] {
        let loops = s.get_loops(b)?;
        for l in &loops[loops.len() - 2..] {
            s.unroll(*l)?;
        }
    }
    Ok(())
}

/// Both ops' reference: the f64 product (an fp16 op's inputs are exact in f64).
pub(crate) fn reference(inputs: &[ArrayD<f64>], _: &Shape) -> ArrayD<f64> {
    let (Ok(a), Ok(b)) = (
        inputs[0].view().into_dimensionality::<Ix2>(),
        inputs[1].view().into_dimensionality::<Ix2>(),
    ) else {
        return ArrayD::zeros(IxDyn(&[0]));
    };
    a.dot(&b).into_dyn()
}

/// Row `i` of both ops' reference, `A[i, :] @ B` in float64 (`None` for inputs that are
/// not two matrices of matching shapes, or a row out of range): what a large product is
/// checked on.
pub(crate) fn row_reference(inputs: &[ArrayD<f64>], i: usize) -> Option<Vec<f64>> {
    let [a, b] = inputs else { return None };
    let a = a.view().into_dimensionality::<Ix2>().ok()?;
    let b = b.view().into_dimensionality::<Ix2>().ok()?;
    if a.dim().1 != b.dim().0 || i >= a.dim().0 {
        return None;
    }
    let mut acc = vec![0.0f64; b.dim().1];
    for (kk, &aik) in a.row(i).iter().enumerate() {
        for (x, &bkj) in acc.iter_mut().zip(b.row(kk).iter()) {
            *x += aik * bkj;
        }
    }
    Some(acc)
}

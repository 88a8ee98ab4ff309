//! Post-scheduling fusion: seed 002's own example, a matmul with a bias-ReLU epilogue as
//! one kernel, and the typed refusals of ops that are neither injective nor bijective.
//! Fused programs run in the interpreter against references computed here in f64.

use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::fusion::{FusionError, fuse};
use weft_ir::interp;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::schedule::Schedule;

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random::<f32>() - 0.5).collect()
}

/// Runs a lowered function on `inputs`, the last parameter poisoned; its output.
fn run(func: &weft_ir::func::Func, inputs: &[Vec<f32>]) -> Vec<f32> {
    let l = lower(func).unwrap_or_else(|e| panic!("{e}\n{func}"));
    let out_len = match func.params.last() {
        Some(weft_ir::func::Param::Buffer(b)) => b.numel() as usize,
        _ => panic!("no output"),
    };
    let mut args: Vec<Arg> = inputs
        .iter()
        .map(|x| Arg::Tensor(TensorData::F32(x.clone())))
        .collect();
    args.push(Arg::Tensor(TensorData::poisoned(DType::F32, out_len)));
    interp::run(&l, &mut args).unwrap_or_else(|e| panic!("{e}\n{l}"));
    match args.pop() {
        Some(Arg::Tensor(TensorData::F32(v))) => v,
        other => panic!("{other:?}"),
    }
}

/// Seed 002, figure 15: the anchor reads `A[99 - i]`; the prologue makes that
/// `C[99 - i] * 2.0`; the epilogue multiplies by 3.0 and stores at `(i // 50, i % 50)`.
#[test]
fn the_papers_example() {
    let c = te::placeholder("C", &[100], DType::F32);
    let a = te::compute("A", &[("i", 100)], |i| c.at(&[&i[0]]) * 2.0f32);
    let b = te::compute("B", &[("i", 100)], |i| a.at(&[Expr::int(99) - &i[0]]));
    let d = te::compute("D", &[("p", 2), ("q", 50)], |i| {
        b.at(&[&i[0] * 50 + &i[1]]) * 3.0f32
    });
    let mut sch = Schedule::new(te::create_func_with_inputs("reverse", &[&a], &[&b]).unwrap());
    let blk = sch.get_block("B").unwrap();
    let i = sch.get_loops(blk).unwrap()[0];
    let parts = sch.split(i, &[None, Some(32)]).unwrap();
    sch.bind(parts[0], ThreadAxis::BlockIdxX).unwrap();
    sch.bind(parts[1], ThreadAxis::ThreadIdxX).unwrap();

    let fused = fuse(sch.func(), &d).unwrap();
    assert_eq!(fused.prologues, ["A"]);
    assert_eq!(fused.epilogues, ["D"]);
    let text = fused.func.to_string();
    assert!(
        text.contains(
            "def reverse(C: T.Buffer((100,), \"float32\"), D: T.Buffer((2, 50), \"float32\")):"
        ),
        "{text}"
    );
    assert!(
        text.contains("D[vi // 50, vi % 50] = C[99 - vi] * T.float32(2) * T.float32(3)"),
        "{text}"
    );
    let xs = random(100, 1);
    let out = run(&fused.func, std::slice::from_ref(&xs));
    for p in 0..2 {
        for q in 0..50 {
            let i = p * 50 + q;
            let want = f64::from(xs[99 - i]) * 2.0 * 3.0;
            assert!((f64::from(out[i]) - want).abs() < 1e-5, "D[{p}, {q}]");
        }
    }
    // One kernel: the prologue and the epilogue are inside the anchor's.
    assert_eq!(lower(&fused.func).unwrap().kernels.len(), 1);
}

/// `relu(A @ B + bias)`: the anchor accumulates in a local and stores once, so the
/// epilogue rewrites that store; the bias is a new input of the fused function.
#[test]
fn matmul_bias_relu_is_one_kernel() {
    let (m, n, k) = (37, 19, 23);
    let a = te::placeholder("A", &[m, k], DType::F32);
    let b = te::placeholder("B", &[k, n], DType::F32);
    let bias = te::placeholder("bias", &[n], DType::F32);
    let r = te::reduce_axis("k", k);
    let c = te::compute("C", &[("i", m), ("j", n)], |i| {
        te::sum(
            a.at(&[i[0].clone(), r.expr()]) * b.at(&[r.expr(), i[1].clone()]),
            &[&r],
        )
    });
    let d = te::compute("D", &[("i", m), ("j", n)], |i| {
        te::maximum(c.at(&[&i[0], &i[1]]) + bias.at(&[&i[1]]), 0.0f32)
    });
    let mut sch = Schedule::new(te::create_func_with_inputs("mm", &[&a, &b], &[&c]).unwrap());
    let blk = sch.get_block("C").unwrap();
    let c_local = sch.cache_write(blk, 0, "local").unwrap();
    let l = sch.get_loops(blk).unwrap();
    let ib = sch.split(l[0], &[None, Some(8)]).unwrap();
    let jb = sch.split(l[1], &[None, Some(8)]).unwrap();
    sch.reorder(&[ib[0], jb[0], ib[1], jb[1]]).unwrap();
    sch.reverse_compute_at(c_local, jb[1]).unwrap();
    sch.bind(ib[0], ThreadAxis::BlockIdxY).unwrap();
    sch.bind(jb[0], ThreadAxis::BlockIdxX).unwrap();
    sch.bind(ib[1], ThreadAxis::ThreadIdxY).unwrap();
    sch.bind(jb[1], ThreadAxis::ThreadIdxX).unwrap();

    let fused = fuse(sch.func(), &d).unwrap();
    assert_eq!(fused.epilogues, ["D"]);
    let names: Vec<&str> = fused.func.params.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["A", "B", "bias", "D"]);
    let lowered = lower(&fused.func).unwrap();
    assert_eq!(lowered.kernels.len(), 1, "{lowered}");

    let (xa, xb, xbias) = (
        random((m * k) as usize, 2),
        random((k * n) as usize, 3),
        random(n as usize, 4),
    );
    let out = run(&fused.func, &[xa.clone(), xb.clone(), xbias.clone()]);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k)
                .map(|p| f64::from(xa[i * k + p]) * f64::from(xb[p * n + j]))
                .sum();
            let want = (dot + f64::from(xbias[j])).max(0.0);
            assert!(
                (f64::from(out[i * n + j]) - want).abs() < 1e-4,
                "D[{i}, {j}]"
            );
        }
    }
}

fn scheduled_copy(input: &Buffer, output: &Buffer) -> Schedule {
    let mut sch = Schedule::new(te::create_func_with_inputs("copy", &[input], &[output]).unwrap());
    let blk = sch.get_block(output.name()).unwrap();
    let i = sch.get_loops(blk).unwrap()[0];
    sch.bind(i, ThreadAxis::ThreadIdxX).unwrap();
    sch
}

#[test]
fn ops_that_are_neither_injective_nor_bijective_are_refused() {
    let x = te::placeholder("X", &[16, 8], DType::F32);
    let r = te::reduce_axis("r", 8);
    // A reduction as a prologue.
    let rowsum = te::compute("rowsum", &[("i", 16)], |i| {
        te::sum(x.at(&[i[0].clone(), r.expr()]), &[&r])
    });
    let copy = te::compute("copy", &[("i", 16)], |i| rowsum.at(&[&i[0]]));
    let e = fuse(scheduled_copy(&rowsum, &copy).func(), &copy).unwrap_err();
    assert_eq!(
        e,
        FusionError::NotInjective {
            op: "rowsum".into()
        }
    );

    let v = te::placeholder("V", &[16], DType::F32);
    let y = te::compute("Y", &[("i", 16)], |i| v.at(&[&i[0]]) + 1.0f32);
    let anchor = scheduled_copy(&v, &y);
    // Reads two elements of its input.
    let pair = te::compute("pair", &[("i", 15)], |i| {
        y.at(&[&i[0]]) + y.at(&[&i[0] + 1])
    });
    let e = fuse(anchor.func(), &pair).unwrap_err();
    assert!(
        matches!(&e, FusionError::NotBijective { op, .. } if op == "pair"),
        "{e}"
    );
    // A broadcast: element i and i + 8 read the same input element.
    let twice = te::compute("twice", &[("i", 2), ("j", 8)], |i| y.at(&[&i[1]]));
    let e = fuse(anchor.func(), &twice).unwrap_err();
    assert!(
        matches!(&e, FusionError::NotBijective { op, .. } if op == "twice"),
        "{e}"
    );
    // A tensor the anchor does not feed.
    let other = te::compute("other", &[("i", 16)], |i| v.at(&[&i[0]]));
    let e = fuse(anchor.func(), &other).unwrap_err();
    assert!(matches!(e, FusionError::Unreached { .. }), "{e}");
    // A transpose is a bijection: fused.
    let grid = te::compute("grid", &[("i", 4), ("j", 4)], |i| {
        y.at(&[&i[1] * 4 + &i[0]])
    });
    let fused = fuse(anchor.func(), &grid).unwrap();
    let xs = random(16, 5);
    let out = run(&fused.func, std::slice::from_ref(&xs));
    for i in 0..4 {
        for j in 0..4 {
            assert_eq!(out[i * 4 + j], xs[j * 4 + i] + 1.0);
        }
    }
}

/// An anchor that accumulates into its output cannot take an epilogue: it says how to
/// make it one that can.
#[test]
fn an_anchor_accumulating_in_place_is_named() {
    let a = te::placeholder("A", &[8, 8], DType::F32);
    let r = te::reduce_axis("k", 8);
    let c = te::compute("C", &[("i", 8)], |i| {
        te::sum(a.at(&[i[0].clone(), r.expr()]), &[&r])
    });
    let d = te::compute("D", &[("i", 8)], |i| c.at(&[&i[0]]) * 2.0f32);
    let sch = Schedule::new(te::create_func_with_inputs("rows", &[&a], &[&c]).unwrap());
    let e = fuse(sch.func(), &d).unwrap_err();
    assert!(
        matches!(&e, FusionError::Anchor { what, .. } if what.contains("cache_write")),
        "{e}"
    );
}

/// An epilogue reading the anchor's output with one of its axes split into a quotient
/// and a remainder (`k // 3`, `k % 3`: a grouped convolution's output channel as its
/// batched product's index and column) is a permutation of two digits: fused, and every
/// element lands where the definition puts it. A split that does not cover the input
/// (a divisor that leaves part of it unread) is still refused.
#[test]
fn an_axis_read_as_quotient_and_remainder_is_two_digits() {
    // The anchor: a copy of V as a batched product's output [2, 4, 3] (batch, row, col).
    let v = te::placeholder("V", &[2, 4, 3], DType::F32);
    let y = te::compute("Y", &[("z", 2), ("i", 4), ("j", 3)], |i| {
        v.at(&[&i[0], &i[1], &i[2]]) + 1.0f32
    });
    let mut sch = Schedule::new(te::create_func_with_inputs("copy", &[&v], &[&y]).unwrap());
    let blk = sch.get_block("Y").unwrap();
    let loops = sch.get_loops(blk).unwrap();
    let all = sch.fuse(&loops).unwrap();
    sch.bind(all, ThreadAxis::ThreadIdxX).unwrap();
    // out[i, k] = y[k // 3, i, k % 3] * 2: rows, then the six channels of both products.
    let out = te::compute("out", &[("i", 4), ("k", 6)], |i| {
        y.at(&[&i[1] / 3, i[0].clone(), &i[1] % 3]) * 2.0f32
    });
    let fused = fuse(sch.func(), &out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fused.epilogues, ["out"]);
    let xs = random(24, 9);
    let got = run(&fused.func, std::slice::from_ref(&xs));
    for i in 0..4 {
        for k in 0..6 {
            let want = (xs[(k / 3) * 12 + i * 3 + k % 3] + 1.0) * 2.0;
            assert_eq!(got[i * 6 + k], want, "out[{i}, {k}]");
        }
    }
    // k in [0, 4) read as (k // 2, k % 2): columns 2 of each product never read.
    let short = te::compute("short", &[("i", 4), ("k", 4)], |i| {
        y.at(&[&i[1] / 2, i[0].clone(), &i[1] % 2])
    });
    let e = fuse(sch.func(), &short).unwrap_err();
    assert!(
        matches!(&e, FusionError::NotBijective { op, .. } if op == "short"),
        "{e}"
    );
}

//! The "last block combines" pattern: each of `sk` blocks of a tile writes its part,
//! fences, and counts itself in atomically; the block that counts last sums the parts in
//! order 0..sk and zeroes the counter. The interpreter runs it (blocks one after another),
//! orders the parts before the sum through the counter, and catches the planted bugs.

use super::builders::*;
use weft_ir::func::AtomicAdd;

const TILES: i64 = 5;
const THREADS: i64 = 32;
const N: i64 = TILES * THREADS;

/// What a planted bug changes.
#[derive(Clone, Copy, PartialEq)]
enum Bug {
    None,
    /// No fence before the arrival.
    NoFence,
    /// The counter left at `sk`.
    NoReset,
    /// The last block's own part first, then the others: a sum in arrival order.
    OwnFirst,
}

struct Parts {
    kernel: Kernel,
    x: Buffer,
    partial: Buffer,
    counter: Buffer,
    out: Buffer,
}

fn bz() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxZ)
}

/// Part `z` of tile `x` computes `x[z, i]²` for its 32 elements `i`; the last of a
/// tile's `sk` parts writes `out[i] = Σ_z x[z, i]²` in order.
fn semaphore_kernel(sk: i64, bug: Bug) -> Parts {
    let x = global("x", sk * N, DType::F32);
    let partial = global("partial", sk * N, DType::F32);
    let counter = global("counter", TILES, DType::I32);
    let out = global("out", N, DType::F32);
    let flag = Buffer::new("flag", vec![1], DType::I32, Scope::Shared);
    let i = bx() * THREADS + tx();
    let v = load(&x, bz() * N + i.clone());
    let mut items = vec![store(&partial, bz() * N + i.clone(), v.clone() * v)];
    if bug != Bug::NoFence {
        items.push(KStmt::Fence);
    }
    items.push(KStmt::Barrier);
    items.push(if_(
        tx().eq_(0),
        KStmt::AtomicAdd(Box::new(AtomicAdd {
            buffer: counter.clone(),
            indices: vec![bx()],
            value: int(1),
            old: Some((flag.clone(), vec![int(0)])),
        })),
    ));
    items.push(KStmt::Barrier);
    let part = |z: Expr| load(&partial, z * N + i.clone());
    let sum = match bug {
        Bug::OwnFirst => (0..sk).fold(part(bz()), |acc, z| {
            Expr::select(bz().eq_(z), acc.clone(), acc + part(int(z)))
        }),
        _ => (1..sk).fold(part(int(0)), |acc, z| acc + part(int(z))),
    };
    let mut last = vec![KStmt::Fence, store(&out, i.clone(), sum)];
    if bug != Bug::NoReset {
        last.push(if_(tx().eq_(0), store(&counter, bx(), int(0))));
    }
    items.push(if_(load(&flag, int(0)).eq_(sk - 1), KStmt::seq(last)));
    let mut kernel = kernel(
        "split_last_sums",
        vec![
            param(&x, Access::Read),
            param(&partial, Access::ReadWrite),
            param(&counter, Access::ReadWrite),
            param(&out, Access::Write),
        ],
        [TILES as u32, 1, sk as u32],
        [THREADS as u32, 1, 1],
        KStmt::seq(items),
    );
    kernel.shared = vec![flag];
    Parts {
        kernel,
        x,
        partial,
        counter,
        out,
    }
}

/// Runs the kernel on `xs` with the counters at `counters`; returns `out` and the
/// counters after.
fn run(p: &Parts, xs: &[f32], counters: Vec<i32>) -> Result<(Vec<f32>, Vec<i32>), InterpError> {
    let sk = xs.len() as i64 / N;
    let got = run_one(
        &p.kernel,
        vec![
            (&p.x, TensorData::F32(xs.to_vec())),
            (
                &p.partial,
                TensorData::poisoned(DType::F32, (sk * N) as usize),
            ),
            (&p.counter, TensorData::I32(counters)),
            (&p.out, TensorData::poisoned(DType::F32, N as usize)),
        ],
    )?;
    let (TensorData::F32(out), TensorData::I32(c)) = (&got[3], &got[2]) else {
        panic!("unexpected data types");
    };
    Ok((out.clone(), c.clone()))
}

/// The parts summed in order 0..sk in f32, as the last block must.
fn in_order(xs: &[f32], sk: i64) -> Vec<f32> {
    (0..N as usize)
        .map(|i| {
            (1..sk as usize).fold(xs[i] * xs[i], |acc, z| {
                let v = xs[z * N as usize + i];
                acc + v * v
            })
        })
        .collect()
}

fn inputs(sk: i64) -> Vec<f32> {
    // Values of very different sizes, so that the order of a sum shows in its rounding.
    let mut rng = StdRng::seed_from_u64(sk as u64);
    (0..sk * N)
        .map(|_| rng.random_range(-1.0f32..1.0) * 10f32.powi(rng.random_range(-3..4)))
        .collect()
}

#[test]
fn last_block_sums_in_order_and_resets_the_counter() {
    for sk in [2, 3, 4, 8] {
        let p = semaphore_kernel(sk, Bug::None);
        let xs = inputs(sk);
        let (out, counters) = run(&p, &xs, vec![0; TILES as usize]).unwrap();
        assert_eq!(out, in_order(&xs, sk), "sk = {sk}");
        assert_eq!(counters, vec![0; TILES as usize], "sk = {sk}");
        // A second launch on the counters the first left: the same bits.
        let (again, _) = run(&p, &xs, counters).unwrap();
        assert_eq!(
            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            out.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_missing_fence_is_a_race() {
    let p = semaphore_kernel(3, Bug::NoFence);
    let err = run(&p, &inputs(3), vec![0; TILES as usize]).unwrap_err();
    assert!(
        matches!(&err, InterpError::GlobalRace { buffer, first: MemOp::Write, second: MemOp::Read, .. } if buffer == "partial"),
        "{err}"
    );
}

#[test]
fn a_counter_left_counted_fails_the_next_launch() {
    let p = semaphore_kernel(4, Bug::NoReset);
    let xs = inputs(4);
    let (_, counters) = run(&p, &xs, vec![0; TILES as usize]).unwrap();
    assert_eq!(counters, vec![4; TILES as usize]);
    // No block of the second launch sees the last count: `out` stays poisoned.
    let (again, _) = run(&p, &xs, counters).unwrap();
    assert!(again.iter().all(|v| v.is_nan()));
}

#[test]
fn a_sum_in_arrival_order_differs() {
    let p = semaphore_kernel(8, Bug::OwnFirst);
    let xs = inputs(8);
    let (out, _) = run(&p, &xs, vec![0; TILES as usize]).unwrap();
    assert_ne!(out, in_order(&xs, 8));
}

#[test]
fn atomics_take_global_integers_only() {
    let f = global("f", 4, DType::F32);
    let body = KStmt::AtomicAdd(Box::new(AtomicAdd {
        buffer: f.clone(),
        indices: vec![int(0)],
        value: Expr::Float(1.0, DType::F32),
        old: None,
    }));
    let k = kernel(
        "bad",
        vec![param(&f, Access::ReadWrite)],
        [1, 1, 1],
        [1, 1, 1],
        body,
    );
    let err = run_one(&k, vec![(&f, TensorData::F32(vec![0.0; 4]))]).unwrap_err();
    assert!(
        matches!(&err, InterpError::Unsupported { detail, .. } if detail.contains("atomic add on `f`")),
        "{err}"
    );
}

/// The prover sees the counter's element and the old value's slot: in bounds here, and
/// an index past the counters is not proven.
#[test]
fn the_prover_checks_the_counter_and_the_slot() {
    let p = semaphore_kernel(3, Bug::None);
    let report = weft_ir::bounds::prove(&p.kernel);
    assert!(report.is_proven(), "{}", report.summary());
    let counted: Vec<&str> = report
        .checks
        .iter()
        .map(|c| c.buffer.as_str())
        .filter(|b| *b == "counter" || *b == "flag")
        .collect();
    assert!(
        counted.contains(&"counter") && counted.contains(&"flag"),
        "{counted:?}"
    );
    let mut past = semaphore_kernel(3, Bug::None);
    if let KStmt::Seq(items) = &mut past.kernel.body {
        items.push(KStmt::AtomicAdd(Box::new(AtomicAdd {
            buffer: past.counter.clone(),
            indices: vec![bx() + 1],
            value: int(1),
            old: None,
        })));
    }
    let report = weft_ir::bounds::prove(&past.kernel);
    assert!(
        report.unproven().any(|c| c.buffer == "counter"),
        "{}",
        report.summary()
    );
}

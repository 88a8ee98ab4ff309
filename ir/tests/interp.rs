//! The CPU interpreter on hand-built kernels: results against independent references on
//! random inputs (outputs start poisoned), and one test per error kind.

use std::collections::HashMap;
use std::time::Instant;

use half::f16;
use rand::{Rng, SeedableRng, rngs::StdRng};
use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::func::Param;
use weft_ir::interp::{self, InterpError, MemOp, ThreadId};
use weft_ir::kernel::{Access, KMapping, KStmt, Kernel, KernelParam, LoweredFunc};
use weft_ir::mapping::spatial;

// ---- builders -------------------------------------------------------------------------

fn tx() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxX)
}
fn ty() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxY)
}
fn bx() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxX)
}
fn by() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxY)
}
fn int(v: i64) -> Expr {
    Expr::int(v)
}
fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}
fn global(name: &str, n: i64, dtype: DType) -> Buffer {
    Buffer::new(name, vec![n], dtype, Scope::Global)
}
fn load(b: &Buffer, i: Expr) -> Expr {
    b.load(vec![i])
}
fn vload(b: &Buffer, i: Expr, lanes: u32) -> Expr {
    Expr::Load {
        buffer: b.clone(),
        indices: vec![i],
        lanes,
    }
}
fn store(b: &Buffer, i: Expr, v: Expr) -> KStmt {
    KStmt::Store {
        buffer: b.clone(),
        index: i,
        value: v,
        lanes: 1,
    }
}
fn let_(v: &Var, value: Expr, body: KStmt) -> KStmt {
    KStmt::Let {
        var: v.clone(),
        value,
        body: Box::new(body),
    }
}
fn for_(v: &Var, extent: i64, body: KStmt) -> KStmt {
    KStmt::For {
        var: v.clone(),
        extent,
        unroll: false,
        body: Box::new(body),
    }
}
fn if_(cond: Expr, then: KStmt) -> KStmt {
    KStmt::If {
        cond,
        then: Box::new(then),
        otherwise: None,
    }
}
fn param(b: &Buffer, access: Access) -> KernelParam {
    KernelParam::Buffer {
        buffer: b.clone(),
        access,
    }
}
fn kernel(
    name: &str,
    params: Vec<KernelParam>,
    grid: [u32; 3],
    block: [u32; 3],
    body: KStmt,
) -> Kernel {
    Kernel {
        name: name.into(),
        params,
        grid,
        block,
        shared: vec![],
        locals: vec![],
        body,
    }
}
fn func(name: &str, params: Vec<Param>, kernels: Vec<Kernel>) -> LoweredFunc {
    LoweredFunc {
        name: name.into(),
        params,
        temps: vec![],
        kernels,
    }
}
fn rand_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}
fn f32s(a: &Arg) -> &[f32] {
    match a {
        Arg::Tensor(TensorData::F32(v)) => v,
        other => panic!("expected f32 data, got {other:?}"),
    }
}
fn i32s(a: &Arg) -> &[i32] {
    match a {
        Arg::Tensor(TensorData::I32(v)) => v,
        other => panic!("expected i32 data, got {other:?}"),
    }
}
fn tid(block: [u32; 3], thread: [u32; 3]) -> ThreadId {
    ThreadId { block, thread }
}

/// Runs a single kernel with the given buffers (by buffer) and returns them.
fn run_one(k: &Kernel, data: Vec<(&Buffer, TensorData)>) -> Result<Vec<TensorData>, InterpError> {
    let ids: Vec<u64> = data.iter().map(|(b, _)| b.id()).collect();
    let mut map: HashMap<u64, TensorData> = data.into_iter().map(|(b, d)| (b.id(), d)).collect();
    interp::run_kernel(k, &mut map, &HashMap::new())?;
    Ok(ids
        .iter()
        .map(|id| map.remove(id).expect("buffer kept"))
        .collect())
}

// ---- results --------------------------------------------------------------------------

/// `c[i] = a[i] + b[i]` over 4 blocks x 256 threads for 1000 elements, guarded.
#[test]
fn vector_add_over_blocks_and_threads() {
    let n = 1000;
    let (a, b, c) = (
        global("A", n, DType::F32),
        global("B", n, DType::F32),
        global("C", n, DType::F32),
    );
    let i = Var::index("i");
    let body = let_(
        &i,
        bx() * 256 + tx(),
        if_(
            i.expr().lt(n),
            store(&c, i.expr(), load(&a, i.expr()) + load(&b, i.expr())),
        ),
    );
    let k = kernel(
        "vadd",
        vec![
            param(&a, Access::Read),
            param(&b, Access::Read),
            param(&c, Access::Write),
        ],
        [4, 1, 1],
        [256, 1, 1],
        body,
    );
    let f = func("vadd", vec![a.into(), b.into(), c.into()], vec![k]);
    let mut rng = StdRng::seed_from_u64(1);
    let (av, bv) = (
        rand_f32(&mut rng, n as usize),
        rand_f32(&mut rng, n as usize),
    );
    let mut args = [
        Arg::Tensor(TensorData::F32(av.clone())),
        Arg::Tensor(TensorData::F32(bv.clone())),
        Arg::Tensor(TensorData::poisoned(DType::F32, n as usize)),
    ];
    interp::run(&f, &mut args).unwrap();
    let want: Vec<f32> = av.iter().zip(&bv).map(|(x, y)| x + y).collect();
    assert_eq!(f32s(&args[2]), want.as_slice());
}

/// Thread t writes shared[t], barrier, reads shared[(t + 1) % n]: a rotation per block.
fn exchange_kernel(with_barrier: bool) -> (Kernel, Buffer, Buffer, Buffer) {
    let n = 64;
    let blocks = 3;
    let (inp, out) = (
        global("inp", n * blocks, DType::I32),
        global("out", n * blocks, DType::I32),
    );
    let s = Buffer::new("s", vec![n], DType::I32, Scope::Shared);
    let mut items = vec![store(&s, tx(), load(&inp, bx() * n + tx()))];
    if with_barrier {
        items.push(KStmt::Barrier);
    }
    let next = bin(BinOp::Mod, tx() + 1, int(n));
    items.push(store(&out, bx() * n + tx(), load(&s, next)));
    let mut k = kernel(
        "exchange",
        vec![param(&inp, Access::Read), param(&out, Access::Write)],
        [blocks as u32, 1, 1],
        [n as u32, 1, 1],
        KStmt::seq(items),
    );
    k.shared = vec![s.clone()];
    (k, inp, out, s)
}

#[test]
fn shared_exchange_with_barrier() {
    let (k, inp, out, _) = exchange_kernel(true);
    let mut rng = StdRng::seed_from_u64(2);
    let x: Vec<i32> = (0..192).map(|_| rng.random()).collect();
    let res = run_one(
        &k,
        vec![
            (&inp, TensorData::I32(x.clone())),
            (&out, TensorData::poisoned(DType::I32, 192)),
        ],
    )
    .unwrap();
    let want: Vec<i32> = (0..192)
        .map(|i| x[(i / 64) * 64 + (i % 64 + 1) % 64])
        .collect();
    assert_eq!(res[1], TensorData::I32(want));
}

#[test]
fn shared_exchange_without_barrier_is_a_race() {
    let (k, inp, out, _) = exchange_kernel(false);
    let err = run_one(
        &k,
        vec![
            (&inp, TensorData::zeros(DType::I32, 192)),
            (&out, TensorData::poisoned(DType::I32, 192)),
        ],
    )
    .unwrap_err();
    match &err {
        InterpError::SharedRace {
            buffer,
            index,
            first,
            second,
            other,
            at,
            ..
        } => {
            assert_eq!(buffer, "s");
            // Thread 0 reads s[1], which thread 1 wrote in the same epoch.
            assert_eq!(*index, 1);
            assert_eq!((*first, *second), (MemOp::Write, MemOp::Read));
            assert_eq!(*other, tid([0, 0, 0], [1, 0, 0]));
            assert_eq!(*at, tid([0, 0, 0], [0, 0, 0]));
        }
        e => panic!("expected a shared race, got {e}"),
    }
    assert!(err.to_string().contains("`s`[1]"), "{err}");
}

/// `select(i < n, A[i], 0)` must not load A out of bounds for the threads past the end.
#[test]
fn select_guards_its_load() {
    let n = 10;
    let (a, out) = (global("A", n, DType::F32), global("out", 16, DType::F32));
    let v = Expr::if_then_else(tx().lt(n), load(&a, tx()), Expr::f32(0.0));
    let k = kernel(
        "guard",
        vec![param(&a, Access::Read), param(&out, Access::Write)],
        [1, 1, 1],
        [16, 1, 1],
        store(&out, tx(), v),
    );
    let av: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    let res = run_one(
        &k,
        vec![
            (&a, TensorData::F32(av.clone())),
            (&out, TensorData::poisoned(DType::F32, 16)),
        ],
    )
    .unwrap();
    let want: Vec<f32> = (0..16)
        .map(|i| if i < n as usize { av[i] } else { 0.0 })
        .collect();
    assert_eq!(res[1], TensorData::F32(want));
}

#[test]
fn vector_copy_of_four_lanes() {
    let n = 64;
    let (a, b) = (global("A", n, DType::F32), global("B", n, DType::F32));
    let k = kernel(
        "vcopy",
        vec![param(&a, Access::Read), param(&b, Access::Write)],
        [2, 1, 1],
        [8, 1, 1],
        KStmt::Store {
            buffer: b.clone(),
            index: (bx() * 8 + tx()) * 4,
            value: vload(&a, (bx() * 8 + tx()) * 4, 4),
            lanes: 4,
        },
    );
    let mut rng = StdRng::seed_from_u64(3);
    let av = rand_f32(&mut rng, n as usize);
    let res = run_one(
        &k,
        vec![
            (&a, TensorData::F32(av.clone())),
            (&b, TensorData::poisoned(DType::F32, 64)),
        ],
    )
    .unwrap();
    assert_eq!(res[1], TensorData::F32(av));
}

#[test]
fn misaligned_vector_copy() {
    let (a, b) = (global("A", 64, DType::F32), global("B", 64, DType::F32));
    let k = kernel(
        "vcopy",
        vec![param(&a, Access::Read), param(&b, Access::Write)],
        [1, 1, 1],
        [8, 1, 1],
        KStmt::Store {
            buffer: b.clone(),
            index: tx() * 4,
            value: vload(&a, tx() * 4 + 2, 4),
            lanes: 4,
        },
    );
    let err = run_one(
        &k,
        vec![
            (&a, TensorData::zeros(DType::F32, 64)),
            (&b, TensorData::poisoned(DType::F32, 64)),
        ],
    )
    .unwrap_err();
    match err {
        InterpError::Misaligned {
            buffer,
            index,
            lanes,
            at,
            ..
        } => {
            assert_eq!((buffer.as_str(), index, lanes), ("A", 2, 4));
            assert_eq!(at, tid([0, 0, 0], [0, 0, 0]));
        }
        e => panic!("expected misaligned, got {e}"),
    }
}

/// f16 results are rounded after every operation: `(a + b) - a` with `b` below half an
/// ulp of `a` is exactly 0, and sums match a correctly rounded reference.
#[test]
fn f16_rounds_after_every_operation() {
    let n = 256;
    let (a, b, s, d) = (
        global("a", n, DType::F16),
        global("b", n, DType::F16),
        global("s", n, DType::F16),
        global("d", n, DType::F16),
    );
    let body = KStmt::seq(vec![
        store(&s, tx(), load(&a, tx()) + load(&b, tx())),
        store(&d, tx(), (load(&a, tx()) + load(&b, tx())) - load(&a, tx())),
    ]);
    let k = kernel(
        "f16",
        vec![
            param(&a, Access::Read),
            param(&b, Access::Read),
            param(&s, Access::Write),
            param(&d, Access::Write),
        ],
        [1, 1, 1],
        [n as u32, 1, 1],
        body,
    );
    let mut rng = StdRng::seed_from_u64(4);
    let mut av: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(rng.random_range(-100.0..100.0)))
        .collect();
    let mut bv: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    // One case where the exact difference is representable but lost in the rounded sum.
    av[0] = f16::from_f32(1.0);
    bv[0] = f16::from_f32(0.0001);
    let res = run_one(
        &k,
        vec![
            (&a, TensorData::F16(av.clone())),
            (&b, TensorData::F16(bv.clone())),
            (&s, TensorData::poisoned(DType::F16, n as usize)),
            (&d, TensorData::poisoned(DType::F16, n as usize)),
        ],
    )
    .unwrap();
    let sum: Vec<f16> = av
        .iter()
        .zip(&bv)
        .map(|(x, y)| f16::from_f64(x.to_f64() + y.to_f64()))
        .collect();
    let diff: Vec<f16> = av
        .iter()
        .zip(&sum)
        .map(|(x, s)| f16::from_f64(s.to_f64() - x.to_f64()))
        .collect();
    assert_eq!(res[2], TensorData::F16(sum));
    assert_eq!(res[3], TensorData::F16(diff.clone()));
    assert_eq!(diff[0], f16::ZERO);
}

/// C's truncating `/` and `%` against the floor forms, on every sign combination.
#[test]
fn int_division_truncates_or_floors() {
    let cases = [
        (7, 2),
        (-7, 2),
        (7, -2),
        (-7, -2),
        (i32::MIN, -1),
        (6, 3),
        (-6, 3),
    ];
    let m = cases.len() as i64;
    let (x, y) = (global("x", m, DType::I32), global("y", m, DType::I32));
    let outs: Vec<Buffer> = ["div", "mod", "fdiv", "fmod"]
        .iter()
        .map(|n| global(n, m, DType::I32))
        .collect();
    let ops = [BinOp::Div, BinOp::Mod, BinOp::FloorDiv, BinOp::FloorMod];
    let body = KStmt::seq(
        outs.iter()
            .zip(ops)
            .map(|(o, op)| store(o, tx(), bin(op, load(&x, tx()), load(&y, tx()))))
            .collect(),
    );
    let mut params = vec![param(&x, Access::Read), param(&y, Access::Read)];
    params.extend(outs.iter().map(|o| param(o, Access::Write)));
    let k = kernel("divmod", params, [1, 1, 1], [m as u32, 1, 1], body);
    let mut data = vec![
        (&x, TensorData::I32(cases.iter().map(|c| c.0).collect())),
        (&y, TensorData::I32(cases.iter().map(|c| c.1).collect())),
    ];
    data.extend(
        outs.iter()
            .map(|o| (o, TensorData::poisoned(DType::I32, m as usize))),
    );
    let res = run_one(&k, data).unwrap();
    let col = |f: &dyn Fn(i64, i64) -> i64| {
        TensorData::I32(
            cases
                .iter()
                .map(|&(a, b)| f(a as i64, b as i64) as i32)
                .collect(),
        )
    };
    let floor = |a: i64, b: i64| (a as f64 / b as f64).floor() as i64;
    assert_eq!(res[2], col(&|a, b| a / b));
    assert_eq!(res[3], col(&|a, b| a % b));
    assert_eq!(res[4], col(&floor));
    assert_eq!(res[5], col(&|a, b| a - b * floor(a, b)));
    // The first four cases written out.
    let head = |d: &TensorData| i32s(&Arg::Tensor(d.clone()))[..4].to_vec();
    assert_eq!(head(&res[2]), [3, -3, -3, 3]);
    assert_eq!(head(&res[3]), [1, -1, 1, -1]);
    assert_eq!(head(&res[4]), [3, -4, -4, 3]);
    assert_eq!(head(&res[5]), [1, 1, -1, -1]);
}

/// Two kernels through a temporary: `t = 2 * a`, then `out = t + b`, plus a scalar.
#[test]
fn two_kernels_through_a_temp() {
    let n = 300;
    let (a, b, out) = (
        global("a", n, DType::F32),
        global("b", n, DType::F32),
        global("out", n, DType::F32),
    );
    let t = global("t", n, DType::F32);
    let alpha = Var::new("alpha", DType::F32);
    let i = Var::index("i");
    let guarded = |s: KStmt| let_(&i, bx() * 128 + tx(), if_(i.expr().lt(n), s));
    let k1 = kernel(
        "scale",
        vec![
            param(&a, Access::Read),
            param(&t, Access::Write),
            KernelParam::Scalar(alpha.clone()),
        ],
        [3, 1, 1],
        [128, 1, 1],
        guarded(store(&t, i.expr(), load(&a, i.expr()) * alpha.expr())),
    );
    let k2 = kernel(
        "add",
        vec![
            param(&t, Access::Read),
            param(&b, Access::Read),
            param(&out, Access::Write),
        ],
        [3, 1, 1],
        [128, 1, 1],
        guarded(store(
            &out,
            i.expr(),
            load(&t, i.expr()) + load(&b, i.expr()),
        )),
    );
    let mut f = func(
        "scale_add",
        vec![a.into(), b.into(), alpha.into(), out.into()],
        vec![k1, k2],
    );
    f.temps = vec![t];
    let mut rng = StdRng::seed_from_u64(5);
    let (av, bv) = (
        rand_f32(&mut rng, n as usize),
        rand_f32(&mut rng, n as usize),
    );
    let mut args = [
        Arg::Tensor(TensorData::F32(av.clone())),
        Arg::Tensor(TensorData::F32(bv.clone())),
        Arg::Scalar(Scalar::F32(2.5)),
        Arg::Tensor(TensorData::poisoned(DType::F32, n as usize)),
    ];
    interp::run(&f, &mut args).unwrap();
    let want: Vec<f32> = av.iter().zip(&bv).map(|(x, y)| x * 2.5 + y).collect();
    assert_eq!(f32s(&args[3]), want.as_slice());
}

/// A 128³ matmul, one thread per output element in `tb` x `tb` blocks, accumulating in
/// a local; checked exactly against the same f32 sums on the host.
fn matmul_128(tb: i64) {
    let n = 128i64;
    let (a, b, c) = (
        global("A", n * n, DType::F32),
        global("B", n * n, DType::F32),
        global("C", n * n, DType::F32),
    );
    let acc = Buffer::new("acc", vec![1], DType::F32, Scope::Local);
    let (i, j, k) = (Var::index("i"), Var::index("j"), Var::index("k"));
    let body = let_(
        &i,
        by() * tb + ty(),
        let_(
            &j,
            bx() * tb + tx(),
            KStmt::seq(vec![
                store(&acc, int(0), Expr::f32(0.0)),
                for_(
                    &k,
                    n,
                    store(
                        &acc,
                        int(0),
                        load(&acc, int(0))
                            + load(&a, i.expr() * n + k.expr()) * load(&b, k.expr() * n + j.expr()),
                    ),
                ),
                store(&c, i.expr() * n + j.expr(), load(&acc, int(0))),
            ]),
        ),
    );
    let mut kern = kernel(
        "matmul",
        vec![
            param(&a, Access::Read),
            param(&b, Access::Read),
            param(&c, Access::Write),
        ],
        [(n / tb) as u32, (n / tb) as u32, 1],
        [tb as u32, tb as u32, 1],
        body,
    );
    kern.locals = vec![acc];
    let f = func("matmul", vec![a.into(), b.into(), c.into()], vec![kern]);
    let mut rng = StdRng::seed_from_u64(6);
    let nn = (n * n) as usize;
    let (av, bv) = (rand_f32(&mut rng, nn), rand_f32(&mut rng, nn));
    let mut args = [
        Arg::Tensor(TensorData::F32(av.clone())),
        Arg::Tensor(TensorData::F32(bv.clone())),
        Arg::Tensor(TensorData::poisoned(DType::F32, nn)),
    ];
    let start = Instant::now();
    interp::run(&f, &mut args).unwrap();
    eprintln!("matmul 128^3, {tb}x{tb} blocks: {:?}", start.elapsed());
    let n = n as usize;
    let mut want = vec![0f32; nn];
    for r in 0..n {
        for col in 0..n {
            let mut s = 0f32;
            for kk in 0..n {
                s += av[r * n + kk] * bv[kk * n + col];
            }
            want[r * n + col] = s;
        }
    }
    assert_eq!(f32s(&args[2]), want.as_slice());
}

#[test]
fn matmul_128_one_thread_per_element() {
    matmul_128(16);
}

/// One-thread blocks: the interpreter runs blocks side by side, so this is as fast.
#[test]
fn matmul_128_one_thread_blocks() {
    matmul_128(1);
}

/// Blocks that skip a barrier as a whole are not divergent; but then their own accesses
/// around it are unordered, even while other blocks of the grid do pass the barrier.
#[test]
fn barrier_skipped_by_whole_blocks() {
    let n = 4;
    let (out, s) = (
        global("out", 8 * n, DType::I32),
        Buffer::new("s", vec![n], DType::I32, Scope::Shared),
    );
    let kern = |limit: i64| {
        let body = KStmt::seq(vec![
            store(&s, tx(), bx() * 100 + tx()),
            if_(bx().lt(limit), KStmt::Barrier),
            store(
                &out,
                bx() * n + tx(),
                load(&s, bin(BinOp::Mod, tx() + 1, int(n))),
            ),
        ]);
        let mut k = kernel(
            "skip",
            vec![param(&out, Access::Write)],
            [8, 1, 1],
            [n as u32, 1, 1],
            body,
        );
        k.shared = vec![s.clone()];
        k
    };
    let res = run_one(&kern(8), vec![(&out, TensorData::poisoned(DType::I32, 32))]).unwrap();
    let want: Vec<i32> = (0..32).map(|i| (i / 4) * 100 + (i % 4 + 1) % 4).collect();
    assert_eq!(res[0], TensorData::I32(want));
    let err = run_one(&kern(3), vec![(&out, TensorData::poisoned(DType::I32, 32))]).unwrap_err();
    match err {
        InterpError::SharedRace {
            buffer, at, other, ..
        } => {
            assert_eq!(buffer, "s");
            assert_eq!((at.block, other.block), ([3, 0, 0], [3, 0, 0]));
        }
        e => panic!("expected a shared race, got {e}"),
    }
}

// ---- errors ---------------------------------------------------------------------------

/// `out[t] = A[t + 1]` reads one past the end in the last thread.
#[test]
fn out_of_bounds_load() {
    let (a, out) = (global("A", 32, DType::F32), global("out", 32, DType::F32));
    let k = kernel(
        "shift",
        vec![param(&a, Access::Read), param(&out, Access::Write)],
        [2, 1, 1],
        [16, 1, 1],
        store(&out, bx() * 16 + tx(), load(&a, bx() * 16 + tx() + 1)),
    );
    let err = run_one(
        &k,
        vec![
            (&a, TensorData::zeros(DType::F32, 32)),
            (&out, TensorData::poisoned(DType::F32, 32)),
        ],
    )
    .unwrap_err();
    match &err {
        InterpError::OutOfBounds {
            buffer,
            op,
            index,
            len,
            at,
            ..
        } => {
            assert_eq!(
                (buffer.as_str(), *op, *index, *len),
                ("A", MemOp::Read, 32, 32)
            );
            assert_eq!(*at, tid([1, 0, 0], [15, 0, 0]));
        }
        e => panic!("expected out of bounds, got {e}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("`A`[32..33]") && msg.contains("block (1, 0, 0) thread (15, 0, 0)"),
        "{msg}"
    );
}

/// `out[t - 1] = 1` writes index -1 in thread 0.
#[test]
fn out_of_bounds_store() {
    let out = global("out", 16, DType::I32);
    let k = kernel(
        "neg",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [16, 1, 1],
        store(&out, tx() - 1, int(1)),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 16))]).unwrap_err();
    match err {
        InterpError::OutOfBounds {
            buffer,
            op,
            index,
            at,
            ..
        } => {
            assert_eq!((buffer.as_str(), op, index), ("out", MemOp::Write, -1));
            assert_eq!(at, tid([0, 0, 0], [0, 0, 0]));
        }
        e => panic!("expected out of bounds, got {e}"),
    }
}

/// Every block writes `out[t]`: blocks cannot order their writes.
#[test]
fn global_race_between_blocks() {
    let out = global("out", 8, DType::I32);
    let k = kernel(
        "clash",
        vec![param(&out, Access::Write)],
        [2, 1, 1],
        [8, 1, 1],
        store(&out, tx(), bx()),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 8))]).unwrap_err();
    match err {
        InterpError::GlobalRace {
            buffer,
            index,
            first,
            second,
            other,
            at,
            ..
        } => {
            assert_eq!(
                (buffer.as_str(), index, first, second),
                ("out", 0, MemOp::Write, MemOp::Write)
            );
            assert_eq!(other, tid([0, 0, 0], [0, 0, 0]));
            assert_eq!(at, tid([1, 0, 0], [0, 0, 0]));
        }
        e => panic!("expected a global race, got {e}"),
    }
}

/// Within a block, a barrier orders global accesses; without one, they race.
#[test]
fn global_accesses_in_a_block_need_a_barrier() {
    let (t, out) = (global("t", 8, DType::I32), global("out", 8, DType::I32));
    let body = |barrier: bool| {
        let mut items = vec![store(&t, tx(), tx() * 10)];
        if barrier {
            items.push(KStmt::Barrier);
        }
        items.push(store(
            &out,
            tx(),
            load(&t, bin(BinOp::Mod, tx() + 1, int(8))),
        ));
        KStmt::seq(items)
    };
    let params = vec![param(&t, Access::ReadWrite), param(&out, Access::Write)];
    let ok = kernel("g", params.clone(), [1, 1, 1], [8, 1, 1], body(true));
    let data = || {
        vec![
            (&t, TensorData::poisoned(DType::I32, 8)),
            (&out, TensorData::poisoned(DType::I32, 8)),
        ]
    };
    let res = run_one(&ok, data()).unwrap();
    assert_eq!(
        res[1],
        TensorData::I32((0..8).map(|i| ((i + 1) % 8) * 10).collect())
    );
    let racy = kernel("g", params, [1, 1, 1], [8, 1, 1], body(false));
    let err = run_one(&racy, data()).unwrap_err();
    assert!(
        matches!(&err, InterpError::GlobalRace { buffer, .. } if buffer == "t"),
        "{err}"
    );
}

#[test]
fn barrier_in_divergent_if() {
    let out = global("out", 32, DType::I32);
    let body = KStmt::seq(vec![
        if_(tx().lt(16), KStmt::Barrier),
        store(&out, tx(), int(0)),
    ]);
    let k = kernel(
        "div",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [32, 1, 1],
        body,
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 32))]).unwrap_err();
    match err {
        InterpError::DivergentBarrier { active, total, .. } => {
            assert_eq!((active, total), (16, 32))
        }
        e => panic!("expected a divergent barrier, got {e}"),
    }
    // A condition every thread satisfies is not divergent.
    let body = KStmt::seq(vec![
        if_(tx().lt(64), KStmt::Barrier),
        store(&out, tx(), int(0)),
    ]);
    let k = kernel(
        "uniform",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [32, 1, 1],
        body,
    );
    run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 32))]).unwrap();
}

#[test]
fn unlowered_mapping() {
    let out = global("out", 4, DType::I32);
    let t = Var::index("t");
    let body = KStmt::Mapping(Box::new(KMapping {
        mapping: spatial(&[4]),
        worker: tx(),
        task_vars: vec![t.clone()],
        body: store(&out, t.expr(), int(0)),
    }));
    let k = kernel(
        "m",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [4, 1, 1],
        body,
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 4))]).unwrap_err();
    assert!(
        matches!(&err, InterpError::UnloweredMapping { mapping, .. } if mapping == "spatial(4)"),
        "{err}"
    );
}

#[test]
fn unbound_variable() {
    let out = global("out", 4, DType::I32);
    let stray = Var::index("stray");
    let k = kernel(
        "u",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [4, 1, 1],
        store(&out, tx(), stray.expr()),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 4))]).unwrap_err();
    assert!(
        matches!(&err, InterpError::UnboundVar { var, .. } if var == "stray"),
        "{err}"
    );
}

#[test]
fn type_mismatch() {
    let out = global("out", 4, DType::F32);
    // An i32 value stored into an f32 buffer.
    let k = kernel(
        "t",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [4, 1, 1],
        store(&out, tx(), tx()),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::F32, 4))]).unwrap_err();
    assert!(matches!(err, InterpError::TypeMismatch { .. }), "{err}");
    // Operands of different types.
    let v = Expr::Binary(BinOp::Add, Box::new(Expr::f32(1.0)), Box::new(tx()));
    let k = kernel(
        "t",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [4, 1, 1],
        store(&out, tx(), v),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::F32, 4))]).unwrap_err();
    assert!(matches!(err, InterpError::TypeMismatch { .. }), "{err}");
}

#[test]
fn integer_division_by_zero() {
    let out = global("out", 4, DType::I32);
    let k = kernel(
        "z",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [4, 1, 1],
        store(&out, tx(), bin(BinOp::Div, int(12), tx() - 2)),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 4))]).unwrap_err();
    match err {
        InterpError::DivisionByZero { at, .. } => assert_eq!(at, tid([0, 0, 0], [2, 0, 0])),
        e => panic!("expected division by zero, got {e}"),
    }
}

#[test]
fn store_into_a_read_only_parameter() {
    let a = global("A", 4, DType::I32);
    let k = kernel(
        "w",
        vec![param(&a, Access::Read)],
        [1, 1, 1],
        [4, 1, 1],
        store(&a, tx(), int(0)),
    );
    let err = run_one(&k, vec![(&a, TensorData::zeros(DType::I32, 4))]).unwrap_err();
    assert!(
        matches!(&err, InterpError::AccessViolation { buffer, op: MemOp::Write, .. } if buffer == "A"),
        "{err}"
    );
}

#[test]
fn argument_validation() {
    let (a, out) = (global("A", 4, DType::F32), global("out", 4, DType::F32));
    let s = Var::new("s", DType::F32);
    let k = kernel(
        "k",
        vec![
            param(&a, Access::Read),
            param(&out, Access::Write),
            KernelParam::Scalar(s.clone()),
        ],
        [1, 1, 1],
        [4, 1, 1],
        store(&out, tx(), load(&a, tx()) * s.expr()),
    );
    let f = func("f", vec![a.into(), out.into(), s.into()], vec![k]);
    let good = || {
        vec![
            Arg::Tensor(TensorData::zeros(DType::F32, 4)),
            Arg::Tensor(TensorData::poisoned(DType::F32, 4)),
            Arg::Scalar(Scalar::F32(1.0)),
        ]
    };
    interp::run(&f, &mut good()).unwrap();

    let mut args = good();
    args.pop();
    let err = interp::run(&f, &mut args).unwrap_err();
    assert!(
        matches!(
            err,
            InterpError::ArgCount {
                expected: 3,
                got: 2,
                ..
            }
        ),
        "{err}"
    );

    let mut args = good();
    args[0] = Arg::Scalar(Scalar::F32(0.0));
    let err = interp::run(&f, &mut args).unwrap_err();
    assert!(
        matches!(&err, InterpError::ArgKind { param, expected: "tensor", .. } if param == "A"),
        "{err}"
    );

    let mut args = good();
    args[1] = Arg::Tensor(TensorData::zeros(DType::I32, 4));
    let err = interp::run(&f, &mut args).unwrap_err();
    assert!(
        matches!(&err, InterpError::ArgDType { param, expected: DType::F32, got: DType::I32 } if param == "out"),
        "{err}"
    );

    let mut args = good();
    args[0] = Arg::Tensor(TensorData::zeros(DType::F32, 5));
    let err = interp::run(&f, &mut args).unwrap_err();
    assert!(
        matches!(&err, InterpError::ArgLen { param, expected: 4, got: 5 } if param == "A"),
        "{err}"
    );

    let mut args = good();
    args[2] = Arg::Scalar(Scalar::I32(1));
    let err = interp::run(&f, &mut args).unwrap_err();
    assert!(
        matches!(&err, InterpError::ArgDType { param, .. } if param == "s"),
        "{err}"
    );

    // run_kernel: a buffer parameter with no data.
    let err = interp::run_kernel(&f.kernels[0], &mut HashMap::new(), &HashMap::new()).unwrap_err();
    assert!(
        matches!(&err, InterpError::MissingBuffer { buffer, .. } if buffer == "A"),
        "{err}"
    );
}

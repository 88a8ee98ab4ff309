//! Kernels whose results are checked against references.

use super::builders::*;

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

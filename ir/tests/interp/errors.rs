//! One test per error kind.

use super::builders::*;

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
    let (a_id, out_id) = (a.id(), out.id());
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

    // run_kernel: a scalar parameter with no value.
    let mut bufs = HashMap::from([
        (a_id, TensorData::zeros(DType::F32, 4)),
        (out_id, TensorData::poisoned(DType::F32, 4)),
    ]);
    let err = interp::run_kernel(&f.kernels[0], &mut bufs, &HashMap::new()).unwrap_err();
    assert!(
        matches!(&err, InterpError::MissingScalar { var, .. } if var == "s"),
        "{err}"
    );
}

/// A buffer that is neither a parameter nor an allocation of the kernel.
#[test]
fn unknown_buffer() {
    let (out, stray) = (global("out", 4, DType::I32), global("stray", 4, DType::I32));
    let k = kernel(
        "u",
        vec![param(&out, Access::Write)],
        [1, 1, 1],
        [4, 1, 1],
        store(&out, tx(), load(&stray, tx())),
    );
    let err = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 4))]).unwrap_err();
    assert!(
        matches!(&err, InterpError::UnknownBuffer { buffer, .. } if buffer == "stray"),
        "{err}"
    );
}

/// What the lowered-kernel contract excludes: a vector load that is not copied by a
/// vector store of its width, and a multi-dimensional index.
#[test]
fn unsupported_forms() {
    let (a, out) = (global("A", 16, DType::F32), global("out", 16, DType::F32));
    let params = vec![param(&a, Access::Read), param(&out, Access::Write)];
    let data = || {
        vec![
            (&a, TensorData::zeros(DType::F32, 16)),
            (&out, TensorData::poisoned(DType::F32, 16)),
        ]
    };
    let scalar_of_vector = store(&out, tx(), vload(&a, tx() * 4, 4));
    let k = kernel("v", params.clone(), [1, 1, 1], [4, 1, 1], scalar_of_vector);
    let err = run_one(&k, data()).unwrap_err();
    assert!(matches!(err, InterpError::Unsupported { .. }), "{err}");
    let two_d = store(&out, tx(), a.load(vec![tx(), int(0)]));
    let k = kernel("m", params, [1, 1, 1], [4, 1, 1], two_d);
    let err = run_one(&k, data()).unwrap_err();
    assert!(matches!(err, InterpError::Unsupported { .. }), "{err}");
}

/// A temporary with a zero extent cannot be allocated.
#[test]
fn bad_shape() {
    let t = Buffer::new("t", vec![4, 0], DType::F32, Scope::Global);
    let mut f = func("f", vec![], vec![]);
    f.temps = vec![t];
    let err = interp::run(&f, &mut []).unwrap_err();
    assert!(
        matches!(&err, InterpError::BadShape { buffer, .. } if buffer == "t"),
        "{err}"
    );
}

/// `out[t] = t` read back from thread `t ^ mask`: a butterfly exchange, right for every
/// mask below the block; reported where the partner is past the block or absent.
#[test]
fn shuffles_exchange_within_the_block_and_refuse_an_absent_partner() {
    let out = global("out", 64, DType::I32);
    let v = Var::new("v", DType::I32);
    let shuffled = |mask: i64, block: u32, guard: Option<Expr>| {
        let s = let_(
            &v,
            Expr::shuffle_xor(tx() * 10, mask),
            store(&out, bx() * block as i64 + tx(), v.expr()),
        );
        let body = match guard {
            Some(c) => if_(c, s),
            None => s,
        };
        kernel(
            "shfl",
            vec![param(&out, Access::Write)],
            [64 / block, 1, 1],
            [block, 1, 1],
            body,
        )
    };
    for mask in [1, 2, 8, 31] {
        let k = shuffled(mask, 32, None);
        let got = run_one(&k, vec![(&out, TensorData::poisoned(DType::I32, 64))]).unwrap();
        let TensorData::I32(got) = &got[0] else {
            panic!("an i32 output")
        };
        for (i, g) in got.iter().enumerate() {
            assert_eq!(
                *g,
                ((i % 32) as i32 ^ mask as i32) * 10,
                "mask {mask} at {i}"
            );
        }
    }
    // One block of 48: thread 32's partner under mask 16 would be 48.
    let err = run_one(
        &shuffled(16, 48, None),
        vec![(&out, TensorData::poisoned(DType::I32, 64))],
    )
    .unwrap_err();
    assert!(
        matches!(&err, InterpError::DivergentShuffle { partner: 48, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("past the block's threads"),
        "{err}"
    );
    // Under a condition that splits the pairs.
    let err = run_one(
        &shuffled(1, 32, Some(tx().lt(5))),
        vec![(&out, TensorData::poisoned(DType::I32, 64))],
    )
    .unwrap_err();
    assert!(err.to_string().contains("does not arrive"), "{err}");
}

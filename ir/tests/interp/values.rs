//! Value semantics: rounding, division, casts, intrinsics, random integer expressions.

use super::builders::*;

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

/// Casts between dtypes (C rules) and integer wrap-around.
#[test]
fn casts_and_wrapping() {
    let xs = [-2.7f32, 3.9, 0.0, -0.0, 1e10, 0.5];
    let m = xs.len() as i64;
    let x = global("x", m, DType::F32);
    let (to_i, to_u, to_b, to_h) = (
        global("to_i", m, DType::I32),
        global("to_u", m, DType::U32),
        global("to_b", m, DType::F32),
        global("to_h", m, DType::F16),
    );
    let (wrap_i, wrap_u) = (
        global("wrap_i", 1, DType::I32),
        global("wrap_u", 1, DType::U32),
    );
    let xv = load(&x, tx());
    let body = KStmt::seq(vec![
        store(&to_i, tx(), xv.clone().cast(DType::I32)),
        store(&to_u, tx(), xv.clone().cast(DType::I32).cast(DType::U32)),
        store(&to_b, tx(), xv.clone().cast(DType::Bool).cast(DType::F32)),
        store(&to_h, tx(), xv.cast(DType::F16)),
        if_(
            tx().eq_(0),
            KStmt::seq(vec![
                store(&wrap_i, int(0), Expr::int(i32::MAX as i64) + 1),
                store(
                    &wrap_u,
                    int(0),
                    Expr::Int(0, DType::U32) - Expr::Int(1, DType::U32),
                ),
            ]),
        ),
    ]);
    let outs = [&to_i, &to_u, &to_b, &to_h, &wrap_i, &wrap_u];
    let mut params = vec![param(&x, Access::Read)];
    params.extend(outs.iter().map(|o| param(o, Access::Write)));
    let k = kernel("casts", params, [1, 1, 1], [m as u32, 1, 1], body);
    let mut data = vec![(&x, TensorData::F32(xs.to_vec()))];
    data.extend(
        outs.iter()
            .map(|o| (*o, TensorData::poisoned(o.dtype(), o.numel() as usize))),
    );
    let res = run_one(&k, data).unwrap();
    assert_eq!(res[1], TensorData::I32(vec![-2, 3, 0, 0, i32::MAX, 0]));
    assert_eq!(
        res[2],
        TensorData::U32(vec![(-2i32) as u32, 3, 0, 0, i32::MAX as u32, 0])
    );
    assert_eq!(res[3], TensorData::F32(vec![1.0, 1.0, 0.0, 0.0, 1.0, 1.0]));
    assert_eq!(
        res[4],
        TensorData::F16(xs.iter().map(|&v| f16::from_f32(v)).collect())
    );
    assert_eq!(res[5], TensorData::I32(vec![i32::MIN]));
    assert_eq!(res[6], TensorData::U32(vec![u32::MAX]));
}

/// Intrinsics are computed in f64 and rounded once to f32.
#[test]
fn intrinsics() {
    use weft_ir::expr::Intrinsic::{self, *};
    let n = 64;
    let x = global("x", n, DType::F32);
    type Reference = fn(f64) -> f64;
    let fs: [(Intrinsic, Reference); 6] = [
        (Exp, f64::exp),
        (Sigmoid, |v| 1.0 / (1.0 + (-v).exp())),
        (Rsqrt, |v| 1.0 / v.abs().sqrt()),
        (Tanh, f64::tanh),
        (Floor, f64::floor),
        (Abs, f64::abs),
    ];
    let outs: Vec<Buffer> = fs
        .iter()
        .map(|(f, _)| global(f.name(), n, DType::F32))
        .collect();
    let body = KStmt::seq(
        fs.iter()
            .zip(&outs)
            .map(|((f, _), o)| {
                let arg = if *f == Rsqrt {
                    Expr::call(Abs, vec![load(&x, tx())])
                } else {
                    load(&x, tx())
                };
                store(o, tx(), Expr::call(*f, vec![arg]))
            })
            .collect(),
    );
    let mut params = vec![param(&x, Access::Read)];
    params.extend(outs.iter().map(|o| param(o, Access::Write)));
    let k = kernel("intrinsics", params, [1, 1, 1], [n as u32, 1, 1], body);
    let mut rng = StdRng::seed_from_u64(7);
    let xs: Vec<f32> = (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect();
    let mut data = vec![(&x, TensorData::F32(xs.clone()))];
    data.extend(
        outs.iter()
            .map(|o| (o, TensorData::poisoned(DType::F32, n as usize))),
    );
    let res = run_one(&k, data).unwrap();
    for ((f, r), got) in fs.iter().zip(&res[1..]) {
        let want: Vec<f32> = xs.iter().map(|&v| r(v as f64) as f32).collect();
        assert_eq!(got, &TensorData::F32(want), "{}", f.name());
    }
}

/// A test-side expression: random trees, evaluated by the interpreter and by `eval`.
#[derive(Clone, Debug)]
enum E {
    Thread,
    Input,
    Const(i32),
    Bin(BinOp, Box<E>, Box<E>),
    /// `op` by a non-zero constant.
    DivBy(BinOp, Box<E>, i32),
    Select(BinOp, Box<E>, Box<E>, Box<E>, Box<E>),
}

fn to_expr(e: &E, input: &Buffer) -> Expr {
    match e {
        E::Thread => tx(),
        E::Input => load(input, tx()),
        E::Const(c) => int(*c as i64),
        E::Bin(op, a, b) => bin(*op, to_expr(a, input), to_expr(b, input)),
        E::DivBy(op, a, c) => bin(*op, to_expr(a, input), int(*c as i64)),
        E::Select(cmp, a, b, x, y) => Expr::select(
            bin(*cmp, to_expr(a, input), to_expr(b, input)),
            to_expr(x, input),
            to_expr(y, input),
        ),
    }
}

/// The reference: 64-bit arithmetic reduced to 32 bits after every operation.
fn eval(e: &E, t: i64, input: &[i32]) -> i64 {
    let w = |v: i64| v as i32 as i64;
    match e {
        E::Thread => t,
        E::Input => input[t as usize] as i64,
        E::Const(c) => *c as i64,
        E::Bin(op, a, b) => {
            let (x, y) = (eval(a, t, input), eval(b, t, input));
            match op {
                BinOp::Add => w(x + y),
                BinOp::Sub => w(x - y),
                BinOp::Mul => w(x * y),
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                _ => unreachable!("not generated"),
            }
        }
        E::DivBy(op, a, c) => {
            let (x, c) = (eval(a, t, input), *c as i64);
            let floor = (x as f64 / c as f64).floor() as i64;
            w(match op {
                BinOp::Div => x / c,
                BinOp::Mod => x % c,
                BinOp::FloorDiv => floor,
                BinOp::FloorMod => x - c * floor,
                _ => unreachable!("not generated"),
            })
        }
        E::Select(cmp, a, b, x, y) => {
            let (p, q) = (eval(a, t, input), eval(b, t, input));
            let taken = match cmp {
                BinOp::Lt => p < q,
                BinOp::Le => p <= q,
                BinOp::Eq => p == q,
                _ => p != q,
            };
            if taken {
                eval(x, t, input)
            } else {
                eval(y, t, input)
            }
        }
    }
}

fn expr_tree() -> impl proptest::strategy::Strategy<Value = E> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(E::Thread),
        Just(E::Input),
        (-1000i32..1000).prop_map(E::Const),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        let arith = prop_oneof![
            Just(BinOp::Add),
            Just(BinOp::Sub),
            Just(BinOp::Mul),
            Just(BinOp::Min),
            Just(BinOp::Max)
        ];
        let div = prop_oneof![
            Just(BinOp::Div),
            Just(BinOp::Mod),
            Just(BinOp::FloorDiv),
            Just(BinOp::FloorMod)
        ];
        let cmp = prop_oneof![
            Just(BinOp::Lt),
            Just(BinOp::Le),
            Just(BinOp::Eq),
            Just(BinOp::Ne)
        ];
        let divisor = prop_oneof![-9i32..=-1, 1i32..=9];
        prop_oneof![
            (arith, inner.clone(), inner.clone()).prop_map(|(op, a, b)| E::Bin(
                op,
                Box::new(a),
                Box::new(b)
            )),
            (div, inner.clone(), divisor).prop_map(|(op, a, c)| E::DivBy(op, Box::new(a), c)),
            (cmp, inner.clone(), inner.clone(), inner.clone(), inner).prop_map(
                |(c, a, b, x, y)| E::Select(c, Box::new(a), Box::new(b), Box::new(x), Box::new(y))
            ),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
    /// Random i32 expressions over the thread index and loaded values, against a 64-bit
    /// reference, over 2 blocks of 8 threads.
    #[test]
    fn random_int_expressions(e in expr_tree(), input in proptest::collection::vec(-5000i32..5000, 16)) {
        let (inp, out) = (global("inp", 16, DType::I32), global("out", 16, DType::I32));
        let i = Var::index("i");
        let body = let_(&i, bx() * 8 + tx(), store(&out, i.expr(), to_expr(&e, &inp)));
        let k = kernel("rand", vec![param(&inp, Access::Read), param(&out, Access::Write)], [2, 1, 1], [8, 1, 1], body);
        let res = run_one(&k, vec![(&inp, TensorData::I32(input.clone())), (&out, TensorData::poisoned(DType::I32, 16))]).unwrap();
        let want: Vec<i32> = (0..16).map(|g| eval(&e, g % 8, &input) as i32).collect();
        proptest::prop_assert_eq!(&res[1], &TensorData::I32(want), "{:?}", e);
    }
}

//! The te front end: dtypes, casts, intrinsics, reductions and select, lowered and run
//! in the interpreter against references computed here; and te's typed errors.

use half::f16;
use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::interp;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::schedule::Schedule;
use weft_ir::te::TeError;

fn rng() -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(42)
}

/// Lowers a Func scheduled with the outermost loop split over blocks of 32 threads.
fn lowered(f: weft_ir::func::Func, block: &str) -> weft_ir::kernel::LoweredFunc {
    let mut s = Schedule::new(f);
    let b = s.get_block(block).unwrap();
    let l = s.get_loops(b).unwrap();
    let p = s.split(l[0], &[None, Some(32)]).unwrap();
    s.bind(p[0], ThreadAxis::BlockIdxX).unwrap();
    s.bind(p[1], ThreadAxis::ThreadIdxX).unwrap();
    lower(s.func()).unwrap()
}

#[test]
fn f16_with_casts_and_intrinsics() {
    let n = 100;
    let x = te::placeholder("X", &[n], DType::F16);
    let y = te::compute("Y", &[("i", n)], |i| {
        te::cast(
            te::exp(te::cast(x.at(&[&i[0]]), DType::F32)) * 0.5f32,
            DType::F16,
        )
    });
    let l = lowered(te::create_func("f16", [&x, &y]).unwrap(), "Y");
    let mut r = rng();
    let xs: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(r.random::<f32>() * 4.0 - 2.0))
        .collect();
    let mut args = vec![
        Arg::Tensor(TensorData::F16(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::F16, n as usize)),
    ];
    interp::run(&l, &mut args).unwrap();
    let Arg::Tensor(TensorData::F16(out)) = &args[1] else {
        panic!("dtype")
    };
    for (o, x) in out.iter().zip(&xs) {
        let want = f16::from_f32(((x.to_f32() as f64).exp() as f32) * 0.5);
        assert_eq!(o.to_bits(), want.to_bits(), "exp({x}) * 0.5");
    }
}

#[test]
fn max_reduction_and_select() {
    let (m, n) = (40, 17);
    let x = te::placeholder("X", &[m, n], DType::F32);
    let k = te::reduce_axis("k", n);
    let mx = te::compute("M", &[("i", m)], |i| {
        te::max(x.at(&[i[0].clone(), k.expr()]), &[&k])
    });
    let y = te::compute("Y", &[("i", m)], |i| {
        te::select(
            mx.at(&[&i[0]]).gt(0.5f32),
            mx.at(&[&i[0]]),
            te::sqrt(mx.at(&[&i[0]]).max(0.0f32)),
        )
    });
    let mut s = Schedule::new(te::create_func("rowmax", [&x, &y]).unwrap());
    let b = s.get_block("M").unwrap();
    // A reduction cannot be inlined.
    s.compute_inline(b).unwrap_err();
    let lb = s.get_loops(b).unwrap();
    s.bind(lb[0], ThreadAxis::ThreadIdxX).unwrap();
    let by = s.get_block("Y").unwrap();
    let ly = s.get_loops(by).unwrap();
    s.bind(ly[0], ThreadAxis::ThreadIdxX).unwrap();
    let l = lower(s.func()).unwrap();
    assert_eq!(
        l.kernels.len(),
        2,
        "M and Y are two kernels with M as a temporary"
    );
    assert_eq!(l.temps.len(), 1);
    let mut r = rng();
    let xs: Vec<f32> = (0..m * n).map(|_| r.random::<f32>() - 0.3).collect();
    let mut args = vec![
        Arg::Tensor(TensorData::F32(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::F32, m as usize)),
    ];
    interp::run(&l, &mut args).unwrap();
    let Arg::Tensor(TensorData::F32(out)) = &args[1] else {
        panic!("dtype")
    };
    for i in 0..m as usize {
        let row = &xs[i * n as usize..(i + 1) * n as usize];
        let mv = row.iter().cloned().fold(f32::MIN, f32::max);
        let want = if mv > 0.5 { mv } else { mv.max(0.0).sqrt() };
        assert_eq!(out[i], want, "row {i}");
    }
}

#[test]
fn integer_floor_division_of_negative_values() {
    let n = 64;
    let a = te::placeholder("A", &[n], DType::I32);
    let z = te::compute("Z", &[("i", n)], |i| {
        let v = a.at(&[&i[0]]);
        v.clone().floordiv(3) * 10 + v.floormod(3)
    });
    let l = lowered(te::create_func("ints", [&a, &z]).unwrap(), "Z");
    let mut r = rng();
    let xs: Vec<i32> = (0..n).map(|_| r.random_range(-50..50)).collect();
    let mut args = vec![
        Arg::Tensor(TensorData::I32(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::I32, n as usize)),
    ];
    interp::run(&l, &mut args).unwrap();
    let Arg::Tensor(TensorData::I32(out)) = &args[1] else {
        panic!("dtype")
    };
    for (o, x) in out.iter().zip(&xs) {
        assert_eq!(*o, x.div_euclid(3) * 10 + x.rem_euclid(3), "x = {x}");
    }
    // The lowered kernel has no floor operators left.
    let text = format!("{l}");
    assert!(!text.contains("FloorDiv"), "{text}");
}

#[test]
fn u32_arithmetic_and_scalar_parameter() {
    let n = 50;
    let a = te::placeholder("A", &[n], DType::U32);
    let s = te::scalar("s", DType::U32);
    let z = te::compute("Z", &[("i", n)], |i| a.at(&[&i[0]]) * s.expr() + 1);
    let l = lowered(
        te::create_func(
            "u32s",
            [
                a.clone().into(),
                s.clone().into(),
                weft_ir::func::Param::Buffer(z),
            ],
        )
        .unwrap(),
        "Z",
    );
    let xs: Vec<u32> = (0..n as u32).map(|i| i * 7919).collect();
    let mut args = vec![
        Arg::Tensor(TensorData::U32(xs.clone())),
        Arg::Scalar(weft_ir::data::Scalar::U32(3)),
        Arg::Tensor(TensorData::poisoned(DType::U32, n as usize)),
    ];
    interp::run(&l, &mut args).unwrap();
    let Arg::Tensor(TensorData::U32(out)) = &args[2] else {
        panic!("dtype")
    };
    for (o, x) in out.iter().zip(&xs) {
        assert_eq!(*o, x.wrapping_mul(3).wrapping_add(1));
    }
}

#[test]
fn errors_name_the_tensor() {
    let a = te::placeholder("A", &[4, 4], DType::F32);
    let bad = te::compute("B", &[("i", 4)], |i| a.at(&[&i[0]]));
    let e = te::create_func("f", [&a, &bad]).unwrap_err();
    assert!(
        matches!(
            e,
            TeError::IndexCount {
                got: 1,
                want: 2,
                ..
            }
        ),
        "{e}"
    );

    let h = te::placeholder("H", &[4], DType::F16);
    let mixed = te::compute("M", &[("i", 4)], |i| h.at(&[&i[0]]) + a.at(&[&i[0], &i[0]]));
    let e = te::create_func("f", [&h, &a, &mixed]).unwrap_err();
    assert!(matches!(e, TeError::Type { .. }), "{e}");
    assert!(
        e.to_string().contains("`M`") && e.to_string().contains("cast"),
        "{e}"
    );

    let zero = te::placeholder("Z", &[0], DType::F32);
    let c = te::compute("C", &[("i", 1)], |_| zero.at(&[Expr::int(0)]));
    assert!(matches!(
        te::create_func("f", [&zero, &c]).unwrap_err(),
        TeError::BadExtent { .. }
    ));

    let hidden = te::placeholder("Hidden", &[4], DType::F32);
    let c = te::compute("C", &[("i", 4)], |i| hidden.at(&[&i[0]]));
    assert!(matches!(
        te::create_func("f", [&c]).unwrap_err(),
        TeError::UnboundInput { .. }
    ));

    let k = te::reduce_axis("k", 4);
    let c = te::compute("C", &[("i", 4)], |i| {
        te::sum(a.at(&[i[0].clone(), k.expr()]), &[&k]) + 1.0f32
    });
    assert!(matches!(
        te::create_func("f", [&a, &c]).unwrap_err(),
        TeError::NestedReduce { .. }
    ));

    let c = te::compute("A", &[("i", 4)], |i| a.at(&[&i[0], &i[0]]));
    assert!(matches!(
        te::create_func("f", [&a, &c]).unwrap_err(),
        TeError::DuplicateName { .. }
    ));

    let stray = Var::index("stray");
    let c = te::compute("C", &[("i", 4)], |i| a.at(&[i[0].clone(), stray.expr()]));
    assert!(matches!(
        te::create_func("f", [&a, &c]).unwrap_err(),
        TeError::UnboundVar { .. }
    ));

    assert!(matches!(
        te::create_func::<&Buffer>("f", []).unwrap_err(),
        TeError::NoOutput
    ));
}

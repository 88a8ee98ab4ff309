//! Element types other than f32 end to end, on every available target: a bool tensor (held
//! in device memory as 32-bit words), an f16 tensor, and i32 floor division of negative
//! values, each against a reference computed here.

use half::f16;
use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::kernel::LoweredFunc;
use weft_ir::prelude::*;
use weft_ir::schedule::Schedule;
use weft_testkit::devices::open_or_skip;
use weft_tests::testgen;

testgen!(bool_mask, f16_scale, i32_floor_division);

/// Splits the outermost loop of every block over blocks of 64 threads.
fn lowered(func: weft_ir::func::Func) -> LoweredFunc {
    let mut s = Schedule::new(func);
    let names: Vec<String> = s
        .func()
        .body
        .blocks()
        .iter()
        .map(|r| r.block.name.clone())
        .collect();
    for name in names {
        let b = s.get_block(&name).unwrap();
        let l = s.get_loops(b).unwrap();
        let p = s.split(l[0], &[None, Some(64)]).unwrap();
        s.bind(p[0], ThreadAxis::BlockIdxX).unwrap();
        s.bind(p[1], ThreadAxis::ThreadIdxX).unwrap();
    }
    weft_ir::lower::lower(s.func()).unwrap()
}

fn run(target: &str, func: &LoweredFunc, args: &mut [Arg]) -> bool {
    let Some(mut device) = open_or_skip(target) else {
        return false;
    };
    if let Err(e) = device.run(func, args) {
        panic!("{target}: {e}");
    }
    true
}

/// `M = A > 0.5` (a bool output) and `Y = select(M, A, -A)` reading it back.
fn bool_mask(target: &str) {
    let n = 300;
    let a = te::placeholder("A", &[n], DType::F32);
    let m = te::compute("M", &[("i", n)], |i| a.at(&[&i[0]]).gt(0.5f32));
    let y = te::compute("Y", &[("i", n)], |i| {
        te::select(m.at(&[&i[0]]), a.at(&[&i[0]]), -a.at(&[&i[0]]))
    });
    let func = lowered(te::create_func("mask", [&a, &m, &y]).unwrap());
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let xs: Vec<f32> = (0..n).map(|_| rng.random()).collect();
    let mut args = vec![
        Arg::Tensor(TensorData::F32(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::Bool, n as usize)),
        Arg::Tensor(TensorData::poisoned(DType::F32, n as usize)),
    ];
    if !run(target, &func, &mut args) {
        return;
    }
    let (Arg::Tensor(TensorData::U32(mask)), Arg::Tensor(TensorData::F32(out))) =
        (&args[1], &args[2])
    else {
        panic!("{target}: unexpected output types");
    };
    for (k, x) in xs.iter().enumerate() {
        assert_eq!(mask[k], (*x > 0.5) as u32, "{target}: M[{k}]");
        assert_eq!(out[k], if *x > 0.5 { *x } else { -x }, "{target}: Y[{k}]");
    }
}

/// `Y = f16(f32(X) * 1.5 + 0.25)` on f16 tensors (targets without f16 skip).
fn f16_scale(target: &str) {
    let n = 200;
    let x = te::placeholder("X", &[n], DType::F16);
    let y = te::compute("Y", &[("i", n)], |i| {
        te::cast(
            te::cast(x.at(&[&i[0]]), DType::F32) * 1.5f32 + 0.25f32,
            DType::F16,
        )
    });
    let func = lowered(te::create_func("half_scale", [&x, &y]).unwrap());
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let xs: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(rng.random::<f32>() * 8.0 - 4.0))
        .collect();
    let mut args = vec![
        Arg::Tensor(TensorData::F16(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::F16, n as usize)),
    ];
    let Some(mut device) = open_or_skip(target) else {
        return;
    };
    match device.run(&func, &mut args) {
        Ok(()) => {}
        Err(e) if e.to_string().contains("f16") => {
            eprintln!("skipped f16 on {target}: {e}");
            return;
        }
        Err(e) => panic!("{target}: {e}"),
    }
    let Arg::Tensor(TensorData::F16(out)) = &args[1] else {
        panic!("{target}: unexpected output type");
    };
    for (k, v) in xs.iter().enumerate() {
        let want = f16::from_f32(v.to_f32() * 1.5 + 0.25);
        assert_eq!(out[k].to_bits(), want.to_bits(), "{target}: Y[{k}] for {v}");
    }
}

/// `Z = A // 7 * 100 + A % 7` on negative and positive i32 values (floor semantics).
fn i32_floor_division(target: &str) {
    let n = 256;
    let a = te::placeholder("A", &[n], DType::I32);
    let z = te::compute("Z", &[("i", n)], |i| {
        let v = a.at(&[&i[0]]);
        v.clone().floordiv(7) * 100 + v.floormod(7)
    });
    let func = lowered(te::create_func("floors", [&a, &z]).unwrap());
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let xs: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
    let mut args = vec![
        Arg::Tensor(TensorData::I32(xs.clone())),
        Arg::Tensor(TensorData::poisoned(DType::I32, n as usize)),
    ];
    if !run(target, &func, &mut args) {
        return;
    }
    let Arg::Tensor(TensorData::I32(out)) = &args[1] else {
        panic!("{target}: unexpected output type");
    };
    for (k, x) in xs.iter().enumerate() {
        assert_eq!(
            out[k],
            x.div_euclid(7) * 100 + x.rem_euclid(7),
            "{target}: Z[{k}] for {x}"
        );
    }
}

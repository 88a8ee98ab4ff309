//! ndarray in and out: inputs by position, typed errors naming the parameter, outputs in
//! parameter order, on every device this machine has.

mod common;

use ndarray::{ArrayD, IxDyn};
use weft_ir::data::Scalar;
use weft_runtime::array::{
    ArrayError, HostArray, Input, input_params, output_params, run, run_f32,
};
use weft_testkit::devices::open_or_skip;

fn vector(n: usize, seed: f32) -> ArrayD<f32> {
    ArrayD::from_shape_fn(IxDyn(&[n]), |i| (i[0] as f32 * 0.37 + seed).sin())
}

#[test]
fn inputs_and_outputs_are_classified() {
    let f = common::axpy();
    let names = |ps: Vec<&weft_ir::func::Param>| -> Vec<String> {
        ps.iter().map(|p| p.name().to_string()).collect()
    };
    assert_eq!(names(input_params(&f)), ["X", "alpha", "Y"]);
    assert_eq!(names(output_params(&f)), ["Z"]);
    let f = common::two_kernels();
    assert_eq!(names(input_params(&f)), ["A", "B"]);
    assert_eq!(names(output_params(&f)), ["C"]);
}

#[test]
fn runs_from_arrays_on_every_device() {
    let n = common::N as usize;
    for target in ["cpu", "vulkan", "cuda"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let (a, b) = (vector(n, 0.0), vector(n, 1.0));
        let out = run_f32(dev.as_mut(), &common::vecadd(), &[a.clone(), b.clone()])
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(out.len(), 1);
        let want = &a + &b;
        assert_eq!(out[0].shape(), &[n]);
        for (g, w) in out[0].iter().zip(want.iter()) {
            assert!((g - w).abs() < 1e-6, "{target}: {g} vs {w}");
        }

        let x = vector(n, 2.0);
        let y = vector(n, 3.0);
        let inputs = [
            Input::from(x.clone()),
            Input::Scalar(Scalar::F32(-0.5)),
            Input::from(y.clone()),
        ];
        let outs = run(dev.as_mut(), &common::axpy(), &inputs).expect("axpy runs");
        assert_eq!(outs[0].name, "Z");
        let HostArray::F32(z) = &outs[0].array else {
            panic!("Z is f32")
        };
        for ((z, x), y) in z.iter().zip(x.iter()).zip(y.iter()) {
            assert!((z - (-0.5 * x + y)).abs() < 1e-6);
        }
    }
}

#[test]
fn non_standard_layouts_are_read_in_logical_order() {
    let mut dev = weft_runtime::cpu::CpuDevice::new();
    let n = common::N as usize;
    // A reversed view: logical element i is memory element n-1-i.
    let a = vector(n, 0.0);
    let reversed = a.slice(ndarray::s![..;-1]).to_owned().into_dyn();
    let view = reversed.slice(ndarray::s![..;-1]).into_owned().into_dyn();
    let zeros = ArrayD::<f32>::zeros(IxDyn(&[n]));
    let out = run_f32(&mut dev, &common::vecadd(), &[view, zeros]).expect("runs");
    assert_eq!(out[0], a);
}

#[test]
fn errors_name_the_parameter() {
    let mut dev = weft_runtime::cpu::CpuDevice::new();
    let n = common::N as usize;
    let f = common::vecadd();

    let e = run_f32(&mut dev, &f, &[vector(n, 0.0)]).expect_err("one input short");
    assert!(matches!(e, ArrayError::InputCount { got: 1, .. }), "{e}");
    assert!(e.to_string().contains("A, B"), "{e}");

    let e = run_f32(&mut dev, &f, &[vector(n, 0.0), vector(n + 1, 0.0)]).expect_err("shape");
    assert!(
        e.to_string().contains("`B`") && e.to_string().contains("1001"),
        "{e}"
    );

    let two_d = ArrayD::<f32>::zeros(IxDyn(&[10, 100]));
    let e = run_f32(&mut dev, &f, &[two_d, vector(n, 0.0)]).expect_err("rank");
    assert!(
        matches!(e, ArrayError::Shape { ref param, .. } if param == "A"),
        "{e}"
    );

    let ints = Input::from(ArrayD::<i32>::zeros(IxDyn(&[n])));
    let e = run(&mut dev, &f, &[Input::from(vector(n, 0.0)), ints]).expect_err("dtype");
    assert!(e.to_string().contains("`B` has dtype f32, got i32"), "{e}");

    let inputs = [
        Input::from(vector(n, 0.0)),
        Input::from(vector(n, 0.0)),
        Input::from(vector(n, 0.0)),
    ];
    let e = run(&mut dev, &common::axpy(), &inputs).expect_err("array for a scalar");
    assert!(
        e.to_string().contains("`alpha` is a scalar, got a array"),
        "{e}"
    );

    let inputs = [
        Input::from(vector(n, 0.0)),
        Input::Scalar(Scalar::I32(1)),
        Input::from(vector(n, 0.0)),
    ];
    let e = run(&mut dev, &common::axpy(), &inputs).expect_err("scalar dtype");
    assert!(
        e.to_string().contains("`alpha` has dtype f32, got i32"),
        "{e}"
    );
}

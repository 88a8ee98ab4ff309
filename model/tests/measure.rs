//! The one measurement path compiles, loads, runs, checks and times a model on the
//! interpreter; the executable it loads needs nothing of the compiled model.

use ndarray::{ArrayD, IxDyn};
use weft_graph::passes::Precision;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::measure::{Measure, Reference, Step, measure, tolerance};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_runtime::cpu::CpuDevice;

/// `relu(x · w)`, small enough for the interpreter.
fn product() -> Graph {
    let mut b = GraphBuilder::new("product");
    let x = b.input("x", &[4, 8], DType::F32);
    let w = b.weight(
        "w",
        ArrayD::from_shape_fn(IxDyn(&[8, 5]), |i| (i[0] as f32 - i[1] as f32) * 0.25),
    );
    let y = b.node("mm", weft_graph::Op::MatMul, &[x, w]).unwrap();
    let y = b.relu("relu", y).unwrap();
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn one_path_compiles_loads_runs_checks_and_times() {
    let g = product();
    let mut dev = CpuDevice::new();
    let inputs = weft_graph::inputs::random_inputs(&g, 3);
    let m = Measure {
        inputs: Some(&inputs),
        reference: Reference::Float64,
        warmup: 0,
        iters: 1,
        whole: true,
        each: true,
    };
    let measured = measure(&g, &mut dev, &CompileOptions::default(), &m).unwrap();
    assert!(measured.wrong().is_none(), "{measured:?}");
    assert_eq!(measured.checked.len(), 1);
    assert_eq!(measured.checked[0].name, "relu");
    assert_eq!(measured.checked[0].tolerance, tolerance(Precision::F32));
    assert_eq!(measured.replayed.len(), 1);
    assert!(measured.whole.is_some());
    assert_eq!(measured.each.len(), measured.model.groups.len());
    // Against outputs that disagree — a NaN where weft has a number — it is wrong, and
    // says which output.
    let mut want: Vec<ArrayD<f64>> = measured.outputs.iter().map(|o| o.mapv(f64::from)).collect();
    want[0][[0, 0]] = f64::NAN;
    let m = Measure {
        reference: Reference::Outputs(&want),
        whole: false,
        each: false,
        ..m
    };
    let measured = measure(&g, &mut dev, &CompileOptions::default(), &m).unwrap();
    let wrong = measured.wrong().expect("a NaN is never within tolerance");
    assert_eq!((wrong.name.as_str(), wrong.error), ("relu", f64::INFINITY));
    assert!(measured.replayed.is_empty() && measured.whole.is_none());
    // Inputs of the wrong shape fail the run, named.
    let bad = vec![ArrayD::zeros(IxDyn(&[2, 8]))];
    let m = Measure {
        inputs: Some(&bad),
        ..m
    };
    let e = measure(&g, &mut dev, &CompileOptions::default(), &m).unwrap_err();
    assert_eq!(e.step, Step::Run);
    assert!(e.to_string().contains("input `x`"), "{e}");
}

#[test]
fn the_executable_runs_without_the_compiled_model() {
    let g = product();
    let mut dev = CpuDevice::new();
    let exe = {
        let model = CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
        model.load(&mut dev).unwrap()
    };
    let inputs = weft_graph::inputs::random_inputs(&g, 4);
    let got = exe.run(&mut dev, &inputs).unwrap();
    assert_eq!(exe.output_tensors()[0].shape, [4, 5]);
    assert_eq!(exe.groups().len(), 1);
    assert_eq!(exe.launches().len(), exe.groups()[0].launches().len());
    let again = exe.outputs(&mut dev).unwrap();
    assert_eq!(got, again);
    exe.free(&mut dev);
}

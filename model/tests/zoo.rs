//! The zoo's three networks end to end at small resolutions — passes, partition, every
//! kernel, the plan, one launch list — against the float64 reference of the same graph:
//! on lavapipe (wgpu) in CI, on the interpreter where it fits, on CUDA where there is a
//! GPU.

use ndarray::{ArrayD, IxDyn};
use weft_graph::reference::evaluate;
use weft_graph::zoo::{self, ZooOptions};
use weft_model::CompiledModel;
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

/// Normalized error `max |weft − ref| / max |ref|` allowed in f32 (measured: a few 1e-6).
const TOLERANCE: f64 = 1e-4;

fn check(dev: &mut dyn Device, name: &str, batch: usize, resolution: usize) {
    let mut opts = ZooOptions::for_model(name).unwrap();
    opts.batch = batch;
    opts.resolution = resolution;
    let g = zoo::build(name, &opts).unwrap();
    let model = CompiledModel::compile(&g, &dev.limits()).unwrap();
    let loaded = model.load(dev).unwrap();
    let mut seed = 0x5eedu64;
    let x = ArrayD::from_shape_fn(IxDyn(&g.tensor(g.inputs[0]).shape), |_| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    });
    let got = loaded.run(&model, dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(&g, &[x.mapv(f64::from)]).unwrap();
    let scale = want[0].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = got[0]
        .iter()
        .zip(want[0].iter())
        .map(|(a, b)| (f64::from(*a) - b).abs())
        .fold(
            0.0f64,
            |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
        )
        / scale;
    eprintln!(
        "{name} batch {batch} at {resolution}: {} kernels, error {err:.2e}",
        model.kernel_count()
    );
    assert!(
        err <= TOLERANCE,
        "{name}: error {err:.2e} above {TOLERANCE:e}\n{}",
        model.show()
    );
}

#[test]
fn zoo_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        // ResNet-50 and Inception-V3 run on lavapipe against ONNX Runtime in weft-onnx's
        // tests (models.rs); here a batch of two against the float64 reference.
        check(dev.as_mut(), "mobilenet_v2", 2, 32);
    }
}

#[test]
fn mobilenet_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check(dev.as_mut(), "mobilenet_v2", 1, 16);
    }
}

#[test]
fn zoo_on_cuda() {
    if let Some(mut dev) = open_or_skip("cuda") {
        check(dev.as_mut(), "mobilenet_v2", 2, 96);
        check(dev.as_mut(), "resnet50", 1, 224);
        check(dev.as_mut(), "inception_v3", 1, 299);
    }
}

//! Global pools over channels-last f16 images in two reductions (`model/src/lower/
//! pool_nhwc.rs`: chunks of pixels a thread, threads on consecutive channels, then the
//! chunks combined with the group's epilogue): a squeeze-and-excitation block (the
//! average pool, a 1×1 convolution, a sigmoid, the product with the image) and a max
//! pool over an image whose pixel count has no divisor past the chunk (29×31: one
//! chunk), against the graph's float64 reference on the interpreter (plain CUDA's and
//! Hopper's limits) at odd sizes; on lavapipe the row template, as Vulkan keeps it.

use ndarray::ArrayD;
use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_graph::op::{Binary, Conv, PoolKind, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_runtime::cpu::CpuDevice;
use weft_testkit::compare::normalized_error;
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

const A: [usize; 4] = [3, 24, 28, 30];
const B: [usize; 4] = [2, 16, 29, 31];

/// Two images: `a` through a 3×3 convolution (stored NHWC f16) and a squeeze and
/// excitation; `b` through a 1×1 convolution and a global max pool.
fn net() -> Graph {
    net_of(A, B)
}

fn net_of(a: [usize; 4], x: [usize; 4]) -> Graph {
    let (shape_a, shape_b) = (a, x);
    let mut v = Values(61);
    let mut b = GraphBuilder::new("pools");
    let a = b.input("a", &shape_a, DType::F32);
    let w1 = b.weight("w1", v.array(&[40, 24, 3, 3], 0.15));
    let y = b.conv("conv", a, w1, None, Conv::new(1, 1)).unwrap();
    let y = b.relu("relu", y).unwrap();
    let s = b.global_pool("squeeze", PoolKind::Average, y).unwrap();
    let w2 = b.weight("w2", v.array(&[40, 40, 1, 1], 0.3));
    let s = b.conv("excite", s, w2, None, Conv::new(1, 0)).unwrap();
    let s = b.unary("gate", Unary::Sigmoid, s).unwrap();
    let y = b.binary("scale", Binary::Mul, y, s).unwrap();
    let x = b.input("b", &shape_b, DType::F32);
    let w3 = b.weight("w3", v.array(&[32, 16, 1, 1], 0.3));
    let z = b.conv("project", x, w3, None, Conv::new(1, 0)).unwrap();
    let z = b.global_pool("max", PoolKind::Max, z).unwrap();
    b.output(y);
    b.output(z);
    b.finish().unwrap()
}

/// The largest error of either output against the float64 reference, relative to its
/// largest magnitude.
fn error(g: &Graph, model: &CompiledModel, dev: &mut dyn Device) -> f64 {
    let loaded = model.load(dev).unwrap();
    let inputs: Vec<ArrayD<f32>> = vec![Values(5).array(&A, 1.0), Values(6).array(&B, 1.0)];
    let got = loaded.run(dev, &inputs).unwrap();
    loaded.free(dev);
    let want = evaluate(
        g,
        &inputs.iter().map(|x| x.mapv(f64::from)).collect::<Vec<_>>(),
    )
    .unwrap();
    got.iter()
        .zip(&want)
        .map(|(got, want)| normalized_error(got, want))
        .fold(0.0, f64::max)
}

/// f16 activations and weights, f32 sums.
const F16_TOLERANCE: f64 = 1e-2;

fn check(limits: &TargetLimits, dev: &mut dyn Device) {
    check_in(limits, dev, Precision::F16, F16_TOLERANCE);
}

fn check_in(limits: &TargetLimits, dev: &mut dyn Device, precision: Precision, tolerance: f64) {
    let g = net();
    let model = CompiledModel::compile(
        &g,
        limits,
        &CompileOptions::default().with_precision(precision),
    )
    .unwrap();
    let text = model.show();
    assert!(
        text.contains("global pool over NHWC in two reductions: 24 chunks of 35 pixels"),
        "{text}"
    );
    assert!(
        text.contains("global pool over NHWC in two reductions: 1 chunks of 899 pixels"),
        "{text}"
    );
    let err = error(&g, &model, dev);
    eprintln!("{} {precision:?}: error {err:.2e}", dev.name());
    assert!(err <= tolerance, "{precision:?}: error {err:.2e}\n{text}");
}

/// The same pools over f32 channels-last images (`Precision::F32ChannelsLast`): f32's
/// rounding of sums of up to 899 terms.
#[test]
fn f32_nhwc_global_pools_are_right_on_the_interpreter() {
    let limits = TargetLimits::cuda();
    check_in(
        &limits,
        &mut CpuDevice::emulating(limits.clone()),
        Precision::F32ChannelsLast,
        1e-5,
    );
}

#[test]
fn nhwc_global_pools_are_right_on_the_interpreter() {
    let hopper = TargetLimits::cuda_arch(&cuda_arch("sm_90a").unwrap()).with_warpgroup_mma();
    for limits in [TargetLimits::cuda(), hopper] {
        check(&limits, &mut CpuDevice::emulating(limits.clone()));
    }
}

/// On Vulkan (no register cap: split untimed there) the pools keep the row template, and
/// the model is right on lavapipe.
#[test]
fn vulkan_keeps_the_row_template_and_is_right_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        let limits = dev.limits();
        assert!(!limits.register_cap);
        let g = net();
        let model = CompiledModel::compile(
            &g,
            &limits,
            &CompileOptions::default().with_precision(Precision::F16),
        )
        .unwrap();
        let text = model.show();
        assert!(!text.contains("two reductions"), "{text}");
        let err = error(&g, &model, dev.as_mut());
        assert!(err <= F16_TOLERANCE, "error {err:.2e}\n{text}");
    }
}

/// One image, or images under 28², keep the row template (measured slower split).
#[test]
fn one_image_or_small_images_keep_the_row_template() {
    let limits = TargetLimits::cuda();
    for (a, b) in [
        ([1, 24, 28, 30], [1, 16, 29, 31]),
        ([3, 24, 20, 30], [2, 16, 27, 29]),
    ] {
        let g = net_of(a, b);
        let model = CompiledModel::compile(
            &g,
            &limits,
            &CompileOptions::default().with_precision(Precision::F16),
        )
        .unwrap();
        let text = model.show();
        assert!(!text.contains("two reductions"), "{a:?} {b:?}: {text}");
    }
}

/// The chunk a thread walks: the smallest divisor of the pixel count from 32, the whole
/// image where there is none.
#[test]
fn chunks_tile_the_image() {
    use weft_model::lower::pool_chunk;
    assert_eq!(pool_chunk(56 * 56), 32);
    assert_eq!(pool_chunk(112 * 112), 32);
    assert_eq!(pool_chunk(14 * 14), 49);
    assert_eq!(pool_chunk(12 * 14), 42);
    assert_eq!(pool_chunk(11 * 13), 143);
    assert_eq!(pool_chunk(65), 65);
}

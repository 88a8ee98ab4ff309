//! 1×1 convolutions of stride 1 without padding over stored NHWC f16 inputs, read as the
//! stored products they are (the input's memory the `[N·H·W, C]` matrix, the filter's
//! the `[C, K]` one: `model/src/lower/conv.rs`, `pointwise_stored`), so that the fp16
//! template's whole space applies — Hopper's TMA + wgmma at any tile count. Checked
//! against the graph's float64 reference on the interpreter at odd sizes, under the
//! rule's configs and every wgmma tile of the space, whole and split; the 1×1 whose input
//! its epilogue reads again (a residual of its own input), a 3×3 and a strided 1×1 stay
//! with the implicit GEMM's views.

use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_graph::op::Conv;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_kernels::{Config, matmul_f16};
use weft_model::tune::{AnchorChoice, AnchorKey, Choices, Views};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_runtime::cpu::CpuDevice;
use weft_testkit::compare::normalized_error;
use weft_testkit::random::Values;

const IN: [usize; 4] = [2, 24, 7, 9];

/// A 3×3 convolution (bias, ReLU); a 1×1 to 40 channels with its bias, a residual of
/// a shortcut 1×1 over the graph's f32 NCHW input and ReLU fused (the pointwise one,
/// over the first's stored NHWC f16 output); a 1×1 of its own input's residual and a
/// strided 1×1 (both stay with the views).
fn cnn() -> Graph {
    let mut v = Values(41);
    let mut b = GraphBuilder::new("pointwise");
    let x = b.input("x", &IN, DType::F32);
    let w1 = b.weight("w1", v.array(&[40, 24, 3, 3], 0.15));
    let b1 = b.weight("b1", v.array(&[40], 0.1));
    let y = b.conv("conv3x3", x, w1, Some(b1), Conv::new(1, 1)).unwrap();
    let y = b.relu("relu1", y).unwrap();
    let w2 = b.weight("w2", v.array(&[40, 40, 1, 1], 0.2));
    let b2 = b.weight("b2", v.array(&[40], 0.1));
    let z = b
        .conv("pointwise", y, w2, Some(b2), Conv::new(1, 0))
        .unwrap();
    let w4 = b.weight("w4", v.array(&[40, 24, 1, 1], 0.2));
    let shortcut = b.conv("shortcut", x, w4, None, Conv::new(1, 0)).unwrap();
    let z = b.add("residual", z, shortcut).unwrap();
    let z = b.relu("relu2", z).unwrap();
    let w3 = b.weight("w3", v.array(&[40, 40, 1, 1], 0.2));
    let r = b
        .conv("own_residual", z, w3, None, Conv::new(1, 0))
        .unwrap();
    let r = b.add("residual2", r, z).unwrap();
    let w5 = b.weight("w5", v.array(&[56, 40, 1, 1], 0.2));
    let out = b.conv("strided", r, w5, None, Conv::new(2, 0)).unwrap();
    b.output(out);
    b.finish().unwrap()
}

fn hopper() -> TargetLimits {
    TargetLimits::cuda_arch(&cuda_arch("sm_90a").unwrap()).with_warpgroup_mma()
}

fn error(g: &Graph, model: &CompiledModel, dev: &mut dyn Device) -> f64 {
    let loaded = model.load(dev).unwrap();
    let x = Values(9).array(&IN, 1.0);
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(g, &[x.mapv(f64::from)]).unwrap();
    normalized_error(&got[0], &want[0])
}

/// f16 activations and weights, f32 sums, five layers.
const F16_TOLERANCE: f64 = 2e-2;

fn compile(g: &Graph, limits: &TargetLimits, choices: Option<Choices>) -> CompiledModel {
    let mut options = CompileOptions::default().with_precision(Precision::F16);
    if let Some(c) = choices {
        options = options.with_choices(c);
    }
    CompiledModel::compile(g, limits, &options).unwrap()
}

fn anchors(model: &CompiledModel) -> Vec<AnchorKey> {
    model
        .groups
        .iter()
        .filter_map(|g| g.anchor.clone())
        .collect()
}

#[test]
fn pointwise_convolutions_over_stored_inputs_are_stored_products() {
    for limits in [hopper(), TargetLimits::cuda()] {
        let model = compile(&cnn(), &limits, None);
        let keys = anchors(&model);
        let stored: Vec<_> = keys.iter().filter(|k| k.stored_operands()).collect();
        // The pointwise 1×1 alone: the shortcut reads the graph's f32 NCHW input, the
        // next 1×1 its own input again in its epilogue, the last is strided.
        assert_eq!(stored.len(), 1, "{}", model.show());
        assert!(
            stored.iter().all(|k| k.m == 2 * 7 * 9 && k.n == 40),
            "{stored:?}"
        );
        let views = keys
            .iter()
            .filter(|k| matches!(k.views, Views::Conv(_)))
            .count();
        assert_eq!(views, 4, "{}", model.show());
        let text = model.show();
        assert!(
            text.contains("1×1: its input and filter read as the stored matrices they are"),
            "{text}"
        );
        let err = error(&cnn(), &model, &mut CpuDevice::emulating(limits.clone()));
        assert!(err <= F16_TOLERANCE, "rule's configs: error {err:.2e}");
    }
}

/// Every wgmma tile of the space (both stage counts the rule weighs), whole and split in
/// 3, on the stored 1×1s: right on the interpreter, which runs TMA, mbarriers and wgmma.
#[test]
fn pointwise_convolutions_on_every_wgmma_tile_are_right() {
    let limits = hopper();
    let mut dev = CpuDevice::emulating(limits.clone());
    let g = cnn();
    let plain = compile(&g, &limits, None);
    let stored: Vec<AnchorKey> = anchors(&plain)
        .into_iter()
        .filter(|k| k.stored_operands())
        .collect();
    let wgmma: Vec<Config> = matmul_f16::space(&limits)
        .into_iter()
        .filter(|c| {
            c.get("wg").unwrap_or(0) > 0 && c.get("st") == Some(3) && c.get("fn") != Some(16)
        })
        .collect();
    assert!(!wgmma.is_empty());
    for config in &wgmma {
        for splits in [1, 3] {
            let mut choices = Choices::none();
            for key in &stored {
                choices.insert(
                    key,
                    AnchorChoice::gemm(config.clone(), splits),
                    "test".into(),
                );
            }
            let model = compile(&g, &limits, Some(choices));
            assert!(model.show().contains("wgmma"), "{config}");
            let err = error(&g, &model, &mut dev);
            assert!(
                err <= F16_TOLERANCE,
                "{config} split {splits}: error {err:.2e}"
            );
        }
    }
}

//! Convolutions of a whole model on Hopper's wgmma tiles over the implicit GEMM's views
//! (`cuda -arch=sm_90a`, the threads gathering the im2col tiles, TMA copying the HWIO
//! filter's, which is the `[R·S·C, K]` matrix): a small
//! NHWC f16 network — a 3×3 convolution with bias and ReLU, a 1×1 one with the residual
//! add and ReLU fused, a strided 3×3 one — with every convolution given a wgmma config
//! (whole, and split in 2 parts), run on the interpreter (which runs `cp.async`, the
//! proxy fence and `wgmma` and checks their orders) against the graph's float64
//! reference at odd sizes.

use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_graph::op::Conv;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_ir::fragment::FragOp;
use weft_ir::kernel::KStmt;
use weft_kernels::{Config, matmul_f16};
use weft_model::tune::{AnchorChoice, Choices, Views};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_runtime::cpu::CpuDevice;
use weft_testkit::compare::normalized_error;
use weft_testkit::random::Values;

fn cnn(batch: usize) -> Graph {
    let mut v = Values(31);
    let mut b = GraphBuilder::new("cnn");
    let x = b.input("x", &[batch, 16, 9, 11], DType::F32);
    let w1 = b.weight("w1", v.array(&[64, 16, 3, 3], 0.15));
    let b1 = b.weight("b1", v.array(&[64], 0.1));
    let y = b.conv("conv1", x, w1, Some(b1), Conv::new(1, 1)).unwrap();
    let y = b.relu("relu1", y).unwrap();
    let w2 = b.weight("w2", v.array(&[64, 64, 1, 1], 0.15));
    let r = b.conv("conv2", y, w2, None, Conv::new(1, 0)).unwrap();
    let r = b.add("residual", r, y).unwrap();
    let r = b.relu("relu2", r).unwrap();
    let w3 = b.weight("w3", v.array(&[72, 64, 3, 3], 0.1));
    let out = b.conv("conv3", r, w3, None, Conv::new(2, 1)).unwrap();
    b.output(out);
    b.finish().unwrap()
}

fn hopper() -> TargetLimits {
    TargetLimits::cuda_arch(&cuda_arch("sm_90a").unwrap()).with_warpgroup_mma()
}

/// The largest error of the output against the float64 reference, relative to the
/// output's largest magnitude.
fn error(g: &Graph, model: &CompiledModel, dev: &mut dyn Device, batch: usize) -> f64 {
    let loaded = model.load(dev).unwrap();
    let x = Values(7).array(&[batch, 16, 9, 11], 1.0);
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(g, &[x.mapv(f64::from)]).unwrap();
    normalized_error(&got[0], &want[0])
}

/// f16 activations and weights, f32 sums, three layers.
const F16_TOLERANCE: f64 = 2e-2;

#[test]
fn gathered_wgmma_convolutions_are_right_on_the_interpreter() {
    let limits = hopper();
    let mut dev = CpuDevice::emulating(limits.clone());
    let configs: Vec<Config> = matmul_f16::space_over_views(&limits)
        .into_iter()
        .filter(|c| {
            c.get("wg") == Some(1)
                && c.get("fm") == Some(1)
                && c.get("st") == Some(3)
                && c.get("fn") != Some(16)
        })
        .collect();
    assert_eq!(configs.len(), 2, "{configs:?}");
    let batch = 2;
    let g = cnn(batch);
    let plain = CompiledModel::compile(
        &g,
        &limits,
        &CompileOptions::default().with_precision(Precision::F16),
    )
    .unwrap();
    let convs: Vec<_> = plain
        .groups
        .iter()
        .filter_map(|g| g.anchor.clone())
        .filter(|k| matches!(k.views, Views::Conv(_)))
        .collect();
    assert_eq!(convs.len(), 3, "{}", plain.show());
    for config in &configs {
        for splits in [1, 2] {
            let mut choices = Choices::none();
            for key in &convs {
                choices.insert(
                    key,
                    AnchorChoice::gemm(config.clone(), splits),
                    "test".into(),
                );
            }
            let model = CompiledModel::compile(
                &g,
                &limits,
                &CompileOptions::default()
                    .with_precision(Precision::F16)
                    .with_choices(choices.clone()),
            )
            .unwrap();
            let text = model.show();
            assert_eq!(text.matches("wgmma").count(), 3, "{config}: {text}");
            // The filters of the two convolutions that read NHWC f16 (stored HWIO) come
            // by TMA, their im2col by the threads; the first reads the f32 NCHW input
            // (its filter stored `[C, R, S, K]`), its tiles all gathered.
            let tma = model
                .groups
                .iter()
                .flat_map(|g| &g.kernels.kernels)
                .filter(|k| {
                    let mut any = false;
                    k.body.visit(&mut |s| {
                        any |= matches!(s, KStmt::Frag(op) if matches!(**op, FragOp::Tma { .. }));
                    });
                    any
                })
                .count();
            assert_eq!(tma, 2, "{config}: {text}");
            let err = error(&g, &model, &mut dev, batch);
            eprintln!("{config} split {splits}: error {err:.2e}");
            assert!(
                err <= F16_TOLERANCE,
                "{config} split {splits}: error {err:.2e}"
            );
        }
    }
}

/// The model's kernels with TMA filters and gathered im2col tiles compile with NVRTC for
/// sm_90a (skipped, with the reason, where NVRTC is absent).
#[test]
fn the_emitted_cuda_compiles_for_sm90a() {
    let limits = hopper();
    let g = cnn(1);
    let plain = CompiledModel::compile(
        &g,
        &limits,
        &CompileOptions::default().with_precision(Precision::F16),
    )
    .unwrap();
    let config = matmul_f16::space_over_views(&limits)
        .into_iter()
        .find(|c| c.get("wg") == Some(1) && c.get("fm") == Some(1) && c.get("st") == Some(4))
        .unwrap();
    let mut choices = Choices::none();
    for key in plain.groups.iter().filter_map(|g| g.anchor.clone()) {
        choices.insert(&key, AnchorChoice::gemm(config.clone(), 1), "test".into());
    }
    let model = CompiledModel::compile(
        &g,
        &limits,
        &CompileOptions::default()
            .with_precision(Precision::F16)
            .with_choices(choices.clone()),
    )
    .unwrap();
    let options = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    let mut with_tma = 0;
    for lowered in model.groups.iter().map(|g| &g.kernels) {
        let emitted = weft_codegen_cuda::emit_lowered(lowered, &options).unwrap();
        if !emitted.source.contains("weft_swz128(") {
            continue;
        }
        with_tma += usize::from(emitted.source.contains("__grid_constant__"));
        match weft_codegen_cuda::nvrtc::check_arch(&emitted.source, "sm_90a") {
            Ok(weft_codegen_common::testing::Checked::Passed) => {}
            Ok(_) => return,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(with_tma, 2);
}

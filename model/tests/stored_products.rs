//! Products whose operands are stored f16 tensors read as they are (a transformer's
//! linear layers: a `[b, s, k]` activation as `[b·s, k]`, a weight `[k, n]`): the fp16
//! template reads them as its own placeholders, so its whole space applies — on
//! `cuda -arch=sm_90a` Hopper's TMA + wgmma, with the bias, GELU and residual add fused
//! into the stores from its accumulators. Compiled for sm_90a and for plain CUDA, run on
//! the interpreter (which runs TMA, mbarriers and wgmma and checks their orders), and
//! checked against the graph's float64 reference at odd row counts.

use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_graph::op::{LayerNorm, Op, Reshape, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_kernels::{Config, matmul_f16};
use weft_model::tune::{AnchorChoice, AnchorKey, Choices};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_runtime::cpu::CpuDevice;
use weft_testkit::compare::normalized_error;
use weft_testkit::random::Values;

const HIDDEN: usize = 64;

/// A transformer's MLP block on `[batch, rows, 64]`: `x = LayerNorm(input)`, `x · W1 +
/// b1` → GELU → `· W2 + b2` → `+ x`, then a linear layer with a transposed weight (`transB`, read through a view).
fn mlp(batch: usize, rows: usize, inner: usize) -> Graph {
    let mut v = Values(5 + rows as u64);
    let mut b = GraphBuilder::new("mlp");
    let x = b.input("x", &[batch, rows, HIDDEN], DType::F32);
    let w1 = b.weight("w1", v.array(&[HIDDEN, inner], 0.2));
    let b1 = b.weight("b1", v.array(&[inner], 0.1));
    let w2 = b.weight("w2", v.array(&[inner, HIDDEN], 0.15));
    let b2 = b.weight("b2", v.array(&[HIDDEN], 0.1));
    // The block's input as a transformer's is: a layer norm's output, stored in f16.
    let gamma = b.weight("ln.g", v.array(&[HIDDEN], 0.3).mapv(|x| x + 1.0));
    let beta = b.weight("ln.b", v.array(&[HIDDEN], 0.1));
    let ln = Op::LayerNorm(LayerNorm {
        axis: 2,
        epsilon: 1e-5,
        rms: false,
    });
    let x = b.node("ln", ln, &[x, gamma, beta]).unwrap();
    let h = b.node("fc1.matmul", Op::MatMul, &[x, w1]).unwrap();
    let h = b.add("fc1", h, b1).unwrap();
    let h = b.unary("gelu", Unary::Gelu { tanh: false }, h).unwrap();
    let y = b.node("fc2.matmul", Op::MatMul, &[h, w2]).unwrap();
    let y = b.add("fc2", y, b2).unwrap();
    let y = b.add("residual", y, x).unwrap();
    let flat = b
        .node(
            "rows",
            Op::Reshape(Reshape {
                shape: vec![batch * rows, HIDDEN],
            }),
            &[y],
        )
        .unwrap();
    let w3 = b.weight("w3", v.array(&[24, HIDDEN], 0.2));
    let b3 = b.weight("b3", v.array(&[24], 0.1));
    let out = b.linear("head", flat, w3, b3).unwrap();
    b.output(out);
    b.finish().unwrap()
}

fn hopper() -> TargetLimits {
    TargetLimits::cuda_arch(&cuda_arch("sm_90a").unwrap()).with_warpgroup_mma()
}

/// The largest error of the model's output against the float64 reference, relative to
/// the output's largest magnitude.
fn error(g: &Graph, model: &CompiledModel, dev: &mut dyn Device, batch: usize, rows: usize) -> f64 {
    let loaded = model.load(dev).unwrap();
    let x = Values(77).array(&[batch, rows, HIDDEN], 1.0);
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(g, &[x.mapv(f64::from)]).unwrap();
    normalized_error(&got[0], &want[0])
}

/// f16 activations and weights, f32 sums: the error of two f16 roundings a layer.
const F16_TOLERANCE: f64 = 1e-2;

/// The stored-operand anchors of `model`.
fn stored_keys(model: &CompiledModel) -> Vec<AnchorKey> {
    model
        .groups
        .iter()
        .filter_map(|g| g.anchor.clone())
        .filter(|k| k.stored_operands())
        .collect()
}

/// Both MLP products read their operands as stored; the `transB` head does not.
#[test]
fn linear_layers_read_stored_operands_and_transposes_stay_views() {
    let g = mlp(1, 37, 136);
    let model = CompiledModel::compile(
        &g,
        &hopper(),
        &CompileOptions::default().with_precision(Precision::F16),
    )
    .unwrap();
    let keys = stored_keys(&model);
    assert_eq!(keys.len(), 2, "{}", model.show());
    assert!(keys.iter().all(|k| k.m == 37), "{keys:?}");
    let head = model
        .groups
        .iter()
        .filter_map(|g| g.anchor.as_ref())
        .find(|k| !k.stored_operands())
        .expect("the head reads its weight through a transpose");
    assert_eq!(head.views.to_string(), "gemm transB");
}

/// Hopper's 3-stage tiles, whole and split, on both products, with the epilogues fused: right at 1×37 and 3×29 rows (partial m64 tiles; K and N not whole
/// multiples of the n tile).
#[test]
fn wgmma_anchors_with_fused_epilogues_are_right_on_the_interpreter() {
    let limits = hopper();
    let mut dev = CpuDevice::emulating(limits.clone());
    let wgmma: Vec<Config> = matmul_f16::space(&limits)
        .into_iter()
        .filter(|c| c.get("wg").unwrap_or(0) > 0 && c.get("st") == Some(3))
        .collect();
    assert!(!wgmma.is_empty());
    for (batch, rows) in [(1, 37), (3, 29)] {
        let g = mlp(batch, rows, 136);
        let plain = CompiledModel::compile(
            &g,
            &limits,
            &CompileOptions::default().with_precision(Precision::F16),
        )
        .unwrap();
        // A few of the space's tiles: both warpgroup counts, both m64 counts, n of 64
        // and 128.
        // Whole, and split in 3 parts (each a k range of the TMA ring, summed by a
        // second kernel that applies the epilogue).
        let choices = wgmma
            .iter()
            .filter(|c| c.get("fn") != Some(16))
            .flat_map(|c| [(c, 1), (c, 3)]);
        for (config, splits) in choices {
            let mut choices = Choices::none();
            for key in stored_keys(&plain) {
                choices.insert(
                    &key,
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
            assert_eq!(text.matches("wgmma").count(), 2, "{config}: {text}");
            let err = error(&g, &model, &mut dev, batch, rows);
            eprintln!("{batch}x{rows} rows, {config}: error {err:.2e}");
            assert!(
                err <= F16_TOLERANCE,
                "{config} at {batch}x{rows}: error {err:.2e}"
            );
        }
    }
}

/// Without wgmma the stored operands take the rest of the whole space: the rule's choice
/// on plain CUDA, and on Metal the copies through fragments (`cc = 1`, which read
/// placeholders only), right on the interpreter.
#[test]
fn stored_anchors_without_wgmma_are_right_on_the_interpreter() {
    // Whole tiles everywhere: the copies through fragments need them.
    let g = mlp(2, 64, 128);
    let plain = CompiledModel::compile(
        &g,
        &TargetLimits::cuda(),
        &CompileOptions::default().with_precision(Precision::F16),
    )
    .unwrap();
    assert_eq!(stored_keys(&plain).len(), 2, "{}", plain.show());
    let err = error(
        &g,
        &plain,
        &mut CpuDevice::emulating(TargetLimits::cuda()),
        2,
        64,
    );
    assert!(err <= F16_TOLERANCE, "rule: error {err:.2e}");
    let metal = TargetLimits::metal();
    let coop = matmul_f16::space(&metal)
        .into_iter()
        .find(|c| {
            c.get("cc") == Some(1)
                && matmul_f16::F16Params::from_config(c)
                    .is_ok_and(|p| p.block_m() <= 64 && p.block_n() <= 64)
        })
        .expect("Metal's space has copies through fragments");
    let mut choices = Choices::none();
    for key in stored_keys(&plain) {
        choices.insert(&key, AnchorChoice::gemm(coop.clone(), 1), "test".into());
    }
    let model = CompiledModel::compile(
        &g,
        &metal,
        &CompileOptions::default()
            .with_precision(Precision::F16)
            .with_choices(choices.clone()),
    )
    .unwrap();
    assert_eq!(
        model.show().matches("(test)").count(),
        2,
        "{}",
        model.show()
    );
    let err = error(&g, &model, &mut CpuDevice::emulating(metal), 2, 64);
    eprintln!("{coop}: error {err:.2e}");
    assert!(err <= F16_TOLERANCE, "{coop}: error {err:.2e}");
}

/// The model's wgmma kernels, epilogues fused, as CUDA C for sm_90a: wgmma, TMA and
/// the fused GELU in one kernel, and NVRTC compiles them (ptxas runs inside it).
#[test]
fn wgmma_anchors_compile_for_sm90a() {
    let limits = hopper();
    let g = mlp(1, 37, 136);
    let plain = CompiledModel::compile(
        &g,
        &limits,
        &CompileOptions::default().with_precision(Precision::F16),
    )
    .unwrap();
    let config = matmul_f16::space(&limits)
        .into_iter()
        .find(|c| c.get("wg") == Some(1) && c.get("st") == Some(4))
        .unwrap();
    let mut choices = Choices::none();
    for key in stored_keys(&plain) {
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
    let opts = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    let (mut checked, mut gelu) = (0, false);
    for lowered in model.groups.iter().map(|g| &g.kernels) {
        let emitted = weft_codegen_cuda::emit_lowered(lowered, &opts).unwrap();
        if !emitted.source.contains("wgmma.mma_async") {
            continue;
        }
        assert!(emitted.source.contains("cp.async.bulk.tensor.2d"));
        gelu |= emitted.source.contains("0.70710677f"); // GELU's x / √2
        match weft_codegen_cuda::nvrtc::check_arch(&emitted.source, "sm_90a") {
            Ok(weft_codegen_common::testing::Checked::Passed) => checked += 1,
            Ok(_) => return, // skipped, with the reason printed
            Err(e) => panic!("{e}\n{}", emitted.source),
        }
    }
    assert_eq!(checked, 2);
    assert!(gelu, "the GELU is fused into the first product's kernel");
}

//! A gated MLP's `silu(gate) · up` stored by the gate/up product's kernel
//! (`CompileOptions::gated_store`, `weft_graph::partition::gated`,
//! `weft_kernels::gemv::template_gated`): the decode step has one kernel fewer a layer and
//! says why; the prefill's products (past the skinny template's rows) keep the activation
//! a kernel of its own; generation gives the float64 reference's ids on the interpreter
//! (f32 and f16, batch 1 and 3) and on the Vulkan adapter where one opens.

mod common;

use weft_codegen_common::TargetLimits;
use weft_graph::passes::Precision;
use weft_graph::zoo::llama::Seeded;
use weft_graph::zoo::llama_step::llama_step;
use weft_model::{CompileOptions, CompiledModel};

use common::{generates_the_reference, tiny};
use weft_testkit::devices::open_or_skip;

const SEED: u64 = 23;

fn compile(
    limits: &TargetLimits,
    (batch, seq): (usize, usize),
    dtype: Precision,
    gated: bool,
) -> CompiledModel {
    let g = llama_step(
        "tiny",
        &tiny(),
        (batch, seq, 16),
        dtype.dtype(),
        &mut Seeded(SEED),
    )
    .unwrap();
    let options = CompileOptions::default()
        .with_precision(dtype)
        .with_gated_store(gated);
    CompiledModel::compile(&g, limits, &options).unwrap()
}

fn kernels(model: &CompiledModel) -> usize {
    model.groups.iter().map(|g| g.kernels.kernels.len()).sum()
}

/// On, each layer's gate/up product stores the activation (one kernel fewer a layer, the
/// schedule line says so); off, or at a prefill's rows, nothing changes.
#[test]
fn the_gate_up_product_stores_the_activation_at_few_rows() {
    let cuda = TargetLimits::cuda();
    let layers = tiny().layers;
    for batch in [1, 3] {
        let on = compile(&cuda, (batch, 1), Precision::F16, true);
        let off = compile(&cuda, (batch, 1), Precision::F16, false);
        assert_eq!(kernels(&on) + layers, kernels(&off), "batch {batch}");
        let shown = on.show();
        assert_eq!(
            shown.matches("silu(gate) · up stored by it").count(),
            layers,
            "{shown}"
        );
        assert!(!off.show().contains("stored by it"));
    }
    // 2 × 10 rows of a prefill: tiled products, the activation a kernel of its own.
    let prefill = compile(&cuda, (2, 10), Precision::F16, true);
    assert!(!prefill.show().contains("stored by it"));
}

/// Generation through decode steps whose gate/up products store the activation gives
/// the float64 reference's ids (f32), in f16 the same up to a near tie of the reference's.
#[test]
fn gated_decode_generates_the_reference_tokens() {
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let limits = dev.limits();
        for (batch, precision) in [Precision::F32, Precision::F16]
            .into_iter()
            .flat_map(|p| [(1usize, p), (3, p)])
        {
            if precision == Precision::F16 && !limits.f16 {
                eprintln!("({target}: no f16)");
                continue;
            }
            let (len, new): (usize, usize) = (5, 6);
            let prompt: Vec<Vec<i32>> = (0..batch)
                .map(|b| {
                    (0..len)
                        .map(|i| ((b * 37 + i * 11 + 5) % 300) as i32)
                        .collect()
                })
                .collect();
            let options = CompileOptions::default()
                .with_precision(precision)
                .with_gated_store(true);
            let stores = |decode: &CompiledModel| {
                assert!(decode.show().contains("stored by it"), "{target}");
            };
            let what = format!("gated store on {target}, batch {batch}");
            let run = (prompt.as_slice(), new);
            generates_the_reference(dev.as_mut(), SEED, run, &options, &what, &stores);
        }
    }
}

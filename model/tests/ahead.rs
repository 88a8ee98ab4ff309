//! The decode step's skinny products asking L2 for the next products' weights after
//! their stores (`CompileOptions::l2_ahead`, `weft_model::ahead`): which kernels ask
//! for what under a budget, every bulk request proven inside its weight, nothing asked
//! with the budget at 0 or on a target without the instruction (WebGPU), and the
//! generated ids still the float64 reference's through it on the interpreter (whose
//! limits are CUDA's), which checks each request's first and last element inside the
//! weight.

mod common;

use weft_codegen_common::TargetLimits;
use weft_graph::passes::Precision;
use weft_graph::zoo::llama::Seeded;
use weft_graph::zoo::llama_step::llama_step;
use weft_ir::kernel::{KStmt, Kernel};
use weft_model::ahead::CHUNK_BYTES;
use weft_model::{CompileOptions, CompiledModel};

use common::{generates_the_reference, tiny};

const SEED: u64 = 5;

fn compile(limits: &TargetLimits, dtype: Precision, ahead: usize) -> CompiledModel {
    let g = llama_step(
        "tiny",
        &tiny(),
        (2, 1, 16),
        dtype.dtype(),
        &mut Seeded(SEED),
    )
    .unwrap();
    let options = CompileOptions::default()
        .with_precision(dtype)
        .with_l2_ahead(ahead);
    CompiledModel::compile(&g, limits, &options).unwrap()
}

/// Bytes each kernel asks L2 for, in run order (kernel name, bytes).
fn asked(model: &CompiledModel) -> Vec<(String, u64)> {
    let kernels: Vec<&Kernel> = model
        .groups
        .iter()
        .flat_map(|g| &g.kernels.kernels)
        .collect();
    kernels
        .iter()
        .map(|k| {
            let mut bytes = 0u64;
            k.body.visit(&mut |s| {
                if let KStmt::Prefetch { bytes: b, .. } = s {
                    bytes += *b as u64;
                }
            });
            (k.name.clone(), bytes)
        })
        .collect()
}

/// Every bulk request of every kernel proven inside its weight, its last byte included
/// (the prover's span is the request's elements).
fn requests_proven(model: &CompiledModel) {
    for k in model.groups.iter().flat_map(|g| &g.kernels.kernels) {
        let report = weft_ir::bounds::prove(k);
        for c in report
            .checks
            .iter()
            .filter(|c| c.kind == weft_ir::bounds::AccessKind::Prefetch)
        {
            assert!(c.is_proven(), "{}: {c}", k.name);
            assert!(c.span > 1, "{}: {c}", k.name);
        }
    }
}

/// Under a budget, each skinny product but the head asks (its requests in its last
/// statements, after its stores), the head and every other kernel ask nothing, and the
/// requests of one kernel never pass the budget; every access of an asking kernel is
/// proven in bounds, the bulk requests' last bytes included. At 0, or on WebGPU's
/// limits, nothing is asked.
#[test]
fn each_product_asks_for_the_next_weights_within_the_budget() {
    let cuda = TargetLimits::cuda();
    let budget = 3 * CHUNK_BYTES;
    let model = compile(&cuda, Precision::F16, budget);
    let products = 4 * tiny().layers + 1;
    let asking: Vec<(String, u64)> = asked(&model).into_iter().filter(|a| a.1 > 0).collect();
    assert_eq!(asking.len(), products - 1, "{asking:?}");
    for (name, bytes) in &asking {
        assert!(*bytes <= budget as u64, "{name}: {bytes} bytes asked");
        assert_eq!(bytes % CHUNK_BYTES as u64, 0, "{name}");
    }
    requests_proven(&model);
    // One line a request in the schedules `weft model graph` shows.
    let plan = weft_model::ahead::plan(&model.graph, &model.partition, &model.groups, budget);
    let shown = model.show();
    assert_eq!(
        shown.matches("(WEFT_L2_AHEAD)").count(),
        plan.len(),
        "{shown}"
    );
    assert!(
        plan.len() > asking.len(),
        "some product asks for two weights"
    );
    assert!(
        asked(&compile(&cuda, Precision::F16, 0))
            .iter()
            .all(|a| a.1 == 0)
    );
    let webgpu = TargetLimits {
        f16: true,
        ..TargetLimits::webgpu_default()
    };
    assert!(
        asked(&compile(&webgpu, Precision::F16, budget))
            .iter()
            .all(|a| a.1 == 0)
    );
    // A budget under one chunk asks nothing.
    assert!(
        asked(&compile(&cuda, Precision::F16, CHUNK_BYTES - 16))
            .iter()
            .all(|a| a.1 == 0)
    );
}

/// A budget larger than every weight after a product: each product asks for all of
/// them (whole chunks of each), and no request reaches past its weight.
#[test]
fn a_large_budget_asks_for_every_later_weight_in_whole_chunks() {
    let cuda = TargetLimits::cuda();
    let model = compile(&cuda, Precision::F32, 1 << 30);
    let plan = weft_model::ahead::plan(&model.graph, &model.partition, &model.groups, 1 << 30);
    let products = 4 * tiny().layers + 1;
    // Product i asks for the weights of all products after it.
    assert_eq!(plan.len(), products * (products - 1) / 2);
    for a in &plan {
        let t = model.graph.tensor(a.weight);
        assert_eq!(a.bytes, t.numel() * 4, "{}", t.name);
    }
    requests_proven(&model);
}

/// Generation through the asking decode step on the interpreter gives the float64
/// reference's ids (f32), and in f16 the same ids up to a near tie of the reference's.
#[test]
fn asking_decode_generates_the_reference_tokens() {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let (batch, len, new): (usize, usize, usize) = (2, 4, 8);
    let prompt: Vec<Vec<i32>> = (0..batch)
        .map(|b| {
            (0..len)
                .map(|i| ((b * 29 + i * 17 + 5) % 300) as i32)
                .collect()
        })
        .collect();
    for precision in [Precision::F32, Precision::F16] {
        let options = CompileOptions::default()
            .with_precision(precision)
            .with_l2_ahead(1 << 20);
        let asks = |decode: &CompiledModel| {
            assert!(
                asked(decode).iter().any(|a| a.1 > 0),
                "the decode step asks L2 ahead"
            );
        };
        let run = (prompt.as_slice(), new);
        generates_the_reference(dev.as_mut(), SEED, run, &options, "asking ahead", &asks);
    }
}

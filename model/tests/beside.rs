//! Kernels beside the decode step's chain asking L2 for the next products' weights
//! (`CompileOptions::l2_beside`, `weft_model::beside`): which products get one (those a
//! window of other kernels follows before the next product), that such a kernel writes
//! nothing (what makes the CUDA runtime run it on its second stream) and keeps its
//! requests inside the budget and inside the weights (proven), nothing placed at 0 or on
//! a target without the instruction (WebGPU), and the generated ids still the float64
//! reference's through it on the interpreter (whose limits are CUDA's), which checks
//! each request's first and last element inside the weight.

mod common;

use weft_codegen_common::TargetLimits;
use weft_graph::passes::Precision;
use weft_graph::zoo::llama::Seeded;
use weft_graph::zoo::llama_step::llama_step;
use weft_ir::kernel::{KStmt, Kernel, KernelParam};
use weft_model::ahead::CHUNK_BYTES;
use weft_model::{CompileOptions, CompiledModel};

use common::{generates_the_reference, tiny};

const SEED: u64 = 7;

fn compile(limits: &TargetLimits, dtype: Precision, beside: usize) -> CompiledModel {
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
        .with_l2_beside(beside);
    CompiledModel::compile(&g, limits, &options).unwrap()
}

/// Bytes a kernel asks L2 for.
fn asked(k: &Kernel) -> u64 {
    let mut bytes = 0u64;
    k.body.visit(&mut |s| {
        if let KStmt::Prefetch { bytes: b, .. } = s {
            bytes += *b as u64;
        }
    });
    bytes
}

/// The kernels that ask L2 for anything, with the kernel before each in run order.
fn asking(model: &CompiledModel) -> Vec<(&Kernel, &Kernel)> {
    let kernels: Vec<&Kernel> = model
        .groups
        .iter()
        .flat_map(|g| &g.kernels.kernels)
        .collect();
    kernels
        .windows(2)
        .filter(|w| asked(w[1]) > 0)
        .map(|w| (w[0], w[1]))
        .collect()
}

fn writes_nothing(k: &Kernel) -> bool {
    k.params.iter().all(|p| match p {
        KernelParam::Buffer { access, .. } => !access.writes(),
        KernelParam::Scalar(_) => true,
    })
}

/// Under a budget: one kernel beside the chain after each layer's q/k/v product (the
/// cache writes and the attention follow before o) and after its gate/up product (the
/// activation follows before down), none after o, down or the head (the next product,
/// with its folded norm, follows at once); each writes nothing, asks whole chunks within
/// the budget, and every access of it is proven in bounds, the bulk requests' last bytes
/// included; the products themselves ask nothing. At 0, under a chunk, or on WebGPU's
/// limits, nothing is placed.
#[test]
fn a_kernel_beside_follows_each_product_a_window_follows() {
    let cuda = TargetLimits::cuda();
    let budget = 3 * CHUNK_BYTES;
    let model = compile(&cuda, Precision::F16, budget);
    let placed = asking(&model);
    assert_eq!(placed.len(), 2 * tiny().layers, "{}", model.show());
    for (before, k) in &placed {
        assert!(k.name.ends_with("_l2_beside"), "{}", k.name);
        assert!(writes_nothing(k), "{}", k.name);
        assert!(!writes_nothing(before), "{} follows a product", k.name);
        assert_eq!(asked(before), 0, "{}", before.name);
        let bytes = asked(k);
        assert!(bytes <= budget as u64, "{}: {bytes} bytes asked", k.name);
        assert_eq!(bytes % CHUNK_BYTES as u64, 0, "{}", k.name);
        let report = weft_ir::bounds::prove(k);
        for c in &report.checks {
            assert!(c.is_proven(), "{}: {c}", k.name);
        }
        assert!(
            report
                .checks
                .iter()
                .any(|c| c.kind == weft_ir::bounds::AccessKind::Prefetch && c.span > 1),
            "{}",
            k.name
        );
    }
    // The q/k/v products' kernels beside ask for o's weight first (the next product).
    let plan = weft_model::beside::plan(&model.graph, &model.partition, &model.groups, budget);
    assert_eq!(plan.len(), placed.len());
    let shown = model.show();
    assert_eq!(
        shown.matches("(WEFT_L2_BESIDE)").count(),
        plan.len(),
        "{shown}"
    );
    for n in [0, CHUNK_BYTES - 16] {
        assert!(asking(&compile(&cuda, Precision::F16, n)).is_empty(), "{n}");
    }
    let webgpu = TargetLimits {
        f16: true,
        ..TargetLimits::webgpu_default()
    };
    assert!(asking(&compile(&webgpu, Precision::F16, budget)).is_empty());
}

/// A budget past every later weight: each kernel beside asks for all of them whole.
#[test]
fn a_large_budget_asks_for_every_later_weight() {
    let cuda = TargetLimits::cuda();
    let budget = 1 << 30;
    let model = compile(&cuda, Precision::F32, budget);
    let plan = weft_model::beside::plan(&model.graph, &model.partition, &model.groups, budget);
    assert_eq!(plan.len(), 2 * tiny().layers);
    for b in &plan {
        for &(weight, bytes) in &b.weights {
            let t = model.graph.tensor(weight);
            assert_eq!(bytes, t.numel() * 4, "{}", t.name);
        }
    }
    // The last layer's gate/up asks for down's weight and the head's: every product after it.
    let last = plan.last().unwrap();
    assert_eq!(last.weights.len(), 2);
}

/// Generation through the decode step with its kernels beside the chain on the
/// interpreter gives the float64 reference's ids (f32), and in f16 the same ids up to a
/// near tie of the reference's.
#[test]
fn decode_with_kernels_beside_generates_the_reference_tokens() {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let (batch, len, new): (usize, usize, usize) = (2, 4, 8);
    let prompt: Vec<Vec<i32>> = (0..batch)
        .map(|b| {
            (0..len)
                .map(|i| ((b * 31 + i * 13 + 3) % 300) as i32)
                .collect()
        })
        .collect();
    for precision in [Precision::F32, Precision::F16] {
        let options = CompileOptions::default()
            .with_precision(precision)
            .with_l2_beside(1 << 20);
        let places = |decode: &CompiledModel| {
            assert!(
                !asking(decode).is_empty(),
                "the decode step has kernels beside"
            );
        };
        let run = (prompt.as_slice(), new);
        generates_the_reference(dev.as_mut(), SEED, run, &options, "kernels beside", &places);
    }
}

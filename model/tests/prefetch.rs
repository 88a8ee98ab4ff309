//! The decode step's skinny products prefetching their weights before their wait for the
//! kernel before them (`CompileOptions::weight_prefetch`, `weft_model::pdl`): which
//! kernels prefetch and which let the next launch early, on targets that place the wait
//! (CUDA's limits, and the interpreter's, which are CUDA's) and not elsewhere; the
//! generated ids still the float64 reference's, f32 and f16, the interpreter checking
//! every prefetch inside its weight.

mod common;

use weft_codegen_common::TargetLimits;
use weft_graph::passes::Precision;
use weft_graph::zoo::llama::Seeded;
use weft_graph::zoo::llama_step::llama_step;
use weft_ir::func::GridControl;
use weft_kernels::gemv::Lead;
use weft_model::{CompileOptions, CompiledModel};

use common::{generates_the_reference, tiny};

const SEED: u64 = 11;

fn compile(limits: &TargetLimits, seq: usize, dtype: Precision, prefetch: Lead) -> CompiledModel {
    let g = llama_step(
        "tiny",
        &tiny(),
        (2, seq, 16),
        dtype.dtype(),
        &mut Seeded(SEED),
    )
    .unwrap();
    let options = CompileOptions::default()
        .with_precision(dtype)
        .with_weight_prefetch(prefetch);
    CompiledModel::compile(&g, limits, &options).unwrap()
}

/// (kernels that place their wait, kernels that trigger the next early, kernels in run
/// order whose successor places its wait but who do not trigger); every kernel that
/// prefetches places its wait, and with `prefetching` every one that waits prefetches.
fn census_of(model: &CompiledModel, prefetching: bool) -> (usize, usize, usize) {
    let kernels: Vec<&weft_ir::kernel::Kernel> = model
        .groups
        .iter()
        .flat_map(|g| &g.kernels.kernels)
        .collect();
    let has = |k: &weft_ir::kernel::Kernel, c: GridControl| k.uses_grid(c);
    let prefetches = |k: &weft_ir::kernel::Kernel| k.uses_prefetch();
    let waits = kernels.iter().filter(|k| has(k, GridControl::Wait)).count();
    for k in &kernels {
        assert!(!prefetches(k) || has(k, GridControl::Wait), "{}", k.name);
        assert_eq!(
            prefetches(k),
            prefetching && has(k, GridControl::Wait),
            "{}",
            k.name
        );
    }
    let triggers = kernels
        .iter()
        .filter(|k| has(k, GridControl::LaunchDependents))
        .count();
    let missed = kernels
        .windows(2)
        .filter(|w| has(w[1], GridControl::Wait) && !has(w[0], GridControl::LaunchDependents))
        .count();
    (waits, triggers, missed)
}

fn census(model: &CompiledModel) -> (usize, usize, usize) {
    census_of(model, true)
}

/// With the option on CUDA's limits every skinny product of the decode step (q/k/v, o,
/// gate/up and down a layer, the head) prefetches and waits after (or, with the wait
/// alone, waits first), and the kernel before each triggers its launch; off, or on a
/// target without the wait (WebGPU), none does.
/// The prefill's tiled products never prefetch; its head (the last token of each
/// sequence: 2 rows) is a skinny product and does.
#[test]
fn the_decode_steps_products_prefetch_and_their_predecessors_trigger() {
    let cuda = TargetLimits::cuda();
    let layers = tiny().layers;
    let decode = compile(&cuda, 1, Precision::F16, Lead::Rows);
    let products = 4 * layers + 1;
    assert_eq!(census(&decode), (products, products, 0));
    let shown = decode.show();
    assert_eq!(
        shown.matches("prefetched into L2 before it waits").count(),
        products,
        "{shown}"
    );
    assert_eq!(
        shown
            .matches(weft_model::pdl::TRIGGER_NOTE.trim_start_matches("; "))
            .count(),
        products,
        "{shown}"
    );
    assert_eq!(
        census(&compile(&cuda, 1, Precision::F16, Lead::Off)),
        (0, 0, 0)
    );
    // The wait alone: placed, triggered, nothing prefetched.
    let waiting = compile(&cuda, 1, Precision::F16, Lead::Wait);
    assert_eq!(census_of(&waiting, false), (products, products, 0));
    let webgpu = TargetLimits {
        f16: true,
        ..TargetLimits::webgpu_default()
    };
    assert_eq!(
        census(&compile(&webgpu, 1, Precision::F16, Lead::Rows)),
        (0, 0, 0)
    );
    // 20 rows of a prefill: tiled products but the head's.
    assert_eq!(
        census(&compile(&cuda, 10, Precision::F16, Lead::Rows)),
        (1, 1, 0)
    );
}

/// Generation through the prefetching decode step on the interpreter gives the float64
/// reference's ids (f32), and in f16 the same ids up to a near tie of the reference's.
#[test]
fn prefetching_decode_generates_the_reference_tokens() {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let (batch, len, new): (usize, usize, usize) = (2, 4, 8);
    let prompt: Vec<Vec<i32>> = (0..batch)
        .map(|b| {
            (0..len)
                .map(|i| ((b * 41 + i * 13 + 3) % 300) as i32)
                .collect()
        })
        .collect();
    for precision in [Precision::F32, Precision::F16] {
        let options = CompileOptions::default()
            .with_precision(precision)
            .with_weight_prefetch(Lead::Sectors);
        let prefetches = |decode: &CompiledModel| {
            assert!(census(decode).0 > 0, "the decode step prefetches");
        };
        let run = (prompt.as_slice(), new);
        generates_the_reference(
            dev.as_mut(),
            SEED,
            run,
            &options,
            "prefetching",
            &prefetches,
        );
    }
}

/// `Lead::Loads`: every skinny product of the decode step (its weight a constant of the
/// run) places its wait after its first step's loads of the weight, and reads the weight
/// (with a folded norm, its γ too) as a constant (`Access::Constant`), the kernel before
/// it triggering; each such kernel passes CUDA's emitter, which refuses a load before
/// the wait of anything not a constant; no kernel prefetches. Generation through it on
/// the interpreter gives the float64 reference's ids (f32; f16 up to a near tie).
#[test]
fn early_loads_of_the_weights_pass_cudas_check_and_generate_the_reference() {
    use weft_ir::kernel::{Access, KernelParam};
    let cuda = TargetLimits::cuda();
    let products = 4 * tiny().layers + 1;
    let decode = compile(&cuda, 1, Precision::F16, Lead::Loads);
    assert_eq!(census_of(&decode, false), (products, products, 0));
    let shown = decode.show();
    assert_eq!(
        shown
            .matches("loads of b (a constant) issued before it waits")
            .count(),
        products,
        "{shown}"
    );
    let options = weft_codegen_cuda::CudaOptions {
        limits: cuda.clone(),
    };
    let mut early = 0;
    for k in decode.groups.iter().flat_map(|g| &g.kernels.kernels) {
        if !k.uses_grid(GridControl::Wait) {
            continue;
        }
        let constants = k
            .params
            .iter()
            .filter(|p| {
                matches!(
                    p,
                    KernelParam::Buffer {
                        access: Access::Constant,
                        ..
                    }
                )
            })
            .count();
        assert!(constants >= 1, "{}", k.name);
        let emitted = weft_codegen_cuda::emit(k, &options).unwrap_or_else(|e| panic!("{e}"));
        let body = emitted
            .source
            .split("__global__")
            .nth(1)
            .unwrap_or_default();
        // What comes before the wait stores the weight's first step into the registers
        // `w`: by vectors (`*(uint4*)(w + …)`) or element by element (`w[…] = …`).
        let before = body
            .split("weft_grid_dependency();")
            .next()
            .unwrap_or_default();
        early += usize::from(before.contains("(w + ") || before.contains(" w["));
    }
    assert_eq!(
        early, products,
        "every product's first loads come before its wait"
    );
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let prompt: Vec<Vec<i32>> = (0..2i32)
        .map(|b| (0..4).map(|i| (b * 37 + i * 11 + 5) % 300).collect())
        .collect();
    for precision in [Precision::F32, Precision::F16] {
        let options = CompileOptions::default()
            .with_precision(precision)
            .with_weight_prefetch(Lead::Loads);
        let loads = |decode: &CompiledModel| {
            assert!(
                census_of(decode, false).0 > 0,
                "the decode step loads early"
            );
        };
        let run = (prompt.as_slice(), 8);
        generates_the_reference(dev.as_mut(), SEED, run, &options, "early loads", &loads);
    }
}

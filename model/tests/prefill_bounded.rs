//! The prefill's work bounded by the prompt's length (`weft_model::bound_rows`): on the
//! interpreter, the prefill for 1..=32 with its blocks past the length skipped gives the
//! unbounded prefill's ids and caches bit for bit at lengths 1, 5, 17 and 32 (and the
//! decode steps after it the same ids), in f32 and f16; the products, the norms and the
//! the residual adds (the products' epilogues) are among the bounded kernels, and the blocks that
//! run fall with the length.

mod common;

use weft_graph::passes::Precision;
use weft_graph::zoo::llama::{LlamaConfig, Seeded};
use weft_graph::zoo::llama_step::{PROMPT_LENGTH, llama_prefill, llama_step};
use weft_ir::data::TensorData;
use weft_model::bound_rows::RowBound;
use weft_model::{CompileOptions, CompiledModel, Generator};
use weft_runtime::Device;

use common::tiny;

const SEED: u64 = 5;
const MAX_PROMPT: usize = 32;
const NEW: usize = 3;
const CAPACITY: usize = MAX_PROMPT + NEW;

fn rows() -> RowBound {
    RowBound {
        rows: "input_ids".into(),
        axis: 1,
        length: PROMPT_LENGTH.into(),
    }
}

fn prefill(dev: &dyn Device, p: Precision, bounded: bool) -> CompiledModel {
    let cfg = tiny();
    let g = llama_prefill(
        "tiny",
        &cfg,
        (1, MAX_PROMPT, CAPACITY),
        p.dtype(),
        &mut Seeded(SEED),
    )
    .unwrap();
    let mut options = CompileOptions::default().with_precision(p);
    if bounded {
        options = options.with_row_bound(rows());
    }
    CompiledModel::compile(&g, &dev.limits(), &options).unwrap()
}

fn generator(dev: &mut dyn Device, p: Precision, prefill: &CompiledModel) -> Generator {
    let cfg = tiny();
    let g = llama_step("tiny", &cfg, (1, 1, CAPACITY), p.dtype(), &mut Seeded(SEED)).unwrap();
    let options = CompileOptions::default().with_precision(p);
    let decode = CompiledModel::compile(&g, &dev.limits(), &options).unwrap();
    Generator::load(prefill, &decode, dev).unwrap()
}

fn caches(gen_: &Generator, dev: &mut dyn Device) -> Vec<TensorData> {
    gen_.caches()
        .iter()
        .map(|c| dev.download(c.buffer).unwrap())
        .collect()
}

fn same_bits(a: &TensorData, b: &TensorData) -> bool {
    a.to_bytes() == b.to_bytes()
}

fn bit_for_bit(p: Precision) {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let (plain, bounded) = (
        prefill(dev.as_ref(), p, false),
        prefill(dev.as_ref(), p, true),
    );
    assert!(plain.bounded.kernels.is_empty());
    assert_eq!(bounded.bounded.off, None);
    let names: Vec<&str> = bounded
        .bounded
        .kernels
        .iter()
        .map(|k| k.kernel.as_str())
        .collect();
    // The residual adds are the o and down products' epilogues.
    for part in [
        "q_proj",
        "o_proj",
        "gate_proj",
        "down_proj",
        "input_layernorm",
    ] {
        assert!(
            names.iter().any(|n| n.contains(part)),
            "no bounded kernel of {part}: {names:?}"
        );
    }
    let (a, b) = (
        generator(dev.as_mut(), p, &plain),
        generator(dev.as_mut(), p, &bounded),
    );
    for n in [1usize, 5, 17, 32] {
        let prompt = vec![
            (0..n)
                .map(|i| ((i * 31 + 3) % 300) as i32)
                .collect::<Vec<_>>(),
        ];
        let want = a.generate(dev.as_mut(), &prompt, NEW).unwrap();
        let got = b.generate(dev.as_mut(), &prompt, NEW).unwrap();
        assert_eq!(got.ids, want.ids, "{p:?} at {n}");
        let (want, got) = (caches(&a, dev.as_mut()), caches(&b, dev.as_mut()));
        for (c, (w, g)) in a.caches().iter().zip(want.iter().zip(&got)) {
            assert!(same_bits(w, g), "{p:?} at {n}: cache {} differs", c.name);
        }
    }
    a.free(dev.as_mut());
    b.free(dev.as_mut());
}

#[test]
fn bounded_prefill_equals_the_unbounded_bit_for_bit_f32() {
    bit_for_bit(Precision::F32);
}

#[test]
fn bounded_prefill_equals_the_unbounded_bit_for_bit_f16() {
    bit_for_bit(Precision::F16);
}

/// The blocks that run their body fall with the length: at 32 every block, fewer at
/// 17, fewer still at 5 and 1; at 1 less than half of them.
#[test]
fn the_blocks_that_run_fall_with_the_length() {
    let dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let m = prefill(dev.as_ref(), Precision::F32, true);
    let at: Vec<(u64, u64)> = [1, 5, 17, 32]
        .iter()
        .map(|&n| m.bounded.blocks_at(n))
        .collect();
    let all = at[0].1;
    assert_eq!(at[3], (all, all), "{at:?}");
    assert!(
        at[0].0 < at[1].0 && at[1].0 < at[2].0 && at[2].0 < at[3].0,
        "{at:?}"
    );
    assert!(2 * at[0].0 < all, "{at:?}");
}

/// Off where the target cannot take it (WGSL's uniformity rule), and for a graph
/// without the length input: nothing bounded, the reason kept.
#[test]
fn off_where_it_cannot_be_taken() {
    let cfg = tiny();
    let g = llama_prefill(
        "tiny",
        &cfg,
        (1, 8, 16),
        weft_ir::dtype::DType::F32,
        &mut Seeded(SEED),
    );
    let g = g.unwrap();
    let options = CompileOptions::default().with_row_bound(rows());
    let webgpu = weft_codegen_common::TargetLimits::webgpu_default();
    let m = CompiledModel::compile(&g, &webgpu, &options).unwrap();
    assert!(m.bounded.kernels.is_empty());
    assert!(m.bounded.off.as_deref().unwrap().contains("webgpu"));
    let step = llama_step(
        "tiny",
        &cfg,
        (1, 8, 16),
        weft_ir::dtype::DType::F32,
        &mut Seeded(SEED),
    );
    let cpu = weft_runtime::Target::parse("cpu").unwrap().limits();
    let m = CompiledModel::compile(&step.unwrap(), &cpu, &options).unwrap();
    assert!(m.bounded.kernels.is_empty());
    assert!(m.bounded.off.as_deref().unwrap().contains(PROMPT_LENGTH));
}

/// For an H200 (`cuda -arch=sm_90a`, compiled offline) the products are bounded in f16;
/// in f32 those that split k are not (the rest are); the guarded kernels emit as CUDA C
/// (and compile under NVRTC where it is): a prefill for 1..=256 of a decoder 256 wide runs
/// a falling share of its blocks at 16 and 128 tokens.
#[test]
fn on_hopper_the_products_are_bounded() {
    let cfg = LlamaConfig {
        layers: 1,
        hidden: 256,
        heads: 8,
        kv_heads: 2,
        head_dim: 32,
        intermediate: 704,
        vocab: 300,
        max_positions: 512,
        ..LlamaConfig::tiny_llama()
    };
    let limits = weft_runtime::Target::parse("cuda -arch=sm_90a")
        .unwrap()
        .limits();
    for p in [Precision::F16, Precision::F32] {
        let g = llama_prefill("tiny", &cfg, (1, 256, 260), p.dtype(), &mut Seeded(SEED));
        let options = CompileOptions::default()
            .with_precision(p)
            .with_row_bound(rows());
        let m = CompiledModel::compile(&g.unwrap(), &limits, &options).unwrap();
        let names: Vec<&str> = m
            .bounded
            .kernels
            .iter()
            .map(|k| k.kernel.as_str())
            .collect();
        // In f32 these products split k over blocks whose last one sums (their parts
        // and counters are global writes the bound does not follow): unbounded.
        let products: &[&str] = if p == Precision::F16 {
            &["q_proj", "o_proj", "gate_proj", "down_proj"]
        } else {
            &["gate_proj", "input_layernorm"]
        };
        for part in products {
            assert!(
                names.iter().any(|n| n.contains(part)),
                "{p:?}: no bounded kernel of {part}: {names:?}"
            );
        }
        // The guarded kernels as CUDA C, compiled by NVRTC where it is (skipped where not).
        let opts = weft_codegen_cuda::CudaOptions {
            limits: limits.clone(),
        };
        let mut guarded = 0;
        // (A group another's kernel runs, horizontally joined, has none of its own.)
        for group in m.groups.iter().filter(|g| !g.kernels.kernels.is_empty()) {
            let emitted = weft_codegen_cuda::emit_lowered(&group.kernels, &opts).unwrap();
            guarded += emitted.source.matches("bound_n").count().min(1);
            match weft_codegen_cuda::nvrtc::check_arch(&emitted.source, "sm_90a") {
                Ok(_) => {}
                Err(e) => panic!("{e}\n{}", emitted.source),
            }
        }
        assert!(
            guarded > 0 && guarded <= names.len(),
            "{guarded} of {names:?}"
        );
        let at: Vec<(u64, u64)> = [16, 128, 256]
            .iter()
            .map(|&n| m.bounded.blocks_at(n))
            .collect();
        eprintln!(
            "{p:?}: {} kernels bounded; blocks run at 16, 128, 256: {at:?}",
            names.len()
        );
        assert!(at[0].0 < at[1].0 && at[1].0 < at[2].0, "{at:?}");
    }
}

/// What needs every row keeps its work: `y = x · W` (rows of `x` counted by `n`) read
/// only through a `Gather` at `n − 1` is bounded; read also by a sum over the rows (a
/// second output) it is not, nor is anything it is computed from.
#[test]
fn a_reader_of_every_row_keeps_the_whole_work() {
    use ndarray::{ArrayD, IxDyn};
    use weft_graph::GraphBuilder;
    use weft_graph::op::{Binary, Cast, Gather, Op, Reduce, ReduceKind};
    use weft_ir::dtype::DType;
    let build = |with_sum: bool| {
        let mut b = GraphBuilder::new("rows");
        let x = b.input("x", &[1, 64, 32], DType::F32);
        let n = b.input("n", &[1], DType::I32);
        let w = ArrayD::from_shape_fn(IxDyn(&[32, 32]), |ix| ((ix[0] * 7 + ix[1]) % 5) as f32);
        let w = b.weight("w", w);
        let y = b.node("y", Op::MatMul, &[x, w]).unwrap();
        let r = b.relu("r", y).unwrap();
        let one = b.weight("one.f32", ArrayD::from_elem(IxDyn(&[1]), 1.0));
        let one = b
            .node("one", Op::Cast(Cast { to: DType::I32 }), &[one])
            .unwrap();
        let last = b.binary("last", Binary::Sub, n, one).unwrap();
        let row = b
            .node("row", Op::Gather(Gather { axis: 1 }), &[r, last])
            .unwrap();
        b.output(row);
        if with_sum {
            let sum = Op::Reduce(Reduce {
                kind: ReduceKind::Sum,
                axes: vec![1],
                keep_dims: false,
            });
            let s = b.node("sum", sum, &[y]).unwrap();
            b.output(s);
        }
        b.finish().unwrap()
    };
    let cpu = weft_runtime::Target::parse("cpu").unwrap().limits();
    let options = CompileOptions::default().with_row_bound(RowBound {
        rows: "x".into(),
        axis: 1,
        length: "n".into(),
    });
    let bounded = |with_sum| {
        let m = CompiledModel::compile(&build(with_sum), &cpu, &options).unwrap();
        assert_eq!(m.bounded.off, None);
        m.bounded
            .kernels
            .iter()
            .map(|k| k.kernel.clone())
            .collect::<Vec<_>>()
    };
    let alone = bounded(false);
    assert!(alone.iter().any(|k| k.contains("_y")), "{alone:?}");
    let summed = bounded(true);
    assert!(!summed.iter().any(|k| k.contains("_y")), "{summed:?}");
}

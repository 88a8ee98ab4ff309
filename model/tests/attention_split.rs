//! Split-KV attention as the model compiler takes it: a decode step's attention (the 8
//! query heads of a KV head as 8 rows, one KV head's cache of 191 positions, an
//! additive mask read from an input, as the decode step's is), written as exporters
//! write it (two products and a softmax) and recognized into one Attention; its keys
//! split in chunks by the rule, on the interpreter and on lavapipe (WGSL), f32 and f16,
//! against the float64 reference element by element; a mask that cuts chunks and covers
//! whole ones. The interpreter (CUDA's limits: a device-scope fence) combines the chunks
//! in the attention kernel, the chunk arriving last combining; WGSL keeps the combining
//! kernel. TinyLlama's decode attention for the H200 in f16 is one kernel that NVRTC
//! compiles.

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, Op, Softmax, Transpose};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::tune::Choices;
use weft_model::{CompileOptions, CompiledModel};
use weft_testkit::devices::open_or_skip;

/// `softmax(q · kᵀ / 8 + mask) · v` of the halved inputs over `[b, heads, rows, 64]` queries and
/// `[b, heads, t, 64]` keys and values.
fn decode_attention(b: usize, heads: usize, rows: usize, t: usize) -> Graph {
    let mut g = GraphBuilder::new("decode_attention");
    let q = g.input("q", &[b, heads, rows, 64], DType::F32);
    let k = g.input("k", &[b, heads, t, 64], DType::F32);
    let v = g.input("v", &[b, heads, t, 64], DType::F32);
    let mask = g.input("mask", &[b, 1, rows, t], DType::F32);
    // Halved first: computed operands, which f16 runs store in f16 (graph inputs stay
    // f32), as the decode step's projections and caches are.
    let half = g.weight("half", ArrayD::from_elem(IxDyn(&[]), 0.5));
    let q = g.binary("q_half", Binary::Mul, q, half).unwrap();
    let k = g.binary("k_half", Binary::Mul, k, half).unwrap();
    let v = g.binary("v_half", Binary::Mul, v, half).unwrap();
    let perm = vec![0, 1, 3, 2];
    let kt = g
        .node("kt", Op::Transpose(Transpose { perm }), &[k])
        .unwrap();
    let s = g.node("scores", Op::MatMul, &[q, kt]).unwrap();
    let c = g.weight("scale", ArrayD::from_elem(IxDyn(&[]), 0.125));
    let s = g.binary("scaled", Binary::Mul, s, c).unwrap();
    let s = g.add("masked", s, mask).unwrap();
    let p = g
        .node("probs", Op::Softmax(Softmax { axis: 3 }), &[s])
        .unwrap();
    let y = g.node("context", Op::MatMul, &[p, v]).unwrap();
    g.output(y);
    g.finish().unwrap()
}

/// Seeded inputs in [-2, 2); the mask 0, or f32's most negative value on keys 40..57
/// (cutting the 16-key chunks), 64..128 (whole chunks) and past `t − 1 − 3·row` (a
/// cache's rows past the position).
fn inputs(g: &Graph) -> Vec<ArrayD<f32>> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    g.inputs
        .iter()
        .map(|&i| {
            let t = g.tensor(i);
            let shape = t.shape.clone();
            if t.name == "mask" {
                let keys = shape[3];
                return ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
                    let (row, j) = (ix[2], ix[3]);
                    let past = j + 3 * row > keys - 1;
                    let band = (40..57).contains(&j) || (64..128).contains(&j);
                    if past || band { f32::MIN } else { 0.0 }
                });
            }
            ArrayD::from_shape_fn(IxDyn(&shape), |_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ((seed >> 40) as f64 / (1u64 << 24) as f64 * 4.0 - 2.0) as f32
            })
        })
        .collect()
}

fn check(target: &str, precision: Precision, (b, heads, rows, t): (usize, usize, usize, usize)) {
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let g = decode_attention(b, heads, rows, t);
    let limits = dev.limits();
    // The one-kernel form is off by default (slower on the H200): asked for here.
    let one = Choices::none().with_split_last(true);
    let options = CompileOptions::default()
        .with_precision(precision)
        .with_choices(one);
    let model = CompiledModel::compile(&g, &limits, &options).unwrap();
    let text = model.show();
    assert!(text.contains("split-KV"), "{target}: {text}");
    // One kernel where the target has a device-scope fence, two elsewhere.
    let form = if limits.device_fence {
        "the last to arrive combining them"
    } else {
        "+ a combining kernel"
    };
    assert!(text.contains(form), "{target}: {text}");
    let x = inputs(&g);
    let loaded = model.load(dev.as_mut()).unwrap();
    let got = loaded.run(dev.as_mut(), &x).unwrap();
    loaded.free(dev.as_mut());
    let x64: Vec<_> = x.iter().map(|a| a.mapv(f64::from)).collect();
    let want = evaluate(&g, &x64).unwrap();
    // f16: q, k and v stored in f16 (one rounding each), the output rounded once.
    let tol = if precision == Precision::F16 {
        1e-2
    } else {
        1e-5
    };
    let scale = want[0].iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (a, w)) in got[0].iter().zip(want[0].iter()).enumerate() {
        let d = (f64::from(*a) - w).abs();
        assert!(
            d <= tol * scale,
            "{target} {precision:?} {b}x{heads}x{rows}x{t}: element {i} is {a}, want {w}"
        );
    }
}

#[test]
fn split_attention_is_right_on_the_interpreter() {
    for precision in [Precision::F32, Precision::F16] {
        check("cpu", precision, (1, 4, 8, 191));
        check("cpu", precision, (2, 2, 1, 1100));
    }
}

#[test]
fn split_attention_is_right_on_vulkan() {
    for precision in [Precision::F32, Precision::F16] {
        check("vulkan", precision, (1, 4, 8, 191));
    }
}

/// TinyLlama's decode attention (4 KV heads of 8 stacked query rows over 191 cached
/// keys, head size 64) for the H200 in f16: split in 12 chunks, combined in the one
/// kernel (a fence, an atomic), which NVRTC compiles (skipped with the reason printed
/// where NVRTC is absent).
#[test]
fn tinyllama_decode_attention_is_one_kernel_under_nvrtc() {
    let limits = weft_codegen_common::TargetLimits {
        multiprocessors: 132,
        ..weft_codegen_common::TargetLimits::cuda()
    };
    let g = decode_attention(1, 4, 8, 191);
    let one = Choices::none().with_split_last(true);
    let options = CompileOptions::default()
        .with_precision(Precision::F16)
        .with_choices(one);
    let model = CompiledModel::compile(&g, &limits, &options).unwrap();
    let opts = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    let attention: Vec<_> = model
        .groups
        .iter()
        .filter(|gr| gr.schedule.contains("split-KV"))
        .collect();
    assert_eq!(attention.len(), 1, "{}", model.show());
    let group = attention[0];
    assert!(
        group
            .schedule
            .contains("keys split in 12 chunks, the last to arrive combining them"),
        "{}",
        group.schedule
    );
    assert_eq!(group.kernels.kernels.len(), 1, "{}", group.schedule);
    let emitted = weft_codegen_cuda::emit_lowered(&group.kernels, &opts).unwrap();
    assert!(emitted.source.contains("__threadfence()"));
    assert!(emitted.source.contains("atomicAdd("));
    weft_codegen_cuda::nvrtc::check(&emitted.source)
        .unwrap_or_else(|e| panic!("{e}\n{}", emitted.source));
}

/// Where the split-KV form refuses a decode step's attention for its many heads (more
/// than an eighth of the multiprocessors: TinyLlama at batch 8, 32 groups of 8 rows;
/// a Llama whose 32 query heads have a KV head each, one row), CUDA in f16 keeps it as
/// two products and a softmax, measured faster on the H200; at 4 groups it splits, a
/// prefill's rows keep the fused template, and f32 or other targets keep the fused
/// template as before.
#[test]
fn a_decode_attention_over_too_many_heads_to_split_stays_unfused_on_cuda_in_f16() {
    let h200 = weft_codegen_common::TargetLimits {
        multiprocessors: 132,
        ..weft_codegen_common::TargetLimits::cuda()
    };
    let fused = |g: &Graph, limits: &weft_codegen_common::TargetLimits, precision| {
        let options = CompileOptions::default().with_precision(precision);
        let model = CompiledModel::compile(g, limits, &options).unwrap();
        let note = model
            .passes
            .iter()
            .find(|r| r.pass == "recognize attention")
            .and_then(|r| r.note.clone());
        let kernels = model
            .groups
            .iter()
            .filter(|gr| gr.schedule.contains("attention template"))
            .count();
        (kernels > 0, note)
    };
    let f16 = Precision::F16;
    // q, k and v computed (a ReLU of each input), so that an f16 run stores them in f16
    // (`decode_attention`'s halving joins the scale, leaving the f32 graph inputs).
    let computed = |b, heads, rows, t| {
        let mut g = decode_attention(b, heads, rows, t);
        for i in 0..3 {
            let x = g.inputs[i];
            let y = g
                .add_node(
                    format!("relu{i}"),
                    Op::Unary(weft_graph::op::Unary::Relu),
                    vec![x],
                    format!("relu{i}"),
                )
                .unwrap();
            let n = g.nodes.pop().unwrap();
            g.nodes.insert(0, n);
            for n in &mut g.nodes[1..] {
                for input in &mut n.inputs {
                    if *input == x {
                        *input = y;
                    }
                }
            }
        }
        g
    };
    for shape in [(8, 4, 8, 191), (1, 32, 1, 191)] {
        let g = computed(shape.0, shape.1, shape.2, shape.3);
        let (kept, note) = fused(&g, &h200, f16);
        assert!(!kept, "{shape:?} {note:?}");
        assert!(
            note.as_deref()
                .is_some_and(|n| n.contains(weft_model::DECODE_UNFUSED)),
            "{note:?}"
        );
        assert!(fused(&g, &h200, Precision::F32).0, "{shape:?} in f32");
        assert!(
            fused(&g, &weft_codegen_common::TargetLimits::rocm(), f16).0,
            "{shape:?} on rocm"
        );
    }
    // Four groups split; a prefill's 128 rows over 191 keys keep the fused template.
    assert!(fused(&computed(1, 4, 8, 191), &h200, f16).0);
    assert!(fused(&computed(1, 32, 128, 191), &h200, f16).0);
}

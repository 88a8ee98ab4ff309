//! A gated MLP's `silu(gate) · up` computed in the loads of the skinny product after it
//! (`weft_graph::partition::skinny`), through the whole model compiler: written as
//! PyTorch exports it (`gate · Sigmoid(gate) · up`, gate and up two products of one
//! activation — the passes make SiLU one op and the products one, read through two
//! slices), at 1 and 3 rows the chain is in the down-projection's loads where the tiled
//! templates' rule would make it a kernel of its own (1408 columns: read 11× by its
//! reckoning, 66 > 64), and right against the graph's float64 reference on the
//! interpreter and on wgpu (lavapipe in CI), f32 and f16; at 8 rows, and with the rule
//! left out (`skinny-prologue`), the chain is a kernel of its own and still right. The
//! decode step of a Llama (batch 1 and 3, f32 and f16) generates the float64
//! reference's ids with the chain inlined, and at a width where the tiled rule would
//! not inline it the step has one kernel fewer a layer.

mod common;

use ndarray::ArrayD;
use weft_graph::op::{Binary, Op, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::zoo::llama::{LlamaConfig, Seeded};
use weft_graph::zoo::llama_step::{greedy_reference, llama_step};
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::compiled::{HORIZONTAL, SKINNY_PROLOGUE, STAGED_PROLOGUE};
use weft_model::{CompileOptions, CompiledModel, Generator};
use weft_testkit::devices::open_or_skip;

use common::assert_reference_ids;
use weft_testkit::random::Values;

/// The down-projection's columns: past the tiled rule's 1365 for a chain of 6 operations.
const HIDDEN: usize = 1408;
const INTERMEDIATE: usize = 24;

/// `down((gate(x) · sigmoid(gate(x))) · up(x)) + x` at `[1, rows, HIDDEN]`.
fn gated_mlp(rows: usize) -> Graph {
    let mut v = Values(11 + rows as u64);
    let mut b = GraphBuilder::new("gated");
    let x = b.input("x", &[1, rows, HIDDEN], DType::F32);
    let wg = b.weight("wg", v.array(&[HIDDEN, INTERMEDIATE], 0.05));
    let wu = b.weight("wu", v.array(&[HIDDEN, INTERMEDIATE], 0.05));
    let wd = b.weight("wd", v.array(&[INTERMEDIATE, HIDDEN], 0.2));
    let gate = b.node("gate", Op::MatMul, &[x, wg]).unwrap();
    let up = b.node("up", Op::MatMul, &[x, wu]).unwrap();
    let sig = b.unary("act.sigmoid", Unary::Sigmoid, gate).unwrap();
    let act = b.binary("act", Binary::Mul, gate, sig).unwrap();
    let gated = b.binary("gated", Binary::Mul, act, up).unwrap();
    let down = b.node("down", Op::MatMul, &[gated, wd]).unwrap();
    let out = b.add("residual", down, x).unwrap();
    b.output(out);
    b.finish().unwrap()
}

/// Compiles and runs `g` on each target that opens, in f32 and f16, against the float64
/// reference; returns each compile's partition as shown and its kernels.
fn check(g: &Graph, rows: usize, disabled: &[String]) -> Vec<(String, usize)> {
    let x = Values(3).array(&[1, rows, HIDDEN], 1.0);
    let want = evaluate(g, &[x.mapv(f64::from)]).unwrap();
    let scale = want[0].iter().fold(0f64, |m, v| m.max(v.abs()));
    let mut shown = Vec::new();
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for precision in [Precision::F32, Precision::F16] {
            if precision == Precision::F16 && !dev.limits().f16 {
                eprintln!("{} has no f16: skipped", dev.name());
                continue;
            }
            let opts = CompileOptions::default()
                .with_skinny_prologue(true)
                .with_precision(precision)
                .with_disabled(disabled);
            let model = CompiledModel::compile(g, &dev.limits(), &opts).unwrap();
            let text = model.show();
            let exe = model.load(dev.as_mut()).unwrap();
            let got: Vec<ArrayD<f32>> = exe.run(dev.as_mut(), std::slice::from_ref(&x)).unwrap();
            exe.free(dev.as_mut());
            let err = got[0].iter().zip(want[0].iter()).fold(0f64, |m, (&a, &b)| {
                let d = (f64::from(a) - b).abs();
                if d.is_nan() { f64::INFINITY } else { m.max(d) }
            }) / scale;
            let tol = match precision {
                Precision::F32 => 1e-5,
                _ => 1e-2,
            };
            eprintln!("{target} {precision:?} {rows} row(s): error {err:.2e}");
            assert!(err <= tol, "{target} {precision:?}: {err}\n{text}");
            shown.push((text, model.kernel_count()));
        }
    }
    shown
}

/// The decision line's fate for the down-projection's chain.
fn fate(shown: &str) -> &str {
    let line = shown
        .lines()
        .find(|l| l.starts_with("prologue of down:MatMul (input 0)"))
        .unwrap_or_else(|| panic!("no decision for the down-projection:\n{shown}"));
    line.rsplit(": ").next().unwrap()
}

#[test]
fn the_gated_chain_is_computed_in_a_skinny_products_loads() {
    for rows in [1, 3] {
        for (shown, kernels) in check(&gated_mlp(rows), rows, &[]) {
            assert_eq!(fate(&shown), "in the anchor's loads", "{shown}");
            assert!(
                shown.contains(&format!("(skinny product, {rows} row(s))"))
                    && shown.contains("act::silu:Silu")
                    && shown.contains("gate::columns:Slice"),
                "{shown}"
            );
            // The merged gate/up product, and the down-projection with the chain.
            assert_eq!(kernels, 2, "{shown}");
        }
    }
}

#[test]
fn past_the_budget_or_left_out_the_chain_is_a_kernel_of_its_own() {
    // 8 rows: 8 · 6 operations per 16 bytes of the weight, past 32.
    for (shown, kernels) in check(&gated_mlp(8), 8, &[]) {
        assert_eq!(fate(&shown), "a kernel of its own", "{shown}");
        assert!(shown.contains("(skinny product, 8 row(s))"), "{shown}");
        assert_eq!(kernels, 3, "{shown}");
    }
    // Priced as the tiled templates' chains are: by the staged rule (it computes, so a
    // kernel of its own), or with that left out too by the tiled rule (read 11×, 66 > 64).
    for (shown, kernels) in check(&gated_mlp(1), 1, &[SKINNY_PROLOGUE.to_string()]) {
        assert_eq!(fate(&shown), "a kernel of its own", "{shown}");
        assert!(
            shown.contains("computed at the loads of a staged template"),
            "{shown}"
        );
        assert_eq!(kernels, 3, "{shown}");
    }
    let off = [SKINNY_PROLOGUE.to_string(), STAGED_PROLOGUE.to_string()];
    for (shown, kernels) in check(&gated_mlp(1), 1, &off) {
        assert_eq!(fate(&shown), "a kernel of its own", "{shown}");
        assert!(shown.contains("× read 11.0× = 66 > 64"), "{shown}");
        assert_eq!(kernels, 3, "{shown}");
    }
}

/// A Llama of `hidden` wide, `intermediate` in its MLP.
fn llama(layers: usize, hidden: usize, intermediate: usize) -> LlamaConfig {
    LlamaConfig {
        layers,
        hidden,
        heads: 4,
        kv_heads: 2,
        head_dim: hidden / 4,
        intermediate,
        vocab: 300,
        max_positions: 64,
        ..LlamaConfig::tiny_llama()
    }
}

const SEED: u64 = 7;

/// The decode step (batch 1 and 3, f32 and f16) with each layer's `silu(gate) · up` in
/// its down-projection's loads generates the float64 reference's ids (in f16 up to a
/// near tie: the reference's top two logits within 2·10⁻²).
#[test]
fn a_decode_step_with_the_chain_inlined_generates_the_reference() {
    let cfg = llama(2, 64, 128);
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for (batch, precision) in [
            (1, Precision::F32),
            (3, Precision::F32),
            (1, Precision::F16),
            (3, Precision::F16),
        ] {
            let (len, new) = (4, 6);
            let p: Vec<Vec<i32>> = (0..batch)
                .map(|b| {
                    (0..len)
                        .map(|i| ((b * 37 + i * 11 + 5) % 300) as i32)
                        .collect()
                })
                .collect();
            let picks = greedy_reference(&cfg, &mut Seeded(SEED), &p, new).unwrap();
            let limits = dev.limits();
            let options = CompileOptions::default()
                .with_skinny_prologue(true)
                .with_precision(precision);
            let step = |seq| {
                let sizes = (batch, seq, len + new);
                let g = llama_step("t", &cfg, sizes, precision.dtype(), &mut Seeded(SEED));
                CompiledModel::compile(&g.unwrap(), &limits, &options).unwrap()
            };
            let (prefill, decode) = (step(len), step(1));
            let shown = decode.show();
            let inlined = format!("(skinny product, {batch} row(s)): in the anchor's loads");
            let down = shown
                .lines()
                .filter(|l| l.contains("down_proj") && l.contains(&inlined))
                .count();
            assert_eq!(down, cfg.layers, "{target} {precision:?}:\n{shown}");
            let gen_ = Generator::load(&prefill, &decode, dev.as_mut()).unwrap();
            let got = gen_.generate(dev.as_mut(), &p, new).unwrap();
            gen_.free(dev.as_mut());
            assert_reference_ids(
                &got.ids,
                &picks,
                precision,
                &format!("{target} batch {batch}"),
            );
        }
    }
}

/// At 1536 wide (the tiled rule: 6 operations × read 12× = 72 > 64) the decode step's
/// `silu(gate) · up` is no kernel of its own: one kernel fewer a layer than with the
/// rule left out, in f32 and f16; at 8 sequences (8 · 6 operations per 16 bytes of the
/// weight, past 32) it stays a kernel of its own. Compiled only (the interpreter would
/// take minutes over these weights).
#[test]
fn the_decode_step_has_one_kernel_fewer_a_layer() {
    let cfg = llama(2, 1536, 64);
    let dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let limits = dev.limits();
    for precision in [Precision::F32, Precision::F16] {
        let compile = |batch, disabled: &[String]| {
            let g = llama_step(
                "t",
                &cfg,
                (batch, 1, 8),
                precision.dtype(),
                &mut Seeded(SEED),
            );
            let options = CompileOptions::default()
                .with_skinny_prologue(true)
                .with_precision(precision)
                .with_disabled(disabled);
            CompiledModel::compile(&g.unwrap(), &limits, &options).unwrap()
        };
        let off = [SKINNY_PROLOGUE.to_string()];
        let (on, without) = (compile(1, &[]), compile(1, &off));
        let shown = on.show();
        let inlined = "(skinny product, 1 row(s)): in the anchor's loads";
        assert_eq!(shown.matches(inlined).count(), cfg.layers, "{shown}");
        assert_eq!(
            on.kernel_count() + cfg.layers,
            without.kernel_count(),
            "{precision:?}\n{shown}"
        );
        // The same with horizontal fusion off on both sides: the chain's kernel joined
        // nothing.
        let joined = HORIZONTAL.to_string();
        assert_eq!(
            compile(1, std::slice::from_ref(&joined)).kernel_count() + cfg.layers,
            compile(1, &[off[0].clone(), joined]).kernel_count()
        );
        let shown = compile(8, &[]).show();
        let kept = "(skinny product, 8 row(s)): a kernel of its own";
        assert_eq!(shown.matches(kept).count(), cfg.layers, "{shown}");
    }
}

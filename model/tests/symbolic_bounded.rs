//! A symbolic model's kernels bounded by its symbol's value (`bound_rows::bound_symbol`,
//! issue 60 item 1): compiled once for `seq ∈ 1..MAX`, a kernel storing rows of the
//! sequence reads the run's length at its start and its blocks past it do nothing. On
//! the interpreter the zoo's BERT and GPT-2 (tiny) give the unbounded compile's outputs
//! bit for bit at several lengths (each run poisons every intermediate with NaN first,
//! so a row past the length that something still read would show), in f32 and f16;
//! the blocks that run fall with the length; offline for an H200 the products are among
//! the bounded kernels; `--disable-pass symbol-bound` and WGSL leave every kernel whole.

use ndarray::{ArrayD, IxDyn};
use weft_graph::Symbol;
use weft_graph::passes::Precision;
use weft_graph::zoo::transformer::{Family, TransformerConfig, transformer};
use weft_model::{CompileOptions, CompiledModel, SYMBOL_BOUND};

const MAX: usize = 24;
const BATCH: usize = 1;

fn symbolic(family: Family) -> weft_graph::Graph {
    let cfg = TransformerConfig::tiny(family);
    let mut g = transformer("t", &cfg, BATCH, MAX, 5).unwrap();
    g.symbols.push(Symbol {
        name: "seq".into(),
        min: 1,
        max: MAX,
        dims: vec![(g.inputs[0], 1)],
        rows: Vec::new(),
    });
    g
}

fn ids(n: usize) -> Vec<ArrayD<f32>> {
    vec![ArrayD::from_shape_fn(IxDyn(&[BATCH, n]), |ix| {
        ((ix[0] * 13 + ix[1] * 7 + n) % 97) as f32
    })]
}

fn compile(
    g: &weft_graph::Graph,
    limits: &weft_codegen_common::TargetLimits,
    p: Precision,
    bounded: bool,
) -> CompiledModel {
    let mut options = CompileOptions::default().with_precision(p);
    if !bounded {
        options.disabled.push(SYMBOL_BOUND.to_string());
    }
    CompiledModel::compile(g, limits, &options).unwrap()
}

fn bits(y: &ArrayD<f32>) -> Vec<u32> {
    y.iter().map(|v| v.to_bits()).collect()
}

fn bit_for_bit(p: Precision) {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let limits = dev.limits();
    for family in [Family::Bert, Family::Gpt2] {
        let g = symbolic(family);
        let (plain, bounded) = (
            compile(&g, &limits, p, false),
            compile(&g, &limits, p, true),
        );
        assert!(plain.bounded.kernels.is_empty() && plain.bounded.off.is_none());
        assert_eq!(bounded.bounded.off, None, "{family:?}");
        assert!(
            !bounded.bounded.kernels.is_empty(),
            "{family:?}: nothing bounded"
        );
        let (a, b) = (
            plain.load(dev.as_mut()).unwrap(),
            bounded.load(dev.as_mut()).unwrap(),
        );
        // The maximum first, so that a shorter run finds the buffers full of another
        // run's rows as well as the poison.
        for n in [MAX, 1, 5, 17] {
            let want = a.run_at(dev.as_mut(), &[("seq", n)], &ids(n)).unwrap();
            let got = b.run_at(dev.as_mut(), &[("seq", n)], &ids(n)).unwrap();
            assert_eq!(want.len(), got.len());
            for (o, (w, g)) in want.iter().zip(&got).enumerate() {
                assert_eq!(w.shape(), g.shape(), "{family:?} {p:?} at {n}: output {o}");
                assert!(
                    w.iter().all(|v| v.is_finite()),
                    "{family:?} {p:?} at {n}: output {o} of the unbounded run is not finite"
                );
                assert!(
                    bits(w) == bits(g),
                    "{family:?} {p:?} at {n}: output {o} differs from the unbounded run"
                );
            }
        }
        a.free(dev.as_mut());
        b.free(dev.as_mut());
    }
}

#[test]
fn bounded_symbolic_models_equal_the_unbounded_bit_for_bit_f32() {
    bit_for_bit(Precision::F32);
}

#[test]
fn bounded_symbolic_models_equal_the_unbounded_bit_for_bit_f16() {
    bit_for_bit(Precision::F16);
}

/// The blocks that run their body fall with the length, and at the maximum every block
/// runs.
#[test]
fn the_blocks_that_run_fall_with_the_length() {
    let limits = weft_runtime::Target::parse("cpu").unwrap().limits();
    for family in [Family::Bert, Family::Gpt2] {
        let m = compile(&symbolic(family), &limits, Precision::F32, true);
        let at: Vec<(u64, u64)> = [1, 5, 17, MAX]
            .iter()
            .map(|&n| m.bounded.blocks_at(n))
            .collect();
        let all = at[0].1;
        assert_eq!(at[3], (all, all), "{family:?}: {at:?}");
        assert!(
            at[0].0 <= at[1].0 && at[1].0 < at[2].0 && at[2].0 < at[3].0,
            "{family:?}: {at:?}"
        );
    }
}

/// Offline for an H200, f16: the products over the sequence's rows are bounded (their
/// kernels' names carry the weights they read).
#[test]
fn on_hopper_the_products_are_bounded() {
    let limits = weft_runtime::Target::parse("cuda -arch=sm_90a")
        .unwrap()
        .limits();
    for family in [Family::Bert, Family::Gpt2] {
        let m = compile(&symbolic(family), &limits, Precision::F16, true);
        assert_eq!(m.bounded.off, None);
        let names: Vec<&str> = m
            .bounded
            .kernels
            .iter()
            .map(|k| k.kernel.as_str())
            .collect();
        assert!(names.len() >= 4, "{family:?}: {names:?}");
        let (run, all) = m.bounded.blocks_at(1);
        assert!(run < all, "{family:?}: {run} of {all}");
    }
}

/// Off where asked (`--disable-pass symbol-bound`), and on WGSL (a barrier under a
/// condition read from a buffer), the reason kept; a static graph has nothing to bound.
#[test]
fn off_where_asked_or_where_it_cannot_be_taken() {
    let g = symbolic(Family::Gpt2);
    let cpu = weft_runtime::Target::parse("cpu").unwrap().limits();
    let m = compile(&g, &cpu, Precision::F32, false);
    assert!(m.bounded.kernels.is_empty());
    let webgpu = weft_codegen_common::TargetLimits::webgpu_default();
    let m = compile(&g, &webgpu, Precision::F32, true);
    assert!(m.bounded.kernels.is_empty());
    assert!(m.bounded.off.as_deref().unwrap().contains("webgpu"));
    let mut fixed = g.clone();
    fixed.symbols.clear();
    let m = compile(&fixed, &cpu, Precision::F32, true);
    assert!(m.bounded.kernels.is_empty() && m.bounded.off.is_none());
}

//! The symbolic rewrite in float64: a graph bound once and evaluated at several lengths
//! on inputs whose padding holds large values, against the same graph built at each
//! length; the same graph unbound must differ (the masks are what make it right).

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use super::*;
use crate::GraphBuilder;
use crate::op::{LayerNorm, Reduce, ReduceKind, Reshape, Softmax, Transpose};
use crate::reference::evaluate;

const MAX: usize = 8;

/// `x` `[2, s, 4]`: a softmax over the sequence, a product contracting it (`xᵀ·x`), a
/// mean and a maximum over it, and a softmax over the sequence merged with the batch.
fn mixing(s: usize) -> Graph {
    let mut b = GraphBuilder::new("mixing");
    let x = b.input("x", &[2, s, 4], DType::F32);
    let soft = b
        .node("soft", Op::Softmax(Softmax { axis: 1 }), &[x])
        .unwrap();
    let xt = b
        .node(
            "xt",
            Op::Transpose(Transpose {
                perm: vec![0, 2, 1],
            }),
            &[x],
        )
        .unwrap();
    let gram = b.node("gram", Op::MatMul, &[xt, x]).unwrap();
    let reduce = |kind| {
        Op::Reduce(Reduce {
            kind,
            axes: vec![1],
            keep_dims: false,
        })
    };
    let mean = b.node("mean", reduce(ReduceKind::Mean), &[x]).unwrap();
    let max = b.node("max", reduce(ReduceKind::Max), &[x]).unwrap();
    let merged = b
        .node(
            "merged",
            Op::Reshape(Reshape {
                shape: vec![2 * s, 4],
            }),
            &[x],
        )
        .unwrap();
    let soft_merged = b
        .node("soft_merged", Op::Softmax(Softmax { axis: 0 }), &[merged])
        .unwrap();
    for t in [soft, gram, mean, max, soft_merged] {
        b.output(t);
    }
    b.finish().unwrap()
}

fn symbolic(mut g: Graph) -> Graph {
    let x = g.inputs[0];
    g.symbols.push(Symbol {
        name: "seq".into(),
        min: 1,
        max: MAX,
        dims: vec![(x, 1)],
        rows: Vec::new(),
    });
    g
}

fn input(s: usize) -> ArrayD<f64> {
    ArrayD::from_shape_fn(IxDyn(&[2, s, 4]), |ix| {
        ((ix[0] * 31 + ix[1] * 7 + ix[2] * 3) % 11) as f64 / 5.0 - 1.0
    })
}

/// `input(n)` at the maximum, its padding large (what a wrong mask would let through).
fn padded(n: usize) -> ArrayD<f64> {
    let x = input(n);
    ArrayD::from_shape_fn(IxDyn(&[2, MAX, 4]), |ix| {
        if ix[1] < n {
            x[[ix[0], ix[1], ix[2]]]
        } else {
            50.0 + ix[1] as f64
        }
    })
}

fn worst(a: &[ArrayD<f64>], b: &[ArrayD<f64>]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            assert_eq!(x.shape(), y.shape());
            (x - y).mapv(f64::abs).fold(0.0f64, |m, &v| m.max(v))
        })
        .fold(0.0, f64::max)
}

#[test]
fn a_bound_graph_at_n_is_the_graph_built_at_n() {
    let g = symbolic(mixing(MAX));
    let (bound, binding) = bind(&g).unwrap();
    assert!(bound.symbols.is_empty());
    let s = &binding.symbols[0];
    assert_eq!(s.inputs, vec![vec![SymDim::whole(1)]]);
    // soft [2, s, 4], gram [2, 4, 4], mean and max [2, 4], soft_merged [2·s, 4].
    assert_eq!(
        s.outputs,
        vec![
            vec![SymDim::whole(1)],
            vec![],
            vec![],
            vec![],
            vec![SymDim::whole(0)]
        ]
    );
    for n in [1, 3, MAX] {
        let want = evaluate(&mixing(n), &[input(n)]).unwrap();
        let value = ArrayD::from_elem(IxDyn(&[1]), n as f64);
        let got = evaluate(&bound, &[padded(n), value]).unwrap();
        let cut32: Vec<ArrayD<f64>> = got
            .iter()
            .zip(&s.outputs)
            .map(|(y, d)| cut(&y.mapv(|v| v as f32), d, n, MAX).mapv(f64::from))
            .collect();
        let err = worst(&cut32, &want);
        assert!(err < 1e-5, "at {n}: {err}");
        // Unbound, the padding reaches the rows below n.
        let unmasked = evaluate(&mixing(MAX), &[padded(n)]).unwrap();
        let unmasked: Vec<ArrayD<f64>> = unmasked
            .iter()
            .zip(&s.outputs)
            .map(|(y, d)| cut(&y.mapv(|v| v as f32), d, n, MAX).mapv(f64::from))
            .collect();
        let off = worst(&unmasked, &want);
        assert!(
            n == MAX || off > 1.0,
            "at {n} the padding went unseen: {off}"
        );
    }
}

#[test]
fn pad_and_cut_place_rows_where_the_maximum_holds_them() {
    let x = ArrayD::from_shape_fn(IxDyn(&[2, 3 * 4]), |ix| (ix[0] * 100 + ix[1]) as f32);
    // Axis 1 is [s, 4] merged: the symbol's positions by 4.
    let d = [SymDim { axis: 1, inner: 4 }];
    let p = pad(&x, &d, 3, 5);
    assert_eq!(p.shape(), &[2, 20]);
    assert_eq!(p[[1, 11]], 111.0);
    assert_eq!(p[[1, 12]], 0.0);
    assert_eq!(cut(&p, &d, 3, 5), x);
}

#[test]
fn a_norm_over_the_symbol_is_refused_naming_the_node() {
    let mut b = GraphBuilder::new("norm");
    let x = b.input("x", &[2, MAX, 4], DType::F32);
    let ln = LayerNorm {
        axis: 1,
        epsilon: 1e-5,
        rms: true,
    };
    let scale = b.weight("scale", ArrayD::from_elem(IxDyn(&[MAX, 4]), 1.0));
    let y = b
        .node("norm_over_seq", Op::LayerNorm(ln), &[x, scale])
        .unwrap();
    b.output(y);
    let g = symbolic(b.finish().unwrap());
    let e = bind(&g).unwrap_err();
    assert!(
        matches!(&e, GraphError::Symbolic { node, symbol, .. } if node == "norm_over_seq" && symbol == "seq"),
        "{e}"
    );
}

/// The zoo's BERT and GPT-2 (tiny) built at the maximum with `seq` a symbol, bound, and
/// evaluated at shorter lengths: what the same zoo model built at each length computes
/// (its position table's first rows, GPT-2's causal mask's top-left corner, BERT's
/// pooler on token 0).
#[test]
fn zoo_transformers_with_a_symbolic_sequence_match_those_built_at_each_length() {
    use crate::zoo::transformer::{Family, TransformerConfig, transformer};
    const MAX: usize = 12;
    for family in [Family::Bert, Family::Gpt2] {
        let cfg = TransformerConfig::tiny(family);
        let mut g = transformer("t", &cfg, 2, MAX, 5).unwrap();
        g.symbols.push(Symbol {
            name: "seq".into(),
            min: 1,
            max: MAX,
            dims: vec![(g.inputs[0], 1)],
            rows: Vec::new(),
        });
        let (bound, binding) = bind(&g).unwrap();
        let s = &binding.symbols[0];
        for n in [1, 5, MAX] {
            let ids =
                ArrayD::from_shape_fn(IxDyn(&[2, n]), |ix| ((ix[0] * 13 + ix[1] * 7) % 97) as f32);
            let want = evaluate(
                &transformer("t", &cfg, 2, n, 5).unwrap(),
                &[ids.mapv(f64::from)],
            )
            .unwrap();
            let padded = pad(&ids, &s.inputs[0], n, MAX).mapv(f64::from);
            let value = ArrayD::from_elem(IxDyn(&[1]), n as f64);
            let got: Vec<ArrayD<f64>> = evaluate(&bound, &[padded, value])
                .unwrap()
                .iter()
                .zip(&s.outputs)
                .map(|(y, d)| cut(&y.mapv(|v| v as f32), d, n, MAX).mapv(f64::from))
                .collect();
            let err = worst(&got, &want);
            assert!(err < 1e-5, "{family:?} at {n}: {err}");
        }
    }
}

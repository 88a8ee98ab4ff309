//! Graphs the partition's unit tests share (compiled for tests only).

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use crate::Graph;
use crate::builder::GraphBuilder;
use crate::op::{Binary, Op, Slice, Unary};

/// How [`gated_mlp`] varies the pattern.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Variant {
    /// `up · silu(gate)` instead of `silu(gate) · up`.
    pub swap: bool,
    /// Where the up slice starts (default: right after the gate's, at `i`).
    pub up_from: Option<usize>,
    /// Sigmoids after the SiLU (a dearer chain).
    pub sigmoids: usize,
}

/// A gated MLP at `rows` rows: `down(silu(gu[.., :i]) · gu[.., i:])`, `gu = x · wgu`
/// (hidden 32, intermediate 64, f32, constant weights), as `variant` changes it.
pub(super) fn gated_mlp(name: &str, rows: usize, variant: Variant) -> Graph {
    let (h, i) = (32, 64);
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", &[1, rows, h], DType::F32);
    let wgu = b.weight("wgu", ArrayD::from_elem(IxDyn(&[h, 2 * i]), 0.1));
    let wd = b.weight("wd", ArrayD::from_elem(IxDyn(&[i, h]), 0.1));
    let gu = b.node("gate_up", Op::MatMul, &[x, wgu]).unwrap();
    let slice = |b: &mut GraphBuilder, name: &str, from: usize| {
        let s = Op::Slice(Slice {
            starts: vec![0, 0, from],
            steps: vec![1, 1, 1],
            sizes: vec![1, rows, i],
        });
        b.node(name, s, &[gu]).unwrap()
    };
    let gate = slice(&mut b, "gate", 0);
    let up = slice(&mut b, "up", variant.up_from.unwrap_or(i));
    let mut act = b.unary("silu", Unary::Silu, gate).unwrap();
    for j in 0..variant.sigmoids {
        act = b.unary(format!("sig{j}"), Unary::Sigmoid, act).unwrap();
    }
    let (l, r) = if variant.swap { (up, act) } else { (act, up) };
    let y = b.binary("gated", Binary::Mul, l, r).unwrap();
    let out = b.node("down", Op::MatMul, &[y, wd]).unwrap();
    b.output(out);
    b.finish().unwrap()
}

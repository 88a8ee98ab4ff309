//! Graphs as long as a careless or hostile file makes them: nothing in the model compiler
//! recurses once per node. Lowering did (`Values::at` once per fused node: 12,500 fused
//! Relus overflowed the stack and aborted); the partition now cuts a chain into groups
//! no deeper than [`MAX_INLINE_DEPTH`].

use ndarray::{ArrayD, IxDyn};
use weft_graph::partition::{MAX_INLINE_DEPTH, partition};
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::CompileOptions;
use weft_model::measure::{Measure, Reference, measure};
use weft_testkit::devices::open_or_skip;

/// `x → Relu → Relu → ... → y`, `n` nodes, on a `[2, 3]` input.
fn chain(n: usize) -> Graph {
    let mut b = GraphBuilder::new("chain");
    let mut t = b.input("x", &[2, 3], DType::F32);
    for i in 0..n {
        t = b.relu(format!("relu{i}"), t).unwrap();
    }
    b.output(t);
    b.finish().unwrap()
}

/// A million nodes: built (each one's shape inferred), validated and partitioned into
/// groups of bounded depth, in seconds.
#[test]
fn a_million_relus_are_cut_into_groups_of_bounded_depth() {
    let n = 1_000_000;
    let g = chain(n);
    let p = partition(&g);
    let longest = p.groups.iter().map(|gr| gr.prologue.len()).max();
    assert_eq!(
        longest,
        Some(MAX_INLINE_DEPTH),
        "a chain's group is as deep as allowed"
    );
    assert_eq!(p.groups.len(), n.div_ceil(MAX_INLINE_DEPTH + 1));
    // Every node in exactly one group.
    let placed: usize = p.groups.iter().map(|gr| gr.nodes().count()).sum();
    assert_eq!(placed, n);
}

/// Past the old overflow (12,500 fused Relus), compiled, run on the interpreter and
/// checked against the float64 reference on inputs of both signs.
#[test]
fn a_chain_longer_than_the_stack_once_allowed_runs_right() {
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let g = chain(20_000);
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![-1.5, 2.0, -0.25, 0.5, -3.0, 4.0]).unwrap();
    let inputs = [x];
    let m = Measure {
        inputs: Some(&inputs),
        reference: Reference::Float64,
        warmup: 0,
        iters: 1,
        whole: false,
        each: false,
    };
    let measured = measure(&g, dev.as_mut(), &CompileOptions::default(), &m).unwrap();
    assert!(measured.model.groups.len() > 100, "the chain is cut");
    assert_eq!(
        measured.outputs[0].as_slice().unwrap(),
        [0.0, 2.0, 0.0, 0.5, 0.0, 4.0]
    );
    assert!(measured.wrong().is_none(), "{:?}", measured.checked);
}

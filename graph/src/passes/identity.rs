//! Identity removal: `y = Identity(x)` (and inference Dropout, imported as Identity)
//! goes, its readers reading `x`. An identity between a graph input and a graph output
//! stays: the output must still be written.

use super::{PassContext, replace_uses};
use crate::graph::Graph;
use crate::op::Op;

/// Removes identities; returns how many.
pub fn remove_identities(g: &mut Graph, _: &PassContext) -> usize {
    let mut removed = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let n = &g.nodes[i];
        if n.op == Op::Identity && n.inputs.len() == 1 {
            let (x, y) = (n.inputs[0], n.output);
            let y_is_output = g.outputs.contains(&y);
            // An output keeps its name: only fold when the output is not a graph output,
            // or its source is computed by a node that can write the output instead.
            if !y_is_output {
                replace_uses(g, y, x);
                g.nodes.remove(i);
                removed += 1;
                continue;
            }
            let producer = g.nodes.iter().position(|m| m.output == x);
            let x_is_output = g.outputs.contains(&x);
            if let (Some(p), false) = (producer, x_is_output) {
                // The producer writes `y` directly; other readers of `x` read `y`.
                for m in &mut g.nodes {
                    for input in &mut m.inputs {
                        if *input == x {
                            *input = y;
                        }
                    }
                }
                g.nodes[p].output = y;
                g.nodes.remove(i);
                removed += 1;
                continue;
            }
        }
        i += 1;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::passes::testing::rewrite;
    use weft_ir::dtype::DType;

    #[test]
    fn identities_go_and_outputs_keep_their_names() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[3, 5], DType::F32);
        let a = b.node("id0", Op::Identity, &[x]).unwrap();
        let r = b.relu("relu", a).unwrap();
        let y = b.node("id1", Op::Identity, &[r]).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        // The ReLU writes the output `id1` itself.
        rewrite(&g, remove_identities).check(
            2,
            "
            graph t (1 nodes, 0 parameters)
              input  %x: f32[3,5]
              %id1 = Relu(%x): f32[3,5]    # relu
              output %id1
            ",
            0.0,
        );
    }

    #[test]
    fn an_input_passed_straight_out_keeps_its_identity() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[4], DType::F32);
        let y = b.node("id", Op::Identity, &[x]).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        rewrite(&g, remove_identities).check(
            0,
            "
            graph t (1 nodes, 0 parameters)
              input  %x: f32[4]
              %id = Identity(%x): f32[4]    # id
              output %id
            ",
            0.0,
        );
    }
}

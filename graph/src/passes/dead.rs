//! Dead-node removal: a node no output needs (through any chain of readers) goes.

use std::collections::HashSet;

use super::PassContext;
use crate::graph::{Graph, TensorId};

/// Removes dead nodes; returns how many.
pub fn remove_dead(g: &mut Graph, _: &PassContext) -> usize {
    let mut live: HashSet<TensorId> = g.outputs.iter().copied().collect();
    let mut keep = vec![false; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate().rev() {
        if live.contains(&n.output) {
            keep[i] = true;
            live.extend(n.inputs.iter().copied());
        }
    }
    let before = g.nodes.len();
    let mut it = keep.iter();
    g.nodes.retain(|_| *it.next().unwrap_or(&true));
    before - g.nodes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::passes::testing::rewrite;
    use weft_ir::dtype::DType;

    #[test]
    fn unused_branches_go() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[4], DType::F32);
        let a = b.relu("a", x).unwrap();
        let dead = b.relu("dead", a).unwrap();
        let _dead2 = b.add("dead2", dead, a).unwrap();
        let y = b.relu("y", a).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        rewrite(&g, remove_dead).check(
            2,
            "
            graph t (2 nodes, 0 parameters)
              input  %x: f32[4]
              %a = Relu(%x): f32[4]    # a
              %y = Relu(%a): f32[4]    # y
              output %y
            ",
            0.0,
        );
    }
}

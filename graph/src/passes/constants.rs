//! Constant folding: a node whose inputs are all constants (weights, `Constant` nodes,
//! folded results) is evaluated at compile time, in float64 by the reference, and its
//! output becomes a constant. A graph output is left computed.

use std::sync::Arc;

use ndarray::ArrayD;

use super::PassContext;
use crate::graph::Graph;
use crate::reference::apply;

/// Folds constant nodes; returns how many.
pub fn fold_constants(g: &mut Graph, _: &PassContext) -> usize {
    let mut folded = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let n = &g.nodes[i];
        let all_constant = n.inputs.iter().all(|&t| g.tensor(t).is_constant());
        if all_constant && !g.outputs.contains(&n.output) {
            let values: Vec<ArrayD<f64>> = n
                .inputs
                .iter()
                .map(|&t| {
                    // Checked constant just above.
                    let data = g.tensor(t).data.as_ref().expect("a constant");
                    data.mapv(f64::from)
                })
                .collect();
            let refs: Vec<&ArrayD<f64>> = values.iter().collect();
            let value = apply(&n.op, &refs).mapv(|v| v as f32);
            let out = n.output;
            g.tensors[out.0].data = Some(Arc::new(value));
            g.nodes.remove(i);
            folded += 1;
            continue;
        }
        i += 1;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::passes::testing::rewrite;
    use ndarray::IxDyn;
    use weft_ir::dtype::DType;

    #[test]
    fn constant_subgraphs_fold() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[2, 3], DType::F32);
        let c = b.weight(
            "c",
            ArrayD::from_shape_vec(IxDyn(&[3]), vec![1.0, -2.0, 4.0]).unwrap(),
        );
        let c2 = b.relu("relu_c", c).unwrap();
        let c3 = b.add("c_plus", c2, c2).unwrap();
        let y = b.add("y", x, c3).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let r = rewrite(&g, fold_constants);
        r.check(
            2,
            "
            graph t (1 nodes, 3 parameters)
              input  %x: f32[2,3]
              %y = Add(%x, %c_plus): f32[2,3]    # y
              output %y
            ",
            0.0,
        );
        let folded = r.after.tensors.iter().find(|t| t.name == "c_plus").unwrap();
        assert_eq!(
            folded.data.as_ref().unwrap().as_slice().unwrap(),
            &[2.0, 0.0, 8.0]
        );
    }
}

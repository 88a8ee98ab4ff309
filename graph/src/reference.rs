//! The float64 reference: every op of a graph evaluated in `f64` with ndarray, one node
//! after another, independent of every schedule, template and device. `weft model run`
//! checks against it where the input is small enough, and the tests check weft's
//! kernels and ONNX Runtime against it.
//!
//! Each op's reference is in its module ([`crate::op::OpDef::reference`]); this is the
//! walk over the graph.

use std::collections::HashMap;

use ndarray::ArrayD;

use crate::graph::{Graph, GraphError, Tensor, TensorId};
use crate::indices;
use crate::op::Op;

/// The graph's outputs for `inputs` (one per graph input, in order), in float64.
pub fn evaluate(graph: &Graph, inputs: &[ArrayD<f64>]) -> Result<Vec<ArrayD<f64>>, GraphError> {
    let values = evaluate_all(graph, inputs)?;
    Ok(graph.outputs.iter().map(|o| values[o].clone()).collect())
}

/// Every tensor's value (inputs, weights and every node's output), for looking inside.
pub fn evaluate_all(
    graph: &Graph,
    inputs: &[ArrayD<f64>],
) -> Result<HashMap<TensorId, ArrayD<f64>>, GraphError> {
    graph.validate()?;
    graph.check_element_counts()?;
    crate::inputs::check_indices(graph, inputs)?;
    if inputs.len() != graph.inputs.len() {
        return Err(GraphError::Input {
            name: graph.name.clone(),
            what: format!(
                "the graph takes {} inputs, {} were given",
                graph.inputs.len(),
                inputs.len()
            ),
        });
    }
    let mut values: HashMap<TensorId, ArrayD<f64>> = HashMap::new();
    for (&id, x) in graph.inputs.iter().zip(inputs) {
        let t = graph.tensor(id);
        if x.shape() != t.shape.as_slice() {
            return Err(GraphError::Input {
                name: t.name.clone(),
                what: format!("shape {:?} given, the graph takes {:?}", x.shape(), t.shape),
            });
        }
        values.insert(id, x.clone());
    }
    for (i, t) in graph.tensors.iter().enumerate() {
        if let Some(data) = &t.data {
            values.insert(TensorId(i), data.mapv(f64::from));
        }
    }
    for node in &graph.nodes {
        let ins: Vec<&ArrayD<f64>> = node.inputs.iter().map(|i| &values[i]).collect();
        // ONNX makes an index out of range an error: refused, not computed.
        let tensors: Vec<&Tensor> = node.inputs.iter().map(|&i| graph.tensor(i)).collect();
        if let Some(b) = indices::bounds(&node.op, &tensors)
            && let Some(bad) = indices::first_outside(ins[b.input].iter().copied(), &b.rows)
        {
            return Err(indices::out_of_range(
                (&node.name, &node.op),
                tensors[b.input],
                bad,
            ));
        }
        let out = apply(&node.op, &ins);
        debug_assert_eq!(out.shape(), graph.tensor(node.output).shape.as_slice());
        values.insert(node.output, out);
    }
    Ok(values)
}

/// One op on float64 values whose shapes inference has already accepted.
pub fn apply(op: &Op, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
    op.def().reference(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use ndarray::IxDyn;
    use weft_ir::dtype::DType;

    #[test]
    fn evaluates_a_small_graph() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[2, 3], DType::F32);
        let w = b.weight(
            "w",
            ArrayD::from_shape_vec(IxDyn(&[4, 3]), (0..12).map(|v| v as f32).collect()).unwrap(),
        );
        let bias = b.weight(
            "b",
            ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.0, -1.0, 0.5, 0.0]).unwrap(),
        );
        let y = b.linear("fc", x, w, bias).unwrap();
        let y = b.relu("relu", y).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let input =
            ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0, 0.0, 0.0, 0.0, 0.0, -1.0]).unwrap();
        let out = evaluate(&g, &[input]).unwrap();
        // Row 0 picks w[:, 0] = [0, 3, 6, 9] + bias; row 1 is −w[:, 2] + bias, clamped.
        assert_eq!(
            out[0].as_slice().unwrap(),
            &[1.0, 2.0, 6.5, 9.0, 0.0, 0.0, 0.0, 0.0]
        );
        let err = evaluate(&g, &[ArrayD::zeros(IxDyn(&[3, 3]))]).unwrap_err();
        assert!(err.to_string().contains("input `x`"), "{err}");
    }

    fn arr(shape: &[usize], v: &[f64]) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
    }

    #[test]
    fn index_maps() {
        use crate::op::{Slice, Transpose};
        let x = arr(&[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let t = apply(&Op::Transpose(Transpose { perm: vec![1, 0] }), &[&x]);
        assert_eq!(
            t.iter().copied().collect::<Vec<_>>(),
            [0., 3., 1., 4., 2., 5.]
        );
        let slice = Slice {
            starts: vec![1, 2],
            steps: vec![1, -2],
            sizes: vec![1, 2],
        };
        let s = apply(&Op::Slice(slice), &[&x]);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [5., 3.]);
        let c = arr(&[2, 1], &[1., 0.]);
        let w = apply(&Op::Where, &[&c, &x, &arr(&[], &[-1.])]);
        assert_eq!(
            w.iter().copied().collect::<Vec<_>>(),
            [0., 1., 2., -1., -1., -1.]
        );
    }

    #[test]
    fn an_index_computed_out_of_range_is_refused_not_computed() {
        use crate::op::{Binary, Gather};
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[3, 2], DType::F32);
        let ids = b.input("ids", &[2], DType::I32);
        let twice = b.binary("twice", Binary::Add, ids, ids).unwrap();
        let y = b
            .node("g", Op::Gather(Gather { axis: 0 }), &[x, twice])
            .unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let x = arr(&[3, 2], &[0., 1., 2., 3., 4., 5.]);
        // 2·[-1, 1] = [-2, 2]: in range, counting from the end.
        let out = evaluate(&g, &[x.clone(), arr(&[2], &[-1., 1.])]).unwrap();
        assert_eq!(out[0].iter().copied().collect::<Vec<_>>(), [2., 3., 4., 5.]);
        // 2·[0, 2] = [0, 4]: past 3 rows, an error naming the node, the tensor, the value.
        let err = evaluate(&g, &[x, arr(&[2], &[0., 2.])]).unwrap_err();
        assert!(matches!(err, GraphError::IndexOutOfRange { .. }), "{err:?}");
        let text = err.to_string();
        for want in [
            "`g` (Gather)",
            "element 1",
            "`twice`",
            "is 4",
            "3 rows",
            "-3 to 2",
        ] {
            assert!(text.contains(want), "`{want}` not in: {text}");
        }
    }
}

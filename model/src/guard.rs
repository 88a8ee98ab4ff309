//! Index guards: ONNX makes an index out of range an error, and weft's kernels clamp an
//! index they read (so that no read or write leaves its tensor). Where the indices are
//! known before a run they are checked there ([`weft_graph::indices`]: a constant at
//! compile, a graph input on the host before the run); where they are computed on the
//! device, the compiler adds a guard to the graph: a small reduction over the indices
//! that gives 1 where any is out of range, 0 where none is, kept as an extra output the
//! executable reads back after every run and turns into an error naming the node
//! ([`crate::ModelError::IndexOutOfRange`]).
//!
//! A guard is made of ordinary graph ops (two comparisons, an `Or`, a cast, a reshape
//! and a `ReduceMax`), so every target computes it with the kernels it already has, and
//! a model whose indices are all known gets none: its kernels do not change.

use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use weft_graph::indices::{self, IndexBounds};
use weft_graph::op::{Binary, Cast, Op, Reduce, ReduceKind, Reshape};
use weft_graph::{Graph, GraphError, Layout, Tensor, TensorId};
use weft_ir::dtype::DType;

/// One guarded node: what its flag is and what an error names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexGuard {
    /// The guard's output (shape `[1]`, f32: 0, or 1 where an index is out of range).
    pub flag: TensorId,
    /// The node that reads the indices.
    pub node: String,
    pub op: &'static str,
    /// The tensor holding the indices.
    pub indices: String,
    /// The rows they may reach (one, or one per position of the last axis).
    pub rows: Vec<usize>,
}

/// Adds a guard to `g` (a compiled graph: after the passes) for every node reading
/// indices computed on the device, each flag appended to the graph's outputs; returns
/// them in order. Constant indices (the passes may have folded them) are checked here,
/// an index out of range refused; indices that are a graph input read by a Gather or
/// GatherElements are checked on the host before each run
/// ([`weft_graph::inputs::check_indices`]) and get no guard.
pub fn add_index_guards(g: &mut Graph) -> Result<Vec<IndexGuard>, GraphError> {
    let mut guards = Vec::new();
    for n in 0..g.nodes.len() {
        let node = &g.nodes[n];
        let inputs: Vec<&Tensor> = node.inputs.iter().map(|&t| g.tensor(t)).collect();
        let Some(IndexBounds { input, rows }) = indices::bounds(&node.op, &inputs) else {
            continue;
        };
        let t = node.inputs[input];
        let idx = g.tensor(t);
        if let Some(values) = &idx.data {
            let values = values.iter().map(|&v| f64::from(v));
            if let Some(bad) = indices::first_outside(values, &rows) {
                return Err(indices::out_of_range((&node.name, &node.op), idx, bad));
            }
            continue;
        }
        let host_checked =
            g.inputs.contains(&t) && matches!(node.op, Op::Gather(_) | Op::GatherElements(_));
        if host_checked {
            continue;
        }
        let (name, op, indices) = (node.name.clone(), node.op.name(), idx.name.clone());
        let flag = guard(g, guards.len(), t, &rows)?;
        g.outputs.push(flag);
        guards.push(IndexGuard {
            flag,
            node: name,
            op,
            indices,
            rows,
        });
    }
    Ok(guards)
}

/// `ReduceMax(Cast(Or(idx < -rows, idx >= rows)))` over every element of `idx`: the
/// nodes of guard `k`, its `[1]` flag returned.
fn guard(g: &mut Graph, k: usize, idx: TensorId, rows: &[usize]) -> Result<TensorId, GraphError> {
    let dtype = g.tensor(idx).dtype;
    let numel = g.tensor(idx).numel();
    // Named apart from anything an ONNX file holds: a prefix no exporter writes.
    let name = |what: &str| format!("weft.index_guard.{k}.{what}");
    let constant = |g: &mut Graph, what: &str, sign: f32| {
        let values: Vec<f32> = rows.iter().map(|&n| sign * n as f32).collect();
        g.add_tensor(Tensor {
            name: name(what),
            shape: vec![rows.len()],
            dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(
                ArrayD::from_shape_vec(IxDyn(&[rows.len()]), values)
                    .unwrap_or_else(|_| unreachable!("one value per bound")),
            )),
        })
    };
    let low = constant(g, "low", -1.0);
    let high = constant(g, "high", 1.0);
    let below = g.add_node(
        name("below"),
        Op::Binary(Binary::Less),
        vec![idx, low],
        name("below"),
    )?;
    let above = g.add_node(
        name("above"),
        Op::Binary(Binary::GreaterOrEqual),
        vec![idx, high],
        name("above"),
    )?;
    let out = g.add_node(
        name("out"),
        Op::Binary(Binary::Or),
        vec![below, above],
        name("out"),
    )?;
    let out = g.add_node(
        name("f32"),
        Op::Cast(Cast { to: DType::F32 }),
        vec![out],
        name("f32"),
    )?;
    let flat = g.add_node(
        name("flat"),
        Op::Reshape(Reshape { shape: vec![numel] }),
        vec![out],
        name("flat"),
    )?;
    g.add_node(
        name("flag"),
        Op::Reduce(Reduce {
            kind: ReduceKind::Max,
            axes: vec![0],
            keep_dims: true,
        }),
        vec![flat],
        name("flag"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CompileOptions, CompiledModel, ModelError};
    use weft_graph::GraphBuilder;
    use weft_graph::op::Gather;
    use weft_runtime::Target;

    /// `x[ids + ids]` (computed indices) beside `x[ids]` (a graph input's, checked on
    /// the host).
    fn gathers() -> Graph {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[3, 2], DType::F32);
        let ids = b.input("ids", &[2], DType::I32);
        let twice = b.binary("twice", Binary::Add, ids, ids).unwrap();
        let y = b
            .node("g", Op::Gather(Gather { axis: 0 }), &[x, twice])
            .unwrap();
        let z = b
            .node("direct", Op::Gather(Gather { axis: 0 }), &[x, ids])
            .unwrap();
        b.output(y);
        b.output(z);
        b.finish().unwrap()
    }

    #[test]
    fn computed_indices_are_guarded_on_the_device() {
        let mut g = gathers();
        let guards = add_index_guards(&mut g).unwrap();
        assert_eq!(guards.len(), 1, "{guards:?}");
        assert_eq!(
            (guards[0].node.as_str(), guards[0].rows.as_slice()),
            ("g", &[3][..])
        );
        assert_eq!(g.outputs.last(), Some(&guards[0].flag));

        let g = gathers();
        let target = Target::parse("cpu").unwrap();
        let model =
            CompiledModel::compile(&g, &target.limits(), &CompileOptions::default()).unwrap();
        let mut cpu = weft_runtime::open(&target).unwrap();
        let exe = model.load(cpu.as_mut()).unwrap();
        let x = ArrayD::from_shape_fn(IxDyn(&[3, 2]), |ix| (ix[0] * 2 + ix[1]) as f32);
        let ids = |v: [f32; 2]| ArrayD::from_shape_vec(IxDyn(&[2]), v.to_vec()).unwrap();
        // 2·[-1, 1] = [-2, 2]: rows 1 and 2; the guard's flag is not an output.
        let got = exe.run(cpu.as_mut(), &[x.clone(), ids([-1.0, 1.0])]);
        let got = got.unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].iter().copied().collect::<Vec<_>>(), [2., 3., 4., 5.]);
        // 2·[0, 2] = [0, 4]: past 3 rows, the run fails naming the node.
        let err = exe.run(cpu.as_mut(), &[x, ids([0.0, 2.0])]).unwrap_err();
        exe.free(cpu.as_mut());
        assert!(
            matches!(&err, ModelError::IndexOutOfRange { node, .. } if node == "g"),
            "{err}"
        );
        assert!(err.is_run_failure());
    }

    #[test]
    fn constant_indices_out_of_range_are_refused_at_compile() {
        let mut g = gathers();
        // The passes fold constants; here the indices are made one by hand.
        let twice = g.nodes[0].output;
        g.tensors[twice.0].data = Some(Arc::new(
            ArrayD::from_shape_vec(IxDyn(&[2]), vec![0.0, 3.0]).unwrap(),
        ));
        g.nodes.remove(0);
        let err = add_index_guards(&mut g).unwrap_err().to_string();
        assert!(
            err.contains("`g` (Gather)") && err.contains("is 3"),
            "{err}"
        );
    }
}

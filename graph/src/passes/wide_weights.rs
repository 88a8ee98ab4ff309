//! Weights wider than one buffer split into column blocks (issue 58, item 7).
//!
//! A wgpu adapter binds at most `max_storage_buffer_binding_size` bytes to one buffer
//! parameter (128 MiB by WebGPU's default, lavapipe's and many Vulkan drivers'); GPT-2's
//! token embedding is 154 MB in f32, a TinyLlama-sized one 131 MB in f16. A constant past
//! the target's [`TargetLimits::max_buffer_bytes`](weft_codegen_common::TargetLimits)
//! that only row-indexed readers read is cut into blocks of whole columns, each within
//! the limit, and each reader becomes one reader per block and a `Concat` of their
//! results along the last axis:
//!
//! ```text
//! y = Gather(W[V, D], ids)    →  y = Concat(Gather(W[:, 0:d₁], ids), Gather(W[:, d₁:], ids))
//! y = MatMul(x, W[K, N])      →  y = Concat(MatMul(x, W[:, 0:n₁]), MatMul(x, W[:, n₁:]))
//! ```
//!
//! A column block keeps every row, so no index changes (a Gather's ids, a product's K),
//! and the Concat costs no kernel: each block's reader writes its columns of the result
//! in place. The size is judged in f32 (the graph's constants), so an f16 compile may
//! split a weight it would have fitted. A wide constant read any other way is left as it
//! is, with a note; the target then refuses the buffer at load, naming its size.

use std::sync::Arc;

use ndarray::{ArrayD, Axis, Slice as Range};

use super::PassContext;
use crate::graph::{Graph, Node, NodeId, Tensor, TensorId};
use crate::op::{Concat, Gather, Op};
use crate::tensor::Layout;

/// Splits every constant wider than the target's buffers into column blocks and each of
/// its readers into one reader per block; returns how many nodes it rewrote.
pub fn split_wide_weights(g: &mut Graph, cx: &PassContext) -> usize {
    let limit = cx.limits.max_buffer_bytes;
    let mut changed = 0;
    let mut left: Vec<String> = Vec::new();
    let wide: Vec<TensorId> = (0..g.tensors.len())
        .map(TensorId)
        .filter(|&t| {
            let tensor = g.tensor(t);
            tensor.is_constant() && bytes(tensor) > limit
        })
        .collect();
    for w in wide {
        let mut readers = g.consumers().remove(&w).unwrap_or_default();
        let splittable = !g.outputs.contains(&w)
            && !readers.is_empty()
            && readers.iter().all(|&r| reads_by_rows(&g.nodes[r.0], w));
        match blocks(g.tensor(w), limit) {
            Some(blocks) if splittable => {
                // Last reader first: a split moves the nodes after it, not before.
                readers.sort();
                readers.dedup();
                for &r in readers.iter().rev() {
                    split_reader(g, r, w, &blocks);
                    changed += 1;
                }
            }
            Some(_) | None => left.push(g.tensor(w).name.clone()),
        }
    }
    if !left.is_empty() {
        cx.note(format!(
            "left whole (read other than as a Gather's table or a MatMul's B, or one column past the limit): {}",
            left.join(", ")
        ));
    }
    changed
}

/// Bytes of `t` as the graph holds it.
fn bytes(t: &Tensor) -> u64 {
    (t.numel() as u64).saturating_mul(t.dtype.bytes() as u64)
}

/// The column ranges `[start, end)` of the last axis that cut `t` into blocks of at most
/// `limit` bytes each, as even as can be; `None` where `t` has fewer than two dimensions
/// or one column alone is past the limit.
fn blocks(t: &Tensor, limit: u64) -> Option<Vec<(usize, usize)>> {
    let cols = *t.shape.last()?;
    if t.shape.len() < 2 || cols == 0 {
        return None;
    }
    let column = bytes(t) / cols as u64;
    if column == 0 || column > limit {
        return None;
    }
    let per_block = (limit / column) as usize;
    let n = cols.div_ceil(per_block);
    let width = cols.div_ceil(n);
    Some(
        (0..n)
            .map(|i| (i * width, ((i + 1) * width).min(cols)))
            .filter(|(s, e)| s < e)
            .collect(),
    )
}

/// Whether `n` reads `w` only where a column block of it gives a column block of the
/// result: as a Gather's table along axis 0 (rank 2 or more), or as a MatMul's `B`
/// `[K, N]`.
fn reads_by_rows(n: &Node, w: TensorId) -> bool {
    let uses: Vec<usize> = (0..n.inputs.len()).filter(|&k| n.inputs[k] == w).collect();
    (matches!(n.op, Op::Gather(Gather { axis: 0 })) && uses == [0])
        || (matches!(n.op, Op::MatMul) && uses == [1])
}

/// Replaces reader `r` of `w` by one reader per block of `w` and a Concat of their
/// results (along the result's last axis) into `r`'s output.
fn split_reader(g: &mut Graph, r: NodeId, w: TensorId, blocks: &[(usize, usize)]) {
    let node = g.nodes[r.0].clone();
    let data: Arc<ArrayD<f32>> = g.tensor(w).data.clone().expect("a constant has data");
    let wt = g.tensor(w).clone();
    let out = g.tensor(node.output).clone();
    let (w_last, out_last) = (wt.shape.len() - 1, out.shape.len() - 1);
    let mut parts = Vec::with_capacity(blocks.len());
    let mut nodes = Vec::with_capacity(blocks.len() + 1);
    for (i, &(s, e)) in blocks.iter().enumerate() {
        let block = data
            .slice_axis(Axis(w_last), Range::from(s..e))
            .as_standard_layout()
            .into_owned();
        let bw = g.add_tensor(Tensor {
            name: format!("{}.columns{i}", wt.name),
            shape: block.shape().to_vec(),
            dtype: wt.dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(block)),
        });
        let mut shape = out.shape.clone();
        shape[out_last] = e - s;
        let part = g.add_tensor(Tensor {
            name: format!("{}.columns{i}", out.name),
            shape,
            dtype: out.dtype,
            layout: Layout::RowMajor,
            data: None,
        });
        let inputs = node
            .inputs
            .iter()
            .map(|&t| if t == w { bw } else { t })
            .collect();
        nodes.push(Node {
            name: format!("{}::columns{i}", node.name),
            op: node.op.clone(),
            inputs,
            output: part,
        });
        parts.push(part);
    }
    nodes.push(Node {
        name: format!("{}::concat", node.name),
        op: Op::Concat(Concat { axis: out_last }),
        inputs: parts,
        output: node.output,
    });
    let rest = g.nodes.split_off(r.0 + 1);
    g.nodes.pop();
    g.nodes.extend(nodes);
    g.nodes.extend(rest);
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};
    use weft_codegen_common::TargetLimits;
    use weft_ir::dtype::DType;

    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::Binary;
    use crate::passes::testing::rewrite_in;
    use crate::reference::evaluate;

    /// A table `[10, 7]` read as an embedding (Gather) and as a tied output projection
    /// (MatMul by its transpose, folded: here a second constant `[7, 10]`).
    fn tied() -> Graph {
        let mut b = GraphBuilder::new("tied");
        let ids = b.input("ids", &[2, 3], DType::I32);
        let x = b.input("x", &[3, 7], DType::F32);
        let table = ArrayD::from_shape_fn(IxDyn(&[10, 7]), |i| (i[0] * 7 + i[1]) as f32 * 0.1);
        let w = b.weight("wte", table.clone());
        let wt = b.weight("head", table.t().as_standard_layout().into_owned());
        let e = b
            .node("embed", Op::Gather(Gather { axis: 0 }), &[w, ids])
            .unwrap();
        let logits = b.node("logits", Op::MatMul, &[x, wt]).unwrap();
        b.output(e);
        b.output(logits);
        b.finish().unwrap()
    }

    fn limits(bytes: u64) -> TargetLimits {
        TargetLimits {
            max_buffer_bytes: bytes,
            ..TargetLimits::webgpu_default()
        }
    }

    fn run(g: &Graph) -> Vec<ArrayD<f64>> {
        let ids = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![0.0, 9.0, 3.0, 5.0, 5.0, 1.0]);
        let x = ArrayD::from_shape_fn(IxDyn(&[3, 7]), |i| (i[0] as f64 - i[1] as f64) * 0.25);
        evaluate(g, &[ids.unwrap(), x]).unwrap()
    }

    #[test]
    fn a_table_past_the_limit_is_read_in_column_blocks() {
        let g = tied();
        // At 100 bytes a block, `wte` ([10, 7], 40 bytes a column) takes 4 blocks of 2,
        // 2, 2 and 1 columns, and `head` ([7, 10], 28 bytes a column) 4 of 3, 3, 3, 1.
        let cx = PassContext::new(limits(100));
        let r = rewrite_in(&g, split_wide_weights, &cx);
        assert_eq!(r.changed, 2, "{}", r.printed());
        assert_eq!(r.note, None);
        r.after.validate().unwrap();
        for t in &r.after.tensors {
            assert!(
                !t.is_constant() || bytes(t) <= 100,
                "{} stays whole",
                t.name
            );
        }
        let printed = r.printed();
        assert!(printed.contains("Concat"), "{printed}");
        assert_eq!(printed.matches("= Gather(").count(), 4, "{printed}");
        assert_eq!(printed.matches("= MatMul(").count(), 4, "{printed}");
        // Column blocks change no value: bit-identical outputs.
        assert_eq!(run(&g), run(&r.after));
    }

    #[test]
    fn weights_within_the_limit_are_left_alone() {
        let g = tied();
        let r = rewrite_in(&g, split_wide_weights, &PassContext::new(limits(280)));
        assert_eq!((r.changed, r.after.nodes.len()), (0, g.nodes.len()));
    }

    #[test]
    fn a_wide_weight_read_otherwise_is_left_with_a_note() {
        let mut b = GraphBuilder::new("add");
        let x = b.input("x", &[10, 7], DType::F32);
        let w = b.weight("bias", ArrayD::from_elem(IxDyn(&[10, 7]), 0.5));
        let y = b.node("add", Op::Binary(Binary::Add), &[x, w]).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let r = rewrite_in(&g, split_wide_weights, &PassContext::new(limits(100)));
        assert_eq!(r.changed, 0);
        assert!(
            r.note.as_deref().is_some_and(|n| n.contains("bias")),
            "{:?}",
            r.note
        );
    }
}

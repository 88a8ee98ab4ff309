//! Query heads grouped by the key/value head they share: an attention over keys and values
//! that an exporter repeated from fewer KV heads (Hugging Face's `repeat_kv`, written as
//! `Reshape(Expand(Unsqueeze(x, 2), [b, kv, rep, t, d]), [b, kv·rep, t, d])`) reads the
//! unrepeated ones instead, its `rep` query heads of each KV head stacked as the rows of
//! one product:
//!
//! ```text
//! Attention(q [b, h, s, d], repeat(k), repeat(v), mask)
//!   → Reshape(Attention(Reshape(q, [b, kv, rep·s, d]), k, v, mask'), [b, h, s, d])
//! ```
//!
//! Query head `kv_head · rep + r`, row `i` is row `r · s + i` of KV head `kv_head`'s
//! product (the reshape keeps the elements' order), so the output is the same. The mask
//! follows the rows: one broadcast over the heads and rows stays as it is, one over the
//! heads with a row per query is repeated `rep` times along the rows, one per head is
//! reshaped as the queries are.
//!
//! Why: a decode step has one query row a head. Repeated, its attention is `h` blocks of
//! one row each over keys read `rep` times; grouped, it is `kv` blocks of `rep` rows
//! reading each key once, which the split-KV form takes (its blocks are heads × chunks of
//! the cache, and 32 single-row heads are too many to split): the form
//! `zoo::llama_step` builds. Only where the grouped rows fit one query tile of the split
//! form (at most [`GROUPED_ROWS_MAX`]); a prefill's many rows keep their heads (and a
//! causal attention, whose diagonal the stacked rows would break, is left alone).

use weft_ir::dtype::DType;

use super::super::PassContext;
use crate::graph::{Graph, Node, NodeId, Tensor, TensorId};
use crate::op::{Attention, Expand, Op, Reshape, Transpose};

/// The most grouped query rows (`rep · s`) the rewrite makes: the split-KV form's largest
/// query tile (`weft_kernels::attention`'s `rule_split_form` takes tiles of up to 64 rows).
pub const GROUPED_ROWS_MAX: usize = 64;

/// Rewrites each attention over repeated KV heads that qualifies (see the module);
/// returns how many.
pub fn group_kv_heads(g: &mut Graph, cx: &PassContext) -> usize {
    let mut done = 0;
    let mut refused = Vec::new();
    while let Some((at, m)) = find(g, &refused) {
        match rewrite(g, at, &m, cx) {
            Ok(()) => done += 1,
            Err(why) => {
                refused.push(g.nodes[at.0].output);
                cx.note(why);
            }
        }
    }
    done
}

/// A match: the repeated keys' and values' sources and the grouping.
struct Grouping {
    k: TensorId,
    v: TensorId,
    kv: usize,
    rep: usize,
}

fn find(g: &Graph, refused: &[TensorId]) -> Option<(NodeId, Grouping)> {
    let producers = g.producers();
    for (i, n) in g.nodes.iter().enumerate() {
        let Op::Attention(Attention { causal: false, .. }) = n.op else {
            continue;
        };
        if refused.contains(&n.output) {
            continue;
        }
        let q = g.tensor(n.inputs[0]).shape.clone();
        let &[_, h, s, _] = q.as_slice() else {
            continue;
        };
        let Some((k, kv, rep)) = repeated(g, &producers, untransposed(g, &producers, n.inputs[1]))
        else {
            continue;
        };
        let Some((v, kv_v, rep_v)) = repeated(g, &producers, n.inputs[2]) else {
            continue;
        };
        if (kv_v, rep_v) != (kv, rep) || kv * rep != h || rep < 2 || rep * s > GROUPED_ROWS_MAX {
            continue;
        }
        return Some((NodeId(i), Grouping { k, v, kv, rep }));
    }
    None
}

/// `t` read through Transposes that compose to no change (the attention pass's keys are
/// the Transpose of the exporter's `kᵀ`).
fn untransposed(
    g: &Graph,
    producers: &std::collections::HashMap<TensorId, NodeId>,
    t: TensorId,
) -> TensorId {
    let rank = g.tensor(t).shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    let mut x = t;
    while let Some(&p) = producers.get(&x) {
        let Op::Transpose(Transpose { perm }) = &g.nodes[p.0].op else {
            break;
        };
        // Output axis a is input axis perm[a]: composed, x's axis order[a].
        order = order.iter().map(|&a| perm[a]).collect();
        x = g.nodes[p.0].inputs[0];
        if order.iter().enumerate().all(|(a, &b)| a == b) {
            return x;
        }
    }
    t
}

/// `(x, kv, rep)` where `t` `[b, kv·rep, t, d]` is `x` `[b, kv, t, d]` repeated: the
/// Reshape of an Expand `[b, kv, rep, t, d]` of a Reshape of `x` to `[b, kv, 1, t, d]`.
fn repeated(
    g: &Graph,
    producers: &std::collections::HashMap<TensorId, NodeId>,
    t: TensorId,
) -> Option<(TensorId, usize, usize)> {
    let made = |x: TensorId| producers.get(&x).map(|&p| &g.nodes[p.0]);
    let heads = made(t)?;
    let Op::Reshape(_) = heads.op else {
        return None;
    };
    let expand = made(heads.inputs[0])?;
    let Op::Expand(Expand { shape }) = &expand.op else {
        return None;
    };
    let &[b, kv, rep, rows, d] = shape.as_slice() else {
        return None;
    };
    let one = made(expand.inputs[0])?;
    let Op::Reshape(_) = one.op else {
        return None;
    };
    let x = one.inputs[0];
    let fits = g.tensor(one.output).shape == [b, kv, 1, rows, d]
        && g.tensor(x).shape == [b, kv, rows, d]
        && g.tensor(t).shape == [b, kv * rep, rows, d];
    fits.then_some((x, kv, rep))
}

/// A node inserted at `at` (before the node there), its output inferred; its output.
fn insert(
    g: &mut Graph,
    at: &mut usize,
    name: String,
    op: Op,
    input: TensorId,
) -> Result<TensorId, String> {
    let (shape, dtype) = op.def().infer(&[g.tensor(input)])?;
    let output = g.add_tensor(Tensor {
        name: name.clone(),
        shape,
        dtype,
        layout: Default::default(),
        data: None,
    });
    g.nodes.insert(
        *at,
        Node {
            name,
            op,
            inputs: vec![input],
            output,
        },
    );
    *at += 1;
    Ok(output)
}

fn reshape(shape: Vec<usize>) -> Op {
    Op::Reshape(Reshape { shape })
}

/// The attention at `at` over the unrepeated keys and values, its queries grouped; an
/// error (the graph as it was) where the target holds no fused kernel for it.
fn rewrite(g: &mut Graph, at: NodeId, m: &Grouping, cx: &PassContext) -> Result<(), String> {
    let node = g.nodes[at.0].clone();
    let q = node.inputs[0];
    let &[b, h, s, d] = g.tensor(q).shape.as_slice() else {
        unreachable!("matched rank 4")
    };
    let (kv, rep) = (m.kv, m.rep);
    let dv = g.tensor(m.v).shape[3];
    let saved = (g.nodes.clone(), g.tensors.len());
    let restore = |g: &mut Graph, (nodes, len): (Vec<Node>, usize)| {
        g.nodes = nodes;
        g.tensors.truncate(len);
    };
    let mut i = at.0;
    let base = node.name.clone();
    let made = (|| {
        let grouped = insert(
            g,
            &mut i,
            format!("{base}.q_grouped"),
            reshape(vec![b, kv, rep * s, d]),
            q,
        )?;
        let mut inputs = vec![grouped, m.k, m.v];
        if let Some(&mask) = node.inputs.get(3) {
            inputs.push(grouped_mask(g, &mut i, &base, mask, (h, s, kv, rep))?);
        }
        let y = g.add_tensor(Tensor {
            name: format!("{base}.grouped"),
            shape: vec![b, kv, rep * s, dv],
            dtype: g.tensor(node.output).dtype,
            layout: Default::default(),
            data: None,
        });
        let attention = Node {
            name: format!("{base}::grouped"),
            op: node.op.clone(),
            inputs,
            output: y,
        };
        let ins: Vec<&Tensor> = attention.inputs.iter().map(|&x| g.tensor(x)).collect();
        let (shape, _) = attention.op.def().infer(&ins)?;
        if shape != g.tensor(y).shape {
            return Err(format!("the grouped attention would be {shape:?}"));
        }
        let half = [grouped, m.k, m.v]
            .iter()
            .all(|&x| cx.stored_dtype(g, x) == DType::F16);
        let dtype = if half { DType::F16 } else { DType::F32 };
        cx.target.attention_fits(g, &attention, dtype)?;
        // The old node's place: the grouped attention, then its output's reshape back
        // to the heads (computing the old output tensor, which the readers keep).
        g.nodes[i] = attention;
        g.nodes.insert(
            i + 1,
            Node {
                name: format!("{base}::heads"),
                op: reshape(vec![b, h, s, dv]),
                inputs: vec![y],
                output: node.output,
            },
        );
        Ok(())
    })();
    if let Err(why) = made {
        restore(g, saved);
        return Err(format!("KV heads left repeated at `{base}`: {why}"));
    }
    Ok(())
}

/// The mask of an attention whose queries are grouped (`[b, kv, rep·s, t]` scores): see
/// the module.
fn grouped_mask(
    g: &mut Graph,
    i: &mut usize,
    base: &str,
    mask: TensorId,
    (h, s, kv, rep): (usize, usize, usize, usize),
) -> Result<TensorId, String> {
    let shape = g.tensor(mask).shape.clone();
    if shape.len() > 4 {
        return Err(format!("a mask of rank {}", shape.len()));
    }
    let mut four = vec![1; 4 - shape.len()];
    four.extend(&shape);
    let [mb, mh, ms, mt] = [four[0], four[1], four[2], four[3]];
    let named = |what: &str| format!("{base}.mask_{what}");
    match (mh, ms) {
        // Broadcast over every query row already.
        (1, 1) => Ok(mask),
        (1, _) => {
            let one = insert(g, i, named("rows"), reshape(vec![mb, 1, 1, ms, mt]), mask)?;
            let each = insert(
                g,
                i,
                named("each_head"),
                Op::Expand(Expand {
                    shape: vec![mb, 1, rep, ms, mt],
                }),
                one,
            )?;
            insert(
                g,
                i,
                named("grouped"),
                reshape(vec![mb, 1, rep * ms, mt]),
                each,
            )
        }
        (heads, _) if heads == h => {
            let full = if ms == s {
                mask
            } else {
                insert(
                    g,
                    i,
                    named("rows"),
                    Op::Expand(Expand {
                        shape: vec![mb, h, s, mt],
                    }),
                    mask,
                )?
            };
            insert(
                g,
                i,
                named("grouped"),
                reshape(vec![mb, kv, rep * s, mt]),
                full,
            )
        }
        (heads, _) => Err(format!("a mask of {heads} heads over {h}")),
    }
}

#[cfg(test)]
#[path = "groups_tests.rs"]
mod tests;

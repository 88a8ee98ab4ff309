//! Attention recognized: the sub-graph every exporter writes for scaled dot-product
//! attention,
//!
//! ```text
//! s = MatMul([a ·] q, [b ·] kᵀ)  [· c | / c]  [+ mask]   (a, b, c scalar constants)
//! p = Softmax(s, last axis)  [then Where(IsNaN(p), 0, p): PyTorch's guard]
//! y = MatMul(p, v)
//! ```
//!
//! becomes one `Attention(q, k, v[, mask])` node (`k` as `[..., t, d]`: a Transpose of
//! the `kᵀ` operand, an index map the partitioner inlines into the loads), which the
//! compiler schedules as one fused kernel (`weft_kernels::attention`) instead of
//! two batched products and a softmax. Factors on the operands (`a`, `b`, applied
//! before or through the heads' reshapes and transposes) join the scale
//! ([`factor`]). A constant mask that is 0 on and below the
//! diagonal and at most -1e30 above it is GPT-2's causal mask: the node says `causal`
//! and the mask goes. Only a chain whose intermediate tensors nothing else reads (and no
//! graph output names) is rewritten; `q`, `kᵀ` and `v` must have the same batch
//! dimensions (no broadcast), of rank 3 or more.
//!
//! Only where the target holds the fused kernel: the pass asks the context
//! ([`super::TargetQuery::attention_fits`]) about each attention it would make, at its
//! shapes and in the type its inputs will be stored in, and leaves a misfit chain as
//! exported (two products and a softmax), its report saying why (WebGPU's 16 KiB of
//! workgroup memory holds no tiling of BERT's heads in f32).

mod factor;
mod groups;

pub use groups::{GROUPED_ROWS_MAX, group_kv_heads};

use std::collections::HashSet;

use weft_ir::dtype::DType;

use super::PassContext;
use crate::graph::{Graph, Node, NodeId, Tensor, TensorId};
use crate::op::shapes::broadcast;
use crate::op::{Attention, Binary, Op, Softmax, Transpose};

/// A mask value at or below this is a masked score (f32's most negative values, -inf).
const MASKED_AT: f32 = -1e30;

/// Rewrites each attention sub-graph whose fused kernel the target holds into one node;
/// returns how many nodes went. Where some do not fit, the context's note says how many
/// and why.
pub fn recognize_attention(g: &mut Graph, cx: &PassContext) -> usize {
    let mut removed = 0;
    let (mut fused, mut misfits) = (0, 0);
    let mut why = None;
    let mut refused = HashSet::new();
    while let Some(m) = find(g, &refused) {
        let softmax = m.softmax;
        match rewrite(g, m, cx) {
            Ok(n) => {
                removed += n;
                fused += 1;
            }
            Err(Refused::Shape) => {
                refused.insert(softmax);
            }
            Err(Refused::Misfit(reason)) => {
                refused.insert(softmax);
                misfits += 1;
                why.get_or_insert(reason);
            }
        }
    }
    if let Some(why) = why {
        cx.note(if fused == 0 {
            format!("undone, {why}")
        } else {
            format!("{misfits} of {} undone, {why}", misfits + fused)
        });
    }
    removed
}

/// Why a matched chain stays as it is.
enum Refused {
    /// The sizes do not fit the op (inference refuses the node).
    Shape,
    /// The target holds no fused kernel for it: the query's reason.
    Misfit(String),
}

/// One match.
struct Match {
    /// The Softmax's output tensor (names the match while it is refused).
    softmax: TensorId,
    /// Every node of the chain; the last is the second product.
    nodes: Vec<NodeId>,
    /// The first product (its place takes the Transpose of `kᵀ`).
    scores: NodeId,
    q: TensorId,
    kt: TensorId,
    v: TensorId,
    mask: Option<TensorId>,
    scale: f64,
    guard: bool,
    output: TensorId,
    /// Constant factors on `q` or `kᵀ` taken into `scale` ([`factor`]).
    factors: Vec<factor::Factor>,
}

fn find(g: &Graph, refused: &HashSet<TensorId>) -> Option<Match> {
    let producers = g.producers();
    let consumers = g.consumers();
    let readers = |t: TensorId| consumers.get(&t).map_or(0, Vec::len);
    let internal = |t: TensorId, n: usize| readers(t) == n && !g.outputs.contains(&t);
    let made_by = |t: TensorId| producers.get(&t).map(|&n| (n, &g.nodes[n.0]));
    let scalar = |t: TensorId| super::scalar(g, t);
    for (i, sm) in g.nodes.iter().enumerate() {
        let rank = g.tensor(sm.output).shape.len();
        if sm.op
            != (Op::Softmax(Softmax {
                axis: rank.wrapping_sub(1),
            }))
            || rank < 3
            || refused.contains(&sm.output)
        {
            continue;
        }
        let mut nodes = vec![NodeId(i)];
        // Backwards: [+ mask] then [· c | / c] then the product.
        let mut t = sm.inputs[0];
        let mut mask = None;
        let mut scale = 1.0;
        if let Some((id, add)) = made_by(t)
            && add.op == Op::Binary(Binary::Add)
            && internal(t, 1)
        {
            // The scores are the operand a product (through a scale) made.
            let from_product = |x: TensorId| {
                let mut x = x;
                if let Some((_, n)) = made_by(x)
                    && matches!(n.op, Op::Binary(Binary::Mul | Binary::Div))
                {
                    x = n.inputs[0];
                }
                made_by(x).is_some_and(|(_, n)| n.op == Op::MatMul)
            };
            let (s, other) = if from_product(add.inputs[0]) {
                (add.inputs[0], add.inputs[1])
            } else if from_product(add.inputs[1]) {
                (add.inputs[1], add.inputs[0])
            } else {
                continue;
            };
            nodes.push(id);
            mask = Some(other);
            t = s;
        }
        if let Some((id, n)) = made_by(t)
            && internal(t, 1)
            && let Some((x, c)) = factor::constant(g, n)
        {
            scale = c;
            nodes.push(id);
            t = x;
        }
        let Some((scores, qk)) = made_by(t) else {
            continue;
        };
        if qk.op != Op::MatMul || !internal(t, 1) {
            continue;
        }
        nodes.push(scores);
        let (mut q, mut kt) = (qk.inputs[0], qk.inputs[1]);
        // A constant factor on either operand is one more factor of the scale.
        let mut factors = Vec::new();
        for operand in [&mut q, &mut kt] {
            if let Some(f) = factor::find(g, *operand, &producers, |t| internal(t, 1)) {
                scale *= f.factor;
                if f.reader.is_none() {
                    *operand = f.input;
                }
                factors.push(f);
            }
        }
        // Forwards: [the NaN guard] then the second product.
        let mut p = sm.output;
        let mut guard = false;
        let sm_readers = consumers.get(&p).cloned().unwrap_or_default();
        if sm_readers.len() == 2 && !g.outputs.contains(&p) {
            let (a, b) = (&g.nodes[sm_readers[0].0], &g.nodes[sm_readers[1].0]);
            let (isnan, wh, ids) = if (&a.op, &b.op) == (&Op::IsNaN, &Op::Where) {
                (a, b, [sm_readers[0], sm_readers[1]])
            } else if (&a.op, &b.op) == (&Op::Where, &Op::IsNaN) {
                (b, a, [sm_readers[1], sm_readers[0]])
            } else {
                continue;
            };
            let is_guard = wh.inputs[0] == isnan.output
                && internal(isnan.output, 1)
                && scalar(wh.inputs[1]) == Some(0.0)
                && wh.inputs[2] == p
                && g.tensor(wh.output).shape == g.tensor(p).shape;
            if !is_guard {
                continue;
            }
            nodes.extend(ids);
            guard = true;
            p = wh.output;
        } else if !internal(p, 1) {
            continue;
        }
        let Some(pv_id) = consumers.get(&p).and_then(|r| r.first().copied()) else {
            continue;
        };
        let pv = &g.nodes[pv_id.0];
        if pv.op != Op::MatMul || pv.inputs[0] != p || !internal(p, 1) {
            continue;
        }
        nodes.push(pv_id);
        let v = pv.inputs[1];
        // Same batch dimensions, rank 3 or more, a mask broadcasting to the scores.
        let shape = |t: TensorId| g.tensor(t).shape.clone();
        let (qs, ks, vs) = (shape(q), shape(kt), shape(v));
        let batch = &qs[..rank - 2];
        if ks.len() != rank
            || vs.len() != rank
            || &ks[..rank - 2] != batch
            || &vs[..rank - 2] != batch
        {
            continue;
        }
        let scores_shape = shape(sm.output);
        if let Some(m) = mask
            && broadcast(&shape(m), &scores_shape).as_deref() != Some(&scores_shape[..])
        {
            continue;
        }
        return Some(Match {
            softmax: sm.output,
            nodes,
            scores,
            q,
            kt,
            v,
            mask,
            scale,
            guard,
            output: pv.output,
            factors,
        });
    }
    None
}

/// Whether `mask` is a constant causal mask: over its last two dimensions (`s × t`, the
/// others 1), 0 where `j ≤ i` and masked where `j > i`.
fn is_causal(g: &Graph, mask: TensorId, s: usize, t: usize) -> bool {
    let m = g.tensor(mask);
    let Some(data) = &m.data else {
        return false;
    };
    let r = m.shape.len();
    if r < 2 || m.shape[..r - 2].iter().any(|&d| d != 1) || m.shape[r - 2..] != [s, t] {
        return false;
    }
    data.iter().enumerate().all(|(e, &v)| {
        let (i, j) = (e / t, e % t);
        if j > i { v <= MASKED_AT } else { v == 0.0 }
    })
}

/// Replaces the matched chain: the first product's node becomes the Transpose of `kᵀ`,
/// the second product's the Attention; the rest go. Refused (no node changed) where the
/// sizes do not fit the op or the target holds no fused kernel for it.
fn rewrite(g: &mut Graph, m: Match, cx: &PassContext) -> Result<usize, Refused> {
    let kts = g.tensor(m.kt).shape.clone();
    let rank = kts.len();
    let mut ks = kts.clone();
    ks.swap(rank - 2, rank - 1);
    let (s, t) = (g.tensor(m.q).shape[rank - 2], kts[rank - 1]);
    let causal = m.mask.is_some_and(|mask| is_causal(g, mask, s, t));
    let mask = if causal { None } else { m.mask };
    let out_name = g.tensor(m.output).name.clone();
    let k = g.add_tensor(Tensor {
        name: format!("{out_name}.keys"),
        shape: ks,
        dtype: g.tensor(m.kt).dtype,
        layout: Default::default(),
        data: None,
    });
    let mut perm: Vec<usize> = (0..rank).collect();
    perm.swap(rank - 2, rank - 1);
    let scores_name = g.nodes[m.scores.0].name.clone();
    let last = *m.nodes.iter().max().expect("a chain has nodes");
    let mut inputs = vec![m.q, k, m.v];
    inputs.extend(mask);
    let attention = Node {
        name: format!("{scores_name}::attention"),
        op: Op::Attention(Attention {
            scale: m.scale,
            causal,
            guard: m.guard,
        }),
        inputs,
        output: m.output,
    };
    let transpose = Node {
        name: format!("{scores_name}::keys"),
        op: Op::Transpose(Transpose { perm }),
        inputs: vec![m.kt],
        output: k,
    };
    // Check the new node before touching the graph: an Attention inference refuses
    // leaves the chain as it was.
    let ins: Vec<&Tensor> = attention.inputs.iter().map(|&i| g.tensor(i)).collect();
    let (shape, _) = attention.op.def().infer(&ins).map_err(|_| Refused::Shape)?;
    if shape != g.tensor(m.output).shape {
        return Err(Refused::Shape);
    }
    // The fused kernel's fit depends on the type its inputs will be stored in, which the
    // precision pass (after every rewrite) assigns: asked as it will be.
    let half = [m.q, k, m.v]
        .iter()
        .all(|&t| cx.stored_dtype(g, t) == DType::F16);
    let dtype = if half { DType::F16 } else { DType::F32 };
    if let Err(why) = cx.target.attention_fits(g, &attention, dtype) {
        // The keys' tensor was the last added and nothing reads it.
        g.tensors.pop();
        return Err(Refused::Misfit(why));
    }
    g.nodes[m.scores.0] = transpose;
    g.nodes[last.0] = attention;
    // A factor read through layout changes: the first of them reads what it multiplied.
    for f in &m.factors {
        if let Some(r) = f.reader {
            let gone = g.nodes[f.node.0].output;
            for i in &mut g.nodes[r.0].inputs {
                if *i == gone {
                    *i = f.input;
                }
            }
        }
    }
    let drop = m
        .nodes
        .iter()
        .copied()
        .filter(|&n| n != last && n != m.scores)
        .chain(m.factors.iter().map(|f| f.node));
    Ok(super::remove_nodes(g, drop.collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};
    use weft_ir::dtype::DType;

    use super::*;
    use crate::builder::GraphBuilder;
    use crate::passes::testing::{rewrite, rewrite_in};
    use crate::passes::{Precision, TargetQuery};

    fn scalar(b: &mut GraphBuilder, name: &str, v: f32) -> TensorId {
        b.weight(name, ArrayD::from_elem(IxDyn(&[]), v))
    }

    /// Attention over `[2, 3, s, 8]` heads as the zoo (and the TorchScript exporter)
    /// writes it: `MatMul(q, kᵀ) · c [+ mask]`, Softmax, `MatMul(·, v)`, then a ReLU.
    fn block(s: usize, mask: Option<ArrayD<f32>>, guard: bool) -> Graph {
        let mut b = GraphBuilder::new("attn");
        let q = b.input("q", &[2, 3, s, 8], DType::F32);
        let k = b.input("k", &[2, 3, s, 8], DType::F32);
        let v = b.input("v", &[2, 3, s, 8], DType::F32);
        let kt = b
            .node(
                "kt",
                Op::Transpose(Transpose {
                    perm: vec![0, 1, 3, 2],
                }),
                &[k],
            )
            .unwrap();
        let scores = b.node("scores", Op::MatMul, &[q, kt]).unwrap();
        let c = scalar(&mut b, "c", 0.35);
        let mut x = b.binary("scaled", Binary::Mul, scores, c).unwrap();
        if let Some(m) = mask {
            let m = b.weight("mask", m);
            x = b.add("masked", x, m).unwrap();
        }
        let mut p = b
            .node("softmax", Op::Softmax(Softmax { axis: 3 }), &[x])
            .unwrap();
        if guard {
            let nan = b.node("isnan", Op::IsNaN, &[p]).unwrap();
            let zero = scalar(&mut b, "zero", 0.0);
            p = b.node("guard", Op::Where, &[nan, zero, p]).unwrap();
        }
        let y = b.node("context", Op::MatMul, &[p, v]).unwrap();
        let out = b.relu("after", y).unwrap();
        b.output(out);
        b.finish().unwrap()
    }

    fn attention_ops(g: &Graph) -> Vec<Op> {
        g.nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Attention(_)))
            .map(|n| n.op.clone())
            .collect()
    }

    #[test]
    fn scaled_softmax_products_become_one_node() {
        // Mul, Softmax and the first MatMul go; the second becomes the Attention and the
        // first the Transpose of kᵀ.
        rewrite(&block(5, None, false), recognize_attention).check(2, "
            graph attn (4 nodes, 0 parameters)
              input  %q: f32[2,3,5,8]
              input  %k: f32[2,3,5,8]
              input  %v: f32[2,3,5,8]
              %kt = Transpose(perm=[0, 1, 3, 2])(%k): f32[2,3,8,5]    # kt
              %context.keys = Transpose(perm=[0, 1, 3, 2])(%kt): f32[2,3,5,8]    # scores::keys
              %context = Attention(scale=0.3499999940395355)(%q, %context.keys, %v): f32[2,3,5,8]    # scores::attention
              %after = Relu(%context): f32[2,3,5,8]    # after
              output %after
            ", 1e-12);
    }

    /// A target whose fused attention fits only in f16, saying which type it was asked
    /// about.
    struct HalfOnly;

    impl TargetQuery for HalfOnly {
        fn attention_fits(&self, _: &Graph, _: &Node, dtype: DType) -> Result<(), String> {
            match dtype {
                DType::F16 => Ok(()),
                other => Err(format!("no tiling fits in {other}")),
            }
        }
    }

    #[test]
    fn an_attention_the_target_cannot_hold_stays_unfused_and_the_note_says_why() {
        // q, k and v are graph inputs: stored f32 whatever the precision.
        let g = block(5, None, false);
        for precision in [Precision::F32, Precision::F16] {
            let cx = PassContext::default()
                .with_precision(precision)
                .with_target(&HalfOnly);
            let r = rewrite_in(&g, recognize_attention, &cx);
            assert_eq!(r.changed, 0);
            assert!(attention_ops(&r.after).is_empty());
            assert_eq!(r.printed(), g.to_string());
            assert_eq!(r.note.as_deref(), Some("undone, no tiling fits in f32"));
        }
        // Computed q, k and v are activations: f16 under Precision::F16, and it fits.
        let mut b = GraphBuilder::new("computed");
        let x = b.input("x", &[2, 3, 4, 8], DType::F32);
        let q = b.relu("q", x).unwrap();
        let kt = b
            .node(
                "kt",
                Op::Transpose(Transpose {
                    perm: vec![0, 1, 3, 2],
                }),
                &[q],
            )
            .unwrap();
        let scores = b.node("scores", Op::MatMul, &[q, kt]).unwrap();
        let p = b
            .node("softmax", Op::Softmax(Softmax { axis: 3 }), &[scores])
            .unwrap();
        let y = b.node("context", Op::MatMul, &[p, q]).unwrap();
        let out = b.relu("after", y).unwrap();
        b.output(out);
        let g = b.finish().unwrap();
        let half = PassContext::default()
            .with_precision(Precision::F16)
            .with_target(&HalfOnly);
        let r = rewrite_in(&g, recognize_attention, &half);
        assert_eq!((r.changed, attention_ops(&r.after).len()), (1, 1));
        assert_eq!(r.note, None);
        assert!(r.max_difference() < 1e-12);
        let single = PassContext::default().with_target(&HalfOnly);
        assert_eq!(rewrite_in(&g, recognize_attention, &single).changed, 0);
    }

    #[test]
    fn a_causal_constant_mask_becomes_the_causal_flag() {
        let s = 6;
        let causal = ArrayD::from_shape_fn(IxDyn(&[1, 1, s, s]), |i| {
            if i[3] > i[2] { f32::MIN } else { 0.0 }
        });
        let g = block(s, Some(causal), false);
        // The mask goes: the node says `causal`.
        rewrite(&g, recognize_attention).check(3, "
            graph attn (4 nodes, 0 parameters)
              input  %q: f32[2,3,6,8]
              input  %k: f32[2,3,6,8]
              input  %v: f32[2,3,6,8]
              %kt = Transpose(perm=[0, 1, 3, 2])(%k): f32[2,3,8,6]    # kt
              %context.keys = Transpose(perm=[0, 1, 3, 2])(%kt): f32[2,3,6,8]    # scores::keys
              %context = Attention(scale=0.3499999940395355, causal)(%q, %context.keys, %v): f32[2,3,6,8]    # scores::attention
              %after = Relu(%context): f32[2,3,6,8]    # after
              output %after
            ", 1e-12);
        // Any other mask stays an input, broadcast.
        let other = ArrayD::from_shape_fn(IxDyn(&[2, 1, 1, s]), |i| -(i[3] as f32) * 0.5);
        let g = block(s, Some(other), true);
        rewrite(&g, recognize_attention).check(5, "
            graph attn (4 nodes, 12 parameters)
              input  %q: f32[2,3,6,8]
              input  %k: f32[2,3,6,8]
              input  %v: f32[2,3,6,8]
              %kt = Transpose(perm=[0, 1, 3, 2])(%k): f32[2,3,8,6]    # kt
              %context.keys = Transpose(perm=[0, 1, 3, 2])(%kt): f32[2,3,6,8]    # scores::keys
              %context = Attention(scale=0.3499999940395355, nan guard)(%q, %context.keys, %v, %mask): f32[2,3,6,8]    # scores::attention
              %after = Relu(%context): f32[2,3,6,8]    # after
              output %after
            ", 1e-12);
    }

    /// Attention whose factors are where exporters put them: `q · 0.5` before the heads'
    /// reshape and transpose (Swin, Whisper), `kᵀ · 0.25` on the transposed keys (ViT's
    /// `√c` on both), and `/ 2` on the scores. With `shared`, the queries' product is
    /// also a graph output.
    fn factored(shared: bool) -> Graph {
        let mut b = GraphBuilder::new("attn");
        let x = b.input("x", &[2, 5, 24], DType::F32);
        let k = b.input("k", &[2, 3, 5, 8], DType::F32);
        let v = b.input("v", &[2, 3, 5, 8], DType::F32);
        let half = scalar(&mut b, "half", 0.5);
        let xq = b.binary("q_scaled", Binary::Mul, half, x).unwrap();
        if shared {
            b.output(xq);
        }
        let heads = b
            .node(
                "q_heads",
                Op::Reshape(crate::op::Reshape {
                    shape: vec![2, 5, 3, 8],
                }),
                &[xq],
            )
            .unwrap();
        let q = b
            .node(
                "q",
                Op::Transpose(Transpose {
                    perm: vec![0, 2, 1, 3],
                }),
                &[heads],
            )
            .unwrap();
        let kt = b
            .node(
                "kt",
                Op::Transpose(Transpose {
                    perm: vec![0, 1, 3, 2],
                }),
                &[k],
            )
            .unwrap();
        let quarter = scalar(&mut b, "quarter", 0.25);
        let kt = b.binary("kt_scaled", Binary::Mul, kt, quarter).unwrap();
        let scores = b.node("scores", Op::MatMul, &[q, kt]).unwrap();
        let two = scalar(&mut b, "two", 2.0);
        let x = b.binary("scaled", Binary::Div, scores, two).unwrap();
        let p = b
            .node("softmax", Op::Softmax(Softmax { axis: 3 }), &[x])
            .unwrap();
        let y = b.node("context", Op::MatMul, &[p, v]).unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    #[test]
    fn constant_factors_on_the_queries_and_keys_join_the_scale() {
        // 0.5 · 0.25 / 2: both Muls go, the reshape reads x itself, the keys' transpose
        // reads k's.
        rewrite(&factored(false), recognize_attention).check(4, "
            graph attn (5 nodes, 0 parameters)
              input  %x: f32[2,5,24]
              input  %k: f32[2,3,5,8]
              input  %v: f32[2,3,5,8]
              %q_heads = Reshape(shape=[2, 5, 3, 8])(%x): f32[2,5,3,8]    # q_heads
              %q = Transpose(perm=[0, 2, 1, 3])(%q_heads): f32[2,3,5,8]    # q
              %kt = Transpose(perm=[0, 1, 3, 2])(%k): f32[2,3,8,5]    # kt
              %context.keys = Transpose(perm=[0, 1, 3, 2])(%kt): f32[2,3,5,8]    # scores::keys
              %context = Attention(scale=0.0625)(%q, %context.keys, %v): f32[2,3,5,8]    # scores::attention
              output %context
            ", 1e-12);
    }

    #[test]
    fn a_factor_read_elsewhere_stays_and_the_rest_still_joins() {
        // The queries' Mul is a graph output: it stays; the keys' factor still goes.
        let r = rewrite(&factored(true), recognize_attention);
        r.check(3, "
            graph attn (6 nodes, 1 parameters)
              input  %x: f32[2,5,24]
              input  %k: f32[2,3,5,8]
              input  %v: f32[2,3,5,8]
              %q_scaled = Mul(%half, %x): f32[2,5,24]    # q_scaled
              %q_heads = Reshape(shape=[2, 5, 3, 8])(%q_scaled): f32[2,5,3,8]    # q_heads
              %q = Transpose(perm=[0, 2, 1, 3])(%q_heads): f32[2,3,5,8]    # q
              %kt = Transpose(perm=[0, 1, 3, 2])(%k): f32[2,3,8,5]    # kt
              %context.keys = Transpose(perm=[0, 1, 3, 2])(%kt): f32[2,3,5,8]    # scores::keys
              %context = Attention(scale=0.125)(%q, %context.keys, %v): f32[2,3,5,8]    # scores::attention
              output %q_scaled, %context
            ", 1e-12);
    }

    #[test]
    fn a_chain_read_elsewhere_is_left_alone() {
        let mut g = block(4, None, false);
        // The probabilities are a graph output too: nothing may go.
        let p = g
            .nodes
            .iter()
            .find(|n| n.op.name() == "Softmax")
            .unwrap()
            .output;
        g.outputs.push(p);
        let r = rewrite(&g, recognize_attention);
        assert_eq!(r.changed, 0);
        assert!(attention_ops(&r.after).is_empty());
    }
}

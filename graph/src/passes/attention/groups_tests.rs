//! The grouping checked against the float64 reference on random inputs, at the forms an
//! exporter's masks take, and where it must leave the attention alone.

use weft_ir::dtype::DType;

use super::*;
use crate::builder::GraphBuilder;
use crate::passes::testing::rewrite;

/// `[b, kv·rep, t, d]` repeated from `x` as Hugging Face's `repeat_kv` exports it.
fn repeat(b: &mut GraphBuilder, name: &str, x: TensorId, rep: usize) -> TensorId {
    let [n, kv, t, d] = <[usize; 4]>::try_from(b.graph().tensor(x).shape.clone()).unwrap();
    let one = b
        .node(format!("{name}.one"), reshape(vec![n, kv, 1, t, d]), &[x])
        .unwrap();
    let each = b
        .node(
            format!("{name}.expand"),
            Op::Expand(Expand {
                shape: vec![n, kv, rep, t, d],
            }),
            &[one],
        )
        .unwrap();
    b.node(
        format!("{name}.heads"),
        reshape(vec![n, kv * rep, t, d]),
        &[each],
    )
    .unwrap()
}

/// An attention of `[b, kv·rep, s, d]` queries over keys and values repeated from `kv`
/// heads of `t` rows (the keys through the attention pass's two Transposes), its mask of
/// shape `mask` where given, then a ReLU.
fn attention(
    (b, kv, rep, s, t, d): (usize, usize, usize, usize, usize, usize),
    mask: Option<&[usize]>,
    causal: bool,
) -> Graph {
    let mut g = GraphBuilder::new("grouped");
    let q = g.input("q", &[b, kv * rep, s, d], DType::F32);
    let k = g.input("k", &[b, kv, t, d], DType::F32);
    let v = g.input("v", &[b, kv, t, d], DType::F32);
    let mut inputs = vec![q];
    let keys = repeat(&mut g, "k", k, rep);
    let transpose = || {
        Op::Transpose(Transpose {
            perm: vec![0, 1, 3, 2],
        })
    };
    let kt = g.node("kt", transpose(), &[keys]).unwrap();
    inputs.push(g.node("keys", transpose(), &[kt]).unwrap());
    inputs.push(repeat(&mut g, "v", v, rep));
    if let Some(shape) = mask {
        inputs.push(g.input("mask", shape, DType::F32));
    }
    let op = Op::Attention(Attention {
        scale: 0.3,
        causal,
        guard: false,
    });
    let y = g.node("context", op, &inputs).unwrap();
    let out = g.relu("after", y).unwrap();
    g.output(out);
    g.finish().unwrap()
}

fn ops(g: &Graph) -> Vec<&'static str> {
    g.nodes.iter().map(|n| n.op.name()).collect()
}

/// The attention node's inputs' shapes.
fn attention_inputs(g: &Graph) -> Vec<Vec<usize>> {
    let n = g
        .nodes
        .iter()
        .find(|n| matches!(n.op, Op::Attention(_)))
        .unwrap();
    n.inputs
        .iter()
        .map(|&t| g.tensor(t).shape.clone())
        .collect()
}

#[test]
fn a_decode_step_reads_each_kv_head_once_its_query_heads_as_rows() {
    // TinyLlama's grouping at one query row: 8 query heads a KV head.
    for mask in [None, Some(&[2usize, 1, 1, 11][..]), Some(&[1, 1, 11][..])] {
        let g = attention((2, 2, 8, 1, 11, 4), mask, false);
        let r = rewrite(&g, group_kv_heads);
        assert_eq!(r.changed, 1, "{mask:?}");
        assert!(
            r.max_difference() < 1e-12,
            "{mask:?}: {}",
            r.max_difference()
        );
        let ins = attention_inputs(&r.after);
        assert_eq!(
            ins[..3],
            [vec![2, 2, 8, 4], vec![2, 2, 11, 4], vec![2, 2, 11, 4]]
        );
        // Nothing reads the repeats: the dead pass removes them.
        let mut after = r.after.clone();
        crate::passes::remove_dead(&mut after, &Default::default());
        assert!(!ops(&after).contains(&"Expand"), "{after}");
    }
}

#[test]
fn a_mask_with_a_row_per_query_or_per_head_is_grouped_with_the_rows() {
    // A few new tokens (a short prefill, a speculative step): 4 rows of 4 query heads.
    for mask in [&[1usize, 1, 4, 9][..], &[1, 8, 4, 9], &[8, 1, 9]] {
        let g = attention((1, 2, 4, 4, 9, 8), Some(mask), false);
        let r = rewrite(&g, group_kv_heads);
        assert_eq!(r.changed, 1, "{mask:?}");
        assert!(
            r.max_difference() < 1e-12,
            "{mask:?}: {}",
            r.max_difference()
        );
        let ins = attention_inputs(&r.after);
        assert_eq!(ins[0], [1, 2, 16, 8]);
        assert_eq!(ins[3][ins[3].len() - 2..], [16, 9], "{mask:?}");
    }
}

#[test]
fn many_rows_causal_masks_and_unrepeated_heads_are_left_alone() {
    // A prefill's rows: 8 heads of 16 rows each make 128 grouped rows.
    let long = attention((1, 2, 8, 16, 16, 4), Some(&[1, 1, 16, 16]), false);
    // A causal attention's diagonal is per head's rows.
    let causal = attention((1, 2, 4, 4, 4, 4), None, true);
    // One query head a KV head: nothing to group.
    let one = attention((1, 4, 1, 1, 7, 4), None, false);
    for g in [long, causal, one] {
        let r = rewrite(&g, group_kv_heads);
        assert_eq!(r.changed, 0);
        assert_eq!(r.printed(), g.to_string());
    }
}

#[test]
fn the_rows_limit_is_the_split_forms_largest_query_tile() {
    // 8 heads of 8 rows: 64, the largest grouping made; 8 of 9 is past it.
    let at = |s| rewrite(&attention((1, 1, 8, s, 12, 4), None, false), group_kv_heads).changed;
    assert_eq!((at(8), at(9)), (1, 0));
}

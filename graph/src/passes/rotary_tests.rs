//! The rotate-half chain as the zoo's decoder and Hugging Face's exports write it, in
//! each operand order, made one node; near misses left alone.

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use super::*;
use crate::builder::GraphBuilder;
use crate::passes::testing::rewrite;

/// How the chain is written: operand orders and what differs from the real thing.
#[derive(Clone, Copy, Default)]
struct Way {
    /// `Add(r · sin, x · cos)` instead of `Add(x · cos, r · sin)`.
    add_swapped: bool,
    /// `cos · x` and `sin · r`.
    mul_swapped: bool,
    /// `Concat(x1, Neg(x2))`: not rotate_half.
    concat_swapped: bool,
    /// Halves of 3 and 5 (of 8): not halves.
    uneven: bool,
    /// The first half also read by a graph output.
    x1_read_elsewhere: bool,
}

/// `x: f32[2,3,4,8]` rotated by `cos`, `sin` `[2,1,4,8]` written `way`, then a ReLU.
fn chain(way: Way) -> crate::graph::Graph {
    let mut b = GraphBuilder::new("rope");
    let x = b.input("x", &[2, 3, 4, 8], DType::F32);
    let table = |b: &mut GraphBuilder, name: &str, f: fn(f64) -> f64| {
        let v = ArrayD::from_shape_fn(IxDyn(&[2, 1, 4, 8]), |ix| {
            f((ix[0] * 3 + ix[2] * 5 + ix[3] % 4) as f64 * 0.3) as f32
        });
        b.weight(name, v)
    };
    let cos = table(&mut b, "cos", f64::cos);
    let sin = table(&mut b, "sin", f64::sin);
    let h = if way.uneven { 3 } else { 4 };
    let slice = |start: usize, size: usize| {
        Op::Slice(Slice {
            starts: vec![0, 0, 0, start],
            steps: vec![1; 4],
            sizes: vec![2, 3, 4, size],
        })
    };
    let x1 = b.node("x1", slice(0, h), &[x]).unwrap();
    let x2 = b.node("x2", slice(h, 8 - h), &[x]).unwrap();
    let neg = b.unary("neg", Unary::Neg, x2).unwrap();
    let halves = if way.concat_swapped {
        [x1, neg]
    } else {
        [neg, x1]
    };
    let r = b
        .node("rotate_half", Op::Concat(Concat { axis: 3 }), &halves)
        .unwrap();
    let (xc, rs) = if way.mul_swapped {
        (
            b.binary("cos_mul", Binary::Mul, cos, x).unwrap(),
            b.binary("sin_mul", Binary::Mul, sin, r).unwrap(),
        )
    } else {
        (
            b.binary("cos_mul", Binary::Mul, x, cos).unwrap(),
            b.binary("sin_mul", Binary::Mul, r, sin).unwrap(),
        )
    };
    let y = if way.add_swapped {
        b.add("rotated", rs, xc).unwrap()
    } else {
        b.add("rotated", xc, rs).unwrap()
    };
    let out = b.relu("after", y).unwrap();
    b.output(out);
    if way.x1_read_elsewhere {
        b.output(x1);
    }
    b.finish().unwrap()
}

#[test]
fn the_chain_in_every_operand_order_becomes_one_node() {
    for add_swapped in [false, true] {
        for mul_swapped in [false, true] {
            let way = Way {
                add_swapped,
                mul_swapped,
                ..Way::default()
            };
            rewrite(&chain(way), recognize_rotary).check(
                6,
                "
                graph rope (2 nodes, 128 parameters)
                  input  %x: f32[2,3,4,8]
                  %rotated = Rotary(%x, %cos, %sin): f32[2,3,4,8]    # rotated::rotary
                  %after = Relu(%rotated): f32[2,3,4,8]    # after
                  output %after
                ",
                1e-12,
            );
        }
    }
}

#[test]
fn near_misses_stay() {
    for way in [
        Way {
            concat_swapped: true,
            ..Way::default()
        },
        Way {
            uneven: true,
            ..Way::default()
        },
        Way {
            x1_read_elsewhere: true,
            ..Way::default()
        },
    ] {
        assert_eq!(rewrite(&chain(way), recognize_rotary).changed, 0);
    }
}

/// The angles must broadcast to `x`: a table over the heads' axis but not the others'
/// positions is not the chain's `cos`.
#[test]
fn angles_that_do_not_broadcast_to_x_stay() {
    let mut b = GraphBuilder::new("rope");
    let x = b.input("x", &[1, 2, 4], DType::F32);
    // `cos` is [2, 1, 4]: it broadcasts the sum to [2, 2, 4], larger than x.
    let cos = b.weight("cos", ArrayD::from_elem(IxDyn(&[2, 1, 4]), 0.5));
    let sin = b.weight("sin", ArrayD::from_elem(IxDyn(&[4]), 0.25));
    let half = |start| {
        Op::Slice(Slice {
            starts: vec![0, 0, start],
            steps: vec![1; 3],
            sizes: vec![1, 2, 2],
        })
    };
    let x1 = b.node("x1", half(0), &[x]).unwrap();
    let x2 = b.node("x2", half(2), &[x]).unwrap();
    let neg = b.unary("neg", Unary::Neg, x2).unwrap();
    let r = b
        .node("r", Op::Concat(Concat { axis: 2 }), &[neg, x1])
        .unwrap();
    let xc = b.binary("xc", Binary::Mul, x, cos).unwrap();
    let rs = b.binary("rs", Binary::Mul, r, sin).unwrap();
    let y = b.add("y", xc, rs).unwrap();
    b.output(y);
    assert_eq!(rewrite(&b.finish().unwrap(), recognize_rotary).changed, 0);
}

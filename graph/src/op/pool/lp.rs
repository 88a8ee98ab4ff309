//! ONNX's LpPool and LRN, from the average pooling weft has.
//!
//! LpPool is `(Σ_window |x|^p)^(1/p)`: the average of `|x|^p` over each whole window
//! (the padding counted, and adding 0), times the window's size, to the `1/p`.
//! LRN divides each element by `(bias + alpha/size · Σ x²)^beta`, the sum over the
//! `size` channels around it (those that exist): an average pool of `x²` over a window
//! of `size` channels, the missing ones as zero padding.

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Op, Reshape, Unary};
use super::{Out, Pool, PoolKind, window_pool};

/// LpPool (`p` 2 unless given; the window attributes as AveragePool's, `ceil_mode`
/// refused).
pub(super) fn import_lp_pool(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!("input 0 is {dtype}: weft pools float tensors")));
    }
    if n.flag("ceil_mode", false)? {
        return Err(n.attr_err(
            "ceil_mode",
            "is 1: weft's LpPool sums whole windows, and a window past the input's end is not one",
        ));
    }
    let p = n.int("p", 2)?;
    if !(1..=64).contains(&p) {
        return Err(n.attr_err("p", format!("is {p}: weft takes 1 to 64")));
    }
    let kernel = n
        .ints("kernel_shape")?
        .ok_or_else(|| n.attr_err("kernel_shape", "is required"))?;
    let size: usize = n.positive("kernel_shape", &kernel)?.iter().product();
    let powered = match p {
        1 => n.step("abs", Op::Unary(Unary::Abs), vec![x])?,
        2 => n.step("square", Op::Binary(Binary::Mul), vec![x, x])?,
        p => {
            let a = n.step("abs", Op::Unary(Unary::Abs), vec![x])?;
            let e = n.add_constant("p", vec![], vec![p as f32], dtype);
            n.step("power", Op::Binary(Binary::Pow), vec![a, e])?
        }
    };
    let Some(mean) = window_pool(n, powered, PoolKind::Average, Out::Step)? else {
        return Err(n.err("the pooling gave no tensor"));
    };
    let k = n.add_constant("window_size", vec![], vec![size as f32], dtype);
    match p {
        1 => n.emit(Op::Binary(Binary::Mul), vec![mean, k]),
        2 => {
            let sum = n.step("sum", Op::Binary(Binary::Mul), vec![mean, k])?;
            n.emit(Op::Unary(Unary::Sqrt), vec![sum])
        }
        p => {
            let sum = n.step("sum", Op::Binary(Binary::Mul), vec![mean, k])?;
            let root = n.add_constant("root", vec![], vec![1.0 / p as f32], dtype);
            n.emit(Op::Binary(Binary::Pow), vec![sum, root])
        }
    }
}

/// LRN (`size` required; `alpha` 1e-4, `beta` 0.75, `bias` 1 unless given) of `x`
/// `[N, C, D...]`.
pub(super) fn import_lrn(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!("input 0 is {dtype}: LRN takes float tensors")));
    }
    if xs.len() < 3 {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: LRN normalizes [N, C, D1, ...] (rank 3 or more)"
        )));
    }
    if !n.has("size") {
        return Err(n.attr_err("size", "is required"));
    }
    let size = n.int("size", 0)?;
    let size = n.positive("size", &[size])?[0];
    let alpha = n.float("alpha", 1e-4)? as f32;
    let beta = n.float("beta", 0.75)? as f32;
    let bias = n.float("bias", 1.0)? as f32;
    let (nb, c) = (xs[0], xs[1]);
    let rest: usize = xs[2..].iter().product();
    // Channels c − ⌊(size−1)/2⌋ to c + ⌈(size−1)/2⌉.
    let (before, after) = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let sq = n.step("square", Op::Binary(Binary::Mul), vec![x, x])?;
    let rows = n.step(
        "channel_rows",
        Op::Reshape(Reshape {
            shape: vec![nb, 1, c, rest],
        }),
        vec![sq],
    )?;
    let window = Pool {
        kind: PoolKind::Average,
        kernel: [size, 1],
        strides: [1, 1],
        pads: [before, 0, after, 0],
        ceil_mode: false,
        count_include_pad: true,
    };
    // The average over `size` channels is the sum times 1/size: `alpha/size · Σ x²`
    // is `alpha` times it.
    let mean = n.step("window_mean", Op::Pool(window), vec![rows])?;
    let mean = n.step("back", Op::Reshape(Reshape { shape: xs }), vec![mean])?;
    let c = |n: &mut dyn OnnxNode, tag: &str, v: f32| n.add_constant(tag, vec![], vec![v], dtype);
    let (a, b, e) = (c(n, "alpha", alpha), c(n, "bias", bias), c(n, "beta", beta));
    let scaled = n.step("scaled", Op::Binary(Binary::Mul), vec![mean, a])?;
    let shifted = n.step("shifted", Op::Binary(Binary::Add), vec![scaled, b])?;
    let d = n.step("divisor", Op::Binary(Binary::Pow), vec![shifted, e])?;
    n.emit(Op::Binary(Binary::Div), vec![x, d])
}

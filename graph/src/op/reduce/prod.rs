//! ONNX's ReduceProd from reductions weft has: `|Π x| = exp(Σ log |x|)` (ReduceSum of
//! Log of Abs, then Exp) and the sign from how many factors are negative (`1 − 2·(c mod
//! 2)`, `c` the ReduceSum of `x < 0`). A zero factor gives `log 0 = −∞` and so 0; an
//! infinite one `+∞`; 0·∞ is NaN, as in the product; a NaN stays NaN. The float64
//! reference computes the same composition, exact to f64 rounding; weft's kernels add
//! f32 logarithms, a relative error near `|Σ log |x|| · 2^-24` — of f32 rounding for the
//! short rows and moderate values products are taken of. Integers are refused (their
//! products are not exact this way).

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Cast, Op, Unary};
use super::{Reduce, ReduceKind, ReduceNode, empty_set, reduction};

/// ReduceProd: axes as ReduceSum's (an attribute before opset 18, an input from 18).
pub(super) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let node = reduction(n)?;
    if empty_set(n, &node, Some(1.0))? {
        return Ok(());
    }
    let ReduceNode { x, axes, keep_dims } = node;
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!(
            "input 0 is {dtype}: weft takes ReduceProd of floats only"
        )));
    }
    let Some(axes) = axes else {
        return n.emit(Op::Identity, vec![x]);
    };
    let sum = || {
        Op::Reduce(Reduce {
            kind: ReduceKind::Sum,
            axes: axes.clone(),
            keep_dims,
        })
    };
    let a = n.step("abs", Op::Unary(Unary::Abs), vec![x])?;
    let l = n.step("log", Op::Unary(Unary::Log), vec![a])?;
    let s = n.step("log_sum", sum(), vec![l])?;
    let magnitude = n.step("magnitude", Op::Unary(Unary::Exp), vec![s])?;
    let zero = n.add_constant("zero", vec![], vec![0.0], dtype);
    let negative = n.step("negative", Op::Binary(Binary::Less), vec![x, zero])?;
    let negative = n.step(
        "negative_count",
        Op::Cast(Cast { to: dtype }),
        vec![negative],
    )?;
    let count = n.step("negatives", sum(), vec![negative])?;
    let two = n.add_constant("two", vec![], vec![2.0], dtype);
    let odd = n.step(
        "odd",
        Op::Binary(Binary::Mod { fmod: true }),
        vec![count, two],
    )?;
    let minus_two = n.add_constant("minus_two", vec![], vec![-2.0], dtype);
    let flip = n.step("flip", Op::Binary(Binary::Mul), vec![odd, minus_two])?;
    let one = n.add_constant("one", vec![], vec![1.0], dtype);
    let sign = n.step("sign", Op::Binary(Binary::Add), vec![flip, one])?;
    n.emit(Op::Binary(Binary::Mul), vec![sign, magnitude])
}

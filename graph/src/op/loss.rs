//! ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, imported as the ops they
//! are made of (no op of their own: every step is a weft op the partition fuses).
//!
//! Input `x` is `[N, C, d1, ...]` (scores, or log-probabilities for the NLL), `target`
//! `[N, d1, ...]` holds class indices in `[0, C)`, the optional `weight` `[C]` weighs
//! each class. The loss of element `(n, d...)` is `−x[n, target, d...] · weight[target]`
//! (weight 1 where none is given), and 0 where `target` equals `ignore_index`.
//! `reduction` `none` keeps that tensor, `sum` adds it up, `mean` divides the sum by the
//! sum of the weights of the targets not ignored (by the element count where there are
//! neither weights nor an `ignore_index`). SoftmaxCrossEntropyLoss is the NLL of the
//! LogSoftmax of `x` along axis 1, which its optional second output `log_prob` is.
//!
//! The class pick is a GatherElements along axis 1 at the target reshaped to
//! `[N, 1, d1, ...]`, so the target may be a graph input (an integer tensor read on the
//! device) as well as a constant. An ignored target is replaced by 0 before it is used as
//! an index (`ignore_index` need not be a class: −100, PyTorch's default, or `C`), and
//! its loss and weight are set to 0 after, so nothing read at an ignored place matters.

use weft_ir::dtype::DType;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::softmax::log_softmax_parts;
use super::{Binary, Gather, GatherElements, Op, Reduce, ReduceKind, Reshape, Unary};

/// NegativeLogLikelihoodLoss (12; 13 and 22 added element types) and
/// SoftmaxCrossEntropyLoss (12; 13 added element types).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("NegativeLogLikelihoodLoss", &[12, 13, 22], |n| {
        import(n, false)
    }),
    OnnxOp::new("SoftmaxCrossEntropyLoss", &[12, 13], |n| import(n, true)),
];

/// The largest `ignore_index` that can match: weft's integer tensors hold integers
/// exactly to 2^24 (and larger targets are refused, constant or given), so none equals
/// more.
const EXACT: i64 = 1 << 24;

/// How the per-element losses are combined (`reduction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reduction {
    None,
    Sum,
    Mean,
}

fn import(n: &mut dyn OnnxNode, softmax: bool) -> Result<(), OnnxError> {
    let reduction = match n.string("reduction", "mean")?.as_str() {
        "none" => Reduction::None,
        "sum" => Reduction::Sum,
        "mean" => Reduction::Mean,
        other => {
            return Err(n.attr_err("reduction", format!("`{other}` is not none, sum or mean")));
        }
    };
    // An ignore_index no target weft holds can equal ignores nothing: the same loss,
    // and the same mean (the count of every target), as none.
    let ignore_index = if n.has("ignore_index") {
        Some(n.int("ignore_index", 0)?).filter(|ii| (-EXACT..=EXACT).contains(ii))
    } else {
        None
    };
    let x = n.data(0)?;
    let target = n.data(1)?;
    let weight = n.opt_data(2)?;
    let (xs, ts) = (n.shape(x), n.shape(target));
    let dtype = n.tensor(x).dtype;
    if xs.len() < 2 {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: the scores must be [N, C, d1, ...]"
        )));
    }
    let mut want = vec![xs[0]];
    want.extend(&xs[2..]);
    if ts != want {
        return Err(n.err(format!(
            "input 1 (target) has shape {ts:?}: scores {xs:?} need targets {want:?}"
        )));
    }
    if !n.tensor(target).dtype.is_int() {
        return Err(n.err(format!(
            "input 1 (target) is {:?}: the targets must be integers",
            n.tensor(target).dtype
        )));
    }
    if let Some(w) = weight {
        let ws = n.shape(w);
        if ws != [xs[1]] {
            return Err(n.err(format!(
                "input 2 (weight) has shape {ws:?}: {} classes need [{}]",
                xs[1], xs[1]
            )));
        }
    }

    // What the class pick reads: the log-probabilities (SoftmaxCrossEntropyLoss) or `x`.
    let scores = if softmax {
        let (shifted, log_sum) = log_softmax_parts(n, x, 1)?;
        let lp = n.step("log_prob", Op::Binary(Binary::Sub), vec![shifted, log_sum])?;
        if n.output_count() > 1 {
            n.emit_output(1, Op::Identity, vec![lp])?;
        }
        lp
    } else {
        x
    };

    let zero = n.add_constant("zero", vec![1], vec![0.0], dtype);
    // `ignored`: where the target is `ignore_index`; `safe`: the target with 0 there.
    let (ignored, safe) = match ignore_index {
        Some(ii) => {
            let at = n.add_constant("ignore_index", vec![1], vec![ii as f32], DType::I32);
            let class0 = n.add_constant("class0", vec![1], vec![0.0], DType::I32);
            let ignored = n.step("ignored", Op::Binary(Binary::Equal), vec![target, at])?;
            let safe = n.step("safe_target", Op::Where, vec![ignored, class0, target])?;
            (Some(ignored), safe)
        }
        None => (None, target),
    };

    let mut column = want.clone();
    column.insert(1, 1);
    let idx = n.step("index", Op::Reshape(Reshape { shape: column }), vec![safe])?;
    let picked = n.step(
        "picked",
        Op::GatherElements(GatherElements { axis: 1 }),
        vec![scores, idx],
    )?;
    let picked = n.step(
        "picked_flat",
        Op::Reshape(Reshape { shape: want }),
        vec![picked],
    )?;
    let mut loss = n.step("neg", Op::Unary(Unary::Neg), vec![picked])?;
    if let Some(ignored) = ignored {
        loss = n.step("kept", Op::Where, vec![ignored, zero, loss])?;
    }
    // The weight of each element's target (0 where ignored), where the loss is weighted
    // or the mean counts only the targets not ignored.
    let weights = match (weight, ignored) {
        (Some(w), _) => {
            let wt = n.step("weight", Op::Gather(Gather { axis: 0 }), vec![w, safe])?;
            let wt = match ignored {
                Some(ignored) => n.step("weight_kept", Op::Where, vec![ignored, zero, wt])?,
                None => wt,
            };
            loss = n.step("weighted", Op::Binary(Binary::Mul), vec![loss, wt])?;
            Some(wt)
        }
        (None, Some(ignored)) => {
            let one = n.add_constant("one", vec![1], vec![1.0], dtype);
            Some(n.step("counted", Op::Where, vec![ignored, zero, one])?)
        }
        (None, None) => None,
    };

    let all = |kind| {
        Op::Reduce(Reduce {
            kind,
            axes: (0..ts.len()).collect(),
            keep_dims: false,
        })
    };
    match (reduction, weights) {
        (Reduction::None, _) => n.emit(Op::Identity, vec![loss]),
        (Reduction::Sum, _) => n.emit(all(ReduceKind::Sum), vec![loss]),
        (Reduction::Mean, None) => n.emit(all(ReduceKind::Mean), vec![loss]),
        (Reduction::Mean, Some(wt)) => {
            let total = n.step("total", all(ReduceKind::Sum), vec![loss])?;
            let count = n.step("weight_sum", all(ReduceKind::Sum), vec![wt])?;
            n.emit(Op::Binary(Binary::Div), vec![total, count])
        }
    }
}

//! ONNX's Einsum (opset 12 on) as the ops it is made of. Two operands are a matrix
//! product: each subscript is a batch index (in both operands and the output), a
//! contracted one (in both, not the output), or free on one side (in one operand and the
//! output); each operand is transposed to `[batch, free, contracted]` order (the right
//! one to `[batch, contracted, free]`) and reshaped to `[batch..., M, K]` (`[..., K, N]`),
//! one MatMul multiplies them, and a reshape and a transpose give the output's order.
//! Without contracted subscripts the product is an elementwise Mul with broadcasting. A
//! subscript in one operand only and not in the output is summed out of it first
//! (ReduceSum), and a size-1 dimension facing a larger one in the other operand
//! broadcasts (as NumPy and ONNX Runtime have it). One operand is a transpose and a sum
//! over the subscripts the output drops.
//!
//! `...` stands for the same broadcast dimensions in every operand (aligned at the
//! right); an implicit output (no `->`) is `...` then the subscripts that appear once,
//! in alphabetical order. A subscript repeated within an operand (`ii`: a diagonal, a
//! trace where the output drops it) takes that operand's diagonal first: the two
//! dimensions moved last and flattened, a Gather of every `(n + 1)`-th element, the
//! subscript once at the end of the term. Refused, naming the equation: three or more
//! operands, and an explicit output that drops `...`.

use std::collections::BTreeMap;
use std::fmt;

use super::super::onnx::{OnnxError, OnnxNode};
use weft_ir::dtype::DType;

use super::super::{Binary, Gather, Op, Reduce, ReduceKind, Reshape, Transpose};
use crate::tensor::TensorId;

/// A subscript: a letter, or one of the dimensions `...` stands for, counted from the
/// right (0 is the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    Letter(char),
    Ellipsis(usize),
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Letter(c) => write!(f, "`{c}`"),
            Label::Ellipsis(k) => write!(f, "dimension {k} from the right of `...`"),
        }
    }
}

/// A parsed equation: each operand's subscripts (one per dimension), the output's, and
/// each subscript's size (the largest where one operand broadcasts a 1).
#[derive(Debug, PartialEq)]
struct Spec {
    operands: Vec<Vec<Label>>,
    output: Vec<Label>,
    sizes: BTreeMap<Label, usize>,
}

/// One term's subscripts: the letters before `...`, whether it has `...`, the letters
/// after it.
fn term(t: &str) -> Result<(Vec<char>, bool, Vec<char>), String> {
    let letters = |s: &str| -> Result<Vec<char>, String> {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(c)
                } else {
                    Err(format!(
                        "`{c}` in `{t}` is not a letter (subscripts are a-z, A-Z and `...`)"
                    ))
                }
            })
            .collect()
    };
    match t.split_once("...") {
        None => Ok((letters(t)?, false, Vec::new())),
        Some((_, after)) if after.contains("...") => Err(format!("`{t}` has `...` twice")),
        Some((before, after)) => Ok((letters(before)?, true, letters(after)?)),
    }
}

impl Spec {
    /// Parses `equation` (spaces ignored) for operands of `shapes`.
    fn parse(equation: &str, shapes: &[Vec<usize>]) -> Result<Spec, String> {
        let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match eq.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (eq.as_str(), None),
        };
        let terms: Vec<&str> = lhs.split(',').collect();
        if terms.len() != shapes.len() {
            return Err(format!(
                "it names {} operands and the node has {}",
                terms.len(),
                shapes.len()
            ));
        }
        let mut operands = Vec::with_capacity(terms.len());
        let mut sizes: BTreeMap<Label, usize> = BTreeMap::new();
        let mut broadcast = 0;
        for (i, (t, shape)) in terms.iter().zip(shapes).enumerate() {
            let (before, ellipsis, after) = term(t)?;
            let named = before.len() + after.len();
            let spread = match shape.len().checked_sub(named) {
                Some(e) if ellipsis => e,
                Some(0) => 0,
                Some(_) | None => {
                    return Err(format!(
                        "operand {i} has shape {shape:?}, and `{t}` names {named} dimensions"
                    ));
                }
            };
            broadcast = usize::max(broadcast, spread);
            let labels: Vec<Label> = before
                .iter()
                .map(|&c| Label::Letter(c))
                .chain((0..spread).rev().map(Label::Ellipsis))
                .chain(after.iter().map(|&c| Label::Letter(c)))
                .collect();
            for (k, l) in labels.iter().enumerate() {
                if labels[..k].contains(l) {
                    return Err(format!(
                        "operand {i} (`{t}`) repeats {l}: weft takes each subscript once per operand (no diagonals or traces)"
                    ));
                }
            }
            for (l, &d) in labels.iter().zip(shape) {
                let size = sizes.entry(*l).or_insert(d);
                match (*size, d) {
                    (a, b) if a == b => {}
                    (1, b) => *size = b,
                    (_, 1) => {}
                    (a, b) => {
                        return Err(format!("{l} is {a} in one operand and {b} in operand {i}"));
                    }
                }
            }
            operands.push(labels);
        }
        let spread: Vec<Label> = (0..broadcast).rev().map(Label::Ellipsis).collect();
        let output = match rhs {
            Some(r) => {
                let (before, ellipsis, after) = term(r)?;
                if broadcast > 0 && !ellipsis {
                    return Err(
                        "the output drops the dimensions `...` stands for in the operands".into(),
                    );
                }
                let output: Vec<Label> = before
                    .iter()
                    .map(|&c| Label::Letter(c))
                    .chain(spread)
                    .chain(after.iter().map(|&c| Label::Letter(c)))
                    .collect();
                for (k, l) in output.iter().enumerate() {
                    if output[..k].contains(l) {
                        return Err(format!("the output repeats {l}"));
                    }
                    if !sizes.contains_key(l) {
                        return Err(format!("the output's {l} is in no operand"));
                    }
                }
                output
            }
            None => {
                let mut once: Vec<Label> = sizes
                    .keys()
                    .filter(|l| {
                        matches!(l, Label::Letter(_))
                            && operands.iter().flatten().filter(|m| m == l).count() == 1
                    })
                    .copied()
                    .collect();
                once.sort();
                spread.into_iter().chain(once).collect()
            }
        };
        Ok(Spec {
            operands,
            output,
            sizes,
        })
    }
}

/// The node's output: `ops` applied to `x` in turn, the last emitted (an Identity where
/// there are none).
fn finish(
    n: &mut dyn OnnxNode,
    mut x: TensorId,
    mut ops: Vec<(&str, Op)>,
) -> Result<(), OnnxError> {
    let Some((_, last)) = ops.pop() else {
        return n.emit(Op::Identity, vec![x]);
    };
    for (tag, op) in ops {
        x = n.step(tag, op, vec![x])?;
    }
    n.emit(last, vec![x])
}

/// `ops` applied to `x` in turn, as steps.
fn steps(
    n: &mut dyn OnnxNode,
    mut x: TensorId,
    ops: Vec<(String, Op)>,
) -> Result<TensorId, OnnxError> {
    for (tag, op) in ops {
        x = n.step(&tag, op, vec![x])?;
    }
    Ok(x)
}

/// A Transpose taking dimensions labelled `from` to the order `to` (the same labels),
/// where that is not the identity.
fn permute(from: &[Label], to: &[Label]) -> Option<Op> {
    let perm: Vec<usize> = to
        .iter()
        .map(|l| from.iter().position(|m| m == l).unwrap_or(0))
        .collect();
    let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
    (!identity).then_some(Op::Transpose(Transpose { perm }))
}

/// A Reshape of a tensor of `from` to `to`, where they differ.
fn reshape(from: &[usize], to: Vec<usize>) -> Option<Op> {
    (from != to.as_slice()).then_some(Op::Reshape(Reshape { shape: to }))
}

/// Einsum of one or two operands.
pub(in crate::op) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    if !n.has("equation") {
        return Err(n.attr_err("equation", "is required"));
    }
    let equation = n.string("equation", "")?;
    let count = n.input_count();
    if !(1..=2).contains(&count) {
        return Err(n.attr_err(
            "equation",
            format!("`{equation}` on {count} operands: weft takes one or two"),
        ));
    }
    let mut inputs = n.all_data()?;
    let rewritten = diagonals(n, &mut inputs, &equation)?;
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|&t| n.shape(t)).collect();
    let spec = Spec::parse(&rewritten, &shapes)
        .map_err(|why| n.attr_err("equation", format!("`{equation}`: {why}")))?;
    if inputs.len() == 1 {
        one(n, inputs[0], &spec)
    } else {
        two(n, [inputs[0], inputs[1]], &spec)
    }
}

/// The equation with every operand's repeated subscripts taken as diagonals: each such
/// operand in `inputs` replaced by its diagonal (below) and its term rewritten, the
/// subscript once, last. An implicit output is made explicit first (from the equation
/// as written: a repeated subscript appears more than once, so it is summed).
fn diagonals(
    n: &mut dyn OnnxNode,
    inputs: &mut [TensorId],
    equation: &str,
) -> Result<String, OnnxError> {
    let refuse =
        |n: &dyn OnnxNode, why: String| n.attr_err("equation", format!("`{equation}`: {why}"));
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let mut terms: Vec<String> = lhs.split(',').map(str::to_string).collect();
    let repeats = |t: &str| {
        let letters: Vec<char> = t.chars().filter(char::is_ascii_alphabetic).collect();
        letters
            .iter()
            .find(|c| letters.iter().filter(|d| d == c).count() > 1)
            .copied()
    };
    if terms.len() != inputs.len() || !terms.iter().any(|t| repeats(t).is_some()) {
        return Ok(eq);
    }
    let rhs = rhs.unwrap_or_else(|| {
        let all: Vec<char> = terms.iter().flat_map(|t| t.chars()).collect();
        let mut once: Vec<char> = all
            .iter()
            .filter(|c| c.is_ascii_alphabetic() && all.iter().filter(|d| d == c).count() == 1)
            .copied()
            .collect();
        once.sort_unstable();
        let spread = if terms.iter().any(|t| t.contains("...")) {
            "..."
        } else {
            ""
        };
        format!("{spread}{}", once.into_iter().collect::<String>())
    });
    let mut taken = 0;
    for (t, x) in terms.iter_mut().zip(inputs.iter_mut()) {
        while let Some(c) = repeats(t) {
            let (before, ellipsis, after) = term(t).map_err(|why| refuse(n, why))?;
            let shape = n.shape(*x);
            let Some(spread) = shape.len().checked_sub(before.len() + after.len()) else {
                break;
            };
            // Each letter's dimension, `...`'s spread between.
            let dims: Vec<(char, usize)> = before
                .iter()
                .enumerate()
                .map(|(j, &l)| (l, j))
                .chain(
                    after
                        .iter()
                        .enumerate()
                        .map(|(j, &l)| (l, before.len() + spread + j)),
                )
                .collect();
            let at: Vec<usize> = dims
                .iter()
                .filter(|(l, _)| *l == c)
                .map(|&(_, d)| d)
                .collect();
            let (p, q) = (at[0], at[1]);
            if shape[p] != shape[q] {
                return Err(refuse(
                    n,
                    format!(
                        "`{c}` is {} and {} in one operand: a diagonal needs a square",
                        shape[p], shape[q]
                    ),
                ));
            }
            *x = diagonal(n, *x, [p, q], taken)?;
            taken += 1;
            let drop_two = |v: &[char], skip: &mut usize| -> String {
                v.iter()
                    .filter(|&&l| {
                        let dropped = l == c && *skip > 0;
                        if dropped {
                            *skip -= 1;
                        }
                        !dropped
                    })
                    .collect()
            };
            let mut skip = 2;
            let b = drop_two(&before, &mut skip);
            let a = drop_two(&after, &mut skip);
            let dots = if ellipsis { "..." } else { "" };
            *t = format!("{b}{dots}{a}{c}");
        }
    }
    Ok(format!("{}->{rhs}", terms.join(",")))
}

/// The diagonal of `x` over its equal dimensions `p` < `q`, as a last dimension: the
/// others in order, then `x[.., i, .., i, ..]` for each `i`; `k` numbers the diagonals
/// of one node (its steps' names).
fn diagonal(
    n: &mut dyn OnnxNode,
    x: TensorId,
    [p, q]: [usize; 2],
    k: usize,
) -> Result<TensorId, OnnxError> {
    let shape = n.shape(x);
    let size = shape[p];
    let mut perm: Vec<usize> = (0..shape.len()).filter(|&d| d != p && d != q).collect();
    let mut flat: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
    perm.extend([p, q]);
    let moved = n.step(
        &format!("diagonal{k}_moved"),
        Op::Transpose(Transpose { perm }),
        vec![x],
    )?;
    let axis = flat.len();
    flat.push(size * size);
    let flat = n.step(
        &format!("diagonal{k}_flat"),
        Op::Reshape(Reshape { shape: flat }),
        vec![moved],
    )?;
    let taps = n.add_constant(
        &format!("diagonal{k}_taps"),
        vec![size],
        (0..size).map(|i| (i * (size + 1)) as f32).collect(),
        DType::I32,
    );
    n.step(
        &format!("diagonal{k}"),
        Op::Gather(Gather { axis }),
        vec![flat, taps],
    )
}

/// One operand: a sum over the subscripts the output drops, then a transpose.
fn one(n: &mut dyn OnnxNode, x: TensorId, spec: &Spec) -> Result<(), OnnxError> {
    let labels = &spec.operands[0];
    let mut ops = Vec::new();
    let summed: Vec<usize> = (0..labels.len())
        .filter(|&d| !spec.output.contains(&labels[d]))
        .collect();
    let kept: Vec<Label> = labels
        .iter()
        .filter(|l| spec.output.contains(l))
        .copied()
        .collect();
    if !summed.is_empty() {
        ops.push((
            "sum",
            Op::Reduce(Reduce {
                kind: ReduceKind::Sum,
                axes: summed,
                keep_dims: false,
            }),
        ));
    }
    ops.extend(permute(&kept, &spec.output).map(|op| ("transpose", op)));
    finish(n, x, ops)
}

/// Two operands: each prepared (broadcast 1s dropped, subscripts only it has and the
/// output drops summed), then a MatMul (or a Mul where nothing is contracted).
fn two(n: &mut dyn OnnxNode, x: [TensorId; 2], spec: &Spec) -> Result<(), OnnxError> {
    let out = &spec.output;
    let mut labels = [spec.operands[0].clone(), spec.operands[1].clone()];
    let mut x = x;
    // A 1 where the subscript is larger in the other operand broadcasts: dropped.
    for side in 0..2 {
        let shape = n.shape(x[side]);
        let dims: Vec<usize> = (0..shape.len())
            .filter(|&d| shape[d] != 1 || spec.sizes[&labels[side][d]] == 1)
            .collect();
        let kept_shape: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
        if let Some(op) = reshape(&shape, kept_shape) {
            x[side] = n.step(&format!("squeeze{side}"), op, vec![x[side]])?;
        }
        labels[side] = dims.iter().map(|&d| labels[side][d]).collect();
    }
    // Subscripts of one operand alone that the output drops: summed out of it.
    for side in 0..2 {
        let own: Vec<usize> = (0..labels[side].len())
            .filter(|&d| {
                let l = &labels[side][d];
                !out.contains(l) && !labels[1 - side].contains(l)
            })
            .collect();
        if own.is_empty() {
            continue;
        }
        labels[side] = (0..labels[side].len())
            .filter(|d| !own.contains(d))
            .map(|d| labels[side][d])
            .collect();
        let sum = Op::Reduce(Reduce {
            kind: ReduceKind::Sum,
            axes: own,
            keep_dims: false,
        });
        x[side] = n.step(&format!("sum{side}"), sum, vec![x[side]])?;
    }
    let [la, lb] = &labels;
    let in_both = |l: &Label| la.contains(l) && lb.contains(l);
    let batch: Vec<Label> = out.iter().filter(|l| in_both(l)).copied().collect();
    let left: Vec<Label> = out
        .iter()
        .filter(|l| la.contains(l) && !lb.contains(l))
        .copied()
        .collect();
    let right: Vec<Label> = out
        .iter()
        .filter(|l| lb.contains(l) && !la.contains(l))
        .copied()
        .collect();
    let contracted: Vec<Label> = la
        .iter()
        .filter(|l| lb.contains(l) && !out.contains(l))
        .copied()
        .collect();
    let size = |ls: &[Label]| -> Vec<usize> { ls.iter().map(|l| spec.sizes[l]).collect() };
    if contracted.is_empty() {
        // An elementwise product: each operand in the output's order, with 1s for the
        // subscripts it lacks.
        for side in 0..2 {
            let own: Vec<Label> = out
                .iter()
                .filter(|l| labels[side].contains(l))
                .copied()
                .collect();
            let mut ops = Vec::new();
            ops.extend(permute(&labels[side], &own).map(|op| (format!("order{side}"), op)));
            let full: Vec<usize> = out
                .iter()
                .map(|l| {
                    if labels[side].contains(l) {
                        spec.sizes[l]
                    } else {
                        1
                    }
                })
                .collect();
            ops.extend(reshape(&size(&own), full).map(|op| (format!("spread{side}"), op)));
            x[side] = steps(n, x[side], ops)?;
        }
        return n.emit(Op::Binary(Binary::Mul), x.to_vec());
    }
    let product = |ls: &[Label]| -> usize { size(ls).iter().product() };
    let (m, k, r) = (product(&left), product(&contracted), product(&right));
    // Without batch subscripts the left operand keeps its free dimensions (a MatMul's
    // batch over a matrix, as a linear layer's) unless there are none.
    let mut a_shape = size(&batch);
    let mut product_shape = size(&batch);
    if batch.is_empty() && !left.is_empty() {
        a_shape.extend(size(&left));
        product_shape.extend(size(&left));
    } else {
        a_shape.push(m);
        product_shape.push(m);
    }
    a_shape.push(k);
    product_shape.push(r);
    let mut b_shape = size(&batch);
    b_shape.extend([k, r]);
    let a_order: Vec<Label> = [&batch[..], &left, &contracted].concat();
    let b_order: Vec<Label> = [&batch[..], &contracted, &right].concat();
    for (side, (order, shape)) in [(a_order, a_shape), (b_order, b_shape)]
        .into_iter()
        .enumerate()
    {
        let mut ops = Vec::new();
        ops.extend(permute(&labels[side], &order).map(|op| (format!("order{side}"), op)));
        ops.extend(reshape(&size(&order), shape).map(|op| (format!("matrix{side}"), op)));
        x[side] = steps(n, x[side], ops)?;
    }
    let natural: Vec<Label> = [&batch[..], &left, &right].concat();
    let mut tail = Vec::new();
    tail.extend(reshape(&product_shape, size(&natural)).map(|op| ("unflatten", op)));
    tail.extend(permute(&natural, out).map(|op| ("transpose", op)));
    if tail.is_empty() {
        return n.emit(Op::MatMul, x.to_vec());
    }
    let p = n.step("product", Op::MatMul, x.to_vec())?;
    finish(n, p, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letters(s: &str) -> Vec<Label> {
        s.chars().map(Label::Letter).collect()
    }

    #[test]
    fn equations_parse() {
        let s = Spec::parse("bhid, bhjd -> bhij", &[vec![2, 3, 4, 5], vec![2, 3, 6, 5]]).unwrap();
        assert_eq!(s.output, letters("bhij"));
        assert_eq!(s.sizes[&Label::Letter('j')], 6);
        // Implicit output: the subscripts that appear once, sorted.
        let s = Spec::parse("kj,ji", &[vec![2, 3], vec![3, 4]]).unwrap();
        assert_eq!(s.output, letters("ik"));
        // `...` first in an implicit output; aligned at the right, a 1 broadcasting.
        let s = Spec::parse("...id,...jd", &[vec![7, 2, 4, 5], vec![2, 6, 5]]).unwrap();
        assert_eq!(
            s.output,
            [Label::Ellipsis(1), Label::Ellipsis(0)]
                .into_iter()
                .chain(letters("ij"))
                .collect::<Vec<_>>()
        );
        assert_eq!(s.operands[1][0], Label::Ellipsis(0));
    }

    #[test]
    fn what_is_refused() {
        let err = |eq: &str, shapes: &[Vec<usize>]| Spec::parse(eq, shapes).unwrap_err();
        assert!(err("ii->i", &[vec![3, 3]]).contains("repeats `i`"));
        assert!(err("ij,jk->ik", &[vec![2, 3], vec![4, 5]]).contains("`j` is 3"));
        assert!(err("ij->k", &[vec![2, 3]]).contains("in no operand"));
        assert!(err("ij->ii", &[vec![2, 3]]).contains("repeats"));
        assert!(err("ijk->i", &[vec![2, 3]]).contains("names 3"));
        assert!(err("...i->i", &[vec![2, 3]]).contains("drops"));
        assert!(err("i.j->i", &[vec![2, 3]]).contains("not a letter"));
        assert!(err("ij,jk", &[vec![2, 3]]).contains("2 operands"));
    }
}

//! ONNX's RotaryEmbedding (opset 23) as ops weft has: the first `rotary_embedding_dim`
//! elements of each head are taken as pairs `(x1, x2)` — the two halves, or the even and
//! odd elements where `interleaved` — and rotated by the position's angle,
//! `(cos·x1 − sin·x2, sin·x1 + cos·x2)` (Slice, Mul, Sub, Add, Concat); the rest pass
//! through. `cos_cache`/`sin_cache` are `[batch, seq, dim/2]`, or `[positions, dim/2]`
//! rows picked by `position_ids` `[batch, seq]` (a Gather). A 4-D input is `[batch,
//! heads, seq, size]` (the angles broadcast over the heads), a 3-D one `[batch, seq,
//! heads · size]` with `num_heads`, split into heads and joined back (Reshape).

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Concat, Gather, Op, Reshape, Slice};
use crate::tensor::TensorId;

/// RotaryEmbedding-23.
pub(in crate::op) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let interleaved = n.flag("interleaved", false)?;
    let num_heads = n.int("num_heads", 0)?;
    // The working shape: the heads split, the angles' broadcast shape beside it.
    let (work, seq_axis) = match xs.len() {
        4 => (xs.clone(), 2),
        3 => {
            let h = usize::try_from(num_heads)
                .ok()
                .filter(|&h| h > 0 && xs[2].is_multiple_of(h))
                .ok_or_else(|| {
                    n.attr_err(
                        "num_heads",
                        format!(
                            "is {num_heads}: a 3-D input {xs:?} needs a head count dividing {}",
                            xs[2]
                        ),
                    )
                })?;
            (vec![xs[0], xs[1], h, xs[2] / h], 1)
        }
        r => {
            return Err(n.err(format!(
                "input {xs:?} is {r}-D: RotaryEmbedding takes [batch, heads, seq, size] or \
                 [batch, seq, hidden]"
            )));
        }
    };
    let (batch, seq, size) = (work[0], work[seq_axis], work[3]);
    let dim = match n.int("rotary_embedding_dim", 0)? {
        0 => size,
        r if r > 0 && r as usize <= size && r % 2 == 0 => r as usize,
        r => {
            return Err(n.attr_err(
                "rotary_embedding_dim",
                format!("is {r}: an even count up to the head size {size}"),
            ));
        }
    };
    if !dim.is_multiple_of(2) {
        return Err(n.err(format!("the head size {size} is odd: rotation takes pairs")));
    }
    let half = dim / 2;

    let angle = |n: &mut dyn OnnxNode, i: usize, tag: &str| -> Result<TensorId, OnnxError> {
        let mut c = n.data(i)?;
        if n.has_input(3) {
            let pos = n.data(3)?;
            c = n.step(
                &format!("{tag}_at"),
                Op::Gather(Gather { axis: 0 }),
                vec![c, pos],
            )?;
        }
        let cs = n.shape(c);
        if cs != [batch, seq, half] {
            return Err(n.err(format!(
                "input {i} ({tag}) gives angles {cs:?}, not [batch, seq, rotary dim / 2] = \
                 {:?}",
                [batch, seq, half]
            )));
        }
        // Broadcast over the heads: [batch, 1, seq, half] or [batch, seq, 1, half].
        let mut shape = vec![batch, 1, 1, half];
        shape[seq_axis] = seq;
        n.step(&format!("{tag}_b"), Op::Reshape(Reshape { shape }), vec![c])
    };
    let cos = angle(n, 1, "cos")?;
    let sin = angle(n, 2, "sin")?;

    let mut t = x;
    if xs.len() == 3 {
        t = n.step(
            "heads",
            Op::Reshape(Reshape {
                shape: work.clone(),
            }),
            vec![t],
        )?;
    }
    // A slice of the last axis: `count` elements from `start` by `step`.
    let last = |start: usize, step: i64, count: usize| {
        let mut sizes = work.clone();
        sizes[3] = count;
        Op::Slice(Slice {
            starts: vec![0, 0, 0, start],
            steps: vec![1, 1, 1, step],
            sizes,
        })
    };
    let (x1, x2) = if interleaved {
        (last(0, 2, half), last(1, 2, half))
    } else {
        (last(0, 1, half), last(half, 1, half))
    };
    let x1 = n.step("x1", x1, vec![t])?;
    let x2 = n.step("x2", x2, vec![t])?;
    let mul = Op::Binary(Binary::Mul);
    let a = n.step("cos_x1", mul.clone(), vec![cos, x1])?;
    let b = n.step("sin_x2", mul.clone(), vec![sin, x2])?;
    let real = n.step("real", Op::Binary(Binary::Sub), vec![a, b])?;
    let a = n.step("sin_x1", mul.clone(), vec![sin, x1])?;
    let b = n.step("cos_x2", mul, vec![cos, x2])?;
    let imag = n.step("imag", Op::Binary(Binary::Add), vec![a, b])?;
    let mut rotated = if interleaved {
        // (real, imag) pairs side by side: [.., half, 2] read as [.., dim].
        let mut pair = work.clone();
        pair[3] = half;
        pair.push(1);
        let r = n.step(
            "real_1",
            Op::Reshape(Reshape {
                shape: pair.clone(),
            }),
            vec![real],
        )?;
        let i = n.step("imag_1", Op::Reshape(Reshape { shape: pair }), vec![imag])?;
        let p = n.step("pairs", Op::Concat(Concat { axis: 4 }), vec![r, i])?;
        let mut flat = work.clone();
        flat[3] = dim;
        n.step("rotated", Op::Reshape(Reshape { shape: flat }), vec![p])?
    } else {
        n.step("rotated", Op::Concat(Concat { axis: 3 }), vec![real, imag])?
    };
    if dim < size {
        let rest = n.step("rest", last(dim, 1, size - dim), vec![t])?;
        let join = Op::Concat(Concat { axis: 3 });
        if xs.len() == 4 {
            return n.emit(join, vec![rotated, rest]);
        }
        rotated = n.step("joined", join, vec![rotated, rest])?;
    }
    if xs.len() == 4 {
        // The whole head rotated: the output is the rotation's result, as it is.
        return n.emit(Op::Identity, vec![rotated]);
    }
    n.emit(Op::Reshape(Reshape { shape: xs }), vec![rotated])
}

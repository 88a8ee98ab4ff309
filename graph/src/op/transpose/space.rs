//! ONNX's DepthToSpace and SpaceToDepth: a Reshape, a Transpose and a Reshape, as the
//! ONNX definition writes them.

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Op, Reshape};
use super::Transpose;

/// `[N, C, H, W]` and the block size `b` (required, positive), or why not.
fn block(n: &mut dyn OnnxNode) -> Result<([usize; 4], usize, crate::tensor::TensorId), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let [nb, c, h, w] = xs[..] else {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: the op rearranges [N, C, H, W] tensors (rank 4)"
        )));
    };
    if !n.has("blocksize") {
        return Err(n.attr_err("blocksize", "is required"));
    }
    let b = n.int("blocksize", 0)?;
    let b = n.positive("blocksize", &[b])?[0];
    Ok(([nb, c, h, w], b, x))
}

/// The Reshape, Transpose, Reshape.
fn rearrange(
    n: &mut dyn OnnxNode,
    x: crate::tensor::TensorId,
    split: Vec<usize>,
    perm: Vec<usize>,
    out: Vec<usize>,
) -> Result<(), OnnxError> {
    let s = n.step("blocks", Op::Reshape(Reshape { shape: split }), vec![x])?;
    let t = n.step("moved", Op::Transpose(Transpose { perm }), vec![s])?;
    n.emit(Op::Reshape(Reshape { shape: out }), vec![t])
}

/// DepthToSpace: channel blocks of `b²` become `b x b` pixels; `mode` DCR (depth,
/// column, row: the block index outermost in the channel) or CRD (opset 11; the block
/// index innermost).
pub(in super::super) fn import_depth_to_space(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let ([nb, c, h, w], b, x) = block(n)?;
    if c % (b * b) != 0 {
        return Err(n.err(format!(
            "input 0 has {c} channels, not a multiple of blocksize² = {}",
            b * b
        )));
    }
    let k = c / (b * b);
    let out = vec![nb, k, h * b, w * b];
    match n.string("mode", "DCR")?.as_str() {
        "DCR" => rearrange(n, x, vec![nb, b, b, k, h, w], vec![0, 3, 4, 1, 5, 2], out),
        "CRD" => rearrange(n, x, vec![nb, k, b, b, h, w], vec![0, 1, 4, 2, 5, 3], out),
        other => Err(n.attr_err("mode", format!("`{other}` is not DCR or CRD"))),
    }
}

/// SpaceToDepth: each `b x b` block of pixels becomes `b²` channels, the block index
/// outermost.
pub(in super::super) fn import_space_to_depth(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let ([nb, c, h, w], b, x) = block(n)?;
    if h % b != 0 || w % b != 0 {
        return Err(n.err(format!(
            "input 0 is {h} x {w}: not divisible into blocks of {b} x {b}"
        )));
    }
    rearrange(
        n,
        x,
        vec![nb, c, h / b, b, w / b, b],
        vec![0, 3, 5, 1, 2, 4],
        vec![nb, c * b * b, h / b, w / b],
    )
}

//! Narrow convolution inputs in fp16: a dense convolution that reads an NCHW tensor of
//! fewer than [`PADDED_CHANNELS`] channels (a network's stem, reading the f32 RGB image)
//! first copies it, by a kernel of its own, into an f16 NHWC buffer of
//! [`PADDED_CHANNELS`] channels, zeros past the real ones.
//!
//! Why: the implicit GEMM over the image itself gathers every element of its A tile
//! alone (three channels give no vector a pixel, and NCHW puts a pixel's channels a
//! plane apart), each with its own window arithmetic; at ResNet-50 batch 8 that stem
//! took 118 µs on an H100, 13% of the model. Over the padded copy each pixel's four
//! channels are one aligned 8-byte load, for 4/3 of the multiply-adds (the padded
//! channels' filter taps are zero), the way cuDNN pads the stem's channels. The copy
//! reads the image once.

use weft_graph::TensorId;
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::template::{Template, load_or};
use weft_kernels::per_item;

use super::values::Values;
use crate::error::LowerError;

/// Channels of the padded copy: four halves, one 8-byte load per pixel.
pub(crate) const PADDED_CHANNELS: i64 = 4;

/// Threads per block of the copy.
const THREADS: i64 = 256;

/// The function copying `x` (`[n, c, h, w]` logical, read through its view: its layout,
/// or the producers inlined into it) into a new f16 buffer `[n, h, w, PADDED_CHANNELS]`,
/// and that buffer, which the convolution then reads.
pub(crate) fn copy(
    vals: &Values,
    x: TensorId,
    [n, c, h, w]: [i64; 4],
    name: &str,
) -> Result<(Func, Buffer), LowerError> {
    let pc = PADDED_CHANNELS;
    let x_view = te::compute("x_view", &[("n", n), ("c", c), ("h", h), ("w", w)], |ix| {
        vals.at_as(x, ix, DType::F16)
    });
    let padded = te::placeholder(&format!("{name}_nhwc{pc}"), &[n, h, w, pc], DType::F16);
    let mut t = Template::new(format!("{name}_pad"));
    t.param(&x_view);
    t.param(&padded);
    per_item(&mut t, n * h * w * pc, THREADS, |kb, idx| {
        let ch = kb.let_("ch", idx.clone() % pc);
        let col = kb.let_("col", idx.clone() / pc % w);
        let row = kb.let_("row", idx.clone() / (pc * w) % h);
        let img = kb.let_("img", idx / (pc * w * h));
        // The index clamped as well as the load predicated: in bounds either way.
        let v = load_or(
            &x_view,
            [img.clone(), ch.clone().min(c - 1), row.clone(), col.clone()],
            ch.clone().lt(c),
            Expr::zero(DType::F16),
        );
        kb.store(&padded, [img, row, col, ch], v);
    });
    let func = t.finish()?;
    let func = fuse(&func, &padded).map_err(LowerError::PaddedCopy)?.func;
    Ok((func, padded))
}

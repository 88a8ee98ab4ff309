//! 2-D convolution: `x` `[N, C, H, W]`, `w` `[K, C/groups, R, S]`, optional `bias` `[K]`;
//! output `[N, K, OH, OW]`. An anchor: implicit GEMM, depthwise, Winograd or the direct
//! convolution, as the lowering's rule says.

mod transpose;
mod windows;

use std::fmt;

use ndarray::{Array2, Array4, ArrayD, s};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, rank, same_dtype, window_out};
use super::{Anchor, ExportNode, IndexUse, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// A convolution's geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv {
    /// Along H and W.
    pub strides: [usize; 2],
    /// Top, left, bottom, right (ONNX's `[h_begin, w_begin, h_end, w_end]`).
    pub pads: [usize; 4],
    /// Along H and W.
    pub dilations: [usize; 2],
    /// Groups of input channels: 1 (dense), C (depthwise), or any divisor of C and K.
    pub groups: usize,
}

impl Conv {
    /// A dense convolution with `stride` and symmetric `pad` on both axes.
    pub fn new(stride: usize, pad: usize) -> Conv {
        Conv {
            strides: [stride, stride],
            pads: [pad; 4],
            dilations: [1, 1],
            groups: 1,
        }
    }

    /// The same with `groups`.
    pub fn grouped(self, groups: usize) -> Conv {
        Conv { groups, ..self }
    }
}

impl OpDef for Conv {
    fn name(&self) -> &'static str {
        "Conv"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(strides={:?}, pads={:?}", self.strides, self.pads)?;
        if self.dilations != [1, 1] {
            write!(f, ", dilations={:?}", self.dilations)?;
        }
        if self.groups != 1 {
            write!(f, ", groups={}", self.groups)?;
        }
        f.write_str(")")
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let c = self;
        arity(inputs, 2, 3)?;
        same_dtype(inputs)?;
        let x = rank(inputs[0], 0, 4)?;
        let w = rank(inputs[1], 1, 4)?;
        let g = c.groups;
        if g == 0 || x[1] % g != 0 || w[0] % g != 0 {
            return Err(format!(
                "groups = {g} must divide the input's {} channels and the filter's {} outputs",
                x[1], w[0]
            ));
        }
        if w[1] * g != x[1] {
            return Err(format!(
                "filter `{}` {:?} takes {} input channels per group, the input has {} in {g} groups",
                inputs[1].name, w, w[1], x[1]
            ));
        }
        if let Some(b) = inputs.get(2)
            && b.shape != [w[0]]
        {
            return Err(format!(
                "bias `{}` has shape {:?}, not [{}]",
                b.name, b.shape, w[0]
            ));
        }
        let [st, sl] = c.strides;
        let [dh, dw] = c.dilations;
        let [pt, pl, pb, pr] = c.pads;
        let oh = window_out(x[2], w[2], st, dh, pt, pb, false);
        let ow = window_out(x[3], w[3], sl, dw, pl, pr, false);
        let (Some(oh), Some(ow)) = (oh, ow) else {
            return Err(format!(
                "the {}x{} filter (dilations {:?}, strides {:?}) does not fit the {}x{} input padded by {:?}",
                w[2], w[3], c.dilations, c.strides, x[2], x[3], c.pads
            ));
        };
        Ok((vec![x[0], w[0], oh, ow], inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        conv(self, x[0], x[1], x.get(2).copied())
    }

    fn role(&self) -> Role<'_> {
        Role::Anchor(Anchor::Conv(self))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        let kernel = node.inputs[1].shape[2..].to_vec();
        node.ints("kernel_shape", &kernel);
        node.ints("strides", &self.strides);
        node.ints("pads", &self.pads);
        node.ints("dilations", &self.dilations);
        node.int("group", self.groups as i64);
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64 {
        // Each output element: its group's input channels times the window.
        let w = &inputs[1].shape;
        output.numel() as f64 * w.iter().skip(1).product::<usize>() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// The convolution in float64, lowered to a matrix product per group (im2col then
/// ndarray's `dot`), so a ResNet-50 at 224² takes seconds, not minutes.
fn conv(c: &Conv, x: &ArrayD<f64>, w: &ArrayD<f64>, bias: Option<&ArrayD<f64>>) -> ArrayD<f64> {
    let x = x
        .view()
        .into_dimensionality::<ndarray::Ix4>()
        .expect("rank checked");
    let w = w
        .view()
        .into_dimensionality::<ndarray::Ix4>()
        .expect("rank checked");
    let (n, ci, h, wd) = x.dim();
    let (k, cg, r, sw) = w.dim();
    let g = c.groups;
    let kg = k / g;
    let [st, sl] = c.strides;
    let [dh, dw] = c.dilations;
    let [pt, pl, pb, pr] = c.pads;
    let oh = window_out(h, r, st, dh, pt, pb, false).expect("checked");
    let ow = window_out(wd, sw, sl, dw, pl, pr, false).expect("checked");
    debug_assert_eq!(ci, cg * g);
    let mut out = Array4::<f64>::zeros((n, k, oh, ow));
    let rows = cg * r * sw;
    for b in 0..n {
        for grp in 0..g {
            // im2col: one column per output pixel, one row per (channel, r, s) of the group.
            let mut cols = Array2::<f64>::zeros((rows, oh * ow));
            for cc in 0..cg {
                let ch = grp * cg + cc;
                for i in 0..r {
                    for j in 0..sw {
                        let row = (cc * r + i) * sw + j;
                        for y in 0..oh {
                            let iy = (y * st + i * dh) as isize - pt as isize;
                            if iy < 0 || iy >= h as isize {
                                continue;
                            }
                            for xo in 0..ow {
                                let ix = (xo * sl + j * dw) as isize - pl as isize;
                                if ix >= 0 && ix < wd as isize {
                                    cols[[row, y * ow + xo]] = x[[b, ch, iy as usize, ix as usize]];
                                }
                            }
                        }
                    }
                }
            }
            let filters = w
                .slice(s![grp * kg..(grp + 1) * kg, .., .., ..])
                .to_shape((kg, rows))
                .expect("contiguous slice of the filter")
                .to_owned();
            let prod = filters.dot(&cols);
            for kk in 0..kg {
                let row = prod.row(kk);
                let mut plane = out.slice_mut(s![b, grp * kg + kk, .., ..]);
                for (o, &v) in plane.iter_mut().zip(row.iter()) {
                    *o = v;
                }
            }
        }
    }
    if let Some(bias) = bias {
        for kk in 0..k {
            let bv = bias[[kk]];
            out.slice_mut(s![.., kk, .., ..]).mapv_inplace(|v| v + bv);
        }
    }
    out.into_dyn()
}

/// ONNX's Conv in 1, 2 and 3 dimensions (`conv/windows.rs`), and ConvTranspose as a
/// convolution of the zero-stuffed input (`conv/transpose.rs`).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Conv", &[1, 11, 22], import),
    OnnxOp::new("ConvTranspose", &[1, 11, 22], transpose::import),
];

/// The layout an input of a `dims`-D window must have, for messages.
fn layout(dims: usize) -> &'static str {
    const LAYOUTS: [&str; 3] = [
        "[N, C, L] tensors in 1-D (rank 3)",
        "NCHW tensors (rank 4)",
        "NCDHW tensors in 3-D (rank 5)",
    ];
    LAYOUTS[dims.clamp(1, 3) - 1]
}

/// The kernel's spatial shape: `kernel_shape`, else the weights' trailing dimensions;
/// 1 to 3 of them, checked against the weights and the input.
fn kernel_of(n: &dyn OnnxNode, xs: &[usize], ws: &[usize]) -> Result<Vec<usize>, OnnxError> {
    let given = n.ints("kernel_shape")?;
    let kernel = match &given {
        Some(k) => n.positive("kernel_shape", k)?,
        None => {
            let k: Vec<i64> = ws.iter().skip(2).map(|&d| d as i64).collect();
            n.positive("kernel_shape", &k)?
        }
    };
    let dims = kernel.len();
    // Without the attribute the kernel is the weights' shape: a refusal names them, not
    // an attribute the file does not have.
    if given.is_none() && ws.len() != xs.len() {
        return Err(n.err(format!(
            "input 1 (the weights) has shape {ws:?}, rank {}, and input 0 {xs:?}, rank {}: a Conv's weights have its input's rank",
            ws.len(),
            xs.len()
        )));
    }
    if given.is_none() && !(1..=3).contains(&dims) {
        return Err(n.err(format!(
            "input 1 (the weights) has shape {ws:?}: a {dims}-D kernel; weft convolves in 1-D, 2-D and 3-D only"
        )));
    }
    if !(1..=3).contains(&dims) {
        return Err(n.attr_err(
            "kernel_shape",
            format!("{kernel:?} is a {dims}-D kernel: weft convolves in 1-D, 2-D and 3-D only"),
        ));
    }
    if ws.len() == dims + 2 && ws[2..] != kernel[..] {
        return Err(n.attr_err(
            "kernel_shape",
            format!("{kernel:?} differs from the weights' {:?}", &ws[2..]),
        ));
    }
    if xs.len() != dims + 2 {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: weft convolves {}",
            layout(dims)
        )));
    }
    if ws.len() != dims + 2 {
        return Err(n.err(format!(
            "input 1 (the weights) has shape {ws:?}, not rank {} for a {dims}-D kernel",
            dims + 2
        )));
    }
    Ok(kernel)
}

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let w = n.data(1)?;
    let bias = n.opt_data(2)?;
    let (xs, ws) = (n.shape(x), n.shape(w));
    let kernel = kernel_of(n, &xs, &ws)?;
    let dims = kernel.len();
    let strides = n.window_ints("strides", dims)?;
    let dilations = n.window_ints("dilations", dims)?;
    let groups = n.int("group", 1)?;
    if !(1..=super::onnx::MAX_WINDOW).contains(&groups) {
        return Err(n.attr_err("group", format!("{groups} is not a positive count")));
    }
    let pads = n.window_pads(&xs[2..], &kernel, &strides, &dilations)?;
    let geo = windows::Geometry {
        strides,
        pads,
        dilations,
        groups: groups as usize,
    };
    windows::convolve(n, x, w, bias, &geo, true).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct 7-loop convolution, to check the im2col one against.
    fn naive_conv(c: &Conv, x: &Array4<f64>, w: &Array4<f64>) -> Array4<f64> {
        let (n, _, h, wd) = x.dim();
        let (k, cg, r, sw) = w.dim();
        let oh = window_out(
            h,
            r,
            c.strides[0],
            c.dilations[0],
            c.pads[0],
            c.pads[2],
            false,
        )
        .unwrap();
        let ow = window_out(
            wd,
            sw,
            c.strides[1],
            c.dilations[1],
            c.pads[1],
            c.pads[3],
            false,
        )
        .unwrap();
        let kg = k / c.groups;
        Array4::from_shape_fn((n, k, oh, ow), |(b, kk, y, xo)| {
            let grp = kk / kg;
            let mut acc = 0.0;
            for cc in 0..cg {
                for i in 0..r {
                    for j in 0..sw {
                        let iy =
                            (y * c.strides[0] + i * c.dilations[0]) as isize - c.pads[0] as isize;
                        let ix =
                            (xo * c.strides[1] + j * c.dilations[1]) as isize - c.pads[1] as isize;
                        if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                            acc +=
                                x[[b, grp * cg + cc, iy as usize, ix as usize]] * w[[kk, cc, i, j]];
                        }
                    }
                }
            }
            acc
        })
    }

    #[test]
    fn conv_matches_the_direct_loops() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        };
        for c in [
            Conv::new(1, 1),
            Conv {
                strides: [2, 1],
                pads: [0, 1, 2, 0],
                dilations: [1, 2],
                groups: 1,
            },
            Conv::new(2, 1).grouped(6),
            Conv::new(1, 0).grouped(3),
        ] {
            let x = Array4::from_shape_fn((2, 6, 9, 7), |_| next());
            let w = Array4::from_shape_fn((6, 6 / c.groups, 3, 3), |_| next());
            let got = conv(&c, &x.clone().into_dyn(), &w.clone().into_dyn(), None);
            let want = naive_conv(&c, &x, &w).into_dyn();
            assert_eq!(got.shape(), want.shape(), "{c:?}");
            let err = (&got - &want).mapv(f64::abs).fold(0.0f64, |m, &v| m.max(v));
            assert!(err < 1e-12, "{c:?}: {err}");
        }
    }
}

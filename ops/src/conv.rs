//! What the convolution ops ([`crate::conv2d`], [`crate::conv2d_f16`]) share with each
//! other and with their templates' adapters ([`crate::templates`]): the sizes of one
//! convolution as its shape names them ([`Dims`]) and as the kernel library reads them
//! ([`ConvGeometry`]), the shape check, the [`Variant`] each op is, and the float64
//! reference. The te pieces a definition is written with (placeholders, reads, epilogues,
//! the `direct` step) are the kernel library's ([`weft_kernels::conv`]), the same ones
//! its implicit-GEMM builder uses.
//!
//! These live here, not in an op module, so that the ops share them without depending
//! on each other.

use ndarray::{ArrayD, Ix1, Ix4, IxDyn};
use weft_ir::dtype::DType;
use weft_kernels::conv::{Layout, Variant};
use weft_kernels::conv_views::ConvGeometry;
use weft_kernels::winograd::WinogradDims;

use crate::Shape;

/// The sizes of one convolution.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub(crate) n: i64,
    pub(crate) c: i64,
    pub(crate) h: i64,
    pub(crate) w: i64,
    pub(crate) k: i64,
    pub(crate) r: i64,
    pub(crate) s: i64,
    pub(crate) stride: i64,
    pub(crate) pad: i64,
    pub(crate) oh: i64,
    pub(crate) ow: i64,
}

impl Dims {
    pub(crate) fn of(shape: &Shape) -> Dims {
        let g = |k: &str| shape.get(k);
        let (h, w, r, s, stride, pad) = (g("h"), g("w"), g("r"), g("s"), g("stride"), g("pad"));
        Dims {
            n: g("n"),
            c: g("c"),
            h,
            w,
            k: g("k"),
            r,
            s,
            stride,
            pad,
            oh: (h + 2 * pad - r) / stride.max(1) + 1,
            ow: (w + 2 * pad - s) / stride.max(1) + 1,
        }
    }

    /// The convolution as the kernel library reads it: one stride and one padding for
    /// both axes, undilated.
    pub(crate) fn geometry(self) -> ConvGeometry {
        ConvGeometry {
            n: self.n,
            c: self.c,
            h: self.h,
            w: self.w,
            k: self.k,
            r: self.r,
            s: self.s,
            oh: self.oh,
            ow: self.ow,
            strides: [self.stride; 2],
            pads: [self.pad; 2],
            dilations: None,
        }
    }

    /// The sizes of Winograd's F(2×2, 3×3) (the shape's `r`, `s` and `stride`, which the
    /// op checks, are 3, 3 and 1).
    pub(crate) fn winograd(self) -> WinogradDims {
        WinogradDims {
            n: self.n,
            c: self.c,
            h: self.h,
            w: self.w,
            k: self.k,
            pad: self.pad,
        }
    }
}

/// The shape check of every convolution op: the kernel fits the padded input.
pub(crate) fn check(shape: &Shape) -> Result<(), String> {
    let d = Dims::of(shape);
    if d.h + 2 * d.pad < d.r || d.w + 2 * d.pad < d.s {
        return Err(format!(
            "the {}x{} kernel is larger than the padded {}x{} input",
            d.r,
            d.s,
            d.h + 2 * d.pad,
            d.w + 2 * d.pad
        ));
    }
    Ok(())
}

/// `conv2d` (and `winograd-conv2d`'s definition).
pub(crate) const CONV2D: Variant = Variant {
    name: "conv2d",
    dtype: DType::F32,
    layout: Layout::Nchw,
    bias: false,
};
/// `conv2d-bias-relu`.
pub(crate) const CONV2D_BIAS_RELU: Variant = Variant {
    name: "conv2d_bias_relu",
    bias: true,
    ..CONV2D
};
/// `conv2d-f16`.
pub(crate) const CONV2D_F16: Variant = Variant {
    name: "conv2d_f16",
    dtype: DType::F16,
    layout: Layout::Nhwc,
    bias: false,
};
/// `conv2d-f16-bias-relu`.
pub(crate) const CONV2D_F16_BIAS_RELU: Variant = Variant {
    name: "conv2d_f16_bias_relu",
    bias: true,
    ..CONV2D_F16
};
/// `conv2d-f16-nchw`.
pub(crate) const CONV2D_F16_NCHW: Variant = Variant {
    name: "conv2d_f16_nchw",
    layout: Layout::Nchw,
    ..CONV2D_F16
};

/// The float64 reference of variant `v`: the NCHW convolution (with bias and ReLU for a
/// bias variant) on NCHW/OIHW views of the inputs, its result seen in the variant's
/// layout.
pub(crate) fn reference(inputs: &[ArrayD<f64>], shape: &Shape, v: &Variant) -> ArrayD<f64> {
    let four = |a: &ArrayD<f64>| a.ndim() == 4;
    if v.layout == Layout::Nchw || inputs.len() < 2 || !four(&inputs[0]) || !four(&inputs[1]) {
        return reference_nchw(inputs, shape, v.bias);
    }
    // NHWC -> NCHW, HWIO -> OIHW; the bias stays.
    let mut nchw = vec![
        inputs[0].clone().permuted_axes(IxDyn(&[0, 3, 1, 2])),
        inputs[1].clone().permuted_axes(IxDyn(&[3, 2, 0, 1])),
    ];
    nchw.extend(inputs[2..].iter().cloned());
    reference_nchw(&nchw, shape, v.bias)
        .permuted_axes(IxDyn(&[0, 2, 3, 1]))
        .as_standard_layout()
        .into_owned()
}

/// The NCHW convolution in float64, loop by loop.
fn reference_nchw(inputs: &[ArrayD<f64>], shape: &Shape, bias: bool) -> ArrayD<f64> {
    let d = Dims::of(shape);
    let (Ok(x), Ok(wt)) = (
        inputs[0].view().into_dimensionality::<Ix4>(),
        inputs[1].view().into_dimensionality::<Ix4>(),
    ) else {
        return ArrayD::zeros(IxDyn(&[0]));
    };
    let b = inputs
        .get(2)
        .and_then(|b| b.view().into_dimensionality::<Ix1>().ok());
    let u = |v: i64| v as usize;
    let mut out = ArrayD::<f64>::zeros(IxDyn(&[u(d.n), u(d.k), u(d.oh), u(d.ow)]));
    for n in 0..d.n {
        for k in 0..d.k {
            for oh in 0..d.oh {
                for ow in 0..d.ow {
                    let mut acc = 0.0;
                    for c in 0..d.c {
                        for r in 0..d.r {
                            for s in 0..d.s {
                                let (ih, iw) =
                                    (oh * d.stride - d.pad + r, ow * d.stride - d.pad + s);
                                if ih >= 0 && ih < d.h && iw >= 0 && iw < d.w {
                                    acc += x[[u(n), u(c), u(ih), u(iw)]]
                                        * wt[[u(k), u(c), u(r), u(s)]];
                                }
                            }
                        }
                    }
                    if bias {
                        acc = (acc + b.map_or(0.0, |b| b[u(k)])).max(0.0);
                    }
                    out[[u(n), u(k), u(oh), u(ow)]] = acc;
                }
            }
        }
    }
    out
}

/// `grouped-conv2d`.
pub(crate) const GROUPED: Variant = Variant {
    name: "grouped_conv2d",
    dtype: DType::F32,
    layout: Layout::Nchw,
    bias: false,
};
/// `grouped-conv2d-f16`.
pub(crate) const GROUPED_F16: Variant = Variant {
    name: "grouped_conv2d_f16",
    dtype: DType::F16,
    layout: Layout::Nhwc,
    bias: false,
};

/// The groups of a shape.
pub(crate) fn groups(shape: &Shape) -> i64 {
    shape.get("g")
}

/// The convolution as the grouped views read it: `c` a group's input channels, `k` all
/// output channels.
pub(crate) fn geometry_grouped(shape: &Shape) -> ConvGeometry {
    let d = Dims::of(shape);
    ConvGeometry {
        c: d.c / groups(shape).max(1),
        ..d.geometry()
    }
}

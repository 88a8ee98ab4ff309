//! What the convolution ops ([`crate::conv2d`], [`crate::conv2d_f16`]) share with each
//! other and with their templates ([`crate::templates::implicit_gemm`],
//! [`crate::templates::winograd`]): the sizes of one convolution, the layouts, the
//! [`Variant`] each op is, the te pieces every definition and every build is written
//! with, the `direct` schedule's one step and the float64 reference.
//!
//! These live here, not in an op module, so that a template depends on the convolution
//! and never on another op's module.

use ndarray::{ArrayD, Ix1, Ix4, IxDyn};
use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::schedule::{BlockRV, Schedule, ScheduleError};

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

/// The memory layout of input, filter and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Input `[N, H, W, C]`, filter `[R, S, C, K]`, output `[N, OH, OW, K]`.
    Nhwc,
    /// Input `[N, C, H, W]`, filter `[K, C, R, S]`, output `[N, K, OH, OW]`.
    Nchw,
}

/// Which convolution an op is: what its definition, its implicit-GEMM build and its
/// reference are parameterised by. Each op's module passes its own variant, so nothing
/// is read back from the op's name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Variant {
    /// The Func's name (the kernels are named after it).
    pub(crate) name: &'static str,
    /// The element type of the inputs and the output (sums are f32 either way).
    pub(crate) dtype: DType,
    pub(crate) layout: Layout,
    /// Bias and ReLU after the convolution (a folded BatchNorm).
    pub(crate) bias: bool,
}

impl Variant {
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
        ..Variant::CONV2D
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
        ..Variant::CONV2D_F16
    };
    /// `conv2d-f16-nchw`.
    pub(crate) const CONV2D_F16_NCHW: Variant = Variant {
        name: "conv2d_f16_nchw",
        layout: Layout::Nchw,
        ..Variant::CONV2D_F16
    };
}

/// Input, filter and (with a bias) bias placeholders, of the variant's type and layout.
pub(crate) fn placeholders(d: Dims, v: &Variant) -> (Buffer, Buffer, Option<Buffer>) {
    let (x, w) = match v.layout {
        Layout::Nhwc => (
            te::placeholder("x", &[d.n, d.h, d.w, d.c], v.dtype),
            te::placeholder("w", &[d.r, d.s, d.c, d.k], v.dtype),
        ),
        Layout::Nchw => (
            te::placeholder("x", &[d.n, d.c, d.h, d.w], v.dtype),
            te::placeholder("w", &[d.k, d.c, d.r, d.s], v.dtype),
        ),
    };
    let b = v.bias.then(|| te::placeholder("bias", &[d.k], v.dtype));
    (x, w, b)
}

/// The output's axes in its layout, and where `(n, k, oh, ow)` sit among them.
pub(crate) fn out_axes(d: Dims, layout: Layout) -> ([(&'static str, i64); 4], [usize; 4]) {
    match layout {
        Layout::Nhwc => (
            [("n", d.n), ("oh", d.oh), ("ow", d.ow), ("k", d.k)],
            [0, 3, 1, 2],
        ),
        Layout::Nchw => (
            [("n", d.n), ("k", d.k), ("oh", d.oh), ("ow", d.ow)],
            [0, 1, 2, 3],
        ),
    }
}

/// The input element at logical `[n, c, ih, iw]`, stored in `layout`.
pub(crate) fn input(x: &Buffer, layout: Layout, [n, c, ih, iw]: [Expr; 4]) -> Expr {
    match layout {
        Layout::Nhwc => x.at(&[n, ih, iw, c]),
        Layout::Nchw => x.at(&[n, c, ih, iw]),
    }
}

/// The filter element for output channel `k`, input channel `c`, position `(r, s)`.
pub(crate) fn filter(w: &Buffer, layout: Layout, [k, c, r, s]: [Expr; 4]) -> Expr {
    match layout {
        Layout::Nhwc => w.at(&[r, s, c, k]),
        Layout::Nchw => w.at(&[k, c, r, s]),
    }
}

/// The fp32 ops' epilogue: `z = relu(y + bias[k])`, a tensor of its own over the
/// convolution `y` (so that the unfused build can store `y` and run it as a second
/// kernel).
pub(crate) fn bias_relu(y: &Buffer, bias: &Buffer, d: Dims, layout: Layout) -> Buffer {
    let (axes, [_, pk, _, _]) = out_axes(d, layout);
    te::compute("z", &axes, |i| {
        te::maximum(y.at(i) + bias.at(&[&i[pk]]), 0.0f32)
    })
}

/// The fp16 ops' epilogue: what an f32 sum becomes, fp16, after bias and ReLU (applied
/// in f32, before the one rounding) when there is a bias.
pub(crate) fn finish(acc: Expr, bias: Option<&Buffer>, k: &Expr) -> Expr {
    match bias {
        Some(b) => te::maximum(acc + b.at(&[k]).cast(DType::F32), 0.0f32).cast(DType::F16),
        None => acc.cast(DType::F16),
    }
}

/// `func` with its parameters in the op's order: x, w, (bias), output (fusion lists the
/// inputs as the anchor met them).
pub(crate) fn in_op_order(mut func: Func) -> Func {
    let order = |name: &str| ["x", "w", "bias"].iter().position(|n| *n == name);
    func.params
        .sort_by_key(|p| order(p.name()).unwrap_or(usize::MAX));
    func
}

/// The `direct` schedule's step for one computed tensor: one thread per output element,
/// 256 threads a block.
pub(crate) fn one_thread_per_element(
    s: &mut Schedule,
    block: BlockRV,
) -> Result<(), ScheduleError> {
    let loops = s.get_loops(block)?;
    let fused = s.fuse(&loops[..4])?;
    let parts = s.split(fused, &[None, Some(256)])?;
    s.bind(parts[0], ThreadAxis::BlockIdxX)?;
    s.bind(parts[1], ThreadAxis::ThreadIdxX)?;
    Ok(())
}

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

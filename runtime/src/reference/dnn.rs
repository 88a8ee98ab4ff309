//! cuDNN convolutions for the conv rows: fp32 (FMA math: no TF32, as weft's fp32 kernels
//! compute) or fp16 (tensor-op math, fp32 accumulation), NCHW or NHWC, grouped
//! (depthwise is `groups = c`), optionally with the bias and ReLU fused
//! (`cudnnConvolutionBiasActivationForward`).
//!
//! Like PyTorch with `cudnn.benchmark = True`, every forward algorithm cuDNN accepts for
//! the problem is run and timed briefly, and the fastest is the reference; the row names
//! it.

use std::fmt;
use std::time::Duration;

use cudarc::cudnn::sys::{
    cudnnActivationMode_t, cudnnConvolutionFwdAlgo_t as Algo, cudnnConvolutionMode_t,
    cudnnMathType_t, cudnnNanPropagation_t, cudnnTensorFormat_t,
};
use cudarc::cudnn::{ConvBiasActivationForward, ConvForward, CudnnDataType};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use half::f16;

use super::{CudaReference, ReferenceError, cudnn, driver};
use crate::timing::Timing;

/// cuDNN's forward algorithms, all tried.
const ALGORITHMS: [Algo; 8] = [
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
];

/// An algorithm needing more scratch memory than this is skipped.
const WORKSPACE_LIMIT: usize = 1 << 30;

/// How activations are laid out in memory. The filter follows: `[k, c/g, r, s]` for NCHW,
/// `[k, r, s, c/g]` for NHWC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvLayout {
    Nchw,
    Nhwc,
}

/// One convolution: input `[n, c, h, w]` (in `layout`'s order), `k` filters of `r × s`
/// over `c / groups` channels, zero padding `pad`, stride `stride`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvProblem {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub r: usize,
    pub s: usize,
    pub stride: usize,
    pub pad: usize,
    pub groups: usize,
    pub layout: ConvLayout,
    /// fp16 tensors (fp32 accumulation) rather than fp32.
    pub half: bool,
    /// `relu(conv + bias[k])` in one cuDNN call.
    pub bias_relu: bool,
}

impl ConvProblem {
    /// Output height and width.
    pub fn out_hw(&self) -> (usize, usize) {
        let out =
            |x: usize, f: usize| (x + 2 * self.pad).saturating_sub(f) / self.stride.max(1) + 1;
        (out(self.h, self.r), out(self.w, self.s))
    }

    /// Elements of the input, the filter and the output.
    pub fn lens(&self) -> [usize; 3] {
        let (oh, ow) = self.out_hw();
        [
            self.n * self.c * self.h * self.w,
            self.k * (self.c / self.groups.max(1)) * self.r * self.s,
            self.n * self.k * oh * ow,
        ]
    }

    /// `cudnn-fp16-nhwc`, `cudnn-fp32-nchw-grouped`, ...: a reference row's name.
    pub fn label(&self) -> String {
        let mut s = format!(
            "cudnn-{}-{}",
            if self.half { "fp16" } else { "fp32" },
            match self.layout {
                ConvLayout::Nchw => "nchw",
                ConvLayout::Nhwc => "nhwc",
            }
        );
        if self.groups > 1 {
            s.push_str("-grouped");
        }
        if self.bias_relu {
            s.push_str("-bias-relu");
        }
        s
    }

    fn check(&self, x: usize, w: usize, bias: Option<usize>) -> Result<(), ReferenceError> {
        let bad = |what: String| ReferenceError::BadConv {
            problem: self.to_string(),
            what,
        };
        let dims = [
            self.n,
            self.c,
            self.h,
            self.w,
            self.k,
            self.r,
            self.s,
            self.stride,
            self.groups,
        ];
        if dims.contains(&0) {
            return Err(bad(
                "a dimension, the stride or the group count is zero".into()
            ));
        }
        if !self.c.is_multiple_of(self.groups) || !self.k.is_multiple_of(self.groups) {
            return Err(bad(format!(
                "{} groups do not divide c = {} and k = {}",
                self.groups, self.c, self.k
            )));
        }
        if self.h + 2 * self.pad < self.r || self.w + 2 * self.pad < self.s {
            return Err(bad("the filter is larger than the padded input".into()));
        }
        if self.lens().iter().any(|&l| i32::try_from(l).is_err()) {
            return Err(bad("a tensor has more than 2^31 elements".into()));
        }
        let [xl, wl, _] = self.lens();
        if x != xl || w != wl {
            return Err(bad(format!(
                "input has {x} elements and filter {w}; expected {xl} and {wl}"
            )));
        }
        match (self.bias_relu, bias) {
            (true, Some(b)) if b != self.k => {
                Err(bad(format!("bias has {b} elements; expected {}", self.k)))
            }
            (true, None) => Err(bad("bias-relu needs a bias".into())),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for ConvProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n={},c={},h={},w={},k={},r={},s={},stride={},pad={},groups={} ({})",
            self.n,
            self.c,
            self.h,
            self.w,
            self.k,
            self.r,
            self.s,
            self.stride,
            self.pad,
            self.groups,
            self.label()
        )
    }
}

/// What [`CudaReference::conv`] measured.
#[derive(Clone, Debug)]
pub struct ConvResult {
    /// The output in the problem's layout, widened to f32.
    pub output: Vec<f32>,
    pub timing: Timing,
    /// The fastest algorithm, as cuDNN names it (`IMPLICIT_PRECOMP_GEMM`, ...).
    pub algorithm: String,
}

/// An element type cuDNN takes, with its conversions from and to f32.
trait Elem: CudnnDataType + DeviceRepr + ValidAsZeroBits + Copy + Unpin + 'static {
    fn of(x: f32) -> Self;
    fn wide(self) -> f32;
}

impl Elem for f32 {
    fn of(x: f32) -> f32 {
        x
    }
    fn wide(self) -> f32 {
        self
    }
}

impl Elem for f16 {
    fn of(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn wide(self) -> f32 {
        self.to_f32()
    }
}

/// `CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD` → `WINOGRAD`.
fn algo_name(a: Algo) -> String {
    format!("{a:?}")
        .trim_start_matches("CUDNN_CONVOLUTION_FWD_ALGO_")
        .to_string()
}

impl CudaReference {
    /// Runs `p` with cuDNN on `x`, `w` (and `bias`): every algorithm cuDNN accepts is
    /// timed briefly; the fastest is run, downloaded (so a caller can check it) and timed
    /// with `warmup` and `iters` like weft's kernels.
    pub fn conv(
        &mut self,
        p: &ConvProblem,
        x: &[f32],
        w: &[f32],
        bias: Option<&[f32]>,
        warmup: usize,
        iters: usize,
    ) -> Result<ConvResult, ReferenceError> {
        p.check(x.len(), w.len(), bias.map(<[f32]>::len))?;
        if p.half {
            self.conv_typed::<f16>(p, x, w, bias, warmup, iters)
        } else {
            self.conv_typed::<f32>(p, x, w, bias, warmup, iters)
        }
    }

    fn conv_typed<T: Elem>(
        &mut self,
        p: &ConvProblem,
        x: &[f32],
        w: &[f32],
        bias: Option<&[f32]>,
        warmup: usize,
        iters: usize,
    ) -> Result<ConvResult, ReferenceError> {
        let dnn = self.dnn()?;
        let stream = self.stream.clone();
        let up = |what: &str, v: &[f32]| {
            let v: Vec<T> = v.iter().map(|&e| T::of(e)).collect();
            driver(format!("uploading {what}"), || stream.clone_htod(&v))
        };
        let x_dev = up("the input", x)?;
        let w_dev = up("the filter", w)?;
        let b_dev = up("the bias", bias.unwrap_or(&[0.0]))?;
        let [_, _, y_len] = p.lens();
        let z_dev = driver("allocating z", || stream.alloc_zeros::<T>(y_len))?;
        let mut y_dev = driver("allocating the output", || stream.alloc_zeros::<T>(y_len))?;

        let i = |v: usize| v as i32; // in range: checked by `ConvProblem::check`
        let (oh, ow) = p.out_hw();
        let format = match p.layout {
            ConvLayout::Nchw => cudnnTensorFormat_t::CUDNN_TENSOR_NCHW,
            ConvLayout::Nhwc => cudnnTensorFormat_t::CUDNN_TENSOR_NHWC,
        };
        let x_desc = cudnn("describing the input", || {
            dnn.create_4d_tensor::<T>(format, [i(p.n), i(p.c), i(p.h), i(p.w)])
        })?;
        let y_desc = cudnn("describing the output", || {
            dnn.create_4d_tensor::<T>(format, [i(p.n), i(p.k), i(oh), i(ow)])
        })?;
        let b_desc = cudnn("describing the bias", || {
            dnn.create_4d_tensor::<T>(cudnnTensorFormat_t::CUDNN_TENSOR_NCHW, [1, i(p.k), 1, 1])
        })?;
        let w_desc = cudnn("describing the filter", || {
            dnn.create_4d_filter::<T>(format, [i(p.k), i(p.c / p.groups), i(p.r), i(p.s)])
        })?;
        let mut conv = cudnn("describing the convolution", || {
            dnn.create_conv2d::<f32>(
                [i(p.pad), i(p.pad)],
                [i(p.stride), i(p.stride)],
                [1, 1],
                cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
            )
        })?;
        let math = if p.half {
            cudnnMathType_t::CUDNN_TENSOR_OP_MATH
        } else {
            cudnnMathType_t::CUDNN_FMA_MATH
        };
        cudnn("setting the math type", || conv.set_math_type(math))?;
        cudnn("setting the group count", || {
            conv.set_group_count(i(p.groups))
        })?;
        let act = cudnn("describing the ReLU", || {
            dnn.create_activation::<f32>(
                cudnnActivationMode_t::CUDNN_ACTIVATION_RELU,
                cudnnNanPropagation_t::CUDNN_PROPAGATE_NAN,
                0.0,
            )
        })?;
        let plain = ConvForward {
            conv: &conv,
            x: &x_desc,
            w: &w_desc,
            y: &y_desc,
        };
        let fused = ConvBiasActivationForward {
            conv: &conv,
            act: &act,
            x: &x_desc,
            w: &w_desc,
            z: &y_desc,
            bias: &b_desc,
            y: &y_desc,
        };

        // One run with `algo` on `workspace`, enqueued.
        let launch = |algo: Algo,
                      workspace: &mut CudaSlice<u8>,
                      y: &mut CudaSlice<T>|
         -> Result<(), ReferenceError> {
            let name = format!("convolution forward ({})", algo_name(algo));
            // SAFETY: the descriptors above describe exactly these buffers: x, w, bias,
            // z and y were allocated with the element counts `ConvProblem::lens` gives
            // for the dimensions the descriptors were made from.
            cudnn(name, || unsafe {
                if p.bias_relu {
                    fused.launch(
                        algo,
                        Some(workspace),
                        (T::of(1.0), T::of(0.0)),
                        &x_dev,
                        &w_dev,
                        &z_dev,
                        &b_dev,
                        y,
                    )
                } else {
                    plain.launch(
                        algo,
                        Some(workspace),
                        (T::of(1.0), T::of(0.0)),
                        &x_dev,
                        &w_dev,
                        y,
                    )
                }
            })
        };

        let mut best: Option<(Algo, Duration)> = None;
        let mut refused = Vec::new();
        for algo in ALGORITHMS {
            let bytes = match cudnn("workspace size", || plain.get_workspace_size(algo)) {
                Ok(b) if b <= WORKSPACE_LIMIT => b,
                Ok(b) => {
                    refused.push(format!("{}: needs {b} bytes", algo_name(algo)));
                    continue;
                }
                Err(e) => {
                    refused.push(format!("{}: {e}", algo_name(algo)));
                    continue;
                }
            };
            let mut ws = driver("allocating the workspace", || {
                stream.alloc_zeros::<u8>(bytes.max(1))
            })?;
            let mut run = || launch(algo, &mut ws, &mut y_dev);
            match self.time(1, 3, &mut run) {
                Ok(t) if best.is_none_or(|(_, b)| t.median < b) => best = Some((algo, t.median)),
                Ok(_) => {}
                Err(e) => refused.push(format!("{}: {e}", algo_name(algo))),
            }
        }
        let Some((algo, _)) = best else {
            return Err(ReferenceError::NoAlgorithm {
                problem: p.to_string(),
                tried: refused.join("; "),
            });
        };
        let bytes = cudnn("workspace size", || plain.get_workspace_size(algo))?;
        let mut ws = driver("allocating the workspace", || {
            stream.alloc_zeros::<u8>(bytes.max(1))
        })?;
        let timing = self.time(warmup, iters, &mut || launch(algo, &mut ws, &mut y_dev))?;
        // Every run writes the same output: the last one is the one checked.
        let y = driver("downloading the output", || stream.clone_dtoh(&y_dev))?;
        Ok(ConvResult {
            output: y.into_iter().map(T::wide).collect(),
            timing,
            algorithm: algo_name(algo),
        })
    }
}

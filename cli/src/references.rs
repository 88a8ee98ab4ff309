//! The CUDA reference rows of a benchmark, in weft's process: which vendor call computes
//! the same op as a workload (cuBLAS SGEMM or HGEMM, cuDNN convolution in the op's
//! precision and layout), the device-to-device copy that is a memory-bound op's roof, and
//! the rows they become. A reference's output is checked against the same float64
//! reference as weft's, so a row cannot time the wrong computation.

use ndarray::{ArrayD, IxDyn};
use weft_ops::Workload;
use weft_ops::check::Checker;
use weft_runtime::Timing;
use weft_runtime::reference::{ConvLayout, ConvProblem, CudaReference, ReferenceError};

use crate::bench::{Kind, Place, Row};
use crate::error::CliError;
use weft_tune::measure::TimingPlan;

/// How many times weft's tolerance a reference's error may be and still count as
/// computing the op. Looser than weft's: cuDNN's FFT and Winograd algorithms round
/// differently, and a layout or shape mistake (what this check is for) gives errors of
/// order Σ|terms|, thousands of times the tolerance.
const REFERENCE_TOLERANCE: f64 = 100.0;

/// The vendor call that computes a workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Vendor {
    Sgemm,
    Hgemm,
    /// SGEMM with `B` given K-major (`[n, k]`): cuBLAS's `op(B) = Bᵀ`.
    SgemmBt,
    /// HGEMM with `B` given K-major (`[n, k]`).
    HgemmBt,
    Conv(ConvProblem),
}

impl Vendor {
    /// The call for `w`'s op, if the vendor has one.
    pub fn of(w: &Workload) -> Option<Vendor> {
        let g = |k: &str| w.shape.get(k).max(0) as usize;
        let conv = |layout, half, bias_relu| {
            Vendor::Conv(ConvProblem {
                groups: w.shape.get("g").max(1) as usize,
                n: g("n"),
                c: g("c"),
                h: g("h"),
                w: g("w"),
                k: g("k"),
                r: g("r"),
                s: g("s"),
                stride: g("stride"),
                pad: g("pad"),
                layout,
                half,
                bias_relu,
            })
        };
        Some(match w.op.name {
            // cuBLAS at the same m, n, k (it picks its own kernels for few rows).
            "matmul" | "gemv" => Vendor::Sgemm,
            "matmul-f16" | "gemv-f16" => Vendor::Hgemm,
            // The same GEMM reading the weight `[n, k]` as it is stored (a transposed
            // operand is native to cuBLAS: no copy, no other kernel).
            "gemv-kmajor" => Vendor::SgemmBt,
            "gemv-kmajor-f16" => Vendor::HgemmBt,
            "conv2d" | "winograd-conv2d" => conv(ConvLayout::Nchw, false, false),
            "conv2d-bias-relu" => conv(ConvLayout::Nchw, false, true),
            "conv2d-f16" => conv(ConvLayout::Nhwc, true, false),
            "conv2d-f16-bias-relu" => conv(ConvLayout::Nhwc, true, true),
            "conv2d-f16-nchw" => conv(ConvLayout::Nchw, true, false),
            // weft's `[R, S, C/G, K]` filter permuted as the dense HWIO one is.
            "grouped-conv2d" => conv(ConvLayout::Nchw, false, false),
            "grouped-conv2d-f16" => conv(ConvLayout::Nhwc, true, false),
            "depthwise-conv2d" | "depthwise-conv2d-f16" => {
                // fp16: NHWC, and the HWIO filter `[k, k, 1, c]` read as KRSC below.
                let half = w.op.name == "depthwise-conv2d-f16";
                let (c, k) = (g("c"), g("k"));
                Vendor::Conv(ConvProblem {
                    n: g("b"),
                    c,
                    h: g("h"),
                    w: g("w"),
                    k: c,
                    r: k,
                    s: k,
                    stride: g("stride"),
                    pad: k.saturating_sub(1) / 2,
                    groups: c,
                    layout: if half {
                        ConvLayout::Nhwc
                    } else {
                        ConvLayout::Nchw
                    },
                    half,
                    bias_relu: false,
                })
            }
            _ => return None,
        })
    }

    /// The reference row's name.
    pub fn label(&self) -> String {
        match self {
            Vendor::Sgemm => "cublas-sgemm".to_string(),
            Vendor::Hgemm => "cublas-hgemm".to_string(),
            Vendor::SgemmBt => "cublas-sgemm-bt".to_string(),
            Vendor::HgemmBt => "cublas-hgemm-bt".to_string(),
            Vendor::Conv(p) => p.label(),
        }
    }
}

/// The reference rows for `w` on a `cuda` target: the vendor's (where it has the op),
/// run on `inputs` and checked by `checker` as weft's rows are, and, for a memory-bound
/// op, the copy. `reference` is `Err` when CUDA's reference could not
/// be opened; every row then says why.
#[allow(clippy::too_many_arguments)] // one row's context: all of it is needed
pub fn rows(
    w: &Workload,
    inputs: &[ArrayD<f32>],
    checker: &Checker,
    target: &str,
    reference: Result<&mut CudaReference, &CliError>,
    place: Place,
    plan: &TimingPlan,
    memory_bound: bool,
) -> Vec<Row> {
    let device = reference.as_ref().map_or("", |r| r.name()).to_string();
    let mut out = Vec::new();
    let mut reference = reference;
    if let Some(v) = Vendor::of(w) {
        let row = Row::new(w, &v.label(), target, &device, Kind::Vendor).placed(place);
        out.push(match reference.as_mut() {
            Ok(r) => vendor_row(row, w, (inputs, checker), &v, r, plan, target),
            Err(e) => row.failed(e),
        });
    }
    if memory_bound {
        let row = Row::new(w, "d2d-copy", target, &device, Kind::Copy).placed(place);
        out.push(match reference.as_mut() {
            Ok(r) => copy_row(row, w, r, plan),
            Err(e) => row.failed(e),
        });
    }
    out
}

fn vendor_row(
    row: Row,
    w: &Workload,
    (inputs, checker): (&[ArrayD<f32>], &Checker),
    v: &Vendor,
    r: &mut CudaReference,
    plan: &TimingPlan,
    target: &str,
) -> Row {
    let iters = plan.iters.unwrap_or(plan.max_iters);
    let what = format!("{} at {} on {target}", v.label(), w.shape);
    let result = call(v, w, inputs, r, (plan.warmup, iters));
    match result {
        Ok((out, timing, note)) => {
            let shape: Vec<usize> = w.output.shape().iter().map(|&d| d as usize).collect();
            let error = match ArrayD::from_shape_vec(IxDyn(&shape), out) {
                Ok(out) => checker.check(&out),
                Err(_) => weft_ops::check::Error::infinite(),
            };
            let mut row = row
                .timed(&timing)
                .checked(&error, REFERENCE_TOLERANCE, &what);
            row.note = note;
            row
        }
        Err(e) => row.failed(&CliError::Reference {
            context: what,
            source: Box::new(e),
        }),
    }
}

/// Runs vendor call `v` on `w`'s `inputs` with `warmup` and `iters` runs: its output
/// (for a check), its timing and a note (cuDNN's algorithm).
pub(crate) fn call(
    v: &Vendor,
    w: &Workload,
    inputs: &[ArrayD<f32>],
    r: &mut CudaReference,
    (warmup, iters): (usize, usize),
) -> Result<(Vec<f32>, Timing, Option<String>), ReferenceError> {
    let flat = |i: usize| -> Vec<f32> {
        inputs
            .get(i)
            .map(|x| x.iter().copied().collect())
            .unwrap_or_default()
    };
    match v {
        Vendor::Sgemm | Vendor::Hgemm | Vendor::SgemmBt | Vendor::HgemmBt => {
            let g = |k: &str| w.shape.get(k).max(0) as usize;
            let mnk = [g("m"), g("n"), g("k")];
            let (a, b) = (flat(0), flat(1));
            let half = matches!(v, Vendor::Hgemm | Vendor::HgemmBt);
            let k_major = matches!(v, Vendor::SgemmBt | Vendor::HgemmBt);
            let out = match (half, k_major) {
                (false, false) => r.sgemm(&a, &b, mnk, warmup, iters),
                (true, false) => r.hgemm(&a, &b, mnk, warmup, iters),
                (false, true) => r.sgemm_bt(&a, &b, mnk, warmup, iters),
                (true, true) => r.hgemm_bt(&a, &b, mnk, warmup, iters),
            };
            out.map(|(c, t)| (c, t, None))
        }
        Vendor::Conv(p) => {
            let filter = match (w.op.name, p.layout) {
                // weft's NHWC convs take an HWIO filter; cuDNN's NHWC filter is KRSC.
                (_, ConvLayout::Nhwc) => inputs
                    .get(1)
                    .map(|f| f.view().permuted_axes(IxDyn(&[3, 0, 1, 2])))
                    .map(|f| f.iter().copied().collect())
                    .unwrap_or_default(),
                _ => flat(1),
            };
            let bias = p.bias_relu.then(|| flat(2));
            r.conv(p, &flat(0), &filter, bias.as_deref(), warmup, iters)
                .map(|c| {
                    let note = format!("fastest cuDNN algorithm: {}", c.algorithm);
                    (c.output, c.timing, Some(note))
                })
        }
    }
}

/// A device-to-device copy moving the workload's bytes (half read, half written).
fn copy_row(row: Row, w: &Workload, r: &mut CudaReference, plan: &TimingPlan) -> Row {
    let half = (w.bytes / 2.0).max(1.0) as usize;
    let iters = plan.iters.unwrap_or(plan.max_iters);
    match r.copy(half, plan.warmup, iters) {
        Ok(timing) => {
            let mut row = row.timed(&timing);
            row.bytes = 2.0 * half as f64;
            row.gbps = row
                .median_ms
                .filter(|t| *t > 0.0)
                .map(|t| row.bytes / (t / 1e3) / 1e9);
            row.gflops = None;
            row
        }
        Err(e) => row.failed(&CliError::Reference {
            context: format!("copying {half} bytes"),
            source: Box::new(e),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ops::Shape;

    fn workload(op: &str, shape: &str) -> Workload {
        let shape = Shape::parse(op, shape).expect("a valid shape");
        Workload::new(op, &shape).expect("a valid workload")
    }

    #[test]
    fn every_compute_op_has_its_vendor_call() {
        let w = workload("conv2d-f16", "n=2,c=3,h=17,w=19,k=5,r=3,s=3,stride=2,pad=1");
        let Some(Vendor::Conv(p)) = Vendor::of(&w) else {
            panic!("conv2d-f16 has a cuDNN reference");
        };
        assert_eq!((p.layout, p.half, p.groups), (ConvLayout::Nhwc, true, 1));
        assert_eq!(p.out_hw(), (9, 10));
        assert_eq!(p.lens()[2] as i64, w.output.shape().iter().product::<i64>());
        assert_eq!(p.label(), "cudnn-fp16-nhwc");

        let w = workload(
            "grouped-conv2d-f16",
            "n=1,c=104,h=9,w=9,k=104,r=3,s=3,stride=2,pad=1,g=13",
        );
        let Some(Vendor::Conv(p)) = Vendor::of(&w) else {
            panic!("grouped-conv2d-f16 has a grouped cuDNN reference");
        };
        assert_eq!((p.layout, p.half, p.groups), (ConvLayout::Nhwc, true, 13));
        assert_eq!(p.label(), "cudnn-fp16-nhwc-grouped");
        assert_eq!(p.lens()[2] as i64, w.output.shape().iter().product::<i64>());
        assert_eq!(
            p.lens()[1] as i64,
            w.inputs[1].shape().iter().product::<i64>()
        );

        let w = workload("depthwise-conv2d", "b=2,c=3,h=13,w=9,k=3,stride=2");
        let Some(Vendor::Conv(p)) = Vendor::of(&w) else {
            panic!("depthwise has a grouped cuDNN reference");
        };
        assert_eq!((p.groups, p.k, p.pad), (3, 3, 1));
        assert_eq!(p.lens()[2] as i64, w.output.shape().iter().product::<i64>());
        assert_eq!(
            p.lens()[1] as i64,
            w.inputs[1].shape().iter().product::<i64>()
        );

        let w = workload("depthwise-conv2d-f16", "b=2,c=97,h=13,w=9,k=5,stride=2");
        let Some(Vendor::Conv(p)) = Vendor::of(&w) else {
            panic!("depthwise f16 has a grouped cuDNN reference");
        };
        assert_eq!((p.layout, p.half, p.groups), (ConvLayout::Nhwc, true, 97));
        assert_eq!(p.lens()[2] as i64, w.output.shape().iter().product::<i64>());
        assert_eq!(
            p.lens()[1] as i64,
            w.inputs[1].shape().iter().product::<i64>()
        );

        assert_eq!(
            Vendor::of(&workload("matmul-f16", "m=3,n=5,k=7")),
            Some(Vendor::Hgemm)
        );
        assert_eq!(
            Vendor::of(&workload("gemv-kmajor-f16", "m=1,n=5,k=7")),
            Some(Vendor::HgemmBt)
        );
        assert_eq!(
            Vendor::of(&workload("gemv-kmajor", "m=1,n=5,k=7")),
            Some(Vendor::SgemmBt)
        );
        assert_eq!(Vendor::of(&workload("vecadd", "n=9")), None);
    }
}

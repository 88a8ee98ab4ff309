//! Pooling: max or average over a window of `x` `[N, C, H, W]` ([`Pool`]), or over the
//! whole of H and W ([`GlobalPool`], `[N, C, H, W]` → `[N, C, 1, 1]`). Reductions, one
//! thread per output.

mod dilated;
mod lp;

use std::fmt;

use ndarray::{ArrayD, IxDyn, s};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, float, rank, window_out};
use super::{ExportNode, IndexUse, Inline, Op, OpDef, Reduction, Reshape, Role, Window};
use crate::tensor::{Tensor, TensorId};

/// Max or average.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    Max,
    Average,
}

/// A pooling window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    pub kind: PoolKind,
    /// Window height and width.
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    /// Top, left, bottom, right.
    pub pads: [usize; 4],
    /// Output size rounded up (`ceil_mode`): the last window may start inside the
    /// padding-free input and run past it.
    pub ceil_mode: bool,
    /// Average pooling divides by the whole window, padding included (else by the
    /// elements inside the input).
    pub count_include_pad: bool,
}

/// Pooling over the whole of H and W.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalPool {
    pub kind: PoolKind,
}

impl OpDef for Pool {
    fn name(&self) -> &'static str {
        match self.kind {
            PoolKind::Max => "MaxPool",
            PoolKind::Average => "AveragePool",
        }
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(kernel={:?}, strides={:?}, pads={:?}",
            self.kernel, self.strides, self.pads
        )?;
        if self.ceil_mode {
            f.write_str(", ceil_mode")?;
        }
        if self.kind == PoolKind::Average && self.count_include_pad {
            f.write_str(", count_include_pad")?;
        }
        f.write_str(")")
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let p = self;
        arity(inputs, 1, 1)?;
        float(inputs[0], 0)?;
        let x = rank(inputs[0], 0, 4)?;
        let [pt, pl, pb, pr] = p.pads;
        if pt >= p.kernel[0] || pb >= p.kernel[0] || pl >= p.kernel[1] || pr >= p.kernel[1] {
            return Err(format!(
                "pads {:?} must be smaller than the {}x{} window",
                p.pads, p.kernel[0], p.kernel[1]
            ));
        }
        let oh = window_out(x[2], p.kernel[0], p.strides[0], 1, pt, pb, p.ceil_mode);
        let ow = window_out(x[3], p.kernel[1], p.strides[1], 1, pl, pr, p.ceil_mode);
        let (Some(oh), Some(ow)) = (oh, ow) else {
            return Err(format!(
                "the {}x{} window (strides {:?}) does not fit the {}x{} input padded by {:?}",
                p.kernel[0], p.kernel[1], p.strides, x[2], x[3], p.pads
            ));
        };
        Ok((vec![x[0], x[1], oh, ow], inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        pool(self, x[0])
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Window(Window::Pool(self)))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.ints("kernel_shape", &self.kernel);
        node.ints("strides", &self.strides);
        node.ints("pads", &self.pads);
        node.int("ceil_mode", i64::from(self.ceil_mode));
        if self.kind == PoolKind::Average {
            node.int("count_include_pad", i64::from(self.count_include_pad));
        }
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

impl OpDef for GlobalPool {
    fn name(&self) -> &'static str {
        match self.kind {
            PoolKind::Max => "GlobalMaxPool",
            PoolKind::Average => "GlobalAveragePool",
        }
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        let x = rank(inputs[0], 0, 4)?;
        Ok((vec![x[0], x[1], 1, 1], inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let s = x[0].shape();
        let (n, c) = (s[0], s[1]);
        let mut out = ArrayD::zeros(IxDyn(&[n, c, 1, 1]));
        for b in 0..n {
            for ch in 0..c {
                let plane = x[0].slice(s![b, ch, .., ..]);
                out[[b, ch, 0, 0]] = match self.kind {
                    PoolKind::Max => plane.fold(f64::NEG_INFINITY, |m, &v| m.max(v)),
                    PoolKind::Average => plane.sum() / plane.len() as f64,
                };
            }
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Window(Window::Global(self)))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

fn pool(p: &Pool, x: &ArrayD<f64>) -> ArrayD<f64> {
    let s = x.shape();
    let (n, c, h, w) = (s[0], s[1], s[2], s[3]);
    let [pt, pl, pb, pr] = p.pads;
    let oh = window_out(h, p.kernel[0], p.strides[0], 1, pt, pb, p.ceil_mode).expect("checked");
    let ow = window_out(w, p.kernel[1], p.strides[1], 1, pl, pr, p.ceil_mode).expect("checked");
    let mut out = ArrayD::zeros(IxDyn(&[n, c, oh, ow]));
    for b in 0..n {
        for ch in 0..c {
            for y in 0..oh {
                for xo in 0..ow {
                    let y0 = (y * p.strides[0]) as isize - pt as isize;
                    let x0 = (xo * p.strides[1]) as isize - pl as isize;
                    let mut max = f64::NEG_INFINITY;
                    let mut sum = 0.0;
                    let mut inside = 0usize;
                    let mut padded = 0usize;
                    for i in 0..p.kernel[0] as isize {
                        for j in 0..p.kernel[1] as isize {
                            let (iy, ix) = (y0 + i, x0 + j);
                            // The window's part inside input + explicit padding counts for
                            // count_include_pad; ceil mode's overhang past it never does.
                            if iy < (h + pb) as isize && ix < (w + pr) as isize {
                                padded += 1;
                            }
                            if iy >= 0 && iy < h as isize && ix >= 0 && ix < w as isize {
                                let v = x[[b, ch, iy as usize, ix as usize]];
                                max = max.max(v);
                                sum += v;
                                inside += 1;
                            }
                        }
                    }
                    out[[b, ch, y, xo]] = match p.kind {
                        PoolKind::Max => max,
                        PoolKind::Average if p.count_include_pad => sum / padded as f64,
                        PoolKind::Average => sum / inside.max(1) as f64,
                    };
                }
            }
        }
    }
    out
}

/// ONNX's pooling ops: 2-D windows, 1-D ones as 2-D windows of height 1, 3-D ones as a
/// 2-D window then one over depth.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("AveragePool", &[7, 10, 11, 19, 22], |n| {
        import_pool(n, PoolKind::Average)
    }),
    OnnxOp::new("GlobalAveragePool", &[1, 22], |n| {
        import_global(n, PoolKind::Average)
    }),
    OnnxOp::new("GlobalMaxPool", &[1, 22], |n| {
        import_global(n, PoolKind::Max)
    }),
    OnnxOp::new("LRN", &[1, 13], lp::import_lrn),
    OnnxOp::new("LpPool", &[2, 11, 18, 22], lp::import_lp_pool),
    OnnxOp::new("MaxPool", &[1, 8, 10, 11, 12, 22], |n| {
        import_pool(n, PoolKind::Max)
    }),
];

/// A global pool over 2-D windows as it is; over 1-D or 3-D ones (a speech encoder's
/// `[N, C, L]`, a video model's `[N, C, D, H, W]`) the spatial axes flattened to one row
/// of a 2-D window, pooled, and reshaped back to ones.
fn import_global(n: &mut dyn OnnxNode, kind: PoolKind) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let op = Op::GlobalPool(GlobalPool { kind });
    if dims.len() == 4 || dims.len() < 3 {
        return n.emit(op, vec![x]);
    }
    let (lead, spatial) = dims.split_at(2);
    let flat = Reshape {
        shape: vec![lead[0], lead[1], spatial.iter().product(), 1],
    };
    let x = n.step("flat", Op::Reshape(flat), vec![x])?;
    let pooled = n.step("pool", op, vec![x])?;
    let mut back = lead.to_vec();
    back.resize(dims.len(), 1);
    n.emit(Op::Reshape(Reshape { shape: back }), vec![pooled])
}

fn import_pool(n: &mut dyn OnnxNode, kind: PoolKind) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    window_pool(n, x, kind, Out::Node).map(drop)
}

/// Where a pooling's last node goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    /// It computes the ONNX node's output.
    Node,
    /// It is a step of a composition (LpPool: the average of `|x|^p` over whole windows,
    /// padding included whatever `count_include_pad` says), whose output is returned.
    Step,
}

/// Adds `op` as the last node of a pooling: the node's output, or a step.
fn put(
    n: &mut dyn OnnxNode,
    out: Out,
    tag: &str,
    op: Op,
    inputs: Vec<TensorId>,
) -> Result<Option<TensorId>, OnnxError> {
    match out {
        Out::Node => n.emit(op, inputs).map(|()| None),
        Out::Step => n.step(tag, op, inputs).map(Some),
    }
}

/// The pooling of `x` the node's attributes describe.
fn window_pool(
    n: &mut dyn OnnxNode,
    x: TensorId,
    kind: PoolKind,
    out: Out,
) -> Result<Option<TensorId>, OnnxError> {
    let xs = n.shape(x);
    let kernel = n
        .ints("kernel_shape")?
        .ok_or_else(|| n.attr_err("kernel_shape", "is required"))?;
    let kernel = n.positive("kernel_shape", &kernel)?;
    let dims = kernel.len();
    if !(1..=3).contains(&dims) {
        return Err(n.attr_err(
            "kernel_shape",
            format!("{kernel:?} is a {dims}-D window: weft pools in 1-D, 2-D and 3-D only"),
        ));
    }
    if xs.len() != dims + 2 {
        let layout = [
            "[N, C, L] tensors in 1-D (rank 3)",
            "NCHW tensors (rank 4)",
            "NCDHW tensors in 3-D (rank 5)",
        ][dims - 1];
        return Err(n.err(format!("input 0 has shape {xs:?}: weft pools {layout}")));
    }
    if kind == PoolKind::Max {
        n.refuse_used_outputs(1, "the indices")?;
    }
    let strides = n.window_ints("strides", dims)?;
    let dilations = n.window_ints("dilations", dims)?;
    let pads = n.window_pads(&xs[2..], &kernel, &strides, &dilations)?;
    let ceil_mode = n.flag("ceil_mode", false)?;
    let count_include_pad =
        kind == PoolKind::Average && (out == Out::Step || n.flag("count_include_pad", false)?);
    if dilations.iter().any(|&d| d != 1) {
        let window = dilated::Window {
            kernel,
            strides,
            dilations,
            pads,
            ceil_mode,
            count_include_pad,
        };
        return dilated::pool(n, x, kind, &window, out);
    }
    if dims == 2 {
        let pool = Pool {
            kind,
            kernel: [kernel[0], kernel[1]],
            strides: [strides[0], strides[1]],
            pads: [pads[0], pads[1], pads[2], pads[3]],
            ceil_mode,
            count_include_pad,
        };
        return put(n, out, "pool", Op::Pool(pool), vec![x]);
    }
    let reshape = |shape: Vec<usize>| Op::Reshape(Reshape { shape });
    if dims == 1 {
        // 1-D: `[N, C, L]` as `[N, C, 1, L]` under a window of height 1, and back.
        let pool = Pool {
            kind,
            kernel: [1, kernel[0]],
            strides: [1, strides[0]],
            pads: [0, pads[0], 0, pads[1]],
            ceil_mode,
            count_include_pad,
        };
        let x2 = n.step("as_2d", reshape(vec![xs[0], xs[1], 1, xs[2]]), vec![x])?;
        let y2 = n.step("pool_2d", Op::Pool(pool), vec![x2])?;
        let ys = n.shape(y2);
        return put(n, out, "pool", reshape(vec![ys[0], ys[1], ys[3]]), vec![y2]);
    }
    // 3-D: the window is a box, so the maximum, the sum and every count of its elements
    // (inside the input, or inside input and padding) factor into H·W and depth: a 2-D
    // pool of `[N, C·D, H, W]`, then a window of `kd x 1` over `[N, C, D, OH·OW]`.
    let (nb, c, d) = (xs[0], xs[1], xs[2]);
    let hw = Pool {
        kind,
        kernel: [kernel[1], kernel[2]],
        strides: [strides[1], strides[2]],
        pads: [pads[1], pads[2], pads[4], pads[5]],
        ceil_mode,
        count_include_pad,
    };
    let x2 = n.step("planes", reshape(vec![nb, c * d, xs[3], xs[4]]), vec![x])?;
    let y2 = n.step("pool_hw", Op::Pool(hw), vec![x2])?;
    let ys = n.shape(y2);
    let (oh, ow) = (ys[2], ys[3]);
    let depth = Pool {
        kind,
        kernel: [kernel[0], 1],
        strides: [strides[0], 1],
        pads: [pads[0], 0, pads[3], 0],
        ceil_mode,
        count_include_pad,
    };
    let y3 = n.step("depth_rows", reshape(vec![nb, c, d, oh * ow]), vec![y2])?;
    let y4 = n.step("pool_depth", Op::Pool(depth), vec![y3])?;
    let od = n.shape(y4)[2];
    put(n, out, "pool", reshape(vec![nb, c, od, oh, ow]), vec![y4])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_counts_padding_as_onnx_does() {
        // 1x1x3x3 of ones, 2x2 average with stride 2 and pad 1: the first windows overlap
        // the padding; without count_include_pad every output is 1.
        let x = ArrayD::from_elem(IxDyn(&[1, 1, 3, 3]), 1.0);
        let mut p = Pool {
            kind: PoolKind::Average,
            kernel: [2, 2],
            strides: [2, 2],
            pads: [1, 1, 1, 1],
            ceil_mode: false,
            count_include_pad: false,
        };
        let out = pool(&p, &x);
        assert!(out.iter().all(|&v| (v - 1.0).abs() < 1e-15), "{out}");
        // With count_include_pad the corner window holds 1 input of 4, the top edge's 2 of
        // 4, the last window lies inside the input.
        p.count_include_pad = true;
        let out = pool(&p, &x);
        assert_eq!(out[[0, 0, 0, 0]], 0.25);
        assert_eq!(out[[0, 0, 0, 1]], 0.5);
        assert_eq!(out[[0, 0, 1, 1]], 1.0);
    }
}

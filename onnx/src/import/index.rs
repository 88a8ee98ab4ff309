//! The ops transformers use, on tensors computed at run time: index maps (Transpose,
//! Slice, Split, Squeeze/Unsqueeze, Expand, Cast, the gathers) and row reductions
//! (Softmax, LayerNormalization, ReduceMean/Sum/Max/Min). Their shape inputs must be
//! constants (weft fixes shapes at import); shape arithmetic on constants never gets
//! here (see `fold`).

use weft_graph::op::{
    Cast, Expand, Gather, GatherElements, LayerNorm, Op, Reduce, ReduceKind, Reshape, Slice,
    Softmax, Transpose,
};

use super::Importer;
use super::attrs::Attrs;
use super::geometry::{axis_in, resolve_slice};
use super::ops::Ctx;
use super::tensor;
use crate::error::ImportError;

impl Importer<'_> {
    /// The integer constant at input `i`, where given; `what` names it in errors.
    fn int_input(&self, cx: &Ctx, i: usize, what: &str) -> Result<Option<Vec<i64>>, ImportError> {
        match self.konst(cx, i)? {
            None => Ok(None),
            Some(c) => c
                .ints()
                .map(|v| Some(v.to_vec()))
                .ok_or_else(|| cx.err(format!("input {i} ({what}) is not an integer tensor"))),
        }
    }

    pub(super) fn transpose(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let r = self.shape(x).len();
        let perm = match a.ints("perm")? {
            Some(p) => p
                .iter()
                .map(|&v| axis_in(a, "perm", v, r, false))
                .collect::<Result<Vec<_>, _>>()?,
            None => (0..r).rev().collect(),
        };
        self.emit(cx, Op::Transpose(Transpose { perm }), vec![x])
    }

    pub(super) fn slice(&mut self, cx: &Ctx) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let dims = self.shape(x);
        let starts = self.int_input(cx, 1, "starts")?.unwrap_or_default();
        let ends = self.int_input(cx, 2, "ends")?.unwrap_or_default();
        let axes = self.int_input(cx, 3, "axes")?;
        let steps = self.int_input(cx, 4, "steps")?;
        let (starts, steps, sizes) =
            resolve_slice(&dims, &starts, &ends, axes.as_deref(), steps.as_deref())
                .map_err(|w| cx.err(w))?;
        if sizes.contains(&0) {
            return Err(cx.err(format!(
                "the slice of {dims:?} is empty ({sizes:?}): weft's tensors have no empty dimension"
            )));
        }
        self.emit(
            cx,
            Op::Slice(Slice {
                starts,
                steps,
                sizes,
            }),
            vec![x],
        )
    }

    /// Split: one Slice node per output.
    pub(super) fn split(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let dims = self.shape(x);
        let axis = axis_in(a, "axis", a.int("axis", 0)?, dims.len(), false)?;
        let outs: Vec<String> = cx.node.output.clone();
        let n = dims[axis];
        let parts: Vec<usize> = match self.int_input(cx, 1, "split")? {
            Some(p) => p.iter().map(|&v| v.max(0) as usize).collect(),
            None => {
                let k = if a.has("num_outputs") {
                    a.int("num_outputs", 1)?
                } else {
                    outs.len() as i64
                };
                if k < 1 {
                    return Err(a.err("num_outputs", format!("{k} is not a positive count")));
                }
                // Equal parts, the last smaller where they do not divide (opset 18).
                let k = k as usize;
                let each = n.div_ceil(k);
                (0..k)
                    .map(|i| each.min(n.saturating_sub(i * each)))
                    .collect()
            }
        };
        if parts.iter().sum::<usize>() != n || parts.len() != outs.len() || parts.contains(&0) {
            return Err(cx.err(format!(
                "parts {parts:?} for {} outputs do not split the {n} elements of axis {axis}",
                outs.len()
            )));
        }
        let mut start = 0;
        for (k, (size, out)) in parts.iter().zip(&outs).enumerate() {
            let mut starts = vec![0; dims.len()];
            starts[axis] = start;
            let mut sizes = dims.clone();
            sizes[axis] = *size;
            start += size;
            if out.is_empty() {
                continue;
            }
            let op = Op::Slice(Slice {
                starts,
                steps: vec![1; dims.len()],
                sizes,
            });
            let id = self
                .graph
                .add_node(format!("{}::{k}", cx.name), op, vec![x], out.clone())?;
            self.values.insert(out.clone(), id);
        }
        Ok(())
    }

    /// Squeeze and Unsqueeze: reshapes.
    pub(super) fn squeeze(&mut self, cx: &Ctx, unsqueeze: bool) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let mut dims = self.shape(x);
        let axes = self.int_input(cx, 1, "axes")?;
        let bad = |v: i64, r: usize| cx.err(format!("axis {v} is out of range for rank {r}"));
        let resolve = |v: i64, r: usize| -> Result<usize, ImportError> {
            let x = if v < 0 { v + r as i64 } else { v };
            if x < 0 || x >= r as i64 {
                return Err(bad(v, r));
            }
            Ok(x as usize)
        };
        if unsqueeze {
            let axes = axes.ok_or_else(|| cx.err("input 1 (the axes) is missing"))?;
            let r = dims.len() + axes.len();
            let mut ax = axes
                .iter()
                .map(|&v| resolve(v, r))
                .collect::<Result<Vec<_>, _>>()?;
            ax.sort_unstable();
            for a in ax {
                dims.insert(a, 1);
            }
        } else {
            let r = dims.len();
            let ax: Vec<usize> = match axes {
                Some(v) => v
                    .iter()
                    .map(|&v| resolve(v, r))
                    .collect::<Result<Vec<_>, _>>()?,
                None => (0..r).filter(|&d| dims[d] == 1).collect(),
            };
            if let Some(&d) = ax.iter().find(|&&d| dims[d] != 1) {
                return Err(cx.err(format!("dimension {d} of {dims:?} is not 1")));
            }
            dims = (0..r)
                .filter(|d| !ax.contains(d))
                .map(|d| dims[d])
                .collect();
        }
        self.emit(cx, Op::Reshape(Reshape { shape: dims }), vec![x])
    }

    pub(super) fn expand(&mut self, cx: &Ctx) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let dims = self.shape(x);
        let spec = self
            .int_input(cx, 1, "shape")?
            .ok_or_else(|| cx.err("input 1 (the shape) is missing"))?;
        let spec: Vec<usize> = spec.iter().map(|&d| d.max(0) as usize).collect();
        let shape = weft_graph::op::shapes::broadcast(&dims, &spec)
            .ok_or_else(|| cx.err(format!("{dims:?} does not broadcast with {spec:?}")))?;
        let op = if shape == dims {
            Op::Identity
        } else {
            Op::Expand(Expand { shape })
        };
        self.emit(cx, op, vec![x])
    }

    pub(super) fn cast(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let to = a.int("to", 0)?;
        let to = match tensor::graph_dtype(to as i32) {
            Some(d) => d,
            None => {
                return Err(a.err(
                    "to",
                    format!(
                        "{}: weft casts to float, float16, double, integers and bool",
                        tensor::type_name(to as i32)
                    ),
                ));
            }
        };
        let op = if self.graph.tensor(x).dtype == to {
            Op::Identity
        } else {
            Op::Cast(Cast { to })
        };
        self.emit(cx, op, vec![x])
    }

    pub(super) fn gather(
        &mut self,
        cx: &Ctx,
        a: &Attrs,
        elements: bool,
    ) -> Result<(), ImportError> {
        let data = self.data(cx, 0)?;
        let idx = self.data(cx, 1)?;
        let r = self.shape(data).len();
        let axis = axis_in(a, "axis", a.int("axis", 0)?, r, false)?;
        let op = if elements {
            Op::GatherElements(GatherElements { axis })
        } else {
            Op::Gather(Gather { axis })
        };
        self.emit(cx, op, vec![data, idx])
    }

    pub(super) fn gather_nd(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let batch_dims = a.int("batch_dims", 0)?;
        if batch_dims != 0 {
            return Err(a.err(
                "batch_dims",
                format!("{batch_dims}: weft gathers with 0 only"),
            ));
        }
        let inputs = vec![self.data(cx, 0)?, self.data(cx, 1)?];
        self.emit(cx, Op::GatherNd, inputs)
    }

    pub(super) fn softmax(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let r = self.shape(x).len();
        let axis = axis_in(a, "axis", a.int("axis", -1)?, r, false)?;
        self.emit(cx, Op::Softmax(Softmax { axis }), vec![x])
    }

    pub(super) fn layer_norm(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        self.refuse_used_outputs(cx, 1, "a statistic of training")?;
        let x = self.data(cx, 0)?;
        let r = self.shape(x).len();
        let axis = axis_in(a, "axis", a.int("axis", -1)?, r, false)?;
        let epsilon = a.float("epsilon", 1e-5)?;
        let mut inputs = vec![x, self.data(cx, 1)?];
        inputs.extend(self.opt_data(cx, 2)?);
        self.emit(cx, Op::LayerNorm(LayerNorm { axis, epsilon }), inputs)
    }

    pub(super) fn reduce(
        &mut self,
        cx: &Ctx,
        a: &Attrs,
        kind: ReduceKind,
    ) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let r = self.shape(x).len();
        // Axes are an input from opset 13 for ReduceSum and 18 for the others.
        let axes = match a.ints("axes")? {
            Some(v) => Some(v.to_vec()),
            None => self.int_input(cx, 1, "axes")?,
        };
        let keep_dims = a.flag("keepdims", true)?;
        let mut axes: Vec<usize> = match axes {
            Some(v) if !v.is_empty() => v
                .iter()
                .map(|&v| axis_in(a, "axes", v, r, false))
                .collect::<Result<_, _>>()?,
            _ if a.flag("noop_with_empty_axes", false)? => {
                return self.emit(cx, Op::Identity, vec![x]);
            }
            _ => (0..r).collect(),
        };
        axes.sort_unstable();
        axes.dedup();
        self.emit(
            cx,
            Op::Reduce(Reduce {
                kind,
                axes,
                keep_dims,
            }),
            vec![x],
        )
    }

    /// Pow; an integer constant exponent is taken as a float of the base's type.
    pub(super) fn pow(&mut self, cx: &Ctx) -> Result<(), ImportError> {
        let base = self.data(cx, 0)?;
        let exponent = match cx.input(1).and_then(|n| self.consts.get(n)) {
            Some(c) if c.ints().is_some() => {
                let (values, _) = c.to_float();
                let dtype = self.graph.tensor(base).dtype;
                let name = format!("{}::exponent", cx.name);
                self.graph.add_tensor(weft_graph::Tensor {
                    name,
                    shape: c.dims.clone(),
                    dtype,
                    layout: weft_graph::Layout::RowMajor,
                    data: Some(std::sync::Arc::new(values)),
                })
            }
            _ => self.data(cx, 1)?,
        };
        self.emit(
            cx,
            Op::Binary(weft_graph::op::Binary::Pow),
            vec![base, exponent],
        )
    }
}

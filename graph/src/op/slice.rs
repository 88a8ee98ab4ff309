//! A strided window: along dimension `d`, input elements `starts[d] + i·steps[d]` for `i`
//! below `sizes[d]` (the output's shape; ONNX's Slice resolved, and Split's parts).

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A resolved Slice: one start, step and size per dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    pub starts: Vec<usize>,
    pub steps: Vec<i64>,
    pub sizes: Vec<usize>,
}

impl OpDef for Slice {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::Carry;
        let shape = &x.inputs[0].shape;
        let mut output = Vec::new();
        for d in &x.dims[0] {
            let a = d.axis;
            let whole = self.starts[a] == 0 && self.steps[a] == 1 && self.sizes[a] == shape[a];
            // A window of positions below the symbol's least value is there at every n.
            let last = self.starts[a] as i64 + (self.sizes[a] as i64 - 1) * self.steps[a];
            let below_min = d.inner == 1
                && shape[a] == x.max
                && (self.starts[a] as i64).max(last) < x.min as i64;
            if whole {
                output.push(*d);
            } else if !below_min {
                return Carry::Refused(format!(
                    "it slices axis {a} (the symbolic dimension) beyond its first {} rows, which every length has",
                    x.min
                ));
            }
        }
        Carry::Rows(output)
    }

    fn name(&self) -> &'static str {
        "Slice"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(starts={:?}, steps={:?}, sizes={:?})",
            self.starts, self.steps, self.sizes
        )
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let Slice {
            starts,
            steps,
            sizes,
        } = self;
        arity(inputs, 1, 1)?;
        let s = &inputs[0].shape;
        if starts.len() != s.len() || steps.len() != s.len() || sizes.len() != s.len() {
            return Err(format!(
                "starts {starts:?}, steps {steps:?} and sizes {sizes:?} must each give the {} dimensions of `{}` {s:?}",
                s.len(),
                inputs[0].name
            ));
        }
        for d in 0..s.len() {
            if sizes[d] == 0 {
                continue;
            }
            let last = starts[d] as i64 + (sizes[d] as i64 - 1) * steps[d];
            if steps[d] == 0 || starts[d] >= s[d] || last < 0 || last >= s[d] as i64 {
                return Err(format!(
                    "dimension {d}: {} elements from {} by {} leave [0, {})",
                    sizes[d], starts[d], steps[d], s[d]
                ));
            }
        }
        Ok((sizes.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let sizes = &self.sizes;
        ArrayD::from_shape_fn(IxDyn(sizes), |ix| {
            let at: Vec<usize> = (0..sizes.len())
                .map(|d| (self.starts[d] as i64 + ix[d] as i64 * self.steps[d]) as usize)
                .collect();
            x[0][IxDyn(&at)]
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let at: Vec<Expr> = idx
            .iter()
            .enumerate()
            .map(|(d, i)| match (self.starts[d] as i64, self.steps[d]) {
                (0, 1) => i.clone(),
                (s, 1) => i.clone() + s,
                (s, k) => i.clone() * k + s,
            })
            .collect();
        Some(x.input(0, &at))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        let dims = node.inputs[0].shape.clone();
        let starts: Vec<i64> = self.starts.iter().map(|&s| s as i64).collect();
        // One past the last element read; below 0 for a negative step that reads
        // element 0 (ONNX counts a negative end from the back, so that is written as
        // −n − 1, which clamps to "before 0").
        let ends: Vec<i64> = (0..dims.len())
            .map(|d| {
                let end = starts[d] + self.sizes[d] as i64 * self.steps[d];
                if end < 0 { -(dims[d] as i64) - 1 } else { end }
            })
            .collect();
        let axes: Vec<i64> = (0..dims.len() as i64).collect();
        node.const_ints("starts", starts);
        node.const_ints("ends", ends);
        node.const_ints("axes", axes);
        node.const_ints("steps", self.steps.clone());
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Slice, and Split as one Slice per output.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Slice", &[1, 10, 11, 13], import_slice),
    OnnxOp::new("Split", &[2, 11, 13, 18], import_split),
];

/// Slice: `starts`, `ends` and `axes` attributes before opset 10 (no steps), inputs
/// from.
fn import_slice(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let starts = n.ints_moved("starts", 1, 10)?.unwrap_or_default();
    let ends = n.ints_moved("ends", 2, 10)?.unwrap_or_default();
    let axes = n.ints_moved("axes", 3, 10)?;
    let steps = n.ints_moved("steps", 4, 10)?;
    let (starts, steps, sizes) =
        resolve_slice(&dims, &starts, &ends, axes.as_deref(), steps.as_deref())
            .map_err(|w| n.err(w))?;
    // An empty slice (Phi-3's rotary split at a full head: `x[..., d:]`) is emitted: the
    // import makes a node of no elements a constant (its value is its shape), which a
    // Concat then leaves out.
    n.emit(
        Op::Slice(Slice {
            starts,
            steps,
            sizes,
        }),
        vec![x],
    )
}

/// Split: one Slice node per output; `split` an attribute before opset 13, an input
/// from.
fn import_split(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let axis = n.int("axis", 0)?;
    let axis = n.axis("axis", axis, dims.len(), false)?;
    let outs = n.output_count();
    let size = dims[axis];
    let parts: Vec<usize> = match n.ints_moved("split", 1, 13)? {
        Some(p) => p.iter().map(|&v| v.max(0) as usize).collect(),
        None => {
            let k = if n.has("num_outputs") {
                n.int("num_outputs", 1)?
            } else {
                outs as i64
            };
            if k < 1 {
                return Err(n.attr_err("num_outputs", format!("{k} is not a positive count")));
            }
            // Equal parts, the last smaller where they do not divide (opset 18).
            let k = k as usize;
            let each = size.div_ceil(k);
            (0..k)
                .map(|i| each.min(size.saturating_sub(i * each)))
                .collect()
        }
    };
    if parts.iter().sum::<usize>() != size || parts.len() != outs || parts.contains(&0) {
        return Err(n.err(format!(
            "parts {parts:?} for {outs} outputs do not split the {size} elements of axis {axis}"
        )));
    }
    let mut start = 0;
    for (k, part) in parts.iter().enumerate() {
        let mut starts = vec![0; dims.len()];
        starts[axis] = start;
        let mut sizes = dims.clone();
        sizes[axis] = *part;
        start += part;
        let op = Op::Slice(Slice {
            starts,
            steps: vec![1; dims.len()],
            sizes,
        });
        n.emit_output(k, op, vec![x])?;
    }
    Ok(())
}

/// A slice per dimension: where it starts, its step, how many elements it keeps.
pub type Resolved = (Vec<usize>, Vec<i64>, Vec<usize>);

/// ONNX Slice's `starts`, `ends`, `axes` (all where `None`) and `steps` (1s where
/// `None`) on a tensor of `dims`, resolved per dimension to where it starts, its step
/// and how many elements it keeps (negative bounds counted from the end, then clamped).
pub fn resolve_slice(
    dims: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Resolved, String> {
    let rank = dims.len() as i64;
    let all: Vec<i64> = (0..rank).collect();
    let axes = axes.unwrap_or(&all[..starts.len().min(all.len())]);
    let ones = vec![1; starts.len()];
    let steps = steps.unwrap_or(&ones);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(format!(
            "starts {starts:?}, ends {ends:?}, axes {axes:?} and steps {steps:?} differ in length"
        ));
    }
    let mut out_start: Vec<usize> = vec![0; dims.len()];
    let mut out_step: Vec<i64> = vec![1; dims.len()];
    let mut out_size: Vec<usize> = dims.to_vec();
    let mut seen = vec![false; dims.len()];
    for k in 0..starts.len() {
        let a = if axes[k] < 0 { axes[k] + rank } else { axes[k] };
        if a < 0 || a >= rank || std::mem::replace(&mut seen[a as usize], true) {
            return Err(format!(
                "axes {axes:?}: {} is out of range or repeated",
                axes[k]
            ));
        }
        let a = a as usize;
        let n = dims[a] as i64;
        let step = steps[k];
        if step == 0 {
            return Err(format!("steps {steps:?} has a 0"));
        }
        let from_end = |v: i64| if v < 0 { v.saturating_add(n) } else { v };
        let (s, e) = (from_end(starts[k]), from_end(ends[k]));
        let (s, size) = if step > 0 {
            let (s, e) = (s.clamp(0, n), e.clamp(0, n));
            (s, if e > s { (e - s + step - 1) / step } else { 0 })
        } else {
            let (s, e) = (s.clamp(0, n - 1), e.clamp(-1, n - 1));
            (
                s,
                if s > e {
                    (s - e + (-step) - 1) / (-step)
                } else {
                    0
                },
            )
        };
        out_start[a] = s.max(0) as usize;
        out_step[a] = step;
        out_size[a] = size as usize;
    }
    Ok((out_start, out_step, out_size))
}

#[cfg(test)]
mod tests {
    use super::resolve_slice;

    #[test]
    fn slices_resolve_as_onnx_says() {
        // x[1:-1], x[::-2] and x[-100:i64::MAX] on dims [5, 6, 7].
        let (s, k, n) = resolve_slice(
            &[5, 6, 7],
            &[1, -1, -100],
            &[-1, i64::MIN, i64::MAX],
            Some(&[0, 1, 2]),
            Some(&[1, -2, 1]),
        )
        .unwrap();
        assert_eq!((s, k, n), (vec![1, 5, 0], vec![1, -2, 1], vec![3, 3, 7]));
        assert!(resolve_slice(&[4], &[0], &[4], None, Some(&[0])).is_err());
    }
}

//! Precision and layout assignment: which element type and memory order each tensor is
//! stored in on the device (issue 25, item 3).
//!
//! After this pass a tensor's `dtype` is its *storage* type and its `layout` the order of
//! its elements in memory; the shape stays the logical (ONNX) one. Arithmetic is not
//! changed by it: the model compiler computes every value in f32 and accumulates every
//! sum in f32 (convolutions, products, pooling), reading an f16 tensor widens it and
//! writing one rounds once.
//!
//! The rules, for [`Precision::F16`]:
//!
//! - **Activations** (computed tensors that are neither graph inputs nor outputs) are
//!   stored in f16; those of rank 4 channels last (NHWC in memory). Every 4-D activation
//!   gets the same layout (in a graph with a convolution), not only those next to one: a pool, a residual Add
//!   or a Concat between two convolutions then reads and writes NHWC too, and no kernel
//!   transposes.
//! - **Channels-last views** stay row-major: a 4-D tensor that is an NCHW tensor
//!   transposed to `[n, h, w, c]` (`Transpose` with `perm = [0, 2, 3, 1]`, as ConvNeXt's
//!   exporters write a LayerNorm over channels and its pointwise `Linear`s), and what
//!   elementwise ops, a LayerNorm over its last axis and a MatMul make of such tensors
//!   alone. Row-major `[n, h, w, c]` is the bytes of its NHWC source: the transpose is a
//!   copy (fused into its producer's stores), the LayerNorm's rows and the MatMul's rows
//!   are contiguous, and the transpose back to NCHW stored NHWC is a copy again. Laid
//!   out NHWC like every other 4-D tensor, each of those reads and writes would stride
//!   across memory.
//! - **Convolution filters** (4-D weights read only as filters) are stored in f16,
//!   channels last (OHWI: the reduction index `(r, s, c)` of the implicit GEMM walks
//!   memory in order). The graph keeps their data in f32 and logical order: the upload
//!   converts and permutes.
//! - **Product weights** (2-D weights read only as the B operand of a Gemm or MatMul: a
//!   classifier) are stored in f16, so that the product runs on the fp16 template.
//! - **Reductions' results** (a `ReduceSum`, `ReduceMean`, `ReduceMax` or `ReduceMin`
//!   node's output) stay f32: exporters write RMS and layer norms, mean pooling and
//!   attention's statistics as these, and a mean of squares overflows f16 once the
//!   activations pass 256 (one value per row: the f32 costs nothing measurable).
//! - **Everything else** stays as it was: biases, batch-norm parameters and other
//!   weights in f32 (they are added in f32), and the graph's inputs and outputs f32
//!   row-major, so that the model takes and gives what the user has. The boundary needs
//!   no conversion op: the first kernel reads the f32 input and the last writes the f32
//!   output, as every kernel converts where it loads and stores.
//!
//! [`Precision::F32ChannelsLast`] applies the same layout rules in f32 (a step towards
//! f16 and a check of the layout machinery on its own); [`Precision::F32`] changes
//! nothing.

use std::collections::HashSet;

use weft_ir::dtype::DType;

use super::PassContext;
use crate::graph::{Graph, Tensor, TensorId};
use crate::op::Op;
use crate::tensor::Layout;

/// How a model's activations are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// f32, row-major: the graph as built.
    #[default]
    F32,
    /// f32, 4-D activations and filters channels last.
    F32ChannelsLast,
    /// f16 activations and filters, channels last; f32 accumulation.
    F16,
}

impl Precision {
    /// The storage type of activations.
    pub fn dtype(self) -> DType {
        match self {
            Precision::F32 | Precision::F32ChannelsLast => DType::F32,
            Precision::F16 => DType::F16,
        }
    }

    /// Whether 4-D activations and filters are stored channels last.
    pub fn channels_last(self) -> bool {
        !matches!(self, Precision::F32)
    }
}

/// Assigns storage types and layouts to the tensors of `g` by the rules of the module,
/// for the context's precision. Returns how many tensors changed.
pub fn assign_precision(g: &mut Graph, cx: &PassContext) -> usize {
    let p = cx.precision;
    if p == Precision::F32 {
        return 0;
    }
    let boundary = boundary(g);
    let reductions = reduction_results(g);
    let consumers = g.consumers();
    // Tensors that nodes of a kind read as their second input and nothing else reads.
    let read_only_second_by = |kind: fn(&Op) -> bool| -> HashSet<TensorId> {
        g.nodes
            .iter()
            .filter(|n| kind(&n.op))
            .map(|n| n.inputs[1])
            .filter(|&w| {
                consumers.get(&w).is_some_and(|readers| {
                    readers.iter().all(|r| {
                        let n = &g.nodes[r.0];
                        kind(&n.op) && n.inputs.iter().enumerate().all(|(k, &i)| i != w || k == 1)
                    })
                })
            })
            .collect()
    };
    // Weights read as a convolution's filter and by nothing else.
    let filters = read_only_second_by(|op| matches!(op, Op::Conv(_)));
    // Weights read as a product's B operand and by nothing else.
    let product_weights = read_only_second_by(|op| matches!(op, Op::Gemm(_) | Op::MatMul));
    // Channels last is for convolutions; a graph without one (a transformer, whose 4-D
    // tensors are [batch, heads, rows, columns]) keeps its tensors row-major.
    let has_conv = g.nodes.iter().any(|n| matches!(n.op, Op::Conv(_)));
    let views = channels_last_views(g);
    let mut changed = 0;
    for (i, t) in g.tensors.iter_mut().enumerate() {
        let id = TensorId(i);
        let activation = is_activation(t, id, &boundary) && !reductions.contains(&id);
        let filter = filters.contains(&id) && t.shape.len() == 4;
        let product_weight =
            p == Precision::F16 && product_weights.contains(&id) && t.shape.len() == 2;
        if !(activation || filter || product_weight) || !t.dtype.is_float() {
            continue;
        }
        let before = (t.dtype, t.layout);
        t.dtype = p.dtype();
        if t.shape.len() == 4 && p.channels_last() && has_conv && !views.contains(&id) {
            t.layout = Layout::ChannelsLast;
        }
        if (t.dtype, t.layout) != before {
            changed += 1;
        }
    }
    changed
}

/// The 4-D tensors of `g` whose last axis is the channels of an NCHW tensor they were
/// transposed from (see the module's rules): a `Transpose` by `[0, 2, 3, 1]`, and the
/// outputs of elementwise ops, LayerNorms over the last axis and MatMuls whose every
/// computed 4-D input is one. Nodes are in topological order, so one walk finds them all.
fn channels_last_views(g: &Graph) -> HashSet<TensorId> {
    let mut views = HashSet::new();
    for n in &g.nodes {
        if g.tensor(n.output).shape.len() != 4 {
            continue;
        }
        let transposed = matches!(&n.op, Op::Transpose(t) if t.perm == [0, 2, 3, 1]);
        // Ops that keep the last axis the channels of their 4-D inputs.
        let keeps_axes = matches!(&n.op, Op::LayerNorm(ln) if ln.axis == 3)
            || matches!(
                &n.op,
                Op::Unary(_) | Op::Binary(_) | Op::Clip(_) | Op::MatMul
            );
        let computed: Vec<TensorId> = n
            .inputs
            .iter()
            .copied()
            .filter(|&i| !g.tensor(i).is_constant() && g.tensor(i).shape.len() == 4)
            .collect();
        let of_views =
            keeps_axes && !computed.is_empty() && computed.iter().all(|i| views.contains(i));
        if transposed || of_views {
            views.insert(n.output);
        }
    }
    views
}

/// The graph's inputs and outputs: stored as the user gives and takes them.
fn boundary(g: &Graph) -> HashSet<TensorId> {
    g.inputs.iter().chain(&g.outputs).copied().collect()
}

/// The results of the graph's `Reduce` nodes: stored in f32 whatever the precision.
fn reduction_results(g: &Graph) -> HashSet<TensorId> {
    g.nodes
        .iter()
        .filter(|n| matches!(n.op, Op::Reduce(_)))
        .map(|n| n.output)
        .collect()
}

/// A computed tensor inside the graph: stored in the precision's type.
fn is_activation(t: &Tensor, id: TensorId, boundary: &HashSet<TensorId>) -> bool {
    !t.is_constant() && !boundary.contains(&id)
}

/// The type [`assign_precision`] stores tensor `t` of `g` in under `p`, for a tensor no
/// convolution or product reads as its weight (whose rules see its readers): what a pass
/// that runs before it (and needs the storage type, as the attention pass does) asks.
pub(crate) fn stored_dtype(g: &Graph, t: TensorId, p: Precision) -> DType {
    let tensor = g.tensor(t);
    if p != Precision::F32
        && tensor.dtype.is_float()
        && is_activation(tensor, t, &boundary(g))
        && !reduction_results(g).contains(&t)
    {
        p.dtype()
    } else {
        tensor.dtype
    }
}

/// The memory order of a tensor of rank `rank` in `layout`: `order[d]` is the logical
/// dimension stored `d`-th (channels last: `[0, 2, 3, 1]`, NCHW kept as NHWC).
pub fn memory_order(layout: Layout, rank: usize) -> Vec<usize> {
    let permuted = match layout {
        Layout::RowMajor => None,
        Layout::ChannelsLast => (rank == 4).then(|| vec![0, 2, 3, 1]),
        Layout::FilterCrsk => (rank == 4).then(|| vec![1, 2, 3, 0]),
        Layout::FilterRsck => (rank == 4).then(|| vec![2, 3, 1, 0]),
        Layout::Transposed => (rank == 2).then(|| vec![1, 0]),
    };
    permuted.unwrap_or_else(|| (0..rank).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::{Binary, Conv};
    use crate::passes::testing::max_difference;
    use ndarray::{ArrayD, IxDyn};

    fn net() -> Graph {
        let mut b = GraphBuilder::new("p");
        let x = b.input("x", &[1, 3, 8, 8], DType::F32);
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[4, 3, 3, 3]), 0.1));
        let bias = b.weight("bias", ArrayD::from_elem(IxDyn(&[4]), 0.5));
        let y = b.conv("conv", x, w, Some(bias), Conv::new(1, 1)).unwrap();
        let y = b.relu("relu", y).unwrap();
        let wd = b.weight("wd", ArrayD::from_elem(IxDyn(&[4, 1, 3, 3]), 0.2));
        let z = b
            .conv("dw", y, wd, None, Conv::new(1, 1).grouped(4))
            .unwrap();
        let z = b.add("add", z, y).unwrap();
        let f = b.flatten("flat", z, 1).unwrap();
        let wf = b.weight("fc", ArrayD::from_elem(IxDyn(&[256, 2]), 0.01));
        let out = b.node("mm", Op::MatMul, &[f, wf]).unwrap();
        b.output(out);
        b.finish().unwrap()
    }

    fn find(g: &Graph, name: &str) -> (DType, Layout) {
        let t = g.tensors.iter().find(|t| t.name == name).unwrap();
        (t.dtype, t.layout)
    }

    #[test]
    fn f16_stores_activations_and_filters_in_half_channels_last() {
        let g0 = net();
        let mut g = g0.clone();
        let changed = assign_precision(
            &mut g,
            &PassContext::default().with_precision(Precision::F16),
        );
        assert!(changed > 0);
        // The boundary stays f32 row-major.
        assert_eq!(find(&g, "x"), (DType::F32, Layout::RowMajor));
        let out = g.tensor(g.outputs[0]);
        assert_eq!((out.dtype, out.layout), (DType::F32, Layout::RowMajor));
        // Filters f16 OHWI, the bias and the classifier's weight as they were.
        assert_eq!(find(&g, "w"), (DType::F16, Layout::ChannelsLast));
        assert_eq!(find(&g, "wd"), (DType::F16, Layout::ChannelsLast));
        assert_eq!(find(&g, "bias"), (DType::F32, Layout::RowMajor));
        // The MatMul's weight in f16, for the fp16 template.
        assert_eq!(find(&g, "fc"), (DType::F16, Layout::RowMajor));
        // 4-D activations NHWC, the flattened one f16 row-major.
        let conv_out = g.tensor(g.nodes[0].output);
        assert_eq!(
            (conv_out.dtype, conv_out.layout),
            (DType::F16, Layout::ChannelsLast)
        );
        let flat = g.tensor(g.nodes[4].output);
        assert_eq!((flat.dtype, flat.layout), (DType::F16, Layout::RowMajor));
        // Storage only: the graph computes what it computed.
        assert_eq!(max_difference(&g0, &g), 0.0);
        // Idempotent.
        assert_eq!(
            assign_precision(
                &mut g,
                &PassContext::default().with_precision(Precision::F16)
            ),
            0
        );
    }

    /// ConvNeXt's block as exporters write it: a depthwise convolution, a transpose to
    /// `[n, h, w, c]`, a LayerNorm over channels, two pointwise MatMuls with a GELU, a
    /// layer scale, the transpose back and the residual add.
    fn convnext_block() -> Graph {
        use crate::op::{LayerNorm, Transpose, Unary};
        let mut b = GraphBuilder::new("cnx");
        let c = 4;
        let w0 = b.weight("w0", ArrayD::from_elem(IxDyn(&[c, 3, 1, 1]), 0.2));
        let x = b.input("x", &[1, 3, 5, 5], DType::F32);
        let x = b.conv("stem", x, w0, None, Conv::new(1, 0)).unwrap();
        let wd = b.weight("wd", ArrayD::from_elem(IxDyn(&[c, 1, 7, 7]), 0.1));
        let d = b
            .conv("dw", x, wd, None, Conv::new(1, 3).grouped(c))
            .unwrap();
        let to_last = Op::Transpose(Transpose {
            perm: vec![0, 2, 3, 1],
        });
        let t = b.node("to_last", to_last, &[d]).unwrap();
        let scale = b.weight("ln.s", ArrayD::from_elem(IxDyn(&[c]), 1.5));
        let ln = LayerNorm {
            axis: 3,
            epsilon: 1e-6,
            rms: false,
        };
        let n = b.node("ln", Op::LayerNorm(ln), &[t, scale]).unwrap();
        let w1 = b.weight("w1", ArrayD::from_elem(IxDyn(&[c, 4 * c]), 0.1));
        let h = b.node("fc1", Op::MatMul, &[n, w1]).unwrap();
        let h = b.unary("gelu", Unary::Gelu { tanh: false }, h).unwrap();
        let w2 = b.weight("w2", ArrayD::from_elem(IxDyn(&[4 * c, c]), 0.1));
        let h = b.node("fc2", Op::MatMul, &[h, w2]).unwrap();
        let gamma = b.weight("gamma", ArrayD::from_elem(IxDyn(&[c]), 0.5));
        let h = b.binary("scale", Binary::Mul, h, gamma).unwrap();
        let to_first = Op::Transpose(Transpose {
            perm: vec![0, 3, 1, 2],
        });
        let h = b.node("to_first", to_first, &[h]).unwrap();
        let y = b.add("residual", x, h).unwrap();
        let y = b.relu("relu", y).unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    #[test]
    fn channels_last_views_stay_row_major() {
        let g0 = convnext_block();
        let mut g = g0.clone();
        assign_precision(
            &mut g,
            &PassContext::default().with_precision(Precision::F16),
        );
        let layout = |node: &str| {
            let n = g.nodes.iter().find(|n| n.name == node).unwrap();
            g.tensor(n.output).layout
        };
        // The NCHW tensors NHWC; their [n, h, w, c] transposes and what is made of
        // them alone row-major (the same bytes as their NHWC sources).
        for node in ["stem", "dw", "to_first", "residual"] {
            assert_eq!(layout(node), Layout::ChannelsLast, "{node}");
        }
        for node in ["to_last", "ln", "fc1", "gelu", "fc2", "scale"] {
            assert_eq!(layout(node), Layout::RowMajor, "{node}");
        }
        assert_eq!(max_difference(&g0, &g), 0.0);
        // A residual add of an NCHW tensor and a view is no view.
        assert!(!channels_last_views(&g).contains(&g.outputs[0]));
    }

    #[test]
    fn f32_changes_nothing_and_channels_last_only_layouts() {
        let mut g = net();
        assert_eq!(
            assign_precision(
                &mut g,
                &PassContext::default().with_precision(Precision::F32)
            ),
            0
        );
        assert!(g.tensors.iter().all(|t| t.layout == Layout::RowMajor));
        assign_precision(
            &mut g,
            &PassContext::default().with_precision(Precision::F32ChannelsLast),
        );
        assert!(g.tensors.iter().all(|t| t.dtype == DType::F32));
        assert_eq!(find(&g, "w"), (DType::F32, Layout::ChannelsLast));
        assert_eq!(memory_order(Layout::ChannelsLast, 4), [0, 2, 3, 1]);
        assert_eq!(memory_order(Layout::ChannelsLast, 2), [0, 1]);
    }
}

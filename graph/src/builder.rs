//! Building graphs in Rust: inputs, weights, and one method per op, each inferring its
//! output's shape and refusing inputs that do not fit (with the node named).
//!
//! ```
//! use weft_graph::{GraphBuilder, op::Conv};
//! use weft_ir::dtype::DType;
//!
//! let mut b = GraphBuilder::new("tiny");
//! let x = b.input("x", &[1, 3, 8, 8], DType::F32);
//! let w = b.weight("w", ndarray::ArrayD::zeros(vec![4, 3, 3, 3]));
//! let y = b.conv("conv", x, w, None, Conv::new(1, 1)).unwrap();
//! let y = b.relu("relu", y).unwrap();
//! b.output(y);
//! let g = b.finish().unwrap();
//! assert_eq!(g.tensor(g.outputs[0]).shape, [1, 4, 8, 8]);
//! ```

use std::sync::Arc;

use ndarray::ArrayD;
use weft_ir::dtype::DType;

use crate::graph::{Graph, GraphError, Layout, Tensor, TensorId};
use crate::op::{
    BatchNorm, Binary, Clip, Concat, Conv, Flatten, Gemm, GlobalPool, Op, Pool, PoolKind, Unary,
};

/// A graph under construction.
#[derive(Debug)]
pub struct GraphBuilder {
    graph: Graph,
}

impl GraphBuilder {
    /// An empty graph named `name`.
    pub fn new(name: impl Into<String>) -> GraphBuilder {
        GraphBuilder {
            graph: Graph::new(name),
        }
    }

    /// A model input.
    pub fn input(&mut self, name: impl Into<String>, shape: &[usize], dtype: DType) -> TensorId {
        let id = self.graph.add_tensor(Tensor {
            name: name.into(),
            shape: shape.to_vec(),
            dtype,
            layout: Layout::RowMajor,
            data: None,
        });
        self.graph.inputs.push(id);
        id
    }

    /// A weight (or any constant), held in f32.
    pub fn weight(&mut self, name: impl Into<String>, data: ArrayD<f32>) -> TensorId {
        self.graph.add_tensor(Tensor {
            name: name.into(),
            shape: data.shape().to_vec(),
            dtype: DType::F32,
            layout: Layout::RowMajor,
            data: Some(Arc::new(data)),
        })
    }

    /// A node named `name` applying `op` to `inputs`; its output tensor takes the same
    /// name.
    pub fn node(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: &[TensorId],
    ) -> Result<TensorId, GraphError> {
        let name = name.into();
        self.graph.add_node(name.clone(), op, inputs.to_vec(), name)
    }

    /// `conv(x, w) + bias`.
    pub fn conv(
        &mut self,
        name: impl Into<String>,
        x: TensorId,
        w: TensorId,
        bias: Option<TensorId>,
        conv: Conv,
    ) -> Result<TensorId, GraphError> {
        let mut inputs = vec![x, w];
        inputs.extend(bias);
        self.node(name, Op::Conv(conv), &inputs)
    }

    /// Inference batch normalization of `x` with per-channel `scale`, `bias`, `mean` and
    /// `var`.
    #[allow(clippy::too_many_arguments)] // the op's five inputs, as ONNX has them
    pub fn batch_norm(
        &mut self,
        name: impl Into<String>,
        x: TensorId,
        scale: TensorId,
        bias: TensorId,
        mean: TensorId,
        var: TensorId,
        epsilon: f64,
    ) -> Result<TensorId, GraphError> {
        self.node(
            name,
            Op::BatchNorm(BatchNorm { epsilon }),
            &[x, scale, bias, mean, var],
        )
    }

    /// An elementwise function of `x`.
    pub fn unary(
        &mut self,
        name: impl Into<String>,
        f: Unary,
        x: TensorId,
    ) -> Result<TensorId, GraphError> {
        self.node(name, Op::Unary(f), &[x])
    }

    /// `max(x, 0)`.
    pub fn relu(&mut self, name: impl Into<String>, x: TensorId) -> Result<TensorId, GraphError> {
        self.unary(name, Unary::Relu, x)
    }

    /// `min(max(x, min), max)`.
    pub fn clip(
        &mut self,
        name: impl Into<String>,
        x: TensorId,
        min: f64,
        max: f64,
    ) -> Result<TensorId, GraphError> {
        self.node(name, Op::Clip(Clip { min, max }), &[x])
    }

    /// An elementwise function of `a` and `b`, broadcast.
    pub fn binary(
        &mut self,
        name: impl Into<String>,
        f: Binary,
        a: TensorId,
        b: TensorId,
    ) -> Result<TensorId, GraphError> {
        self.node(name, Op::Binary(f), &[a, b])
    }

    /// `a + b`, broadcast.
    pub fn add(
        &mut self,
        name: impl Into<String>,
        a: TensorId,
        b: TensorId,
    ) -> Result<TensorId, GraphError> {
        self.binary(name, Binary::Add, a, b)
    }

    /// Max or average pooling with a square `kernel`, `stride` and symmetric `pad`.
    pub fn pool(
        &mut self,
        name: impl Into<String>,
        kind: PoolKind,
        x: TensorId,
        kernel: usize,
        stride: usize,
        pad: usize,
    ) -> Result<TensorId, GraphError> {
        let pool = Pool {
            kind,
            kernel: [kernel; 2],
            strides: [stride; 2],
            pads: [pad; 4],
            ceil_mode: false,
            count_include_pad: false,
        };
        self.node(name, Op::Pool(pool), &[x])
    }

    /// Pooling over all of H and W.
    pub fn global_pool(
        &mut self,
        name: impl Into<String>,
        kind: PoolKind,
        x: TensorId,
    ) -> Result<TensorId, GraphError> {
        self.node(name, Op::GlobalPool(GlobalPool { kind }), &[x])
    }

    /// `inputs` joined along `axis`.
    pub fn concat(
        &mut self,
        name: impl Into<String>,
        inputs: &[TensorId],
        axis: usize,
    ) -> Result<TensorId, GraphError> {
        self.node(name, Op::Concat(Concat { axis }), inputs)
    }

    /// `x` as a matrix: dimensions before `axis` become rows.
    pub fn flatten(
        &mut self,
        name: impl Into<String>,
        x: TensorId,
        axis: usize,
    ) -> Result<TensorId, GraphError> {
        self.node(name, Op::Flatten(Flatten { axis }), &[x])
    }

    /// A fully connected layer as ONNX exporters write it: `x · wᵀ + bias` (Gemm with
    /// `transB`).
    pub fn linear(
        &mut self,
        name: impl Into<String>,
        x: TensorId,
        w: TensorId,
        bias: TensorId,
    ) -> Result<TensorId, GraphError> {
        let gemm = Gemm {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        };
        self.node(name, Op::Gemm(gemm), &[x, w, bias])
    }

    /// Renames the tensor `t` (a node's output takes the node's name; a model's output
    /// often wants another, such as `logits`). [`finish`](Self::finish) refuses a name
    /// used twice.
    pub fn rename(&mut self, t: TensorId, name: impl Into<String>) {
        if let Some(tensor) = self.graph.tensors.get_mut(t.0) {
            tensor.name = name.into();
        }
    }

    /// Marks `t` as an output of the model.
    pub fn output(&mut self, t: TensorId) {
        self.graph.outputs.push(t);
    }

    /// The graph, checked ([`Graph::validate`]).
    pub fn finish(self) -> Result<Graph, GraphError> {
        self.graph.validate()?;
        Ok(self.graph)
    }

    /// The graph so far (to look at shapes while building).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
}

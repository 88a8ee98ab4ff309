//! One ONNX node → weft graph nodes: attributes read with their defaults, padding
//! resolved, shape inputs read as constants, variadic ops chained.

use ndarray::{ArrayD, IxDyn};
use weft_graph::TensorId;
use weft_graph::op::{
    BatchNorm, Binary, Clip, Concat, Conv, Flatten, Gemm, GlobalPool, Op, OpDef, Pool, PoolKind,
    ReduceKind, Reshape,
};
use weft_ir::dtype::DType;

use super::Importer;
use super::attrs::Attrs;
use super::elementwise::elementwise;
use super::geometry::{axis_in, pads, positive, resolve_reshape};
use super::tensor::{self, Const, ConstData};
use crate::error::ImportError;
use crate::proto::NodeProto;
use crate::versions::{self, Effective};

/// The node under import, for reading its inputs and naming it in errors.
pub(super) struct Ctx<'a> {
    pub(super) node: &'a NodeProto,
    /// The file's node name, or `{op_type}_{index}` where it has none.
    pub(super) name: String,
}

impl Ctx<'_> {
    pub(super) fn err(&self, what: impl Into<String>) -> ImportError {
        ImportError::Node {
            node: self.name.clone(),
            op: self.node.op_type.clone(),
            what: what.into(),
        }
    }

    /// Input `i`'s name, `None` where it is absent or empty (an omitted optional input).
    pub(super) fn input(&self, i: usize) -> Option<&str> {
        self.node
            .input
            .get(i)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The first output's name.
    pub(super) fn output(&self) -> Result<&str, ImportError> {
        self.node
            .output
            .first()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| self.err("has no output"))
    }
}

impl Importer<'_> {
    /// Adds what node `index` computes to the graph.
    pub(super) fn node(&mut self, node: &NodeProto, index: usize) -> Result<(), ImportError> {
        let name = if node.name.is_empty() {
            format!("{}_{index}", node.op_type)
        } else {
            node.name.clone()
        };
        if !(node.domain.is_empty() || node.domain == "ai.onnx") {
            return Err(ImportError::Domain {
                node: name,
                op: node.op_type.clone(),
                domain: node.domain.clone(),
            });
        }
        let opset = self.opset;
        let refuse = |why: Option<String>| ImportError::UnsupportedOp {
            op: node.op_type.clone(),
            node: name.clone(),
            opset,
            why,
        };
        match versions::effective(&node.op_type, self.opset) {
            Effective::Version(_) => {}
            Effective::NotYet { first } => {
                return Err(refuse(Some(format!(
                    "the default domain has it from opset {first}"
                ))));
            }
            Effective::Unknown => return Err(refuse(None)),
        }
        let cx = Ctx {
            node,
            name: name.clone(),
        };
        let a = Attrs::new(node, &cx.name);
        if self.fold(node, &a)? {
            return Ok(());
        }
        match node.op_type.as_str() {
            "Conv" => self.conv(&cx, &a),
            "BatchNormalization" => self.batch_norm(&cx, &a),
            "Clip" => self.clip(&cx, &a),
            "MaxPool" => self.pool(&cx, &a, PoolKind::Max),
            "AveragePool" => self.pool(&cx, &a, PoolKind::Average),
            "GlobalMaxPool" => self.simple(
                &cx,
                Op::GlobalPool(GlobalPool {
                    kind: PoolKind::Max,
                }),
            ),
            "GlobalAveragePool" => self.simple(
                &cx,
                Op::GlobalPool(GlobalPool {
                    kind: PoolKind::Average,
                }),
            ),
            "Concat" => self.concat(&cx, &a),
            "Flatten" => self.flatten(&cx, &a),
            "Reshape" => self.reshape(&cx, &a),
            "Gemm" => self.gemm(&cx, &a),
            "MatMul" => self.matmul(&cx),
            "Identity" => self.simple(&cx, Op::Identity),
            "Dropout" => self.dropout(&cx),
            "Constant" => self.constant(&cx, &a),
            "Max" => self.variadic(&cx, Binary::Max),
            "Min" => self.variadic(&cx, Binary::Min),
            "Sum" => self.variadic(&cx, Binary::Add),
            "Pow" => self.pow(&cx),
            "Transpose" => self.transpose(&cx, &a),
            "Slice" => self.slice(&cx),
            "Split" => self.split(&cx, &a),
            "Squeeze" => self.squeeze(&cx, false),
            "Unsqueeze" => self.squeeze(&cx, true),
            "Expand" => self.expand(&cx),
            "Cast" => self.cast(&cx, &a),
            "Gather" => self.gather(&cx, &a, false),
            "GatherElements" => self.gather(&cx, &a, true),
            "GatherND" => self.gather_nd(&cx, &a),
            "Where" => self.simple(&cx, Op::Where),
            "IsNaN" => self.simple(&cx, Op::IsNaN),
            "Softmax" => self.softmax(&cx, &a),
            "LayerNormalization" => self.layer_norm(&cx, &a),
            "ReduceMean" => self.reduce(&cx, &a, ReduceKind::Mean),
            "ReduceSum" => self.reduce(&cx, &a, ReduceKind::Sum),
            "ReduceMax" => self.reduce(&cx, &a, ReduceKind::Max),
            "ReduceMin" => self.reduce(&cx, &a, ReduceKind::Min),
            "Shape" | "Size" | "ConstantOfShape" | "Range" => Err(
                cx.err("its inputs must be constants (weft evaluates shape arithmetic at import)")
            ),
            op => match elementwise(op, &a)? {
                Some(op) => self.simple(&cx, op),
                // The version table lists an op this match does not: a weft bug, refused
                // rather than panicking on a user's file.
                None => Err(refuse(Some("not implemented".into()))),
            },
        }
    }

    /// Input `i` as a graph tensor (a constant becomes a weight).
    pub(super) fn data(&mut self, cx: &Ctx, i: usize) -> Result<TensorId, ImportError> {
        let name = cx
            .input(i)
            .ok_or_else(|| cx.err(format!("input {i} is missing")))?;
        // An integer constant becomes an i32 tensor whose values the graph keeps in f32:
        // exact to 2^24, far past any index or token id.
        if let Some(v) = self.consts.get(name).and_then(|c| c.ints())
            && let Some(big) = v.iter().find(|x| x.unsigned_abs() > 1 << 24)
        {
            return Err(cx.err(format!(
                "input {i} `{name}` holds the integer {big}, beyond what weft's integer tensors keep exactly (2^24)"
            )));
        }
        self.value(name).ok_or_else(|| ImportError::Undefined {
            node: cx.name.clone(),
            input: name.to_string(),
        })
    }

    /// Input `i` as a graph tensor, where given.
    pub(super) fn opt_data(&mut self, cx: &Ctx, i: usize) -> Result<Option<TensorId>, ImportError> {
        match cx.input(i) {
            None => Ok(None),
            Some(_) => self.data(cx, i).map(Some),
        }
    }

    /// Input `i` (a shape, a bound, a flag) as a constant, where given; a computed value
    /// there is refused, since weft's shapes are fixed at import.
    pub(super) fn konst(&self, cx: &Ctx, i: usize) -> Result<Option<&Const>, ImportError> {
        let Some(name) = cx.input(i) else {
            return Ok(None);
        };
        if let Some(c) = self.consts.get(name) {
            return Ok(Some(c));
        }
        if self.values.contains_key(name) {
            return Err(cx.err(format!(
                "input {i} `{name}` must be a constant (an initializer or a Constant node's output): weft fixes shapes and bounds at import"
            )));
        }
        Err(ImportError::Undefined {
            node: cx.name.clone(),
            input: name.to_string(),
        })
    }

    pub(super) fn shape(&self, id: TensorId) -> Vec<usize> {
        self.graph.tensor(id).shape.clone()
    }

    /// Adds a node computing the node's first output from `inputs`.
    pub(super) fn emit(
        &mut self,
        cx: &Ctx,
        op: Op,
        inputs: Vec<TensorId>,
    ) -> Result<(), ImportError> {
        let out = cx.output()?.to_string();
        let id = self
            .graph
            .add_node(cx.name.clone(), op, inputs, out.clone())?;
        self.values.insert(out, id);
        Ok(())
    }

    /// Refuses outputs from `from` on that something uses (weft's ops have one output).
    pub(super) fn refuse_used_outputs(
        &self,
        cx: &Ctx,
        from: usize,
        what: &str,
    ) -> Result<(), ImportError> {
        for (k, name) in cx.node.output.iter().enumerate().skip(from) {
            if !name.is_empty() && self.used.contains(name) {
                return Err(cx.err(format!(
                    "output {k} `{name}` ({what}) is used, and weft computes only output 0"
                )));
            }
        }
        Ok(())
    }

    /// An op applied to every input as data.
    fn simple(&mut self, cx: &Ctx, op: Op) -> Result<(), ImportError> {
        let inputs = (0..cx.node.input.len())
            .map(|i| self.data(cx, i))
            .collect::<Result<Vec<_>, _>>()?;
        self.emit(cx, op, inputs)
    }

    fn conv(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let w = self.data(cx, 1)?;
        let bias = self.opt_data(cx, 2)?;
        let (xs, ws) = (self.shape(x), self.shape(w));
        let kernel = match a.ints("kernel_shape")? {
            Some(k) => positive(a, "kernel_shape", k)?,
            None => {
                let k: Vec<i64> = ws.iter().skip(2).map(|&d| d as i64).collect();
                positive(a, "kernel_shape", &k)?
            }
        };
        if kernel.len() != 2 {
            return Err(a.err(
                "kernel_shape",
                format!(
                    "{kernel:?} is a {}-D kernel: weft convolves in 2-D only",
                    kernel.len()
                ),
            ));
        }
        if ws.len() == 4 && ws[2..] != kernel[..] {
            return Err(a.err(
                "kernel_shape",
                format!("{kernel:?} differs from the weights' {:?}", &ws[2..]),
            ));
        }
        if xs.len() != 4 {
            return Err(cx.err(format!(
                "input 0 has shape {xs:?}: weft convolves NCHW tensors (rank 4)"
            )));
        }
        let strides = a.pair("strides")?;
        let dilations = a.pair("dilations")?;
        let groups = a.int("group", 1)?;
        if !(1..=super::attrs::MAX_WINDOW).contains(&groups) {
            return Err(a.err("group", format!("{groups} is not a positive count")));
        }
        let k = [kernel[0], kernel[1]];
        let pads = pads(a, [xs[2], xs[3]], k, strides, dilations)?;
        let conv = Conv {
            strides,
            pads,
            dilations,
            groups: groups as usize,
        };
        let mut inputs = vec![x, w];
        inputs.extend(bias);
        self.emit(cx, Op::Conv(conv), inputs)
    }

    fn pool(&mut self, cx: &Ctx, a: &Attrs, kind: PoolKind) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let xs = self.shape(x);
        let kernel = a
            .ints("kernel_shape")?
            .ok_or_else(|| a.err("kernel_shape", "is required"))?;
        let kernel = positive(a, "kernel_shape", kernel)?;
        if kernel.len() != 2 {
            return Err(a.err(
                "kernel_shape",
                format!(
                    "{kernel:?} is a {}-D window: weft pools in 2-D only",
                    kernel.len()
                ),
            ));
        }
        if xs.len() != 4 {
            return Err(cx.err(format!(
                "input 0 has shape {xs:?}: weft pools NCHW tensors (rank 4)"
            )));
        }
        if let Some(d) = a.ints("dilations")?
            && d.iter().any(|&v| v != 1)
        {
            return Err(a.err("dilations", format!("{d:?}: weft pools without dilation")));
        }
        if kind == PoolKind::Max {
            self.refuse_used_outputs(cx, 1, "the indices")?;
        }
        let strides = a.pair("strides")?;
        let k = [kernel[0], kernel[1]];
        let pool = Pool {
            kind,
            kernel: k,
            strides,
            pads: pads(a, [xs[2], xs[3]], k, strides, [1, 1])?,
            ceil_mode: a.flag("ceil_mode", false)?,
            count_include_pad: kind == PoolKind::Average && a.flag("count_include_pad", false)?,
        };
        self.emit(cx, Op::Pool(pool), vec![x])
    }

    fn batch_norm(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        if a.flag("training_mode", false)? {
            return Err(a.err(
                "training_mode",
                "is 1: weft imports inference batch normalization only",
            ));
        }
        self.refuse_used_outputs(cx, 1, "a running statistic of training")?;
        let epsilon = a.float("epsilon", 1e-5)?;
        let inputs = (0..5)
            .map(|i| self.data(cx, i))
            .collect::<Result<Vec<_>, _>>()?;
        self.emit(cx, Op::BatchNorm(BatchNorm { epsilon }), inputs)
    }

    fn clip(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        // Bounds are attributes before opset 11 and optional inputs since; either absent
        // means unbounded.
        let mut bounds = [
            a.float("min", f32::NEG_INFINITY)?,
            a.float("max", f32::INFINITY)?,
        ];
        let computed = |i| {
            cx.input(i)
                .is_some_and(|n| !self.consts.contains_key(n) && self.values.contains_key(n))
        };
        if computed(1) || computed(2) {
            // A bound computed at run time: max(x, min) then min(·, max), which is also
            // ONNX's answer (max) where min > max.
            let mut acc = x;
            let out = cx.output()?.to_string();
            let steps: Vec<(usize, Binary)> = [(1, Binary::Max), (2, Binary::Min)]
                .into_iter()
                .filter(|&(i, _)| cx.input(i).is_some())
                .collect();
            for (k, &(i, f)) in steps.iter().enumerate() {
                let bound = self.data(cx, i)?;
                if k + 1 == steps.len() {
                    return self.emit(cx, Op::Binary(f), vec![acc, bound]);
                }
                acc = self.graph.add_node(
                    format!("{}::{}", cx.name, f.name()),
                    Op::Binary(f),
                    vec![acc, bound],
                    format!("{out}::{}", f.name()),
                )?;
            }
        }
        for (i, bound) in [1, 2].into_iter().zip(&mut bounds) {
            if let Some(c) = self.konst(cx, i)? {
                *bound = c.scalar().ok_or_else(|| {
                    cx.err(format!(
                        "input {i} has shape {:?}, not a scalar bound",
                        c.dims
                    ))
                })?;
            }
        }
        let [min, max] = bounds;
        self.emit(cx, Op::Clip(Clip { min, max }), vec![x])
    }

    /// MatMul; a 1-D operand is made a matrix (a row on the left, a column on the right)
    /// and its dimension dropped from the product, as NumPy does.
    fn matmul(&mut self, cx: &Ctx) -> Result<(), ImportError> {
        let (mut a, mut b) = (self.data(cx, 0)?, self.data(cx, 1)?);
        let (sa, sb) = (self.shape(a), self.shape(b));
        if sa.len() >= 2 && sb.len() >= 2 {
            return self.emit(cx, Op::MatMul, vec![a, b]);
        }
        let out = cx.output()?.to_string();
        let reshape = |im: &mut Self, t, shape: Vec<usize>, tag: &str| {
            im.graph.add_node(
                format!("{}::{tag}", cx.name),
                Op::Reshape(Reshape { shape }),
                vec![t],
                format!("{out}::{tag}"),
            )
        };
        if sa.len() == 1 {
            a = reshape(self, a, vec![1, sa[0]], "row")?;
        }
        if sb.len() == 1 {
            b = reshape(self, b, vec![sb[0], 1], "column")?;
        }
        let id = self.graph.add_node(
            format!("{}::product", cx.name),
            Op::MatMul,
            vec![a, b],
            format!("{out}::product"),
        )?;
        let mut product = self.shape(id);
        let r = product.len();
        if sb.len() == 1 {
            product.remove(r - 1);
        }
        if sa.len() == 1 {
            product.remove(r - 2);
        }
        self.emit(cx, Op::Reshape(Reshape { shape: product }), vec![id])
    }

    fn concat(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        if !a.has("axis") {
            return Err(a.err("axis", "is required"));
        }
        let axis = a.int("axis", 0)?;
        let first = self.data(cx, 0)?;
        let rank = self.shape(first).len();
        let axis = axis_in(a, "axis", axis, rank, false)?;
        let inputs = (0..cx.node.input.len())
            .map(|i| self.data(cx, i))
            .collect::<Result<Vec<_>, _>>()?;
        self.emit(cx, Op::Concat(Concat { axis }), inputs)
    }

    fn flatten(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let rank = self.shape(x).len();
        let axis = axis_in(a, "axis", a.int("axis", 1)?, rank, true)?;
        self.emit(cx, Op::Flatten(Flatten { axis }), vec![x])
    }

    fn reshape(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let x = self.data(cx, 0)?;
        let xs = self.shape(x);
        let spec = self
            .konst(cx, 1)?
            .ok_or_else(|| cx.err("input 1 (the shape) is missing"))?;
        let spec = spec
            .ints()
            .ok_or_else(|| cx.err("input 1 (the shape) is not an integer tensor"))?
            .to_vec();
        let allowzero = a.flag("allowzero", false)?;
        let shape = resolve_reshape(&xs, &spec, allowzero).map_err(|w| cx.err(w))?;
        self.emit(cx, Op::Reshape(Reshape { shape }), vec![x])
    }

    fn gemm(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let gemm = Gemm {
            alpha: a.float("alpha", 1.0)?,
            beta: a.float("beta", 1.0)?,
            trans_a: a.flag("transA", false)?,
            trans_b: a.flag("transB", false)?,
        };
        let mut inputs = vec![self.data(cx, 0)?, self.data(cx, 1)?];
        inputs.extend(self.opt_data(cx, 2)?);
        self.emit(cx, Op::Gemm(gemm), inputs)
    }

    fn dropout(&mut self, cx: &Ctx) -> Result<(), ImportError> {
        // Input 1 (the ratio) does not matter in inference; input 2 must say inference.
        if let Some(mode) = self.konst(cx, 2)?
            && mode.scalar() != Some(0.0)
        {
            return Err(
                cx.err("training_mode is true: weft imports inference Dropout (an identity) only")
            );
        }
        self.refuse_used_outputs(cx, 1, "the mask")?;
        let x = self.data(cx, 0)?;
        self.emit(cx, Op::Identity, vec![x])
    }

    fn constant(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let out = cx.output()?.to_string();
        let scalar_f32 = |values: Vec<f32>, dims: Vec<usize>| Const {
            data: ConstData::Float {
                values: ArrayD::from_shape_vec(IxDyn(&dims), values).expect("sizes match"),
                dtype: DType::F32,
            },
            dims,
        };
        let c = if let Some(t) = a.tensor("value")? {
            tensor::decode(t, &out)?
        } else if a.has("value_float") {
            scalar_f32(vec![a.float("value_float", 0.0)? as f32], vec![])
        } else if let Some(v) = a.floats("value_floats")? {
            scalar_f32(v.to_vec(), vec![v.len()])
        } else if a.has("value_int") {
            Const {
                dims: vec![],
                data: ConstData::Int(vec![a.int("value_int", 0)?]),
            }
        } else if let Some(v) = a.ints("value_ints")? {
            Const {
                dims: vec![v.len()],
                data: ConstData::Int(v.to_vec()),
            }
        } else {
            let which = cx.node.attribute.first().map_or("value", |x| &x.name);
            return Err(a.err(
                which,
                "weft reads a Constant's value, value_float(s) or value_int(s) only",
            ));
        };
        self.consts.insert(out, c);
        Ok(())
    }

    /// Max, Min or Sum of any number of inputs: a chain of binary nodes.
    fn variadic(&mut self, cx: &Ctx, f: Binary) -> Result<(), ImportError> {
        let n = cx.node.input.len();
        if n == 0 {
            return Err(cx.err("has no inputs"));
        }
        let mut acc = self.data(cx, 0)?;
        if n == 1 {
            return self.emit(cx, Op::Identity, vec![acc]);
        }
        let out = cx.output()?.to_string();
        for i in 1..n - 1 {
            let next = self.data(cx, i)?;
            acc = self.graph.add_node(
                format!("{}::{i}", cx.name),
                Op::Binary(f),
                vec![acc, next],
                format!("{out}::{i}"),
            )?;
        }
        let last = self.data(cx, n - 1)?;
        self.emit(cx, Op::Binary(f), vec![acc, last])
    }
}

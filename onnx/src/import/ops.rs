//! One ONNX node → weft graph nodes. Each op's converter is in the op's own module in
//! `weft-graph` (`weft_graph::op`, found by op type through [`versions`]); this module
//! gives it the node ([`NodeCx`], its `OnnxNode`), and handles what is not an op:
//! `Constant` nodes and shape arithmetic (folded at import, `fold`).

use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::Op;
use weft_graph::op::onnx::{ConstInput, ConstValues, OnnxError, OnnxNode};
use weft_graph::{Layout, Tensor, TensorId};
use weft_ir::dtype::DType;

use super::Importer;
use super::attrs::Attrs;
use super::tensor::{self, Const, ConstData};
use crate::error::ImportError;
use crate::proto::NodeProto;
use crate::versions::{self, Effective, Import};

/// The node under import, for reading its inputs and naming it in errors.
pub(super) struct Ctx<'a> {
    pub(super) node: &'a NodeProto,
    /// The file's node name, or `{op_type}_{index}` where it has none.
    pub(super) name: String,
}

impl Ctx<'_> {
    /// Input `i`'s name, `None` where it is absent or empty (an omitted optional input).
    pub(super) fn input(&self, i: usize) -> Option<&str> {
        self.node
            .input
            .get(i)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The first output's name.
    pub(super) fn output(&self) -> Result<&str, OnnxError> {
        self.node
            .output
            .first()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| OnnxError::Node("has no output".into()))
    }

    /// `e` as the importer's error, naming this node.
    pub(super) fn error(&self, e: OnnxError) -> ImportError {
        match e {
            OnnxError::Node(what) => ImportError::Node {
                node: self.name.clone(),
                op: self.node.op_type.clone(),
                what,
            },
            OnnxError::Attribute { attr, what } => ImportError::Attribute {
                node: self.name.clone(),
                op: self.node.op_type.clone(),
                attr,
                what,
            },
            OnnxError::NotConstant {
                index,
                input,
                graph_input,
            } => ImportError::NotConstant {
                node: self.name.clone(),
                op: self.node.op_type.clone(),
                index,
                input,
                graph_input,
            },
            OnnxError::Undefined(input) => ImportError::Undefined {
                node: self.name.clone(),
                input,
            },
            OnnxError::Graph(e) => ImportError::Graph(e),
        }
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
        let import = match versions::effective(&node.op_type, self.opset) {
            Effective::Version(_, import) => import,
            Effective::NotYet { first } => {
                return Err(refuse(Some(format!("weft imports it from opset {first}"))));
            }
            Effective::Unknown => return Err(refuse(None)),
        };
        let cx = Ctx {
            node,
            name: name.clone(),
        };
        let a = Attrs::new(node, &cx.name);
        if self.cache_node(node, &cx.name)? {
            return Ok(());
        }
        if self.fold(node, &a)? {
            return Ok(());
        }
        match import {
            Import::Op(op) => {
                let before = self.graph.nodes.len();
                self.konst_reads.borrow_mut().clear();
                let mut n = NodeCx {
                    im: self,
                    cx: &cx,
                    a: &a,
                };
                (op.import)(&mut n).map_err(|e| cx.error(e))?;
                self.empty_as_constants(before);
                let read = std::mem::take(&mut *self.konst_reads.borrow_mut());
                self.check_taint_as_shapes(node, &cx.name, &read);
                self.check_position_reads(node, &cx.name, &read)
            }
            Import::Constant => self.constant(&cx, &a),
            Import::Folded => Err(cx.error(OnnxError::Node(
                "its inputs must be constants (weft evaluates shape arithmetic at import)".into(),
            ))),
        }
    }

    /// Input `i` as a graph tensor (a constant becomes a weight).
    fn data(&mut self, cx: &Ctx, i: usize) -> Result<TensorId, OnnxError> {
        let name = cx
            .input(i)
            .ok_or_else(|| OnnxError::Node(format!("input {i} is missing")))?;
        // An integer constant becomes an i32 tensor whose values the graph keeps in f32:
        // exact to 2^24, far past any index or token id.
        if let Some(v) = self.consts.get(name).and_then(|c| c.ints())
            && let Some(big) = v.iter().find(|x| x.unsigned_abs() > 1 << 24)
        {
            return Err(OnnxError::Node(format!(
                "input {i} `{name}` holds the integer {big}, beyond what weft's integer tensors keep exactly (2^24)"
            )));
        }
        self.value(name)
            .ok_or_else(|| OnnxError::Undefined(name.to_string()))
    }

    /// Input `i` (a shape, a bound, a flag) as a constant, where given; a computed value
    /// there is refused, since weft's shapes are fixed at import.
    fn konst(&self, cx: &Ctx, i: usize) -> Result<Option<&Const>, OnnxError> {
        let Some(name) = cx.input(i) else {
            return Ok(None);
        };
        if let Some(c) = self.consts.get(name) {
            if self.taint.contains_key(name) || self.cache.as_ref().is_some_and(|s| s.sloped(name))
            {
                self.konst_reads.borrow_mut().push((i, name.to_string()));
            }
            return Ok(Some(c));
        }
        if let Some(id) = self.values.get(name) {
            return Err(OnnxError::NotConstant {
                index: i,
                input: name.to_string(),
                graph_input: self.graph.inputs.contains(id),
            });
        }
        Err(OnnxError::Undefined(name.to_string()))
    }

    /// Where every node from `first` on (what one ONNX node became) has an output of no
    /// elements, those outputs are constants — an empty tensor's value is its shape — and
    /// the nodes go: weft computes no empty tensor, and a reader of one (a reduction over
    /// the empty axis, a CastLike) may need only its shape.
    fn empty_as_constants(&mut self, first: usize) {
        let added = &self.graph.nodes[first..];
        let empty = |n: &weft_graph::Node| self.graph.tensor(n.output).numel() == 0;
        if added.is_empty() || !added.iter().all(empty) {
            return;
        }
        let outputs: Vec<TensorId> = added.iter().map(|n| n.output).collect();
        self.graph.nodes.truncate(first);
        for t in outputs {
            let t = &mut self.graph.tensors[t.0];
            t.data = Some(Arc::new(ArrayD::zeros(IxDyn(&t.shape))));
        }
    }

    /// Adds a node `name` computing `output` from `inputs`.
    fn add(
        &mut self,
        name: String,
        op: Op,
        inputs: Vec<TensorId>,
        output: String,
    ) -> Result<TensorId, OnnxError> {
        let id = self.graph.add_node(name, op, inputs, output.clone())?;
        self.values.insert(output, id);
        Ok(id)
    }

    fn constant(&mut self, cx: &Ctx, a: &Attrs) -> Result<(), ImportError> {
        let out = cx.output().map_err(|e| cx.error(e))?.to_string();
        let scalar_f32 = |values: Vec<f32>, dims: Vec<usize>| Const {
            data: ConstData::Float {
                values: ArrayD::from_shape_vec(IxDyn(&dims), values).expect("sizes match"),
                dtype: DType::F32,
            },
            dims,
        };
        // ONNX: exactly one of the value attributes. Two would leave which one is the
        // value to the reader's order; none is no value at all.
        const VALUES: [&str; 8] = [
            "value",
            "value_float",
            "value_floats",
            "value_int",
            "value_ints",
            "value_string",
            "value_strings",
            "sparse_value",
        ];
        let given: Vec<&str> = VALUES.into_iter().filter(|v| a.has(v)).collect();
        if let [_, second, ..] = given[..] {
            return Err(a.err(
                second,
                format!(
                    "a Constant takes exactly one value attribute; this one has {} ({})",
                    given.len(),
                    given.join(", ")
                ),
            ));
        }
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
}

/// One node as an op's converter reads it: the importer, the node and its attributes.
struct NodeCx<'i, 'm, 'c> {
    im: &'i mut Importer<'m>,
    cx: &'c Ctx<'c>,
    a: &'c Attrs<'c>,
}

impl NodeCx<'_, '_, '_> {
    /// An attribute error of the protobuf reader, as the converter's error.
    fn attr(e: ImportError) -> OnnxError {
        match e {
            ImportError::Attribute { attr, what, .. } => OnnxError::Attribute { attr, what },
            other => OnnxError::Node(other.to_string()),
        }
    }
}

impl OnnxNode for NodeCx<'_, '_, '_> {
    fn name(&self) -> &str {
        &self.cx.name
    }

    fn opset(&self) -> i64 {
        self.im.opset
    }

    fn input_count(&self) -> usize {
        self.cx.node.input.len()
    }

    fn has_input(&self, i: usize) -> bool {
        self.cx.input(i).is_some()
    }

    fn is_computed(&self, i: usize) -> bool {
        self.cx
            .input(i)
            .is_some_and(|n| !self.im.consts.contains_key(n) && self.im.values.contains_key(n))
    }

    fn data(&mut self, i: usize) -> Result<TensorId, OnnxError> {
        self.im.data(self.cx, i)
    }

    fn constant(&self, i: usize) -> Result<Option<ConstInput>, OnnxError> {
        Ok(self.im.konst(self.cx, i)?.map(|c| ConstInput {
            dims: c.dims.clone(),
            values: match c.ints() {
                Some(v) => ConstValues::Ints(v.to_vec()),
                None => ConstValues::Floats(c.to_f64()),
            },
        }))
    }

    fn tensor(&self, t: TensorId) -> &Tensor {
        self.im.graph.tensor(t)
    }

    fn emit(&mut self, op: Op, inputs: Vec<TensorId>) -> Result<(), OnnxError> {
        let out = self.cx.output()?.to_string();
        self.im.add(self.cx.name.clone(), op, inputs, out)?;
        Ok(())
    }

    fn emit_output(&mut self, k: usize, op: Op, inputs: Vec<TensorId>) -> Result<(), OnnxError> {
        let Some(out) = self.cx.node.output.get(k).filter(|o| !o.is_empty()) else {
            return Ok(());
        };
        let name = format!("{}::{k}", self.cx.name);
        self.im.add(name, op, inputs, out.clone())?;
        Ok(())
    }

    fn output_count(&self) -> usize {
        self.cx.node.output.len()
    }

    fn step(&mut self, tag: &str, op: Op, inputs: Vec<TensorId>) -> Result<TensorId, OnnxError> {
        let out = self.cx.output()?;
        let (name, output) = (format!("{}::{tag}", self.cx.name), format!("{out}::{tag}"));
        Ok(self.im.graph.add_node(name, op, inputs, output)?)
    }

    fn add_constant(
        &mut self,
        tag: &str,
        dims: Vec<usize>,
        values: Vec<f32>,
        dtype: DType,
    ) -> TensorId {
        let values = ArrayD::from_shape_vec(IxDyn(&dims), values)
            .unwrap_or_else(|_| ArrayD::zeros(IxDyn(&dims)));
        self.im.graph.add_tensor(Tensor {
            name: format!("{}::{tag}", self.cx.name),
            shape: dims,
            dtype,
            layout: Layout::RowMajor,
            data: Some(std::sync::Arc::new(values)),
        })
    }

    fn output_used(&self, k: usize) -> bool {
        self.cx
            .node
            .output
            .get(k)
            .is_some_and(|name| !name.is_empty() && self.im.used.contains(name))
    }

    fn refuse_used_outputs(&self, from: usize, what: &str) -> Result<(), OnnxError> {
        for (k, name) in self.cx.node.output.iter().enumerate().skip(from) {
            if !name.is_empty() && self.im.used.contains(name) {
                return Err(OnnxError::Node(format!(
                    "output {k} `{name}` ({what}) is used, and weft computes only output 0"
                )));
            }
        }
        Ok(())
    }

    fn has(&self, attr: &str) -> bool {
        self.a.has(attr)
    }

    fn int(&self, attr: &str, default: i64) -> Result<i64, OnnxError> {
        self.a.int(attr, default).map_err(Self::attr)
    }

    fn float(&self, attr: &str, default: f32) -> Result<f64, OnnxError> {
        self.a.float(attr, default).map_err(Self::attr)
    }

    fn ints(&self, attr: &str) -> Result<Option<Vec<i64>>, OnnxError> {
        Ok(self.a.ints(attr).map_err(Self::attr)?.map(<[i64]>::to_vec))
    }

    fn string(&self, attr: &str, default: &str) -> Result<String, OnnxError> {
        self.a.string(attr, default).map_err(Self::attr)
    }

    fn element_type(&self, code: i64) -> Option<DType> {
        i32::try_from(code).ok().and_then(tensor::graph_dtype)
    }

    fn element_type_name(&self, code: i64) -> String {
        i32::try_from(code).map_or_else(|_| format!("element type {code}"), tensor::type_name)
    }
}

//! What an op's ONNX node carries ([`ExportNode`]): each op's
//! [`crate::op::OpDef::export`] fills in its attributes, the constant inputs ONNX takes
//! where weft keeps attributes (a Reshape's shape, a Slice's bounds), and the opset it
//! needs; `weft-onnx` writes the protobuf.

use weft_ir::dtype::DType;

use crate::tensor::Tensor;

/// The default-domain opset models are written in; ops newer than it raise it (Mish to
/// 18, Gelu to 20, Attention to 23).
pub const EXPORT_OPSET: i64 = 17;

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attribute {
    Int(i64),
    Ints(Vec<i64>),
    /// Written as ONNX's f32.
    Float(f64),
    String(String),
    /// An element type, written as ONNX's number for it (weft's i32 as int64).
    DType(DType),
}

/// A constant input the node reads after its data inputs, as an initializer.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    /// An int64 vector (a shape, axes, a Slice's bounds).
    Ints(Vec<i64>),
    /// A scalar in the element type `dtype` (a Clip bound in its input's type).
    Scalar(f64, DType),
}

/// One node being exported: what the graph knows of it, and what the op adds.
#[derive(Debug)]
pub struct ExportNode<'a> {
    /// The node's data inputs, in order.
    pub inputs: Vec<&'a Tensor>,
    /// Its output.
    pub output: &'a Tensor,
    /// Attributes, in the order they are written.
    pub attributes: Vec<(&'static str, Attribute)>,
    /// Constant inputs after the data inputs, each named after the output and `what`.
    pub constants: Vec<(&'static str, Constant)>,
    /// The oldest default-domain opset that has the op as weft writes it.
    pub opset: i64,
    /// Where the op has no ONNX op of its own: the ONNX op the node is written as, and
    /// the unary ONNX ops of its first input whose outputs it reads after its inputs
    /// (SiLU: `Mul(x, Sigmoid(x))`), each written as a node before it.
    pub written_as: Option<(&'static str, &'static [&'static str])>,
}

impl<'a> ExportNode<'a> {
    /// A node reading `inputs` and giving `output`, with nothing added yet.
    pub fn new(inputs: Vec<&'a Tensor>, output: &'a Tensor) -> ExportNode<'a> {
        ExportNode {
            inputs,
            output,
            attributes: Vec::new(),
            constants: Vec::new(),
            opset: EXPORT_OPSET,
            written_as: None,
        }
    }

    /// An integer attribute.
    pub fn int(&mut self, name: &'static str, v: i64) {
        self.attributes.push((name, Attribute::Int(v)));
    }

    /// An integer list attribute.
    pub fn ints(&mut self, name: &'static str, v: &[usize]) {
        let v = v.iter().map(|&d| d as i64).collect();
        self.attributes.push((name, Attribute::Ints(v)));
    }

    /// A float attribute.
    pub fn float(&mut self, name: &'static str, v: f64) {
        self.attributes.push((name, Attribute::Float(v)));
    }

    /// A string attribute.
    pub fn string(&mut self, name: &'static str, v: &str) {
        self.attributes
            .push((name, Attribute::String(v.to_string())));
    }

    /// An element-type attribute.
    pub fn dtype(&mut self, name: &'static str, v: DType) {
        self.attributes.push((name, Attribute::DType(v)));
    }

    /// An int64 vector as the next input.
    pub fn const_ints(&mut self, what: &'static str, v: Vec<i64>) {
        self.constants.push((what, Constant::Ints(v)));
    }

    /// A scalar of the output's element type as the next input.
    pub fn const_scalar(&mut self, what: &'static str, v: f64) {
        let dtype = self.output.dtype;
        self.constants.push((what, Constant::Scalar(v, dtype)));
    }

    /// The node is written as the ONNX op `op_type` reading, after its inputs, each of
    /// `first_input_through` (unary ONNX ops) applied to its first input.
    pub fn written_as(
        &mut self,
        op_type: &'static str,
        first_input_through: &'static [&'static str],
    ) {
        self.written_as = Some((op_type, first_input_through));
    }

    /// The node needs at least `opset`.
    pub fn needs_opset(&mut self, opset: i64) {
        self.opset = self.opset.max(opset);
    }
}

//! ONNX import as each op's module writes it: [`OnnxOp`] names an ONNX op type, the
//! since-versions weft implements and its converter; the converter reads the node
//! through [`OnnxNode`] (attributes with their defaults, inputs as graph tensors or as
//! constants) and adds the weft nodes it becomes. `weft-onnx` implements [`OnnxNode`]
//! over the protobuf and owns what is not an op (the file, initializers, constant
//! folding of shape arithmetic, `Constant` nodes).
//!
//! An ONNX op's effective version at an opset is the newest since-version at or below
//! it; `since` lists the since-versions effective at some opset weft imports (later
//! versions added element types, not behaviour weft models differently).

use std::fmt;

use crate::error::GraphError;
use crate::op::Op;
use crate::tensor::{Tensor, TensorId};

/// The largest window size, stride, dilation or pad taken: far past any real model, and
/// small enough that window arithmetic cannot overflow.
pub const MAX_WINDOW: i64 = 1 << 24;

/// One ONNX op type weft imports.
#[derive(Clone, Copy)]
pub struct OnnxOp {
    /// The op type in the default domain (`Conv`, `Relu`, ...).
    pub op_type: &'static str,
    /// The since-versions weft implements, oldest first.
    pub since: &'static [i64],
    /// Adds what the node computes to the graph.
    pub import: fn(&mut dyn OnnxNode) -> Result<(), OnnxError>,
}

impl OnnxOp {
    /// The op type `op_type` at `since`, converted by `import`.
    pub const fn new(
        op_type: &'static str,
        since: &'static [i64],
        import: fn(&mut dyn OnnxNode) -> Result<(), OnnxError>,
    ) -> OnnxOp {
        OnnxOp {
            op_type,
            since,
            import,
        }
    }
}

impl fmt::Debug for OnnxOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.op_type, self.since)
    }
}

/// Why a node could not be converted; the importer adds the node's name and op type.
#[derive(Clone, Debug, PartialEq)]
pub enum OnnxError {
    /// The node's inputs or outputs (a computed shape, a used mask, a rank weft lacks).
    Node(String),
    /// An attribute's value or type.
    Attribute { attr: String, what: String },
    /// Input `index` (`input`) where the op needs a value known at import (a shape, axes,
    /// a bound, a flag) is computed; `graph_input` where it is a graph input, which the
    /// importer's caller may bind to a value.
    NotConstant {
        index: usize,
        input: String,
        graph_input: bool,
    },
    /// An input that nothing defines.
    Undefined(String),
    /// weft's inference refused the node.
    Graph(GraphError),
}

impl From<GraphError> for OnnxError {
    fn from(e: GraphError) -> OnnxError {
        OnnxError::Graph(e)
    }
}

/// An input whose value is known at import: a shape, axes, a bound, a flag.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstInput {
    /// Its dimensions (empty for a scalar).
    pub dims: Vec<usize>,
    /// Its elements, row-major.
    pub values: ConstValues,
}

/// A constant input's elements.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstValues {
    /// Integers and bools.
    Ints(Vec<i64>),
    /// Floats of any width.
    Floats(Vec<f64>),
}

impl ConstInput {
    /// The elements as integers, if they are integers (or bools).
    pub fn ints(&self) -> Option<&[i64]> {
        match &self.values {
            ConstValues::Ints(v) => Some(v),
            ConstValues::Floats(_) => None,
        }
    }

    /// The single element, if it holds one.
    pub fn scalar(&self) -> Option<f64> {
        match &self.values {
            ConstValues::Ints(v) if v.len() == 1 => Some(v[0] as f64),
            ConstValues::Floats(v) if v.len() == 1 => Some(v[0]),
            ConstValues::Ints(_) | ConstValues::Floats(_) => None,
        }
    }
}

/// One ONNX node under import, as an op's converter sees it.
pub trait OnnxNode {
    /// The node's name (made up where the file has none), for the nodes it becomes.
    fn name(&self) -> &str;

    /// The model's default-domain opset.
    fn opset(&self) -> i64;

    /// How many inputs the node lists (omitted optional ones included).
    fn input_count(&self) -> usize;

    /// True where input `i` is given (not omitted, not empty).
    fn has_input(&self, i: usize) -> bool;

    /// True where input `i` is a value computed at run time (not a constant).
    fn is_computed(&self, i: usize) -> bool;

    /// Input `i` as a graph tensor (a constant becomes a weight).
    fn data(&mut self, i: usize) -> Result<TensorId, OnnxError>;

    /// Input `i` as a constant, where given; a computed value there is refused (weft
    /// fixes shapes and bounds at import).
    fn constant(&self, i: usize) -> Result<Option<ConstInput>, OnnxError>;

    /// A graph tensor.
    fn tensor(&self, t: TensorId) -> &Tensor;

    /// Adds the node computing the node's first output from `inputs`.
    fn emit(&mut self, op: Op, inputs: Vec<TensorId>) -> Result<(), OnnxError>;

    /// Adds a node computing output `k` (a Split's part); nothing where that output is
    /// unnamed.
    fn emit_output(&mut self, k: usize, op: Op, inputs: Vec<TensorId>) -> Result<(), OnnxError>;

    /// How many outputs the node lists.
    fn output_count(&self) -> usize;

    /// Adds an intermediate node (`{name}::{tag}`, its output `{output}::{tag}`): a step
    /// of an op that becomes several.
    fn step(&mut self, tag: &str, op: Op, inputs: Vec<TensorId>) -> Result<TensorId, OnnxError>;

    /// Adds a constant tensor (`{name}::{tag}`) of `dtype` holding `values`.
    fn add_constant(
        &mut self,
        tag: &str,
        dims: Vec<usize>,
        values: Vec<f32>,
        dtype: weft_ir::dtype::DType,
    ) -> TensorId;

    /// True where output `k` is named and something reads it (a node or the graph's
    /// outputs): an optional output a converter computes only where it is wanted.
    fn output_used(&self, k: usize) -> bool;

    /// Refuses outputs from `from` on that something uses (weft's ops have one output);
    /// `what` names them.
    fn refuse_used_outputs(&self, from: usize, what: &str) -> Result<(), OnnxError>;

    /// True where the node has attribute `attr`.
    fn has(&self, attr: &str) -> bool;

    /// An integer attribute, or `default`.
    fn int(&self, attr: &str, default: i64) -> Result<i64, OnnxError>;

    /// A float attribute (f32 in the file), or `default`.
    fn float(&self, attr: &str, default: f32) -> Result<f64, OnnxError>;

    /// An integer list attribute, if present.
    fn ints(&self, attr: &str) -> Result<Option<Vec<i64>>, OnnxError>;

    /// A string attribute, or `default`.
    fn string(&self, attr: &str, default: &str) -> Result<String, OnnxError>;

    /// The type a graph holds tensors of ONNX element type `code` in (`Cast`'s `to`),
    /// `None` for a type weft does not hold.
    fn element_type(&self, code: i64) -> Option<weft_ir::dtype::DType>;

    /// ONNX's name of element type `code` (`FLOAT`, `STRING`, ...), for errors.
    fn element_type_name(&self, code: i64) -> String;
}

impl dyn OnnxNode + '_ {
    /// An error about the node.
    pub fn err(&self, what: impl Into<String>) -> OnnxError {
        OnnxError::Node(what.into())
    }

    /// An error about attribute `attr`.
    pub fn attr_err(&self, attr: &str, what: impl Into<String>) -> OnnxError {
        OnnxError::Attribute {
            attr: attr.to_string(),
            what: what.into(),
        }
    }

    /// A flag (0 or 1), or `default`.
    pub fn flag(&self, attr: &str, default: bool) -> Result<bool, OnnxError> {
        match self.int(attr, i64::from(default))? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.attr_err(attr, format!("is {v}, not 0 or 1"))),
        }
    }

    /// Two positive integers (strides, dilations) from a list of 2, or `[1, 1]`.
    pub fn pair(&self, attr: &str) -> Result<[usize; 2], OnnxError> {
        let v = self.window_ints(attr, 2)?;
        Ok([v[0], v[1]])
    }

    /// `dims` positive integers (strides, dilations of a `dims`-D window) from a list
    /// of as many, or all 1.
    pub fn window_ints(&self, attr: &str, dims: usize) -> Result<Vec<usize>, OnnxError> {
        match self.ints(attr)? {
            None => Ok(vec![1; dims]),
            Some(v) if v.len() == dims && v.iter().all(|x| (1..=MAX_WINDOW).contains(x)) => {
                Ok(v.iter().map(|&x| x as usize).collect())
            }
            Some(v) => Err(self.attr_err(
                attr,
                format!(
                    "{v:?}: weft takes {} in 1..={MAX_WINDOW} ({dims}-D windows)",
                    values(dims)
                ),
            )),
        }
    }

    /// Input `i` as a graph tensor, where given.
    pub fn opt_data(&mut self, i: usize) -> Result<Option<TensorId>, OnnxError> {
        if self.has_input(i) {
            self.data(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Every input as a graph tensor, in order.
    pub fn all_data(&mut self) -> Result<Vec<TensorId>, OnnxError> {
        (0..self.input_count()).map(|i| self.data(i)).collect()
    }

    /// The integer constant at input `i`, where given; `what` names it in errors.
    pub fn int_input(&self, i: usize, what: &str) -> Result<Option<Vec<i64>>, OnnxError> {
        match self.constant(i)? {
            None => Ok(None),
            Some(c) => c
                .ints()
                .map(|v| Some(v.to_vec()))
                .ok_or_else(|| self.err(format!("input {i} ({what}) is not an integer tensor"))),
        }
    }

    /// An integer list that opsets before `moved` give as attribute `attr` and later
    /// ones as input `i` (a constant), where given: `axes`, `split`, `starts`, ...
    pub fn ints_moved(
        &self,
        attr: &str,
        i: usize,
        moved: i64,
    ) -> Result<Option<Vec<i64>>, OnnxError> {
        if self.opset() < moved {
            self.ints(attr)
        } else {
            self.int_input(i, attr)
        }
    }

    /// The shape of tensor `t`.
    pub fn shape(&self, t: TensorId) -> Vec<usize> {
        self.tensor(t).shape.clone()
    }

    /// An axis in `-rank..rank` (`..=rank` where `inclusive`) as a non-negative one;
    /// `attr` names it in errors.
    pub fn axis(
        &self,
        attr: &str,
        axis: i64,
        rank: usize,
        inclusive: bool,
    ) -> Result<usize, OnnxError> {
        let r = rank as i64;
        let hi = if inclusive { r } else { r - 1 };
        let resolved = if axis < 0 { axis + r } else { axis };
        if resolved < 0 || resolved > hi {
            return Err(self.attr_err(attr, format!("{axis} is out of range for rank {rank}")));
        }
        Ok(resolved as usize)
    }

    /// Positive sizes from the list attribute `attr`.
    pub fn positive(&self, attr: &str, v: &[i64]) -> Result<Vec<usize>, OnnxError> {
        v.iter()
            .map(|&d| {
                usize::try_from(d)
                    .ok()
                    .filter(|&d| d > 0 && d <= MAX_WINDOW as usize)
                    .ok_or_else(|| {
                        self.attr_err(
                            attr,
                            format!("{v:?} has a size that is not in 1..={MAX_WINDOW}"),
                        )
                    })
            })
            .collect()
    }

    /// Explicit `[top, left, bottom, right]` padding from `pads` and `auto_pad`:
    /// SAME_UPPER and SAME_LOWER pad so the output is `ceil(input / stride)`, the odd
    /// pixel at the end or the beginning.
    pub fn pads(
        &self,
        input: [usize; 2],
        kernel: [usize; 2],
        strides: [usize; 2],
        dilations: [usize; 2],
    ) -> Result<[usize; 4], OnnxError> {
        let p = self.window_pads(&input, &kernel, &strides, &dilations)?;
        Ok([p[0], p[1], p[2], p[3]])
    }

    /// [`pads`](Self::pads) for a window of any number of dimensions: the padding at
    /// the beginning of each dimension, then at the end (ONNX's order).
    pub fn window_pads(
        &self,
        input: &[usize],
        kernel: &[usize],
        strides: &[usize],
        dilations: &[usize],
    ) -> Result<Vec<usize>, OnnxError> {
        let dims = input.len();
        let auto = self.string("auto_pad", "NOTSET")?;
        let explicit = match self.ints("pads")? {
            None => vec![0; 2 * dims],
            Some(v) if v.len() == 2 * dims && v.iter().all(|p| (0..=MAX_WINDOW).contains(p)) => {
                v.iter().map(|&p| p as usize).collect()
            }
            Some(v) => {
                return Err(self.attr_err(
                    "pads",
                    format!(
                        "{v:?}: weft takes {} in 0..={MAX_WINDOW} ({dims}-D)",
                        values(2 * dims)
                    ),
                ));
            }
        };
        match auto.as_str() {
            "NOTSET" => Ok(explicit),
            "VALID" => Ok(vec![0; 2 * dims]),
            "SAME_UPPER" | "SAME_LOWER" => {
                let mut p = vec![0; 2 * dims];
                for ax in 0..dims {
                    if input[ax] == 0 {
                        continue;
                    }
                    let out = input[ax].div_ceil(strides[ax]);
                    let span = dilations[ax] * (kernel[ax] - 1) + 1;
                    let total = ((out - 1) * strides[ax] + span).saturating_sub(input[ax]);
                    let (small, big) = (total / 2, total - total / 2);
                    let (lo, hi) = if auto == "SAME_UPPER" {
                        (small, big)
                    } else {
                        (big, small)
                    };
                    p[ax] = lo;
                    p[ax + dims] = hi;
                }
                Ok(p)
            }
            other => Err(self.attr_err(
                "auto_pad",
                format!("`{other}` is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"),
            )),
        }
    }

    /// The op applied to every input as data.
    pub fn simple(&mut self, op: Op) -> Result<(), OnnxError> {
        let inputs = self.all_data()?;
        self.emit(op, inputs)
    }
}

/// "one value", "two values", ..., for messages.
fn values(k: usize) -> String {
    match k {
        1 => "one value".into(),
        2 => "two values".into(),
        3 => "three values".into(),
        4 => "four values".into(),
        k => format!("{k} values"),
    }
}

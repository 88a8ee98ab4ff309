//! Symbolic dimensions: a graph built at each symbol's maximum (`seq ∈ 1..128` built at
//! 128) and compiled once, each run giving the symbol's value `n` (issue 60, item 1).
//!
//! A run pads its inputs to the maximum and cuts the outputs back to `n`. What makes that
//! right is [`carry`]: from the graph inputs' axes that are the symbol, each op says
//! ([`OpDef::symbolic`](crate::op::OpDef::symbolic)) along which axes of its output the
//! symbol lies, and whether the op mixes elements across it. An op that does not
//! (elementwise, layout changes, products and normalizations along other axes) computes
//! its rows below `n` from rows below `n` only, whatever the padding holds. One that does
//! is bounded by [`bind`]: its inputs masked past `n` (a softmax over keys sees the
//! lowest float there, a product contracting the symbol zeros in both operands, a sum
//! zeros, a maximum the lowest float) with a `Where` against the positions, and a mean
//! over the symbol multiplied by `max / n`. An op weft cannot bound is refused
//! ([`GraphError::Symbolic`]), naming the node and the symbol: never run at the wrong
//! length.
//!
//! The value `n` is device data: a graph input `symbol.NAME` (`[1]`, f32) that the masks
//! compare positions with, as `zoo::llama_step` reads its position, so that one compiled
//! model serves every length. Every kernel still runs at the maximum: the masks make the
//! answer right, not the work smaller.

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use crate::graph::{Graph, GraphError, Node, NodeId, Symbol, Tensor, TensorId};
use crate::op::symbolic::SymbolicIn;
pub use crate::op::symbolic::{Carry, Fill, SymDim};
use crate::op::{Binary, Cast, Op};
use crate::tensor::Layout;

/// Where one symbol lies in every tensor of a graph, and which nodes mix across it.
#[derive(Clone, Debug, Default)]
pub struct Carried {
    /// Each tensor that carries the symbol, its dims (tensors absent carry none).
    pub dims: HashMap<TensorId, Vec<SymDim>>,
    /// The nodes bounded to the run's length.
    pub bounded: Vec<Bounded>,
}

/// A node bounded to the run's length: its inputs masked past `n`, and how many
/// symbolic dims a mean over them divides by.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounded {
    pub node: NodeId,
    /// Input index and the value it takes past `n`.
    pub masks: Vec<(usize, Fill)>,
    pub mean_dims: usize,
}

/// The name of the graph input a bound graph reads symbol `name`'s value from.
pub fn value_input_name(name: &str) -> String {
    format!("symbol.{name}")
}

/// Carries symbol `s` from its graph inputs' axes through every node of `g`: an error
/// naming the first node weft cannot bound, or a symbol declared wrongly.
pub fn carry(g: &Graph, s: &Symbol) -> Result<Carried, GraphError> {
    let wrong = |tensor: &str, what: String| GraphError::Symbolic {
        node: tensor.to_string(),
        op: "input",
        symbol: s.name.clone(),
        what,
    };
    if s.min == 0 || s.min > s.max {
        return Err(wrong(
            &s.name,
            format!("the range {}..{} is empty or starts at 0", s.min, s.max),
        ));
    }
    let mut carried = Carried::default();
    for &(t, axis) in &s.dims {
        let tensor = g.tensors.get(t.0).ok_or(GraphError::NoTensor(t.0))?;
        if !g.inputs.contains(&t) || tensor.shape.get(axis) != Some(&s.max) {
            return Err(wrong(
                &tensor.name,
                format!(
                    "axis {axis} of {:?} must be a graph input's, built at the maximum {}",
                    tensor.shape, s.max
                ),
            ));
        }
        let dims = carried.dims.entry(t).or_default();
        if !dims.contains(&SymDim::whole(axis)) {
            dims.push(SymDim::whole(axis));
        }
    }
    for &(t, axis) in &s.rows {
        let tensor = g.tensors.get(t.0).ok_or(GraphError::NoTensor(t.0))?;
        if !tensor.is_constant() || tensor.shape.get(axis) != Some(&s.max) {
            return Err(wrong(
                &tensor.name,
                format!(
                    "axis {axis} of {:?} must be a constant's, built at the maximum {}",
                    tensor.shape, s.max
                ),
            ));
        }
        let dims = carried.dims.entry(t).or_default();
        if !dims.contains(&SymDim::whole(axis)) {
            dims.push(SymDim::whole(axis));
        }
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let dims: Vec<Vec<SymDim>> = n
            .inputs
            .iter()
            .map(|t| carried.dims.get(t).cloned().unwrap_or_default())
            .collect();
        if dims.iter().all(Vec::is_empty) {
            continue;
        }
        let inputs: Vec<&Tensor> = n.inputs.iter().map(|&t| g.tensor(t)).collect();
        let x = SymbolicIn {
            inputs: &inputs,
            dims: &dims,
            output: g.tensor(n.output),
            min: s.min,
            max: s.max,
        };
        let output = match n.op.def().symbolic(&x) {
            Carry::Rows(output) => output,
            Carry::Bounded {
                masks,
                mean_dims,
                output,
            } => {
                carried.bounded.push(Bounded {
                    node: NodeId(i),
                    masks,
                    mean_dims,
                });
                output
            }
            Carry::Refused(what) => {
                return Err(GraphError::Symbolic {
                    node: n.name.clone(),
                    op: n.op.name(),
                    symbol: s.name.clone(),
                    what,
                });
            }
        };
        if !output.is_empty() {
            carried.dims.insert(n.output, output);
        }
    }
    Ok(carried)
}

/// One symbol of a bound graph: its range, the input its value goes in, and where the
/// original graph's inputs and outputs hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundSymbol {
    pub name: String,
    pub min: usize,
    pub max: usize,
    /// The bound graph's input (its index among the inputs, after the original ones)
    /// that takes the value: `[1]`, f32.
    pub value_input: usize,
    /// Per input of the original graph, in order, its dims that are the symbol.
    pub inputs: Vec<Vec<SymDim>>,
    /// Per output, in order.
    pub outputs: Vec<Vec<SymDim>>,
}

/// The graph [`bind`] made, with what a run needs to pad its inputs and cut its outputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    /// One per symbol of the original graph, in its order; empty for a static graph.
    pub symbols: Vec<BoundSymbol>,
}

/// `g` with every symbol bound to a value input (see the module): the graph of static
/// shapes the compiler compiles once, and how a run at any length uses it. A graph
/// without symbols comes back as it was.
pub fn bind(g: &Graph) -> Result<(Graph, Binding), GraphError> {
    let mut h = g.clone();
    h.symbols.clear();
    let originals = g.inputs.len();
    let mut binding = Binding::default();
    for s in &g.symbols {
        let carried = carry(&h, s)?;
        let name = value_input_name(&s.name);
        if h.tensors.iter().any(|t| t.name == name) {
            return Err(GraphError::DuplicateName(name));
        }
        let value = h.add_tensor(Tensor {
            name,
            shape: vec![1],
            dtype: DType::F32,
            layout: Layout::RowMajor,
            data: None,
        });
        h.inputs.push(value);
        let dims_of = |t: &TensorId| carried.dims.get(t).cloned().unwrap_or_default();
        binding.symbols.push(BoundSymbol {
            name: s.name.clone(),
            min: s.min,
            max: s.max,
            value_input: h.inputs.len() - 1,
            inputs: g.inputs[..originals].iter().map(dims_of).collect(),
            outputs: g.outputs.iter().map(dims_of).collect(),
        });
        Masks {
            g: &mut h,
            symbol: s,
            value,
            valid: HashMap::new(),
            consts: HashMap::new(),
            scale: None,
        }
        .bound(&carried)?;
    }
    h.validate()?;
    Ok((h, binding))
}

/// The rewrite of one symbol's bounded nodes, with the masks and constants it made
/// (shared by every node that needs the same).
struct Masks<'a> {
    g: &'a mut Graph,
    symbol: &'a Symbol,
    value: TensorId,
    /// The bool mask of positions below n, by the masked tensor's shape and dims.
    valid: HashMap<(Vec<usize>, Vec<SymDim>), TensorId>,
    /// Scalar constants by name.
    consts: HashMap<String, TensorId>,
    /// `max / n`, f32, once made.
    scale: Option<TensorId>,
}

impl Masks<'_> {
    /// Rewrites every bounded node of `carried`, nodes kept in an order where every
    /// input is computed before its use (each mask just before its reader).
    fn bound(&mut self, carried: &Carried) -> Result<(), GraphError> {
        let bounded: HashMap<usize, &Bounded> =
            carried.bounded.iter().map(|b| (b.node.0, b)).collect();
        let nodes = std::mem::take(&mut self.g.nodes);
        for (i, mut node) in nodes.into_iter().enumerate() {
            let Some(&&Bounded {
                ref masks,
                mean_dims,
                ..
            }) = bounded.get(&i)
            else {
                self.g.nodes.push(node);
                continue;
            };
            for &(input, fill) in masks {
                let x = node.inputs[input];
                let dims = carried.dims.get(&x).cloned().unwrap_or_default();
                node.inputs[input] = self.masked(&node, input, x, &dims, fill)?;
            }
            if mean_dims == 0 {
                self.g.nodes.push(node);
                continue;
            }
            // The mean over max positions, times (max / n) per symbolic dim it reduced.
            let out = node.output;
            let mut unscaled = self.g.tensor(out).clone();
            unscaled.name = format!("{}.unscaled", unscaled.name);
            let raw = self.g.add_tensor(unscaled);
            node.output = raw;
            let name = node.name.clone();
            self.g.nodes.push(node);
            let mut at = raw;
            for k in 0..mean_dims {
                let scale = self.scale(self.g.tensor(out).dtype)?;
                let mul = Op::Binary(Binary::Mul);
                if k + 1 == mean_dims {
                    self.push_into(format!("{name}.per_length"), mul, vec![at, scale], out)?;
                } else {
                    at = self.g.add_node(
                        format!("{name}.per_length_{k}"),
                        mul,
                        vec![at, scale],
                        format!("{name}.per_length_{k}"),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// `Where(valid, x, fill)`: input `input` of `node` past the run's length replaced.
    fn masked(
        &mut self,
        node: &Node,
        input: usize,
        x: TensorId,
        dims: &[SymDim],
        fill: Fill,
    ) -> Result<TensorId, GraphError> {
        let t = self.g.tensor(x).clone();
        if !t.dtype.is_float() {
            return Err(GraphError::Symbolic {
                node: node.name.clone(),
                op: node.op.name(),
                symbol: self.symbol.name.clone(),
                what: format!(
                    "input {input} `{}` is {:?}: weft masks float tensors only",
                    t.name, t.dtype
                ),
            });
        }
        let valid = self.valid(&t.shape, dims)?;
        let (value, what) = match fill {
            Fill::Zero => (0.0, "zero"),
            Fill::Lowest => (f32::MIN, "lowest"),
            Fill::Highest => (f32::MAX, "highest"),
        };
        let fill = self.scalar(&format!("{what}.{:?}", t.dtype), value, t.dtype);
        self.g.add_node(
            format!("{}.{}_bounded_{input}", node.name, self.symbol.name),
            Op::Where,
            vec![valid, x, fill],
            format!("{}.{}_bounded_{input}", node.name, self.symbol.name),
        )
    }

    /// The bool mask, of `shape`'s rank, true where every dim of `dims` is at a position
    /// below the run's value.
    fn valid(&mut self, shape: &[usize], dims: &[SymDim]) -> Result<TensorId, GraphError> {
        let key = (shape.to_vec(), dims.to_vec());
        if let Some(&t) = self.valid.get(&key) {
            return Ok(t);
        }
        let (sym, max) = (self.symbol.name.clone(), self.symbol.max);
        let mut valid: Option<TensorId> = None;
        for d in dims {
            let size = shape[d.axis];
            let mut at = vec![1; shape.len()];
            at[d.axis] = size;
            let positions =
                ArrayD::from_shape_fn(IxDyn(&at), |ix| ((ix[d.axis] / d.inner) % max) as f32);
            let name = format!("symbol.{sym}.positions.{:?}.{}.{}", at, d.axis, d.inner)
                .replace([' ', '[', ']'], "")
                .replace(',', "x");
            let positions = match self.consts.get(&name) {
                Some(&p) => p,
                None => {
                    let p = self.g.add_tensor(Tensor {
                        name: name.clone(),
                        shape: at,
                        dtype: DType::F32,
                        layout: Layout::RowMajor,
                        data: Some(Arc::new(positions)),
                    });
                    self.consts.insert(name.clone(), p);
                    p
                }
            };
            let below_name = format!("{name}.below.{}", self.valid.len());
            let below = self.g.add_node(
                below_name.clone(),
                Op::Binary(Binary::Less),
                vec![positions, self.value],
                below_name,
            )?;
            valid = Some(match valid {
                None => below,
                Some(v) => self.g.add_node(
                    format!("{name}.and.{}", self.valid.len()),
                    Op::Binary(Binary::And),
                    vec![v, below],
                    format!("{name}.and.{}", self.valid.len()),
                )?,
            });
        }
        let valid = valid.ok_or_else(|| GraphError::Symbolic {
            node: sym.clone(),
            op: "mask",
            symbol: sym.clone(),
            what: "a mask of no symbolic dims".into(),
        })?;
        self.valid.insert(key, valid);
        Ok(valid)
    }

    /// `max / n` in `dtype`, made once.
    fn scale(&mut self, dtype: DType) -> Result<TensorId, GraphError> {
        let scale = match self.scale {
            Some(s) => s,
            None => {
                let max = self.scalar("max", self.symbol.max as f32, DType::F32);
                let name = format!("symbol.{}.max_per_length", self.symbol.name);
                let s = self.g.add_node(
                    name.clone(),
                    Op::Binary(Binary::Div),
                    vec![max, self.value],
                    name,
                )?;
                self.scale = Some(s);
                s
            }
        };
        if dtype == DType::F32 {
            return Ok(scale);
        }
        let name = format!("symbol.{}.max_per_length.{dtype:?}", self.symbol.name);
        if let Some(&t) = self.consts.get(&name) {
            return Ok(t);
        }
        let t = self.g.add_node(
            name.clone(),
            Op::Cast(Cast { to: dtype }),
            vec![scale],
            name.clone(),
        )?;
        self.consts.insert(name, t);
        Ok(t)
    }

    /// A `[1]` constant, made once per name.
    fn scalar(&mut self, what: &str, value: f32, dtype: DType) -> TensorId {
        let name = format!("symbol.{}.{what}", self.symbol.name);
        if let Some(&t) = self.consts.get(&name) {
            return t;
        }
        let t = self.g.add_tensor(Tensor {
            name: name.clone(),
            shape: vec![1],
            dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(ArrayD::from_elem(IxDyn(&[1]), value))),
        });
        self.consts.insert(name, t);
        t
    }

    /// A node computing `op` of `inputs` into the existing tensor `output` (its shape and
    /// dtype what the op infers).
    fn push_into(
        &mut self,
        name: String,
        op: Op,
        inputs: Vec<TensorId>,
        output: TensorId,
    ) -> Result<(), GraphError> {
        let ins: Vec<&Tensor> = inputs.iter().map(|&t| self.g.tensor(t)).collect();
        let (shape, dtype) = op.def().infer(&ins).map_err(|what| GraphError::Shape {
            node: name.clone(),
            op: op.name(),
            what,
        })?;
        let out = self.g.tensor(output);
        if shape != out.shape || dtype != out.dtype {
            return Err(GraphError::Shape {
                node: name,
                op: op.name(),
                what: format!(
                    "gives {dtype:?} {shape:?}, the tensor it replaces is {:?} {:?}",
                    out.dtype, out.shape
                ),
            });
        }
        self.g.nodes.push(Node {
            name,
            op,
            inputs,
            output,
        });
        Ok(())
    }
}

/// `x` (at length `n` along `dims`) padded with zeros to the maximum `max`: element at
/// symbol position `p < n` goes to position `p` of the padded axis.
pub fn pad(x: &ArrayD<f32>, dims: &[SymDim], n: usize, max: usize) -> ArrayD<f32> {
    let mut shape = x.shape().to_vec();
    for d in dims {
        shape[d.axis] = shape[d.axis] / n * max;
    }
    let mut out = ArrayD::zeros(IxDyn(&shape));
    for (ix, &v) in x.indexed_iter() {
        let mut at = ndarray::Dimension::slice(&ix).to_vec();
        for d in dims {
            at[d.axis] = widen(at[d.axis], d.inner, n, max);
        }
        out[IxDyn(&at)] = v;
    }
    out
}

/// `y` (at the maximum `max`) cut back to length `n` along `dims`: what a graph at `n`
/// computes, the rows past `n` dropped.
pub fn cut(y: &ArrayD<f32>, dims: &[SymDim], n: usize, max: usize) -> ArrayD<f32> {
    let mut shape = y.shape().to_vec();
    for d in dims {
        shape[d.axis] = shape[d.axis] / max * n;
    }
    ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
        let mut at = ndarray::Dimension::slice(&ix).to_vec();
        for d in dims {
            at[d.axis] = widen(at[d.axis], d.inner, n, max);
        }
        y[IxDyn(&at)]
    })
}

/// Index `i` of an axis holding the symbol at length `n` (`outer · n · inner`) as the
/// index of the same element at length `max`.
fn widen(i: usize, inner: usize, n: usize, max: usize) -> usize {
    let (outer, rest) = (i / (n * inner), i % (n * inner));
    outer * max * inner + rest
}

#[cfg(test)]
#[path = "symbolic_tests.rs"]
mod tests;

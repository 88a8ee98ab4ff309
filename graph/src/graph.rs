//! [`Graph`]: tensors with static shapes and dtypes, nodes of typed ops, the model's
//! inputs and outputs; weights held by value. Printed one node a line (`Display`), the way
//! `weft model graph` shows it.

use std::collections::HashMap;
use std::fmt;

use weft_ir::dtype::DType;

pub use crate::error::GraphError;
use crate::op::Op;
pub use crate::tensor::{Layout, Tensor, TensorId};

/// A node of a graph, by index into [`Graph::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

/// One operator applied to input tensors, giving one output tensor.
#[derive(Clone, Debug)]
pub struct Node {
    /// Unique within the graph (the ONNX node's name, or one made up).
    pub name: String,
    pub op: Op,
    pub inputs: Vec<TensorId>,
    pub output: TensorId,
}

/// A model: tensors, nodes in an order where every input is computed before its use,
/// and which tensors come in and go out.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub name: String,
    pub tensors: Vec<Tensor>,
    pub nodes: Vec<Node>,
    pub inputs: Vec<TensorId>,
    pub outputs: Vec<TensorId>,
    /// Dimensions known only at run time, each with its range; the graph is built at
    /// each one's maximum (`crate::symbolic`). Empty for a graph of static shapes.
    pub symbols: Vec<Symbol>,
}

/// A dimension whose size a run gives (a sequence length), between `min` and `max`:
/// the graph's shapes hold `max` there, and `crate::symbolic` carries it from the graph
/// inputs' axes that are it to every tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// The name the model gives it (ONNX's `dim_param`: `sequence`).
    pub name: String,
    pub min: usize,
    pub max: usize,
    /// The graph inputs' axes that are this symbol.
    pub dims: Vec<(TensorId, usize)>,
    /// Constants built at the maximum whose entries along an axis are numbered by the
    /// symbol's positions, whatever the run's length (position ids, a causal mask, a
    /// position table's first rows, computed at import from the symbol's size): they
    /// carry it from that axis as an input does, and a run at `n` reads their first `n`.
    pub rows: Vec<(TensorId, usize)>,
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} \u{2208} {}..{}, compiled at {}",
            self.name, self.min, self.max, self.max
        )
    }
}

impl Graph {
    /// An empty graph named `name`.
    pub fn new(name: impl Into<String>) -> Graph {
        Graph {
            name: name.into(),
            ..Graph::default()
        }
    }

    /// The tensor `id`.
    ///
    /// # Panics
    /// On an id from another graph (ids of a graph are always in range).
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id.0]
    }

    /// Adds a tensor (no node computes it yet) and returns its id.
    pub fn add_tensor(&mut self, tensor: Tensor) -> TensorId {
        self.tensors.push(tensor);
        TensorId(self.tensors.len() - 1)
    }

    /// Appends a node computing a new tensor named `output_name` from `inputs`, its shape
    /// and dtype inferred.
    pub fn add_node(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: Vec<TensorId>,
        output_name: impl Into<String>,
    ) -> Result<TensorId, GraphError> {
        let name = name.into();
        for &i in &inputs {
            if i.0 >= self.tensors.len() {
                return Err(GraphError::NoTensor(i.0));
            }
        }
        let ins: Vec<&Tensor> = inputs.iter().map(|&i| self.tensor(i)).collect();
        let (shape, dtype) = op.def().infer(&ins).map_err(|what| GraphError::Shape {
            node: name.clone(),
            op: op.name(),
            what,
        })?;
        let output = self.add_tensor(Tensor {
            name: output_name.into(),
            shape,
            dtype,
            layout: Layout::RowMajor,
            data: None,
        });
        self.nodes.push(Node {
            name,
            op,
            inputs,
            output,
        });
        Ok(output)
    }

    /// Which node computes each tensor.
    pub fn producers(&self) -> HashMap<TensorId, NodeId> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.output, NodeId(i)))
            .collect()
    }

    /// The nodes that read each tensor, in node order.
    pub fn consumers(&self) -> HashMap<TensorId, Vec<NodeId>> {
        let mut out: HashMap<TensorId, Vec<NodeId>> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for &t in &n.inputs {
                let list = out.entry(t).or_default();
                if list.last() != Some(&NodeId(i)) {
                    list.push(NodeId(i));
                }
            }
        }
        out
    }

    /// Checks that names are unique, every node reads only tensors defined before it
    /// (inputs, weights, earlier outputs) and every output is computed or given.
    pub fn validate(&self) -> Result<(), GraphError> {
        let mut names = std::collections::HashSet::new();
        for t in &self.tensors {
            if !names.insert(t.name.as_str()) {
                return Err(GraphError::DuplicateName(t.name.clone()));
            }
        }
        let mut defined: Vec<bool> = self.tensors.iter().map(Tensor::is_constant).collect();
        for &i in &self.inputs {
            *defined.get_mut(i.0).ok_or(GraphError::NoTensor(i.0))? = true;
        }
        for n in &self.nodes {
            for &i in &n.inputs {
                if !*defined.get(i.0).ok_or(GraphError::NoTensor(i.0))? {
                    return Err(GraphError::Undefined {
                        node: n.name.clone(),
                        tensor: self.tensor(i).name.clone(),
                    });
                }
            }
            *defined
                .get_mut(n.output.0)
                .ok_or(GraphError::NoTensor(n.output.0))? = true;
        }
        if self.outputs.is_empty() {
            return Err(GraphError::NoOutputs);
        }
        for &o in &self.outputs {
            if !*defined.get(o.0).ok_or(GraphError::NoTensor(o.0))? {
                return Err(GraphError::UncomputedOutput(self.tensor(o).name.clone()));
            }
        }
        Ok(())
    }

    /// Checks that every tensor's element count fits weft's i32 indices, naming the
    /// first that does not and what makes it (an input, a weight, or which node): what
    /// must hold before any buffer is allocated or any input drawn for the graph.
    /// Also refuses an empty input or computed tensor (a dimension of 0), which no kernel
    /// computes: [`Graph::check_element_counts`] is the bound alone. An empty input that
    /// no node reads as data and no output is passes (CastLike's `like`, of which only the
    /// element type counts: ONNX's tests give it no elements).
    pub fn check_sizes(&self) -> Result<(), GraphError> {
        self.check_element_counts()?;
        let producers = self.producers();
        let consumers = self.consumers();
        for (i, t) in self.tensors.iter().enumerate() {
            if t.is_constant() || !t.shape.contains(&0) {
                continue;
            }
            let id = TensorId(i);
            let unread = !consumers.contains_key(&id) && !self.outputs.contains(&id);
            if unread && self.inputs.contains(&id) {
                continue;
            }
            return Err(GraphError::Empty {
                tensor: t.name.clone(),
                made_by: self.made_by(&producers, TensorId(i)),
                shape: t.shape.clone(),
            });
        }
        Ok(())
    }

    /// What makes tensor `t`, in words: an input, a weight, or which node.
    fn made_by(&self, producers: &HashMap<TensorId, NodeId>, t: TensorId) -> String {
        match producers.get(&t) {
            Some(n) => {
                let node = &self.nodes[n.0];
                format!("output of node `{}` ({})", node.name, node.op.name())
            }
            None if self.tensor(t).is_constant() => "a weight".to_string(),
            None => "an input of the graph".to_string(),
        }
    }

    /// Checks that every tensor's element count fits weft's i32 indices (what the float64
    /// reference needs before it allocates).
    pub fn check_element_counts(&self) -> Result<(), GraphError> {
        let producers = self.producers();
        for (i, t) in self.tensors.iter().enumerate() {
            let numel = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if numel.is_some_and(|n| n <= i32::MAX as usize) {
                continue;
            }
            let elements = match numel {
                Some(n) => n.to_string(),
                None => {
                    let product = t.shape.iter().map(|&d| d as f64).product::<f64>();
                    format!("about {product:.3e}")
                }
            };
            return Err(GraphError::TooLarge {
                tensor: t.name.clone(),
                made_by: self.made_by(&producers, TensorId(i)),
                shape: t.shape.clone(),
                elements,
            });
        }
        Ok(())
    }

    /// Parameters: elements of every weight and constant.
    pub fn parameter_count(&self) -> usize {
        self.tensors
            .iter()
            .filter(|t| t.is_constant())
            .map(Tensor::numel)
            .sum()
    }

    /// Multiply-adds to evaluate the graph (each op's [`crate::op::OpDef::macs`]): what
    /// decides whether the float64 reference is affordable.
    pub fn macs(&self) -> f64 {
        self.nodes
            .iter()
            .map(|n| {
                let inputs: Vec<&Tensor> = n.inputs.iter().map(|&i| self.tensor(i)).collect();
                n.op.def().macs(&inputs, self.tensor(n.output))
            })
            .sum()
    }

    /// How many nodes apply each op (`Conv` → 53), in name order.
    pub fn op_counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts: std::collections::BTreeMap<&'static str, usize> = Default::default();
        for n in &self.nodes {
            *counts.entry(n.op.name()).or_default() += 1;
        }
        counts.into_iter().collect()
    }
}

/// `f32[1,64,56,56]`.
pub(crate) fn type_text(t: &Tensor) -> String {
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    let layout = match t.layout {
        Layout::RowMajor => "",
        Layout::ChannelsLast => " nhwc",
        Layout::FilterCrsk => " crsk",
        Layout::FilterRsck => " rsck",
        Layout::Transposed => " transposed",
    };
    format!("{}[{}]{layout}", t.dtype.tvm_name_short(), dims.join(","))
}

/// Short dtype names for printing.
trait ShortName {
    fn tvm_name_short(&self) -> &'static str;
}

impl ShortName for DType {
    fn tvm_name_short(&self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "graph {} ({} nodes, {} parameters)",
            self.name,
            self.nodes.len(),
            self.parameter_count()
        )?;
        for s in &self.symbols {
            writeln!(f, "  symbol {s}")?;
        }
        for &i in &self.inputs {
            let t = self.tensor(i);
            writeln!(f, "  input  %{}: {}", t.name, type_text(t))?;
        }
        for n in &self.nodes {
            let args: Vec<String> = n
                .inputs
                .iter()
                .map(|&i| format!("%{}", self.tensor(i).name))
                .collect();
            let out = self.tensor(n.output);
            writeln!(
                f,
                "  %{} = {}({}): {}    # {}",
                out.name,
                n.op,
                args.join(", "),
                type_text(out),
                n.name
            )?;
        }
        let outs: Vec<String> = self
            .outputs
            .iter()
            .map(|&o| format!("%{}", self.tensor(o).name))
            .collect();
        write!(f, "  output {}", outs.join(", "))
    }
}

//! ONNX → weft graph: the model, its opset, inputs, initializers and outputs here; the
//! ops in [`ops`].

mod attrs;
pub mod cache;
mod external;
mod fold;
mod ops;
mod taint;
pub mod tensor;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use prost::Message;
use weft_graph::{Graph, Layout, Tensor, TensorId};

use crate::error::ImportError;
use crate::proto::tensor_shape_proto::dimension;
use crate::proto::type_proto;
use crate::proto::{GraphProto, ModelProto, ValueInfoProto};
use crate::versions::{MAX_OPSET, MIN_OPSET};
use tensor::Const;

/// How to import: the sizes of the model's symbolic dimensions, and graph inputs whose
/// values are known at import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Symbolic dimensions (`dim_param`) by name → their sizes.
    pub bindings: HashMap<String, usize>,
    /// Binds a symbolic leading dimension of every input that `bindings` leaves unbound.
    pub batch: Option<usize>,
    /// Graph inputs bound to a value at import, by name: each becomes a constant (as an
    /// initializer would be) and is no longer an input of the graph, so that an input in
    /// a shape-like position (`axes`, `starts`, `split`, `k`, `shape`, `pads`,
    /// `repeats`, ...) folds. The value must have the input's element kind (float for a
    /// float input, integer for an integer one, bool for bool), its rank and its static
    /// sizes (a symbolic size takes the value's, or must agree with `bindings`); a name
    /// that is no graph input is refused ([`ImportError::Constant`] names it).
    pub constants: HashMap<String, Const>,
    /// Symbolic dimensions (`dim_param`) by name → the range of sizes a run may give
    /// (`sequence` → 1..=128): the graph is built at the range's end, and each becomes a
    /// [`weft_graph::Symbol`] a compiled model takes at run time (`weft_graph::symbolic`).
    /// A name here wins over `bindings`.
    pub symbols: HashMap<String, std::ops::RangeInclusive<usize>>,
    /// Import a decoder exported with past keys and values (`past_key_values.*` inputs,
    /// `present.*` outputs: Hugging Face optimum's form) as one generation step over KV
    /// caches of this capacity on the device ([`cache`]); `bindings` size its batch and
    /// its new tokens (`input_ids`' dims).
    pub cache: Option<cache::CacheOptions>,
}

/// Reads the ONNX model at `path` into a weft graph.
pub fn load(path: &Path, opts: &ImportOptions) -> Result<Graph, ImportError> {
    let bytes = read_bounded(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if bytes.is_empty() {
        return Err(ImportError::NotOnnx("the file is empty".into()));
    }
    let model = ModelProto::decode(&bytes[..]).map_err(|e| ImportError::NotOnnx(e.to_string()))?;
    // External data is read from beside the model.
    from_model_in(&model, opts, path.parent())
}

/// The bytes of the regular file `path`, no more than its length when opened: a device
/// (`/dev/zero`), a FIFO or a folder named as a model is refused, never read without end.
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a device, a FIFO or a folder): a model is read from a file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(meta.len()).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Reads an ONNX model from its serialized bytes into a weft graph.
pub fn from_bytes(bytes: &[u8], opts: &ImportOptions) -> Result<Graph, ImportError> {
    if bytes.is_empty() {
        return Err(ImportError::NotOnnx("the file is empty".into()));
    }
    let model = ModelProto::decode(bytes).map_err(|e| ImportError::NotOnnx(e.to_string()))?;
    from_model(&model, opts)
}

/// Imports a decoded model (one whose initializers keep their data in external files is
/// refused: [`load`] reads them from beside the model's file).
pub fn from_model(model: &ModelProto, opts: &ImportOptions) -> Result<Graph, ImportError> {
    from_model_in(model, opts, None)
}

/// Imports a decoded model whose external data lies in `dir`.
fn from_model_in(
    model: &ModelProto,
    opts: &ImportOptions,
    dir: Option<&Path>,
) -> Result<Graph, ImportError> {
    let Some(graph) = &model.graph else {
        return Err(ImportError::NoGraph);
    };
    let opset = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .ok_or(ImportError::NoOpset)?;
    if !(MIN_OPSET..=MAX_OPSET).contains(&opset) {
        return Err(ImportError::Opset(opset));
    }
    let name = if graph.name.is_empty() {
        "model"
    } else {
        &graph.name
    };
    let mut im = Importer {
        opts,
        opset,
        graph: Graph::new(name),
        values: HashMap::new(),
        consts: HashMap::new(),
        used: used_names(graph),
        taint: HashMap::new(),
        konst_reads: std::cell::RefCell::new(Vec::new()),
        refused: None,
        cache: None,
    };
    for t in &graph.initializer {
        let t = external::resolve(t, dir)?;
        im.consts
            .insert(t.name.clone(), tensor::decode(&t, &t.name)?);
    }
    if let Some(s) = graph.sparse_initializer.first() {
        let name = s.values.as_ref().map_or("?", |v| v.name.as_str());
        return Err(ImportError::Tensor {
            tensor: name.to_string(),
            what: "sparse initializers are not supported".into(),
        });
    }
    let mut unknown: Vec<&String> = opts
        .constants
        .keys()
        .filter(|name| !graph.input.iter().any(|vi| &vi.name == *name))
        .collect();
    unknown.sort();
    if let Some(name) = unknown.first() {
        let inputs: Vec<&str> = graph
            .input
            .iter()
            .filter(|vi| !im.consts.contains_key(&vi.name))
            .map(|vi| vi.name.as_str())
            .collect();
        return Err(ImportError::Constant {
            input: name.to_string(),
            what: format!(
                "the model has no graph input of that name (its inputs: {})",
                if inputs.is_empty() {
                    "none".to_string()
                } else {
                    inputs.join(", ")
                }
            ),
        });
    }
    if let Some(c) = &opts.cache {
        let inputs: Vec<&ValueInfoProto> = graph
            .input
            .iter()
            .filter(|vi| !im.consts.contains_key(&vi.name))
            .collect();
        im.cache_inputs(&inputs, c)?;
    }
    if opts.cache.is_none() {
        im.past_unbound(&graph.input)?;
    }
    for vi in graph.input.iter().filter(|_| opts.cache.is_none()) {
        if let Some(c) = opts.constants.get(&vi.name) {
            // A bound input; an initializer listed as an input (its default) is replaced.
            let c = im.bound_constant(vi, c)?;
            im.consts.insert(vi.name.clone(), c);
        } else if !im.consts.contains_key(&vi.name) {
            // Older models list initializers among the inputs too; they stay constants.
            im.input(vi)?;
        }
    }
    for (i, node) in graph.node.iter().enumerate() {
        im.node(node, i)?;
    }
    if opts.cache.is_some() {
        im.cache_outputs(&graph.output)?;
    }
    for vi in graph.output.iter().filter(|_| opts.cache.is_none()) {
        let id = im
            .value(&vi.name)
            .ok_or_else(|| ImportError::MissingOutput(vi.name.clone()))?;
        im.graph.outputs.push(id);
    }
    for vi in graph.output.iter().chain(&graph.value_info) {
        im.check_stated_shape(vi)?;
    }
    if let Some(e) = im.refused.take() {
        return Err(e);
    }
    im.graph.validate()?;
    im.check_constants()?;
    Ok(im.graph)
}

/// Every name some node reads or the graph puts out: an op's extra output (a mask, pool
/// indices) is refused only where one of these uses it.
fn used_names(graph: &GraphProto) -> HashSet<String> {
    graph
        .node
        .iter()
        .flat_map(|n| n.input.iter())
        .chain(graph.output.iter().map(|o| &o.name))
        .filter(|n| !n.is_empty())
        .cloned()
        .collect()
}

/// The import of one model under way.
pub(crate) struct Importer<'a> {
    opts: &'a ImportOptions,
    /// The default domain's opset.
    opset: i64,
    graph: Graph,
    /// Names that are graph tensors: inputs, node outputs, constants in use.
    values: HashMap<String, TensorId>,
    /// Constants (initializers, `Constant` outputs), added to the graph as weights only
    /// where an op reads them as data: shape and bound inputs are read here and vanish.
    consts: HashMap<String, Const>,
    used: HashSet<String>,
    /// How each folded constant that depends on a symbol depends on it (`taint`).
    taint: HashMap<String, taint::Taint>,
    /// The constants the node being imported read as shapes or bounds: input index, name.
    konst_reads: std::cell::RefCell<Vec<(usize, String)>>,
    /// The first use of a constant computed from a symbol that weft cannot keep right at
    /// every length (`taint`): the import's error.
    refused: Option<ImportError>,
    /// A decoder's step over KV caches under way ([`cache`]).
    cache: Option<cache::CacheState>,
}

impl Importer<'_> {
    /// The graph tensor called `name`, a constant becoming a weight on first use.
    fn value(&mut self, name: &str) -> Option<TensorId> {
        if let Some(&id) = self.values.get(name) {
            return Some(id);
        }
        // A constant folded from a decoder's past length is computed on the device.
        match self.position_value(name) {
            Ok(Some(id)) => return Some(id),
            Ok(None) => {}
            Err(e) => {
                self.refused.get_or_insert(e);
                return None;
            }
        }
        let c = self.consts.get(name)?;
        let (values, dtype) = c.to_float();
        let id = self.graph.add_tensor(Tensor {
            name: name.to_string(),
            shape: c.dims.clone(),
            dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(values)),
        });
        self.values.insert(name.to_string(), id);
        self.taint_as_data(name, id);
        Some(id)
    }

    /// A graph input, its symbolic dimensions bound.
    fn input(&mut self, vi: &ValueInfoProto) -> Result<(), ImportError> {
        let err = |what: String| ImportError::Input {
            input: vi.name.clone(),
            what,
        };
        let Some(type_proto::Value::TensorType(tt)) =
            vi.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            return Err(err(
                "is not a tensor (sequences, maps and optionals are not supported)".into(),
            ));
        };
        let Some(dtype) = tensor::graph_dtype(tt.elem_type) else {
            return Err(err(format!(
                "is {}: weft's graphs take float, float16, double, integer or bool inputs",
                tensor::type_name(tt.elem_type)
            )));
        };
        let Some(shape) = &tt.shape else {
            return Err(err("states no shape: weft needs its rank and sizes".into()));
        };
        let mut dims = Vec::with_capacity(shape.dim.len());
        for (index, d) in shape.dim.iter().enumerate() {
            let size = match &d.value {
                Some(dimension::Value::DimValue(v)) if *v >= 0 => Some(*v as usize),
                Some(dimension::Value::DimValue(v)) => {
                    return Err(err(format!("dimension {index} is {v}")));
                }
                Some(dimension::Value::DimParam(p)) => self.bound(p, index),
                None => self.bound("", index),
            };
            if let Some(dimension::Value::DimParam(p)) = &d.value
                && let Some(range) = self.opts.symbols.get(p)
            {
                self.symbol_dim(p, range, self.graph.tensors.len(), index);
            }
            let dim = match &d.value {
                Some(dimension::Value::DimParam(p)) => p.clone(),
                _ => "?".to_string(),
            };
            dims.push(size.ok_or_else(|| ImportError::UnboundDim {
                input: vi.name.clone(),
                index,
                dim,
            })?);
        }
        // Sizes past 2^31 per dimension or 2^40 elements in all are no real model's, and
        // would overflow window arithmetic downstream.
        if dims.iter().any(|&d| d > 1 << 31)
            || dims
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .is_none_or(|n| n > 1 << 40)
        {
            return Err(err(format!("shape {dims:?} is too large")));
        }
        let id = self.graph.add_tensor(Tensor {
            name: vi.name.clone(),
            shape: dims,
            dtype,
            layout: Layout::RowMajor,
            data: None,
        });
        self.graph.inputs.push(id);
        self.values.insert(vi.name.clone(), id);
        Ok(())
    }

    /// `c`, the value `ImportOptions::constants` binds input `vi` to, checked against
    /// what the model states of the input (element kind, rank, static and bound sizes)
    /// and held as the input's type holds it (float16 as F16).
    fn bound_constant(&self, vi: &ValueInfoProto, c: &Const) -> Result<Const, ImportError> {
        use crate::proto::tensor_proto::DataType;
        use tensor::ConstData;
        let err = |what: String| ImportError::Constant {
            input: vi.name.clone(),
            what,
        };
        let Some(type_proto::Value::TensorType(tt)) =
            vi.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            return Err(err(
                "the input is not a tensor (sequences, maps and optionals are not supported)"
                    .into(),
            ));
        };
        let numel = c.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let len = match &c.data {
            ConstData::Float { values, .. } => {
                if values.shape() != c.dims.as_slice() {
                    return Err(err(format!(
                        "the value's array has shape {:?}, its dims say {:?}",
                        values.shape(),
                        c.dims
                    )));
                }
                values.len()
            }
            ConstData::Int(v) | ConstData::Bool(v) => v.len(),
        };
        if numel != Some(len) {
            return Err(err(format!(
                "the value holds {len} elements, its dims {:?} take {}",
                c.dims,
                numel.map_or("too many".to_string(), |n| n.to_string())
            )));
        }
        let ty = tensor::type_name(tt.elem_type);
        // The integer range of the input's type, or the kind of value it takes.
        let range: Option<(i64, i64)> = match DataType::try_from(tt.elem_type) {
            Ok(DataType::Int8) => Some((i8::MIN.into(), i8::MAX.into())),
            Ok(DataType::Uint8) => Some((0, u8::MAX.into())),
            Ok(DataType::Int16) => Some((i16::MIN.into(), i16::MAX.into())),
            Ok(DataType::Uint16) => Some((0, u16::MAX.into())),
            Ok(DataType::Int32) => Some((i32::MIN.into(), i32::MAX.into())),
            Ok(DataType::Uint32) => Some((0, u32::MAX.into())),
            Ok(DataType::Int64) => Some((i64::MIN, i64::MAX)),
            Ok(DataType::Uint64) => Some((0, i64::MAX)),
            _ => None,
        };
        let data = match (&c.data, DataType::try_from(tt.elem_type), range) {
            (
                ConstData::Float { values, .. },
                Ok(t @ (DataType::Float | DataType::Float16 | DataType::Double)),
                _,
            ) => ConstData::Float {
                values: values.clone(),
                dtype: if t == DataType::Float16 {
                    weft_ir::dtype::DType::F16
                } else {
                    weft_ir::dtype::DType::F32
                },
            },
            (ConstData::Int(v), _, Some((lo, hi))) => {
                if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !(lo..=hi).contains(*x)) {
                    return Err(err(format!("element {i} is {x}, outside {ty}")));
                }
                ConstData::Int(v.clone())
            }
            (ConstData::Bool(v), Ok(DataType::Bool), _) => {
                if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !matches!(**x, 0 | 1)) {
                    return Err(err(format!("element {i} is {x}, not a bool (0 or 1)")));
                }
                ConstData::Bool(v.clone())
            }
            (data, _, _) => {
                let given = match data {
                    ConstData::Float { .. } => "float",
                    ConstData::Int(_) => "integer",
                    ConstData::Bool(_) => "bool",
                };
                return Err(err(format!(
                    "the input is {ty}, the value {given}: bind a float input to floats, an integer input to integers, a bool input to bools"
                )));
            }
        };
        if let Some(shape) = &tt.shape {
            let stated: Vec<String> = shape
                .dim
                .iter()
                .map(|d| match &d.value {
                    Some(dimension::Value::DimValue(v)) => v.to_string(),
                    Some(dimension::Value::DimParam(p)) => p.clone(),
                    None => "?".into(),
                })
                .collect();
            let agrees = shape.dim.len() == c.dims.len()
                && shape
                    .dim
                    .iter()
                    .enumerate()
                    .zip(&c.dims)
                    .all(|((i, d), &n)| match &d.value {
                        Some(dimension::Value::DimValue(v)) => usize::try_from(*v) == Ok(n),
                        Some(dimension::Value::DimParam(p)) => {
                            self.bound(p, i).is_none_or(|b| b == n)
                        }
                        None => self.bound("", i).is_none_or(|b| b == n),
                    });
            if !agrees {
                return Err(err(format!(
                    "the model states shape [{}], the value has {:?}",
                    stated.join(", "),
                    c.dims
                )));
            }
        }
        Ok(Const {
            dims: c.dims.clone(),
            data,
        })
    }

    /// The size of symbolic dimension `param` at `index` of an input, if bound: a
    /// symbol's greatest.
    fn bound(&self, param: &str, index: usize) -> Option<usize> {
        if let Some(range) = self.opts.symbols.get(param) {
            return Some(*range.end());
        }
        self.opts
            .bindings
            .get(param)
            .copied()
            .or(if index == 0 { self.opts.batch } else { None })
    }

    /// Records axis `axis` of the input about to be tensor `#tensor` as symbol `name`.
    fn symbol_dim(
        &mut self,
        name: &str,
        range: &std::ops::RangeInclusive<usize>,
        tensor: usize,
        axis: usize,
    ) {
        let at = (TensorId(tensor), axis);
        match self.graph.symbols.iter_mut().find(|s| s.name == name) {
            Some(s) => s.dims.push(at),
            None => self.graph.symbols.push(weft_graph::Symbol {
                name: name.to_string(),
                min: *range.start(),
                max: *range.end(),
                dims: vec![at],
                rows: Vec::new(),
            }),
        }
    }

    /// Refuses a node reading a constant as long as symbol `s`'s maximum along an axis
    /// where its output carries the symbol: the file runs at that one length only (at
    /// another, ONNX Runtime refuses the broadcast), and weft would read the constant's
    /// first rows at every length.
    fn check_constants_along(
        &self,
        s: &weft_graph::Symbol,
        carried: &weft_graph::symbolic::Carried,
    ) -> Result<(), ImportError> {
        for n in &self.graph.nodes {
            // Only the broadcasting ops align a constant's axes with the output's.
            let broadcasts = matches!(n.op, weft_graph::Op::Binary(_) | weft_graph::Op::Where);
            let Some(dims) = carried.dims.get(&n.output).filter(|_| broadcasts) else {
                continue;
            };
            let rank = self.graph.tensor(n.output).shape.len();
            for &i in &n.inputs {
                let t = self.graph.tensor(i);
                if !t.is_constant()
                    || t.shape.len() > rank
                    || s.max == 1
                    || taint::numbered(&self.graph, i)
                {
                    continue;
                }
                let pad = rank - t.shape.len();
                let along = dims
                    .iter()
                    .find(|d| d.inner == 1 && d.axis >= pad && t.shape[d.axis - pad] == s.max);
                if let Some(d) = along {
                    return Err(ImportError::Node {
                        node: n.name.clone(),
                        op: n.op.name().to_string(),
                        what: format!(
                            "the constant `{}` {:?} is {} long along axis {}, the symbolic dimension `{}` ({}..{}): the file runs at that one length only",
                            t.name, t.shape, s.max, d.axis, s.name, s.min, s.max
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Refuses constants a symbol's maximum long along it where no symbol numbers them
    /// (`check_constants_along`). Where a symbol cannot be carried at all, the compile
    /// refuses the node at fault.
    fn check_constants(&self) -> Result<(), ImportError> {
        for s in &self.graph.symbols {
            let Ok(carried) = weft_graph::symbolic::carry(&self.graph, s) else {
                continue;
            };
            self.check_constants_along(s, &carried)?;
        }
        Ok(())
    }

    /// Refuses a shape the file states for a tensor weft computed, where they differ
    /// (symbolic dimensions are compared where bound).
    fn check_stated_shape(&self, vi: &ValueInfoProto) -> Result<(), ImportError> {
        let Some(&id) = self.values.get(&vi.name) else {
            return Ok(());
        };
        let Some(type_proto::Value::TensorType(tt)) =
            vi.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            return Ok(());
        };
        let Some(shape) = &tt.shape else {
            return Ok(());
        };
        let inferred = &self.graph.tensor(id).shape;
        let stated: Vec<Option<usize>> = shape
            .dim
            .iter()
            .enumerate()
            .map(|(i, d)| match &d.value {
                Some(dimension::Value::DimValue(v)) => usize::try_from(*v).ok(),
                Some(dimension::Value::DimParam(p)) => self.bound(p, i),
                None => None,
            })
            .collect();
        let agrees = stated.len() == inferred.len()
            && stated
                .iter()
                .zip(inferred)
                .all(|(s, &n)| s.is_none_or(|s| s == n));
        if agrees {
            return Ok(());
        }
        let text: Vec<String> = shape
            .dim
            .iter()
            .map(|d| match &d.value {
                Some(dimension::Value::DimValue(v)) => v.to_string(),
                Some(dimension::Value::DimParam(p)) => p.clone(),
                None => "?".into(),
            })
            .collect();
        Err(ImportError::ShapeMismatch {
            tensor: vi.name.clone(),
            stated: format!("[{}]", text.join(", ")),
            inferred: inferred.clone(),
        })
    }
}

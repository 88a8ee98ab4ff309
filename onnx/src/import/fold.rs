//! Shape arithmetic evaluated at import: a node whose inputs are all constants (or, for
//! Shape and Size, any tensor, whose shape is static) is computed here and its output
//! becomes a constant, so that Shape → Gather → Unsqueeze → Concat → Reshape chains,
//! ConstantOfShape, Range and the masks built from them never reach the graph.
//!
//! Values are held in f64 with their kind (integer, bool, float): exact for every integer
//! below 2⁵³, and ONNX's `INT64_MAX`/`INT64_MIN` sentinels (Slice's "to the end") come
//! back saturated, which is what they mean.

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use super::Importer;
use super::attrs::Attrs;
use super::tensor::{self, Const, ConstData};
use crate::error::ImportError;
use crate::proto::NodeProto;
use crate::proto::tensor_proto::DataType;
use weft_graph::op::{resolve_reshape, resolve_slice};

/// What a constant's elements are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    Int,
    Bool,
    Float(DType),
}

/// A constant being computed: dimensions, elements (row-major) and kind.
#[derive(Clone, Debug)]
pub(super) struct Arr {
    pub(super) dims: Vec<usize>,
    pub(super) v: Vec<f64>,
    pub(super) kind: Kind,
}

impl Arr {
    fn of(c: &Const) -> Arr {
        let kind = match &c.data {
            ConstData::Int(_) => Kind::Int,
            ConstData::Bool(_) => Kind::Bool,
            ConstData::Float { dtype, .. } => Kind::Float(*dtype),
        };
        Arr {
            dims: c.dims.clone(),
            v: c.to_f64(),
            kind,
        }
    }

    fn ints(dims: Vec<usize>, v: Vec<f64>) -> Arr {
        Arr {
            dims,
            v,
            kind: Kind::Int,
        }
    }

    fn into_const(self) -> Const {
        let data = match self.kind {
            Kind::Int => ConstData::Int(self.v.iter().map(|&x| x as i64).collect()),
            Kind::Bool => ConstData::Bool(self.v.iter().map(|&x| i64::from(x != 0.0)).collect()),
            Kind::Float(dtype) => ConstData::Float {
                values: ArrayD::from_shape_vec(
                    IxDyn(&self.dims),
                    self.v.iter().map(|&x| x as f32).collect(),
                )
                .expect("element count kept by every fold"),
                dtype,
            },
        };
        Const {
            dims: self.dims,
            data,
        }
    }

    /// The elements at flat source positions `from`, shaped `dims`.
    fn pick(&self, dims: Vec<usize>, from: impl Iterator<Item = usize>) -> Arr {
        Arr {
            dims,
            v: from.map(|i| self.v[i]).collect(),
            kind: self.kind,
        }
    }
}

/// Row-major multi-index of flat position `i` in `dims`.
pub(super) fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut ix = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        ix[d] = i % dims[d].max(1);
        i /= dims[d].max(1);
    }
    ix
}

/// Flat position of `ix` in `dims`.
pub(super) fn ravel(ix: &[usize], dims: &[usize]) -> usize {
    ix.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// The flat position in `dims` that NumPy broadcasting reads for output index `ix`.
pub(super) fn broadcast_from(ix: &[usize], dims: &[usize]) -> usize {
    let pad = ix.len() - dims.len();
    let at: Vec<usize> = dims
        .iter()
        .enumerate()
        .map(|(d, &n)| if n == 1 { 0 } else { ix[pad + d] })
        .collect();
    ravel(&at, dims)
}

pub(super) fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// True for the ops this module evaluates.
pub(super) fn foldable(op: &str) -> bool {
    matches!(
        op,
        "Shape"
            | "Size"
            | "ConstantOfShape"
            | "Range"
            | "Cast"
            | "Identity"
            | "Gather"
            | "GatherND"
            | "Concat"
            | "Unsqueeze"
            | "Squeeze"
            | "Reshape"
            | "Flatten"
            | "Slice"
            | "Expand"
            | "Transpose"
            | "Add"
            | "Sub"
            | "Mul"
            | "Div"
            | "Mod"
            | "Max"
            | "Min"
            | "Equal"
            | "Less"
            | "LessOrEqual"
            | "Greater"
            | "GreaterOrEqual"
            | "And"
            | "Or"
            | "Xor"
            | "Not"
            | "Neg"
            | "Abs"
            | "Where"
            | "Sqrt"
            | "Ceil"
            | "Floor"
            | "Clip"
    )
}

impl Importer<'_> {
    /// Evaluates `node` here if it can be (see the module); true where it was.
    pub(super) fn fold(&mut self, node: &NodeProto, a: &Attrs) -> Result<bool, ImportError> {
        let op = node.op_type.as_str();
        if !foldable(op) || node.output.len() != 1 {
            return Ok(false);
        }
        let names: Vec<&str> = node.input.iter().map(String::as_str).collect();
        // Shape and Size read only their input's (static) shape.
        let shape_only = matches!(op, "Shape" | "Size");
        let mut ins: Vec<Option<Arr>> = Vec::with_capacity(names.len());
        // The graph tensor whose shape a Shape or Size reads (whether it reads a
        // symbol's size is the taint's to say: `super::taint`).
        let mut read: Option<weft_graph::TensorId> = None;
        for (i, &n) in names.iter().enumerate() {
            if n.is_empty() {
                ins.push(None);
            } else if let Some(c) = self.consts.get(n) {
                ins.push(Some(Arr::of(c)));
            } else if shape_only && i == 0 {
                let Some(&id) = self.values.get(n) else {
                    return Ok(false);
                };
                let dims = self.graph.tensor(id).shape.clone();
                read = Some(id);
                ins.push(Some(Arr::ints(dims, Vec::new())));
            } else {
                return Ok(false);
            }
        }
        let Some(out) = self.evaluate(node, a, &ins)? else {
            return Ok(false);
        };
        // A decoder's past length read at run time (`super::cache`): a value that is
        // not affine in it is a graph op.
        if !self.follow_position(node, a, &ins, &out)? {
            return Ok(false);
        }
        let taint = self.fold_taint(node, a, &ins, read, &out)?;
        if let Some(t) = taint {
            self.taint.insert(node.output[0].clone(), t);
        }
        self.consts.insert(node.output[0].clone(), out.into_const());
        Ok(true)
    }

    /// `node`'s output from its inputs' values (`ins`, in order; a Shape's or Size's
    /// input holds only its dims), or None where this module leaves the node to the
    /// graph.
    pub(super) fn evaluate(
        &self,
        node: &NodeProto,
        a: &Attrs,
        ins: &[Option<Arr>],
    ) -> Result<Option<Arr>, ImportError> {
        let op = node.op_type.as_str();
        let err = |what: String| ImportError::Node {
            node: a.name.to_string(),
            op: op.to_string(),
            what,
        };
        let input = |i: usize| -> Result<&Arr, ImportError> {
            ins.get(i)
                .and_then(Option::as_ref)
                .ok_or_else(|| err(format!("input {i} is missing")))
        };
        let ints_of = |i: usize| -> Result<Option<Vec<i64>>, ImportError> {
            match ins.get(i).and_then(Option::as_ref) {
                None => Ok(None),
                Some(x) if x.kind == Kind::Int => Ok(Some(x.v.iter().map(|&v| v as i64).collect())),
                Some(_) => Err(err(format!("input {i} is not an integer tensor"))),
            }
        };
        // An integer list that opsets before `moved` give as an attribute (Squeeze's and
        // Unsqueeze's axes before 13, Slice's bounds before 10), later ones as input `i`.
        let opset = self.opset;
        let moved = |attr: &str, i: usize, moved: i64| -> Result<Option<Vec<i64>>, ImportError> {
            if opset < moved {
                Ok(a.ints(attr)?.map(<[i64]>::to_vec))
            } else {
                ints_of(i)
            }
        };
        let axis = |v: i64, rank: usize| -> Result<usize, ImportError> {
            let r = rank as i64;
            let x = if v < 0 { v + r } else { v };
            if x < 0 || x >= r.max(1) {
                return Err(err(format!("axis {v} is out of range for rank {rank}")));
            }
            Ok(x as usize)
        };
        let out = match op {
            "Shape" => {
                let dims = &input(0)?.dims;
                let r = dims.len() as i64;
                let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
                let (s, e) = (clamp(a.int("start", 0)?), clamp(a.int("end", r)?));
                let v: Vec<f64> = dims[s..e.max(s)].iter().map(|&d| d as f64).collect();
                Arr::ints(vec![v.len()], v)
            }
            "Size" => Arr::ints(vec![], vec![numel(&input(0)?.dims) as f64]),
            "ConstantOfShape" => {
                let shape = ints_of(0)?.unwrap_or_default();
                let dims: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
                let fill = match a.tensor("value")? {
                    Some(t) => Arr::of(&tensor::decode(t, a.name)?),
                    None => Arr {
                        dims: vec![1],
                        v: vec![0.0],
                        kind: Kind::Float(DType::F32),
                    },
                };
                let x = fill.v.first().copied().unwrap_or(0.0);
                Arr {
                    v: vec![x; numel(&dims)],
                    dims,
                    kind: fill.kind,
                }
            }
            "Range" => {
                let (s, l, d) = (input(0)?, input(1)?, input(2)?);
                let (start, limit, delta) = (s.v[0], l.v[0], d.v[0]);
                if delta == 0.0 {
                    return Err(err("delta is 0".into()));
                }
                let n = ((limit - start) / delta).ceil().max(0.0) as usize;
                Arr {
                    dims: vec![n],
                    v: (0..n).map(|i| start + i as f64 * delta).collect(),
                    kind: s.kind,
                }
            }
            "Cast" => {
                let x = input(0)?.clone();
                let to = a.int("to", 0)?;
                // Constants are exact in f64 whatever the integer type: the unsigned
                // 32- and 64-bit ones fold too, though no graph tensor holds them.
                let wide = matches!(
                    DataType::try_from(to as i32),
                    Ok(DataType::Uint32 | DataType::Uint64)
                );
                let kind = match tensor::graph_dtype(to as i32) {
                    _ if wide => Kind::Int,
                    Some(DType::Bool) => Kind::Bool,
                    Some(DType::I32 | DType::U32) => Kind::Int,
                    Some(d) => Kind::Float(d),
                    _ => {
                        return Err(a.err(
                            "to",
                            format!("{} is not supported", tensor::type_name(to as i32)),
                        ));
                    }
                };
                let v =
                    x.v.iter()
                        .map(|&v| match kind {
                            Kind::Int => v.trunc(),
                            Kind::Bool => f64::from(u8::from(v != 0.0)),
                            Kind::Float(DType::F16) => f64::from(half::f16::from_f64(v)),
                            Kind::Float(_) => v as f32 as f64,
                        })
                        .collect();
                Arr { v, kind, ..x }
            }
            "Identity" => input(0)?.clone(),
            // The dynamo exporter's masks pick a constant mask's entries by index tuples.
            "GatherND" => {
                let (data, idx) = (input(0)?, input(1)?);
                if a.int("batch_dims", 0)? != 0 {
                    return Ok(None);
                }
                let Some((&k, prefix)) = idx.dims.split_last() else {
                    return Err(err("the indices are a scalar".into()));
                };
                if k == 0 || k > data.dims.len() {
                    return Err(err(format!(
                        "index tuples of {k} for data of rank {}",
                        data.dims.len()
                    )));
                }
                let mut dims = prefix.to_vec();
                dims.extend(&data.dims[k..]);
                let inner = numel(&data.dims[k..]);
                let mut from = Vec::with_capacity(numel(&dims));
                for t in 0..numel(prefix) {
                    let mut at = Vec::with_capacity(data.dims.len());
                    for (d, &n) in data.dims[..k].iter().enumerate() {
                        let v = idx.v[t * k + d] as i64;
                        let v = if v < 0 { v + n as i64 } else { v };
                        if !(0..n as i64).contains(&v) {
                            return Err(err(format!("index {v} is out of range for {n}")));
                        }
                        at.push(v as usize);
                    }
                    at.extend(std::iter::repeat_n(0, data.dims.len() - k));
                    let first = ravel(&at, &data.dims);
                    from.extend(first..first + inner);
                }
                data.pick(dims, from.into_iter())
            }
            "Gather" => {
                let (data, idx) = (input(0)?, input(1)?);
                let ax = axis(a.int("axis", 0)?, data.dims.len())?;
                let n = data.dims[ax] as i64;
                let mut dims = data.dims[..ax].to_vec();
                dims.extend(&idx.dims);
                dims.extend(&data.dims[ax + 1..]);
                let q = idx.dims.len();
                let mut from = Vec::with_capacity(numel(&dims));
                for i in 0..numel(&dims) {
                    let ix = unravel(i, &dims);
                    let k = idx.v[ravel(&ix[ax..ax + q], &idx.dims)] as i64;
                    let k = if k < 0 { k + n } else { k };
                    if !(0..n).contains(&k) {
                        return Err(err(format!("index {k} is out of range for {n}")));
                    }
                    let mut at = ix[..ax].to_vec();
                    at.push(k as usize);
                    at.extend(&ix[ax + q..]);
                    from.push(ravel(&at, &data.dims));
                }
                data.pick(dims, from.into_iter())
            }
            "Concat" => {
                let parts: Vec<&Arr> = (0..ins.len()).map(input).collect::<Result<_, _>>()?;
                let ax = axis(a.int("axis", 0)?, parts[0].dims.len())?;
                let mut dims = parts[0].dims.clone();
                dims[ax] = parts
                    .iter()
                    .map(|p| p.dims.get(ax).copied().unwrap_or(0))
                    .sum();
                let outer: usize = dims[..ax].iter().product();
                let mut v = Vec::with_capacity(numel(&dims));
                for o in 0..outer {
                    for p in &parts {
                        let chunk: usize = p.dims[ax..].iter().product();
                        v.extend_from_slice(&p.v[o * chunk..(o + 1) * chunk]);
                    }
                }
                Arr {
                    dims,
                    v,
                    kind: parts[0].kind,
                }
            }
            "Unsqueeze" | "Squeeze" => {
                let x = input(0)?.clone();
                let axes = moved("axes", 1, 13)?;
                let mut dims = x.dims.clone();
                if op == "Unsqueeze" {
                    let axes = axes.ok_or_else(|| err("the axes are missing".into()))?;
                    let r = dims.len() + axes.len();
                    let mut ax: Vec<usize> =
                        axes.iter().map(|&v| axis(v, r)).collect::<Result<_, _>>()?;
                    ax.sort_unstable();
                    for a in ax {
                        dims.insert(a, 1);
                    }
                } else {
                    let r = dims.len();
                    let ax: Vec<usize> = match axes {
                        Some(v) => v.iter().map(|&v| axis(v, r)).collect::<Result<_, _>>()?,
                        None => (0..r).filter(|&d| dims[d] == 1).collect(),
                    };
                    dims = (0..r)
                        .filter(|d| !ax.contains(d))
                        .map(|d| dims[d])
                        .collect();
                }
                Arr { dims, ..x }
            }
            // HF's masks index a flattened constant mask by position.
            "Flatten" => {
                let x = input(0)?.clone();
                let r = x.dims.len();
                let at = a.int("axis", 1)?;
                let at = if at < 0 { at + r as i64 } else { at };
                if !(0..=r as i64).contains(&at) {
                    return Err(err(format!("axis {at} is out of range for rank {r}")));
                }
                let at = at as usize;
                let dims = vec![numel(&x.dims[..at]), numel(&x.dims[at..])];
                Arr { dims, ..x }
            }
            "Reshape" => {
                let x = input(0)?.clone();
                let spec = ints_of(1)?.ok_or_else(|| err("the shape is missing".into()))?;
                let dims =
                    resolve_reshape(&x.dims, &spec, a.flag("allowzero", false)?).map_err(err)?;
                Arr { dims, ..x }
            }
            "Slice" => {
                let x = input(0)?;
                let (starts, ends) = (
                    moved("starts", 1, 10)?.unwrap_or_default(),
                    moved("ends", 2, 10)?.unwrap_or_default(),
                );
                let (axes, steps) = (moved("axes", 3, 10)?, moved("steps", 4, 10)?);
                let (s, k, n) =
                    resolve_slice(&x.dims, &starts, &ends, axes.as_deref(), steps.as_deref())
                        .map_err(err)?;
                let from = (0..numel(&n)).map(|i| {
                    let ix = unravel(i, &n);
                    let at: Vec<usize> = (0..n.len())
                        .map(|d| (s[d] as i64 + ix[d] as i64 * k[d]) as usize)
                        .collect();
                    ravel(&at, &x.dims)
                });
                x.pick(n.clone(), from)
            }
            "Expand" => {
                let x = input(0)?;
                let spec: Vec<usize> = ints_of(1)?
                    .unwrap_or_default()
                    .iter()
                    .map(|&d| d.max(0) as usize)
                    .collect();
                let dims = weft_graph::op::shapes::broadcast(&x.dims, &spec)
                    .ok_or_else(|| err(format!("{:?} does not broadcast with {spec:?}", x.dims)))?;
                let from = (0..numel(&dims)).map(|i| broadcast_from(&unravel(i, &dims), &x.dims));
                x.pick(dims.clone(), from)
            }
            "Transpose" => {
                let x = input(0)?;
                let r = x.dims.len();
                let perm: Vec<usize> = match a.ints("perm")? {
                    Some(p) => p.iter().map(|&v| axis(v, r)).collect::<Result<_, _>>()?,
                    None => (0..r).rev().collect(),
                };
                let dims: Vec<usize> = perm.iter().map(|&p| x.dims[p]).collect();
                let from = (0..numel(&dims)).map(|i| {
                    let ix = unravel(i, &dims);
                    let mut at = vec![0; r];
                    for (d, &p) in perm.iter().enumerate() {
                        at[p] = ix[d];
                    }
                    ravel(&at, &x.dims)
                });
                x.pick(dims.clone(), from)
            }
            "Not" | "Neg" | "Abs" | "Sqrt" | "Ceil" | "Floor" => {
                let x = input(0)?.clone();
                let (f, kind): (fn(f64) -> f64, Kind) = match op {
                    "Not" => (|v| f64::from(u8::from(v == 0.0)), Kind::Bool),
                    "Neg" => (|v| -v, x.kind),
                    "Abs" => (f64::abs, x.kind),
                    "Ceil" => (f64::ceil, x.kind),
                    "Floor" => (f64::floor, x.kind),
                    _ => (f64::sqrt, x.kind),
                };
                Arr {
                    v: x.v.iter().map(|&v| f(v)).collect(),
                    kind,
                    ..x
                }
            }
            // Clip of shape arithmetic (timm's "same" padding computed from the input's
            // size): bounds are inputs (opset 11+), either absent meaning unbounded.
            "Clip" => {
                // Opsets before 11 bound by attributes: the graph's Clip reads those.
                if !node.attribute.is_empty() {
                    return Ok(None);
                }
                let x = input(0)?.clone();
                let bound = |i: usize, unbounded: f64| -> Result<f64, ImportError> {
                    match ins.get(i).and_then(Option::as_ref) {
                        None => Ok(unbounded),
                        Some(b) if b.v.len() == 1 => Ok(b.v[0]),
                        Some(b) => Err(err(format!(
                            "input {i} has shape {:?}, not a scalar bound",
                            b.dims
                        ))),
                    }
                };
                let (lo, hi) = (bound(1, f64::NEG_INFINITY)?, bound(2, f64::INFINITY)?);
                Arr {
                    v: x.v.iter().map(|&v| v.max(lo).min(hi)).collect(),
                    ..x
                }
            }
            "Where" => {
                let (c, x, y) = (input(0)?, input(1)?, input(2)?);
                let xy = weft_graph::op::shapes::broadcast(&x.dims, &y.dims);
                let dims = xy
                    .and_then(|xy| weft_graph::op::shapes::broadcast(&c.dims, &xy))
                    .ok_or_else(|| err("the inputs do not broadcast".into()))?;
                let v = (0..numel(&dims))
                    .map(|i| {
                        let ix = unravel(i, &dims);
                        if c.v[broadcast_from(&ix, &c.dims)] != 0.0 {
                            x.v[broadcast_from(&ix, &x.dims)]
                        } else {
                            y.v[broadcast_from(&ix, &y.dims)]
                        }
                    })
                    .collect();
                Arr {
                    dims,
                    v,
                    kind: x.kind,
                }
            }
            _ => {
                // The binary ops, broadcast.
                let (x, y) = (input(0)?, input(1)?);
                if ins.len() != 2 {
                    return Ok(None);
                }
                let dims =
                    weft_graph::op::shapes::broadcast(&x.dims, &y.dims).ok_or_else(|| {
                        err(format!("{:?} and {:?} do not broadcast", x.dims, y.dims))
                    })?;
                let int = x.kind == Kind::Int;
                let truth = |b: bool| f64::from(u8::from(b));
                let (f, kind): (Box<dyn Fn(f64, f64) -> f64>, Kind) = match op {
                    "Add" => (Box::new(|p, q| p + q), x.kind),
                    "Sub" => (Box::new(|p, q| p - q), x.kind),
                    "Mul" => (Box::new(|p, q| p * q), x.kind),
                    // Integer division truncates (as ONNX Runtime's does).
                    "Div" if int => (
                        Box::new(|p: f64, q: f64| if q == 0.0 { 0.0 } else { (p / q).trunc() }),
                        x.kind,
                    ),
                    "Div" => (Box::new(|p, q| p / q), x.kind),
                    // Integers only (shape arithmetic: Swin's and ViT's padding to a
                    // multiple of the window): fmod 0 takes the divisor's sign (Python's
                    // %), fmod 1 the dividend's (C's); a zero divisor folds nothing.
                    "Mod" if int => {
                        if y.v.contains(&0.0) {
                            return Ok(None);
                        }
                        let python = a.int("fmod", 0)? == 0;
                        (
                            Box::new(move |p: f64, q: f64| {
                                let r = p % q;
                                if python && r != 0.0 && (r < 0.0) != (q < 0.0) {
                                    r + q
                                } else {
                                    r
                                }
                            }),
                            x.kind,
                        )
                    }
                    "Mod" => return Ok(None),
                    "Max" => (Box::new(f64::max), x.kind),
                    "Min" => (Box::new(f64::min), x.kind),
                    "Equal" => (Box::new(move |p, q| truth(p == q)), Kind::Bool),
                    "Less" => (Box::new(move |p, q| truth(p < q)), Kind::Bool),
                    "LessOrEqual" => (Box::new(move |p, q| truth(p <= q)), Kind::Bool),
                    "Greater" => (Box::new(move |p, q| truth(p > q)), Kind::Bool),
                    "GreaterOrEqual" => (Box::new(move |p, q| truth(p >= q)), Kind::Bool),
                    "And" => (
                        Box::new(move |p, q| truth(p != 0.0 && q != 0.0)),
                        Kind::Bool,
                    ),
                    "Or" => (
                        Box::new(move |p, q| truth(p != 0.0 || q != 0.0)),
                        Kind::Bool,
                    ),
                    _ => (
                        Box::new(move |p, q| truth((p != 0.0) != (q != 0.0))),
                        Kind::Bool,
                    ),
                };
                let v = (0..numel(&dims))
                    .map(|i| {
                        let ix = unravel(i, &dims);
                        f(
                            x.v[broadcast_from(&ix, &x.dims)],
                            y.v[broadcast_from(&ix, &y.dims)],
                        )
                    })
                    .collect();
                Arr { dims, v, kind }
            }
        };
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_round_trip() {
        let dims = [2, 3, 4];
        for i in 0..24 {
            assert_eq!(ravel(&unravel(i, &dims), &dims), i);
        }
        // [3] broadcast against [2, 3]: output (1, 2) reads element 2.
        assert_eq!(broadcast_from(&[1, 2], &[3]), 2);
        assert_eq!(broadcast_from(&[1, 2], &[2, 1]), 1);
    }
}

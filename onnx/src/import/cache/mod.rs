//! A decoder's past keys and values as a KV cache on the device (issue 60, item 2): the
//! form Hugging Face's optimum writes — inputs `input_ids`, `attention_mask`,
//! `position_ids` (where the family takes them) and `past_key_values.{l}.key` /
//! `.value` `[batch, kv_heads, past, head_dim]`; outputs `logits` and `present.{l}.key` /
//! `.value`, each the Concat of the past and the new keys along the sequence — imported
//! as one generation step over caches of a fixed capacity, the graph form
//! `weft_graph::zoo::llama_step` builds, so that `weft_model::Generator` runs it:
//!
//! - each past input is a **cache** `[batch, kv_heads, capacity, head_dim]` (its ONNX
//!   name kept: state the generator allocates once), and the Concat of it and the new
//!   keys a `TensorScatter` writing the new rows in place at the **position** (a new
//!   input, `position`, i32 `[batch]`: the past's length, device data), so that
//!   `present.*` is the cache itself, `capacity` long;
//! - the attention mask is all ones over the capacity, a constant: the rows past the
//!   position are masked by the model's own causal mask, which compares each key's row
//!   with each query's position (`cache_position`, computed from the past's length);
//! - position ids, where the model takes them, are computed on the device as `position +
//!   0..seq`;
//! - the logits' last row goes to an argmax on the device (`next_id`, i32 `[batch, 1]`:
//!   the host reads one id a step), outputs `next_id` then the caches.
//!
//! **The past's length at run time.** Exporters read it as `Shape(past)[2]` and compute
//! from it: the total length (`past + seq`, a Range's limit, a Reshape's target) and
//! each query's position (`Range(0, seq) + past`, compared with each key's row). Shapes
//! here are fixed, so the past's length has two readings. As a *size* it is
//! `capacity − seq`: every tensor is as long as the cache (the total is `capacity`, the
//! key rows `0..capacity`). As *data* it is the position the run writes. Each constant the
//! import folds from it keeps its value at `capacity − seq` (what a shape reads) and, per
//! element, its slope in the past's length; one that an op reads as data is computed on
//! the device as `value at 0 + slope · position` ([`Importer::position_value`]). A fold
//! that is not affine in the length (a comparison whose answer changes with it: the
//! causal mask) is not folded: the node becomes a graph op over those device values.
//! Every fold is checked at three lengths (`capacity − seq`, one less, and 0); a value
//! read as a bound of a Slice, or anything this does not follow, is refused.

mod follow;
mod outputs;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, Cast, Op, Reshape, Slice, TensorScatter};
use weft_graph::zoo::llama_step::POSITION;
use weft_graph::{Layout, Tensor, TensorId};
use weft_ir::dtype::DType;

use super::Importer;
use super::attrs::Attrs;
use super::tensor::{Const, ConstData};
use crate::error::ImportError;
use crate::proto::{NodeProto, ValueInfoProto};

/// What a decoder with past keys and values is imported for ([`super::ImportOptions::cache`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// Positions each cache holds (prompt + new tokens − 1 for a generation).
    pub capacity: usize,
    /// Keep the logits as the last output (a reference that explains a pick by its
    /// margin); a generation's steps put out only the next ids and the caches.
    pub logits: bool,
    /// The type the caches are stored in. Where the file's past inputs are f32 and this
    /// is f16 (a run in f16: half the bytes the attention reads), the new keys and
    /// values are rounded to f16 as they are written and read back as f32 values, as
    /// `weft_graph::zoo::llama_step` does; otherwise the file's type.
    pub dtype: DType,
}

impl CacheOptions {
    /// Caches of `capacity` positions in the file's type, the logits not kept.
    pub fn new(capacity: usize) -> CacheOptions {
        CacheOptions {
            capacity,
            logits: false,
            dtype: DType::F32,
        }
    }
}

/// The import of a decoder's step over its caches, under way.
#[derive(Debug, Default)]
pub(super) struct CacheState {
    capacity: usize,
    logits: bool,
    /// The caches' type where it is not the file's ([`CacheOptions::dtype`]).
    stored: Option<DType>,
    batch: usize,
    /// New tokens a step takes.
    seq: usize,
    /// ONNX names that stand for a cache's past rows: the cache tensor.
    views: HashMap<String, TensorId>,
    /// The caches written, each once.
    written: HashSet<TensorId>,
    /// Where the caches are stored in another type: each write's value read back in the
    /// file's type, and the write (the cache the step puts out).
    read_back: HashMap<TensorId, TensorId>,
    position: Option<TensorId>,
    /// Per constant folded from the past's length: each element's slope in it.
    slopes: HashMap<String, Vec<f64>>,
    /// The past's length as data, of each rank and type (made once).
    lengths: HashMap<(usize, DType), TensorId>,
}

impl CacheState {
    /// The past's length as a size: every tensor as long as the cache.
    fn past(&self) -> usize {
        self.capacity - self.seq
    }

    /// True where `name` was folded from the past's length.
    pub(super) fn sloped(&self, name: &str) -> bool {
        self.slopes.contains_key(name)
    }
}

/// `(layer, "key" | "value")` of an optimum past input's name.
fn past_input(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("past_key_values.")?;
    let (layer, kind) = rest.split_once('.')?;
    let layer = layer.parse().ok()?;
    matches!(kind, "key" | "value").then_some((layer, kind))
}

/// `vi` with its axis `axis` of size `size` (the past's length, the cache's capacity).
fn with_axis(vi: &ValueInfoProto, axis: usize, size: usize) -> ValueInfoProto {
    use crate::proto::tensor_shape_proto::dimension;
    use crate::proto::type_proto;
    let mut vi = vi.clone();
    if let Some(type_proto::Value::TensorType(tt)) =
        vi.r#type.as_mut().and_then(|t| t.value.as_mut())
        && let Some(d) = tt.shape.as_mut().and_then(|s| s.dim.get_mut(axis))
    {
        d.value = Some(dimension::Value::DimValue(size as i64));
    }
    vi
}

impl Importer<'_> {
    fn cache_err(&self, what: String) -> ImportError {
        ImportError::Cache(what)
    }

    /// The graph inputs of a decoder imported over caches (see the module): the past
    /// inputs become caches, the attention mask a constant, the position ids computed
    /// from the new `position` input.
    pub(super) fn cache_inputs(
        &mut self,
        inputs: &[&ValueInfoProto],
        opts: &CacheOptions,
    ) -> Result<(), ImportError> {
        let capacity = opts.capacity;
        let mut state = CacheState {
            capacity,
            logits: opts.logits,
            ..CacheState::default()
        };
        let ids = inputs
            .iter()
            .find(|vi| vi.name == "input_ids")
            .ok_or_else(|| {
                self.cache_err("the model has no input `input_ids` (a decoder exported with past_key_values names its token ids so)".into())
            })?;
        self.input(ids)?;
        let ids_id = self.values["input_ids"];
        let &[batch, seq] = self.graph.tensor(ids_id).shape.as_slice() else {
            return Err(self.cache_err(format!(
                "`input_ids` is {:?}, not [batch, sequence]",
                self.graph.tensor(ids_id).shape
            )));
        };
        if seq == 0 || seq > capacity {
            return Err(self.cache_err(format!(
                "a step of {seq} new tokens does not fit caches of {capacity} positions"
            )));
        }
        state.batch = batch;
        state.seq = seq;
        let position = self.graph.add_tensor(Tensor {
            name: POSITION.into(),
            shape: vec![batch],
            dtype: DType::I32,
            layout: Layout::RowMajor,
            data: None,
        });
        self.graph.inputs.push(position);
        state.position = Some(position);
        let mut past = 0;
        let mut positions = None;
        for vi in inputs {
            match vi.name.as_str() {
                "input_ids" => {}
                "attention_mask" => {
                    let ones = Const {
                        dims: vec![batch, capacity],
                        data: ConstData::Int(vec![1; batch * capacity]),
                    };
                    self.consts.insert(vi.name.clone(), ones);
                }
                "position_ids" => positions = Some(vi.name.clone()),
                name if past_input(name).is_some() => {
                    // Its rank and static sizes from the file; the past's length is the
                    // capacity.
                    self.input(&with_axis(vi, 2, capacity))?;
                    let id = self.values.remove(name).expect("input just added");
                    let file = self.graph.tensor(id).dtype;
                    if file == DType::F32 && opts.dtype == DType::F16 {
                        self.graph.tensors[id.0].dtype = DType::F16;
                        state.stored = Some(DType::F16);
                    }
                    let t = self.graph.tensor(id);
                    if t.shape.len() != 4 || t.shape[0] != batch {
                        return Err(self.cache_err(format!(
                            "`{name}` is {:?}: a past input is [batch {batch}, kv_heads, past, head_dim]",
                            t.shape
                        )));
                    }
                    state.views.insert(name.to_string(), id);
                    past += 1;
                }
                other => {
                    return Err(self.cache_err(format!(
                        "the input `{other}` is none a decoder step over caches takes (input_ids, attention_mask, position_ids, past_key_values.N.key/value)"
                    )));
                }
            }
        }
        if past == 0 {
            return Err(self.cache_err("the model has no past_key_values inputs".into()));
        }
        self.cache = Some(state);
        if let Some(name) = positions {
            self.position_ids(&name, batch, seq)?;
        }
        Ok(())
    }

    /// Refuses a decoder with past keys and values imported without caches where the
    /// past's length is not sized: what it takes, said in the error.
    pub(super) fn past_unbound(&self, inputs: &[ValueInfoProto]) -> Result<(), ImportError> {
        use crate::proto::tensor_shape_proto::dimension;
        use crate::proto::type_proto;
        for vi in inputs.iter().filter(|vi| past_input(&vi.name).is_some()) {
            let Some(type_proto::Value::TensorType(tt)) =
                vi.r#type.as_ref().and_then(|t| t.value.as_ref())
            else {
                continue;
            };
            let dims = tt.shape.as_ref().map(|s| s.dim.as_slice()).unwrap_or(&[]);
            for (i, d) in dims.iter().enumerate() {
                let unbound = match &d.value {
                    Some(dimension::Value::DimParam(p)) => self.bound(p, i).is_none(),
                    None => self.bound("", i).is_none(),
                    Some(dimension::Value::DimValue(_)) => false,
                };
                if unbound {
                    return Err(self.cache_err(format!(
                        "the model takes past keys and values (`{}`) whose length the import is not given: import it over KV caches on the device (ImportOptions::cache; `weft model generate` does), or size its dimensions",
                        vi.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// `position_ids` `[batch, seq]` computed as `position + 0..seq`.
    fn position_ids(&mut self, name: &str, batch: usize, seq: usize) -> Result<(), ImportError> {
        let position = self
            .cache
            .as_ref()
            .and_then(|c| c.position)
            .expect("made first");
        let column = self.graph.add_node(
            format!("{name}.position"),
            Op::Reshape(Reshape {
                shape: vec![batch, 1],
            }),
            vec![position],
            format!("{name}.position"),
        )?;
        let iota = self.weight(
            &format!("{name}.offsets"),
            ArrayD::from_shape_fn(IxDyn(&[1, seq]), |ix| ix[1] as f32),
            DType::I32,
        );
        let id = self
            .graph
            .add_node(name, Op::Binary(Binary::Add), vec![column, iota], name)?;
        self.values.insert(name.to_string(), id);
        Ok(())
    }

    /// A constant tensor of the graph.
    fn weight(&mut self, name: &str, values: ArrayD<f32>, dtype: DType) -> TensorId {
        self.graph.add_tensor(Tensor {
            name: name.to_string(),
            shape: values.shape().to_vec(),
            dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(values)),
        })
    }

    /// A node reading a cache's past rows: its Concat with the new rows (the write),
    /// a Concat of it alone or its Shape; anything else is refused. True where done.
    pub(super) fn cache_node(&mut self, node: &NodeProto, name: &str) -> Result<bool, ImportError> {
        let Some(state) = &self.cache else {
            return Ok(false);
        };
        let view = |n: &String| state.views.get(n).copied();
        let Some(cache) = node.input.iter().find_map(view) else {
            return Ok(false);
        };
        let a = Attrs::new(node, name);
        let out = node.output.first().cloned().unwrap_or_default();
        let refuse = |what: String| ImportError::Node {
            node: name.to_string(),
            op: node.op_type.clone(),
            what,
        };
        match (node.op_type.as_str(), node.input.as_slice()) {
            ("Concat", [_]) => {
                self.cache
                    .as_mut()
                    .expect("checked")
                    .views
                    .insert(out, cache);
            }
            ("Concat", [past, new]) if view(past).is_some() && view(new).is_none() => {
                let axis = a.int("axis", 0)?;
                if !matches!(axis, 2 | -2) {
                    return Err(refuse(format!(
                        "it concatenates the past keys or values along axis {axis}: weft writes a cache along its sequence axis (2)"
                    )));
                }
                let new = self.value(new).ok_or_else(|| ImportError::Undefined {
                    node: name.to_string(),
                    input: new.clone(),
                })?;
                let (cache_shape, new_shape) = (
                    self.graph.tensor(cache).shape.clone(),
                    self.graph.tensor(new).shape.clone(),
                );
                let seq = self.cache.as_ref().expect("checked").seq;
                let fits = new_shape.len() == 4
                    && new_shape[2] == seq
                    && [0, 1, 3].iter().all(|&k| new_shape[k] == cache_shape[k]);
                if !fits {
                    return Err(refuse(format!(
                        "it appends {new_shape:?} to a cache {cache_shape:?}: the new rows must be [batch, kv_heads, {seq}, head_dim] as the cache"
                    )));
                }
                let state = self.cache.as_mut().expect("checked");
                if !state.written.insert(cache) {
                    return Err(refuse(format!(
                        "the cache `{}` is written twice",
                        self.graph.tensor(cache).name
                    )));
                }
                let position = state.position.expect("made first");
                let stored = state.stored;
                // In a cache of another type the new rows are rounded as they are
                // written, and the cache read back in the file's type (index maps the
                // attention's loads inline).
                let file = self.graph.tensor(new).dtype;
                let new = match stored {
                    Some(to) => self.graph.add_node(
                        format!("{name}.rounded"),
                        Op::Cast(Cast { to }),
                        vec![new],
                        format!("{out}.rounded"),
                    )?,
                    None => new,
                };
                let write_name = if stored.is_some() {
                    format!("{out}.stored")
                } else {
                    out.clone()
                };
                let id = self.graph.add_node(
                    name,
                    Op::TensorScatter(TensorScatter { axis: 2 }),
                    vec![cache, new, position],
                    write_name,
                )?;
                let read = match stored {
                    Some(_) => {
                        let read = self.graph.add_node(
                            format!("{name}.read"),
                            Op::Cast(Cast { to: file }),
                            vec![id],
                            out.clone(),
                        )?;
                        self.cache
                            .as_mut()
                            .expect("checked")
                            .read_back
                            .insert(read, id);
                        read
                    }
                    None => id,
                };
                self.values.insert(out, read);
            }
            ("Shape", [_]) => {
                let state = self.cache.as_ref().expect("checked");
                let mut dims = self.graph.tensor(cache).shape.clone();
                dims[2] = state.past();
                let r = dims.len() as i64;
                let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
                let s = clamp(a.int("start", 0)?);
                let e = clamp(a.int("end", r)?).max(s);
                let v: Vec<i64> = dims[s..e].iter().map(|&d| d as i64).collect();
                let slope: Vec<f64> = (s..e).map(|k| f64::from(u8::from(k == 2))).collect();
                let len = v.len();
                self.consts.insert(
                    out.clone(),
                    Const {
                        dims: vec![len],
                        data: ConstData::Int(v),
                    },
                );
                if slope.iter().any(|&x| x != 0.0) {
                    self.cache
                        .as_mut()
                        .expect("checked")
                        .slopes
                        .insert(out, slope);
                }
            }
            (op, _) => {
                let past = node
                    .input
                    .iter()
                    .find(|n| view(n).is_some())
                    .cloned()
                    .unwrap_or_default();
                return Err(refuse(format!(
                    "it reads `{past}` ({op}): weft reads a decoder's past keys and values only through the Concat that appends the new ones to them, and their Shape"
                )));
            }
        }
        Ok(true)
    }

    /// The constant `name`, folded from the past's length, as data: `value at 0 + slope
    /// · position` on the device. None where `name` is no such constant.
    pub(super) fn position_value(&mut self, name: &str) -> Result<Option<TensorId>, ImportError> {
        let Some(state) = &self.cache else {
            return Ok(None);
        };
        let Some(slope) = state.slopes.get(name).cloned() else {
            return Ok(None);
        };
        let past = state.past() as f64;
        let c = self
            .consts
            .get(name)
            .expect("a sloped name is a constant")
            .clone();
        let (values, dtype) = c.to_float();
        let dims = c.dims.clone();
        let at0 = ArrayD::from_shape_vec(
            IxDyn(&dims),
            values
                .iter()
                .zip(&slope)
                .map(|(&v, &s)| (f64::from(v) - s * past) as f32)
                .collect(),
        )
        .expect("sizes kept");
        let slope = ArrayD::from_shape_vec(IxDyn(&dims), slope.iter().map(|&s| s as f32).collect())
            .expect("sizes kept");
        let length = self.length_as(dims.len(), dtype)?;
        let at0 = self.weight(&format!("{name}.at_no_past"), at0, dtype);
        let slope = self.weight(&format!("{name}.per_past"), slope, dtype);
        let moved = self.graph.add_node(
            format!("{name}.moved"),
            Op::Binary(Binary::Mul),
            vec![slope, length],
            format!("{name}.moved"),
        )?;
        let id = self
            .graph
            .add_node(name, Op::Binary(Binary::Add), vec![at0, moved], name)?;
        self.values.insert(name.to_string(), id);
        Ok(Some(id))
    }

    /// The past's length (the position's first entry: every sequence of a batch is at
    /// the same one) as a tensor of rank `rank`, every size 1, in `dtype`.
    fn length_as(&mut self, rank: usize, dtype: DType) -> Result<TensorId, ImportError> {
        let state = self.cache.as_ref().expect("cache import");
        if let Some(&t) = state.lengths.get(&(rank, dtype)) {
            return Ok(t);
        }
        let position = state.position.expect("made first");
        let first = self.graph.add_node(
            "past_length.first",
            Op::Slice(Slice {
                starts: vec![0],
                steps: vec![1],
                sizes: vec![1],
            }),
            vec![position],
            format!("past_length.first.{rank}.{dtype:?}"),
        )?;
        let shaped = self.graph.add_node(
            format!("past_length.rank{rank}.{dtype:?}"),
            Op::Reshape(Reshape {
                shape: vec![1; rank],
            }),
            vec![first],
            format!("past_length.rank{rank}.{dtype:?}"),
        )?;
        let t = if dtype == DType::I32 {
            shaped
        } else {
            self.graph.add_node(
                format!("past_length.rank{rank}.{dtype:?}.cast"),
                Op::Cast(Cast { to: dtype }),
                vec![shaped],
                format!("past_length.rank{rank}.{dtype:?}.cast"),
            )?
        };
        self.cache
            .as_mut()
            .expect("cache import")
            .lengths
            .insert((rank, dtype), t);
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::past_input;

    #[test]
    fn optimum_past_names() {
        assert_eq!(past_input("past_key_values.3.key"), Some((3, "key")));
        assert_eq!(past_input("past_key_values.0.value"), Some((0, "value")));
        assert_eq!(past_input("past_key_values.x.key"), None);
        assert_eq!(past_input("past_key_values.1.query"), None);
        assert_eq!(past_input("present.1.key"), None);
    }
}

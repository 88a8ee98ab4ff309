//! The outputs of a decoder's step over caches: the next ids sampled on the device, then
//! the caches (see the parent module).

use ndarray::{ArrayD, IxDyn};
use weft_graph::TensorId;
use weft_graph::op::{Binary, Cast, Op, Reduce, ReduceKind, Reshape, Slice};
use weft_graph::zoo::llama_step::NEXT_ID;
use weft_ir::dtype::DType;

use super::super::Importer;
use super::past_input;
use crate::error::ImportError;
use crate::proto::ValueInfoProto;

impl Importer<'_> {
    /// The outputs of a step over caches: `next_id` (the argmax of the logits' last
    /// row), then each `present.*` (the caches, written in place), then the logits where
    /// asked; every cache written.
    pub(in crate::import) fn cache_outputs(
        &mut self,
        outputs: &[ValueInfoProto],
    ) -> Result<(), ImportError> {
        let state = self.cache.as_ref().expect("cache import");
        if let Some((name, _)) = state
            .views
            .iter()
            .filter(|(n, _)| past_input(n).is_some())
            .find(|(_, c)| !state.written.contains(c))
        {
            return Err(self.cache_err(format!(
                "the past input `{name}` is never concatenated with new keys or values: nothing writes its cache"
            )));
        }
        let (batch, seq) = (state.batch, state.seq);
        let logits = outputs
            .first()
            .filter(|o| o.name == "logits")
            .ok_or_else(|| self.cache_err("the model's first output is not `logits`".into()))?;
        let logits = self
            .value(&logits.name)
            .ok_or_else(|| ImportError::MissingOutput(logits.name.clone()))?;
        let shape = self.graph.tensor(logits).shape.clone();
        let &[b, s, vocab] = shape.as_slice() else {
            return Err(self.cache_err(format!(
                "`logits` is {shape:?}, not [batch, sequence, vocabulary]"
            )));
        };
        if (b, s) != (batch, seq) {
            return Err(self.cache_err(format!("`logits` is {shape:?} for ids [{batch}, {seq}]")));
        }
        let next = self.argmax_last(logits, batch, seq, vocab)?;
        self.graph.outputs.push(next);
        for o in &outputs[1..] {
            let id = self
                .value(&o.name)
                .ok_or_else(|| ImportError::MissingOutput(o.name.clone()))?;
            // A cache stored in another type: the write, not its value read back.
            let state = self.cache.as_ref().expect("cache import");
            let id = state.read_back.get(&id).copied().unwrap_or(id);
            let written = self
                .cache
                .as_ref()
                .expect("cache import")
                .written
                .iter()
                .any(|&c| {
                    self.graph
                        .nodes
                        .iter()
                        .any(|n| n.output == id && n.inputs.first() == Some(&c))
                });
            if !written {
                return Err(self.cache_err(format!(
                    "the output `{}` is not a cache: a step over caches puts out its logits and the present keys and values",
                    o.name
                )));
            }
            self.graph.outputs.push(id);
        }
        if self.cache.as_ref().expect("cache import").logits {
            self.graph.outputs.push(logits);
        }
        Ok(())
    }

    /// The first index of the largest logit of each sequence's last token, i32
    /// `[batch, 1]` (as `weft_graph::zoo::llama_step` samples).
    fn argmax_last(
        &mut self,
        logits: TensorId,
        batch: usize,
        seq: usize,
        vocab: usize,
    ) -> Result<TensorId, ImportError> {
        let g = &mut self.graph;
        let last = g.add_node(
            "sample.last",
            Op::Slice(Slice {
                starts: vec![0, seq - 1, 0],
                steps: vec![1, 1, 1],
                sizes: vec![batch, 1, vocab],
            }),
            vec![logits],
            "sample.last",
        )?;
        let along = |kind| {
            Op::Reduce(Reduce {
                kind,
                axes: vec![2],
                keep_dims: true,
            })
        };
        let top = g.add_node(
            "sample.max",
            along(ReduceKind::Max),
            vec![last],
            "sample.max",
        )?;
        let hit = g.add_node(
            "sample.hit",
            Op::Binary(Binary::GreaterOrEqual),
            vec![last, top],
            "sample.hit",
        )?;
        let iota = self.weight(
            "sample.iota",
            ArrayD::from_shape_fn(IxDyn(&[vocab]), |ix| ix[0] as f32),
            DType::F32,
        );
        let none = self.weight(
            "sample.none",
            ArrayD::from_elem(IxDyn(&[]), vocab as f32),
            DType::F32,
        );
        let g = &mut self.graph;
        let index = g.add_node(
            "sample.index",
            Op::Where,
            vec![hit, iota, none],
            "sample.index",
        )?;
        let first = g.add_node(
            "sample.first",
            along(ReduceKind::Min),
            vec![index],
            "sample.first",
        )?;
        let first = g.add_node(
            "sample.first.i32",
            Op::Cast(Cast { to: DType::I32 }),
            vec![first],
            "sample.first.i32",
        )?;
        Ok(g.add_node(
            NEXT_ID,
            Op::Reshape(Reshape {
                shape: vec![batch, 1],
            }),
            vec![first],
            NEXT_ID,
        )?)
    }
}

//! Greedy generation on a device ([`Generator`]): a prefill step and a decode step
//! (two compiled models of `weft_graph::zoo::llama_step`, the prompt's length and one
//! token) loaded over one set of KV caches — device buffers both steps update in place
//! and the generator keeps between runs. A step's launch list is replayed as one unit
//! (`Device::replay`); before each, the host writes only the token ids and the position
//! into their small input buffers, and after it reads back one id per sequence (the
//! argmax the step computed on the device). Nothing is recompiled per position and the
//! caches are never uploaded after the load, which zeroes them.
//!
//! A prefill of `weft_graph::zoo::llama_step::llama_prefill` is compiled once for every
//! prompt length `1..=max`: the host pads the ids to `max` and writes the length `n`
//! into its own small input (`prompt_length`) as it writes the position; the step samples
//! row `n − 1`, and the decode steps start at position `n`. The rows `n..max` the padded
//! tokens wrote into the caches are overwritten before anything reads them unmasked: the
//! decode step at position `p` writes row `p` first, and masks every row past `p`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ndarray::{ArrayD, IxDyn};
use weft_graph::zoo::llama_step::{NEXT_ID, POSITION, PROMPT_LENGTH};
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_runtime::{BufferId, Device, Timing};

use crate::compiled::CompiledModel;
use crate::error::ModelError;
use crate::executable::Executable;

/// One KV cache buffer both steps share.
#[derive(Clone, Debug)]
pub struct Cache {
    /// The input name (`past_key.0`).
    pub name: String,
    pub buffer: BufferId,
    pub dtype: DType,
    /// `[batch, kv_heads, capacity, head_dim]`.
    pub shape: Vec<usize>,
}

impl Cache {
    fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes on the device.
    pub fn bytes(&self) -> u64 {
        (self.len() * self.dtype.bytes()) as u64
    }
}

/// A prefill step and a decode step over shared caches, on one device.
#[derive(Debug)]
pub struct Generator {
    prefill: Executable,
    decode: Executable,
    caches: Vec<Cache>,
    batch: usize,
    /// The prompt length the prefill was built at: the only one it takes, or the
    /// greatest where `ranged`.
    prompt: usize,
    /// The prefill takes every prompt length `1..=prompt` (it has a `prompt_length`
    /// input).
    ranged: bool,
    capacity: usize,
    /// Bytes of the decode step's weights it reads from the prefill's buffers.
    shared_weights: u64,
    /// Bytes of the decode step's weights the prefill holds too, in another layout (a
    /// second copy: `WEFT_GEMV_KMAJOR=1` stores the skinny products' weights `[N, K]`,
    /// the prefill's tiled products keep `[K, N]`).
    twice_weights: u64,
}

/// What a generation gave.
#[derive(Clone, Debug)]
pub struct Generation {
    /// Per sequence, the generated ids (the first from the prefill).
    pub ids: Vec<Vec<i32>>,
    /// Host wall clock from the prefill's inputs written to its ids read back.
    pub first_token: Duration,
    /// Host wall clock of each decode step, id read back included.
    pub steps: Vec<Duration>,
}

/// The decode step's weights the prefill holds already, with their buffers there: the
/// same name, type, layout and shape, and the same values (compared, not assumed: the
/// passes store a weight as the step's shapes make them choose).
pub(crate) fn same_weights(
    prefill: &CompiledModel,
    decode: &CompiledModel,
    buffers: &HashMap<String, BufferId>,
) -> Vec<(String, BufferId, u64)> {
    let by_name: HashMap<&str, &weft_graph::Tensor> = prefill
        .graph
        .tensors
        .iter()
        .filter(|t| t.is_constant())
        .map(|t| (t.name.as_str(), t))
        .collect();
    decode
        .graph
        .tensors
        .iter()
        .filter(|t| t.is_constant())
        .filter_map(|t| {
            let p = by_name.get(t.name.as_str())?;
            let same = (p.dtype, p.layout, &p.shape) == (t.dtype, t.layout, &t.shape)
                && p.data.as_deref() == t.data.as_deref()
                && t.data.is_some();
            let buffer = buffers.get(&t.name)?;
            let bytes = (t.numel() * t.dtype.bytes()) as u64;
            same.then(|| (t.name.clone(), *buffer, bytes))
        })
        .collect()
}

/// Bytes of the decode step's weights the prefill holds too, with the same name, type,
/// shape and values but another layout: two copies on the device.
fn relaid_weights(prefill: &CompiledModel, decode: &CompiledModel) -> u64 {
    let by_name: HashMap<&str, &weft_graph::Tensor> = prefill
        .graph
        .tensors
        .iter()
        .filter(|t| t.is_constant())
        .map(|t| (t.name.as_str(), t))
        .collect();
    decode
        .graph
        .tensors
        .iter()
        .filter(|t| t.is_constant() && t.data.is_some())
        .filter(|t| {
            by_name.get(t.name.as_str()).is_some_and(|p| {
                (p.dtype, &p.shape) == (t.dtype, &t.shape)
                    && p.layout != t.layout
                    && p.data.as_deref() == t.data.as_deref()
            })
        })
        .map(|t| (t.numel() * t.dtype.bytes()) as u64)
        .sum()
}

/// Where input `name` of `exe` is, or a typed error naming what is missing.
fn input_index(exe: &Executable, name: &str) -> Result<usize, ModelError> {
    exe.input_tensors()
        .iter()
        .position(|t| t.name == name)
        .ok_or_else(|| ModelError::Generate(format!("the step has no input `{name}`")))
}

impl Generator {
    /// Allocates the caches (as the decode step's graph stores its `past_*` inputs, and
    /// zeroed: a row past the position is masked, but a non-finite one would still
    /// reach the softmax's sums) and loads both steps over them.
    pub fn load(
        prefill: &CompiledModel,
        decode: &CompiledModel,
        dev: &mut dyn Device,
    ) -> Result<Generator, ModelError> {
        let dims = |m: &CompiledModel, name: &str| -> Result<Vec<usize>, ModelError> {
            m.graph
                .inputs
                .iter()
                .map(|&t| m.graph.tensor(t))
                .find(|t| t.name == name)
                .map(|t| t.shape.clone())
                .ok_or_else(|| ModelError::Generate(format!("the step has no input `{name}`")))
        };
        let (ids_p, ids_d) = (dims(prefill, "input_ids")?, dims(decode, "input_ids")?);
        if ids_d.len() != 2 || ids_p.len() != 2 || ids_d[1] != 1 || ids_p[0] != ids_d[0] {
            return Err(ModelError::Generate(format!(
                "the prefill takes ids {ids_p:?} and the decode step {ids_d:?}: the decode step must take one token of the same batch"
            )));
        }
        // Each cache as the decode step's graph stores it: (name, dtype, shape).
        let mut wanted = Vec::new();
        for &t in &decode.graph.inputs {
            let tensor = decode.graph.tensor(t);
            if !tensor.name.starts_with("past_") {
                continue;
            }
            if dims(prefill, &tensor.name)? != tensor.shape {
                return Err(ModelError::Generate(format!(
                    "cache `{}` differs between the steps",
                    tensor.name
                )));
            }
            wanted.push((tensor.name.clone(), tensor.dtype, tensor.shape.clone()));
        }
        let Some(capacity) = wanted.first().map(|c| c.2[2]) else {
            return Err(ModelError::Generate("the decode step has no cache".into()));
        };
        let mut caches: Vec<Cache> = Vec::new();
        let shared = (|| {
            let mut shared = HashMap::new();
            for (name, dtype, shape) in wanted {
                let len = shape.iter().product();
                let buffer = dev.alloc(dtype, len)?;
                caches.push(Cache {
                    name: name.clone(),
                    buffer,
                    dtype,
                    shape,
                });
                dev.upload(buffer, &TensorData::zeros(dtype, len))?;
                shared.insert(name, buffer);
            }
            Ok::<_, ModelError>(shared)
        })();
        let mut shared_weights = 0;
        let loaded = shared.and_then(|mut shared| {
            let p = prefill.load_sharing(dev, &shared)?;
            let same = same_weights(prefill, decode, p.weight_buffers());
            shared_weights = same.iter().map(|(_, _, b)| b).sum();
            shared.extend(same.into_iter().map(|(n, id, _)| (n, id)));
            match decode.load_sharing(dev, &shared) {
                Ok(d) => Ok((p, d)),
                Err(e) => {
                    p.free(dev);
                    Err(e)
                }
            }
        });
        let twice_weights = relaid_weights(prefill, decode);
        match loaded {
            Ok((prefill, decode)) => Ok(Generator {
                ranged: prefill
                    .input_tensors()
                    .iter()
                    .any(|t| t.name == PROMPT_LENGTH),
                prefill,
                decode,
                caches,
                batch: ids_p[0],
                prompt: ids_p[1],
                capacity,
                shared_weights,
                twice_weights,
            }),
            Err(e) => {
                for c in &caches {
                    let _ = dev.free(c.buffer);
                }
                Err(e)
            }
        }
    }

    /// The caches, in the decode step's input order.
    pub fn caches(&self) -> &[Cache] {
        &self.caches
    }

    /// Positions each cache holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The prompt lengths the prefill takes, least and greatest: `(1, max)` for a
    /// prefill compiled for a range, `(len, len)` for one compiled for one length.
    pub fn prompt_lengths(&self) -> (usize, usize) {
        if self.ranged {
            (1, self.prompt)
        } else {
            (self.prompt, self.prompt)
        }
    }

    /// The prefill and decode steps.
    pub fn steps(&self) -> (&Executable, &Executable) {
        (&self.prefill, &self.decode)
    }

    /// Greedy generation of `new_tokens` ids after `prompt` (`[batch][prompt]` ids).
    pub fn generate(
        &self,
        dev: &mut dyn Device,
        prompt: &[Vec<i32>],
        new_tokens: usize,
    ) -> Result<Generation, ModelError> {
        self.generate_with(dev, prompt, new_tokens, &mut |_, _| Ok(()))
    }

    /// [`Generator::generate`], calling `between(dev, position)` before each decode step
    /// (the position it writes): how tests reach into the caches between steps.
    pub fn generate_with(
        &self,
        dev: &mut dyn Device,
        prompt: &[Vec<i32>],
        new_tokens: usize,
        between: &mut dyn FnMut(&mut dyn Device, usize) -> Result<(), ModelError>,
    ) -> Result<Generation, ModelError> {
        if new_tokens == 0 {
            return Err(ModelError::Generate(
                "--new-tokens is 0: there is nothing to generate".into(),
            ));
        }
        let len = self.prompt_length(prompt)?;
        // The last id generated is never fed back: the cache takes prompt + new − 1.
        let need = len + new_tokens - 1;
        if need > self.capacity {
            return Err(ModelError::Generate(format!(
                "{len} prompt tokens and --new-tokens {new_tokens} need {need} cache positions, past its capacity of {}",
                self.capacity
            )));
        }
        let start = Instant::now();
        // Padded past the length with id 0, a token like any other: what the padded rows
        // compute reaches no row below the length (see the module).
        let ids = ArrayD::from_shape_fn(IxDyn(&[self.batch, self.prompt]), |ix| {
            prompt[ix[0]].get(ix[1]).map_or(0.0, |&i| i as f32)
        });
        let length = self.ranged.then_some(len);
        let mut next = self.step(dev, &self.prefill, &ids, 0, length)?;
        let first_token = start.elapsed();
        let mut out: Vec<Vec<i32>> = next.iter().map(|&i| vec![i]).collect();
        let mut steps = Vec::with_capacity(new_tokens - 1);
        for k in 1..new_tokens {
            let position = len + k - 1;
            between(dev, position)?;
            let t = Instant::now();
            let ids = ArrayD::from_shape_fn(IxDyn(&[self.batch, 1]), |ix| next[ix[0]] as f32);
            next = self.step(dev, &self.decode, &ids, position, None)?;
            steps.push(t.elapsed());
            for (o, &i) in out.iter_mut().zip(&next) {
                o.push(i);
            }
        }
        Ok(Generation {
            ids: out,
            first_token,
            steps,
        })
    }

    /// The prompts' length: every sequence's the same, one the prefill takes.
    fn prompt_length(&self, prompt: &[Vec<i32>]) -> Result<usize, ModelError> {
        let (least, most) = self.prompt_lengths();
        let len = prompt.first().map_or(0, Vec::len);
        let fits = (least..=most).contains(&len);
        if prompt.len() != self.batch || prompt.iter().any(|p| p.len() != len) || !fits {
            let lengths = if least == most {
                format!("{most} tokens")
            } else {
                format!("{least} to {most} tokens (one length for all)")
            };
            return Err(ModelError::Generate(format!(
                "the steps were compiled for {} prompts of {lengths}; given {} of {:?}",
                self.batch,
                prompt.len(),
                prompt.iter().map(Vec::len).collect::<Vec<_>>()
            )));
        }
        Ok(len)
    }

    /// One step: its ids, position (and for a ranged prefill the prompt length)
    /// written, its launches replayed, its ids read.
    fn step(
        &self,
        dev: &mut dyn Device,
        exe: &Executable,
        ids: &ArrayD<f32>,
        position: usize,
        length: Option<usize>,
    ) -> Result<Vec<i32>, ModelError> {
        if position + ids.shape()[1] > self.capacity {
            return Err(ModelError::Generate(format!(
                "position {position} is past the cache's capacity of {}",
                self.capacity
            )));
        }
        exe.set_input(dev, input_index(exe, "input_ids")?, ids)?;
        let at = ArrayD::from_elem(IxDyn(&[self.batch]), position as f32);
        exe.set_input(dev, input_index(exe, POSITION)?, &at)?;
        if let Some(n) = length {
            let n = ArrayD::from_elem(IxDyn(&[1]), n as f32);
            exe.set_input(dev, input_index(exe, PROMPT_LENGTH)?, &n)?;
        }
        dev.replay(&exe.launches())
            .map_err(|source| ModelError::Device {
                kernel: format!("{} step", exe.name()),
                source,
            })?;
        let out = exe
            .output_tensors()
            .iter()
            .position(|t| t.name == NEXT_ID)
            .ok_or_else(|| ModelError::Generate(format!("the step has no output `{NEXT_ID}`")))?;
        let next = exe.output(dev, out)?;
        Ok(next.iter().map(|&v| v as i32).collect())
    }

    /// Device times of the prefill and of one decode step (`warmup` untimed runs, then
    /// `iters`), after a generation: each reruns its last run (the same ids at the same
    /// position and length, which writes the same cache rows again), so the caches keep
    /// what the generation wrote — but for a prefill compiled for a range, whose padded
    /// rows write rows `n..max` again (finite values: the decode step timed after it
    /// reads them as keys, which changes its answer, not its work).
    pub fn time(
        &self,
        dev: &mut dyn Device,
        warmup: usize,
        iters: usize,
    ) -> Result<(Timing, Timing), ModelError> {
        Ok((
            self.prefill.time(dev, warmup, iters)?,
            self.decode.time(dev, warmup, iters)?,
        ))
    }

    /// Bytes of the decode step's weights read from the prefill's buffers (held once).
    pub fn shared_weight_bytes(&self) -> u64 {
        self.shared_weights
    }

    /// Bytes of the decode step's weights held twice: the prefill holds them too, in
    /// another layout (`WEFT_GEMV_KMAJOR=1`: `[N, K]` for the decode step's skinny
    /// products, `[K, N]` for the prefill's tiled ones).
    pub fn twice_weight_bytes(&self) -> u64 {
        self.twice_weights
    }

    /// Bytes of the caches.
    pub fn cache_bytes(&self) -> u64 {
        self.caches.iter().map(Cache::bytes).sum()
    }

    /// Frees both steps and the caches.
    pub fn free(&self, dev: &mut dyn Device) {
        self.prefill.free(dev);
        self.decode.free(dev);
        for c in &self.caches {
            let _ = dev.free(c.buffer);
        }
    }
}

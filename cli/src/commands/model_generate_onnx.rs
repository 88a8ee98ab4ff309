//! `weft model generate FILE.onnx`: a decoder exported with past keys and values
//! (Hugging Face optimum's form: `past_key_values.*` inputs, `present.*` outputs)
//! imported over KV caches on the device (`weft_onnx::CacheOptions`) as a prefill at the
//! prompt's length and a decode step, run by the same generator as `zoo:llama`'s.
//! `--check` compares the ids with the float64 evaluator's greedy generation over the
//! same file without a cache (each step the whole sequence, past length 0).

use std::collections::HashMap;
use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use weft_graph::Graph;
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel, Generator};
use weft_onnx::{CacheOptions, ImportOptions};
use weft_runtime::{Target, WgpuOptions};

use super::generate_steps::{decode_kernel_table, generate_and_time, median, mib};
use crate::error::CliError;
use crate::format::fmt_time;
use crate::model_args::{ModelDType, ModelGenerateArgs};
use crate::model_compile::precision;
use crate::models::ModelFileError;
use crate::out::{out, outln};
use crate::select;

/// The largest decoder `--check` evaluates in float64, in parameters.
const CHECK_PARAMETERS: usize = 50_000_000;

/// Where an f16 run's pick may differ from the reference's: within this of a tie.
const F16_TIE: f64 = 2e-2;

/// The file imported as a step of `seq` new tokens of `batch` sequences over caches of
/// `capacity` positions.
fn import(
    path: &Path,
    batch: usize,
    seq: usize,
    capacity: usize,
    logits: bool,
    dtype: ModelDType,
) -> Result<Graph, CliError> {
    // An f16 run stores its caches in f16 (half the bytes the attention reads); the
    // reference (`--check`) keeps the file's type.
    let stored = match dtype {
        ModelDType::F16 => DType::F16,
        ModelDType::F32 => DType::F32,
    };
    let opts = ImportOptions {
        bindings: HashMap::from([
            ("batch_size".to_string(), batch),
            ("sequence_length".to_string(), seq),
        ]),
        batch: Some(batch),
        cache: Some(CacheOptions {
            logits,
            dtype: stored,
            ..CacheOptions::new(capacity)
        }),
        ..ImportOptions::default()
    };
    weft_onnx::load(path, &opts).map_err(|e| {
        CliError::ModelFile(ModelFileError::Onnx {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    })
}

/// The vocabulary: the logits' last size.
fn vocabulary(g: &Graph) -> Result<usize, CliError> {
    g.tensors
        .iter()
        .find(|t| t.name == "logits")
        .and_then(|t| t.shape.last().copied())
        .ok_or_else(|| CliError::Usage("the decoder has no `logits`".into()))
}

/// Runs `weft model generate` on an ONNX decoder with past keys and values.
pub(super) fn generate_onnx(a: &ModelGenerateArgs, path: &Path) -> Result<(), CliError> {
    if a.prompt.is_some() {
        return Err(CliError::Usage(
            "--prompt TEXT needs a checkpoint's tokenizer.json; an ONNX file has none (give --prompt-ids or --prompt-tokens)".into(),
        ));
    }
    if let Some(flag) = a.llama.given().first() {
        return Err(CliError::Usage(format!(
            "{flag} applies to `zoo:llama` only (an ONNX file gives its sizes)"
        )));
    }
    if a.max_prompt.is_some() {
        return Err(CliError::Usage(
            "--max-prompt: an ONNX decoder's prefill is compiled at the prompt's length".into(),
        ));
    }
    let batch = a.batch as usize;
    let new = a.new_tokens as usize;
    let len = match &a.prompt_ids {
        Some(ids) if ids.is_empty() => {
            return Err(CliError::Usage("--prompt-ids is empty".into()));
        }
        Some(ids) => ids.len(),
        None => a.prompt_tokens.unwrap_or(8) as usize,
    };
    if len == 0 {
        return Err(CliError::Usage("--prompt-tokens 0: give a prompt".into()));
    }
    // The last id is never fed back: the caches hold prompt + new − 1 positions.
    let capacity = len + new - 1;
    let decode_g = import(path, batch, 1, capacity, false, a.dtype)?;
    let vocab = vocabulary(&decode_g)?;
    let prompt: Vec<Vec<i32>> = match &a.prompt_ids {
        Some(ids) => {
            if let Some(bad) = ids.iter().find(|&&i| i < 0 || i >= vocab as i64) {
                return Err(CliError::Usage(format!(
                    "--prompt-ids: {bad} is not a token id of a vocabulary of {vocab}"
                )));
            }
            vec![ids.iter().map(|&i| i as i32).collect(); batch]
        }
        None => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
            (0..batch)
                .map(|_| {
                    (0..len)
                        .map(|_| rng.random_range(0..vocab as i32))
                        .collect()
                })
                .collect()
        }
    };
    let prefill_g = import(path, batch, len, capacity, false, a.dtype)?;
    let target = Target::parse(&a.target)?;
    let mut opened = select::open(&target, WgpuOptions::default())?;
    let dev = opened.device.as_mut();
    let options = CompileOptions::default()
        .with_precision(precision(a.dtype))
        .with_disabled(&a.disable_pass);
    let limits = dev.limits();
    let compile = |g: &Graph| CompiledModel::compile(g, &limits, &options).map_err(CliError::model);
    let (prefill, decode) = (compile(&prefill_g)?, compile(&decode_g)?);
    let generator = Generator::load(&prefill, &decode, dev).map_err(CliError::model)?;
    let result = generate_and_time(a, &generator, dev, &prompt)
        .and_then(|timed| Ok((timed, decode_kernel_table(a, &generator, &decode, dev)?)));
    let cache = generator.cache_bytes();
    let shared = generator.shared_weight_bytes();
    generator.free(dev);
    let ((got, prefill_t, decode_t), table) = result?;
    for (b, ids) in got.ids.iter().enumerate() {
        let text: Vec<String> = ids.iter().map(i32::to_string).collect();
        outln!("sequence {b}: {}", text.join(","))?;
    }
    let name = path.display();
    let dtype = match a.dtype {
        ModelDType::F32 => "f32",
        ModelDType::F16 => "f16 storage, f32 accumulation",
    };
    outln!(
        "{name} on {target} ({}), {dtype}: batch {batch}, prompt {len}, {new} new tokens, caches of {capacity} positions ({} past_key_values inputs written in place)",
        opened.device.name(),
        decode_g
            .inputs
            .iter()
            .filter(|&&t| decode_g.tensor(t).name.starts_with("past_key_values."))
            .count()
    )?;
    outln!(
        "prefill          {} (device, compiled at {len} tokens)",
        fmt_time(prefill_t)
    )?;
    outln!(
        "first token      {} (host: ids written to the id read back)",
        fmt_time(got.first_token)
    )?;
    let step_s = decode_t.as_secs_f64();
    outln!(
        "decode step      {} (device, median of {}) = {:.1} tokens/s per sequence, {:.1} tokens/s in all; compiled once for every position",
        fmt_time(decode_t),
        a.iters,
        1.0 / step_s,
        batch as f64 / step_s
    )?;
    if let Some(m) = median(&got.steps) {
        outln!(
            "decode step      {} (host, median of the {} generated)",
            fmt_time(m),
            got.steps.len()
        )?;
    }
    let need_p = prefill.plan.need(&prefill.graph);
    let need_d = decode.plan.need(&decode.graph);
    let peak = need_p.bytes + need_d.bytes - cache - shared;
    outln!(
        "memory           {:.1} MiB peak: prefill {:.1} MiB, decode {:.1} MiB more ({:.1} MiB of its weights shared with the prefill), caches {:.1} MiB",
        mib(peak),
        mib(need_p.bytes - cache),
        mib(need_d.bytes - cache - shared),
        mib(shared),
        mib(cache),
    )?;
    outln!(
        "bandwidth        {:.3} GB/s: {:.1} MiB of weights and {:.1} MiB of cache read per decode step",
        (need_d.weights + cache) as f64 / step_s / 1e9,
        mib(need_d.weights),
        mib(cache)
    )?;
    if let Some(table) = table {
        outln!(
            "\nper kernel of the decode step on {target} (each timed alone; shares of their sum):"
        )?;
        out!("{table}")?;
    }
    if a.check {
        check(a, path, &prompt, &got.ids)?;
    }
    Ok(())
}

/// The ids against the float64 evaluator's greedy generation over the same file with
/// no cache: each step imports the whole sequence so far (past length 0), evaluates it
/// and takes the argmax of its last logits.
fn check(
    a: &ModelGenerateArgs,
    path: &Path,
    prompt: &[Vec<i32>],
    got: &[Vec<i32>],
) -> Result<(), CliError> {
    let batch = prompt.len();
    let mut ids: Vec<Vec<i32>> = prompt.to_vec();
    // Each step's picks, a sequence each.
    let by_step: Vec<Vec<i32>> = (0..a.new_tokens as usize)
        .map(|k| {
            got.iter()
                .map(|g| g.get(k).copied().unwrap_or(-1))
                .collect()
        })
        .collect();
    for (k, picked) in by_step.iter().enumerate() {
        let seq = ids[0].len();
        let g = import(path, batch, seq, seq, true, ModelDType::F32)?;
        let params = g.parameter_count();
        if params > CHECK_PARAMETERS {
            return Err(CliError::Usage(format!(
                "--check: the model has {params} parameters; the float64 reference runs models of up to {CHECK_PARAMETERS}"
            )));
        }
        let inputs: Vec<ArrayD<f64>> = g
            .inputs
            .iter()
            .map(|&t| {
                let t = g.tensor(t);
                match t.name.as_str() {
                    "input_ids" => {
                        ArrayD::from_shape_fn(IxDyn(&t.shape), |ix| f64::from(ids[ix[0]][ix[1]]))
                    }
                    _ => ArrayD::zeros(IxDyn(&t.shape)),
                }
            })
            .collect();
        let outs = weft_graph::reference::evaluate(&g, &inputs)
            .map_err(|e| CliError::Usage(format!("--check: the float64 reference failed: {e}")))?;
        let logits = outs.last().expect("logits kept");
        let vocab = logits.shape()[2];
        for b in 0..batch {
            let row: Vec<f64> = (0..vocab).map(|v| logits[[b, seq - 1, v]]).collect();
            let (id, top) =
                row.iter()
                    .enumerate()
                    .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                        if v > bv { (i, v) } else { (bi, bv) }
                    });
            let ours = picked[b];
            if ours != id as i32 {
                let gap = top - row.get(ours as usize).copied().unwrap_or(f64::NAN);
                let what = format!(
                    "step {k} of sequence {b}: weft picked {ours}, the float64 reference {id} (its logit of {id} above that of {ours} by {gap:.3e})"
                );
                if a.dtype == ModelDType::F16 && gap.abs() < F16_TIE {
                    outln!(
                        "check            differs at {what}: a near tie, which f16 may flip; the ids after it follow another path"
                    )?;
                    return Ok(());
                }
                return Err(CliError::Wrong {
                    what: "the generated ids".into(),
                    error: gap,
                    detail: what,
                });
            }
            ids[b].push(id as i32);
        }
    }
    outln!(
        "check            the float64 reference (the same file, no cache) generates the same ids"
    )?;
    Ok(())
}

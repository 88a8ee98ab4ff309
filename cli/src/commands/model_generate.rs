//! `weft model generate`: greedy generation over a KV cache on the device
//! (`weft_model::generate`), timed, and checked against the float64 evaluator's greedy
//! generation over the whole-sequence forward where asked.

use std::path::Path;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use weft_graph::Graph;
use weft_graph::zoo::llama::{LlamaConfig, LlamaError, LlamaWeights, Seeded};
use weft_graph::zoo::llama_step::{
    PROMPT_LENGTH, ReferencePick, greedy_reference, llama_prefill, llama_step,
};
use weft_model::bound_rows::RowBound;
use weft_model::{CompileOptions, CompiledModel, Generator};
use weft_runtime::{Target, WgpuOptions};

use super::generate_steps::{decode_kernel_table, generate_and_time, median, mib};
use crate::checkpoint::{self, CheckpointError};
use crate::error::CliError;
use crate::format::fmt_time;
use crate::model_args::{ModelDType, ModelGenerateArgs};
use crate::model_compile::precision;
use crate::models::{ModelFileError, llama_config};
use crate::out::{out, outln};
use crate::select;
use crate::tokenizer::{Tokenizer, TokenizerError};

/// The largest model `--check` evaluates in float64, in parameters (each reference step
/// runs the whole sequence on the host).
const CHECK_PARAMETERS: usize = 50_000_000;

/// Where a mismatch of an f16 run counts as a near tie: the reference's logits of the
/// two ids closer than this.
const F16_TIE: f64 = 2e-2;

/// Runs `weft model generate`.
pub fn generate(a: &ModelGenerateArgs) -> Result<(), CliError> {
    if a.batch == 0 {
        return Err(CliError::Usage(
            "--batch 0: generate at least one sequence".into(),
        ));
    }
    if a.new_tokens == 0 {
        return Err(CliError::Usage(
            "--new-tokens 0: there is nothing to generate".into(),
        ));
    }
    if a.model == "zoo:llama" {
        let cfg = llama_config(&a.llama)?;
        let mut seeded = Seeded(a.seed);
        let no_error = |e: LlamaError<std::convert::Infallible>| match e {
            LlamaError::Weights(never) => match never {},
            other => CliError::Usage(format!("zoo:llama: {other}")),
        };
        if a.prompt.is_some() {
            return Err(CliError::Usage(
                "--prompt TEXT needs a checkpoint's tokenizer.json; zoo:llama has none (give --prompt-ids or --prompt-tokens)".into(),
            ));
        }
        return run(a, "llama", &cfg, &mut seeded, None, &no_error);
    }
    let dir = Path::new(&a.model);
    if dir.is_file() {
        return super::model_generate_onnx::generate_onnx(a, dir);
    }
    if !checkpoint::is_checkpoint(dir) {
        return Err(CliError::Usage(format!(
            "`{}`: weft model generate takes `zoo:llama`, a Hugging Face checkpoint directory (config.json and *.safetensors) or an ONNX decoder exported with past_key_values inputs",
            a.model
        )));
    }
    if let Some(flag) = a.llama.given().first() {
        return Err(CliError::Usage(format!(
            "{flag} applies to `zoo:llama` only (a checkpoint's config.json gives its sizes)"
        )));
    }
    let file = |e: CheckpointError| CliError::ModelFile(ModelFileError::Checkpoint(Box::new(e)));
    let (name, cfg, mut weights) = checkpoint::open(dir).map_err(file)?;
    let tokenizer = match a.prompt {
        Some(_) => Some(Tokenizer::require(dir).map_err(words)?),
        None => Tokenizer::open(dir).map_err(words)?,
    };
    let err = move |e: LlamaError<CheckpointError>| file(checkpoint::built(dir, None, e));
    run(a, &name, &cfg, &mut weights, tokenizer.as_ref(), &err)
}

/// A tokenizer's error as the CLI reports a model file's (exit 2, the file named).
fn words(e: TokenizerError) -> CliError {
    CliError::ModelFile(ModelFileError::Tokenizer(Box::new(e)))
}

/// The prompt: `--prompt` encoded by `tokenizer`, or `--prompt-ids`, for every
/// sequence; or seeded random ids.
fn prompt(
    a: &ModelGenerateArgs,
    cfg: &LlamaConfig,
    tokenizer: Option<&Tokenizer>,
) -> Result<Vec<Vec<i32>>, CliError> {
    let batch = a.batch as usize;
    if let (Some(text), Some(t)) = (&a.prompt, tokenizer) {
        let ids = t.encode(text).map_err(words)?;
        if ids.is_empty() {
            return Err(CliError::Usage(
                "--prompt: the text encodes to no tokens".into(),
            ));
        }
        if let Some(bad) = ids.iter().find(|&&i| i as usize >= cfg.vocab) {
            return Err(CliError::Usage(format!(
                "--prompt: the tokenizer gives id {bad}, outside the model's vocabulary of {}",
                cfg.vocab
            )));
        }
        return Ok(vec![ids.iter().map(|&i| i as i32).collect(); batch]);
    }
    if let Some(ids) = &a.prompt_ids {
        if ids.is_empty() {
            return Err(CliError::Usage("--prompt-ids is empty".into()));
        }
        if let Some(bad) = ids.iter().find(|&&i| i < 0 || i >= cfg.vocab as i64) {
            return Err(CliError::Usage(format!(
                "--prompt-ids: {bad} is not a token id of a vocabulary of {}",
                cfg.vocab
            )));
        }
        return Ok(vec![ids.iter().map(|&i| i as i32).collect(); batch]);
    }
    let len = a.prompt_tokens.unwrap_or(8) as usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    Ok((0..batch)
        .map(|_| {
            (0..len)
                .map(|_| rng.random_range(0..cfg.vocab as i32))
                .collect()
        })
        .collect())
}

fn run<W: LlamaWeights>(
    a: &ModelGenerateArgs,
    name: &str,
    cfg: &LlamaConfig,
    weights: &mut W,
    tokenizer: Option<&Tokenizer>,
    err: &dyn Fn(LlamaError<W::Error>) -> CliError,
) -> Result<(), CliError> {
    let prompt = prompt(a, cfg, tokenizer)?;
    let (batch, len, new) = (prompt.len(), prompt[0].len(), a.new_tokens as usize);
    let (max_prompt, capacity) = prompt_range(a, cfg, len)?;
    let target = Target::parse(&a.target)?;
    let mut opened = select::open(&target, WgpuOptions::default())?;
    let dev = opened.device.as_mut();
    let options = CompileOptions::default()
        .with_precision(precision(a.dtype))
        .with_disabled(&a.disable_pass);
    let limits = dev.limits();
    let mut step = |seq: usize, ranged: bool| -> Result<(Graph, CompiledModel), CliError> {
        // The caches in the run's type: f16 in an f16 run (half the bytes attention reads).
        let cache = options.precision.dtype();
        let sizes = (batch, seq, capacity);
        let g = if ranged {
            llama_prefill(name, cfg, sizes, cache, weights)
        } else {
            llama_step(name, cfg, sizes, cache, weights)
        }
        .map_err(err)?;
        // The prefill's kernels do no work past the prompt's length (where the target
        // takes it): `weft_model::bound_rows`.
        let options = if ranged {
            options.clone().with_row_bound(RowBound {
                rows: "input_ids".into(),
                axis: 1,
                length: PROMPT_LENGTH.into(),
            })
        } else {
            options.clone()
        };
        let m = CompiledModel::compile(&g, &limits, &options).map_err(CliError::model)?;
        Ok((g, m))
    };
    let (_, prefill) = step(max_prompt, true)?;
    let (_, decode) = step(1, false)?;
    let generator = Generator::load(&prefill, &decode, dev).map_err(CliError::model)?;
    let result = generate_and_time(a, &generator, dev, &prompt).and_then(|timed| {
        let table = decode_kernel_table(a, &generator, &decode, dev)?;
        Ok((timed, table))
    });
    generator.free(dev);
    let ((got, prefill_t, decode_t), table) = result?;
    for (b, ids) in got.ids.iter().enumerate() {
        let text: Vec<String> = ids.iter().map(i32::to_string).collect();
        outln!("sequence {b}: {}", text.join(","))?;
        if let Some(t) = tokenizer {
            let ids: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
            // Quoted as Rust writes strings: a newline or a control character the model
            // generated shows as an escape, not as a broken line.
            outln!("text {b}:     {:?}", t.decode(&ids).map_err(words)?)?;
        }
    }
    let cache = generator.cache_bytes();
    let need_p = prefill.plan.need(&prefill.graph);
    let need_d = decode.plan.need(&decode.graph);
    // The caches and the weights both steps read are held once.
    let shared = generator.shared_weight_bytes();
    let peak = need_p.bytes + need_d.bytes - cache - shared;
    let step_s = decode_t.as_secs_f64();
    let host: Vec<Duration> = got.steps.clone();
    let dtype = match a.dtype {
        ModelDType::F32 => "f32",
        ModelDType::F16 => "f16 storage, f32 accumulation",
    };
    outln!(
        "{name} on {target} ({}), {dtype}: batch {batch}, prompt {len}, {new} new tokens, cache {capacity} positions",
        opened.device.name(),
    )?;
    outln!(
        "prefill          {} (device, at {len} tokens; kernels launched at {max_prompt})",
        fmt_time(prefill_t)
    )?;
    // After the time: scripts read the first line starting `prefill` as the time.
    outln!("prefill compiled once for prompts 1..={max_prompt}")?;
    let bounded = &prefill.bounded;
    match &bounded.off {
        Some(why) => outln!("prefill bounded  no: {why}")?,
        None => {
            let (work, all) = bounded.blocks_at(len);
            outln!(
                "prefill bounded  {} kernels skip their blocks past the prompt: {work} of {all} blocks run at {len} tokens",
                bounded.kernels.len()
            )?;
        }
    }
    outln!(
        "first token      {} (host: ids written to the id read back)",
        fmt_time(got.first_token)
    )?;
    outln!(
        "decode step      {} (device, median of {}) = {:.1} tokens/s per sequence, {:.1} tokens/s in all",
        fmt_time(decode_t),
        a.iters,
        1.0 / step_s,
        batch as f64 / step_s
    )?;
    if let Some(m) = median(&host) {
        outln!(
            "decode step      {} (host, median of the {} generated)",
            fmt_time(m),
            host.len()
        )?;
    }
    outln!(
        "memory           {:.1} MiB peak: prefill {:.1} MiB, decode {:.1} MiB more ({:.1} MiB of its weights shared with the prefill), caches {:.1} MiB ({})",
        mib(peak),
        mib(need_p.bytes - cache),
        mib(need_d.bytes - cache - shared),
        mib(shared),
        mib(cache),
        generator
            .caches()
            .first()
            .map_or("none".to_string(), |c| c.dtype.to_string())
    )?;
    let twice = generator.twice_weight_bytes();
    if twice > 0 {
        outln!(
            "memory           {:.1} MiB of weights held twice: the decode step stores them [N, K] for the K-major skinny template ({}=1), the prefill [K, N] for its tiled templates",
            mib(twice),
            weft_model::GEMV_KMAJOR_ENV
        )?;
    }
    let read = need_d.weights + cache;
    outln!(
        "bandwidth        {:.3} GB/s: {:.1} MiB of weights and {:.1} MiB of cache read per decode step",
        read as f64 / step_s / 1e9,
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
        check(a, cfg, weights, &prompt, &got.ids, err)?;
    }
    Ok(())
}

/// The longest prompt the prefill is compiled for and the cache's positions: `--max-prompt`
/// (at least the prompt), or the prompt's length rounded up to a power of two (at least 16)
/// within the positions the generation needs; the cache holds the generation and the
/// longest prompt, within the model's positions.
fn prompt_range(
    a: &ModelGenerateArgs,
    cfg: &LlamaConfig,
    len: usize,
) -> Result<(usize, usize), CliError> {
    let new = a.new_tokens as usize;
    // The last id is never fed back: the generation needs prompt + new − 1 positions.
    let need = len + new - 1;
    if need > cfg.max_positions {
        return Err(CliError::Usage(format!(
            "{len} prompt tokens and --new-tokens {new} need a cache of {need} positions, past the model's {} (max_positions)",
            cfg.max_positions
        )));
    }
    let Some(max) = a.max_prompt else {
        let max = len.next_power_of_two().max(16).min(need);
        return Ok((max, need));
    };
    let max = max as usize;
    if max < len {
        return Err(CliError::Usage(format!(
            "--max-prompt {max} is shorter than the prompt's {len} tokens"
        )));
    }
    if max > cfg.max_positions {
        return Err(CliError::Usage(format!(
            "--max-prompt {max} is past the model's {} positions (max_positions)",
            cfg.max_positions
        )));
    }
    Ok((max, need.max(max)))
}

/// The ids against the float64 reference's greedy generation.
fn check<W: LlamaWeights>(
    a: &ModelGenerateArgs,
    cfg: &LlamaConfig,
    weights: &mut W,
    prompt: &[Vec<i32>],
    got: &[Vec<i32>],
    err: &dyn Fn(LlamaError<W::Error>) -> CliError,
) -> Result<(), CliError> {
    let per_layer = (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim * cfg.hidden * 2
        + 3 * cfg.intermediate * cfg.hidden;
    let params = per_layer * cfg.layers + 2 * cfg.vocab * cfg.hidden;
    if params > CHECK_PARAMETERS {
        return Err(CliError::Usage(format!(
            "--check: the model has {params} parameters; the float64 reference runs models of up to {CHECK_PARAMETERS}"
        )));
    }
    let picks = greedy_reference(cfg, weights, prompt, a.new_tokens as usize).map_err(err)?;
    let first = picks.iter().enumerate().find_map(|(k, step)| {
        step.iter()
            .enumerate()
            .find(|(b, p)| got[*b][k] != p.id)
            .map(|(b, p)| (k, b, p))
    });
    let Some((k, b, p)) = first else {
        outln!("check            the float64 reference (no cache) generates the same ids")?;
        return Ok(());
    };
    let ReferencePick { id, margin, logits } = p;
    let ours = got[b][k];
    let gap = logits[*id as usize] - logits.get(ours as usize).copied().unwrap_or(f64::NAN);
    let what = format!(
        "step {k} of sequence {b}: weft picked {ours}, the float64 reference {id} (its top-2 margin {margin:.3e}; its logit of {id} above that of {ours} by {gap:.3e})"
    );
    if a.dtype == ModelDType::F16 && gap.abs() < F16_TIE {
        outln!(
            "check            differs at {what}: a near tie, which f16 may flip; the ids after it follow another path"
        )?;
        return Ok(());
    }
    Err(CliError::Wrong {
        what: "the generated ids".into(),
        error: f64::INFINITY,
        detail: format!("they differ from the float64 reference at {what}"),
    })
}

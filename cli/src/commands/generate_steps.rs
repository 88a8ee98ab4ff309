//! What `weft model generate`'s two paths share (a `zoo:llama` or checkpoint decoder, an
//! ONNX decoder with past keys and values): the generation timed, and the units printed.

use std::time::Duration;

use weft_model::{CompiledModel, Generator};
use weft_runtime::Target;

use crate::error::CliError;
use crate::model_args::ModelGenerateArgs;

/// Untimed runs before the timed ones: none on the interpreter, whose runs are slow and
/// have nothing to warm.
fn warmup(dev: &dyn weft_runtime::Device) -> usize {
    if matches!(dev.target(), Target::Cpu) {
        0
    } else {
        3
    }
}

pub(super) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

pub(super) fn median(v: &[Duration]) -> Option<Duration> {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied()
}

pub(super) type Timed = (weft_model::Generation, Duration, Duration);

/// The generation, then each step timed on the device.
pub(super) fn generate_and_time(
    a: &ModelGenerateArgs,
    generator: &Generator,
    dev: &mut dyn weft_runtime::Device,
    prompt: &[Vec<i32>],
) -> Result<Timed, CliError> {
    let got = generator
        .generate(dev, prompt, a.new_tokens as usize)
        .map_err(CliError::model)?;
    let warm = warmup(dev);
    let (p, d) = generator
        .time(dev, warm, a.iters as usize)
        .map_err(CliError::model)?;
    Ok((got, p.median, d.median))
}

/// The decode step's per-kernel table (each kernel timed alone, `--kernels`), or None
/// where not asked: where one token's time goes.
pub(super) fn decode_kernel_table(
    a: &ModelGenerateArgs,
    generator: &Generator,
    decode: &CompiledModel,
    dev: &mut dyn weft_runtime::Device,
) -> Result<Option<String>, CliError> {
    if !a.kernels {
        return Ok(None);
    }
    let (_, step) = generator.steps();
    let warm = warmup(dev);
    let each = step
        .time_each(dev, warm, a.iters as usize)
        .map_err(CliError::model)?;
    let barriers = dev
        .barriers(&step.launches())
        .transpose()
        .map_err(|e| CliError::model(e.into()))?;
    Ok(Some(crate::kernel_table::kernel_table(
        decode,
        &each,
        barriers.as_deref(),
    )))
}

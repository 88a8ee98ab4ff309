//! One prefill for a range of prompt lengths (`weft_graph::zoo::llama_step::llama_prefill`
//! under `weft_model::Generator`): compiled once for prompts of 1..=32 tokens, the same
//! generator takes prompts of 5, 17 and 32 tokens and generates the float64 reference's
//! ids (the whole-sequence forward at each prompt's own length, no padding, no cache) on
//! `cpu` in f32 and f16, and on `vulkan` (lavapipe; skipped with a reason unless
//! `WEFT_REQUIRE` names wgpu), the prefill's work bounded by the length on `cpu`
//! (`weft_model::bound_rows`; off on wgpu). The caches are poisoned with junk before each prefill and,
//! before each decode step, at every row from the step's position on: the rows the padded
//! tokens wrote are never read as keys, and the step at position `p` writes row `p` before
//! it reads it.

mod common;

use weft_graph::passes::Precision;
use weft_graph::zoo::llama::{LlamaConfig, Seeded};
use weft_graph::zoo::llama_step::{PROMPT_LENGTH, greedy_reference, llama_prefill, llama_step};
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_model::bound_rows::RowBound;
use weft_model::{CompileOptions, CompiledModel, Generator, ModelError};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

use common::{assert_reference_ids, tiny};

const SEED: u64 = 11;
const MAX_PROMPT: usize = 32;
const NEW: usize = 5;
const CAPACITY: usize = MAX_PROMPT + NEW - 1;
/// What the poisoned rows hold: finite in f16, and far from any key or value, so that a
/// row read as a key would take every query's attention and change the ids.
const JUNK: f32 = 1000.0;

fn prompt(batch: usize, len: usize) -> Vec<Vec<i32>> {
    (0..batch)
        .map(|b| {
            (0..len)
                .map(|i| ((b * 53 + i * 29 + 7) % 300) as i32)
                .collect()
        })
        .collect()
}

/// The prefill compiled once for 1..=MAX_PROMPT and the decode step, over shared caches.
fn generator(dev: &mut dyn Device, cfg: &LlamaConfig, batch: usize, p: Precision) -> Generator {
    let limits = dev.limits();
    let options = CompileOptions::default().with_precision(p);
    let sizes = |seq| (batch, seq, CAPACITY);
    let prefill = llama_prefill("tiny", cfg, sizes(MAX_PROMPT), p.dtype(), &mut Seeded(SEED));
    let decode = llama_step("tiny", cfg, sizes(1), p.dtype(), &mut Seeded(SEED));
    // Its work bounded by the prompt's length where the target takes it (not wgpu).
    let bounded = options.clone().with_row_bound(RowBound {
        rows: "input_ids".into(),
        axis: 1,
        length: PROMPT_LENGTH.into(),
    });
    let prefill = CompiledModel::compile(&prefill.unwrap(), &limits, &bounded).unwrap();
    assert_eq!(
        prefill.bounded.off.is_none(),
        limits.name == "cpu",
        "{:?}",
        prefill.bounded.off
    );
    let decode = CompiledModel::compile(&decode.unwrap(), &limits, &options).unwrap();
    Generator::load(&prefill, &decode, dev).unwrap()
}

/// Every cache row at or past `from` set to [`JUNK`].
fn poison(gen_: &Generator, dev: &mut dyn Device, from: usize) -> Result<(), ModelError> {
    for c in gen_.caches() {
        let mut data = dev.download(c.buffer)?.to_f64_vec();
        let (cap, d) = (c.shape[2], c.shape[3]);
        for (i, v) in data.iter_mut().enumerate() {
            if (i / d) % cap >= from {
                *v = f64::from(JUNK);
            }
        }
        let data = match c.dtype {
            DType::F16 => TensorData::F16(data.into_iter().map(half::f16::from_f64).collect()),
            _ => TensorData::F32(data.into_iter().map(|v| v as f32).collect()),
        };
        dev.upload(c.buffer, &data)?;
    }
    Ok(())
}

/// Prompts of 5, 17 and 32 tokens through one generator: each the reference's ids (in
/// f16, up to a near tie of the reference's top two logits, which f16 may flip).
fn one_prefill_for_three_lengths(target: &str, precision: Precision, lengths: &[usize]) {
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let cfg = tiny();
    let batch = 2;
    let gen_ = generator(dev.as_mut(), &cfg, batch, precision);
    assert_eq!(gen_.prompt_lengths(), (1, MAX_PROMPT));
    for &len in lengths {
        let p = prompt(batch, len);
        let picks = greedy_reference(&cfg, &mut Seeded(SEED), &p, NEW).unwrap();
        // The whole cache junk before the prefill (rows past a query's position are
        // masked; the rows it reads it writes first), then before each decode step every
        // row from its position on: the prefill's padded rows among them.
        poison(&gen_, dev.as_mut(), 0).unwrap();
        let got = gen_
            .generate_with(dev.as_mut(), &p, NEW, &mut |dev, at| poison(&gen_, dev, at))
            .unwrap();
        assert_reference_ids(
            &got.ids,
            &picks,
            precision,
            &format!("{target} prompt {len}"),
        );
    }
    gen_.free(dev.as_mut());
}

#[test]
fn cpu_f32_one_prefill_generates_the_reference_at_three_prompt_lengths() {
    one_prefill_for_three_lengths("cpu", Precision::F32, &[5, 17, 32]);
}

#[test]
fn cpu_f16_one_prefill_generates_the_reference_at_three_prompt_lengths() {
    one_prefill_for_three_lengths("cpu", Precision::F16, &[5, 17, 32]);
}

#[test]
fn vulkan_f32_one_prefill_generates_the_reference() {
    one_prefill_for_three_lengths("vulkan", Precision::F32, &[5, 32]);
}

/// A prompt the range does not take, or prompts of different lengths, are refused naming
/// the range; the cache's capacity still bounds prompt + new.
#[test]
fn prompts_outside_the_range_are_refused() {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let cfg = tiny();
    let gen_ = generator(dev.as_mut(), &cfg, 2, Precision::F32);
    let refused = |p: Vec<Vec<i32>>, new: usize, dev: &mut dyn Device| {
        gen_.generate(dev, &p, new).unwrap_err().to_string()
    };
    let err = refused(prompt(2, MAX_PROMPT + 1), 1, dev.as_mut());
    assert!(err.contains("1 to 32 tokens"), "{err}");
    let err = refused(vec![vec![], vec![]], 1, dev.as_mut());
    assert!(err.contains("1 to 32 tokens"), "{err}");
    let err = refused(vec![vec![1, 2], vec![1, 2, 3]], 1, dev.as_mut());
    assert!(err.contains("one length for all"), "{err}");
    let err = refused(prompt(2, 30), 8, dev.as_mut());
    assert!(err.contains("capacity of 36"), "{err}");
    gen_.free(dev.as_mut());
}

//! Greedy generation over a KV cache (`weft_model::generate`) against the float64
//! evaluator's greedy generation over the whole-sequence forward (no cache), on `cpu` and
//! on `vulkan` (lavapipe where present; skipped with a reason unless `WEFT_REQUIRE` names
//! wgpu); the caches really updated in place and really read.

mod common;

use weft_graph::passes::Precision;
use weft_graph::zoo::llama::{LlamaConfig, Seeded};
use weft_graph::zoo::llama_step::{greedy_reference, llama_step};
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_model::compiled::NORM_FOLD;
use weft_model::{CompileOptions, CompiledModel, Generator, ModelError};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

use common::{assert_reference_ids, tiny};

const SEED: u64 = 7;

fn prompt(batch: usize, len: usize) -> Vec<Vec<i32>> {
    (0..batch)
        .map(|b| {
            (0..len)
                .map(|i| ((b * 37 + i * 11 + 5) % 300) as i32)
                .collect()
        })
        .collect()
}

fn generator(
    dev: &mut dyn Device,
    cfg: &LlamaConfig,
    batch: usize,
    len: usize,
    capacity: usize,
    precision: Precision,
) -> Generator {
    let limits = dev.limits();
    let options = CompileOptions::default().with_precision(precision);
    let step = |seq| {
        let sizes = (batch, seq, capacity);
        let g = llama_step("tiny", cfg, sizes, precision.dtype(), &mut Seeded(SEED)).unwrap();
        CompiledModel::compile(&g, &limits, &options).unwrap()
    };
    Generator::load(&step(len), &step(1), dev).unwrap()
}

fn reference(cfg: &LlamaConfig, prompt: &[Vec<i32>], new: usize) -> Vec<Vec<i32>> {
    let picks = greedy_reference(cfg, &mut Seeded(SEED), prompt, new).unwrap();
    (0..prompt.len())
        .map(|b| picks.iter().map(|step| step[b].id).collect())
        .collect()
}

fn generates_the_reference(target: &str, precision: Precision) {
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let cfg = tiny();
    let (batch, len, new) = (2, 5, 9);
    let p = prompt(batch, len);
    let want = reference(&cfg, &p, new);
    let gen_ = generator(dev.as_mut(), &cfg, batch, len, len + new, precision);
    let got = gen_.generate(dev.as_mut(), &p, new).unwrap();
    gen_.free(dev.as_mut());
    assert_eq!(got.ids, want, "{target} {precision:?}");
}

/// A cache long enough for the decode step's attention to split its keys (36 positions:
/// 4 blocks of 2 query rows, 3 chunks of 16 keys, and a combining kernel): the float64
/// reference's ids in f32; in f16 (f16 caches) the same ids but where the reference's
/// top two logits are within 2·10⁻² (a near tie f16 may flip; the sequence is followed
/// no further).
fn split_decode_generates_the_reference(target: &str, precision: Precision) {
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let cfg = tiny();
    let (batch, len, new) = (2, 5, 32);
    let p = prompt(batch, len);
    let picks = greedy_reference(&cfg, &mut Seeded(SEED), &p, new).unwrap();
    let limits = dev.limits();
    let options = CompileOptions::default().with_precision(precision);
    let step = |seq| {
        let sizes = (batch, seq, len + new - 1);
        let g = llama_step("tiny", &cfg, sizes, precision.dtype(), &mut Seeded(SEED)).unwrap();
        CompiledModel::compile(&g, &limits, &options).unwrap()
    };
    let (prefill, decode) = (step(len), step(1));
    let shown = decode.show();
    assert!(
        shown.contains("split-KV") && shown.contains("keys split in 3 chunks"),
        "{shown}"
    );
    let gen_ = Generator::load(&prefill, &decode, dev.as_mut()).unwrap();
    let cache = gen_.caches()[0].dtype;
    assert_eq!(
        cache,
        precision.dtype(),
        "the caches are stored in the run's type"
    );
    let got = gen_.generate(dev.as_mut(), &p, new).unwrap();
    gen_.free(dev.as_mut());
    assert_reference_ids(&got.ids, &picks, precision, target);
}

#[test]
fn cpu_split_decode_generates_the_reference_tokens() {
    split_decode_generates_the_reference("cpu", Precision::F32);
    split_decode_generates_the_reference("cpu", Precision::F16);
}

#[test]
fn vulkan_split_decode_generates_the_reference_tokens() {
    split_decode_generates_the_reference("vulkan", Precision::F32);
    split_decode_generates_the_reference("vulkan", Precision::F16);
}

#[test]
fn cpu_f32_generates_the_float64_reference_tokens() {
    generates_the_reference("cpu", Precision::F32);
}

/// The decode step computes each RMS norm inside the product that reads it (two a layer,
/// and the final one before the head): that many kernels fewer than with the fold left
/// out; the prefill's 10 rows keep the layers' norms kernels of their own. Three
/// sequences generate the float64 reference's ids through the folded step.
#[test]
fn the_decode_step_folds_its_norms_into_the_products() {
    let cfg = tiny();
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let limits = dev.limits();
    let compile = |batch, seq, disabled: &[String]| {
        let g = llama_step(
            "tiny",
            &cfg,
            (batch, seq, 16),
            DType::F32,
            &mut Seeded(SEED),
        )
        .unwrap();
        let options = CompileOptions::default().with_disabled(disabled);
        CompiledModel::compile(&g, &limits, &options).unwrap()
    };
    // Horizontal fusion left out of both: it joins other kernels with the fold on than
    // off (the norms' kernels are not joinable), which would blur the count.
    let joined = weft_model::compiled::HORIZONTAL.to_string();
    let off = [NORM_FOLD.to_string(), joined.clone()];
    let folds = 2 * cfg.layers + 1;
    let decode = compile(2, 1, std::slice::from_ref(&joined));
    let shown = decode.show();
    assert_eq!(
        shown.matches("in the product's kernel").count(),
        folds,
        "{shown}"
    );
    assert!(!shown.contains("RMS norm template"), "{shown}");
    assert_eq!(
        decode.kernel_count() + folds,
        compile(2, 1, &off).kernel_count()
    );
    // The prefill's layers run 10 rows and keep their norms; its final norm runs on the
    // last token of each sequence only (2 rows) and folds.
    let prefill = compile(2, 5, std::slice::from_ref(&joined));
    let shown = prefill.show();
    let kept = shown.matches("a kernel of its own — 10 rows > 8").count();
    assert_eq!(kept, 2 * cfg.layers, "{shown}");
    assert_eq!(
        shown.matches("in the product's kernel").count(),
        1,
        "{shown}"
    );
    assert_eq!(
        prefill.kernel_count() + 1,
        compile(2, 5, &off).kernel_count()
    );

    let (batch, len, new) = (3, 4, 6);
    let p = prompt(batch, len);
    let want = reference(&cfg, &p, new);
    let gen_ = generator(dev.as_mut(), &cfg, batch, len, len + new, Precision::F32);
    let got = gen_.generate(dev.as_mut(), &p, new).unwrap();
    gen_.free(dev.as_mut());
    assert_eq!(got.ids, want);
}

#[test]
fn vulkan_f32_generates_the_float64_reference_tokens() {
    generates_the_reference("vulkan", Precision::F32);
}

#[test]
fn the_caches_are_updated_in_place_and_read() {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let cfg = tiny();
    let (batch, len, new) = (1, 4, 6);
    let p = prompt(batch, len);
    let want = reference(&cfg, &p, new);
    let gen_ = generator(dev.as_mut(), &cfg, batch, len, 16, Precision::F32);
    let caches = gen_.caches().to_vec();
    // Rows past the position a step writes hold junk: masked, they change nothing.
    let mut junk_after = |dev: &mut dyn Device, position: usize| {
        for c in &caches {
            let mut data = dev.download(c.buffer)?.to_f64_vec();
            let (cap, d) = (c.shape[2], c.shape[3]);
            for (i, v) in data.iter_mut().enumerate() {
                if (i / d) % cap > position {
                    *v = 1000.0;
                }
            }
            let data: Vec<f32> = data.into_iter().map(|v| v as f32).collect();
            dev.upload(c.buffer, &TensorData::F32(data))?;
        }
        Ok::<(), ModelError>(())
    };
    let got = gen_
        .generate_with(dev.as_mut(), &p, new, &mut junk_after)
        .unwrap();
    assert_eq!(got.ids, want);
    // Every row a step wrote is in the caches, which nothing uploaded after the load:
    // rows 0..len+new-1 hold keys and values, the rest the junk of the last step.
    for c in gen_.caches() {
        let data = dev.download(c.buffer).unwrap().to_f64_vec();
        let (cap, d) = (c.shape[2], c.shape[3]);
        let written = len + new - 1;
        for (i, v) in data.iter().enumerate() {
            let row = (i / d) % cap;
            if row < written {
                assert!(v.abs() < 100.0, "{} row {row} holds {v}", c.name);
            } else {
                assert_eq!(*v, 1000.0, "{} row {row}", c.name);
            }
        }
    }
    // Rows before the position are read: zeroing them between steps changes the ids.
    let mut forget = |dev: &mut dyn Device, _: usize| {
        for c in &caches {
            dev.upload(
                c.buffer,
                &TensorData::zeros(c.dtype, c.shape.iter().product()),
            )?;
        }
        Ok::<(), ModelError>(())
    };
    let forgot = gen_
        .generate_with(dev.as_mut(), &p, new, &mut forget)
        .unwrap();
    assert_ne!(forgot.ids, want, "a step that ignored its cache would pass");
    gen_.free(dev.as_mut());
}

#[test]
fn positions_past_the_capacity_are_refused() {
    let mut dev = weft_runtime::open(&weft_runtime::Target::parse("cpu").unwrap()).unwrap();
    let cfg = tiny();
    let gen_ = generator(dev.as_mut(), &cfg, 1, 4, 8, Precision::F32);
    let p = prompt(1, 4);
    let err = gen_.generate(dev.as_mut(), &p, 6).unwrap_err().to_string();
    assert!(
        err.contains("--new-tokens 6") && err.contains("capacity of 8"),
        "{err}"
    );
    let err = gen_.generate(dev.as_mut(), &p, 0).unwrap_err().to_string();
    assert!(err.contains("--new-tokens is 0"), "{err}");
    // The largest that fits: 4 + 5 − 1 = 8 positions.
    assert_eq!(gen_.generate(dev.as_mut(), &p, 5).unwrap().ids[0].len(), 5);
    gen_.free(dev.as_mut());
}

/// In an f16 run the positions stay integers all the way to the cache rows they mask and
/// the rotary rows they gather: an f16 position is exact to 2048 only, past which a
/// step would see (and rotate by) a neighbouring row.
#[test]
fn positions_stay_integers_in_f16() {
    let cfg = LlamaConfig {
        max_positions: 4096,
        ..tiny()
    };
    let limits = weft_codegen_common::TargetLimits::cuda();
    let options = CompileOptions::default().with_precision(Precision::F16);
    let g = llama_step("tiny", &cfg, (1, 1, 3000), DType::F16, &mut Seeded(SEED)).unwrap();
    let model = CompiledModel::compile(&g, &limits, &options).unwrap();
    let mut seen = 0;
    for t in &model.graph.tensors {
        let positional = ["model.position", "model.mask.limit", "model.mask.rows"]
            .iter()
            .any(|p| t.name.starts_with(p));
        if positional {
            seen += 1;
            assert!(t.dtype.is_int(), "`{}` is stored as {}", t.name, t.dtype);
        }
    }
    assert!(seen >= 3, "the step's position tensors were renamed");
}

/// The decode step's small independent kernels run joined (`weft_model::horizontal`):
/// the token's embedding gather with the position's, the sine table's gather with the
/// cosine's and the mask's, each layer's value cache write with its key cache write,
/// and the index guards' flags with the sampling's last reduction (32 threads each) —
/// seven launches fewer for two layers (27 → 20, the RMS norms folded into the
/// products, each layer's `silu(gate) · up` a kernel of its own by the staged rule);
/// the same tokens as the float64 reference (the
/// tests above run it joined).
#[test]
fn the_decode_step_joins_its_small_independent_kernels() {
    let Some(dev) = open_or_skip("cpu") else {
        return;
    };
    let cfg = tiny();
    let g = llama_step("tiny", &cfg, (1, 1, 16), DType::F32, &mut Seeded(SEED)).unwrap();
    let limits = dev.limits();
    let on = CompiledModel::compile(&g, &limits, &CompileOptions::default()).unwrap();
    let off = CompiledModel::compile(
        &g,
        &limits,
        &CompileOptions::default().with_disabled(&[weft_model::compiled::HORIZONTAL.into()]),
    )
    .unwrap();
    assert_eq!(
        (off.kernel_count(), on.kernel_count()),
        (27, 20),
        "{:#?}",
        on.horizontal
    );
    for l in 0..cfg.layers {
        let pair = format!("layers_{l}_self_attn_key_cache + k0");
        let joined = on
            .horizontal
            .iter()
            .any(|h| h.contains(&pair) && h.contains(&format!("layers_{l}_self_attn_value_cache")));
        assert!(joined, "{:#?}", on.horizontal);
    }
}

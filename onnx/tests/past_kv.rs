//! Decoders exported with past keys and values (issue 60, item 2): PyTorch's TorchScript
//! exports of Hugging Face's Llama and GPT-2 (each with and without position ids) and
//! Qwen2 in optimum's form
//! (`fixtures/past/`, written by scripts/past_fixtures.py; weights filled by
//! `past_generate.py`), imported over KV caches (`ImportOptions::cache`) as a prefill
//! and a decode step and run by `weft_model::Generator` — the caches on the device
//! written in place, the past's length read at run time — generate ONNX Runtime's
//! greedy ids on the same file (the prompt with an empty past, then a token at a time,
//! the `present.*` outputs fed back). On the interpreter in f32 and on lavapipe in f32
//! and f16 (a pick within 2·10⁻² of a tie may flip in f16, as `weft model generate
//! --check` allows). Junk past the position changes nothing; a cache zeroed before each
//! step changes the ids.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use weft_graph::passes::Precision;
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel, Generator};
use weft_onnx::{CacheOptions, ImportError, ImportOptions, load};
use weft_testkit::devices::open_or_skip;

const NEW: usize = 6;

/// ONNX Runtime's greedy ids and margins (`past_generate.py`), the filled model in `dir`.
fn reference(fixture: &str, dir: &Path, prompt: &[Vec<i32>]) -> (Vec<Vec<i32>>, Vec<Vec<f64>>) {
    let text: Vec<String> = prompt
        .iter()
        .map(|p| p.iter().map(i32::to_string).collect::<Vec<_>>().join(","))
        .collect();
    let out = Command::new("python3")
        .arg(common::tests_dir().join("past_generate.py"))
        .arg(common::tests_dir().join("fixtures/past").join(fixture))
        .arg(dir)
        .arg(text.join(";"))
        .arg(NEW.to_string())
        .output()
        .expect("python3 starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "past_generate.py failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |key: &str| -> Vec<Vec<f64>> {
        let l = stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no `{key}` in {stdout}"));
        l.trim()
            .split(';')
            .map(|row| row.split(',').map(|x| x.parse().unwrap()).collect())
            .collect()
    };
    let ids = line("ids ")
        .into_iter()
        .map(|r| r.into_iter().map(|x| x as i32).collect())
        .collect();
    (ids, line("margins "))
}

fn options(batch: usize, seq: usize, capacity: usize) -> ImportOptions {
    stored_in(batch, seq, capacity, DType::F32)
}

/// [`options`] with the caches stored in `dtype` (f16 for an f16 run, as `weft model
/// generate` imports them).
fn stored_in(batch: usize, seq: usize, capacity: usize, dtype: DType) -> ImportOptions {
    ImportOptions {
        bindings: HashMap::from([
            ("batch_size".to_string(), batch),
            ("sequence_length".to_string(), seq),
        ]),
        cache: Some(CacheOptions {
            dtype,
            ..CacheOptions::new(capacity)
        }),
        ..ImportOptions::default()
    }
}

/// weft's greedy ids on `target` for the filled `model`.
fn generate(
    model: &Path,
    prompt: &[Vec<i32>],
    target: &str,
    precision: Precision,
    repeats: bool,
) -> Option<Vec<Vec<i32>>> {
    let mut dev = open_or_skip(target)?;
    let (batch, n) = (prompt.len(), prompt[0].len());
    let capacity = n + NEW - 1;
    let stored = match precision {
        Precision::F16 => DType::F16,
        Precision::F32 | Precision::F32ChannelsLast => DType::F32,
    };
    let prefill = load(model, &stored_in(batch, n, capacity, stored)).unwrap();
    let decode = load(model, &stored_in(batch, 1, capacity, stored)).unwrap();
    let opts = CompileOptions::default().with_precision(precision);
    let limits = dev.limits();
    let prefill = CompiledModel::compile(&prefill, &limits, &opts).unwrap();
    let decode = CompiledModel::compile(&decode, &limits, &opts).unwrap();
    // Every fixture but GPT-2 (one KV head a query head) repeats its KV heads: the decode
    // step's attention reads them once, its query heads grouped, a layer each.
    let grouped = decode
        .passes
        .iter()
        .find(|r| r.pass == "group query heads by their KV head")
        .map(|r| r.changed);
    assert_eq!(grouped.unwrap() > 0, repeats, "{grouped:?}");
    let generator = Generator::load(&prefill, &decode, dev.as_mut()).unwrap();
    assert!(generator.caches().iter().all(|c| c.dtype == stored));
    let got = generator.generate(dev.as_mut(), prompt, NEW).unwrap();
    generator.free(dev.as_mut());
    Some(got.ids)
}

/// The same ids, but where the reference's pick was within `tie` of its runner-up.
fn assert_same(got: &[Vec<i32>], want: &[Vec<i32>], margins: &[Vec<f64>], tie: f64, what: &str) {
    for (b, (g, w)) in got.iter().zip(want).enumerate() {
        for (k, (x, y)) in g.iter().zip(w).enumerate() {
            if x != y {
                let m = margins[b][k];
                assert!(
                    m < tie,
                    "{what}: sequence {b} step {k}: weft picked {x}, ONNX Runtime {y} (margin {m:.3e}); weft {got:?}, ONNX Runtime {want:?}"
                );
                eprintln!("{what}: sequence {b} step {k}: a near tie ({m:.2e}) flipped");
                break;
            }
        }
    }
}

/// The interpreter in f32 (every fixture), lavapipe in f32 and f16.
const EVERY: &[(&str, Precision, f64)] = &[
    ("cpu", Precision::F32, 1e-4),
    ("vulkan", Precision::F32, 1e-4),
    ("vulkan", Precision::F16, 2e-2),
];

fn check(fixture: &str, prompt: &[Vec<i32>], targets: &[(&str, Precision, f64)]) {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (want, margins) = reference(fixture, dir.path(), prompt);
    let model = dir.path().join("model.onnx");
    for &(target, precision, tie) in targets {
        let Some(got) = generate(
            &model,
            prompt,
            target,
            precision,
            !fixture.starts_with("gpt2"),
        ) else {
            continue;
        };
        let what = format!("{fixture} on {target} ({precision:?})");
        eprintln!("{what}: weft {got:?}, ONNX Runtime {want:?}");
        assert_same(&got, &want, &margins, tie, &what);
    }
}

#[test]
fn llama_with_past_generates_onnx_runtimes_ids() {
    check("llama_torchscript.onnx", &[vec![1, 5, 9, 200, 17]], EVERY);
}

#[test]
fn llama_computing_its_positions_generates_onnx_runtimes_ids() {
    check(
        "llama_nopos_torchscript.onnx",
        &[vec![3, 77, 512]],
        &EVERY[..1],
    );
}

#[test]
fn gpt2_with_past_generates_onnx_runtimes_ids_at_batch_2() {
    check(
        "gpt2_torchscript.onnx",
        &[vec![1, 5, 9, 200, 17], vec![4, 4, 8, 12, 999]],
        EVERY,
    );
}

#[test]
fn qwen2_with_past_generates_onnx_runtimes_ids() {
    check(
        "qwen2_torchscript.onnx",
        &[vec![42, 7, 7, 300]],
        &EVERY[..2],
    );
}

/// The caches are state the steps read and write in place: junk written before each
/// decode step into the rows past its position changes nothing (the model's own causal
/// mask, computed from the position at run time, hides them), and zeroing every row
/// before it changes the ids (a step that ignored its cache would pass the tests above).
#[test]
fn the_caches_are_read_up_to_the_position_and_no_further() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let prompt = [vec![1, 5, 9, 200, 17]];
    let dir = tempfile::tempdir().unwrap();
    let (want, _) = reference("llama_torchscript.onnx", dir.path(), &prompt);
    let model = dir.path().join("model.onnx");
    let mut dev = open_or_skip("cpu").unwrap();
    let capacity = prompt[0].len() + NEW - 1 + 3;
    let compile = |seq| {
        let g = load(&model, &options(1, seq, capacity)).unwrap();
        CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap()
    };
    let (prefill, decode) = (compile(prompt[0].len()), compile(1));
    let generator = Generator::load(&prefill, &decode, dev.as_mut()).unwrap();
    let caches = generator.caches().to_vec();
    assert_eq!(caches.len(), 4);
    let mut junk_after = |dev: &mut dyn weft_runtime::Device, position: usize| {
        for c in &caches {
            let mut data = dev.download(c.buffer)?.to_f64_vec();
            let (cap, d) = (c.shape[2], c.shape[3]);
            for (i, v) in data.iter_mut().enumerate() {
                if (i / d) % cap > position {
                    *v = 1000.0;
                }
            }
            let data: Vec<f32> = data.into_iter().map(|v| v as f32).collect();
            dev.upload(c.buffer, &weft_ir::data::TensorData::F32(data))?;
        }
        Ok::<(), weft_model::ModelError>(())
    };
    let got = generator
        .generate_with(dev.as_mut(), &prompt, NEW, &mut junk_after)
        .unwrap();
    assert_eq!(got.ids, want);
    let mut forget = |dev: &mut dyn weft_runtime::Device, _: usize| {
        for c in &caches {
            let zeros = weft_ir::data::TensorData::zeros(c.dtype, c.shape.iter().product());
            dev.upload(c.buffer, &zeros)?;
        }
        Ok::<(), weft_model::ModelError>(())
    };
    let forgot = generator
        .generate_with(dev.as_mut(), &prompt, NEW, &mut forget)
        .unwrap();
    assert_ne!(forgot.ids, want, "a step that ignored its cache would pass");
    generator.free(dev.as_mut());
}

/// What the import refuses, each naming what is wrong: a step of more new tokens than
/// the caches hold, a model without past inputs.
#[test]
fn what_a_step_over_caches_refuses() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    reference("gpt2_torchscript.onnx", dir.path(), &[vec![1, 2]]);
    let e = load(&dir.path().join("model.onnx"), &options(1, 8, 4)).unwrap_err();
    assert!(matches!(e, ImportError::Cache(_)), "{e}");
    assert!(e.to_string().contains("does not fit"), "{e}");
    common::python("symbolic_models.py", &[dir.path()]);
    let mut opts = options(1, 4, 8);
    opts.bindings.insert("sequence".into(), 4);
    let e = load(&dir.path().join("encoder.onnx"), &opts).unwrap_err();
    assert!(matches!(e, ImportError::Cache(_)), "{e}");
    assert!(e.to_string().contains("no past_key_values inputs"), "{e}");
}

/// GPT-2 given no position ids computes them from the past's length and gathers its
/// position table there: the Gather is a graph op over the position on the device.
#[test]
fn gpt2_computing_its_positions_generates_onnx_runtimes_ids() {
    check(
        "gpt2_nopos_torchscript.onnx",
        &[vec![1, 5, 9, 200, 17]],
        &EVERY[..2],
    );
}

//! `weft model run DIR` on Hugging Face checkpoints (`config.json` and `*.safetensors`)
//! that the tests write themselves with the `safetensors` crate: a tiny Llama (2 layers of
//! 64, 4 heads over 2 KV heads, vocabulary 100) and a Qwen2 (biases on q/k/v, a tied
//! `lm_head`, bf16 weights), each checked against weft's float64 reference and against an
//! independent numpy forward pass (`fixtures/llama_ref.py`, written from Hugging Face's
//! modeling code); the same model sharded gives the same logits; damaged checkpoints are
//! refused with exit 2 and a message naming the file and tensor; a `tokenizer.json`
//! written beside it carries `weft model generate --prompt TEXT`. Without python3 and
//! numpy the numpy comparison is skipped with a printed reason, unless `WEFT_REQUIRE` names
//! `numpy`; the lavapipe runs skip where no Vulkan adapter is found, unless it names `wgpu`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bad_input, ok};
use ndarray::{Array2, ArrayD};
use safetensors::{Dtype, tensor::TensorView};

/// True where `WEFT_REQUIRE` (a comma-separated list) names `what`.
fn required(what: &str) -> bool {
    std::env::var("WEFT_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s.trim() == what))
}

/// Skips (prints why) or, where `WEFT_REQUIRE` names `what`, fails.
fn skip(what: &str, why: &str) {
    assert!(
        !required(what),
        "{what} is required (WEFT_REQUIRE) but unavailable: {why}"
    );
    eprintln!("skipped: {why} (set WEFT_REQUIRE={what} to make this a failure)");
}

/// The tiny model's sizes.
const HIDDEN: usize = 64;
const HEADS: usize = 4;
const KV: usize = 2;
const INTER: usize = 96;
const VOCAB: usize = 100;
const LAYERS: usize = 2;
const SEQ: usize = 9;
const BATCH: usize = 2;

/// How a test checkpoint differs from the plain Llama.
#[derive(Clone, Copy)]
struct Variant {
    qwen2: bool,
    tied: bool,
    bf16: bool,
}

const LLAMA: Variant = Variant {
    qwen2: false,
    tied: false,
    bf16: false,
};

/// Every tensor of the variant, Hugging Face's names and shapes, seeded values: linear
/// weights of deviation about 0.1, norms near 1, biases small.
fn tensors(v: Variant) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let d = HIDDEN / HEADS;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut draw = |n: usize, scale: f32, center: f32| -> Vec<f32> {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                center + scale * ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0)
            })
            .collect()
    };
    let mut t = Vec::new();
    let mut put = |name: String, shape: Vec<usize>, scale: f32, center: f32| {
        let n = shape.iter().product();
        t.push((name, shape, draw(n, scale, center)));
    };
    put(
        "model.embed_tokens.weight".into(),
        vec![VOCAB, HIDDEN],
        0.5,
        0.0,
    );
    for l in 0..LAYERS {
        let p = format!("model.layers.{l}");
        put(
            format!("{p}.input_layernorm.weight"),
            vec![HIDDEN],
            0.2,
            1.0,
        );
        for (proj, out) in [("q", HEADS * d), ("k", KV * d), ("v", KV * d)] {
            put(
                format!("{p}.self_attn.{proj}_proj.weight"),
                vec![out, HIDDEN],
                0.2,
                0.0,
            );
            if v.qwen2 {
                put(
                    format!("{p}.self_attn.{proj}_proj.bias"),
                    vec![out],
                    0.1,
                    0.0,
                );
            }
        }
        put(
            format!("{p}.self_attn.o_proj.weight"),
            vec![HIDDEN, HEADS * d],
            0.2,
            0.0,
        );
        put(
            format!("{p}.post_attention_layernorm.weight"),
            vec![HIDDEN],
            0.2,
            1.0,
        );
        put(
            format!("{p}.mlp.gate_proj.weight"),
            vec![INTER, HIDDEN],
            0.2,
            0.0,
        );
        put(
            format!("{p}.mlp.up_proj.weight"),
            vec![INTER, HIDDEN],
            0.2,
            0.0,
        );
        put(
            format!("{p}.mlp.down_proj.weight"),
            vec![HIDDEN, INTER],
            0.2,
            0.0,
        );
    }
    put("model.norm.weight".into(), vec![HIDDEN], 0.2, 1.0);
    if !v.tied {
        put("lm_head.weight".into(), vec![VOCAB, HIDDEN], 0.2, 0.0);
    }
    t
}

fn config(v: Variant) -> serde_json::Value {
    serde_json::json!({
        "architectures": [if v.qwen2 { "Qwen2ForCausalLM" } else { "LlamaForCausalLM" }],
        "model_type": if v.qwen2 { "qwen2" } else { "llama" },
        "hidden_size": HIDDEN,
        "intermediate_size": INTER,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV,
        "vocab_size": VOCAB,
        "max_position_embeddings": 64,
        "rms_norm_eps": 1e-5,
        "rope_theta": 30000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": v.tied,
        "use_sliding_window": false,
        "sliding_window": null,
    })
}

/// The bytes of `values` stored as f32, or bf16 (rounded to nearest even).
fn bytes(values: &[f32], bf16: bool) -> Vec<u8> {
    if bf16 {
        values
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect()
    } else {
        values.iter().flat_map(|&x| x.to_le_bytes()).collect()
    }
}

/// Writes the variant's checkpoint into `dir`: `config.json` and one `model.safetensors`,
/// or (`shards`) two files and `model.safetensors.index.json`.
fn write_checkpoint(dir: &Path, v: Variant, shards: bool) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.json"), config(v).to_string()).unwrap();
    let all = tensors(v);
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = all
        .into_iter()
        .map(|(n, s, x)| (n, s, bytes(&x, v.bf16)))
        .collect();
    let dtype = if v.bf16 { Dtype::BF16 } else { Dtype::F32 };
    if !shards {
        safetensors::serialize_to_file(views(&data, dtype), None, &dir.join("model.safetensors"))
            .unwrap();
        return;
    }
    let half = data.len() / 2;
    let mut map = serde_json::Map::new();
    for (i, part) in [&data[..half], &data[half..]].into_iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", i + 1);
        safetensors::serialize_to_file(views(part, dtype), None, &dir.join(&file)).unwrap();
        for (n, _, _) in part {
            map.insert(n.clone(), serde_json::Value::String(file.clone()));
        }
    }
    let index = serde_json::json!({ "metadata": {}, "weight_map": map });
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
}

/// The tensors as the crate's views of their bytes.
fn views(part: &[(String, Vec<usize>, Vec<u8>)], dtype: Dtype) -> Vec<(String, TensorView<'_>)> {
    part.iter()
        .map(|(n, s, b)| (n.clone(), TensorView::new(dtype, s.clone(), b).unwrap()))
        .collect()
}

/// Seeded token ids `[BATCH, SEQ]` as int64 `.npy` in `dir/input_ids.npy`.
fn write_ids(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let ids = Array2::from_shape_fn((BATCH, SEQ), |(b, s)| {
        ((b * 37 + s * 11 + 5) % VOCAB) as i64
    });
    ndarray_npy::write_npy(dir.join("input_ids.npy"), &ids).unwrap();
}

fn s(p: &Path) -> String {
    p.to_str().expect("a UTF-8 path").to_string()
}

/// `weft model run CKPT` on `target` in `dtype` with the test's ids; asserts it ran and
/// its float64 check passed; returns the saved logits.
fn run(ckpt: &Path, ids: &Path, out: &Path, target: &str, dtype: &str) -> ArrayD<f32> {
    let (ckpt, ids, out_s) = (s(ckpt), s(ids), s(out));
    let seq = SEQ.to_string();
    let batch = BATCH.to_string();
    let text = ok(&[
        "model", "run", &ckpt, "--target", target, "--dtype", dtype, "--seq", &seq, "--batch",
        &batch, "--inputs", &ids, "--save", &out_s, "--iters", "1",
    ]);
    let checked = text
        .lines()
        .find(|l| l.starts_with("error "))
        .unwrap_or_else(|| panic!("no float64 check:\n{text}"));
    assert!(checked.ends_with(": ok"), "{checked}");
    ndarray_npy::read_npy(out.join("logits.npy")).expect("logits.npy")
}

/// The numpy reference's logits, or `None` (the skip printed) without python3 and numpy.
fn numpy_reference(ckpt: &Path, ids: &Path, out: &Path) -> Option<ArrayD<f64>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama_ref.py");
    let file = out.join("reference.npy");
    match Command::new("python3")
        .arg(&script)
        .arg(ckpt)
        .arg(ids.join("input_ids.npy"))
        .arg(&file)
        .output()
    {
        Ok(o) if o.status.success() => Some(ndarray_npy::read_npy(&file).expect("reference")),
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            let last = why.lines().last().unwrap_or("").to_string();
            skip(
                "numpy",
                &format!("python3 with numpy could not run the reference: {last}"),
            );
            None
        }
        Err(e) => {
            skip("numpy", &format!("python3 cannot be started: {e}"));
            None
        }
    }
}

/// max |got − want| / max |want|.
fn error(got: &ArrayD<f32>, want: &ArrayD<f64>) -> f64 {
    assert_eq!(got.shape(), want.shape());
    let worst = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - w).abs())
        .fold(0.0, f64::max);
    let scale = want.iter().fold(0.0f64, |m, &w| m.max(w.abs()));
    assert!(
        scale > 1e-3,
        "logits all near zero: the test could not fail"
    );
    worst / scale
}

fn vulkan_available() -> bool {
    let targets = ok(&["targets"]);
    let here = targets
        .lines()
        .any(|l| l.starts_with("vulkan") && l.contains("available"));
    if !here {
        skip(
            "wgpu",
            "no Vulkan adapter (install mesa-vulkan-drivers for lavapipe)",
        );
    }
    here
}

/// Runs the variant on the CPU (f32, f16) and lavapipe (f32, f16) against numpy.
fn against_numpy(v: Variant) {
    let tmp = tempfile::tempdir().unwrap();
    let (ckpt, ids) = (tmp.path().join("ckpt"), tmp.path().join("ids"));
    write_checkpoint(&ckpt, v, false);
    write_ids(&ids);
    let mut targets = vec!["cpu"];
    if vulkan_available() {
        targets.push("vulkan");
    }
    let want = numpy_reference(&ckpt, &ids, tmp.path());
    for target in targets {
        for (dtype, tol) in [("f32", 1e-5), ("f16", 2e-2)] {
            let out = tmp.path().join(format!("out-{target}-{dtype}"));
            let got = run(&ckpt, &ids, &out, target, dtype);
            assert_eq!(got.shape(), [BATCH, SEQ, VOCAB]);
            if let Some(want) = &want {
                let err = error(&got, want);
                eprintln!("{target} {dtype}: max |weft − numpy| / max |numpy| = {err:.2e}");
                assert!(err < tol, "{target} {dtype}: {err:.2e} ≥ {tol:e}");
            }
        }
    }
}

#[test]
fn a_tiny_llama_checkpoint_matches_numpy_and_float64() {
    against_numpy(LLAMA);
}

#[test]
fn a_qwen2_checkpoint_with_biases_tied_head_and_bf16_weights_matches_numpy() {
    against_numpy(Variant {
        qwen2: true,
        tied: true,
        bf16: true,
    });
}

#[test]
fn a_sharded_checkpoint_gives_the_same_logits() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two, ids) = (
        tmp.path().join("one"),
        tmp.path().join("two"),
        tmp.path().join("ids"),
    );
    write_checkpoint(&one, LLAMA, false);
    write_checkpoint(&two, LLAMA, true);
    write_ids(&ids);
    assert!(two.join("model-00002-of-00002.safetensors").exists());
    let a = run(&one, &ids, &tmp.path().join("a"), "cpu", "f32");
    let b = run(&two, &ids, &tmp.path().join("b"), "cpu", "f32");
    assert_eq!(a, b);
}

/// A plain checkpoint in a fresh folder, damaged by `damage`, then run: exit 2 and every
/// one of `needles` in the message.
fn refused(damage: impl Fn(&Path), extra: &[&str], needles: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("ckpt");
    write_checkpoint(&ckpt, LLAMA, false);
    damage(&ckpt);
    let c = s(&ckpt);
    let mut args = vec!["model", "run", &c, "--target", "cpu"];
    if !extra.contains(&"--seq") {
        args.extend(["--seq", "4"]);
    }
    args.extend(extra);
    bad_input(&args, needles);
}

/// Rewrites the checkpoint's safetensors file with `edit` applied to its tensor list.
fn rewrite_tensors(dir: &Path, edit: impl Fn(&mut Vec<(String, Vec<usize>, Vec<f32>)>)) {
    let mut t = tensors(LLAMA);
    edit(&mut t);
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = t
        .into_iter()
        .map(|(n, s, x)| (n, s, bytes(&x, false)))
        .collect();
    let views: Vec<(String, TensorView<'_>)> = data
        .iter()
        .map(|(n, s, b)| {
            (
                n.clone(),
                TensorView::new(Dtype::F32, s.clone(), b).unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
}

#[test]
fn damaged_checkpoints_are_refused_naming_the_file_and_tensor() {
    // A tensor the config implies is not there.
    refused(
        |d| {
            rewrite_tensors(d, |t| {
                t.retain(|(n, _, _)| n != "model.layers.1.mlp.up_proj.weight")
            })
        },
        &[],
        &[
            "model.safetensors",
            "no tensor `model.layers.1.mlp.up_proj.weight`",
        ],
    );
    // A tensor of the wrong shape.
    refused(
        |d| {
            rewrite_tensors(d, |t| {
                let k = t
                    .iter_mut()
                    .find(|(n, _, _)| n == "model.layers.0.self_attn.k_proj.weight");
                let (_, shape, _) = k.unwrap();
                *shape = vec![HIDDEN / 2 * 2, KV * HIDDEN / HEADS];
            })
        },
        &[],
        &[
            "`model.layers.0.self_attn.k_proj.weight` has shape [64, 32]",
            "[32, 64]",
        ],
    );
    // A truncated file: its header promises more bytes than there are.
    refused(
        |d| {
            let f = d.join("model.safetensors");
            let len = std::fs::metadata(&f).unwrap().len();
            let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
            file.set_len(len - 100).unwrap();
        },
        &[],
        &["model.safetensors", "not a safetensors file"],
    );
    // Garbage where the header's length should be.
    refused(
        |d| std::fs::write(d.join("model.safetensors"), [0xff; 64]).unwrap(),
        &[],
        &["model.safetensors", "not a safetensors file"],
    );
    // A tensor of integers where weights should be.
    refused(
        |d| {
            let mut t = tensors(LLAMA);
            let norm = t
                .iter()
                .position(|(n, _, _)| n == "model.norm.weight")
                .unwrap();
            let (name, shape, _) = t.remove(norm);
            let mut data: Vec<(String, Vec<usize>, Vec<u8>)> = t
                .into_iter()
                .map(|(n, s, x)| (n, s, bytes(&x, false)))
                .collect();
            let ints = vec![0u8; 4 * HIDDEN];
            let mut v = views(&data, Dtype::F32);
            v.push((name, TensorView::new(Dtype::I32, shape, &ints).unwrap()));
            safetensors::serialize_to_file(v, None, &d.join("model.safetensors")).unwrap();
            data.clear();
        },
        &[],
        &["model.safetensors", "tensor `model.norm.weight` is I32"],
    );
    // A model type weft does not build, named.
    refused(
        |d| {
            let mut c = config(LLAMA);
            c["model_type"] = "gpt_neox".into();
            std::fs::write(d.join("config.json"), c.to_string()).unwrap();
        },
        &[],
        &[
            "config.json",
            "model_type `gpt_neox`",
            "llama, mistral, qwen2",
        ],
    );
    // Scaled rotary embeddings (Llama 3.1's), which weft does not build.
    refused(
        |d| {
            let mut c = config(LLAMA);
            c["rope_scaling"] = serde_json::json!({"rope_type": "llama3", "factor": 8.0});
            std::fs::write(d.join("config.json"), c.to_string()).unwrap();
        },
        &[],
        &["config.json", "rope_scaling", "unscaled"],
    );
    // A config without a size.
    refused(
        |d| {
            let mut c = config(LLAMA);
            c.as_object_mut().unwrap().remove("hidden_size");
            std::fs::write(d.join("config.json"), c.to_string()).unwrap();
        },
        &[],
        &["config.json", "hidden_size", "missing"],
    );
    // An index whose shard lies outside the folder.
    refused(
        |d| {
            std::fs::remove_file(d.join("model.safetensors")).unwrap();
            let index = r#"{"weight_map": {"model.norm.weight": "../elsewhere.safetensors"}}"#;
            std::fs::write(d.join("model.safetensors.index.json"), index).unwrap();
        },
        &[],
        &[
            "model.safetensors.index.json",
            "not a file name in the directory",
        ],
    );
    // Mistral's sliding window shorter than the sequence: weft attends to every token.
    refused(
        |d| {
            let mut c = config(LLAMA);
            c["model_type"] = "mistral".into();
            c["sliding_window"] = 4.into();
            c.as_object_mut().unwrap().remove("use_sliding_window");
            std::fs::write(d.join("config.json"), c.to_string()).unwrap();
        },
        &["--seq", "8"],
        &["config.json", "sliding_window", "--seq 4 or less"],
    );
    // zoo:llama's sizes are the config's here.
    refused(
        |_| {},
        &["--layers", "3"],
        &["--layers applies to `zoo:llama` only"],
    );
    // Longer than the model's positions.
    refused(|_| {}, &["--seq", "65"], &["1 to 64 tokens"]);
}

/// `weft model generate CKPT --check` on `target`: the ids a KV cache on the device
/// generates equal the float64 evaluator's greedy ones (the whole sequence, no cache).
fn generates_the_reference(v: Variant, target: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("ckpt");
    write_checkpoint(&ckpt, v, false);
    let args = [
        "model",
        "generate",
        &s(&ckpt),
        "--target",
        target,
        "--prompt-ids",
        "3,14,15,92,65",
        "--new-tokens",
        "9",
        "--batch",
        "2",
        "--check",
        "--iters",
        "2",
        "--kernels",
    ];
    let out = ok(&args);
    assert!(out.contains("generates the same ids"), "{out}");
    // The decode step (2 rows) computes each RMS norm in the product reading it: two a
    // layer and the final one, none a kernel of its own.
    assert_eq!(out.matches("folded in").count(), 2 * LAYERS + 1, "{out}");
    assert!(!out.contains("RMS norm template"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("sequence ")).count(),
        2,
        "{out}"
    );
}

#[test]
fn a_tiny_checkpoint_generates_the_float64_greedy_ids() {
    generates_the_reference(LLAMA, "cpu");
    let qwen2 = Variant {
        qwen2: true,
        tied: true,
        bf16: true,
    };
    generates_the_reference(qwen2, "cpu");
    if vulkan_available() {
        generates_the_reference(LLAMA, "vulkan");
    } else {
        skip("wgpu", "no Vulkan adapter");
    }
}

/// A word-level `tokenizer.json` over the tiny model's 100 ids: `<unk>` 0, `<s>` 1 (a
/// special token the post-processor puts first, as Llama's tokenizer does), `w2`–`w99`.
fn write_tokenizer(dir: &Path) {
    let mut vocab = serde_json::Map::new();
    vocab.insert("<unk>".into(), 0.into());
    vocab.insert("<s>".into(), 1.into());
    for i in 2..VOCAB {
        vocab.insert(format!("w{i}"), i.into());
    }
    let bos = serde_json::json!({"SpecialToken": {"id": "<s>", "type_id": 0}});
    let tokenizer = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{
            "id": 1, "content": "<s>", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true
        }],
        "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
        },
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
}

/// The `sequence B:` and `text B:` lines of `weft model generate`'s output.
fn lines_of(out: &str, what: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with(what))
        .map(|l| l.split_once(':').unwrap().1.trim().to_string())
        .collect()
}

/// `--prompt TEXT` through the checkpoint's tokenizer: the same ids as the prompt's
/// ids given by hand (`<s>` first), the reference's greedy ids (`--check`), and the
/// generated ids decoded back to the words they are.
#[test]
fn a_text_prompt_goes_through_the_checkpoints_tokenizer() {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("ckpt");
    write_checkpoint(&ckpt, LLAMA, false);
    write_tokenizer(&ckpt);
    let c = s(&ckpt);
    let common = ["--target", "cpu", "--new-tokens", "7", "--iters", "1"];
    let mut by_text = vec!["model", "generate", &c, "--prompt", "w3 w14 w15 w92 w65"];
    by_text.extend(common);
    by_text.push("--check");
    let text_out = ok(&by_text);
    assert!(text_out.contains("generates the same ids"), "{text_out}");
    let mut by_ids = vec!["model", "generate", &c, "--prompt-ids", "1,3,14,15,92,65"];
    by_ids.extend(common);
    let ids_out = ok(&by_ids);
    let ids = lines_of(&text_out, "sequence ");
    assert_eq!(
        ids,
        lines_of(&ids_out, "sequence "),
        "{text_out}\n{ids_out}"
    );
    // The words of the generated ids: `<s>` left out, the rest as the vocabulary has them.
    let words: Vec<String> = ids[0]
        .split(',')
        .map(|i| i.parse::<usize>().unwrap())
        .filter(|&i| i != 1)
        .map(|i| {
            if i == 0 {
                "<unk>".to_string()
            } else {
                format!("w{i}")
            }
        })
        .collect();
    assert_eq!(
        lines_of(&text_out, "text "),
        vec![format!("{:?}", words.join(" "))],
        "{text_out}"
    );
}

/// `--prompt` without a tokenizer, with a broken one, and on `zoo:llama`: refused with
/// exit 2 and the file named.
#[test]
fn a_text_prompt_without_a_readable_tokenizer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("ckpt");
    write_checkpoint(&ckpt, LLAMA, false);
    let c = s(&ckpt);
    let args = [
        "model", "generate", &c, "--target", "cpu", "--prompt", "w3 w4",
    ];
    bad_input(&args, &["tokenizer.json", "not found", "--prompt-ids"]);
    std::fs::write(ckpt.join("tokenizer.json"), "{\"model\": 7").unwrap();
    bad_input(&args, &["tokenizer.json", "not a tokenizer"]);
    bad_input(
        &[
            "model",
            "generate",
            "zoo:llama",
            "--target",
            "cpu",
            "--prompt",
            "hi",
        ],
        &["--prompt", "zoo:llama"],
    );
}

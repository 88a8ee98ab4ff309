//! The model corpus's graph structures in CI, without a GPU (issue 57, items 2 and 6).
//!
//! `fixtures/corpus/*.onnx` are real PyTorch exports of the corpus's architectures
//! (`scripts/corpus_fixtures.py`: torchvision, timm-style and Hugging Face graphs, each
//! by the TorchScript and the dynamo exporter, symbolic spatial / sequence dimensions
//! where the exporter keeps them) committed without their weights. `corpus_fill.py`
//! fills each with seeded weights at a realistic scale, binds its dimensions small and
//! runs ONNX Runtime on it; weft then runs the same file on the interpreter (`cpu`) and on
//! lavapipe (`vulkan`) in f32 and in f16, each twice: the two runs must agree bit for bit
//! (item 6), and each must be within weft's tolerance of ONNX Runtime's f32 outputs
//! (`weft_model::measure`: 1e-3 in f32, 5e-2 in f16).
//!
//! lavapipe compiles every distinct kernel through LLVM, seconds each on two cores, so on
//! `vulkan` the test runs the fixtures of [`LAVAPIPE`] (both exporters of a convolutional
//! network, a decoder LLM and a speech encoder); `WEFT_CORPUS_LAVAPIPE=all` runs them all.
//!
//! `fixtures/corpus/expected.txt` lists the fixtures weft refuses today, each with a word
//! its refusal must name (the op): a listed fixture that compiles, or a refusal that
//! names something else, fails the test, so the list follows weft.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use ndarray::ArrayD;
use weft_graph::passes::Precision;
use weft_model::measure::{relative_error, tolerance};
use weft_model::{CompileOptions, CompiledModel};
use weft_onnx::{ImportOptions, load};
use weft_testkit::devices::open_or_skip;

/// The fixtures run on lavapipe unless `WEFT_CORPUS_LAVAPIPE=all`: every one of them
/// would take CI's two cores past its budget (measured: about 20 minutes).
const LAVAPIPE: &[&str] = &[
    "squeezenet_dynamo",
    "squeezenet_torchscript",
    "llama_dynamo",
    "llama_torchscript",
    "whisper_encoder_dynamo",
    "whisper_encoder_torchscript",
];

/// One fixture filled: its weft import (or why weft refused it), inputs and ONNX
/// Runtime's outputs.
struct Filled {
    name: String,
    graph: Result<weft_graph::Graph, String>,
    inputs: Vec<ArrayD<f32>>,
    ort: Vec<ArrayD<f32>>,
}

fn fixtures_dir() -> PathBuf {
    common::tests_dir().join("fixtures/corpus")
}

/// `expected.txt`: `NAME[@TARGET:DTYPE] refused WORD` lines (`#` comments), by name and
/// qualifier (`*` where none is given).
fn expected() -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(fixtures_dir().join("expected.txt")).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(
            words.len() == 3 && words[1] == "refused",
            "expected.txt: `{line}` is not `NAME[@TARGET:DTYPE] refused WORD`"
        );
        let (name, on) = words[0].split_once('@').unwrap_or((words[0], "*"));
        out.insert((name.to_string(), on.to_string()), words[2].to_string());
    }
    out
}

/// Every fixture, filled once for all the tests of this binary; `None` where python3
/// with onnx and onnxruntime is missing (skipped, or failed under `WEFT_REQUIRE`).
fn filled() -> Option<&'static [Filled]> {
    static FILLED: OnceLock<Option<(tempfile::TempDir, Vec<Filled>)>> = OnceLock::new();
    FILLED
        .get_or_init(|| {
            if let Some(why) = common::python_missing() {
                common::skip("onnxruntime", &why);
                return None;
            }
            let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
                .expect("fixtures/corpus")
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "onnx"))
                .collect();
            files.sort();
            assert!(
                files.len() >= 20,
                "fixtures/corpus holds {} graphs",
                files.len()
            );
            let root = tempfile::tempdir().expect("temp dir");
            let start = Instant::now();
            let all = files.iter().map(|f| fill(f, root.path())).collect();
            eprintln!(
                "filled {} fixtures in {:.1} s",
                files.len(),
                start.elapsed().as_secs_f64()
            );
            Some((root, all))
        })
        .as_ref()
        .map(|(_, all)| all.as_slice())
}

fn fill(fixture: &Path, root: &Path) -> Filled {
    let name = fixture.file_stem().unwrap().to_string_lossy().to_string();
    let dir = root.join(&name);
    common::python("corpus_fill.py", &[fixture, &dir]);
    let graph = load(&dir.join("model.onnx"), &ImportOptions::default()).map_err(|e| e.to_string());
    Filled {
        name,
        graph,
        inputs: common::read_npys(&dir, "input"),
        ort: common::read_npys(&dir, "output"),
    }
}

fn dtype_name(p: Precision) -> &'static str {
    match p {
        Precision::F16 => "f16",
        Precision::F32 | Precision::F32ChannelsLast => "f32",
    }
}

/// Runs every fixture on `target` in f32 and f16, twice each; panics listing every
/// fixture that is wrong, not bit-identical from run to run, or refused unexpectedly.
fn check_target(target: &str) {
    let Some(all) = filled() else {
        return;
    };
    let Some(mut dev) = open_or_skip(target) else {
        return;
    };
    let expected = expected();
    let mut failures = Vec::new();
    let mut refused = 0;
    let every =
        target != "vulkan" || std::env::var("WEFT_CORPUS_LAVAPIPE").is_ok_and(|v| v == "all");
    for f in all
        .iter()
        .filter(|f| every || LAVAPIPE.contains(&f.name.as_str()))
    {
        for precision in [Precision::F32, Precision::F16] {
            let on = format!("{target}:{}", dtype_name(precision));
            let want_refusal = expected
                .get(&(f.name.clone(), on.clone()))
                .or_else(|| expected.get(&(f.name.clone(), "*".to_string())));
            let start = Instant::now();
            let compiled = f.graph.clone().and_then(|g| {
                let opts = CompileOptions::default().with_precision(precision);
                CompiledModel::compile(&g, &dev.limits(), &opts).map_err(|e| e.to_string())
            });
            let model = match (compiled, want_refusal) {
                (Err(msg), Some(word)) if msg.contains(word.as_str()) => {
                    refused += 1;
                    continue;
                }
                (Err(msg), _) => {
                    failures.push(format!("{} on {on}: refused: {msg}", f.name));
                    continue;
                }
                (Ok(_), Some(word)) => {
                    failures.push(format!(
                        "{} on {on}: compiles, but expected.txt says it is refused ({word}): take the line out",
                        f.name
                    ));
                    continue;
                }
                (Ok(m), None) => m,
            };
            let outcome = model.load(dev.as_mut()).and_then(|loaded| {
                let first = loaded.run(dev.as_mut(), &f.inputs);
                let second = loaded.run(dev.as_mut(), &f.inputs);
                loaded.free(dev.as_mut());
                Ok((first?, second?))
            });
            let (first, second) = match outcome {
                Ok(runs) => runs,
                Err(e) => {
                    failures.push(format!("{} on {on}: failed to run: {e}", f.name));
                    continue;
                }
            };
            let tol = tolerance(precision);
            let mut worst = 0.0f64;
            for (k, ((a, b), want)) in first.iter().zip(&second).zip(&f.ort).enumerate() {
                let same = a.shape() == b.shape()
                    && a.iter()
                        .zip(b.iter())
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                if !same {
                    failures.push(format!(
                        "{} on {on}: output {k} differs between two runs of the same inputs",
                        f.name
                    ));
                }
                let err = relative_error(a, want);
                worst = worst.max(err);
                if err > tol {
                    failures.push(format!(
                        "{} on {on}: output {k} {err:.2e} from ONNX Runtime (tolerance {tol:e})",
                        f.name
                    ));
                }
            }
            if first.len() != f.ort.len() {
                failures.push(format!(
                    "{} on {on}: {} outputs, ONNX Runtime has {}",
                    f.name,
                    first.len(),
                    f.ort.len()
                ));
            }
            eprintln!(
                "{:<36} {on:<11} {worst:.2e} from ONNX Runtime, twice bit-identical, {:.1} s",
                f.name,
                start.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!("{target}: {refused} refused as expected.txt says");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_graphs_on_the_interpreter() {
    check_target("cpu");
}

#[test]
fn corpus_graphs_on_lavapipe() {
    check_target("vulkan");
}

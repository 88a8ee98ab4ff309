//! Every imported op and attribute form, one single-op model each (built by
//! `op_models.py` with onnx.helper, random inputs of odd sizes), imported by weft,
//! evaluated by the float64 reference and compared with ONNX Runtime on the CPU.
//!
//! Tolerance: the largest difference relative to the largest |output| (at least 1) is
//! at most 1e-5 — ONNX Runtime computes in f32, weft's reference in f64 from the same f32
//! inputs and weights, so only f32 rounding (and ORT's vectorized transcendental
//! approximations) separates them.

mod common;

use ndarray::ArrayD;
use weft_graph::passes::Precision;
use weft_graph::reference;
use weft_onnx::{ImportOptions, load};

const TOLERANCE: f64 = 1e-5;

#[test]
fn single_op_models_match_onnx_runtime() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = built_cases(dir.path());
    assert!(cases.len() >= 100, "only {} cases built", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let graph = match load(&case.join("model.onnx"), &ImportOptions::default()) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{name}: import: {e}"));
                continue;
            }
        };
        let inputs: Vec<ArrayD<f64>> = common::read_npys(case, "input")
            .into_iter()
            .map(|a| a.mapv(f64::from))
            .collect();
        let want = common::read_npys(case, "output");
        let got = match reference::evaluate(&graph, &inputs) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{name}: reference: {e}"));
                continue;
            }
        };
        if let Some(why) = compare(&got, &want, TOLERANCE) {
            failures.push(format!("{name}: {why}"));
        }
    }
    eprintln!(
        "{} single-op models, {} failed",
        cases.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What is wrong where an output ONNX Runtime wrote (every graph output: a TopK's values
/// and indices) differs from weft's beyond `tolerance`; `None` where all agree.
fn compare(got: &[ArrayD<f64>], want: &[ArrayD<f32>], tolerance: f64) -> Option<String> {
    if got.len() < want.len() {
        return Some(format!("{} outputs, {} expected", got.len(), want.len()));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        match common::relative_error(g, w) {
            Ok(err) if err <= tolerance => {}
            Ok(err) => return Some(format!("output {k}: relative error {err:e}")),
            Err(e) => return Some(format!("output {k}: {e}")),
        }
    }
    None
}

/// The single-op models `op_models.py` builds into `dir`, one folder each, in name order.
fn built_cases(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    common::python("op_models.py", &[dir]);
    let mut cases: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    cases
}

/// Every single-op model compiled by weft's model compiler and run on a device, against
/// ONNX Runtime: the kernels (rule-based schedules, templates, index maps, gathers,
/// row reductions) rather than the reference.
fn single_op_models_run_on(target: &str) {
    single_op_models_run_in(target, Precision::F32, &[], KERNEL_TOLERANCE);
}

/// The single-op models whose names start with one of `only` (all where empty),
/// compiled in `precision` and run on `target`, against ONNX Runtime's f32 outputs.
fn single_op_models_run_in(target: &str, precision: Precision, only: &[&str], tolerance: f64) {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let Some(mut dev) = weft_testkit::devices::open_or_skip(target) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = built_cases(dir.path());
    let mut failures = Vec::new();
    let (mut worst, mut ran) = (0.0f64, 0);
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if let Some((_, _, why)) = NOT_ON
            .iter()
            .find(|(t, prefix, _)| *t == target && name.starts_with(prefix))
        {
            eprintln!("  {name}: not run on {target}: {why}");
            continue;
        }
        if !only.is_empty() && !only.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let graph = load(&case.join("model.onnx"), &ImportOptions::default()).unwrap();
        // A model of constants only (IsNaN of an initializer) has no kernel to run.
        if graph.inputs.is_empty() {
            continue;
        }
        ran += 1;
        let inputs = common::read_npys(case, "input");
        let want = common::read_npys(case, "output");
        let mut run = || -> Result<Vec<ArrayD<f32>>, String> {
            let model = weft_model::CompiledModel::compile(
                &graph,
                &dev.limits(),
                &weft_model::CompileOptions::default().with_precision(precision),
            )
            .map_err(|e| e.to_string())?;
            let loaded = model.load(dev.as_mut()).map_err(|e| e.to_string())?;
            let got = loaded.run(dev.as_mut(), &inputs);
            loaded.free(dev.as_mut());
            got.map_err(|e| e.to_string())
        };
        match run() {
            Ok(got) => {
                let got: Vec<ArrayD<f64>> = got.iter().map(|g| g.mapv(f64::from)).collect();
                match compare(&got, &want, tolerance) {
                    Some(why) => failures.push(format!("{name}: {why}")),
                    None => {
                        for (g, w) in got.iter().zip(&want) {
                            if let Ok(err) = common::relative_error(g, w) {
                                worst = worst.max(err);
                            }
                        }
                    }
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!(
        "{} single-op models on {target} in {precision:?}, {} failed; largest error of those that pass {worst:.1e}",
        ran,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Cases a target does not run yet: the target, a case name prefix, and why.
const NOT_ON: &[(&str, &str, &str)] = &[
    (
        "vulkan",
        "argmax_nan",
        "WGSL's IsNaN (`x != x`) is folded to false by the shader compiler, so NaNs are not seen",
    ),
    (
        "vulkan",
        "argmin_nan",
        "WGSL's IsNaN (`x != x`) is folded to false by the shader compiler, so NaNs are not seen",
    ),
];

/// Kernels compute in f32 with their own summation orders and f32 transcendentals.
const KERNEL_TOLERANCE: f64 = 2e-5;

#[test]
fn single_op_models_run_on_lavapipe() {
    single_op_models_run_on("vulkan");
}

#[test]
fn single_op_models_run_in_the_interpreter() {
    single_op_models_run_on("cpu");
}

/// The resizes, transposed and 3-D convolutions and 3-D pools (compositions of gathers,
/// Where masks and the 2-D anchors), attention and rotary embeddings, and the losses (a
/// LogSoftmax, a gather along the class axis at int64 targets, sums) with f16
/// activations: each stored value rounded to 11 significant bits, a handful of roundings
/// between input and output (f32 accumulation in the anchors, softmax in f32), so a few
/// 1e-3 at most; a wrong index or tap is an error of order 1.
const F16_CASES: &[&str] = &[
    "resize_",
    // Grouped 2-D convolutions: the batched implicit GEMM over f16 views.
    "conv_groups",
    "convtranspose_",
    "conv3d_",
    "maxpool3d_",
    "avgpool3d_",
    "maxpool_dilations",
    "maxpool1d_dilations",
    "avgpool_dilations",
    "attention_",
    "rotary_",
    "nll_",
    "sce_",
    // The compositions of this step (normalizations, windows, rearrangements):
    // statistics in f32, f16 storage. Hardmax and IsInf are not here: f16 rounding may
    // tie two maxima, and makes 3.4e38 infinite.
    "layer_norm_stats",
    "rms_norm",
    "mvn",
    "lpnorm_",
    "lppool_",
    "lrn",
    "onehot_",
    "depth_to_space_",
    "space_to_depth",
    "shrink",
    "einsum_batch_diagonal",
    "einsum_two_diagonals",
    "einsum_diagonal_then_product",
];

/// Allowed in f16 against ONNX Runtime's f32 (see [`F16_CASES`]).
const F16_TOLERANCE: f64 = 1e-2;

#[test]
fn single_op_models_run_in_f16_in_the_interpreter() {
    single_op_models_run_in("cpu", Precision::F16, F16_CASES, F16_TOLERANCE);
}

#[test]
fn single_op_models_run_in_f16_on_lavapipe() {
    single_op_models_run_in("vulkan", Precision::F16, F16_CASES, F16_TOLERANCE);
}

/// ONNX's Attention is imported as products and a softmax, which the attention pass
/// fuses where the target holds the kernel: on the interpreter, a causal attention with
/// no cache takes the fused kernel's causal flag (its diagonal is ONNX's there), one
/// with a cache keeps its causal mask as an explicit mask (ONNX's diagonal is shifted by
/// the cache's length, the flag's is not), and a softcap stays unfused. The outputs of
/// all three are checked against ONNX Runtime above.
#[test]
fn imported_attention_is_fused_where_it_is_the_fused_op() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    built_cases(dir.path());
    let limits = weft_runtime::Target::parse("cpu").unwrap().limits();
    let fused = |case: &str| -> Vec<String> {
        let graph = load(
            &dir.path().join(case).join("model.onnx"),
            &ImportOptions::default(),
        )
        .unwrap();
        let model = weft_model::CompiledModel::compile(
            &graph,
            &limits,
            &weft_model::CompileOptions::default(),
        )
        .unwrap();
        model
            .graph
            .nodes
            .iter()
            .filter(|n| matches!(n.op, weft_graph::Op::Attention(_)))
            .map(|n| format!("{} inputs={}", n.op, n.inputs.len()))
            .collect()
    };
    let causal = fused("attention_4d_causal_cross");
    assert_eq!(causal.len(), 1, "{causal:?}");
    assert!(
        causal[0].contains("causal") && causal[0].ends_with("inputs=3"),
        "{causal:?}"
    );
    let past = fused("attention_3d_gqa_causal_past");
    assert_eq!(past.len(), 1, "{past:?}");
    assert!(
        !past[0].contains("causal") && past[0].ends_with("inputs=4"),
        "{past:?}"
    );
    let masked = fused("attention_4d_gqa_causal_past_bool_mask");
    assert!(
        masked.len() == 1 && masked[0].contains("nan guard"),
        "{masked:?}"
    );
    assert_eq!(fused("attention_4d_mqa_softcap"), Vec::<String>::new());
}

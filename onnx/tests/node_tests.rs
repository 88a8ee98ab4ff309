//! ONNX's backend node tests, every one, through weft on `cpu`: each model imported,
//! evaluated by the float64 reference and compiled and run by weft's kernels on the
//! interpreter, both compared with the test's expected outputs. Each test's outcome —
//! `pass`, or `refused: WHY` (a typed error naming the op or the reason) — must be the
//! one `node_tests.expected` lists: a newly passing test, a regression or a new refusal
//! fails until the file is rewritten (`WEFT_BLESS=1`, which also rewrites
//! `docs/node-tests.md`). A wrong result or a panic fails whatever the file says: each
//! test runs under `catch_unwind`, so one panic is reported as that test's failure.
//!
//! Where a test is refused and has integer or bool graph inputs (`axes`, `starts`,
//! `split`, `k`, `shape`, `pads`, `repeats`, ...), it is imported again with those inputs
//! bound to the test's values (`ImportOptions::constants`): weft fixes shapes at import.
//! An input the import names as needed at import (`ImportError::NotConstant`) is bound
//! whatever its type: Resize's float `scales` and `roi` decide the output's shape and
//! the taps, as the integer `sizes` do.
//!
//! The data: the onnx 1.19.1 wheel's `onnx/backend/test/data/node` (1,615 tests;
//! `scripts/onnx-node-tests.sh DIR` fetches and unpacks it, as CI does). Point
//! `WEFT_ONNX_NODE_TESTS` at that folder; without it the test looks in the installed
//! onnx package, and skips where there is none, unless `WEFT_REQUIRE` names
//! `onnx-node-tests`.

mod common;
#[path = "node_tests/report.rs"]
mod report;

use report::{Row, docs_page, expected_file, read_expected};

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ndarray::ArrayD;
use prost::Message;
use weft_graph::{Graph, GraphError, reference};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel, ModelError};
use weft_onnx::proto::{ModelProto, TensorProto};
use weft_onnx::versions::MAX_OPSET;
use weft_onnx::{Const, ConstData, ImportError, ImportOptions, from_model, tensor_to_const};
use weft_runtime::Target;

/// The expected outcome of every test, one `NAME: OUTCOME` line each.
const EXPECTED: &str = "node_tests.expected";

/// The docs page written from the outcomes (and checked against them).
const DOCS: &str = "../docs/node-tests.md";

/// The onnx release whose node test data the expected outcomes are for.
const DATA: &str = "onnx 1.19.1";

/// The float64 reference against ONNX's expected outputs (computed in f32 or f64 by
/// NumPy; weft's reference computes in f64 from the inputs): relative to the output's
/// largest magnitude, at least 1.
const REFERENCE_TOLERANCE: f64 = 1e-5;

/// weft's kernels on the interpreter, storing f32, against ONNX's expected outputs.
const F32_TOLERANCE: f64 = 1e-4;

/// weft's kernels where the output is float16 (f16 storage, f32 arithmetic): a few
/// units in the last place of an f16 (2^-10 ≈ 9.8e-4).
const F16_TOLERANCE: f64 = 4e-3;

/// Tests whose expected outputs are coarser, with the tolerance they need and why.
const LOOSER: &[(&str, f64, &str)] = &[(
    "test_averagepool_2d_ceil_last_window_starts_on_pad",
    1e-3,
    "the expected values are written to 4 digits (ONNX Runtime agrees with weft to 1e-7)",
)];

/// Tests whose expected outputs (from ONNX's Python reference) neither ONNX Runtime nor
/// PyTorch gives, checked against ONNX Runtime's outputs (output 0, row-major) instead,
/// with why. weft follows ONNX Runtime (`docs/onnx.md`, Resize).
pub(crate) const ONNX_RUNTIME_OUTPUTS: &[(&str, &[f32], &str)] = &[
    (
        "test_resize_downsample_scales_linear_align_corners",
        &[1.0, 4.0],
        "ONNX's reference divides by `len · scale − 1` = 1.4, not by the output length less one",
    ),
    (
        "test_resize_downsample_scales_cubic_align_corners",
        &[1.0, 2.5, 4.0, 7.0, 8.5, 10.0, 13.0, 14.5, 16.0],
        "ONNX's reference divides by `len · scale − 1` = 2.2, not by the output length less one",
    ),
];

fn data_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("WEFT_ONNX_NODE_TESTS") {
        return Some(PathBuf::from(d));
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node'))",
        ])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.is_dir().then_some(p)
}

/// What became of one test.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// Right on the reference and the interpreter, with these integer inputs bound.
    Pass { bound: Vec<String> },
    /// A typed error: `key` (the op or the reason, as the expected file keeps it) and
    /// the whole message.
    Refused { key: String, message: String },
    /// A wrong result, or an error that is weft's fault (never accepted).
    Wrong(String),
    /// A panic, with its message and place (never accepted).
    Panic(String),
}

impl Outcome {
    /// As the expected file writes it.
    fn line(&self) -> String {
        match self {
            Outcome::Pass { bound } if bound.is_empty() => "pass".into(),
            Outcome::Pass { bound } => format!("pass, bound: {}", bound.join(" ")),
            Outcome::Refused { key, .. } => format!("refused: {key}"),
            Outcome::Wrong(why) => format!("WRONG: {why}"),
            Outcome::Panic(why) => format!("PANIC: {why}"),
        }
    }

    fn refused(key: impl Into<String>, message: impl std::fmt::Display) -> Outcome {
        Outcome::Refused {
            key: key.into(),
            message: message.to_string(),
        }
    }
}

/// The start of a message: up to its first `: ` or ` (`, where the detail begins.
fn head(what: &str) -> &str {
    let end = [what.find(": "), what.find(" (")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(what.len());
    what[..end].trim()
}

/// An import refusal as the expected file keeps it: the op, or the reason.
fn import_key(e: &ImportError) -> String {
    match e {
        ImportError::Io { .. } => "cannot read the file".into(),
        ImportError::NotOnnx(_) => "not ONNX".into(),
        ImportError::NoGraph => "no graph".into(),
        ImportError::NoOpset => "no opset of the default domain".into(),
        ImportError::Opset(n) => format!("opset {n}"),
        ImportError::Domain { domain, .. } => format!("domain {domain}"),
        ImportError::UnsupportedOp { op, .. } => format!("op {op}"),
        ImportError::Attribute { op, attr, .. } => format!("{op} attribute {attr}"),
        ImportError::Node { op, what, .. } => format!("{op} {}", head(what)),
        ImportError::NotConstant { op, index, .. } => format!("{op} input {index} computed"),
        ImportError::Undefined { .. } => "an undefined input".into(),
        ImportError::ExternalData(_) => "external data".into(),
        ImportError::Tensor { what, .. } => format!("tensor {}", head(what)),
        ImportError::UnboundDim { .. } => "an unbound dimension".into(),
        ImportError::Constant { what, .. } => format!("bound input {}", head(what)),
        ImportError::Input { what, .. } => format!("input {}", head(what)),
        ImportError::ShapeMismatch { .. } => "a stated shape weft does not infer".into(),
        ImportError::MissingOutput(_) => "an output nothing computes".into(),
        ImportError::Cache(_) => "a decoder step over caches".into(),
        ImportError::Graph(g) => graph_key(g),
    }
}

fn graph_key(e: &GraphError) -> String {
    match e {
        GraphError::Shape { op, what, .. } => format!("{op} {}", head(what)),
        GraphError::DuplicateName(_) => "a name used twice".into(),
        GraphError::Undefined { .. } => "a tensor nothing computes".into(),
        GraphError::NoTensor(_) => "a tensor that does not exist".into(),
        GraphError::UncomputedOutput(_) => "an output nothing computes".into(),
        GraphError::Input { what, .. } => format!("input {}", head(what)),
        GraphError::UnknownPass { .. } | GraphError::FixedPass { .. } => "a pass".into(),
        GraphError::NoOutputs => "no outputs".into(),
        GraphError::TooLarge { .. } => "a tensor past i32 indices".into(),
        GraphError::Empty { .. } => "an empty tensor".into(),
        GraphError::IndexOutOfRange { op, .. } => format!("{op} an index out of range"),
        GraphError::Symbolic { op, .. } => format!("{op} a symbolic dimension"),
    }
}

/// A compile's failure: weft refusing what it cannot lower is a refusal; anything else
/// (an invalid graph after the passes, a device failing) is weft's fault.
fn compile_outcome(e: ModelError) -> Outcome {
    match &e {
        ModelError::Lower { op, source, .. } => {
            Outcome::refused(format!("{op} lowering: {}", head(&source.to_string())), &e)
        }
        ModelError::Kernel { .. } => Outcome::refused("kernel lowering", &e),
        ModelError::Precision(_) => Outcome::refused("precision", &e),
        ModelError::TooLargeForDevice { .. } => Outcome::refused("the device's memory", &e),
        // A tensor weft declines to hold (empty, or past i32 indices) is a typed refusal.
        ModelError::Graph(
            g @ (GraphError::Empty { .. } | GraphError::TooLarge { .. } | GraphError::NoOutputs),
        ) => Outcome::refused(graph_key(g), &e),
        ModelError::Graph(_)
        | ModelError::WeightWithoutData { .. }
        | ModelError::Download { .. }
        | ModelError::Device { .. }
        | ModelError::Run(_)
        | ModelError::Input { .. }
        | ModelError::IndexOutOfRange { .. }
        | ModelError::MemoryOverride(_)
        | ModelError::Switch { .. }
        | ModelError::Setting { .. }
        | ModelError::Symbolic { .. }
        | ModelError::Generate(_) => Outcome::Wrong(format!("compile: {e}")),
    }
}

/// One data set: the input and output tensors.
struct DataSet {
    name: String,
    inputs: Vec<TensorProto>,
    outputs: Vec<TensorProto>,
}

fn read_tensors(dir: &Path, prefix: &str) -> Result<Vec<TensorProto>, String> {
    let mut out = Vec::new();
    loop {
        let p = dir.join(format!("{prefix}_{}.pb", out.len()));
        if !p.exists() {
            return Ok(out);
        }
        let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        out.push(
            TensorProto::decode(bytes.as_slice()).map_err(|e| format!("{}: {e}", p.display()))?,
        );
    }
}

fn data_sets(dir: &Path) -> Result<Vec<DataSet>, String> {
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    sets.iter()
        .map(|s| {
            Ok(DataSet {
                name: s
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                inputs: read_tensors(s, "input")?,
                outputs: read_tensors(s, "output")?,
            })
        })
        .collect()
}

/// The model's graph inputs that are not initializers, in order: the test's
/// `input_N.pb` files feed them.
fn fed_inputs(model: &ModelProto) -> Vec<String> {
    let Some(g) = &model.graph else {
        return Vec::new();
    };
    g.input
        .iter()
        .filter(|vi| !g.initializer.iter().any(|t| t.name == vi.name))
        .map(|vi| vi.name.clone())
        .collect()
}

/// `got` against `want`, each output within `tolerance` (relative to its largest
/// magnitude, at least 1), NaNs and infinities where they are expected.
fn compare(
    what: &str,
    got: &[ArrayD<f64>],
    want: &[ArrayD<f32>],
    tolerance: &[f64],
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} outputs, {} expected",
            got.len(),
            want.len()
        ));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        match common::relative_error(g, w) {
            Ok(err) if err <= tolerance[k] => {}
            Ok(err) => {
                return Err(format!(
                    "{what}: output {k}: relative error {err:.1e} (tolerance {:.0e})",
                    tolerance[k]
                ));
            }
            Err(e) => return Err(format!("{what}: output {k}: {e}")),
        }
    }
    Ok(())
}

/// Which of a test's integer and bool inputs to bind at import.
#[derive(Clone, Debug)]
enum Bind {
    /// These, by name.
    Named(Vec<String>),
    /// Every one the data holds.
    All,
}

/// One attempt at a test: every data set imported (with `bind`'s inputs bound to the
/// set's values), evaluated by the reference, compiled and run on the interpreter.
fn attempt(model: &ModelProto, sets: &[DataSet], bind: &Bind, test: &str) -> Outcome {
    let looser = LOOSER
        .iter()
        .find(|(n, _, _)| *n == test)
        .map(|&(_, t, _)| t);
    let instead = ONNX_RUNTIME_OUTPUTS
        .iter()
        .find(|(n, _, _)| *n == test)
        .map(|&(_, v, _)| v);
    let fed = fed_inputs(model);
    let mut bound = Vec::new();
    for set in sets {
        let mut opts = ImportOptions::default();
        let values: HashMap<&str, &TensorProto> =
            fed.iter().map(String::as_str).zip(&set.inputs).collect();
        for (name, t) in &values {
            let wanted = match bind {
                Bind::Named(names) => names.iter().any(|n| n == name),
                Bind::All => true,
            };
            // Named inputs are those an op needs at import (Resize's float `scales` and
            // `roi` too); all the others, integers and bools only.
            let value = match bind {
                Bind::Named(_) => tensor_to_const(t).ok(),
                Bind::All => integer_value(t),
            };
            if let (true, Some(c)) = (wanted, value) {
                opts.constants.insert(name.to_string(), c);
            }
        }
        bound = opts.constants.keys().cloned().collect();
        bound.sort();
        let graph = match from_model(model, &opts) {
            Ok(g) => g,
            Err(e) => return Outcome::refused(import_key(&e), &e),
        };
        let inputs = match graph_inputs(&graph, &values) {
            Ok(v) => v,
            Err(why) => return Outcome::Wrong(format!("{}: {why}", set.name)),
        };
        let mut want = Vec::new();
        for (k, t) in set.outputs.iter().enumerate() {
            match tensor_to_const(t) {
                Ok(c) => {
                    let mut w = c.to_float().0;
                    if let (0, Some(v)) = (k, instead) {
                        match ArrayD::from_shape_vec(w.raw_dim(), v.to_vec()) {
                            Ok(ort) => w = ort,
                            Err(e) => {
                                return Outcome::Wrong(format!(
                                    "{}: ONNX Runtime's outputs do not fit output 0: {e}",
                                    set.name
                                ));
                            }
                        }
                    }
                    want.push(w);
                }
                Err(e) => {
                    return Outcome::Wrong(format!(
                        "{}: expected output {k} cannot be read, yet the model imported: {e}",
                        set.name
                    ));
                }
            }
        }
        let f64_inputs: Vec<ArrayD<f64>> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
        let got = match reference::evaluate(&graph, &f64_inputs) {
            Ok(g) => g,
            Err(e) => return Outcome::Wrong(format!("{}: reference: {e}", set.name)),
        };
        // An f16 output's expected values were computed in f16 by ONNX's reference (the
        // attention tests' `_fp16` cases): f16's own rounding, not the f64 reference's.
        let reference_tol: Vec<f64> = graph
            .outputs
            .iter()
            .map(|&o| match graph.tensor(o).dtype {
                DType::F16 => F16_TOLERANCE,
                DType::F32 | DType::I32 | DType::U32 | DType::Bool => REFERENCE_TOLERANCE,
            })
            .map(|t| looser.map_or(t, |l| l.max(t)))
            .collect();
        if let Err(why) = compare("reference", &got, &want, &reference_tol) {
            return Outcome::Wrong(format!("{}: {why}", set.name));
        }
        let kernel_tol: Vec<f64> = graph
            .outputs
            .iter()
            .map(|&o| match graph.tensor(o).dtype {
                DType::F16 => F16_TOLERANCE,
                DType::F32 | DType::I32 | DType::U32 | DType::Bool => F32_TOLERANCE,
            })
            .map(|t| looser.map_or(t, |l| l.max(t)))
            .collect();
        match run_kernels(&graph, &inputs) {
            Ok(got) => {
                let got: Vec<ArrayD<f64>> = got.iter().map(|a| a.mapv(f64::from)).collect();
                if let Err(why) = compare("interpreter", &got, &want, &kernel_tol) {
                    return Outcome::Wrong(format!("{}: {why}", set.name));
                }
            }
            Err(refused) => return refused,
        }
    }
    Outcome::Pass { bound }
}

/// `t`'s value where it is integers or bools (what the runner binds).
fn integer_value(t: &TensorProto) -> Option<Const> {
    match tensor_to_const(t) {
        Ok(
            c @ Const {
                data: ConstData::Int(_) | ConstData::Bool(_),
                ..
            },
        ) => Some(c),
        Ok(Const {
            data: ConstData::Float { .. },
            ..
        })
        | Err(_) => None,
    }
}

/// The values of `graph`'s inputs, by name from the data set, as f32 arrays.
fn graph_inputs(
    graph: &Graph,
    values: &HashMap<&str, &TensorProto>,
) -> Result<Vec<ArrayD<f32>>, String> {
    graph
        .inputs
        .iter()
        .map(|&id| {
            let t = graph.tensor(id);
            let pb = values
                .get(t.name.as_str())
                .ok_or_else(|| format!("no data for input `{}`", t.name))?;
            let c = tensor_to_const(pb).map_err(|e| format!("input `{}`: {e}", t.name))?;
            let a = c.to_float().0;
            if a.shape() != t.shape.as_slice() {
                return Err(format!(
                    "input `{}`: the data has shape {:?}, the graph {:?}",
                    t.name,
                    a.shape(),
                    t.shape
                ));
            }
            Ok(a)
        })
        .collect()
}

/// `graph` compiled for `cpu` and run on the interpreter.
fn run_kernels(graph: &Graph, inputs: &[ArrayD<f32>]) -> Result<Vec<ArrayD<f32>>, Outcome> {
    let target = Target::Cpu;
    let model = CompiledModel::compile(graph, &target.limits(), &CompileOptions::default())
        .map_err(compile_outcome)?;
    let mut dev =
        weft_runtime::open(&target).map_err(|e| Outcome::Wrong(format!("interpreter: {e}")))?;
    let exe = model
        .load(dev.as_mut())
        .map_err(|e| Outcome::Wrong(format!("load: {e}")))?;
    let out = exe
        .run(dev.as_mut(), inputs)
        .map_err(|e| Outcome::Wrong(format!("run: {e}")));
    exe.free(dev.as_mut());
    out
}

/// One test, start to end (without catching panics).
fn run_test(dir: &Path) -> Outcome {
    let bytes = match std::fs::read(dir.join("model.onnx")) {
        Ok(b) => b,
        Err(e) => return Outcome::Wrong(format!("model.onnx: {e}")),
    };
    let mut model = match ModelProto::decode(bytes.as_slice()) {
        Ok(m) => m,
        Err(e) => return Outcome::refused("not ONNX", e),
    };
    let sets = match data_sets(dir) {
        Ok(s) => s,
        Err(e) => return Outcome::Wrong(format!("test data: {e}")),
    };
    // Tests written at opsets past weft's newest are refused as they are, then run at
    // weft's newest (the ops weft imports only gained element types since; an op added
    // since is refused as not existing yet).
    let opset = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version);
    if opset.is_some_and(|v| v > MAX_OPSET) {
        match from_model(&model, &ImportOptions::default()) {
            Err(ImportError::Opset(_)) => {}
            other => {
                return Outcome::Wrong(format!(
                    "opset {opset:?} not refused as such: {:?}",
                    other.map(|_| "imported")
                ));
            }
        }
        for o in &mut model.opset_import {
            if o.domain.is_empty() || o.domain == "ai.onnx" {
                o.version = MAX_OPSET;
            }
        }
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    // As it is; then, while an op needs a graph input's value at import, with that input
    // bound to the test's; then, if still refused, with every integer input bound.
    let fed = fed_inputs(&model);
    let bindable = |name: &str| {
        fed.iter()
            .position(|n| n == name)
            .and_then(|i| sets.first()?.inputs.get(i))
            .is_some_and(|t| tensor_to_const(t).is_ok())
    };
    let bindable_int = |name: &str| {
        fed.iter()
            .position(|n| n == name)
            .and_then(|i| sets.first()?.inputs.get(i))
            .and_then(integer_value)
            .is_some()
    };
    let mut named: Vec<String> = Vec::new();
    loop {
        let outcome = attempt(&model, &sets, &Bind::Named(named.clone()), &name);
        if !matches!(outcome, Outcome::Refused { .. }) {
            return outcome;
        }
        let next = match from_model(&model, &options_binding(&model, &sets, &named)) {
            Err(ImportError::NotConstant {
                input,
                graph_input: true,
                ..
            }) if bindable(&input) && !named.contains(&input) => Some(input),
            Ok(_) | Err(_) => None,
        };
        match next {
            Some(input) => named.push(input),
            None => {
                let any_left = fed.iter().any(|n| bindable_int(n) && !named.contains(n));
                return if any_left {
                    attempt(&model, &sets, &Bind::All, &name)
                } else {
                    outcome
                };
            }
        }
    }
}

/// Import options binding `named` to the first data set's values.
fn options_binding(model: &ModelProto, sets: &[DataSet], named: &[String]) -> ImportOptions {
    let mut opts = ImportOptions::default();
    if let Some(set) = sets.first() {
        for (name, t) in fed_inputs(model).iter().zip(&set.inputs) {
            if let (true, Ok(c)) = (named.contains(name), tensor_to_const(t)) {
                opts.constants.insert(name.clone(), c);
            }
        }
    }
    opts
}

thread_local! {
    /// The message and place of the last panic on this thread, while a test runs.
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    static CAPTURING: RefCell<bool> = const { RefCell::new(false) };
}

/// A panic hook that keeps a test's panic for its report instead of printing it, and
/// prints any other panic as the default hook does.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if CAPTURING.with(|c| *c.borrow()) {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a non-string payload)".into());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
        } else {
            default(info);
        }
    }));
}

/// One test, a panic caught and reported as its outcome.
fn run_caught(dir: &Path) -> Outcome {
    CAPTURING.with(|c| *c.borrow_mut() = true);
    let r = catch_unwind(AssertUnwindSafe(|| run_test(dir)));
    CAPTURING.with(|c| *c.borrow_mut() = false);
    match r {
        Ok(o) => o,
        Err(_) => Outcome::Panic(
            PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "(no message)".into()),
        ),
    }
}

#[test]
fn backend_node_tests() {
    let Some(root) = data_dir() else {
        common::skip(
            "onnx-node-tests",
            "no ONNX node test data: set WEFT_ONNX_NODE_TESTS (scripts/onnx-node-tests.sh fetches it)",
        );
        return;
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("model.onnx").exists())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "{}: no node tests there", root.display());
    install_panic_hook();
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<(Outcome, Duration)>>> = Mutex::new(vec![None; dirs.len()]);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(dir) = dirs.get(i) else { break };
                    let t = Instant::now();
                    let o = run_caught(dir);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some((o, t.elapsed()));
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let rows: Vec<Row> = dirs
        .iter()
        .zip(results)
        .map(|(dir, r)| {
            let (outcome, time) = r.expect("every test ran");
            let model = std::fs::read(dir.join("model.onnx"))
                .ok()
                .and_then(|b| ModelProto::decode(b.as_slice()).ok());
            let (covered, basis) = model.as_ref().map_or((false, false), report::measures);
            Row {
                name: dir
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                covered,
                basis,
                outcome,
                time,
            }
        })
        .collect();

    let tests = common::tests_dir();
    let expected_path = tests.join(EXPECTED);
    let docs_path = tests.join("..").join(DOCS);
    let expected = read_expected(&expected_path);
    let bless = std::env::var("WEFT_BLESS").is_ok_and(|v| v == "1");

    // The run, summed up.
    let page = docs_page(&rows);
    eprintln!(
        "node tests: {} in {:.1} s on {workers} threads",
        rows.len(),
        elapsed.as_secs_f64()
    );
    let mut slow: Vec<&Row> = rows.iter().collect();
    slow.sort_by_key(|r| std::cmp::Reverse(r.time));
    for r in slow.iter().take(8) {
        eprintln!("  slowest: {} {:.2} s", r.name, r.time.as_secs_f64());
    }
    for line in page
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains("---"))
        .take(10)
    {
        eprintln!("  {line}");
    }

    let mut bad = Vec::new();
    let mut changed = Vec::new();
    for r in &rows {
        match &r.outcome {
            Outcome::Wrong(_) | Outcome::Panic(_) => {
                bad.push(format!("{}: {}", r.name, r.outcome.line()))
            }
            Outcome::Pass { .. } | Outcome::Refused { .. } => {}
        }
        let line = r.outcome.line();
        match expected.get(&r.name) {
            Some(e) if *e == line => {}
            Some(e) => {
                let detail = match &r.outcome {
                    Outcome::Refused { message, .. } => format!("\n      ({message})"),
                    Outcome::Pass { .. } | Outcome::Wrong(_) | Outcome::Panic(_) => String::new(),
                };
                changed.push(format!("  {}: {e}  ->  {line}{detail}", r.name));
            }
            None => changed.push(format!("  {}: (not listed)  ->  {line}", r.name)),
        }
    }
    for name in expected.keys() {
        if !rows.iter().any(|r| &r.name == name) {
            changed.push(format!(
                "  {name}: listed, but no such test in {}",
                root.display()
            ));
        }
    }
    let docs_stale = std::fs::read_to_string(&docs_path).ok().as_deref() != Some(page.as_str());
    if bless {
        std::fs::write(&expected_path, expected_file(&rows))
            .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
        std::fs::write(&docs_path, &page)
            .unwrap_or_else(|e| panic!("{}: {e}", docs_path.display()));
        eprintln!(
            "WEFT_BLESS=1: wrote {} and {} ({} changes)",
            expected_path.display(),
            docs_path.display(),
            changed.len()
        );
    }
    if !changed.is_empty() {
        eprintln!(
            "{} node tests differ from {} (expected  ->  now):",
            changed.len(),
            expected_path.display()
        );
        for c in &changed {
            eprintln!("{c}");
        }
    }
    for b in &bad {
        eprintln!("  {b}");
    }
    assert!(
        bad.is_empty(),
        "{} node tests wrong or panicking (never accepted)",
        bad.len()
    );
    if !bless {
        assert!(
            changed.is_empty(),
            "{} node tests changed outcome: if each change is meant, rewrite the list with \
             `WEFT_BLESS=1 cargo test -p weft-onnx --test node_tests` and commit it",
            changed.len()
        );
        assert!(
            !docs_stale,
            "{} is not what the outcomes give: rewrite it with WEFT_BLESS=1",
            docs_path.display()
        );
    }
}

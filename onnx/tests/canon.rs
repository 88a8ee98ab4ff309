//! Canonical forms of what PyTorch's exporters write (issue 59, item 1): real exports
//! of `nn.GELU` (erf and tanh), `nn.SiLU`, `nn.Hardswish`, `nn.Hardsigmoid`, `nn.Mish`,
//! `nn.LayerNorm` (both exporters write LayerNormalization at opset 17), Hugging Face's
//! Llama RMSNorm and T5 layer norm (an RMS norm), a BERT feed-forward
//! block and Llama's rotary embedding (`q · cos + rotate_half(q) · sin`), each by the TorchScript and the dynamo exporter at opset 17
//! (`fixtures/canon/export.py`; `fixtures/canon/ops.txt` lists what each file holds).
//!
//! Each is imported, run through the pass pipeline, and must come out as the one op
//! (no `Erf`, one `Gelu`, ...), then compiled for the interpreter (`cpu`) and run: its
//! outputs must be within weft's f32 tolerance of ONNX Runtime's.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use ndarray::{ArrayD, IxDyn};
use weft_graph::Graph;
use weft_graph::passes::{Precision, optimize};
use weft_model::measure::{relative_error, tolerance};
use weft_model::{CompileOptions, CompiledModel};
use weft_onnx::{ImportOptions, load};
use weft_testkit::devices::open_or_skip;

/// Each fixture and the op counts its optimized graph must have (every op it names, the
/// count given; `0` for one that must be gone).
const EXPECTED: &[(&str, &[(&str, usize)])] = &[
    ("gelu", &[("Gelu", 1), ("Erf", 0), ("Mul", 0)]),
    ("gelu_tanh", &[("Gelu", 1), ("Tanh", 0), ("Mul", 0)]),
    ("silu", &[("Silu", 1), ("Sigmoid", 0), ("Mul", 0)]),
    ("hardswish", &[("HardSwish", 1)]),
    ("hardsigmoid", &[("HardSigmoid", 1)]),
    ("mish", &[("Mish", 1), ("Tanh", 0), ("Softplus", 0)]),
    ("layer_norm", &[("LayerNormalization", 1)]),
    (
        "bert_ffn",
        &[("Gelu", 1), ("Erf", 0), ("Mul", 0), ("MatMul", 2)],
    ),
    (
        "llama_rms_norm",
        &[
            ("RMSNormalization", 1),
            ("ReduceMean", 0),
            ("Sqrt", 0),
            ("Mul", 0),
        ],
    ),
    (
        "t5_layer_norm",
        &[
            ("RMSNormalization", 1),
            ("ReduceMean", 0),
            ("Sqrt", 0),
            ("Mul", 0),
        ],
    ),
    (
        "llama_rotary",
        &[
            ("Rotary", 1),
            ("Slice", 0),
            ("Neg", 0),
            ("Concat", 0),
            ("Mul", 0),
        ],
    ),
];

fn fixtures_dir() -> PathBuf {
    common::tests_dir().join("fixtures/canon")
}

/// How many nodes of each op `g` has.
fn op_counts(g: &Graph) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for n in &g.nodes {
        *counts.entry(n.op.def().name().to_string()).or_default() += 1;
    }
    counts
}

/// Inputs `[2, 5, 16]` from a fixed sequence in [-4, 4) (GELU's and HardSwish's bends).
fn input(g: &Graph) -> Vec<ArrayD<f32>> {
    let mut seed = 59u64;
    g.inputs
        .iter()
        .map(|&i| {
            ArrayD::from_shape_fn(IxDyn(&g.tensor(i).shape), |_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((seed >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
            })
        })
        .collect()
}

#[test]
fn exported_activations_and_norms_become_one_op() {
    let mut failures = Vec::new();
    for (name, want) in EXPECTED {
        for exporter in ["torchscript", "dynamo"] {
            let file = fixtures_dir().join(format!("{name}_{exporter}.onnx"));
            let g = load(&file, &ImportOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let (h, _) = optimize(&g).unwrap_or_else(|e| panic!("{name}_{exporter}: {e}"));
            let counts = op_counts(&h);
            for &(op, n) in *want {
                let got = counts.get(op).copied().unwrap_or(0);
                if got != n {
                    failures.push(format!(
                        "{name}_{exporter}: {got} {op} node(s), not {n}: {counts:?}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn exported_activations_and_norms_match_onnx_runtime_on_cpu() {
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let mut failures = Vec::new();
    for (name, _) in EXPECTED {
        for exporter in ["torchscript", "dynamo"] {
            let file = fixtures_dir().join(format!("{name}_{exporter}.onnx"));
            let g = load(&file, &ImportOptions::default()).expect("imports");
            let x = input(&g);
            let Some(want) = common::ort_run(&file, &x) else {
                return;
            };
            let opts = CompileOptions::default().with_precision(Precision::F32);
            let model = CompiledModel::compile(&g, &dev.limits(), &opts)
                .unwrap_or_else(|e| panic!("{name}_{exporter}: {e}"));
            let loaded = model.load(dev.as_mut()).expect("loads");
            let got = loaded.run(dev.as_mut(), &x).expect("runs");
            loaded.free(dev.as_mut());
            let err = relative_error(&got[0], &want[0]);
            eprintln!("{name}_{exporter}: {err:.2e} from ONNX Runtime");
            if err > tolerance(Precision::F32) {
                failures.push(format!("{name}_{exporter}: {err:.2e} from ONNX Runtime"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! Concats written in place by their producers (issue 59, item 3), checked against ONNX
//! Runtime on torchvision's exports: a small DenseNet (every dense layer concatenates
//! all the feature maps of its block so far, so each block's Concats are one chain in
//! one buffer) and Inception blocks (InceptionA, InceptionE with its nested Concats as the
//! dynamo exporter keeps them, GoogLeNet's Inception) — `fixtures/concat/export.py`.
//!
//! Each is compiled with no Concat left as a kernel, at batch 1 (a channel slice of an
//! NCHW buffer is one contiguous range) and batch 2 (a strided one), odd spatial sizes,
//! in f32, f32 stored NHWC and f16 (NHWC: a slice is strided at any batch), and run on
//! the interpreter and on Vulkan. A run poisons every output and intermediate buffer
//! with NaN first (`Executable::run`): a producer writing the wrong slice leaves NaNs
//! or the wrong channels where its slice is read, and a block buffer reused before its
//! last reader ran leaves another tensor's values there; either is far outside the
//! tolerance.

mod common;

use std::path::PathBuf;

use ndarray::{ArrayD, IxDyn};
use weft_graph::Graph;
use weft_graph::op::Op;
use weft_graph::passes::Precision;
use weft_model::measure::{relative_error, tolerance};
use weft_model::{CompileOptions, CompiledModel};
use weft_onnx::{ImportOptions, load};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

/// Each fixture and how many Concats it has (all of them must cost no kernel).
const FIXTURES: &[(&str, usize)] = &[
    ("densenet_small", 7),
    ("inception_small", 3),
    ("inception_small_dynamo", 5),
];

fn fixture(name: &str) -> PathBuf {
    common::tests_dir().join(format!("fixtures/concat/{name}.onnx"))
}

fn import(name: &str, batch: usize) -> Graph {
    let opts = ImportOptions {
        batch: Some(batch),
        ..ImportOptions::default()
    };
    load(&fixture(name), &opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Inputs from a fixed sequence in [-2, 2).
fn input(g: &Graph) -> Vec<ArrayD<f32>> {
    let mut seed = 3u64;
    g.inputs
        .iter()
        .map(|&i| {
            ArrayD::from_shape_fn(IxDyn(&g.tensor(i).shape), |_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((seed >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            })
        })
        .collect()
}

/// Compiles `name` at `batch` for `dev` in `precision`, checks that every Concat is a
/// view, runs it, and returns its error from ONNX Runtime (`None`: no ONNX Runtime).
fn error_from_onnx_runtime(
    dev: &mut dyn Device,
    name: &str,
    concats: usize,
    batch: usize,
    precision: Precision,
) -> Option<f64> {
    let g = import(name, batch);
    let x = input(&g);
    let want = common::ort_run(&fixture(name), &x)?;
    let opts = CompileOptions::default().with_precision(precision);
    let model = CompiledModel::compile(&g, &dev.limits(), &opts)
        .unwrap_or_else(|e| panic!("{name} batch {batch} {precision:?}: {e}"));
    let shown = model.show();
    assert!(model.partition.copies.is_empty(), "{name}: {shown}");
    assert_eq!(model.partition.views.len(), concats, "{name}: {shown}");
    let concat_kernels = model
        .partition
        .groups
        .iter()
        .filter(|gr| matches!(model.graph.nodes[gr.root.0].op, Op::Concat(_)))
        .count();
    assert_eq!(concat_kernels, 0, "{name}: {shown}");
    let loaded = model.load(dev).expect("loads");
    let got = loaded.run(dev, &x).expect("runs");
    loaded.free(dev);
    Some(relative_error(&got[0], &want[0]))
}

/// Every fixture at each (batch, precision) of `cases`, on `dev`: the failures.
fn check_all(dev: &mut dyn Device, cases: &[(usize, Precision)]) -> Vec<String> {
    let mut failures = Vec::new();
    for &(name, concats) in FIXTURES {
        for &(batch, p) in cases {
            let start = std::time::Instant::now();
            let Some(err) = error_from_onnx_runtime(dev, name, concats, batch, p) else {
                return failures;
            };
            let line = format!("{name} batch {batch} {p:?}: {err:.2e} from ONNX Runtime");
            eprintln!("{line} ({:.1} s)", start.elapsed().as_secs_f64());
            if err > tolerance(p) {
                failures.push(line);
            }
        }
    }
    failures
}

// The interpreter is slow in the test profile: batch 1 in f32 (a contiguous slice per
// batch) and batch 2 stored NHWC in f32 and f16 (strided slices).
#[test]
fn dense_and_inception_blocks_in_place_match_onnx_runtime_on_cpu() {
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let cases = [
        (1, Precision::F32),
        (2, Precision::F32ChannelsLast),
        (2, Precision::F16),
    ];
    let failures = check_all(dev.as_mut(), &cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn dense_and_inception_blocks_in_place_match_onnx_runtime_on_vulkan() {
    let Some(mut dev) = open_or_skip("vulkan") else {
        return;
    };
    let mut cases = vec![(1, Precision::F32), (2, Precision::F32)];
    if dev.limits().f16 {
        cases.extend([(1, Precision::F16), (2, Precision::F16)]);
    }
    let failures = check_all(dev.as_mut(), &cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each dense block of the DenseNet is one buffer: its last Concat's, which every other
/// Concat of the block is a view of from its start, and every new feature map a slice of.
#[test]
fn each_dense_block_is_one_buffer() {
    let g = import("densenet_small", 2);
    let limits = weft_runtime::Target::parse("cuda").unwrap().limits();
    let opts = CompileOptions::default().with_precision(Precision::F16);
    let model = CompiledModel::compile(&g, &limits, &opts).expect("compiles");
    let p = &model.partition;
    let mut buffers: Vec<String> = p
        .places
        .values()
        .map(|s| model.graph.tensor(s.buffer).name.clone())
        .collect();
    buffers.dedup();
    assert_eq!(
        buffers,
        [
            "/features/denseblock1/Concat_output_0",
            "/features/denseblock2/Concat_output_0"
        ],
        "{}",
        model.show()
    );
    // Block 2 (3 layers): its 3 layer Concats at 0, the transition's pool at 0, three
    // new feature maps of 8 channels after its 16.
    let mut offsets: Vec<usize> = p
        .places
        .values()
        .filter(|s| buffers[1] == model.graph.tensor(s.buffer).name)
        .map(|s| s.offset)
        .collect();
    offsets.sort();
    assert_eq!(offsets, [0, 0, 0, 0, 16, 24, 32]);
}

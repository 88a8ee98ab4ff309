//! The zoo against torchvision's numbers and shapes, and its activations' scale.

use std::collections::HashSet;

use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

use super::*;
use crate::graph::TensorId;
use crate::op::{BatchNorm, Op};
use crate::reference::evaluate_all;

fn opts(name: &str, batch: usize, resolution: usize) -> ZooOptions {
    ZooOptions {
        batch,
        resolution,
        ..ZooOptions::for_model(name).unwrap()
    }
}

/// Learned parameters: every constant but batch norms' running mean and variance
/// (buffers in PyTorch, not parameters).
fn learned_parameters(g: &Graph) -> usize {
    let running: HashSet<TensorId> = g
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::BatchNorm(_)))
        .flat_map(|n| [n.inputs[3], n.inputs[4]])
        .collect();
    g.tensors
        .iter()
        .enumerate()
        .filter(|(i, t)| t.is_constant() && !running.contains(&TensorId(*i)))
        .map(|(_, t)| t.numel())
        .sum()
}

#[test]
fn parameter_counts_match_torchvision() {
    // `sum(p.numel() for p in model.parameters())` of torchvision 0.29's models;
    // Inception v3 built with `aux_logits=False` (eval mode never runs the aux branch).
    for (name, want) in [
        ("resnet50", 25_557_032),
        ("inception_v3", 23_834_568),
        ("mobilenet_v2", 3_504_872),
    ] {
        // The counts do not depend on the resolution: build small to be quick.
        let g = build(name, &opts(name, 1, 75)).unwrap();
        assert_eq!(learned_parameters(&g), want, "{name}");
    }
}

#[test]
fn op_counts_match_the_onnx_export() {
    // Node counts of `torch.onnx.export` (opset 17, eval mode,
    // `training=TrainingMode.PRESERVE` so batch norms stay unfolded) of torchvision's
    // models, less the exporter's Identity nodes (deduplicated initializers) and Clip's
    // Constant bounds.
    let want: [(&str, &[(&str, usize)]); 3] = [
        (
            "resnet50",
            &[
                ("Add", 16),
                ("BatchNormalization", 53),
                ("Conv", 53),
                ("Flatten", 1),
                ("Gemm", 1),
                ("GlobalAveragePool", 1),
                ("MaxPool", 1),
                ("Relu", 49),
            ],
        ),
        (
            "inception_v3",
            &[
                ("AveragePool", 9),
                ("BatchNormalization", 94),
                ("Concat", 11),
                ("Conv", 94),
                ("Flatten", 1),
                ("Gemm", 1),
                ("GlobalAveragePool", 1),
                ("MaxPool", 4),
                ("Relu", 94),
            ],
        ),
        (
            "mobilenet_v2",
            &[
                ("Add", 10),
                ("BatchNormalization", 52),
                ("Clip", 35),
                ("Conv", 52),
                ("Flatten", 1),
                ("Gemm", 1),
                ("GlobalAveragePool", 1),
            ],
        ),
    ];
    for (name, counts) in want {
        let g = build(name, &opts(name, 1, 75)).unwrap();
        assert_eq!(g.op_counts(), counts.to_vec(), "{name}");
    }
}

/// The shape of the tensor named `name`.
fn shape_of(g: &Graph, name: &str) -> Vec<usize> {
    let t = g.tensors.iter().find(|t| t.name == name);
    t.unwrap_or_else(|| panic!("no tensor `{name}`"))
        .shape
        .clone()
}

#[test]
fn shapes_follow_batch_resolution_and_classes() {
    // Default resolutions: torchvision's documented feature map sizes.
    let g = build("resnet50", &ZooOptions::resnet50()).unwrap();
    assert_eq!(shape_of(&g, "input"), [1, 3, 224, 224]);
    assert_eq!(shape_of(&g, "maxpool"), [1, 64, 56, 56]);
    assert_eq!(shape_of(&g, "layer4.2.relu_2"), [1, 2048, 7, 7]);
    assert_eq!(shape_of(&g, "logits"), [1, 1000]);
    let g = build("inception_v3", &ZooOptions::inception_v3()).unwrap();
    assert_eq!(shape_of(&g, "maxpool1"), [1, 64, 73, 73]);
    assert_eq!(shape_of(&g, "Mixed_5d.concat"), [1, 288, 35, 35]);
    assert_eq!(shape_of(&g, "Mixed_6e.concat"), [1, 768, 17, 17]);
    assert_eq!(shape_of(&g, "Mixed_7c.concat"), [1, 2048, 8, 8]);
    let g = build("mobilenet_v2", &ZooOptions::mobilenet_v2()).unwrap();
    assert_eq!(shape_of(&g, "features.18.2"), [1, 1280, 7, 7]);

    // Batch 2 at other resolutions, another classifier.
    for (name, res, last, side) in [
        ("resnet50", 160, "layer4.2.relu_2", 5),
        ("resnet50", 33, "layer4.2.relu_2", 2),
        ("inception_v3", 75, "Mixed_7c.concat", 1),
        ("inception_v3", 150, "Mixed_7c.concat", 3),
        ("mobilenet_v2", 96, "features.18.2", 3),
        ("mobilenet_v2", 1, "features.18.2", 1),
    ] {
        let o = ZooOptions {
            classes: 10,
            ..opts(name, 2, res)
        };
        let g = build(name, &o).unwrap();
        assert_eq!(g.tensor(g.inputs[0]).shape, [2, 3, res, res], "{name}");
        assert_eq!(g.tensor(g.outputs[0]).shape, [2, 10], "{name} at {res}");
        assert_eq!(shape_of(&g, last)[2..], [side, side], "{name} at {res}");
        assert_eq!(g.tensor(g.outputs[0]).name, "logits");
    }
}

#[test]
fn names_follow_torchvision() {
    let g = build("resnet50", &opts("resnet50", 1, 32)).unwrap();
    let names: HashSet<&str> = g.tensors.iter().map(|t| t.name.as_str()).collect();
    for name in [
        "conv1.weight",
        "bn1.running_var",
        "layer1.0.downsample.0.weight",
        "layer1.0.downsample.1.bias",
        "layer3.5.conv2",
        "layer3.5.bn3.weight",
        "fc.weight",
        "fc.bias",
    ] {
        assert!(names.contains(name), "resnet50 has no `{name}`");
    }
    let g = build("mobilenet_v2", &opts("mobilenet_v2", 1, 32)).unwrap();
    let names: HashSet<&str> = g.tensors.iter().map(|t| t.name.as_str()).collect();
    for name in [
        "features.0.0.weight",
        "features.1.conv.0.0.weight",
        "features.1.conv.1.weight",
        "features.1.conv.2.running_mean",
        "features.2.conv.3.weight",
        "features.3.add",
        "classifier.1.weight",
    ] {
        assert!(names.contains(name), "mobilenet_v2 has no `{name}`");
    }
    let node = |g: &Graph, name: &str| g.nodes.iter().find(|n| n.name == name).unwrap().op.clone();
    // Depthwise: as many groups as channels.
    match node(&g, "features.2.conv.1.0") {
        Op::Conv(c) => assert_eq!(c.groups, 96),
        op => panic!("{op}"),
    }
    let g = build("inception_v3", &opts("inception_v3", 1, 75)).unwrap();
    match node(&g, "Mixed_6b.branch7x7_2.conv") {
        Op::Conv(c) => assert_eq!(c.pads, [0, 3, 0, 3]),
        op => panic!("{op}"),
    }
    match node(&g, "Mixed_5b.avg_pool") {
        Op::Pool(p) => {
            assert!(p.count_include_pad && !p.ceil_mode);
            assert_eq!((p.kernel, p.strides, p.pads), ([3, 3], [1, 1], [1; 4]));
        }
        op => panic!("{op}"),
    }
    match node(&g, "Mixed_5b.branch1x1.bn") {
        Op::BatchNorm(BatchNorm { epsilon }) => assert_eq!(epsilon, 1e-3),
        op => panic!("{op}"),
    }
}

/// Every constant's values, in tensor order.
fn weights(g: &Graph) -> Vec<(String, Vec<f32>)> {
    g.tensors
        .iter()
        .filter_map(|t| Some((t.name.clone(), t.data.as_ref()?.iter().copied().collect())))
        .collect()
}

#[test]
fn the_seed_decides_the_weights() {
    let small = |seed| ZooOptions {
        seed,
        ..opts("mobilenet_v2", 1, 32)
    };
    let a = weights(&build("mobilenet_v2", &small(1)).unwrap());
    // Compared by hand: a failing `assert_eq!` would print 3.5M numbers.
    assert!(a == weights(&build("mobilenet_v2", &small(1)).unwrap()));
    let b = weights(&build("mobilenet_v2", &small(2)).unwrap());
    assert_eq!(a.len(), b.len());
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x != y, "`{name}` is the same for seeds 1 and 2");
    }
    // The batch changes nothing; the resolution only the running statistics, which
    // follow what the convolutions see of the image and of its padding.
    let c = weights(
        &build(
            "mobilenet_v2",
            &ZooOptions {
                batch: 3,
                resolution: 64,
                ..small(1)
            },
        )
        .unwrap(),
    );
    assert_eq!(a.len(), c.len());
    for ((name, x), (_, y)) in a.iter().zip(&c) {
        let running = name.ends_with(".running_mean") || name.ends_with(".running_var");
        assert!(running || x == y, "`{name}` changes with the input's shape");
    }
    // A pinned value: a change to how weights are drawn shows here.
    let first = |name: &str| a.iter().find(|(n, _)| n == name).unwrap().1[0];
    assert_eq!(first("features.0.0.weight"), 0.2564994);
}

#[test]
fn errors_say_what_would_do() {
    let err = build("resnet18", &ZooOptions::resnet50()).unwrap_err();
    assert!(matches!(err, ZooError::Unknown { .. }));
    assert_eq!(
        err.to_string(),
        "no model `resnet18` in the zoo; it has resnet50, inception_v3, mobilenet_v2, bert_base, gpt2, llama"
    );
    let err = build("inception_v3", &opts("inception_v3", 1, 74)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "inception_v3 needs a resolution of at least 75, not 74"
    );
    assert!(matches!(
        build("resnet50", &opts("resnet50", 1, 0)),
        Err(ZooError::ResolutionTooSmall { minimum: 1, .. })
    ));
    assert_eq!(
        build("resnet50", &opts("resnet50", 0, 224)).unwrap_err(),
        ZooError::ZeroBatch
    );
    let none = ZooOptions {
        classes: 0,
        ..ZooOptions::mobilenet_v2()
    };
    assert_eq!(
        build("mobilenet_v2", &none).unwrap_err(),
        ZooError::ZeroClasses
    );
    assert_eq!(default_resolution("inception_v3"), Ok(299));
    assert_eq!(default_resolution("mobilenet_v2"), Ok(224));
    assert!(default_resolution("vgg16").is_err());
    for name in NAMES {
        let o = ZooOptions::for_model(name).unwrap();
        assert_eq!(o.resolution, default_resolution(name).unwrap());
        assert_eq!((o.batch, o.classes), (1, 1000));
    }
    assert_eq!(ZooOptions::inception_v3().resolution, 299);
}

/// Runs `name` at `resolution` on normal-ish noise in float64 and returns the largest
/// |value| of any computed tensor (with its name) and the standard deviation of the
/// logits.
fn activation_scale(name: &str, resolution: usize) -> (f64, String, f64) {
    let g = build(name, &opts(name, 1, resolution)).unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    // The sum of three uniforms in [-1, 1): mean 0, variance 1, near enough normal.
    let mut normal = || {
        (0..3)
            .map(|_| f64::from(rng.next_u32()) / f64::from(u32::MAX) * 2.0 - 1.0)
            .sum::<f64>()
    };
    let x = ArrayD::from_shape_simple_fn(IxDyn(&[1, 3, resolution, resolution]), &mut normal);
    let values = evaluate_all(&g, &[x]).unwrap();
    let mut worst = (0.0, String::new());
    for n in &g.nodes {
        let m = values[&n.output].fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(m.is_finite(), "{name}: `{}` is not finite", n.name);
        if m > worst.0 {
            worst = (m, n.name.clone());
        }
    }
    let logits = &values[&g.outputs[0]];
    let mean = logits.mean().unwrap();
    let std = logits.mapv(|v| (v - mean).powi(2)).mean().unwrap().sqrt();
    eprintln!(
        "{name} at {resolution}: max |activation| {:.2} at `{}`, logits std {std:.3}",
        worst.0, worst.1
    );
    (worst.0, worst.1, std)
}

/// fp16 keeps about 3 digits and overflows at 65504: activations of unit scale lose
/// neither.
fn assert_unit_scale(name: &str, resolution: usize) {
    let (max, at, std) = activation_scale(name, resolution);
    assert!(max < 50.0, "{name}: |{at}| reaches {max}");
    assert!(std > 1e-3, "{name}: the logits are all alike (std {std})");
}

#[test]
fn resnet50_activations_stay_unit_scale() {
    assert_unit_scale("resnet50", 64);
}

#[test]
fn inception_v3_activations_stay_unit_scale() {
    assert_unit_scale("inception_v3", 75);
}

#[test]
fn mobilenet_v2_activations_stay_unit_scale() {
    assert_unit_scale("mobilenet_v2", 32);
}

/// The same at the models' own resolutions: minutes in a debug build, a few seconds in
/// release (`cargo test --release -p weft-graph -- --ignored full_resolution`).
#[test]
#[ignore]
fn activations_stay_unit_scale_at_full_resolution() {
    // The image models: the token models take ids, not images (their own tests).
    for name in NAMES.iter().filter(|n| !takes_tokens(n)) {
        assert_unit_scale(name, default_resolution(name).unwrap());
    }
}

#[test]
fn transformers_have_hugging_faces_parameters() {
    // Hugging Face's counts: BertModel (with its pooler) 109,482,240; GPT2Model
    // 124,439,808. The zoo keeps only the position rows a sequence uses and token
    // type 0's row (constants folded), and adds a scale per layer and GPT-2's masks.
    for (name, hf, seq) in [("bert_base", 109_482_240, 16), ("gpt2", 124_439_808, 16)] {
        let cfg = super::transformer_config(name).unwrap();
        let o = ZooOptions {
            seq,
            ..ZooOptions::for_model(name).unwrap()
        };
        let g = build(name, &o).unwrap();
        let h = cfg.hidden;
        let mut dropped = (cfg.max_positions - seq) * h;
        let mut added = cfg.layers;
        if name == "bert_base" {
            dropped += h;
        } else {
            added += cfg.layers * seq * seq;
        }
        assert_eq!(g.parameter_count() + dropped - added, hf, "{name}");
        assert_eq!(g.tensor(g.inputs[0]).shape, [1, seq]);
        assert_eq!(g.tensor(g.outputs[0]).shape, [1, seq, h]);
    }
    assert!(matches!(
        build(
            "gpt2",
            &ZooOptions {
                seq: 1025,
                ..ZooOptions::for_model("gpt2").unwrap()
            }
        ),
        Err(ZooError::BadSeq { max: 1024, .. })
    ));
}

#[test]
fn gpt2_attends_only_to_earlier_tokens_and_bert_to_all() {
    use super::transformer::{Family, TransformerConfig, transformer};
    use ndarray::{ArrayD, IxDyn};
    for family in [Family::Gpt2, Family::Bert] {
        let cfg = TransformerConfig::tiny(family);
        let g = transformer("tiny", &cfg, 1, 6, 3).unwrap();
        let ids = |last: f64| {
            ArrayD::from_shape_vec(IxDyn(&[1, 6]), vec![5., 17., 3., 90., 41., last]).unwrap()
        };
        let a = &crate::reference::evaluate(&g, &[ids(8.0)]).unwrap()[0];
        let b = &crate::reference::evaluate(&g, &[ids(60.0)]).unwrap()[0];
        // Changing the last token changes the last position's state, and every earlier
        // one's only where attention looks ahead (BERT), never for GPT-2.
        let changed =
            |pos: usize| (0..cfg.hidden).any(|j| (a[[0, pos, j]] - b[[0, pos, j]]).abs() > 1e-9);
        assert!(changed(5), "{family:?}");
        for pos in 0..5 {
            assert_eq!(
                changed(pos),
                family == Family::Bert,
                "{family:?} position {pos}"
            );
        }
        // Layer norm at the end: every position's state has mean ≈ the bias mean and
        // unit-scale spread, not blown up or vanished.
        let sd = a.iter().map(|v| v * v).sum::<f64>() / a.len() as f64;
        assert!((0.3..3.0).contains(&sd), "{family:?}: mean square {sd}");
    }
}

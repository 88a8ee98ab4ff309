//! Products kept whole on Vulkan (`model/src/lower/siblings.rs`,
//! `choose::whole_beside_siblings`), an A/B switch off by default: under an NVIDIA
//! adapter's Vulkan limits (cooperative matrices, dispatches that wait at barriers for
//! what they use), `WEFT_SPLIT_BESIDE` keeps whole the products the rule would split —
//! `views`: those over views with a sibling anchor (the 3×3s of an Inception-style
//! block's branches); `all`: every fp16 product with one (their 1×1s too); `next`: every
//! fp16 product the next group does not read; `short:K`: every fp16 product at most K
//! long. The 3×3 after the block's Concat (no sibling, 1728 long) is split under each.
//! CUDA ignores it. Every form is right against the graph's float64 reference on the
//! interpreter under those limits.

use std::process::Command;

use ndarray::ArrayD;
use weft_codegen_common::TargetLimits;
use weft_graph::op::Conv;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder, TensorId};
use weft_ir::dtype::DType;
use weft_model::lower::siblings::SWITCH;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::cpu::CpuDevice;
use weft_testkit::compare::normalized_error;
use weft_testkit::devices::nvidia_vulkan_limits;
use weft_testkit::random::Values;

/// Channels of every convolution's output, and of the block's input.
const CHANNELS: usize = 64;

/// What the rule says of a product it keeps whole for its siblings.
const WHOLE: &str = "its reduction whole (WEFT_SPLIT_BESIDE)";
/// What a split product's schedule says.
const SPLIT: &str = "split-K";

/// A ReLU'd convolution of `x` (`c` channels) to [`CHANNELS`], `k`×`k` at stride 1,
/// padded to keep 14².
fn conv(
    b: &mut GraphBuilder,
    v: &mut Values,
    name: &str,
    x: TensorId,
    c: usize,
    k: usize,
) -> TensorId {
    let w = b.weight(format!("{name}.w"), v.array(&[CHANNELS, c, k, k], 0.15));
    let y = b.conv(name, x, w, None, Conv::new(1, k / 2)).unwrap();
    b.relu(format!("{name}.relu"), y).unwrap()
}

/// `[1, 64, 14, 14]` through a stem 1×1, then a block of three branches (a 1×1; a 1×1
/// then a 3×3; a 1×1 then a 3×3) joined by a Concat, then a 3×3 alone (`tail`). Each
/// 3×3 is a 196 × 64 × 576 product over views: 7 tiles of 32×64, which Vulkan's rule
/// splits in 4 when nothing runs beside it.
fn block() -> Graph {
    let mut v = Values(23);
    let mut b = GraphBuilder::new("block");
    let x = b.input("x", &[1, CHANNELS, 14, 14], DType::F32);
    let stem = conv(&mut b, &mut v, "stem", x, CHANNELS, 1);
    let b1 = conv(&mut b, &mut v, "b1", stem, CHANNELS, 1);
    let r2 = conv(&mut b, &mut v, "b2.reduce", stem, CHANNELS, 1);
    let b2 = conv(&mut b, &mut v, "b2", r2, CHANNELS, 3);
    let r3 = conv(&mut b, &mut v, "b3.reduce", stem, CHANNELS, 1);
    let b3 = conv(&mut b, &mut v, "b3", r3, CHANNELS, 3);
    let cat = b.concat("cat", &[b1, b2, b3], 1).unwrap();
    let tail = conv(&mut b, &mut v, "tail", cat, 3 * CHANNELS, 3);
    b.output(tail);
    b.finish().unwrap()
}

fn compile(g: &Graph, limits: &TargetLimits) -> CompiledModel {
    let options = CompileOptions::default().with_precision(Precision::F16);
    CompiledModel::compile(g, limits, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// The schedule of the group whose root is node `name`.
fn schedule<'a>(g: &Graph, model: &'a CompiledModel, name: &str) -> &'a str {
    model
        .groups
        .iter()
        .zip(&model.partition.groups)
        .find(|(_, gr)| g.nodes[gr.root.0].name == name)
        .map(|(l, _)| l.schedule.as_str())
        .unwrap_or_else(|| panic!("no group for {name}:\n{}", model.show()))
}

/// The largest error of `model` on the interpreter under `limits` against the float64
/// reference, relative to the output's largest magnitude.
fn error(g: &Graph, model: &CompiledModel, limits: &TargetLimits) -> f64 {
    let x: ArrayD<f32> = Values(5).array(&g.tensor(g.inputs[0]).shape, 1.0);
    let mut dev = CpuDevice::emulating(limits.clone());
    let loaded = model.load(&mut dev).unwrap();
    let got = loaded.run(&mut dev, std::slice::from_ref(&x)).unwrap();
    let want = evaluate(g, &[x.mapv(f64::from)]).unwrap();
    normalized_error(&got[0], &want[0])
}

/// The groups (by their roots' names) each setting keeps whole; the rest as the rule
/// has them (the 3×3s split, `b2` and `b3` checked so under `0`).
fn whole_under(setting: &str) -> &'static [&'static str] {
    match setting {
        "0" => &[],
        "views" => &["b2", "b3"],
        "all" => &["b1", "b2.reduce", "b2", "b3.reduce", "b3"],
        // Run order: stem, b1, b2.reduce, b2, b3.reduce, b3, tail — `b1` and `b2` are
        // followed by a group that does not read them; `b3` by the tail, which does.
        "next" => &["b1", "b2"],
        "short:576" => &["stem", "b1", "b2.reduce", "b2", "b3.reduce", "b3"],
        other => panic!("no expectation for {other}"),
    }
}

/// What the child process checks under the `WEFT_SPLIT_BESIDE` it was given (`CHILD`
/// names the setting it expects, or `refused`).
#[test]
fn beside_child() {
    let Ok(expect) = std::env::var(CHILD) else {
        return;
    };
    let g = block();
    let limits = nvidia_vulkan_limits();
    let options = CompileOptions::default().with_precision(Precision::F16);
    let model = match (
        expect.as_str(),
        CompiledModel::compile(&g, &limits, &options),
    ) {
        ("refused", Err(e)) => {
            let e = format!("{e:#}");
            assert!(e.contains(SWITCH) && e.contains("short:K"), "{e}");
            return;
        }
        ("refused", Ok(m)) => panic!("not refused:\n{}", m.show()),
        (_, Err(e)) => panic!("{e:#}"),
        (_, Ok(m)) => m,
    };
    let text = model.show();
    let whole = whole_under(&expect);
    for name in ["stem", "b1", "b2.reduce", "b2", "b3.reduce", "b3", "tail"] {
        let s = schedule(&g, &model, name);
        assert_eq!(
            s.contains(WHOLE),
            whole.contains(&name),
            "{expect}: {name}: {s}\n{text}"
        );
        if whole.contains(&name) {
            assert!(!s.contains(SPLIT), "{expect}: {name}: {s}");
        }
    }
    // The 3×3s split where nothing keeps them whole; the tail under every setting.
    for name in ["b2", "b3", "tail"] {
        let s = schedule(&g, &model, name);
        assert_eq!(
            s.contains(SPLIT),
            !whole.contains(&name),
            "{expect}: {name}: {s}"
        );
    }
    let err = error(&g, &model, &limits);
    eprintln!("{SWITCH}={expect}: error {err:.2e}");
    assert!(err <= 1e-2, "{expect}: error {err:.2e}\n{text}");
}

/// Names the setting the child expects.
const CHILD: &str = "WEFT_TEST_SPLIT_BESIDE_CHILD";

/// Unset or `0`: the rule's splits; `views`, `all`, `next`, `short:576`: what
/// [`whole_under`] says whole; anything else refused, naming the variable and its values
/// (each in a child process: the variable is the process's). Right in every form.
#[test]
fn the_switch_sets_what_stays_whole_beside_siblings() {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    for (value, expect) in [
        (None, "0"),
        (Some("0"), "0"),
        (Some("views"), "views"),
        (Some("all"), "all"),
        (Some("next"), "next"),
        (Some("short:576"), "short:576"),
        (Some("1"), "refused"),
        (Some("short"), "refused"),
        (Some("views:0"), "refused"),
    ] {
        let mut cmd = Command::new(&exe);
        cmd.args(["beside_child", "--exact", "--nocapture"])
            .env(CHILD, expect);
        match value {
            Some(v) => cmd.env(SWITCH, v),
            None => cmd.env_remove(SWITCH),
        };
        let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{SWITCH}={value:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// CUDA's dispatches do not wait at barriers for what they use: its rule says nothing
/// of siblings, and the tail after the Concat (1728 long) is split there too.
#[test]
fn cuda_takes_no_siblings_into_account() {
    let g = block();
    let model = compile(&g, &TargetLimits::cuda());
    let text = model.show();
    assert!(!text.contains(WHOLE), "{text}");
    assert!(schedule(&g, &model, "tail").contains(SPLIT), "{text}");
}

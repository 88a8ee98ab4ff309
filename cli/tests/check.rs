//! `weft model check`: weft against ONNX Runtime, and the bisection to the first node
//! that differs. The models are written by `fixtures/check_models.py`: a small network,
//! and the same network with one convolution planted wrong (weft runs the planted file,
//! ONNX Runtime the original through `--ort-model`), so the search must name
//! `block2/conv_b` and nothing else. Without python3, onnx and onnxruntime these tests
//! skip with a printed reason, unless `WEFT_REQUIRE` names `onnxruntime`; the lavapipe
//! run skips where no Vulkan adapter is found, unless `WEFT_REQUIRE` names `wgpu`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bad_input, ok, stderr, stdout, weft};

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

/// The fixtures written into a temporary folder, or `None` (the skip printed) where
/// python3 with onnx and onnxruntime cannot write them.
fn fixtures() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check_models.py");
    match Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .output()
    {
        Ok(o) if o.status.success() => Some(dir),
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            let last = why.lines().last().unwrap_or("").to_string();
            skip(
                "onnxruntime",
                &format!("python3 with onnx and onnxruntime could not write the models: {last}"),
            );
            None
        }
        Err(e) => {
            skip("onnxruntime", &format!("python3 cannot be started: {e}"));
            None
        }
    }
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().expect("a UTF-8 path").to_string()
}

/// `weft model check planted.onnx --ort-model net.onnx` with `extra`: exit 1, the planted
/// node named with its op, attributes, input shapes and statistics, nothing else named.
fn finds_the_planted_node(dir: &Path, extra: &[&str]) -> String {
    let (planted, net) = (path(dir, "planted.onnx"), path(dir, "net.onnx"));
    let mut args = vec!["model", "check", &planted, "--ort-model", &net];
    args.extend(extra);
    let out = weft(&args);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{args:?}\n{text}\n{err}");
    for needle in [
        "weft disagrees with ONNX Runtime at output `logits`",
        "first diverging node",
        "node    `block2/conv_b` (Conv in the file)",
        "attrs   pads=[1, 1, 1, 1]",
        "input   %/block2/relu_a/Relu_output_0: f32 [1, 8, 12, 12]",
        "input   %block2/conv_b.w: f32 [8, 8, 3, 3] (constant)",
        "output  %/block2/conv_b/Conv_output_0: f32 [1, 8, 12, 12]",
        "absmax",
        "worst   |weft − ORT|",
    ] {
        assert!(text.contains(needle), "{args:?}: `{needle}` not in\n{text}");
    }
    // The node's computed input was compared and found right: the search stopped at the
    // first node wrong, not at one downstream of it.
    assert!(
        text.contains("Relu_output_0: f32 [1, 8, 12, 12] (") && text.contains("ok)"),
        "{text}"
    );
    // Only one output channel is off: the worst element lies in channel 1.
    let worst = text
        .lines()
        .find(|l| l.contains("worst"))
        .expect("a worst line");
    assert!(worst.contains(" at [0, 1, "), "{worst}");
    assert!(
        err.contains("the first node whose output differs is `block2/conv_b`"),
        "{err}"
    );
    text
}

#[test]
fn the_planted_node_is_found_on_the_cpu_in_f32_and_f16() {
    let Some(dir) = fixtures() else { return };
    let f32 = finds_the_planted_node(dir.path(), &["--target", "cpu"]);
    assert!(f32.contains("(tolerance 1e-3)"), "{f32}");
    // f16 (ONNX Runtime in f32): the same node, against f16's tolerance.
    let f16 = finds_the_planted_node(dir.path(), &["--target", "cpu", "--dtype", "f16"]);
    assert!(f16.contains("(tolerance 5e-2)"), "{f16}");
    assert!(f16.contains("f16 storage"), "{f16}");
    // Plain bisection (one tensor a compile) finds the same node.
    finds_the_planted_node(dir.path(), &["--target", "cpu", "--probes", "1"]);
}

#[test]
fn the_planted_node_is_found_on_vulkan() {
    let Some(dir) = fixtures() else { return };
    if !vulkan_or_skip() {
        return;
    }
    finds_the_planted_node(dir.path(), &["--target", "vulkan", "--dtype", "f16"]);
}

/// True where `weft targets` finds a Vulkan adapter; else the skip printed (a failure
/// where `WEFT_REQUIRE` names `wgpu`).
fn vulkan_or_skip() -> bool {
    let targets = ok(&["targets"]);
    let found = targets
        .lines()
        .any(|l| l.starts_with("vulkan") && l.contains("available"));
    if !found {
        skip(
            "wgpu",
            "no Vulkan adapter (install mesa-vulkan-drivers for lavapipe)",
        );
    }
    found
}

/// `weft model check FILE --target vulkan --dtype f16 extra` with `WEFT_VK_CONV=value`.
fn check_on_vulkan(file: &str, extra: &[&str], value: &str) -> std::process::Output {
    let mut args = vec![
        "model", "check", file, "--target", "vulkan", "--dtype", "f16",
    ];
    args.extend(extra);
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(&args)
        .env("WEFT_VK_CONV", value)
        .output()
        .expect("weft starts")
}

/// `WEFT_VK_CONV=1` (and `2`) writes the convolutions' guarded gathers without a branch (a
/// load at a clamped index and a `select` per element): the network (3×3 convolutions padded by
/// one, 12×12, rows not a whole number of tiles) still agrees with ONNX Runtime on
/// Vulkan in f16, and the planted convolution is still found, so the comparison can
/// fail; two convolutions run as ops agree with float64 (with the `select`'s operands
/// swapped both fail). `deep` (the deeper k steps alone) is taken; a value other than 0,
/// 1, 2 or `deep` is refused, naming the variable.
#[test]
fn branch_free_gathers_agree_with_onnx_runtime_on_vulkan() {
    let Some(dir) = fixtures() else { return };
    if !vulkan_or_skip() {
        return;
    }
    let (net, planted) = (
        path(dir.path(), "net.onnx"),
        path(dir.path(), "planted.onnx"),
    );
    // 2 adds the rule's deeper k steps, which need cooperative matrices (lavapipe has
    // none: the interpreter checks those, `ops/tests/rule_conv_f16.rs`).
    for value in ["1", "2", "deep"] {
        let out = check_on_vulkan(&net, &[], value);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
        assert!(
            text.contains("weft agrees with ONNX Runtime on every output"),
            "{text}"
        );
    }
    let out = check_on_vulkan(&planted, &["--ort-model", &net], "1");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("node    `block2/conv_b` (Conv in the file)"),
        "{text}"
    );
    // The op against float64: a 3×3 convolution padded by one (24 channels, vec4 loads)
    // and a 1×1 one over rows of 58 halves (pairs, loaded element by element).
    for shape in [
        "n=1,c=24,h=14,w=14,k=64,r=3,s=3,stride=1,pad=1",
        "n=1,c=58,h=28,w=28,k=58,r=1,s=1,stride=1,pad=0",
    ] {
        let args = [
            "run",
            "--op",
            "conv2d-f16",
            "--shape",
            shape,
            "--target",
            "vulkan",
        ];
        let out = Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(args)
            .env("WEFT_VK_CONV", "1")
            .output()
            .expect("weft starts");
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
        assert!(text.contains(": ok"), "{text}");
    }
    let out = check_on_vulkan(&net, &[], "yes");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("WEFT_VK_CONV=`yes`: 0 (off), 1 (guarded gathers"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_faithful_model_agrees_and_an_export_is_judged_against_the_framework() {
    let Some(dir) = fixtures() else { return };
    let d = dir.path();
    let (net, planted) = (path(d, "net.onnx"), path(d, "planted.onnx"));
    let (inputs, expect) = (path(d, "in"), path(d, "expect"));
    let out = ok(&["model", "check", &net, "--target", "cpu"]);
    assert!(
        out.contains("weft agrees with ONNX Runtime on every output"),
        "{out}"
    );
    assert!(out.contains("1 compile of the model"), "{out}");
    // The framework's output given: the export agrees with it, and so does weft.
    let out = ok(&[
        "model", "check", &net, "--target", "cpu", "--inputs", &inputs, "--expect", &expect,
    ]);
    assert!(out.contains("x f32 [1, 3, 12, 12] (from "), "{out}");
    assert!(
        out.contains("the export agrees with the framework"),
        "{out}"
    );
    assert!(!out.contains("WRONG"), "{out}");
    // The planted file run by both: weft agrees with ONNX Runtime (exit 0), and both
    // differ from the framework: the export is unfaithful, whatever weft does.
    let out = ok(&[
        "model", "check", &planted, "--target", "cpu", "--inputs", &inputs, "--expect", &expect,
    ]);
    assert!(
        out.contains("THE EXPORT DIFFERS from the framework"),
        "{out}"
    );
    assert!(out.contains("the export is unfaithful"), "{out}");
    assert!(
        out.contains("weft agrees with ONNX Runtime on every output"),
        "{out}"
    );
    // An expected output missing is bad input, named.
    let empty = path(d, "in");
    bad_input(
        &[
            "model", "check", &net, "--target", "cpu", "--expect", &empty,
        ],
        &["logits.npy", "--expect"],
    );
}

/// A Python without onnxruntime (here: python3 seeing only its standard library) is
/// named with what to install; a Python that cannot be started too. Neither panics.
#[test]
fn a_python_without_onnxruntime_is_named_with_what_to_install() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let model = dir.path().join("m.onnx");
    let model = model.to_str().unwrap();
    // A model file is needed before ONNX Runtime is reached: weft's export of a zoo
    // model, so that this test needs no Python packages at all.
    ok(&[
        "model",
        "export",
        "zoo:mobilenet_v2",
        "--resolution",
        "16",
        model,
    ]);
    let bare: PathBuf = dir.path().join("bare-python");
    std::fs::write(&bare, "#!/bin/sh\nexec python3 -I -S \"$@\"\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bare, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let python_starts = Command::new("python3").arg("--version").output().is_ok();
    if python_starts {
        let err = bad_input(
            &[
                "model",
                "check",
                model,
                "--target",
                "cpu",
                "--python",
                bare.to_str().unwrap(),
            ],
            &["onnxruntime", "pip install onnxruntime"],
        );
        assert!(err.contains("lacks the Python packages"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    } else {
        skip("onnxruntime", "python3 cannot be started");
    }
    let err = bad_input(
        &[
            "model",
            "check",
            model,
            "--target",
            "cpu",
            "--python",
            "/nonexistent/python3",
        ],
        &["`/nonexistent/python3` cannot be started", "pip install"],
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// `WEFT_VK_SPLIT` (the shortest part of a split reduction over views on Vulkan's
/// cooperative matrices) takes `rule`, `0` and a part length; any other value is refused
/// before anything runs, naming the variable and what it takes — on every target, as the
/// other switches of the fp16 template's rule are. The picks it makes are tested in
/// `ops/tests/rule_vk_split.rs` (lavapipe has no cooperative matrices).
#[test]
fn the_vulkan_split_switch_refuses_what_it_does_not_take() {
    let Some(dir) = fixtures() else { return };
    let net = path(dir.path(), "net.onnx");
    let run = |value: &str| {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["model", "check", &net, "--target", "cpu"])
            .env("WEFT_VK_SPLIT", value)
            .output()
            .expect("weft starts")
    };
    for value in ["rule", "0", "256"] {
        let out = run(value);
        assert_eq!(out.status.code(), Some(0), "{value}: {}", stderr(&out));
    }
    for value in ["yes", "16", "-1"] {
        let out = run(value);
        assert_eq!(out.status.code(), Some(2), "{value}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "WEFT_VK_SPLIT=`{value}`: one of rule, 0 (no split"
            )),
            "{}",
            stderr(&out)
        );
    }
}

/// `WEFT_REUSE` (`weft_model::plan::Reuse`): each plan runs the model as ONNX Runtime
/// does, on the interpreter and on Vulkan in f16, where `weft model run` says how many
/// kernels wait behind a barrier and `weft model bench`'s table which (the interpreter
/// orders none by buffers, and says nothing); a value the switch does not take is
/// refused, naming it.
#[test]
fn every_memory_plan_agrees_with_onnx_runtime_and_others_are_refused() {
    let Some(dir) = fixtures() else { return };
    let net = path(dir.path(), "net.onnx");
    let weft = |args: &[&str], value: &str| {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(args)
            .env("WEFT_REUSE", value)
            .output()
            .expect("weft starts")
    };
    let run = |value: &str| weft(&["model", "check", &net, "--target", "cpu"], value);
    let vulkan = vulkan_or_skip();
    for value in ["target", "always", "waiting", "never"] {
        let out = run(value);
        assert_eq!(out.status.code(), Some(0), "{value}: {}", stderr(&out));
        if vulkan {
            let check = [
                "model", "check", &net, "--target", "vulkan", "--dtype", "f16",
            ];
            let out = weft(&check, value);
            assert_eq!(out.status.code(), Some(0), "{value}: {}", stderr(&out));
            let timed = ["model", "run", &net, "--target", "vulkan", "--iters", "2"];
            let out = weft(&timed, value);
            assert_eq!(out.status.code(), Some(0), "{value}: {}", stderr(&out));
            assert!(
                stdout(&out).contains("kernels wait behind a barrier"),
                "{}",
                stdout(&out)
            );
        }
    }
    // The per-kernel table says which kernels wait, on Vulkan only.
    for (targets, waits) in [("cpu", false), ("vulkan", true)] {
        if targets == "vulkan" && !vulkan {
            continue;
        }
        let bench = ["model", "bench", &net, "--targets", targets, "--iters", "2"];
        let out = weft(&bench, "target");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        let head = text.lines().find(|l| l.contains("schedule")).unwrap_or("");
        assert_eq!(head.contains("waits"), waits, "{text}");
    }
    let out = weft(
        &["model", "run", &net, "--target", "cpu", "--iters", "2"],
        "target",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("barrier"), "{}", stdout(&out));
    for value in ["fresh", ""] {
        let out = run(value);
        assert_eq!(out.status.code(), Some(2), "{value}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "WEFT_REUSE=`{value}`: one of `target`, `always`, `waiting`, `never`"
            )),
            "{}",
            stderr(&out)
        );
    }
}

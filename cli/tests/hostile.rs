//! `weft model` under hostile input (issue 58's audit as tests): impossible sizes, long
//! chains, indices out of range, malformed constants, odd files and odd options. Every
//! case exits 0, 1 or 2 with the message it should — never an abort (134), a panic (101)
//! or a hang — and no file weft must not touch is replaced.
//!
//! The ONNX files are written by the onnx package (as in `model.rs`); without it the
//! cases that need them are skipped, unless `WEFT_REQUIRE` names `onnxruntime`.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, stdout};

/// Every model of the audit, written into the folder named by the first argument.
const FIXTURES: &str = r#"
import sys, onnx, numpy as np
from onnx import helper, numpy_helper, TensorProto as T
d = sys.argv[1]
vi = helper.make_tensor_value_info
def save(name, nodes, ins, outs, inits=()):
    g = helper.make_graph(nodes, "g", ins, outs, list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), d + "/" + name)
node = helper.make_node
# [2^20, 1] x [1, 2^20]: 8 MiB in, 4 TiB out.
save("outer.onnx", [node("MatMul", ["a", "b"], ["y"], name="mm")],
     [vi("a", T.FLOAT, [2**20, 1]), vi("b", T.FLOAT, [1, 2**20])], [vi("y", T.FLOAT, None)])
save("gemm.onnx", [node("Gemm", ["a", "b"], ["y"], name="gm")],
     [vi("a", T.FLOAT, [2**20, 1]), vi("b", T.FLOAT, [1, 2**20])], [vi("y", T.FLOAT, None)])
save("big_input.onnx", [node("MatMul", ["a", "b"], ["y"], name="mm")],
     [vi("a", T.FLOAT, [10**6, 10**6]), vi("b", T.FLOAT, [10**6, 1])], [vi("y", T.FLOAT, None)])
save("mlp.onnx", [node("MatMul", ["x", "w"], ["h"], name="fc"), node("Relu", ["h"], ["y"], name="relu")],
     [vi("x", T.FLOAT, ["N", 8])], [vi("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.ones((8, 16), np.float32), "w")])
save("conv_big.onnx", [node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
     [vi("x", T.FLOAT, ["N", 3, 64, 64])], [vi("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.ones((16, 3, 3, 3), np.float32), "w")])
n = 13000
save("chain.onnx", [node("Relu", ["x" if i == 0 else "r%d" % (i - 1)], ["y" if i == n - 1 else "r%d" % i], name="n%d" % i) for i in range(n)],
     [vi("x", T.FLOAT, [1, 4])], [vi("y", T.FLOAT, [1, 4])])
save("gather_const.onnx", [node("Gather", ["d", "i"], ["y"], name="g", axis=0)],
     [vi("d", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, None)], [numpy_helper.from_array(np.array([0, 5], np.int64), "i")])
save("gather.onnx", [node("Gather", ["d", "i"], ["y"], name="g", axis=0)],
     [vi("d", T.FLOAT, [3, 4]), vi("i", T.INT64, [2])], [vi("y", T.FLOAT, None)])
save("computed_ids.onnx", [node("Add", ["ids", "five"], ["i"], name="add"), node("Gather", ["d", "i"], ["y"], name="g", axis=0)],
     [vi("ids", T.INT64, [2])], [vi("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.ones((3, 4), np.float32), "d"), numpy_helper.from_array(np.array(5, np.int64), "five")])
one = numpy_helper.from_array(np.array(1, np.int64), "one")
save("shifted_ids.onnx", [node("Add", ["ids", "one"], ["i"], name="add"), node("Gather", ["d", "i"], ["y"], name="g", axis=0)],
     [vi("ids", T.INT64, [2])], [vi("y", T.FLOAT, None)], [numpy_helper.from_array(np.ones((3, 4), np.float32), "d"), one])
save("shifted_nd.onnx", [node("Add", ["ids", "one"], ["i"], name="add"), node("GatherND", ["d", "i"], ["y"], name="gnd")],
     [vi("ids", T.INT64, [2, 2])], [vi("y", T.FLOAT, None)], [numpy_helper.from_array(np.ones((3, 4), np.float32), "d"), one])
save("shifted_scatter.onnx", [node("Add", ["ids", "one"], ["i"], name="add"), node("ScatterElements", ["d", "i", "u"], ["y"], name="sc", axis=1)],
     [vi("ids", T.INT64, [1, 2])], [vi("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.zeros((1, 4), np.float32), "d"), numpy_helper.from_array(np.ones((1, 2), np.float32), "u"), one])
save("folded_ids.onnx", [node("Add", ["k", "five"], ["i"], name="add"), node("Gather", ["d", "i"], ["y"], name="g", axis=0)],
     [vi("d", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.array([0, 1], np.int64), "k"), numpy_helper.from_array(np.array(5, np.int64), "five")])
c = node("Constant", [], ["c"], name="c", value_float=1.0)
c.attribute.append(helper.make_attribute("value_int", 3))
save("two_values.onnx", [c, node("Add", ["x", "c"], ["y"], name="add")], [vi("x", T.FLOAT, [1, 4])], [vi("y", T.FLOAT, None)])
save("names.onnx", [node("Relu", ["a:b"], ["a/b"], name="r")], [vi("a:b", T.FLOAT, [1, 4])], [vi("a/b", T.FLOAT, [1, 4])])
save("no_outputs.onnx", [node("Relu", ["x"], ["y"], name="r")], [vi("x", T.FLOAT, [1, 4])], [])
save("escape.onnx", [node("Det", ["x"], ["y"], name="\x1b[2J\x1b[31mred")], [vi("x", T.FLOAT, [4, 4])], [vi("y", T.FLOAT, [])])
save("conv_rank3.onnx", [node("Conv", ["x", "w"], ["y"], name="cv")], [vi("x", T.FLOAT, [1, 3, 8, 8])], [vi("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.ones((4, 3, 3), np.float32), "w")])
save("empty.onnx", [node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", T.FLOAT, [2, 0])], [vi("y", T.FLOAT, [2, 3])],
     [numpy_helper.from_array(np.zeros((0, 3), np.float32), "w")])
save("bigint.onnx", [node("Add", ["x", "c"], ["y"], name="add_big")], [vi("x", T.INT64, [1, 4])], [vi("y", T.INT64, [1, 4])],
     [numpy_helper.from_array(np.array([9999999968], np.int64), "c")])
save("empty_relu.onnx", [node("Relu", ["x"], ["y"], name="r")], [vi("x", T.FLOAT, [0, 4])], [vi("y", T.FLOAT, [0, 4])])
save("symbolic.onnx", [node("Relu", ["x"], ["y"], name="r")], [vi("x", T.FLOAT, [1, "L"])], [vi("y", T.FLOAT, None)])
save("ids.onnx", [node("Gather", ["d", "ids"], ["y"], name="g", axis=0)],
     [vi("ids", T.INT64, [2])], [vi("y", T.FLOAT, None)], [numpy_helper.from_array(np.ones((3, 4), np.float32), "d")])
save("relu.onnx", [node("Relu", ["x"], ["y"], name="r")], [vi("x", T.FLOAT, [1, 4])], [vi("y", T.FLOAT, [1, 4])])
import os
for sub in ["big_npy", "short_npy", "empty_npy", "inf_npy", "bad_ids", "no_files", "bad_shift", "bad_nd", "bad_scatter"]:
    os.makedirs(d + "/" + sub, exist_ok=True)
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
h = h + " " * (118 - len(h)) + "\n"
open(d + "/big_npy/x.npy", "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + b"\0" * 256)
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8), }"
h = h + " " * (118 - len(h)) + "\n"
open(d + "/short_npy/x.npy", "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + b"\0" * 8)
open(d + "/empty_npy/x.npy", "wb").write(b"")
np.save(d + "/inf_npy/x.npy", np.array([[1, np.inf, -np.inf, np.nan]], np.float32))
np.save(d + "/bad_ids/i.npy", np.array([0, 7], np.int64))
np.save(d + "/bad_ids/d.npy", np.ones((3, 4), np.float32))
np.save(d + "/bad_shift/ids.npy", np.array([0, 2], np.int64))
np.save(d + "/bad_nd/ids.npy", np.array([[0, 0], [1, 3]], np.int64))
np.save(d + "/bad_scatter/ids.npy", np.array([[0, 3]], np.int64))
"#;

/// A command past this is a hang.
const HANG: Duration = Duration::from_secs(300);

/// Runs `weft args` (through `sh -c` with `shell` appended where given), killed past
/// [`HANG`]; asserts it neither aborted, panicked nor hung.
fn weft_in(dir: &Path, args: &[&str], shell: Option<&str>) -> Output {
    weft_env(dir, args, shell, &[])
}

/// [`weft_in`] with `env` set.
fn weft_env(dir: &Path, args: &[&str], shell: Option<&str>, env: &[(&str, &str)]) -> Output {
    let weft = env!("CARGO_BIN_EXE_weft");
    let mut command = match shell {
        Some(tail) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("exec \"$0\" \"$@\" {tail}"))
                .arg(weft)
                .args(args);
            c
        }
        None => {
            let mut c = Command::new(weft);
            c.args(args);
            c
        }
    };
    let mut child = command
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdout(if shell.is_some() {
            Stdio::inherit()
        } else {
            Stdio::piped()
        })
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start weft {args:?}: {e}"));
    let started = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if started.elapsed() > HANG {
            let _ = child.kill();
            panic!("weft {args:?} hung: killed after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("the output of weft");
    let err = stderr(&out);
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "weft {args:?} ended with {:?} (an abort is 134 or a signal, a panic 101):\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "weft {args:?} panicked:\n{err}");
    out
}

/// Runs `weft args` in `dir`, expects exit `code` and every one of `needles` in stderr
/// and none of `absent`; returns the output.
fn case(dir: &Path, args: &[&str], code: i32, needles: &[&str], absent: &[&str]) -> Output {
    let out = weft_in(dir, args, None);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "weft {args:?}:\nstdout:\n{}\nstderr:\n{err}",
        stdout(&out)
    );
    for n in needles {
        assert!(
            err.contains(n),
            "weft {args:?}: `{n}` not in stderr:\n{err}"
        );
    }
    for a in absent {
        assert!(!err.contains(a), "weft {args:?}: `{a}` in stderr:\n{err}");
    }
    out
}

/// The fixtures' folder, or `None` (skipped) where python3 with onnx is not here.
fn fixtures() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let made = Command::new("python3")
        .args(["-c", FIXTURES, dir.path().to_str().unwrap()])
        .output();
    match made {
        Ok(o) if o.status.success() => Some(dir),
        other => {
            let why = format!("python3 with onnx could not write the fixtures: {other:?}");
            if std::env::var("WEFT_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s == "onnxruntime"))
            {
                panic!("{why}");
            }
            eprintln!("skipped: {why}");
            None
        }
    }
}

const CPU: [&str; 2] = ["--target", "cpu"];

fn run<'a>(model: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["model", "run", model, CPU[0], CPU[1], "--iters", "1"];
    v.extend_from_slice(more);
    v
}

/// Tensors past i32 indexing, from the file or from an option, refused before anything
/// is allocated (each was `memory allocation of N bytes failed`, exit 134), naming the
/// tensor, its node and the option.
#[test]
fn sizes_are_checked_before_anything_is_allocated() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    let i32 = "weft indexes tensors with i32";
    case(
        d,
        &run("outer.onnx", &[]),
        2,
        &["`y`", "`mm` (MatMul)", "[1048576, 1048576]", i32],
        &[],
    );
    case(d, &run("gemm.onnx", &[]), 2, &["`gm` (Gemm)", i32], &[]);
    // An integer past what weft's integer tensors keep (once `integer literal 9999999968
    // does not fit i32` from `--emit`): refused at import naming the node and the input.
    let emit = d.join("emitted");
    let emit = emit.to_str().unwrap();
    case(
        d,
        &[
            "model",
            "graph",
            "bigint.onnx",
            CPU[0],
            CPU[1],
            "--emit",
            emit,
        ],
        2,
        &["`add_big` (Add)", "`c`", "9999999968"],
        &["integer literal"],
    );
    case(
        d,
        &run("big_input.onnx", &[]),
        2,
        &["`a`", "an input of the graph", i32],
        &[],
    );
    case(
        d,
        &run("mlp.onnx", &["--batch", "1000000000"]),
        2,
        &["`x`", "--batch 1000000000"],
        &[],
    );
    case(
        d,
        &run("conv_big.onnx", &["--batch", "100000"]),
        2,
        &["`conv` (Conv)", "--batch 100000"],
        &[],
    );
    let graph = [
        "model",
        "graph",
        "zoo:resnet50",
        "--batch",
        "100000",
        "--resolution",
        "224",
    ];
    case(d, &graph, 2, &["zoo:resnet50", "--batch 100000", i32], &[]);
    // A `.npy` header's shape is checked against the input, and its length against the
    // file's, before the data is read.
    case(
        d,
        &run("mlp.onnx", &["--inputs", "big_npy"]),
        2,
        &["[1000000, 1000000]", "[1, 8]"],
        &[],
    );
    case(
        d,
        &run("mlp.onnx", &["--inputs", "short_npy"]),
        2,
        &["header declares 8 elements"],
        &[],
    );
    case(
        d,
        &run("relu.onnx", &["--inputs", "empty_npy"]),
        2,
        &["0 bytes long"],
        &["fill whole buffer"],
    );
}

/// 13,000 fused Relus (12,500 overflowed the stack in lowering) compile and run.
#[test]
fn a_long_chain_compiles_and_runs() {
    let Some(tmp) = fixtures() else { return };
    let out = case(tmp.path(), &run("chain.onnx", &[]), 0, &[], &[]);
    assert!(stdout(&out).contains(": ok"), "{}", stdout(&out));
}

/// ONNX's errors stay errors: indices out of range (constant or folded: before the run;
/// a graph input: before the run, with or without the check; computed: the run fails),
/// a Constant
/// with two values; inf and NaN in where the reference has the same out.
#[test]
fn invalid_input_is_refused_not_computed() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    case(
        d,
        &run("gather_const.onnx", &[]),
        2,
        &["`g` (Gather)", "index 5", "-3 to 2"],
        &[],
    );
    for more in [
        &["--inputs", "bad_ids"][..],
        &["--inputs", "bad_ids", "--no-check"],
    ] {
        case(
            d,
            &run("gather.onnx", more),
            2,
            &["input `i`", "is 7", "`g` (Gather)", "3 rows"],
            &[],
        );
    }
    // Random ids are drawn inside the rows they index.
    case(d, &run("gather.onnx", &[]), 0, &[], &[]);
    // Ids computed out of range (0 or 1, plus 5): the device's guard fails the run
    // (exit 1), naming the node, checked or not.
    for more in [&[][..], &["--no-check"]] {
        case(
            d,
            &run("computed_ids.onnx", more),
            1,
            &["`g` (Gather)", "out of range for 3 rows"],
            &[],
        );
    }
    // Indices folded out of range from constants: refused before the run.
    case(
        d,
        &run("folded_ids.onnx", &[]),
        2,
        &["`g` (Gather)", "-3 to 2"],
        &[],
    );
    case(
        d,
        &run("two_values.onnx", &[]),
        2,
        &["`c` (Constant)", "value_float", "value_int"],
        &[],
    );
    let out = case(d, &run("relu.onnx", &["--inputs", "inf_npy"]), 0, &[], &[]);
    assert!(
        stdout(&out).contains("reference (tolerance 1e-3): ok"),
        "{}",
        stdout(&out)
    );
}

/// Indices computed on the device out of range fail the run on every target the machine
/// has (the interpreter, and Vulkan where an adapter is here: lavapipe), naming the node;
/// the same models with indices in range run and agree with the reference.
#[test]
fn computed_indices_out_of_range_fail_the_run() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    let vulkan = stdout(&weft_in(d, &["targets"], None))
        .lines()
        .any(|l| l.starts_with("vulkan") && l.contains("available"));
    if !vulkan {
        let why = "no Vulkan adapter (install mesa-vulkan-drivers for lavapipe)";
        let required =
            std::env::var("WEFT_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s == "wgpu"));
        assert!(
            !required,
            "wgpu is required (WEFT_REQUIRE) but unavailable: {why}"
        );
        eprintln!("skipped on vulkan: {why} (set WEFT_REQUIRE=wgpu to make this a failure)");
    }
    let targets: &[&str] = if vulkan { &["cpu", "vulkan"] } else { &["cpu"] };
    let cases = [
        ("shifted_ids.onnx", "bad_shift", "`g` (Gather)", "3 rows"),
        ("shifted_nd.onnx", "bad_nd", "`gnd` (GatherND)", "[3, 4]"),
        (
            "shifted_scatter.onnx",
            "bad_scatter",
            "`sc` (ScatterElements)",
            "4 rows",
        ),
    ];
    for target in targets {
        for (model, bad, node, rows) in cases {
            let args = |more: &[&'static str]| {
                let mut v = vec!["model", "run", model, "--target", target, "--iters", "1"];
                v.extend_from_slice(more);
                v
            };
            // Random ids (0 or 1, plus 1) are in range.
            let out = case(d, &args(&[]), 0, &[], &[]);
            assert!(stdout(&out).contains(": ok"), "{}", stdout(&out));
            case(d, &args(&["--inputs", bad]), 1, &[node, rows, "ONNX"], &[]);
            case(
                d,
                &args(&["--inputs", bad, "--no-check"]),
                1,
                &[node, rows],
                &[],
            );
        }
    }
}

/// A plan larger than the device's memory (forced small with `WEFT_DEVICE_MEMORY`) is
/// refused before anything is allocated (exit 2), naming the largest tensors and the
/// option that made it so; the same model fits where the memory is enough.
#[test]
fn a_model_larger_than_the_device_is_refused() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    let args = run("mlp.onnx", &["--batch", "64"]);
    let small = [("WEFT_DEVICE_MEMORY", "4000")];
    let out = weft_env(d, &args, None, &small);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for want in [
        "--batch 64",
        "needs 6.5 KiB",
        "3.9 KiB available",
        "`y` 4.0 KiB (an output)",
    ] {
        assert!(err.contains(want), "`{want}` not in: {err}");
    }
    let out = weft_env(d, &args, None, &[("WEFT_DEVICE_MEMORY", "1000000")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = weft_env(d, &args, None, &[("WEFT_DEVICE_MEMORY", "lots")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("WEFT_DEVICE_MEMORY=`lots`"),
        "{}",
        stderr(&out)
    );
}

/// Files weft writes: never over a device node, a FIFO or a folder (each left as it
/// was, exit 2), and models, records and inputs read no further than their length.
#[test]
fn only_regular_files_are_written_and_read() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    // A character device where this test may make one (root), else a FIFO.
    let made = Command::new("mknod")
        .args(["dev", "c", "1", "3"])
        .current_dir(d)
        .status();
    let node = if made.is_ok_and(|s| s.success()) {
        ("dev", "a character device")
    } else {
        let fifo = Command::new("mkfifo").arg("dev").current_dir(d).status();
        assert!(fifo.is_ok_and(|s| s.success()), "mkfifo");
        ("dev", "a FIFO")
    };
    let kind = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
    let before = kind(&d.join(node.0));
    case(
        d,
        &["model", "export", "relu.onnx", node.0],
        2,
        &["`dev`", node.1],
        &[],
    );
    let tune = [
        "model",
        "tune",
        "relu.onnx",
        "--target",
        "cpu",
        "--records",
        node.0,
    ];
    case(d, &tune, 2, &["`dev`", node.1], &[]);
    case(
        d,
        &["model", "export", "relu.onnx", "."],
        2,
        &["folder"],
        &[],
    );
    assert_eq!(kind(&d.join(node.0)), before, "the node was replaced");
    // Read as a model, records, or an input: refused, never read without end.
    case(
        d,
        &run("/dev/zero", &[]),
        2,
        &["/dev/zero", "not a regular file"],
        &[],
    );
    case(
        d,
        &run("relu.onnx", &["--records", "/dev/zero"]),
        0,
        &["warning", "/dev/zero"],
        &[],
    );
    // --save onto a file, and a symbolic link loop as a model: named as such.
    case(
        d,
        &run("relu.onnx", &["--save", "relu.onnx"]),
        2,
        &["--save", "is a file"],
        &["os error 17"],
    );
    std::os::unix::fs::symlink("loop.onnx", d.join("loop.onnx")).unwrap();
    case(
        d,
        &run("loop.onnx", &[]),
        2,
        &["loop.onnx", "symbolic links"],
        &["zoo:NAME"],
    );
}

/// Tensor names as file names one to one (`a:b` and `a/b`), the mapping printed, and the
/// files read back; a closed stdout is exit 1.
#[test]
fn names_map_to_files_one_to_one() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    let out = case(d, &run("names.onnx", &["--save", "saved"]), 0, &[], &[]);
    let text = stdout(&out);
    assert!(text.contains("saved     2 files"), "{text}");
    assert!(
        text.contains("`a:b` → a_b.npy") && text.contains("`a/b` → a_b-2.npy"),
        "{text}"
    );
    let mut files: Vec<String> = std::fs::read_dir(d.join("saved"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["a_b-2.npy", "a_b.npy"]);
    case(d, &run("names.onnx", &["--inputs", "saved"]), 0, &[], &[]);
    // Closed (`>&-`): nothing can be written, and that is not success.
    let closed = weft_in(d, &run("relu.onnx", &[]), Some(">&-"));
    assert_eq!(closed.status.code(), Some(1), "{}", stderr(&closed));
    assert!(
        stderr(&closed).contains("stdout is closed"),
        "{}",
        stderr(&closed)
    );
    // Redirected to /dev/null, it is written (and lost on purpose).
    let null = weft_in(d, &run("relu.onnx", &[]), Some(">/dev/null"));
    assert_eq!(null.status.code(), Some(0), "{}", stderr(&null));
}

/// Messages in the user's words: the option, the file, the node and its attribute;
/// options that do not apply refused (or warned about); no terminal escape echoed.
#[test]
fn messages_name_what_the_user_wrote() {
    let Some(tmp) = fixtures() else { return };
    let d = tmp.path();
    case(
        d,
        &run("no_outputs.onnx", &[]),
        2,
        &["no outputs"],
        &["(none)"],
    );
    let out = case(d, &run("escape.onnx", &[]), 2, &["Det", "\\u{1b}[2J"], &[]);
    assert!(
        !stderr(&out).contains('\x1b'),
        "an escape reached the terminal"
    );
    case(
        d,
        &run("conv_rank3.onnx", &[]),
        2,
        &["`cv` (Conv)", "weights", "[4, 3, 3]"],
        &["kernel_shape"],
    );
    case(
        d,
        &run("empty.onnx", &[]),
        2,
        &["`x`", "no elements"],
        &["t_x"],
    );
    // An empty tensor nothing computes with: the Relu of no elements is a constant (its
    // value is its shape), and the output has no elements.
    case(d, &run("empty_relu.onnx", &[]), 0, &[], &["t_x"]);
    case(
        d,
        &run("symbolic.onnx", &[]),
        2,
        &["`x`", "`L`", "--batch"],
        &["ImportOptions"],
    );
    case(
        d,
        &run("ids.onnx", &["--inputs", "no_files"]),
        2,
        &["ids.npy int64 [2]"],
        &["i32"],
    );
    case(
        d,
        &run("relu.onnx", &["--resolution", "32"]),
        2,
        &["--resolution", "zoo models only"],
        &[],
    );
    case(
        d,
        &run("relu.onnx", &["--batch", "4"]),
        0,
        &["warning", "--batch 4 does not apply"],
        &[],
    );
    let seq = ["model", "graph", "zoo:resnet50", "--seq", "8"];
    case(d, &seq, 2, &["--seq does not apply", "zoo:resnet50"], &[]);
    let res = ["model", "graph", "zoo:gpt2", "--resolution", "32"];
    case(
        d,
        &res,
        2,
        &["--resolution does not apply", "zoo:gpt2"],
        &[],
    );
}

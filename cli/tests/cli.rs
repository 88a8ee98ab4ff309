//! The `weft` binary end to end: every command, every op, and the exit status and stderr
//! message of bad input. Nothing here needs a GPU: `run` and `bench` use the `cpu`
//! target, `emit` needs no device.

mod common;

use common::{bad_input, ok};
use weft_ops::OPS;

#[test]
fn targets_lists_every_kind() {
    let out = ok(&["targets"]);
    let lines: Vec<&str> = out.lines().collect();
    for name in weft_runtime::target::TARGET_NAMES {
        assert!(
            lines
                .iter()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "no line for `{name}`:\n{out}"
        );
    }
    let cpu = lines
        .iter()
        .find(|l| l.starts_with("cpu "))
        .unwrap_or_else(|| panic!("no cpu line:\n{out}"));
    assert!(cpu.contains(" available") && cpu.contains("weft interpreter"));
}

#[test]
fn ops_lists_schedules() {
    let out = ok(&["ops"]);
    for op in OPS {
        assert!(out.contains(&format!("{}:", op.name)));
        for s in op.schedules {
            assert!(out.contains(s), "schedule `{s}` of `{}` missing", op.name);
        }
    }
}

#[test]
fn emit_every_op_and_schedule_for_every_language() {
    let languages = [
        ("cuda", "__global__"),
        ("rocm", "#include <hip/hip_runtime.h>"),
        ("vulkan", "@compute"),
        ("webgpu", "@compute"),
        ("metal", "kernel void"),
        ("cpu", "@T.prim_func"),
    ];
    for op in OPS {
        for schedule in op.schedules {
            for (target, marker) in languages {
                // Plain WebGPU has no f16: an f16 op is refused with a typed error.
                let f16 = weft_ops::Workload::default_for(op.name).unwrap().uses_f16();
                if f16 && target == "webgpu" {
                    bad_input(
                        &["emit", "--op", op.name, "--target", target],
                        &["uses f16, which target webgpu does not support"],
                    );
                    continue;
                }
                let out = ok(&[
                    "emit",
                    "--op",
                    op.name,
                    "--schedule",
                    schedule,
                    "--target",
                    target,
                ]);
                assert!(
                    out.contains(marker),
                    "{}/{schedule} for {target}: no `{marker}` in\n{out}",
                    op.name
                );
            }
        }
    }
}

#[test]
fn emit_takes_target_options() {
    let out = ok(&["emit", "--op", "vecadd", "--target", "cuda -arch=sm_90"]);
    assert!(out.contains("__global__"));
}

#[test]
fn ir_prints_func_trace_and_kernels() {
    let func = ok(&["ir", "--op", "matmul", "--schedule", "naive"]);
    assert!(func.contains("def matmul"), "{func}");
    let traced = ok(&["ir", "--op", "matmul", "--schedule", "naive", "--trace"]);
    assert!(traced.contains("sch.bind("), "{traced}");
    // k = 64: a short reduction, so the rule takes one kernel (no split).
    let lowered = ok(&[
        "ir",
        "--op",
        "matmul",
        "--shape",
        "m=64,n=32,k=64",
        "--lowered",
    ]);
    assert!(lowered.contains("T.launch_thread"), "{lowered}");
    assert!(
        lowered.contains("(64, 64)"),
        "shape not applied:\n{lowered}"
    );
    // The bounds prover's verdict, one comment per kernel, before the kernels.
    assert!(
        lowered.contains("\n# bounds: matmul_kernel: all ")
            && lowered.contains("accesses proven in bounds"),
        "{lowered}"
    );
}

#[test]
fn run_every_op_on_cpu() {
    for op in OPS {
        let out = ok(&["run", "--op", op.name, "--target", "cpu", "--iters", "2"]);
        assert!(out.contains("schedule  "), "{out}");
        assert!(out.contains(": ok"), "{}: {out}", op.name);
        assert!(out.contains("median"), "{out}");
        assert!(
            out.contains("bounds    ") && out.contains("proven in bounds"),
            "{out}"
        );
    }
}

#[test]
fn run_all_schedules_of_an_op_on_cpu() {
    let out = ok(&[
        "run",
        "--all",
        "--op",
        "window-sum",
        "--target",
        "cpu",
        "--iters",
        "1",
    ]);
    let ok_lines = out.lines().filter(|l| l.starts_with("ok ")).count();
    let n = weft_ops::find("window-sum").map_or(0, |op| op.schedules.len() * op.small.len());
    assert_eq!(ok_lines, n, "{out}");
}

#[test]
fn bench_on_cpu_writes_json() {
    let dir = std::env::temp_dir().join(format!("weft-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let path = dir.join("bench.json");
    let path_text = path.to_string_lossy().into_owned();
    let out = ok(&[
        "bench",
        "--targets",
        "cpu",
        "--ops",
        "vecadd,window-sum",
        "--iters",
        "2",
        "--json",
        &path_text,
    ]);
    assert!(out.contains("vs cpu"), "{out}");
    assert!(out.contains("GB/s"), "{out}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path_text}: {e}"));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON: {e}\n{text}"));
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    // vecadd and window-sum have two schedules each at one small shape.
    assert_eq!(rows.len(), 4, "{text}");
    assert_eq!(json["shader_checks"], "proven", "{text}");
    for row in &rows {
        assert_eq!(row["status"], "ok", "{row}");
        assert_eq!(row["bounds"], "proven", "{row}");
        assert_eq!(row["target"], "cpu");
        assert!(row["gbps"].as_f64().is_some_and(|g| g > 0.0), "{row}");
        assert_eq!(row["vs_first"].as_f64(), Some(1.0));
    }
    assert_eq!(json["targets"][0]["size"], "small");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shader_check_flags() {
    // Forcing checks on and off at once is a usage error; run has no way to drop checks
    // the prover did not earn.
    bad_input(
        &[
            "bench",
            "--targets",
            "cpu",
            "--checked-shaders",
            "--unchecked-shaders",
        ],
        &["--checked-shaders", "--unchecked-shaders"],
    );
    bad_input(
        &[
            "run",
            "--op",
            "vecadd",
            "--target",
            "cpu",
            "--unchecked-shaders",
        ],
        &["--unchecked-shaders"],
    );
}

#[test]
fn unknown_op_lists_ops() {
    let mut needles = vec!["unknown op `nope`"];
    needles.extend(OPS.iter().map(|o| o.name));
    bad_input(&["run", "--op", "nope", "--target", "cpu"], &needles);
    bad_input(&["emit", "--op", "nope", "--target", "cuda"], &needles);
    bad_input(&["ir", "--op", "nope"], &needles);
    bad_input(
        &["bench", "--ops", "vecadd,nope", "--targets", "cpu"],
        &needles,
    );
}

#[test]
fn unknown_schedule_lists_schedules() {
    bad_input(
        &["ir", "--op", "matmul", "--schedule", "fast"],
        &["no schedule `fast`", "naive", "shared-blocking"],
    );
    bad_input(
        &["run", "--all", "--schedule", "fast", "--target", "cpu"],
        &["schedule `fast`", "split-bind", "v4"],
    );
}

#[test]
fn unknown_target_lists_targets() {
    bad_input(
        &["emit", "--op", "vecadd", "--target", "tpu"],
        &[
            "unknown target `tpu`",
            "cpu",
            "cuda",
            "vulkan",
            "metal",
            "webgpu",
        ],
    );
    bad_input(
        &["emit", "--op", "vecadd", "--target", "cuda -fast"],
        &["unknown option `-fast`", "-arch=sm_XX"],
    );
    bad_input(
        &["bench", "--targets", "cpu,tpu"],
        &["unknown target `tpu`"],
    );
}

#[test]
fn bad_shapes_are_named() {
    bad_input(
        &["ir", "--op", "matmul", "--shape", "m=abc"],
        &["`abc` (for `m`) is not an integer"],
    );
    bad_input(
        &["ir", "--op", "matmul", "--shape", "q=3"],
        &["unknown parameter `q`", "m, n, k"],
    );
    bad_input(
        &["emit", "--op", "vecadd", "--shape", "n", "--target", "cuda"],
        &["`n` is not of the form name=value"],
    );
    bad_input(
        &["run", "--op", "vecadd", "--shape", "n=0", "--target", "cpu"],
        &["must be in 1..=2^31-1"],
    );
    bad_input(
        &["run", "--all", "--shape", "zz=1", "--target", "cpu"],
        &["parameter `zz` belongs to no op", "matmul (m, n, k)"],
    );
}

#[test]
fn unavailable_target_is_exit_2() {
    // Metal exists only on Apple machines; elsewhere the target is named unavailable.
    if cfg!(target_os = "macos") {
        return;
    }
    bad_input(
        &["run", "--op", "vecadd", "--target", "metal"],
        &["target `metal` is not available", "available targets: cpu"],
    );
    bad_input(&["bench", "--targets", "metal"], &["not available"]);
}

#[test]
fn kernel_over_a_limit_is_exit_2() {
    // 2^27 / 128 blocks exceed WebGPU's 65535 workgroups per dimension.
    bad_input(
        &[
            "emit",
            "--op",
            "vecadd",
            "--schedule",
            "split-bind",
            "--shape",
            "n=134217728",
            "--target",
            "webgpu",
        ],
        &["exceeds the webgpu limit"],
    );
}

#[test]
fn missing_arguments_are_exit_2() {
    bad_input(&["run", "--target", "cpu"], &["--op"]);
    bad_input(&["emit", "--op", "vecadd"], &["--target"]);
    bad_input(&["frobnicate"], &["unrecognized subcommand"]);
}

/// `weft tune --list`: the space for a target's resources, the same at every size, with
/// its default marked; WebGPU's 16 KiB leave fewer configs than CUDA's 48 KiB.
#[test]
fn tune_lists_the_space_for_a_target() {
    let count = |out: &str| -> usize {
        let line = out.lines().nth(1).unwrap_or_default();
        line.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in `{line}`"))
    };
    let cuda = ok(&["tune", "--op", "matmul", "--list", "--target", "cuda"]);
    let webgpu = ok(&["tune", "--op", "matmul", "--list", "--target", "webgpu"]);
    // The template's configs, and those of its tiles split in parts (`sk`), which the
    // tuner times only where they can pay.
    let splits = |out: &str| -> usize {
        out.lines()
            .filter(|l| l.contains(",sk=") && l.contains("k split in"))
            .count()
    };
    assert!(
        count(&cuda) - splits(&cuda) <= 200 && count(&webgpu) < count(&cuda),
        "{cuda}\n{webgpu}"
    );
    assert!(splits(&cuda) > 0, "{cuda}");
    assert!(
        cuda.contains(&format!("({} of them split-K", splits(&cuda))),
        "{cuda}"
    );
    assert!(cuda.contains("default") && cuda.contains("mb  "), "{cuda}");
    assert!(
        cuda.contains("sk  parts the reduction is split into"),
        "{cuda}"
    );
    assert!(cuda.contains("the same for every input size"));
}

/// Tune on the interpreter (a sample of the space), then `run` finds and names the
/// record; a record file for other devices does not apply elsewhere.
#[test]
fn tune_writes_a_record_that_run_uses() {
    let dir = std::env::temp_dir().join(format!("weft-cli-tune-{}", std::process::id()));
    let records = dir.join("records.json");
    let records = records.to_str().unwrap();
    let shape = "m=17,n=33,k=65";
    let out = ok(&[
        "tune",
        "--op",
        "matmul",
        "--shape",
        shape,
        "--target",
        "cpu",
        "--sample",
        "3",
        "--records",
        records,
    ]);
    assert!(out.contains("timing a sample of 3"), "{out}");
    assert!(out.contains("0 wrong, 0 failed"), "{out}");
    let best = out
        .lines()
        .find(|l| l.starts_with("best "))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("no best config in\n{out}"))
        .to_string();
    let run = ok(&[
        "run",
        "--op",
        "matmul",
        "--shape",
        shape,
        "--target",
        "cpu",
        "--records",
        records,
    ]);
    assert!(run.contains(&format!("config    {best}")), "{run}");
    assert!(run.contains("tuned: record of"), "{run}");
    // A record far faster than the run (here: rewritten to 1 ns) is flagged.
    let text = std::fs::read_to_string(records).unwrap();
    let fast: String = text
        .lines()
        .map(|l| match l.trim_start().starts_with("\"time_us\"") {
            true => "    \"time_us\": 0.001,".to_string(),
            false => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(fast, text, "no time_us in the record file:\n{text}");
    std::fs::write(records, fast).unwrap();
    let args = ["--op", "matmul", "--shape", shape, "--target", "cpu"];
    let slow = ok(&[&["run"], &args[..], &["--records", records]].concat());
    assert!(
        slow.contains("warning   ") && slow.contains("x slower than when tuned"),
        "{slow}"
    );
    // Another shape has no record: the template's default, and why.
    let other = ok(&[
        "run",
        "--op",
        "matmul",
        "--shape",
        "m=5,n=6,k=7",
        "--target",
        "cpu",
        "--records",
        records,
    ]);
    assert!(
        other.contains("default (no tuning record for matmul at m=5,n=6,k=7"),
        "{other}"
    );
    // ... and the rule that chose the config from the target and the shape (a product
    // this small takes the row tile: the cost model's pick would launch one block).
    assert!(
        other.contains("; rule: the cost model's pick launches 1 block,")
            && other.contains("multiprocessors"),
        "{other}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tune_and_config_mistakes_are_named() {
    bad_input(
        &["tune", "--op", "vecadd", "--target", "cpu"],
        &["`vecadd` has nothing to tune", "matmul (template)"],
    );
    bad_input(
        &[
            "run", "--op", "matmul", "--target", "cpu", "--config", "wm=3",
        ],
        &["--config", "`wm` = 3"],
    );
    bad_input(
        &[
            "run", "--op", "matmul", "--target", "cpu", "--config", "zz=1",
        ],
        &["unknown parameter `zz`"],
    );
    // One parameter overrides the default's.
    let out = ok(&[
        "run",
        "--op",
        "matmul",
        "--shape",
        "m=9,n=9,k=9",
        "--target",
        "cpu",
        "--config",
        "bk=16",
    ]);
    assert!(
        out.contains("bk=16") && out.contains("given with --config"),
        "{out}"
    );
    bad_input(
        &[
            "emit",
            "--op",
            "matmul",
            "--schedule",
            "naive",
            "--target",
            "cuda",
            "--config",
            "wm=4",
        ],
        &[
            "schedule `naive` is not a template",
            "`matmul`'s schedule `template` does",
        ],
    );
    // A config the target cannot run is refused with the limit it breaks.
    bad_input(
        &[
            "emit",
            "--op",
            "matmul",
            "--target",
            "webgpu",
            "--config",
            "wm=4,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=0",
        ],
        &["shared memory", "webgpu"],
    );
}

/// `WEFT_SPLIT_LAST`: unset or `0`, CUDA's split products keep their summing kernels
/// (the default: the one-kernel form measured slower on the H200); `1` sums in their
/// last part (one kernel); any other value is refused with exit 2, naming the variable.
#[test]
fn the_split_last_override_is_checked_and_taken() {
    let graph = |value: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_weft"));
        cmd.args([
            "model",
            "graph",
            "zoo:resnet50",
            "--target",
            "cuda",
            "--dtype",
            "f16",
        ]);
        match value {
            Some(v) => cmd.env("WEFT_SPLIT_LAST", v),
            None => cmd.env_remove("WEFT_SPLIT_LAST"),
        };
        cmd.output().expect("weft starts")
    };
    let text = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).to_string();
    for two in [graph(None), graph(Some("0"))] {
        assert_eq!(two.status.code(), Some(0));
        assert!(text(&two).contains("+ a summing kernel"), "{}", text(&two));
        assert!(!text(&two).contains("the last part sums"), "{}", text(&two));
    }
    let one = graph(Some("1"));
    assert_eq!(one.status.code(), Some(0));
    assert!(text(&one).contains("the last part sums"), "{}", text(&one));
    assert!(!text(&one).contains("summing kernel"), "{}", text(&one));
    let bad = graph(Some("yes"));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("WEFT_SPLIT_LAST=`yes`"), "{err}");
}

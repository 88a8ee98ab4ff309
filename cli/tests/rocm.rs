//! The `rocm` target end to end: listed, emitted as HIP, compiled offline by `weft compile`
//! (skipped with a printed reason without hipcc, unless `WEFT_REQUIRE` names `hip`), and
//! the mistakes a user can make with it named.

mod common;

use common::{bad_input, ok};
use weft_codegen_cuda::hipcc;

/// True if hipcc is here; otherwise prints why the test is skipped (or fails when
/// `WEFT_REQUIRE` names `hip`).
fn hipcc_or_skip() -> bool {
    match hipcc::probe() {
        Ok(_) => true,
        Err(e) => {
            weft_testkit::devices::require_or_skip(hipcc::TOOL, &e.to_string());
            false
        }
    }
}

/// The numeric cells of the table row whose first cell is `first`.
fn row_numbers(out: &str, first: &str) -> Vec<u64> {
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(first))
        .unwrap_or_else(|| panic!("no row `{first}` in:\n{out}"));
    line.split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

#[test]
fn rocm_is_listed_and_emits_hip() {
    let targets = ok(&["targets"]);
    let line = targets
        .lines()
        .find(|l| l.starts_with("rocm "))
        .unwrap_or_else(|| panic!("no rocm line:\n{targets}"));
    assert!(line.contains("HIP"), "{line}");
    let hip = ok(&["emit", "--op", "vecadd", "--target", "rocm -arch=gfx1100"]);
    assert!(hip.starts_with("#include <hip/hip_runtime.h>"), "{hip}");
    assert!(hip.contains("extern \"C\" __global__ void __launch_bounds__("));
    assert!(!hip.contains("cuda_fp16"), "{hip}");
}

#[test]
fn compile_prints_each_kernels_resources() {
    if !hipcc_or_skip() {
        return;
    }
    let out = ok(&[
        "compile",
        "--op",
        "matmul",
        "--schedule",
        "tiled-128",
        "--target",
        "rocm",
    ]);
    assert!(out.contains("compiled offline, not run"), "{out}");
    assert!(out.contains("for gfx90a"), "{out}");
    // VGPRs, AGPRs, SGPRs, VGPR spills, SGPR spills, scratch, LDS, waves per SIMD.
    let n = row_numbers(&out, "matmul_kernel");
    assert_eq!(n.len(), 8, "{out}");
    assert!(n[0] > 0 && n[2] > 0, "no registers:\n{out}");
    assert_eq!(
        n[6], 8192,
        "the tiled-128 schedule's LDS is two 4 KiB tiles:\n{out}"
    );
    assert!(n[7] > 0, "no occupancy:\n{out}");

    // gfx1100 (RDNA3): no AGPRs, and hipcc's missing device library is made up for.
    let out = ok(&[
        "compile",
        "--op",
        "vecadd",
        "--target",
        "rocm -arch=gfx1100",
    ]);
    assert!(out.contains("for gfx1100"), "{out}");
    assert!(
        out.contains(" - "),
        "AGPRs should be `-` on gfx1100:\n{out}"
    );
}

#[test]
fn compile_all_covers_every_schedule_of_an_op() {
    if !hipcc_or_skip() {
        return;
    }
    let out = ok(&["compile", "--all", "--op", "window-sum", "--target", "rocm"]);
    for schedule in ["split-bind", "shared-fetch"] {
        assert!(
            out.lines().any(|l| l.contains(schedule)),
            "{schedule} missing:\n{out}"
        );
    }
}

#[test]
fn rocm_mistakes_are_named() {
    bad_input(
        &["run", "--op", "vecadd", "--target", "rocm"],
        &["no ROCm runtime", "weft compile --target rocm"],
    );
    bad_input(
        &["compile", "--op", "vecadd", "--target", "cuda"],
        &[
            "target `cuda` does not compile offline",
            "rocm -arch=gfx1100",
        ],
    );
    bad_input(
        &["emit", "--op", "vecadd", "--target", "rocm -arch=sm_90"],
        &[
            "`-arch=sm_90`",
            "not an AMD architecture",
            "gfx90a",
            "gfx1100",
        ],
    );
    // A well-formed name of no GPU: refused by weft, exit 2, before hipcc runs.
    bad_input(
        &[
            "compile",
            "--op",
            "vecadd",
            "--target",
            "rocm -arch=gfx9999",
        ],
        &["`-arch=gfx9999`", "not an AMD architecture"],
    );
    // Forcing matrix fragments on HIP: the limit error names the target and the fragment.
    bad_input(
        &[
            "emit",
            "--op",
            "matmul-f16",
            "--target",
            "rocm",
            "--config",
            "mma=16",
        ],
        &[
            "needs matrix units that target rocm does not have",
            "fragment `",
        ],
    );
}

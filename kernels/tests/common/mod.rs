//! Fixtures shared by the `kernels` test binaries (`strip_barriers` is also in
//! `ops/tests/common`: a test crate cannot use another's). The NVIDIA Vulkan adapter's limits
//! are `weft_testkit`'s, re-exported here.

use half::f16;
use weft_ir::data::TensorData;
use weft_ir::kernel::KStmt;
use weft_ir::prelude::DType;

#[allow(unused_imports)] // not every test binary emits WGSL
pub use weft_testkit::devices::nvidia_vulkan_limits;

/// `s` without its barriers: what a kernel that forgot them would run (the interpreter
/// then reports the race the barriers prevented).
#[allow(dead_code)] // not every test binary strips barriers
pub fn strip_barriers(s: &KStmt) -> KStmt {
    s.rewrite(&mut |s| match s {
        KStmt::Seq(items) => KStmt::Seq(
            items
                .into_iter()
                .filter(|i| !matches!(i, KStmt::Barrier))
                .collect(),
        ),
        s => s,
    })
}

/// The LCG the template tests draw their data from (Knuth's MMIX constants): `len` floats
/// uniform in `[-width, width)` from the state `state`.
#[allow(dead_code)] // used only through the streams below
fn lcg(mut state: u64, len: usize, width: f64) -> Vec<f32> {
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f64 / (1u64 << 24) as f64 * (2.0 * width) - width) as f32
        })
        .collect()
}

/// A seeded stream of `len` floats in `[-width, width)` (a small LCG: the tests need no
/// crate), the seed taken through one step of the generator.
#[allow(dead_code)] // not every test binary draws this stream
pub fn uniform(seed: u64, len: usize, width: f64) -> Vec<f32> {
    let state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    lcg(state, len, width)
}

/// [`uniform`]'s generator with the seed mixed by the golden ratio instead (the split
/// attention tests' stream).
#[allow(dead_code)] // not every test binary draws this stream
pub fn uniform_mixed(seed: u64, len: usize, width: f64) -> Vec<f32> {
    lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, len, width)
}

/// The registers a thread of the one kernel in ptxas's report (`nvrtc::ptxas_report`)
/// uses, after checking that it has no stack frame and spilled nothing; `what` names
/// the kernel in a failure.
#[allow(dead_code)] // not every test binary reads ptxas's report
pub fn ptxas_registers(report: &str, what: &str) -> i64 {
    let what = format!("{what}:\n{report}");
    assert!(report.contains("0 bytes stack frame"), "{what}");
    assert!(
        report.contains("0 bytes spill stores, 0 bytes spill loads"),
        "{what}"
    );
    report
        .split("Used ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no register count: {what}"))
}

/// Values of `dtype` (rounded to it where f16) and the tensor holding them: what the
/// float64 references read and what the interpreter is given.
#[allow(dead_code)] // not every test binary runs a template
pub fn tensor(values: Vec<f32>, dtype: DType) -> (Vec<f64>, TensorData) {
    match dtype {
        DType::F16 => {
            let h: Vec<f16> = values.iter().map(|&v| f16::from_f32(v)).collect();
            (h.iter().map(|v| v.to_f64()).collect(), TensorData::F16(h))
        }
        _ => (
            values.iter().map(|&v| v as f64).collect(),
            TensorData::F32(values),
        ),
    }
}

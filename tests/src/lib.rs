//! weft's integration tests, written once over the list of targets.
//!
//! Each check is a function of a target string; [`testgen!`] instantiates every check
//! once per target (CubeCL's `testgen_all!` style), so `cargo test -p weft-tests` runs
//! `every_workload::cpu`, `every_workload::vulkan`, `every_workload::cuda`, ... A target
//! this machine lacks is skipped with a printed reason, or fails when `WEFT_REQUIRE`
//! names it ([`weft_testkit::devices`]).

use std::fmt::Write;

use ndarray::ArrayD;
use weft_ops::{OPS, Shape, Workload};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

/// Every target string the checks run on; absent ones are skipped.
pub const TARGETS: [&str; 8] = [
    "cpu", "cuda", "vulkan", "metal", "dx12", "gl", "wgpu", "webgpu",
];

/// One test per check and target: `testgen!(check_a, check_b)` makes modules `check_a`
/// and `check_b`, each with a `#[test]` per target calling `check_a("cpu")`, ...
#[macro_export]
macro_rules! testgen {
    ($($check:ident),+ $(,)?) => {
        $(
            mod $check {
                #[test]
                fn cpu() { super::$check("cpu") }
                #[test]
                fn cuda() { super::$check("cuda") }
                #[test]
                fn vulkan() { super::$check("vulkan") }
                #[test]
                fn metal() { super::$check("metal") }
                #[test]
                fn dx12() { super::$check("dx12") }
                #[test]
                fn gl() { super::$check("gl") }
                #[test]
                fn wgpu() { super::$check("wgpu") }
                #[test]
                fn webgpu() { super::$check("webgpu") }
            }
        )+
    };
}

/// One op × schedule × shape.
#[derive(Debug)]
pub struct Case {
    pub workload: Workload,
    pub schedule: &'static str,
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} at {}",
            self.workload.op.name, self.schedule, self.workload.shape
        )
    }
}

/// Every op × schedule at each of the op's small shapes.
///
/// # Panics
/// If an op's own small shape does not define a workload (a bug in `weft-ops`).
pub fn small_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for op in OPS {
        for values in op.small {
            let shape = Shape::from_values(op, values)
                .unwrap_or_else(|e| panic!("small shape of `{}`: {e}", op.name));
            for schedule in op.schedules {
                let workload = Workload::new(op.name, &shape)
                    .unwrap_or_else(|e| panic!("`{}` at {shape}: {e}", op.name));
                cases.push(Case { workload, schedule });
            }
        }
    }
    cases
}

/// Runs a case on `device` from seeded random inputs with a poisoned output
/// ([`weft_tune::measure::run_checked`], the driver `weft run` and the tuner use); returns
/// the output and its error against the float64 reference ([`weft_ops::check`]).
pub fn run_case(
    device: &mut dyn Device,
    case: &Case,
    seed: u64,
) -> Result<(ArrayD<f32>, weft_ops::check::Error), String> {
    run_case_on(device, case, &case.workload.random_inputs(seed))
}

/// [`run_case`] on given inputs (one per input of the case's workload).
pub fn run_case_on(
    device: &mut dyn Device,
    case: &Case,
    inputs: &[ArrayD<f32>],
) -> Result<(ArrayD<f32>, weft_ops::check::Error), String> {
    let w = &case.workload;
    let lowered = lower_for(device, case)?;
    let checked = weft_tune::measure::run_checked(device, w, &lowered, inputs, None)
        .map_err(|e| e.to_string())?;
    let out = checked
        .output
        .ok_or_else(|| "no output came back".to_string())?;
    Ok((out, checked.error))
}

/// Lowers a case for `device`: a template with its default config for the device's
/// resources (WebGPU's 16 KiB take a smaller tile than CUDA's 48 KiB).
pub fn lower_for(device: &dyn Device, case: &Case) -> Result<weft_ir::kernel::LoweredFunc, String> {
    let w = &case.workload;
    let config = w
        .template(case.schedule)
        .map(|t| (t.default)(&device.limits()));
    w.lower_with(case.schedule, config.as_ref())
        .map_err(|e| e.to_string())
}

/// Whether `target` runs every case, or only each op's first schedule at its first small
/// shape (`gl`): its GLSL is naga's translation of the same WGSL that the Vulkan targets
/// run in full, and llvmpipe's GL driver compiles an unrolled template for minutes
/// (`matmul/tiled-128` 127 s, `matmul/template` 44 s on a 2-core machine with an empty
/// Mesa shader cache, 2026-11-26; every case on `gl` held most of CI's 37 minutes).
pub fn every_case(target: &str) -> bool {
    target != "gl"
}

/// The op's first schedule at its first small shape.
fn is_first(case: &Case) -> bool {
    let op = case.workload.op;
    op.schedules.first() == Some(&case.schedule)
        && op.small.first().is_some_and(|values| {
            Shape::from_values(op, values).is_ok_and(|s| s == case.workload.shape)
        })
}

/// The case the device checks (reruns, ndarray in and out, timing) run on: the op's best
/// schedule, or on a target that runs one case per op (`gl`, [`every_case`]) that one.
pub fn device_case(target: &str, case: &Case) -> bool {
    !every_case(target) || case.schedule == case.workload.op.best
}

/// Opens `target` or skips (see [`open_or_skip`]), runs `check` on every small case and
/// panics with every failure at once.
pub fn for_every_case(
    target: &str,
    mut check: impl FnMut(&mut dyn Device, &Case) -> Result<(), String>,
) {
    let Some(mut device) = open_or_skip(target) else {
        return;
    };
    // An f16 op on a target without f16 (plain WebGPU) is refused with a typed error,
    // which `cli/tests` checks; it is not a case here.
    let f16 = device.limits().f16;
    let cases: Vec<Case> = small_cases()
        .into_iter()
        .filter(|c| f16 || !c.workload.uses_f16())
        .filter(|c| every_case(target) || is_first(c))
        .collect();
    let mut failures = String::new();
    let mut failed = 0;
    for case in &cases {
        if let Err(why) = check(device.as_mut(), case) {
            failed += 1;
            let _ = writeln!(failures, "  {case}: {why}");
        }
    }
    assert!(
        failed == 0,
        "{failed} of {} cases failed on `{target}` ({}):\n{failures}",
        cases.len(),
        device.name()
    );
    eprintln!("{target} ({}): {} cases passed", device.name(), cases.len());
}

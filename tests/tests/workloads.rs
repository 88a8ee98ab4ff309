//! Every workload × schedule at the op's small shapes against the float64 reference, on
//! every target this machine has (`weft_tests::TARGETS`; absent ones are skipped, or fail
//! under `WEFT_REQUIRE`).

use ndarray::ArrayD;
use weft_runtime::Device;
use weft_runtime::array::run_f32;
use weft_tests::{Case, for_every_case, lower_for, run_case, testgen};

testgen!(
    every_workload,
    reruns_are_identical,
    ndarray_in_and_out,
    timing
);

/// The output of every case is within [`TOLERANCE`] of the reference; an element no
/// thread wrote stays NaN and fails.
fn every_workload(target: &str) {
    for_every_case(target, |device, case| {
        let (_, error) = run_case(device, case, 0)?;
        if error <= case.workload.tolerance() {
            Ok(())
        } else {
            Err(format!("max relative error {error:.3e} (NaN: infinite)"))
        }
    });
}

/// The op's best schedule only: the checks below are about the device, not the schedule.
fn best_only(case: &Case) -> bool {
    case.schedule == case.workload.op.best
}

/// A second run on the same device (its kernels now from the compile cache, its buffers
/// reallocated) gives the same output bit for bit.
fn reruns_are_identical(target: &str) {
    for_every_case(target, |device, case| {
        if !best_only(case) {
            return Ok(());
        }
        let (first, _) = run_case(device, case, 7)?;
        let (second, _) = run_case(device, case, 7)?;
        let same = first
            .iter()
            .zip(second.iter())
            .all(|(a, b)| a.to_bits() == b.to_bits());
        if same {
            Ok(())
        } else {
            Err("two runs on the same inputs differ".to_string())
        }
    });
}

/// `weft_runtime::array::run_f32` (ndarray in, ndarray out) gives what the argument path
/// gives.
fn ndarray_in_and_out(target: &str) {
    for_every_case(target, |device, case| {
        // `run_f32` is for functions whose inputs and outputs are all f32.
        if !best_only(case) || case.workload.uses_f16() {
            return Ok(());
        }
        let (expected, _) = run_case(device, case, 3)?;
        let w = &case.workload;
        let lowered = lower_for(device, case)?;
        let inputs = w.random_inputs(3);
        let outputs = run_f32(device, &lowered, &inputs).map_err(|e| e.to_string())?;
        match outputs.as_slice() {
            [out] if same_values(out, &expected) => Ok(()),
            [out] => Err(format!(
                "ndarray output (shape {:?}) differs from the argument path's (shape {:?})",
                out.shape(),
                expected.shape()
            )),
            other => Err(format!("expected one output, got {}", other.len())),
        }
    });
}

fn same_values(a: &ArrayD<f32>, b: &ArrayD<f32>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Timing three runs gives three positive samples and a median between min and max.
fn timing(target: &str) {
    for_every_case(target, |device: &mut dyn Device, case| {
        if case.workload.op.name != "vecadd" || !best_only(case) {
            return Ok(());
        }
        let w = &case.workload;
        let lowered = w.lower(case.schedule).map_err(|e| e.to_string())?;
        let args = w.args(&w.random_inputs(0));
        let t = device
            .time(&lowered, &args, 1, 3)
            .map_err(|e| e.to_string())?;
        let max = t.all.iter().max().copied().unwrap_or_default();
        if t.all.len() == 3 && t.min <= t.median && t.median <= max && !max.is_zero() {
            Ok(())
        } else {
            Err(format!("implausible timing {t:?}"))
        }
    });
}

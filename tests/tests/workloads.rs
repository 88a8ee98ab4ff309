//! Every workload × schedule at the op's small shapes against the float64 reference, on
//! every target this machine has (`weft_tests::TARGETS`; absent ones are skipped, or fail
//! under `WEFT_REQUIRE`).

use ndarray::ArrayD;
use weft_ops::Values;
use weft_ops::check::Checker;
use weft_runtime::Device;
use weft_runtime::array::run_f32;
use weft_tests::{Case, device_case, for_every_case, lower_for, run_case, run_case_on, testgen};

testgen!(
    every_workload,
    reruns_are_identical,
    ndarray_in_and_out,
    timing
);

/// The output of every case is right by the rule of `weft_ops::check`; an element no
/// thread wrote stays NaN and fails.
fn every_workload(target: &str) {
    for_every_case(target, |device, case| {
        let (_, error) = run_case(device, case, 0)?;
        if error.is_right() {
            Ok(())
        } else {
            Err(format!("error {error}"))
        }
    });
}

/// Zero-mean inputs on the interpreter, the CPU Vulkan driver and CUDA (the targets the
/// rule was measured on; the others run the same kernels as `every_workload` checks).
mod zero_mean {
    #[test]
    fn cpu() {
        super::zero_mean_inputs("cpu")
    }
    #[test]
    fn vulkan() {
        super::zero_mean_inputs("vulkan")
    }
    #[test]
    fn cuda() {
        super::zero_mean_inputs("cuda")
    }
}

/// Zero-mean (standard normal) inputs, where sums cancel and outputs come near zero as in
/// a network: every case is right by the rule; and the check still catches a kernel that
/// drops one term from one element, or writes one element from its neighbour's index.
fn zero_mean_inputs(target: &str) {
    for_every_case(target, |device, case| {
        let w = &case.workload;
        let inputs = w.inputs_from(11, Values::Normal);
        let (out, error) = run_case_on(device, case, &inputs)?;
        if !error.is_right() {
            return Err(format!("zero-mean inputs: error {error}"));
        }
        let checker = Checker::new(w, &inputs);
        let dropped = drop_one_term(case, &inputs, &out)?;
        let e = checker.check(&dropped);
        if e.is_right() {
            return Err(format!("one dropped term passed the check: {e}"));
        }
        let shifted = off_by_one(&out)?;
        let e = checker.check(&shifted);
        if e.is_right() {
            return Err(format!("an off-by-one element passed the check: {e}"));
        }
        Ok(())
    });
}

/// `out` as a kernel would give it that dropped, from one output element, the term(s)
/// of one input element: the element where zeroing that input changes the reference
/// most loses that change.
fn drop_one_term(
    case: &Case,
    inputs: &[ndarray::ArrayD<f32>],
    out: &ndarray::ArrayD<f32>,
) -> Result<ndarray::ArrayD<f32>, String> {
    let w = &case.workload;
    let as64 = |v: &[ndarray::ArrayD<f32>]| -> Vec<ndarray::ArrayD<f64>> {
        v.iter().map(|a| a.mapv(f64::from)).collect()
    };
    let full = w.reference(&as64(inputs)).map_err(|e| e.to_string())?;
    let mut without = inputs.to_vec();
    // An element in the middle of the first input (an edge one may fall in the padding).
    let n = without[0].len();
    let flat = without[0]
        .as_slice_mut()
        .ok_or("an input that is not contiguous")?;
    flat[n / 2] = 0.0;
    let less = w.reference(&as64(&without)).map_err(|e| e.to_string())?;
    let (at, diff) = full
        .iter()
        .zip(less.iter())
        .map(|(a, b)| a - b)
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .ok_or("an empty output")?;
    if diff == 0.0 {
        return Err("no output element depends on the input element".into());
    }
    let mut broken = out.clone();
    let slot = broken
        .as_slice_mut()
        .ok_or("an output that is not contiguous")?;
    slot[at] -= diff as f32;
    Ok(broken)
}

/// `out` with one element holding its neighbour's value, as a kernel with an off-by-one
/// output index writes it (where neighbours differ: a ReLU's zeros are alike).
fn off_by_one(out: &ndarray::ArrayD<f32>) -> Result<ndarray::ArrayD<f32>, String> {
    let mut broken = out.clone();
    let flat = broken
        .as_slice_mut()
        .ok_or("an output that is not contiguous")?;
    let at = (0..flat.len().saturating_sub(1))
        .max_by(|&a, &b| {
            let d = |i: usize| (flat[i] - flat[i + 1]).abs();
            d(a).total_cmp(&d(b))
        })
        .ok_or("an output of one element")?;
    flat[at] = flat[at + 1];
    Ok(broken)
}

/// A second run on the same device (its kernels now from the compile cache, its buffers
/// reallocated) gives the same output bit for bit.
fn reruns_are_identical(target: &str) {
    for_every_case(target, |device, case| {
        if !device_case(target, case) {
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
        if !device_case(target, case) || case.workload.uses_f16() {
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
        if case.workload.op.name != "vecadd" || !device_case(target, case) {
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

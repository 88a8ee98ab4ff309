//! Every hand-built kernel of `weft_testkit::handmade`, emitted and run on every
//! device this machine has, compared with the interpreter on the same random inputs.
//!
//! Written once over the list of targets: an absent device is skipped with a printed
//! reason (or fails when `WEFT_REQUIRE` names it); a kernel a device cannot express (f16
//! where the adapter has no `shader-f16`) is skipped on that device with its reason.

use rand::{Rng, SeedableRng, rngs::StdRng};
use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::func::Param;
use weft_ir::kernel::{Kernel, KernelParam, LoweredFunc};
use weft_runtime::cpu::CpuDevice;
use weft_runtime::{Device, DeviceError};
use weft_testkit::devices::open_or_skip;
use weft_testkit::handmade;

const GPU_TARGETS: [&str; 5] = ["vulkan", "wgpu", "webgpu", "cuda", "gl"];

/// A one-kernel function over the kernel's own parameters.
fn as_func(kernel: &Kernel) -> LoweredFunc {
    LoweredFunc {
        name: kernel.name.clone(),
        params: kernel
            .params
            .iter()
            .map(|p| match p {
                KernelParam::Buffer { buffer, .. } => Param::Buffer(buffer.clone()),
                KernelParam::Scalar(v) => Param::Scalar(v.clone()),
            })
            .collect(),
        temps: vec![],
        kernels: vec![kernel.clone()],
    }
}

/// Random inputs in [-1, 1) (integers in [0, 16)), poison for write-only buffers.
fn random_args(func: &LoweredFunc, seed: u64) -> Vec<Arg> {
    let mut rng = StdRng::seed_from_u64(seed);
    let kernel = &func.kernels[0];
    func.params
        .iter()
        .map(|p| match p {
            Param::Buffer(b) => {
                let n = b.numel() as usize;
                let write_only = kernel.buffer_params().any(|(kb, a)| kb == b && !a.reads());
                if write_only {
                    return Arg::Tensor(TensorData::poisoned(b.dtype(), n));
                }
                Arg::Tensor(match b.dtype() {
                    DType::F32 => {
                        TensorData::F32((0..n).map(|_| rng.random_range(-1.0..1.0)).collect())
                    }
                    DType::F16 => TensorData::F16(
                        (0..n)
                            .map(|_| half::f16::from_f32(rng.random_range(-1.0..1.0)))
                            .collect(),
                    ),
                    DType::I32 => {
                        TensorData::I32((0..n).map(|_| rng.random_range(0..16)).collect())
                    }
                    DType::U32 | DType::Bool => {
                        TensorData::U32((0..n).map(|_| rng.random_range(0..2)).collect())
                    }
                })
            }
            Param::Scalar(v) => Arg::Scalar(match v.dtype() {
                DType::F32 => Scalar::F32(0.75),
                DType::F16 => Scalar::F16(half::f16::from_f32(0.75)),
                DType::I32 => Scalar::I32(1000),
                DType::U32 => Scalar::U32(3),
                DType::Bool => Scalar::U32(1),
            }),
        })
        .collect()
}

/// Element-wise comparison with a tolerance for the dtype; NaN matches NaN (an element
/// neither run wrote keeps its poison).
fn assert_close(what: &str, got: &TensorData, want: &TensorData) {
    assert_eq!(got.dtype(), want.dtype(), "{what}");
    assert_eq!(got.len(), want.len(), "{what}");
    let tol = match want.dtype() {
        DType::F16 => 1e-2,
        DType::F32 => 1e-4,
        _ => 0.0,
    };
    for i in 0..want.len() {
        let (g, w) = (
            got.get_f64(i).unwrap_or(f64::NAN),
            want.get_f64(i).unwrap_or(f64::NAN),
        );
        if g.is_nan() && w.is_nan() {
            continue;
        }
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i} is {g}, the interpreter gives {w}"
        );
    }
}

/// True if `e` means this device cannot express the kernel (not a bug).
fn cannot_express(e: &DeviceError) -> bool {
    let msg = e.to_string();
    matches!(e, DeviceError::Limits(_))
        || (matches!(e, DeviceError::Emit { .. }) && msg.contains("f16"))
}

#[test]
fn handmade_kernels_match_the_interpreter_everywhere() {
    let mut cpu = CpuDevice::new();
    let mut devices: Vec<(&str, Box<dyn Device>)> = GPU_TARGETS
        .iter()
        .filter_map(|t| open_or_skip(t).map(|d| (*t, d)))
        .collect();
    for (seed, (case, kernel)) in handmade::all().into_iter().enumerate() {
        let func = as_func(&kernel);
        let inputs = random_args(&func, seed as u64);
        let mut reference = inputs.clone();
        if let Err(e) = cpu.run(&func, &mut reference) {
            println!("{case}: the interpreter refuses it ({e}); not compared");
            continue;
        }
        for (target, dev) in devices.iter_mut() {
            let mut args = inputs.clone();
            match dev.run(&func, &mut args) {
                Ok(()) => {}
                Err(e) if cannot_express(&e) => {
                    println!("{case} on {target}: skipped: {e}");
                    continue;
                }
                Err(e) => panic!("{case} on {target}: {e}"),
            }
            for (i, (got, want)) in args.iter().zip(&reference).enumerate() {
                if let (Arg::Tensor(g), Arg::Tensor(w)) = (got, want) {
                    let what = format!("{case} on {target}, param `{}`", func.params[i].name());
                    assert_close(&what, g, w);
                }
            }
            println!("{case} on {target}: matches the interpreter");
        }
    }
}

//! The skip-or-fail rule of tests that need hardware: a backend this machine lacks is
//! skipped with a printed reason, unless the environment variable `WEFT_REQUIRE` (a comma
//! list such as `wgpu,nvrtc` or `cuda,vulkan`; `all` names everything) names it — then the
//! test fails. CI sets `WEFT_REQUIRE` so that a GPU test cannot silently stop running.
//!
//! Backend keys: `cpu`, `cuda`, `nvrtc` (compiling CUDA without a GPU), `vulkan`, `metal`,
//! `dx12`, `gl`, `wgpu` (any adapter: the `wgpu` and `webgpu` targets), and `hip`
//! (hipcc, the `rocm` target's offline compiler).

use weft_runtime::{Device, DeviceError, Target, open};

pub use weft_codegen_common::testing::{REQUIRE_VAR, required};

/// Skips a test whose `backend` is absent: prints `reason` and returns, or panics if
/// `WEFT_REQUIRE` names `backend`.
pub fn require_or_skip(backend: &str, reason: &str) {
    if required(backend) {
        panic!("{REQUIRE_VAR} names `{backend}`, but it is not available: {reason}");
    }
    eprintln!("skipped {backend}: {reason}");
}

/// Opens `target` (a target string), or skips through [`require_or_skip`] when the
/// machine lacks it *or has it but cannot use it*: the GPU machine lists an EGL adapter
/// for `gl` whose device request fails ("Parent device is lost"), and a backend nobody
/// asked for must not fail the suite there. Either way, `WEFT_REQUIRE` naming the backend
/// turns the skip into a failure.
///
/// # Panics
/// On a target string that does not parse (a bug in the test), and on a device that is
/// absent or fails to open when `WEFT_REQUIRE` names its backend.
pub fn open_or_skip(target: &str) -> Option<Box<dyn Device>> {
    let target = match Target::parse(target) {
        Ok(t) => t,
        Err(e) => panic!("bad target string in a test: {e}"),
    };
    or_skip(&target, open(&target))
}

/// The device `opened` for `target`, or `None` after [`require_or_skip`] when the machine
/// lacks it; for tests that open a concrete device type (`WgpuDevice::open`, ...).
///
/// # Panics
/// On a device that is absent or failed to open when `WEFT_REQUIRE` names its backend.
pub fn or_skip<T>(target: &Target, opened: Result<T, DeviceError>) -> Option<T> {
    match opened {
        Ok(dev) => Some(dev),
        Err(e) if e.is_unavailable() => {
            require_or_skip(target.require_key(), &e.to_string());
            None
        }
        Err(e) => {
            require_or_skip(
                target.require_key(),
                &format!("`{target}` is present but failed to open: {e}"),
            );
            None
        }
    }
}

/// True if NVRTC can compile here; otherwise skips through [`require_or_skip`] (key
/// `nvrtc`) and returns false.
pub fn nvrtc_or_skip() -> bool {
    match weft_runtime::cuda::probe_nvrtc() {
        Ok(()) => true,
        Err(e) => {
            require_or_skip("nvrtc", &e.to_string());
            false
        }
    }
}

/// Vulkan on an NVIDIA adapter as wgpu reports its limits (16×16×16 f16 cooperative
/// matrices, subgroups of 32, 48 KiB of workgroup memory): for tests of the rules that
/// pick for that target without the adapter (`ops/tests/common` and `kernels/tests/common`
/// re-export it).
pub fn nvidia_vulkan_limits() -> weft_codegen_common::TargetLimits {
    use weft_codegen_common::{MatrixUnit, SubgroupSize, TargetLimits};
    use weft_ir::dtype::DType;
    TargetLimits {
        name: "vulkan (NVIDIA adapter limits)".into(),
        max_shared_bytes: 48 * 1024,
        max_threads_per_block: 1024,
        max_block_dim: [1024, 1024, 64],
        f16: true,
        matrix_units: vec![MatrixUnit::new(16, 16, 16, DType::F16, DType::F32)],
        max_registers: 255,
        subgroup: Some(SubgroupSize::fixed(32)),
        ..TargetLimits::webgpu_default()
    }
}

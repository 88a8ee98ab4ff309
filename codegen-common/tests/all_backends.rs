//! [`check_all_backends`]: one kernel through CUDA, WGSL and MSL, each output through its
//! offline check (NVRTC for sm_80 and sm_90, naga, the host C++ compiler against the MSL
//! shim). The per-backend suites (`codegen-*/tests/emit.rs`) snapshot the same kernels;
//! this is the helper to copy where every workload × schedule is checked.

use weft_codegen_common::TargetLimits;
use weft_codegen_common::testing::Checked;
use weft_ir::kernel::Kernel;
use weft_testkit::handmade;

/// The sources of one kernel, and which checks were skipped (absent tool, not required).
#[derive(Debug)]
pub struct AllBackends {
    pub cuda: String,
    pub wgsl: String,
    pub msl: String,
    pub skipped: Vec<String>,
}

/// Emits `kernel` for CUDA, WGSL (WebGPU's default limits, with f16 allowed) and MSL, and
/// runs each backend's offline check. A failure names the backend.
pub fn check_all_backends(kernel: &Kernel) -> Result<AllBackends, String> {
    let mut skipped = Vec::new();
    let mut note = |backend: &str, c: Checked| {
        if let Checked::Skipped(why) = c {
            skipped.push(format!("{backend}: {why}"));
        }
    };
    let cuda = weft_codegen_cuda::emit(kernel, &Default::default())
        .map_err(|e| format!("CUDA emit: {e}"))?
        .source;
    note("cuda", weft_codegen_cuda::nvrtc::check(&cuda)?);
    let wgsl_opts = weft_codegen_wgsl::WgslOptions {
        limits: TargetLimits {
            f16: true,
            ..TargetLimits::webgpu_default()
        },
    };
    let wgsl = weft_codegen_wgsl::emit(kernel, &wgsl_opts)
        .map_err(|e| format!("WGSL emit: {e}"))?
        .source;
    weft_codegen_wgsl::validate(&wgsl)?;
    let msl = weft_codegen_metal::emit(kernel, &Default::default())
        .map_err(|e| format!("MSL emit: {e}"))?
        .source;
    note("msl", weft_codegen_metal::syntax_check(&msl)?);
    Ok(AllBackends {
        cuda,
        wgsl,
        msl,
        skipped,
    })
}

#[test]
fn every_handmade_kernel_passes_every_backend() {
    for (name, kernel) in handmade::all() {
        let out = check_all_backends(&kernel).unwrap_or_else(|e| panic!("{name}: {e}"));
        for s in &out.skipped {
            eprintln!("{name}: skipped {s}");
        }
    }
}

#[test]
fn every_backend_refuses_every_unlowered_node() {
    for (node, kernel) in handmade::unlowered_cases() {
        let err = check_all_backends(&kernel).unwrap_err();
        assert!(err.contains("must be removed by lowering"), "{node}: {err}");
    }
}

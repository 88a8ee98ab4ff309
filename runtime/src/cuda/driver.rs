//! Talking to libcuda and libnvrtc safely: probing for the libraries before cudarc
//! touches them, running every driver call under [`guard`] (cudarc panics where a
//! library or symbol is missing), compiling with NVRTC, opening a context. Shared by the
//! device, its stream timing and the vendor references.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, DriverError};
use cudarc::nvrtc::Ptx;
use weft_codegen_cuda::nvrtc::{self, NvrtcError};

use crate::error::CudaError;

const DRIVER_HINT: &str = "libcuda comes with the NVIDIA driver: this machine has no NVIDIA \
                           GPU driver, or it is not on the loader path (LD_LIBRARY_PATH)";

/// Runs `f`, turning a panic inside cudarc into [`CudaError::Panicked`].
pub(crate) fn guard<T>(op: &str, f: impl FnOnce() -> T) -> Result<T, CudaError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| CudaError::Panicked {
        op: op.to_string(),
        message: payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(no message)".to_string()),
    })
}

/// Runs a driver call under [`guard`], naming the operation in its error.
pub(crate) fn driver<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, DriverError>,
) -> Result<T, CudaError> {
    let op = op.into();
    guard(&op, f)?.map_err(|source| CudaError::Driver { op, source })
}

/// The file names cudarc tries for `lib`, without repeats.
pub(crate) fn candidates(lib: &str) -> Vec<String> {
    let mut names = cudarc::get_lib_name_candidates(lib);
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// `NVIDIA 580.159.04, CUDA 13.0`: the kernel module's version (Linux's
/// `/proc/driver/nvidia/version`, where it exists) and the CUDA version of libcuda.
pub fn driver_version() -> String {
    let module = std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|text| {
            // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release
            // Build ...": the first word that is a dotted version number.
            let line = text.lines().next()?.to_string();
            line.split_whitespace()
                .find(|w| {
                    w.contains('.')
                        && w.split('.')
                            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                })
                .map(str::to_string)
        });
    let mut version: std::ffi::c_int = 0;
    // SAFETY: writes one int; libcuda was probed before any device was opened.
    let cuda = guard("cuDriverGetVersion", || unsafe {
        cudarc::driver::sys::cuDriverGetVersion(&mut version)
    })
    .ok()
    .filter(|r| *r == CUresult::CUDA_SUCCESS)
    .map(|_| format!("CUDA {}.{}", version / 1000, version % 1000 / 10));
    match (module, cuda) {
        (Some(m), Some(c)) => format!("NVIDIA {m}, {c}"),
        (Some(m), None) => format!("NVIDIA {m}"),
        (None, Some(c)) => c,
        (None, None) => "unknown".to_string(),
    }
}

/// Checks that libcuda (the driver API) can be loaded.
pub fn probe_driver() -> Result<(), CudaError> {
    // SAFETY: only tries to open the library with `libloading` under cudarc's names.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(CudaError::LibraryMissing {
            lib: "libcuda",
            tried: candidates("cuda"),
            hint: DRIVER_HINT,
        })
    }
}

/// Checks that libnvrtc (the runtime compiler) can be loaded. NVRTC needs no GPU. The
/// search is `weft_codegen_cuda::nvrtc::probe`'s: the loader's path, then the folders of
/// `LD_LIBRARY_PATH` as it is now and `WEFT_NVRTC_DIR`.
pub fn probe_nvrtc() -> Result<(), CudaError> {
    guard("probing for libnvrtc", nvrtc::probe)??;
    Ok(())
}

/// Compiles CUDA C to PTX for `arch` (`"sm_90"`) with NVRTC; `kernel` names the source in
/// errors. Works without a GPU.
pub fn compile_ptx(source: &str, arch: &str, kernel: &str) -> Result<String, CudaError> {
    nvrtc_call(kernel, arch, || nvrtc::compile_ptx(source, arch))
}

/// The code a device loads for `source`: a CUBIN for a real architecture (`sm_XX`), built
/// by NVRTC's own ptxas so that loading it costs no JIT compilation; PTX otherwise.
pub(crate) fn compile_code(source: &str, arch: &str, kernel: &str) -> Result<Ptx, CudaError> {
    if arch.starts_with("sm_") {
        nvrtc_call(kernel, arch, || nvrtc::compile_cubin(source, arch)).map(Ptx::from_binary)
    } else {
        compile_ptx(source, arch, kernel).map(Ptx::from_src)
    }
}

fn nvrtc_call<T>(
    kernel: &str,
    arch: &str,
    f: impl FnOnce() -> Result<T, NvrtcError>,
) -> Result<T, CudaError> {
    probe_nvrtc()?;
    let op = format!("NVRTC compile of kernel `{kernel}`");
    guard(&op, f)?.map_err(|e| match e {
        NvrtcError::Unavailable(u) => CudaError::NvrtcMissing(u),
        NvrtcError::Compile { log, .. } => CudaError::Compile {
            kernel: kernel.to_string(),
            arch: arch.to_string(),
            log,
        },
        other => CudaError::Compile {
            kernel: kernel.to_string(),
            arch: arch.to_string(),
            log: other.to_string(),
        },
    })
}

/// The context of device `ordinal`, or [`CudaError::NoDevice`] when the driver has fewer
/// devices (shared by the device and the vendor references).
pub(crate) fn open_context(ordinal: usize) -> Result<Arc<CudaContext>, CudaError> {
    let count = driver("cuDeviceGetCount", CudaContext::device_count)?.max(0) as usize;
    if ordinal >= count {
        return Err(CudaError::NoDevice { ordinal, count });
    }
    driver(format!("opening device {ordinal}"), || {
        CudaContext::new(ordinal)
    })
}

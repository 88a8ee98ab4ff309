//! Offline compilation of emitted CUDA with NVRTC (no GPU, no driver needed): the compile
//! check of the test suite, and the runtime's compiler.
//!
//! cudarc loads libnvrtc on first use and **panics** when it cannot. [`probe`] looks for
//! the library first, under the names cudarc tries, and turns absence into
//! [`NvrtcUnavailable`]. Besides the loader's own search (which reads `LD_LIBRARY_PATH`
//! only once, at process start), it looks in the folders of `LD_LIBRARY_PATH` as it is now
//! and in `WEFT_NVRTC_DIR`; a library found there by path stays loaded, so cudarc's later
//! load by name finds it by its soname.
//!
//! Getting libnvrtc without a CUDA toolkit: `pip install nvidia-cuda-nvrtc==13.0.88`, then
//! add `$(python3 -c 'import site; print(site.getsitepackages()[0])')/nvidia/cu13/lib` to
//! `LD_LIBRARY_PATH` (or set `WEFT_NVRTC_DIR` to it).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cudarc::nvrtc::{CompileError, CompileOptions, compile_ptx_with_opts};
use weft_codegen_common::testing::{Checked, skip};

/// The architectures every emitted kernel must compile for in the test suite.
pub const CHECK_ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// The name `WEFT_REQUIRE` uses for this check.
pub const TOOL: &str = "nvrtc";

/// Extra folder searched for libnvrtc.
pub const DIR_VAR: &str = "WEFT_NVRTC_DIR";

/// libnvrtc could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "libnvrtc not found (tried {names}; LD_LIBRARY_PATH={ld_library_path:?}{failures}); install \
     it with `pip install nvidia-cuda-nvrtc==13.0.88` and add its \
     site-packages/nvidia/cu13/lib folder to LD_LIBRARY_PATH",
    names = tried.join(", "),
    failures = describe_failures(failed)
)]
pub struct NvrtcUnavailable {
    /// The library names tried (cudarc's candidates).
    pub tried: Vec<String>,
    /// `LD_LIBRARY_PATH` when probed.
    pub ld_library_path: String,
    /// Files that exist under a candidate name but did not load, with the loader's error.
    pub failed: Vec<(PathBuf, String)>,
}

fn describe_failures(failed: &[(PathBuf, String)]) -> String {
    failed
        .iter()
        .map(|(p, e)| format!("; {} exists but did not load: {e}", p.display()))
        .collect()
}

/// A failed compilation.
#[derive(Clone, Debug, thiserror::Error)]
pub enum NvrtcError {
    /// libnvrtc could not be loaded.
    #[error(transparent)]
    Unavailable(#[from] NvrtcUnavailable),
    /// NVRTC rejected the source; `log` is its program log.
    #[error("NVRTC failed to compile for {arch}:\n{log}")]
    Compile { arch: String, log: String },
    /// C strings cannot hold NUL; emitted source never contains one.
    #[error("the source contains a NUL byte at offset {0}")]
    NulByte(usize),
    /// Any other NVRTC failure (creating the program, reading the PTX).
    #[error("NVRTC error: {0}")]
    Other(String),
}

/// Finds libnvrtc (see the module docs). The answer is computed once per process.
pub fn probe() -> Result<(), NvrtcUnavailable> {
    static PROBED: OnceLock<Result<(), NvrtcUnavailable>> = OnceLock::new();
    PROBED.get_or_init(probe_uncached).clone()
}

fn probe_uncached() -> Result<(), NvrtcUnavailable> {
    // Kept loaded for the life of the process: cudarc's `dlopen` by name then resolves to
    // this library by its soname.
    static KEEP: OnceLock<libloading::Library> = OnceLock::new();
    let mut names = cudarc::get_lib_name_candidates("nvrtc");
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    for name in &names {
        // SAFETY: loading runs the library's initialisers; libnvrtc's have no
        // preconditions. This is the same load cudarc performs.
        if let Ok(lib) = unsafe { libloading::Library::new(name) } {
            let _ = KEEP.set(lib);
            return Ok(());
        }
    }
    let ld_library_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&ld_library_path).collect();
    if let Some(d) = std::env::var_os(DIR_VAR) {
        dirs.push(PathBuf::from(d));
    }
    let mut failed = Vec::new();
    for dir in dirs.iter().filter(|d| !d.as_os_str().is_empty()) {
        for name in &names {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            // SAFETY: as above.
            match unsafe { libloading::Library::new(&path) } {
                Ok(lib) => {
                    let _ = KEEP.set(lib);
                    preload_builtins(dir);
                    return Ok(());
                }
                Err(e) => failed.push((path, e.to_string())),
            }
        }
    }
    Err(NvrtcUnavailable {
        tried: names,
        ld_library_path,
        failed,
    })
}

/// libnvrtc opens `libnvrtc-builtins.so.<version>` by name at its first compile; when
/// libnvrtc itself was found outside the loader's path, load the builtins beside it first
/// so that name resolves (by soname) to the already-loaded library.
fn preload_builtins(dir: &Path) {
    static KEEP: OnceLock<Vec<libloading::Library>> = OnceLock::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut libs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libnvrtc-builtins.so") {
            // SAFETY: as in `probe_uncached`; a failure only means NVRTC reports the
            // missing builtins itself at compile time.
            if let Ok(lib) = unsafe { libloading::Library::new(entry.path()) } {
                libs.push(lib);
            }
        }
    }
    let _ = KEEP.set(libs);
}

/// NVRTC's options: the architecture, and the CUDA headers' folder where there is one.
fn options(arch: &str) -> Vec<String> {
    let mut options = vec![format!("--gpu-architecture={arch}")];
    if let Some(dir) = cuda_include_dir() {
        options.push(format!("--include-path={}", dir.display()));
    }
    options
}

/// Compiles `src` to PTX for `arch` (`sm_80`, `sm_90`, ...).
pub fn compile_ptx(src: &str, arch: &str) -> Result<String, NvrtcError> {
    if let Some(at) = src.find('\0') {
        return Err(NvrtcError::NulByte(at));
    }
    probe()?;
    let opts = CompileOptions {
        options: options(arch),
        ..Default::default()
    };
    match compile_ptx_with_opts(src, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, .. }) => Err(NvrtcError::Compile {
            arch: arch.to_string(),
            log: log.to_string_lossy().into_owned(),
        }),
        Err(e) => Err(NvrtcError::Other(e.to_string())),
    }
}

/// Compiles `src` to a CUBIN for the real architecture `arch` (`sm_90`): NVRTC runs
/// ptxas itself, so loading the module does not JIT-compile it in the driver (one
/// thread), and many kernels compile on many threads at once.
pub fn compile_cubin(src: &str, arch: &str) -> Result<Vec<u8>, NvrtcError> {
    compile_cubin_with(src, arch, &[]).map(|(cubin, _)| cubin)
}

/// What ptxas reports of `src`'s kernels compiled for the real architecture `arch`
/// (`--ptxas-options=-v`): NVRTC's log, a `Used N registers` line and a spill line per
/// kernel (`0 bytes spill stores, 0 bytes spill loads` where nothing spilled) — the
/// facts a test of registers and local memory checks offline.
pub fn ptxas_report(src: &str, arch: &str) -> Result<String, NvrtcError> {
    compile_cubin_with(src, arch, &["--ptxas-options=-v".to_string()]).map(|(_, log)| log)
}

/// [`compile_cubin`] with `extra` options: the CUBIN and NVRTC's log.
fn compile_cubin_with(
    src: &str,
    arch: &str,
    extra: &[String],
) -> Result<(Vec<u8>, String), NvrtcError> {
    use cudarc::nvrtc::{result, sys};
    if let Some(at) = src.find('\0') {
        return Err(NvrtcError::NulByte(at));
    }
    probe()?;
    let mut options = options(arch);
    options.extend(extra.iter().cloned());
    let c_src = std::ffi::CString::new(src).map_err(|e| NvrtcError::NulByte(e.nul_position()))?;
    let other = |e: cudarc::nvrtc::result::NvrtcError| NvrtcError::Other(format!("{e:?}"));
    let prog = result::create_program(&c_src, None).map_err(other)?;
    // SAFETY: `prog` was just created from `c_src`, which outlives it, and is destroyed
    // once below, after its last use.
    let out = unsafe {
        let log = || {
            let log = result::get_program_log(prog).unwrap_or_default();
            let bytes: Vec<u8> = log
                .iter()
                .map(|&c| c as u8)
                .take_while(|&c| c != 0)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        match result::compile_program(prog, &options) {
            Err(_) => Err(NvrtcError::Compile {
                arch: arch.to_string(),
                log: log(),
            }),
            Ok(()) => {
                let mut size = 0usize;
                match sys::nvrtcGetCUBINSize(prog, &mut size).result() {
                    Err(e) => Err(other(e)),
                    Ok(()) => {
                        let mut cubin = vec![0u8; size];
                        sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                            .result()
                            .map(|()| (cubin, log()))
                            .map_err(other)
                    }
                }
            }
        }
    };
    // SAFETY: created above and not destroyed before.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// The test suite's check: `src` compiles for every architecture of [`CHECK_ARCHS`].
/// Skipped (with a printed reason) when libnvrtc is absent, unless `WEFT_REQUIRE` names
/// `nvrtc`.
pub fn check(src: &str) -> Result<Checked, String> {
    if let Err(e) = probe() {
        return skip(TOOL, e.to_string());
    }
    for arch in CHECK_ARCHS {
        compile_ptx(src, arch).map_err(|e| format!("{e}\n--- source ---\n{src}"))?;
    }
    Ok(Checked::Passed)
}

/// [`check`] for one architecture (`sm_90a` for kernels with `wgmma` and TMA), to a
/// cubin: ptxas runs inside NVRTC, so inline PTX is checked too.
pub fn check_arch(src: &str, arch: &str) -> Result<Checked, String> {
    if let Err(e) = probe() {
        return skip(TOOL, e.to_string());
    }
    compile_cubin(src, arch).map_err(|e| format!("{e}\n--- source ---\n{src}"))?;
    Ok(Checked::Passed)
}

/// Names a folder holding the CUDA headers (`cuda_fp16.h`), searched first.
pub const INCLUDE_VAR: &str = "WEFT_CUDA_INCLUDE";

/// A folder with `cuda_fp16.h` for NVRTC: `$WEFT_CUDA_INCLUDE`, the `include` folder beside
/// a libnvrtc folder of `LD_LIBRARY_PATH` or `WEFT_NVRTC_DIR` (the pip wheels' layout:
/// `nvidia/cu13/{lib,include}`, headers from `nvidia-cuda-runtime`), or a CUDA toolkit's.
/// Emitted f16 code uses the header when NVRTC finds it and a stand-in otherwise.
pub fn cuda_include_dir() -> Option<PathBuf> {
    let has = |d: &Path| d.join("cuda_fp16.h").is_file();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::var(INCLUDE_VAR) {
        candidates.push(PathBuf::from(d));
    }
    let lib_dirs = std::env::var(DIR_VAR)
        .into_iter()
        .chain(std::env::var("LD_LIBRARY_PATH"))
        .flat_map(|v| v.split(':').map(PathBuf::from).collect::<Vec<_>>());
    for lib in lib_dirs {
        if let Some(parent) = lib.parent() {
            candidates.push(parent.join("include"));
        }
    }
    candidates.extend(
        [
            "/usr/local/cuda/include",
            "/usr/local/cuda/targets/x86_64-linux/include",
            "/usr/include",
        ]
        .map(PathBuf::from),
    );
    candidates.into_iter().find(|d| has(d))
}

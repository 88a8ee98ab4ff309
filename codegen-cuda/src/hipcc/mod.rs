//! Offline compilation of emitted HIP with hipcc (no AMD GPU, no ROCm driver needed):
//! `hipcc --genco --offload-arch=<arch> -Rpass-analysis=kernel-resource-usage` turns one
//! translation unit into a code object, and clang's remarks become one
//! [`KernelResources`] per kernel: VGPRs, SGPRs, spills, scratch, LDS and occupancy.
//!
//! Getting hipcc: Debian and Ubuntu package ROCm 5.2's (`apt-get install hipcc`); set
//! `WEFT_HIPCC` to use another. Absent hipcc is [`HipccUnavailable`], never a panic.
//!
//! Debian's ROCm 5.2 device libraries predate RDNA3: they have no
//! `oclc_isa_version_1100.bc`, and clang refuses gfx1100 without it. That file holds one
//! constant (the ISA version ocml's code paths test), so for an architecture whose file is
//! missing weft builds a device-library folder beside its temporary files — links to
//! every library hipcc uses, plus that constant assembled by hipcc itself — and points
//! hipcc at it (`DEVICE_LIB_PATH`).

mod report;

pub use report::{KernelResources, parse_remarks};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use weft_codegen_common::testing::{Checked, skip};

/// The name `WEFT_REQUIRE` uses for this check.
pub const TOOL: &str = "hip";

/// Names the hipcc to run (default: `hipcc` on `PATH`).
pub const HIPCC_VAR: &str = "WEFT_HIPCC";

/// The architecture of `rocm` without `-arch` (MI200, CDNA2).
pub const DEFAULT_ARCH: &str = "gfx90a";

/// The architectures every emitted kernel must compile for in the test suite.
pub const CHECK_ARCHS: [&str; 1] = ["gfx90a"];

/// hipcc could not be run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "hipcc not found (ran `{command}`: {reason}); install it with `apt-get install hipcc` \
     (ROCm 5.2 on Debian/Ubuntu) or set {HIPCC_VAR} to its path"
)]
pub struct HipccUnavailable {
    /// The command tried.
    pub command: String,
    /// Why it did not run.
    pub reason: String,
}

/// A failed offline compile.
#[derive(Debug, thiserror::Error)]
pub enum HipccError {
    /// hipcc could not be run.
    #[error(transparent)]
    Unavailable(#[from] HipccUnavailable),
    /// Not an AMD GPU architecture name.
    #[error("`{0}` is not an AMD GPU architecture: expected gfxNNN, e.g. gfx90a or gfx1100")]
    BadArch(String),
    /// hipcc rejected the source; `log` is its output.
    #[error("hipcc failed to compile for {arch}:\n{log}")]
    Compile { arch: String, log: String },
    /// The code object was written but its resource remarks do not describe it.
    #[error("hipcc's resource report for {arch}: {what}")]
    Report { arch: String, what: String },
    /// A temporary file could not be written or read.
    #[error("{what} `{}`: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// hipcc as found by [`probe`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hipcc {
    /// The command run.
    pub command: PathBuf,
    /// `HIP version: 5.2.21153-0`.
    pub version: String,
    /// Where hipcc reads the device libraries (its `DEVICE_LIB_PATH`), when it says.
    pub device_libs: Option<PathBuf>,
}

/// Finds hipcc and asks its version and device-library folder; computed once per process.
pub fn probe() -> Result<&'static Hipcc, HipccUnavailable> {
    static PROBED: OnceLock<Result<Hipcc, HipccUnavailable>> = OnceLock::new();
    PROBED
        .get_or_init(probe_uncached)
        .as_ref()
        .map_err(Clone::clone)
}

fn probe_uncached() -> Result<Hipcc, HipccUnavailable> {
    let command = std::env::var_os(HIPCC_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("hipcc"));
    let unavailable = |reason: String| HipccUnavailable {
        command: format!("{} --version", command.display()),
        reason,
    };
    // HIPCC_VERBOSE=2 prints hipcc's paths; a target in the environment keeps hipcc from
    // running rocm_agent_enumerator, which fails loudly on a machine with no AMD GPU.
    let out = Command::new(&command)
        .arg("--version")
        .env("HIPCC_VERBOSE", "2")
        .env("HCC_AMDGPU_TARGET", DEFAULT_ARCH)
        .output()
        .map_err(|e| unavailable(e.to_string()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(unavailable(format!("exit status {}", out.status)));
    }
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(str::trim)
    };
    let version = line("HIP version:")
        .map(|v| format!("HIP {v}"))
        .ok_or_else(|| unavailable(format!("no `HIP version:` in its output:\n{text}")))?;
    Ok(Hipcc {
        command,
        version,
        device_libs: line("DEVICE_LIB_PATH=").map(PathBuf::from),
    })
}

/// True for `gfx` followed by a decimal major version and two hex digits (minor,
/// stepping): `gfx90a`, `gfx908`, `gfx1100`.
pub fn is_gfx_arch(arch: &str) -> bool {
    isa_version(arch).is_some()
}

/// The ISA version the device libraries encode (`gfx1100` → 11000, `gfx90a` → 9010).
fn isa_version(arch: &str) -> Option<u32> {
    let rest = arch.strip_prefix("gfx")?;
    if !(3..=4).contains(&rest.len()) || !rest.is_ascii() {
        return None;
    }
    let (major, tail) = rest.split_at(rest.len() - 2);
    let major: u32 = major.parse().ok()?;
    let mut digits = tail.chars().map(|c| c.to_digit(16));
    let (minor, stepping) = (digits.next()??, digits.next()??);
    Some(major * 1000 + minor * 100 + stepping)
}

/// One compiled translation unit.
#[derive(Clone, Debug)]
pub struct CodeObject {
    /// The architecture compiled for.
    pub arch: String,
    /// The code object (an AMDGPU ELF; what `hipModuleLoadData` takes).
    pub bytes: Vec<u8>,
    /// Every function clang reported, in its order.
    pub kernels: Vec<KernelResources>,
}

impl CodeObject {
    /// The report of the kernel named `entry_point`.
    pub fn kernel(&self, entry_point: &str) -> Option<&KernelResources> {
        self.kernels.iter().find(|k| k.name == entry_point)
    }
}

/// Compiles `src` (one translation unit: [`crate::hip::emit_lowered`]'s output) for
/// `arch`, returning the code object and its resource report.
pub fn compile(src: &str, arch: &str) -> Result<CodeObject, HipccError> {
    if !is_gfx_arch(arch) {
        return Err(HipccError::BadArch(arch.to_string()));
    }
    let hipcc = probe()?;
    let device_libs = device_libs_for(hipcc, arch)?;
    let dir = ScratchDir::new()?;
    let input = dir.0.join("kernels.hip");
    let output = dir.0.join("kernels.co");
    write(&input, src.as_bytes())?;
    let mut cmd = Command::new(&hipcc.command);
    // -O2, not hipcc's -O3: clang 15 at -O3 fails its machine verifier ("Operand has
    // incorrect register class") on gfx90a for fp32 matmul configs whose k sub-steps stay
    // a loop (5 of the 170 in gfx90a's space); at -O2 they compile, and the defaults'
    // registers are the same.
    cmd.args([
        "--genco",
        "-O2",
        &format!("--offload-arch={arch}"),
        "-Rpass-analysis=kernel-resource-usage",
    ])
    .arg(&input)
    .arg("-o")
    .arg(&output)
    .env("HCC_AMDGPU_TARGET", arch);
    if let Some(libs) = &device_libs {
        cmd.env("DEVICE_LIB_PATH", libs);
    }
    let out = cmd.output().map_err(|e| HipccUnavailable {
        command: hipcc.command.display().to_string(),
        reason: e.to_string(),
    })?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(HipccError::Compile {
            arch: arch.to_string(),
            log,
        });
    }
    let bytes = std::fs::read(&output).map_err(|source| HipccError::Io {
        what: "reading hipcc's code object",
        path: output.clone(),
        source,
    })?;
    let kernels = parse_remarks(&log).map_err(|what| HipccError::Report {
        arch: arch.to_string(),
        what,
    })?;
    Ok(CodeObject {
        arch: arch.to_string(),
        bytes,
        kernels,
    })
}

/// The test suite's check: `src` compiles for every architecture of [`CHECK_ARCHS`] and
/// each of `entry_points` has a report with registers in it. Skipped (with a printed
/// reason) when hipcc is absent, unless `WEFT_REQUIRE` names `hip`.
pub fn check(src: &str, entry_points: &[String]) -> Result<Checked, String> {
    if let Err(e) = probe() {
        return skip(TOOL, e.to_string());
    }
    for arch in CHECK_ARCHS {
        let co = compile(src, arch).map_err(|e| format!("{e}\n--- source ---\n{src}"))?;
        for name in entry_points {
            match co.kernel(name) {
                Some(k) if k.vgprs > 0 && k.sgprs > 0 && k.occupancy > 0 => {}
                Some(k) => return Err(format!("{arch}: implausible report {k}")),
                None => return Err(format!("{arch}: no resource report for `{name}`")),
            }
        }
    }
    Ok(Checked::Passed)
}

/// The device-library folder to give hipcc for `arch`: `None` when hipcc's own has the
/// architecture's ISA file (or says nothing of its folder), else one weft builds once per
/// user and reuses (see the module docs), in `$XDG_CACHE_HOME/weft` or `~/.cache/weft`.
fn device_libs_for(hipcc: &Hipcc, arch: &str) -> Result<Option<PathBuf>, HipccError> {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let Some(libs) = &hipcc.device_libs else {
        return Ok(None);
    };
    let suffix = &arch["gfx".len()..];
    let isa_file = format!("oclc_isa_version_{suffix}.bc");
    if libs.join(&isa_file).is_file() || !libs.is_dir() {
        return Ok(None);
    }
    // A poisoned lock only means another thread panicked mid-build; the map is still a
    // valid cache.
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = built.get(arch) {
        return Ok(Some(dir.clone()));
    }
    // Keyed by hipcc's folder too, so that another ROCm's libraries get their own links.
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        libs.hash(&mut h);
        format!("hip-device-libs-{arch}-{:016x}", h.finish())
    };
    let root = cache_root();
    let dir = root.join(&key);
    if !dir.join(&isa_file).is_file() {
        let scratch = ScratchDir::new_in(&root)?;
        build_device_libs(hipcc, libs, arch, &scratch.0, &isa_file)?;
        // Another process may have won the race; its folder is as good as ours.
        if std::fs::rename(&scratch.0, &dir).is_err() && !dir.join(&isa_file).is_file() {
            return Err(HipccError::Io {
                what: "moving the device-library folder into place at",
                path: dir,
                source: std::io::Error::other("rename failed and no folder is there"),
            });
        }
    }
    built.insert(arch.to_string(), dir.clone());
    Ok(Some(dir))
}

/// Links to every library of `libs` in `dir`, and `isa_file` assembled by hipcc.
fn build_device_libs(
    hipcc: &Hipcc,
    libs: &Path,
    arch: &str,
    dir: &Path,
    isa_file: &str,
) -> Result<(), HipccError> {
    let io = |what, path: &Path| {
        let path = path.to_path_buf();
        move |source| HipccError::Io { what, path, source }
    };
    let entries = std::fs::read_dir(libs).map_err(io("listing device libraries", libs))?;
    for entry in entries.flatten() {
        let target = entry.path();
        if target.extension().is_some_and(|e| e == "bc") {
            let link = dir.join(entry.file_name());
            std::os::unix::fs::symlink(&target, &link)
                .map_err(io("linking a device library", &link))?;
        }
    }
    // The constant as the device libraries define it (`llvm-dis oclc_isa_version_1036.bc`).
    let version = isa_version(arch).ok_or_else(|| HipccError::BadArch(arch.to_string()))?;
    let ll = dir.join(isa_file.replace(".bc", ".ll"));
    write(
        &ll,
        format!(
            "target triple = \"amdgcn-amd-amdhsa\"\n@__oclc_ISA_version = linkonce_odr \
             protected local_unnamed_addr addrspace(4) constant i32 {version}, align 4\n"
        )
        .as_bytes(),
    )?;
    let out = Command::new(&hipcc.command)
        .args([
            "-c",
            "-emit-llvm",
            "-nogpulib",
            "--target=amdgcn-amd-amdhsa",
        ])
        .arg(&ll)
        .arg("-o")
        .arg(dir.join(isa_file))
        .env("HCC_AMDGPU_TARGET", arch)
        .output()
        .map_err(io("running hipcc on", &ll))?;
    if !out.status.success() {
        return Err(HipccError::Compile {
            arch: arch.to_string(),
            log: format!(
                "assembling the missing device library {isa_file}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    Ok(())
}

/// weft's per-user cache folder (as for tuning records), else the temporary folder.
fn cache_root() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("weft"))
        .unwrap_or_else(|| std::env::temp_dir().join("weft-cache"))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), HipccError> {
    std::fs::write(path, bytes).map_err(|source| HipccError::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

/// A fresh folder, removed when dropped: one per compile, so that parallel compiles
/// never share files.
struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Under the system's temporary folder.
    fn new() -> Result<ScratchDir, HipccError> {
        ScratchDir::new_in(&std::env::temp_dir())
    }

    fn new_in(parent: &Path) -> Result<ScratchDir, HipccError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("weft-hipcc-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|source| HipccError::Io {
            what: "creating",
            path: path.clone(),
            source,
        })?;
        Ok(ScratchDir(path))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Best effort: a leftover temporary folder is not worth failing a compile for.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures() {
        assert_eq!(isa_version("gfx90a"), Some(9010));
        assert_eq!(isa_version("gfx1100"), Some(11000));
        assert_eq!(isa_version("gfx1036"), Some(10306));
        assert_eq!(isa_version("gfx908"), Some(9008));
        for bad in [
            "gfx", "gfx9", "sm_90", "gfx90z", "gfx12345", "GFX90A", "gfx9é",
        ] {
            assert!(!is_gfx_arch(bad), "{bad}");
        }
    }

    #[test]
    fn a_bad_arch_is_an_error_before_hipcc_runs() {
        let e = compile("", "sm_90").unwrap_err();
        assert!(matches!(e, HipccError::BadArch(_)), "{e}");
        assert!(e.to_string().contains("gfx1100"));
    }
}

//! The GPU architectures weft knows by name: CUDA's (what NVRTC compiles for, with each
//! one's shared memory and tensor cores) and AMD's (what LLVM's AMDGPU backend names).

/// What weft knows of one CUDA architecture (`sm_90` → `sm: 90`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaArch {
    pub sm: u32,
    /// Shared memory a block may opt in to, in KiB (the CUDA programming guide's table).
    pub shared_kib: u64,
    /// Whether `mma.sync.m16n8k16` on f16 runs (sm_80 and later): the tensor cores
    /// weft's CUDA emitter feeds.
    pub tensor_cores: bool,
    /// The arch-specific suffixes NVRTC takes: `a` (sm_90a: wgmma), `f` (a family).
    pub suffixes: &'static str,
}

/// The architectures NVRTC 13 compiles for (`nvrtcGetSupportedArchs`: 75, 80, 86, 87,
/// 88, 89, 90, 100, 103, 110, 120, 121); CUDA 13 dropped Maxwell, Pascal and Volta.
pub const CUDA_ARCHS: &[CudaArch] = &[
    CudaArch {
        sm: 75,
        shared_kib: 64,
        tensor_cores: false,
        suffixes: "",
    },
    CudaArch {
        sm: 80,
        shared_kib: 163,
        tensor_cores: true,
        suffixes: "",
    },
    CudaArch {
        sm: 86,
        shared_kib: 99,
        tensor_cores: true,
        suffixes: "",
    },
    CudaArch {
        sm: 87,
        shared_kib: 163,
        tensor_cores: true,
        suffixes: "",
    },
    CudaArch {
        sm: 88,
        shared_kib: 99,
        tensor_cores: true,
        suffixes: "",
    },
    CudaArch {
        sm: 89,
        shared_kib: 99,
        tensor_cores: true,
        suffixes: "",
    },
    CudaArch {
        sm: 90,
        shared_kib: 227,
        tensor_cores: true,
        suffixes: "a",
    },
    CudaArch {
        sm: 100,
        shared_kib: 227,
        tensor_cores: true,
        suffixes: "af",
    },
    CudaArch {
        sm: 103,
        shared_kib: 227,
        tensor_cores: true,
        suffixes: "af",
    },
    CudaArch {
        sm: 110,
        shared_kib: 227,
        tensor_cores: true,
        suffixes: "af",
    },
    CudaArch {
        sm: 120,
        shared_kib: 99,
        tensor_cores: true,
        suffixes: "af",
    },
    CudaArch {
        sm: 121,
        shared_kib: 99,
        tensor_cores: true,
        suffixes: "af",
    },
];

/// The entry of `arch` (`sm_90`, `sm_90a`, `sm_100f`) in [`CUDA_ARCHS`], or why there is
/// none: a message naming every architecture weft compiles for.
pub fn cuda_arch(arch: &str) -> Result<CudaArch, String> {
    let known = || {
        CUDA_ARCHS
            .iter()
            .flat_map(|a| {
                std::iter::once(format!("sm_{}", a.sm))
                    .chain(a.suffixes.chars().map(move |c| format!("sm_{}{c}", a.sm)))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let parsed = arch.strip_prefix("sm_").and_then(|rest| {
        let digits = rest.trim_end_matches(|c: char| c.is_ascii_lowercase());
        let suffix = &rest[digits.len()..];
        let sm: u32 = digits.parse().ok()?;
        Some((sm, suffix))
    });
    let Some((sm, suffix)) = parsed else {
        return Err(format!(
            "{} is not a CUDA architecture (sm_ and a number, as sm_90); NVRTC 13 \
             compiles for {}",
            weft_ir::echo(arch),
            known()
        ));
    };
    match CUDA_ARCHS.iter().find(|a| a.sm == sm) {
        Some(a) if suffix.is_empty() || (suffix.len() == 1 && a.suffixes.contains(suffix)) => {
            Ok(*a)
        }
        Some(_) => Err(format!(
            "sm_{sm} has no {} variant; NVRTC 13 compiles for {}",
            weft_ir::echo(suffix),
            known()
        )),
        None => Err(format!(
            "sm_{sm} is not an architecture NVRTC 13 compiles for{}; it compiles for {}",
            if sm < 75 {
                " (CUDA 13 dropped Maxwell, Pascal and Volta)"
            } else {
                ""
            },
            known()
        )),
    }
}

/// The AMD architectures weft's `rocm` target takes: GCN 5 (Vega) and CDNA (gfx9xx),
/// RDNA 1 to 4 (gfx10xx to gfx12xx); what LLVM's AMDGPU backend names them.
pub const GFX_ARCHS: &[&str] = &[
    "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940",
    "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031",
    "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102",
    "gfx1103", "gfx1150", "gfx1151", "gfx1200", "gfx1201",
];

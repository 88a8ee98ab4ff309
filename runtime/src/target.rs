//! Target strings, TVM-style: `"cpu"`, `"cuda -arch=sm_90 -device=1"`, `"vulkan"`,
//! `"webgpu"`, `"rocm -arch=gfx1100"`, ...
//!
//! A [`Target`] names where a lowered function runs and which source it is emitted as. It
//! parses from and prints to the same string ([`Target::parse`], [`fmt::Display`]), so a
//! target that appears in a benchmark table can be pasted back on the command line.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;
use weft_codegen_common::{EmitError, Emitted, LimitError, TargetLimits};
use weft_ir::dtype::DType;
use weft_ir::echo;
use weft_ir::kernel::{Kernel, LoweredFunc};

use crate::shader_checks::ShaderChecks;

/// Every target name, in the order they are listed to users.
pub const TARGET_NAMES: [&str; 9] = [
    "cpu", "cuda", "rocm", "vulkan", "metal", "dx12", "gl", "wgpu", "webgpu",
];

/// Which wgpu backend a WGSL target runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WgpuBackend {
    Vulkan,
    Metal,
    Dx12,
    Gl,
    /// The best adapter of any backend (discrete before integrated before CPU; Vulkan,
    /// Metal and DX12 before GL).
    Best,
    /// Any adapter, but kernels are checked against WebGPU's *default* limits, so what runs
    /// here also runs in a browser.
    WebGpu,
}

impl WgpuBackend {
    /// The target name (`"vulkan"`, ..., `"wgpu"`, `"webgpu"`).
    pub fn name(self) -> &'static str {
        match self {
            WgpuBackend::Vulkan => "vulkan",
            WgpuBackend::Metal => "metal",
            WgpuBackend::Dx12 => "dx12",
            WgpuBackend::Gl => "gl",
            WgpuBackend::Best => "wgpu",
            WgpuBackend::WebGpu => "webgpu",
        }
    }

    /// The bound on registers per thread a schedule may plan for here
    /// ([`TargetLimits::max_registers`]): 255 (CUDA's most) on native backends, 128 where
    /// the GPU behind the API is unknown (`webgpu`, and `gl`, which browsers and old
    /// drivers share).
    pub fn max_registers(self) -> u64 {
        match self {
            WgpuBackend::WebGpu | WgpuBackend::Gl => 128,
            _ => 255,
        }
    }

    /// The wgpu backends an adapter for this target may come from.
    pub fn backends(self) -> wgpu::Backends {
        match self {
            WgpuBackend::Vulkan => wgpu::Backends::VULKAN,
            WgpuBackend::Metal => wgpu::Backends::METAL,
            WgpuBackend::Dx12 => wgpu::Backends::DX12,
            WgpuBackend::Gl => wgpu::Backends::GL,
            WgpuBackend::Best | WgpuBackend::WebGpu => wgpu::Backends::all(),
        }
    }
}

/// The source language a target's kernels are emitted in (the emitters' [`Language`]).
pub use weft_codegen_common::Language as SourceLanguage;

/// Where a lowered function runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The CPU interpreter of lowered kernels (always available).
    Cpu,
    /// CUDA C compiled by NVRTC and run through the CUDA driver.
    Cuda {
        /// `sm_90`, `sm_90a`, ...; `None`: the device's compute capability.
        arch: Option<String>,
        /// CUDA device ordinal.
        device: usize,
    },
    /// HIP for AMD GPUs. weft has no ROCm runtime: kernels are compiled offline by hipcc
    /// (`weft compile`), which reports each one's registers, spills, LDS and occupancy.
    Rocm {
        /// `gfx90a`, `gfx1100`, ...; `None`: [`weft_codegen_cuda::hipcc::DEFAULT_ARCH`].
        arch: Option<String>,
    },
    /// WGSL run through wgpu.
    Wgpu {
        backend: WgpuBackend,
        /// Index among the adapters this backend accepts, best first.
        device: usize,
        /// `-checks=proven|checked|unchecked`: which kernels keep naga's runtime checks,
        /// overriding the device options (and `--checked-shaders`), so that one benchmark
        /// can put `vulkan -checks=checked` beside `vulkan`. `None`: the options decide.
        checks: Option<ShaderChecks>,
    },
}

/// A target string that does not parse.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("empty target string; valid targets are {}", TARGET_NAMES.join(", "))]
    Empty,
    #[error("unknown target {} in {}; valid targets are {}", echo(name), echo(input), TARGET_NAMES.join(", "))]
    UnknownTarget { input: String, name: String },
    #[error(
        "unknown option {} for target `{target}` in {}; valid options are {valid}",
        echo(option),
        echo(input)
    )]
    UnknownOption {
        input: String,
        target: String,
        option: String,
        valid: String,
    },
    #[error(
        "invalid value {} for `{option}` in {}: expected {expected}",
        echo(value),
        echo(input)
    )]
    BadValue {
        input: String,
        option: String,
        value: String,
        expected: &'static str,
    },
    #[error("option `{option}` given twice in {}", echo(input))]
    Duplicate { input: String, option: String },
    /// An architecture the target does not compile for; `why` names the ones it does.
    #[error("{} in {}: {why}", echo(&format!("-arch={arch}")), echo(input))]
    UnknownArch {
        input: String,
        arch: String,
        why: String,
    },
}

impl Target {
    /// Parses a TVM-style target string: a name followed by `-key=value` options.
    ///
    /// | target | options |
    /// | --- | --- |
    /// | `cpu` | none |
    /// | `cuda` | `-arch=sm_XX`, `-device=N` |
    /// | `rocm` | `-arch=gfxNNN` (default `gfx90a`) |
    /// | `vulkan`, `metal`, `dx12`, `gl`, `wgpu`, `webgpu` | `-device=N` (adapter index), `-checks=proven\|checked\|unchecked` (runtime checks in shaders) |
    pub fn parse(input: &str) -> Result<Target, TargetError> {
        let mut words = input.split_whitespace();
        let name = words.next().ok_or(TargetError::Empty)?;
        let mut target = match name {
            "cpu" => Target::Cpu,
            "cuda" => Target::Cuda {
                arch: None,
                device: 0,
            },
            "rocm" => Target::Rocm { arch: None },
            "vulkan" => Target::wgpu(WgpuBackend::Vulkan),
            "metal" => Target::wgpu(WgpuBackend::Metal),
            "dx12" => Target::wgpu(WgpuBackend::Dx12),
            "gl" => Target::wgpu(WgpuBackend::Gl),
            "wgpu" => Target::wgpu(WgpuBackend::Best),
            "webgpu" => Target::wgpu(WgpuBackend::WebGpu),
            _ => {
                return Err(TargetError::UnknownTarget {
                    input: input.to_string(),
                    name: name.to_string(),
                });
            }
        };
        let mut seen: Vec<&str> = Vec::new();
        for word in words {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            let unknown = || TargetError::UnknownOption {
                input: input.to_string(),
                target: name.to_string(),
                option: word.to_string(),
                valid: Target::valid_options(name).to_string(),
            };
            let bad = |expected| TargetError::BadValue {
                input: input.to_string(),
                option: key.to_string(),
                value: value.to_string(),
                expected,
            };
            if seen.contains(&key) {
                return Err(TargetError::Duplicate {
                    input: input.to_string(),
                    option: key.to_string(),
                });
            }
            seen.push(key);
            match (&mut target, key) {
                (Target::Cuda { arch, .. }, "-arch") => {
                    weft_codegen_common::cuda_arch(value).map_err(|why| {
                        TargetError::UnknownArch {
                            input: input.to_string(),
                            arch: value.to_string(),
                            why,
                        }
                    })?;
                    *arch = Some(value.to_string());
                }
                (Target::Rocm { arch }, "-arch") => {
                    if !weft_codegen_common::GFX_ARCHS.contains(&value) {
                        return Err(TargetError::UnknownArch {
                            input: input.to_string(),
                            arch: value.to_string(),
                            why: format!(
                                "not an AMD architecture weft compiles for; it compiles for {}",
                                weft_codegen_common::GFX_ARCHS.join(", ")
                            ),
                        });
                    }
                    *arch = Some(value.to_string());
                }
                (Target::Cuda { device, .. } | Target::Wgpu { device, .. }, "-device") => {
                    *device = value.parse().map_err(|_| bad("a device index, e.g. 0"))?;
                }
                (Target::Wgpu { checks, .. }, "-checks") => {
                    *checks = Some(
                        value
                            .parse()
                            .map_err(|_| bad("proven, checked or unchecked"))?,
                    );
                }
                _ => return Err(unknown()),
            }
        }
        Ok(target)
    }

    fn wgpu(backend: WgpuBackend) -> Target {
        Target::Wgpu {
            backend,
            device: 0,
            checks: None,
        }
    }

    fn valid_options(name: &str) -> &'static str {
        match name {
            "cpu" => "none",
            "cuda" => "-arch=sm_XX, -device=N",
            "rocm" => "-arch=gfxNNN",
            _ => "-device=N, -checks=proven|checked|unchecked",
        }
    }

    /// The target name without options (`"cuda"`, `"vulkan"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Cuda { .. } => "cuda",
            Target::Rocm { .. } => "rocm",
            Target::Wgpu { backend, .. } => backend.name(),
        }
    }

    /// The language this target's kernels are written in, or `None` for the CPU, which
    /// interprets the lowered kernel itself.
    ///
    /// `metal` emits MSL (what `weft emit --target metal` prints); the wgpu device runs
    /// WGSL on every backend, which wgpu translates to MSL on Apple machines.
    pub fn emit_language(&self) -> Option<SourceLanguage> {
        match self {
            Target::Cpu => None,
            Target::Cuda { .. } => Some(SourceLanguage::Cuda),
            Target::Rocm { .. } => Some(SourceLanguage::Hip),
            Target::Wgpu {
                backend: WgpuBackend::Metal,
                ..
            } => Some(SourceLanguage::Msl),
            Target::Wgpu { .. } => Some(SourceLanguage::Wgsl),
        }
    }

    /// The limits kernels are emitted and checked against when no device is open.
    ///
    /// An open device may know better: [`crate::Device::limits`] gives the adapter's real
    /// limits for `vulkan`, `dx12`, `gl` and `wgpu`, and the device's attributes for `cuda`.
    /// `cuda -arch=sm_XX` takes that architecture's opt-in shared memory (227 KiB for
    /// sm_90), plain `cuda` the smallest of sm_80 and later (99 KiB).
    /// `webgpu` always uses WebGPU's defaults: that is its point. Offline, `vulkan` takes
    /// WebGPU's sizes with f16, the one cooperative-matrix configuration that
    /// NVIDIA's and AMD's Vulkan drivers both report (16×16×16, f16 inputs, f32
    /// accumulators) and subgroups of 32 (to 64), so that `weft emit --target vulkan` shows what a GPU with matrix
    /// units runs; an open device reports its own.
    pub fn limits(&self) -> TargetLimits {
        match self {
            Target::Cpu => cpu_limits(),
            // `-arch=sm_XX`: that architecture's opt-in shared memory and matrix units
            // (what a tuning record from such a device needs to emit offline). Parsing
            // checked the architecture.
            // `sm_90a` adds Hopper's warpgroup MMAs and TMA.
            Target::Cuda { arch, .. } => {
                let limits = arch
                    .as_deref()
                    .and_then(|a| weft_codegen_common::cuda_arch(a).ok())
                    .map(|a| TargetLimits::cuda_arch(&a))
                    .unwrap_or_else(TargetLimits::cuda);
                if arch.as_deref() == Some("sm_90a") {
                    TargetLimits {
                        name: "cuda -arch=sm_90a".into(),
                        ..limits.with_warpgroup_mma()
                    }
                } else {
                    limits
                }
            }
            Target::Rocm { arch } => TargetLimits {
                name: self.to_string(),
                ..TargetLimits::rocm_arch(
                    arch.as_deref()
                        .unwrap_or(weft_codegen_cuda::hipcc::DEFAULT_ARCH),
                )
            },
            Target::Wgpu {
                backend: WgpuBackend::Metal,
                ..
            } => TargetLimits::metal(),
            Target::Wgpu {
                backend: WgpuBackend::Vulkan,
                ..
            } => TargetLimits {
                name: "vulkan (offline)".into(),
                f16: true,
                matrix_units: vec![weft_codegen_common::MatrixUnit::new(
                    16,
                    16,
                    16,
                    DType::F16,
                    DType::F32,
                )],
                max_registers: WgpuBackend::Vulkan.max_registers(),
                // NVIDIA's subgroups of 32, RDNA's of 32 or 64 (the driver's choice).
                subgroup: Some(weft_codegen_common::SubgroupSize { min: 32, max: 64 }),
                ..TargetLimits::webgpu_default()
            },
            Target::Wgpu { backend, .. } => TargetLimits {
                max_registers: backend.max_registers(),
                ..TargetLimits::webgpu_default()
            },
        }
    }

    /// The key of this target in `WEFT_REQUIRE` (see [`weft_codegen_common::testing`]): the
    /// target name, except that `wgpu` and `webgpu` are both `wgpu`, and `rocm` is `hip` (its
    /// compiler).
    pub fn require_key(&self) -> &'static str {
        match self {
            Target::Rocm { .. } => weft_codegen_cuda::hipcc::TOOL,
            Target::Wgpu {
                backend: WgpuBackend::WebGpu,
                ..
            } => "wgpu",
            _ => self.name(),
        }
    }
}

/// Why a target could not give a kernel's source.
#[derive(Debug, Error)]
pub enum SourceError {
    #[error("target `{target}` runs kernels in the interpreter: it has no source to emit")]
    NoSource { target: String },
    #[error(transparent)]
    Limits(LimitError),
    #[error("emitting kernel `{kernel}` as {language}: {source}")]
    Emit {
        kernel: String,
        language: SourceLanguage,
        #[source]
        source: EmitError,
    },
}

impl Target {
    /// `kernel` in this target's [`Target::emit_language`], checked once against
    /// [`Target::limits`] (what `weft emit` prints). An open device compiles against its
    /// own, possibly larger, limits.
    pub fn emit_source(&self, kernel: &Kernel) -> Result<Emitted, SourceError> {
        let Some(language) = self.emit_language() else {
            return Err(SourceError::NoSource {
                target: self.to_string(),
            });
        };
        let limits = self.limits();
        let emitted = match language {
            SourceLanguage::Cuda => {
                weft_codegen_cuda::emit(kernel, &weft_codegen_cuda::CudaOptions { limits })
            }
            SourceLanguage::Wgsl => {
                weft_codegen_wgsl::emit(kernel, &weft_codegen_wgsl::WgslOptions { limits })
            }
            SourceLanguage::Msl => {
                weft_codegen_metal::emit(kernel, &weft_codegen_metal::MetalOptions { limits })
            }
            SourceLanguage::Hip => {
                weft_codegen_cuda::hip::emit(kernel, &weft_codegen_cuda::hip::HipOptions { limits })
            }
        };
        emitted.map_err(|e| match e {
            // A kernel over a limit: the limit names itself.
            EmitError::Limit(limit) => SourceError::Limits(limit),
            source => SourceError::Emit {
                kernel: kernel.name.clone(),
                language,
                source,
            },
        })
    }
}

impl Target {
    /// Every kernel of `func` as one source in this target's language, checked once
    /// against [`Target::limits`]: one CUDA or HIP translation unit, one Metal library,
    /// one WGSL module with an entry point per kernel. What `weft emit` prints, whole and
    /// compilable as it is.
    pub fn emit_function(&self, func: &LoweredFunc) -> Result<Emitted, SourceError> {
        let Some(language) = self.emit_language() else {
            return Err(SourceError::NoSource {
                target: self.to_string(),
            });
        };
        let limits = self.limits();
        let emitted = match language {
            SourceLanguage::Cuda => {
                weft_codegen_cuda::emit_lowered(func, &weft_codegen_cuda::CudaOptions { limits })
            }
            SourceLanguage::Wgsl => {
                weft_codegen_wgsl::emit_lowered(func, &weft_codegen_wgsl::WgslOptions { limits })
            }
            SourceLanguage::Msl => {
                weft_codegen_metal::emit_lowered(func, &weft_codegen_metal::MetalOptions { limits })
            }
            SourceLanguage::Hip => weft_codegen_cuda::hip::emit_lowered(
                func,
                &weft_codegen_cuda::hip::HipOptions { limits },
            ),
        };
        emitted.map_err(|e| match e {
            EmitError::Limit(limit) => SourceError::Limits(limit),
            source => SourceError::Emit {
                kernel: source.kernel().to_string(),
                language,
                source,
            },
        })
    }
}

/// The interpreter's limits: what CUDA allows, so that a schedule that runs on the CPU is
/// not held to less than the GPUs it is written for.
fn cpu_limits() -> TargetLimits {
    TargetLimits {
        name: "cpu".to_string(),
        // No compiler to take a register cap: it is not a dimension of the spaces here.
        register_cap: false,
        // The interpreter runs shuffles (under a stricter rule than any subgroup size:
        // every thread of the block takes part), so kernels here take the path CUDA's do.
        ..TargetLimits::cuda()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Target::Cpu => {}
            Target::Cuda { arch, device } => {
                if let Some(arch) = arch {
                    write!(f, " -arch={arch}")?;
                }
                if *device != 0 {
                    write!(f, " -device={device}")?;
                }
            }
            Target::Rocm { arch } => {
                if let Some(arch) = arch {
                    write!(f, " -arch={arch}")?;
                }
            }
            Target::Wgpu { device, checks, .. } => {
                if *device != 0 {
                    write!(f, " -device={device}")?;
                }
                if let Some(c) = checks {
                    write!(f, " -checks={c}")?;
                }
            }
        }
        Ok(())
    }
}

impl FromStr for Target {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<Target, TargetError> {
        Target::parse(s)
    }
}

/// What [`available_targets`] found for one target.
#[derive(Clone, Debug)]
pub struct TargetInfo {
    pub target: Target,
    /// The device that opening the target would use (`"NVIDIA H200 (sm_90)"`,
    /// `"llvmpipe (LLVM 15.0.6, 256 bits), Vulkan, Cpu"`), when there is one.
    pub device: Option<String>,
    /// Why the target cannot run here; `None` when it can.
    pub unavailable: Option<String>,
}

impl TargetInfo {
    /// True if the target can run on this machine.
    pub fn is_available(&self) -> bool {
        self.unavailable.is_none()
    }

    /// True for a target this machine compiles for but cannot run: `rocm` with hipcc
    /// present (its `device` names the compiler).
    pub fn is_compile_only(&self) -> bool {
        matches!(self.target, Target::Rocm { .. }) && self.device.is_some()
    }
}

impl fmt::Display for TargetInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.device, &self.unavailable) {
            (_, Some(why)) => write!(f, "{:<8} unavailable: {why}", self.target.to_string()),
            (Some(dev), None) => write!(f, "{:<8} {dev}", self.target.to_string()),
            (None, None) => write!(f, "{}", self.target),
        }
    }
}

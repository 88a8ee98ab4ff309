//! What a target offers one kernel ([`TargetLimits`]): the one description of a target
//! that the emitters check kernels against, the template spaces draw their parameters
//! from, the tuner enumerates and `weft compile` reports against.
//!
//! A kernel over a limit is refused with a [`LimitError`] that names the limit, the value
//! and the allocation or launch axis at fault, so a schedule that does not fit a target
//! never becomes a shader that fails (or silently misbehaves) at pipeline creation.

use weft_ir::dtype::DType;
use weft_ir::fragment::MmaShape;

mod arch;
mod check;

pub use arch::{CUDA_ARCHS, CudaArch, GFX_ARCHS, cuda_arch};
pub use check::{LimitError, check_limits, first_f16_use};

/// What a target allows one kernel launch. The runtime builds one from the real device
/// (an adapter's `wgpu::Limits`, a CUDA device's attributes); the constructors give the
/// profiles weft assumes when no device is at hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetLimits {
    /// Names the target in error messages (`cuda`, `webgpu`, `vulkan: llvmpipe`, ...).
    pub name: String,
    /// Shared (workgroup, threadgroup) memory per block, in bytes.
    pub max_shared_bytes: u64,
    /// Threads (invocations) per block.
    pub max_threads_per_block: u64,
    /// Threads per block along x, y, z.
    pub max_block_dim: [u64; 3],
    /// Blocks (workgroups) per grid along x, y, z.
    pub max_grid_dim: [u64; 3],
    /// Whether 16-bit floats may appear at all.
    pub f16: bool,
    /// The matrix multiply-accumulate shapes and types the target's matrix units run
    /// (tensor cores, cooperative matrices, simdgroup matrices); empty: none.
    pub matrix_units: Vec<MatrixUnit>,
    /// A bound on 32-bit registers per thread that a schedule may plan to use: 255
    /// (CUDA's most) on native backends, 128 where the GPU behind the API is unknown
    /// (`webgpu`, `gl`). Not a limit the emitters check: template spaces leave out the
    /// configs estimated above it, because they would spill.
    pub max_registers: u64,
    /// Whether the target's compiler takes a register cap per kernel (CUDA's
    /// `__launch_bounds__(threads, blocks)`, HIP's as waves per SIMD): then the cap is a
    /// dimension of a template's space.
    pub register_cap: bool,
    /// Bytes one buffer parameter may hold (WebGPU's storage-buffer binding limit: 128
    /// MiB by default; an adapter's own; unbounded on CUDA and HIP, where device memory
    /// is the limit).
    pub max_buffer_bytes: u64,
    /// Multiprocessors (SMs, CUs, cores) that run blocks side by side: an opened CUDA
    /// device's own count (132 on an H100 SXM); elsewhere [`DEFAULT_MULTIPROCESSORS`],
    /// a large GPU of today. The templates' stated rules count waves of blocks over them.
    pub multiprocessors: u64,
    /// Whether the target's compiler issues the loads of a whole unrolled loop ahead of
    /// the arithmetic that uses them, whatever the registers that costs: LLVM's AMDGPU
    /// backend (hipcc) does, and a k step of 32 unrolled whole then spills. Templates
    /// then count those values as registers and unroll their k steps in part (`ku`).
    pub hoists_unrolled_loads: bool,
    /// Whether the target's shader compiler checks statically that barriers and
    /// matrix-unit operations sit in uniform control flow (WGSL: naga and Tint refuse
    /// them under a branch on a loop variable, even one every thread of the block takes
    /// alike). Templates then keep such branches out (the attention template computes
    /// and masks a causal mask's tiles instead of skipping them).
    pub uniform_barriers: bool,
    /// Whether each thread knows which elements of a matrix fragment its registers hold,
    /// so that element-wise work on accumulators (a row's maximum, `exp`, a rescaling)
    /// and turning an accumulator into the next product's operand stay in registers
    /// (`weft_ir::fragment::elements`): CUDA's `mma.sync` layout. Cooperative matrices
    /// and simdgroup matrices, as weft emits them, are opaque.
    pub fragment_elements: bool,
    /// Whether a shared overlay ([`weft_ir::expr::Buffer::overlay`]) shares its hosts'
    /// bytes: the target carves shared memory from one array (CUDA, past 48 KiB; below,
    /// the arrays declared apart fit anyway). Elsewhere (HIP, WGSL, MSL) each shared
    /// array is declared apart, and counts apart.
    pub shared_overlays: bool,
    /// The subgroups (warps, wavefronts, SIMD-groups) a block's threads run in, where
    /// kernels may shuffle values between their threads ([`weft_ir::expr::Intrinsic::ShuffleXor`]):
    /// CUDA's warps of 32, HIP's wavefronts, Metal's SIMD-groups of 32, a wgpu adapter
    /// with the `subgroups` feature. `None`: no shuffles (plain WebGPU, where the feature
    /// is optional); reductions go through shared memory.
    pub subgroup: Option<SubgroupSize>,
    /// Whether blocks may hand each other results within one launch: the language has
    /// a device-scope fence and atomics that order plain accesses around them (CUDA's
    /// and HIP's `__threadfence()` and `atomicAdd`), so a split reduction's last block
    /// can combine the parts. WGSL's atomics are relaxed and its barriers order one
    /// workgroup only; MSL has a device-scope `atomic_thread_fence` only from 3.2, which
    /// weft does not require: there, a split reduction keeps its summing kernel.
    pub device_fence: bool,
    /// Whether a kernel's wait for the kernel before it is a statement of its own
    /// (CUDA's programmatic dependent launch, sm_90 and later: `griddepcontrol`), so
    /// that what does not depend on that kernel — prefetching its weights into L2 —
    /// can run before the wait, while the kernel before finishes. Elsewhere a kernel
    /// starts after the one before it has finished, and templates place no prefetches.
    pub grid_dependency: bool,
    /// Whether the runtime orders a run's dispatches by the buffers they bind (WebGPU's
    /// usage scopes, as wgpu and Dawn track them): a barrier before each dispatch that
    /// reads a buffer an earlier dispatch of the run wrote, or writes one an earlier
    /// dispatch used, and the other dispatches run beside the ones before them. There a
    /// reused buffer costs a wait, and the model's memory plan reuses one only where the
    /// dispatch waits anyway (`weft_model::plan::Reuse::Waiting`). Elsewhere (a CUDA or
    /// HIP stream, a Metal encoder run serially) each kernel starts after the one before
    /// it, whatever buffers it binds.
    pub usage_barriers: bool,
}

/// The sizes a target's subgroups may have. Some drivers choose per pipeline between
/// `min` and `max` (Intel's 8–32, RDNA's 32 or 64): a shuffle may span `min` lanes, and a
/// kernel that shuffles fills whole subgroups of `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubgroupSize {
    pub min: u32,
    pub max: u32,
}

impl SubgroupSize {
    /// One fixed size (CUDA's warps of 32).
    pub const fn fixed(n: u32) -> Self {
        SubgroupSize { min: n, max: n }
    }

    /// The lanes a reduction over `threads` consecutive threads of a block of
    /// `block_threads` may shuffle across: the largest power of two up to `threads` and
    /// `min`, where the block fills whole subgroups (else 1: no shuffles).
    pub fn shuffle_lanes(self, threads: u64, block_threads: u64) -> u64 {
        if self.max == 0 || !block_threads.is_multiple_of(self.max as u64) {
            return 1;
        }
        let mut lanes = 1;
        while lanes * 2 <= threads.min(self.min as u64) {
            lanes *= 2;
        }
        lanes
    }
}

impl std::fmt::Display for SubgroupSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{} to {}", self.min, self.max)
        }
    }
}

/// The multiprocessors assumed where the device does not say (wgpu adapters, offline
/// profiles): about an H100's 132 or an MI210's 104 compute units.
pub const DEFAULT_MULTIPROCESSORS: u64 = 128;

/// One configuration a target's matrix units run: `shape` with `inputs` for A and B and
/// `accumulator` for C and D.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixUnit {
    pub shape: MmaShape,
    pub inputs: DType,
    pub accumulator: DType,
}

impl MatrixUnit {
    pub const fn new(m: u32, n: u32, k: u32, inputs: DType, accumulator: DType) -> MatrixUnit {
        MatrixUnit {
            shape: MmaShape { m, n, k },
            inputs,
            accumulator,
        }
    }
}

impl std::fmt::Display for MatrixUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}→{}", self.shape, self.inputs, self.accumulator)
    }
}

/// The tile CUDA's emitter writes for half inputs: m16n16k16, two `mma.sync.m16n8k16`
/// (sm_80 and later), with f32 or f16 accumulators.
fn mma_sync_units() -> Vec<MatrixUnit> {
    [DType::F32, DType::F16]
        .into_iter()
        .map(|acc| MatrixUnit::new(16, 16, 16, DType::F16, acc))
        .collect()
}

impl TargetLimits {
    /// CUDA on any device weft targets (sm_80 and later): 99 KiB of shared memory per
    /// block (sm_86's and sm_89's opt-in limit, the smallest of them; past 48 KiB the
    /// emitter declares it dynamic and the runtime opts in), 1024 threads per block, 255
    /// registers per thread with a cap (`__launch_bounds__`). An opened device reports
    /// its own limit (227 KiB on an H100).
    pub fn cuda() -> Self {
        TargetLimits {
            name: "cuda".into(),
            max_shared_bytes: 99 * 1024,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [(1 << 31) - 1, 65535, 65535],
            f16: true,
            matrix_units: mma_sync_units(),
            max_registers: 255,
            register_cap: true,
            max_buffer_bytes: u64::MAX,
            multiprocessors: DEFAULT_MULTIPROCESSORS,
            hoists_unrolled_loads: false,
            uniform_barriers: false,
            fragment_elements: true,
            shared_overlays: true,
            subgroup: Some(SubgroupSize::fixed(32)),
            device_fence: true,
            grid_dependency: true,
            usage_barriers: false,
        }
    }

    /// CUDA on one architecture ([`CudaArch`]): [`TargetLimits::cuda`] with that
    /// architecture's opt-in shared memory per block (227 KiB on sm_90 and sm_100, 163
    /// KiB on sm_80 and sm_87, 99 KiB on sm_86, sm_89 and sm_120, 64 KiB on sm_75), and
    /// no matrix units before sm_80 (`mma.sync.m16n8k16` on f16 needs it).
    pub fn cuda_arch(arch: &CudaArch) -> Self {
        TargetLimits {
            name: format!("cuda -arch=sm_{}", arch.sm),
            max_shared_bytes: arch.shared_kib * 1024,
            matrix_units: if arch.tensor_cores {
                mma_sync_units()
            } else {
                Vec::new()
            },
            fragment_elements: arch.tensor_cores,
            ..TargetLimits::cuda()
        }
    }

    /// WebGPU's default limits (what a device gets unless it asks for its adapter's):
    /// 16 KiB workgroup storage, 256 invocations, no `shader-f16`, 128 registers.
    pub fn webgpu_default() -> Self {
        TargetLimits {
            name: "webgpu".into(),
            max_shared_bytes: 16 * 1024,
            max_threads_per_block: 256,
            max_block_dim: [256, 256, 64],
            max_grid_dim: [65535; 3],
            f16: false,
            matrix_units: Vec::new(),
            // The GPU behind a browser is unknown: a conservative register bound.
            max_registers: 128,
            register_cap: false,
            max_buffer_bytes: 128 << 20,
            multiprocessors: DEFAULT_MULTIPROCESSORS,
            hoists_unrolled_loads: false,
            uniform_barriers: true,
            fragment_elements: false,
            shared_overlays: false,
            // `subgroups` is an optional WebGPU feature.
            subgroup: None,
            device_fence: false,
            grid_dependency: false,
            usage_barriers: true,
        }
    }

    /// HIP on AMD GPUs (gfx90a, gfx1100): 64 KiB of LDS per workgroup, 1024 threads per
    /// block, f16, 255 registers with a cap (as waves per SIMD). No matrix units: MI200's MFMA and RDNA3's WMMA exist, but weft emits
    /// neither (rocWMMA is not a HIP header), so fragments are refused by name.
    pub fn rocm() -> Self {
        TargetLimits {
            name: "rocm".into(),
            max_shared_bytes: 64 * 1024,
            matrix_units: Vec::new(),
            hoists_unrolled_loads: true,
            uniform_barriers: false,
            fragment_elements: false,
            // HIP's arrays are declared apart (no one dynamic array).
            shared_overlays: false,
            // CDNA's wavefronts; `rocm_arch` says RDNA's.
            subgroup: Some(SubgroupSize::fixed(64)),
            // HIP has no programmatic dependent launch.
            grid_dependency: false,
            usage_barriers: false,
            ..TargetLimits::cuda()
        }
    }

    /// HIP for one AMD architecture (`gfx90a`, `gfx1100`, ...): [`TargetLimits::rocm`]
    /// with the vector registers a thread gets there from the hipcc weft drives (ROCm
    /// 5.2, clang 15). CDNA and RDNA2 kernels address 256; RDNA3 (`gfx11xx`) ones get
    /// 128 from that compiler whatever the block size or wave size (measured: a kernel
    /// needing 212 VGPRs compiles to 212 for gfx90a and to 256 for gfx1030, and to 128
    /// with 297 spilled for gfx1100; clang 17's full-VGPR gfx1100 model raises it).
    ///
    /// Wavefronts of 64 on CDNA and GCN (`gfx9xx`), 32 on RDNA (`gfx10xx`, `gfx11xx`:
    /// hipcc compiles wave32 there unless told otherwise).
    pub fn rocm_arch(arch: &str) -> Self {
        let max_registers = if arch.starts_with("gfx11") { 128 } else { 256 };
        let wave = if arch.starts_with("gfx10")
            || arch.starts_with("gfx11")
            || arch.starts_with("gfx12")
        {
            32
        } else {
            64
        };
        TargetLimits {
            max_registers,
            subgroup: Some(SubgroupSize::fixed(wave)),
            ..TargetLimits::rocm()
        }
    }

    /// Metal on Apple GPUs: 32 KiB threadgroup memory, 1024 threads per threadgroup, 8×8
    /// simdgroup matrices, no register cap.
    pub fn metal() -> Self {
        TargetLimits {
            name: "metal".into(),
            max_shared_bytes: 32 * 1024,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 1024],
            max_grid_dim: [u32::MAX as u64; 3],
            f16: true,
            // simdgroup_matrix on Apple7+ / Mac2 GPUs.
            matrix_units: vec![
                MatrixUnit::new(8, 8, 8, DType::F16, DType::F32),
                MatrixUnit::new(8, 8, 8, DType::F16, DType::F16),
                MatrixUnit::new(8, 8, 8, DType::F32, DType::F32),
            ],
            max_registers: 255,
            register_cap: false,
            // `MTLDevice.maxBufferLength` is 256 MiB on the oldest Apple GPUs weft
            // targets; an open device reports its own.
            max_buffer_bytes: 256 << 20,
            multiprocessors: DEFAULT_MULTIPROCESSORS,
            hoists_unrolled_loads: false,
            uniform_barriers: false,
            fragment_elements: false,
            shared_overlays: false,
            // SIMD-groups of 32 threads on every Apple GPU.
            subgroup: Some(SubgroupSize::fixed(32)),
            device_fence: false,
            grid_dependency: false,
            usage_barriers: false,
        }
    }

    /// The square fragment sizes (`16` for m16n16k16) the matrix units run with f16
    /// inputs and f32 accumulators, largest first: what the fp16 templates tile with
    /// (empty: none, and they use CUDA cores / vector ALUs).
    /// The target with Hopper's warpgroup MMAs (`wgmma.m64nNk16`, f16 → f32, N up to
    /// 256) and TMA copies: `cuda -arch=sm_90a`, or an sm_90 device compiled for it.
    pub fn with_warpgroup_mma(mut self) -> Self {
        if !self.warpgroup_mma() {
            self.matrix_units
                .push(MatrixUnit::new(64, 256, 16, DType::F16, DType::F32));
        }
        self
    }

    /// Whether the f16 convolution rule over gathered views takes its deep k steps at one
    /// wave by default here (`WEFT_VK_CONV` unset taken as `deep`): 16×16×16 f16 matrix
    /// units and no register cap — Vulkan's cooperative matrices, where it was timed
    /// (NVIDIA H200: 1–6% faster on four CNNs, neutral on ResNet-50 and BERT,
    /// `docs/vulkan-small-convs.md`). Metal's 8×8 units and targets without matrix units
    /// keep the shallow steps (untimed there).
    pub fn vk_conv_by_default(&self) -> bool {
        !self.register_cap && self.f16_mma_sizes().contains(&16)
    }

    /// Whether the target runs warpgroup MMAs ([`TargetLimits::with_warpgroup_mma`]).
    pub fn warpgroup_mma(&self) -> bool {
        self.matrix_units.iter().any(|u| u.shape.m == 64)
    }

    pub fn f16_mma_sizes(&self) -> Vec<i64> {
        let mut sizes: Vec<i64> = self
            .matrix_units
            .iter()
            .filter(|u| {
                u.shape.m == u.shape.n
                    && u.shape.n == u.shape.k
                    && u.inputs == DType::F16
                    && u.accumulator == DType::F32
            })
            .map(|u| i64::from(u.shape.m))
            .collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        sizes.dedup();
        sizes
    }
}

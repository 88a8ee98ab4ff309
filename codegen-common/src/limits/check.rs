//! The check of a kernel against its target's limits ([`check_limits`]) and what it
//! reports ([`LimitError`]).

use weft_ir::dtype::DType;
use weft_ir::expr::{Expr, Intrinsic, ThreadAxis};
use weft_ir::fragment::FragRole;
use weft_ir::kernel::{Kernel, KernelParam};
use weft_ir::printer::expr_to_string;

use super::{MatrixUnit, TargetLimits};

/// A kernel over one of its target's limits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// A launch dimension of zero: no valid launch, no valid `@workgroup_size`.
    #[error("kernel `{kernel}`: launch extent of {axis} is 0")]
    ZeroExtent { kernel: String, axis: ThreadAxis },
    /// More threads per block than the target runs.
    #[error(
        "kernel `{kernel}`: {threads} threads per block (block {block:?}) exceed the \
         {target} limit of {limit}"
    )]
    ThreadsPerBlock {
        kernel: String,
        target: String,
        limit: u64,
        threads: u64,
        block: [u32; 3],
    },
    /// A block dimension (`threadIdx.x/y/z`) over its own limit.
    #[error("kernel `{kernel}`: {axis} extent {extent} exceeds the {target} limit of {limit}")]
    BlockDim {
        kernel: String,
        target: String,
        axis: ThreadAxis,
        limit: u64,
        extent: u64,
    },
    /// A grid dimension (`blockIdx.x/y/z`) over its limit.
    #[error(
        "kernel `{kernel}`: {axis} extent {extent} (blocks per grid) exceeds the {target} \
         limit of {limit}"
    )]
    GridDim {
        kernel: String,
        target: String,
        axis: ThreadAxis,
        limit: u64,
        extent: u64,
    },
    /// Shared allocations larger in total than the target's shared memory per block.
    #[error(
        "kernel `{kernel}`: {bytes} bytes of shared memory exceed the {target} limit of \
         {limit} ({})",
        describe_allocs(allocations)
    )]
    SharedMemory {
        kernel: String,
        target: String,
        limit: u64,
        bytes: u64,
        /// Every shared allocation with its size in bytes, in declaration order.
        allocations: Vec<(String, u64)>,
    },
    /// Matrix fragments on a target whose matrix units do not run them (plain WebGPU, an
    /// adapter without cooperative matrices, a shape the hardware lacks).
    #[error(
        "kernel `{kernel}`: fragment {fragment} needs matrix units that target {target} does \
         not have ({available}); use a configuration without matrix fragments there"
    )]
    MatrixUnits {
        kernel: String,
        target: String,
        /// The fragment: `` `acc` (accumulator m16n16k16, f32) ``.
        fragment: String,
        /// What the target does run, or why it runs nothing.
        available: String,
    },
    /// A buffer parameter larger than one binding may be (WebGPU's 128 MiB storage-buffer
    /// binding, an adapter's own limit).
    #[error(
        "kernel `{kernel}`: buffer `{buffer}` of {bytes} bytes exceeds the {target} limit of \
         {limit} bytes per buffer binding"
    )]
    BufferSize {
        kernel: String,
        target: String,
        buffer: String,
        limit: u64,
        bytes: u64,
    },
    /// A subgroup shuffle the target cannot run: no subgroups, a mask past the lanes its
    /// subgroups are sure to have, or a block that does not fill whole subgroups.
    #[error("kernel `{kernel}`: `shuffle_xor` with mask {mask}: {why} on target {target}")]
    Shuffle {
        kernel: String,
        target: String,
        mask: i64,
        why: String,
    },
    /// f16 used on a target without it (WebGPU without `shader-f16`).
    #[error("kernel `{kernel}`: {used_by} uses f16, which target {target} does not support")]
    F16Unsupported {
        kernel: String,
        target: String,
        /// The first use found: a parameter, an allocation or an expression.
        used_by: String,
    },
}

fn describe_allocs(allocs: &[(String, u64)]) -> String {
    allocs
        .iter()
        .map(|(n, b)| format!("`{n}`: {b} B"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl LimitError {
    /// Which limit: `zero_extent`, `threads_per_block`, `block_dim`, `grid_dim`,
    /// `shared_memory` or `f16`.
    pub fn limit_name(&self) -> &'static str {
        match self {
            LimitError::ZeroExtent { .. } => "zero_extent",
            LimitError::ThreadsPerBlock { .. } => "threads_per_block",
            LimitError::BlockDim { .. } => "block_dim",
            LimitError::GridDim { .. } => "grid_dim",
            LimitError::SharedMemory { .. } => "shared_memory",
            LimitError::BufferSize { .. } => "buffer_size",
            LimitError::F16Unsupported { .. } => "f16",
            LimitError::MatrixUnits { .. } => "matrix_units",
            LimitError::Shuffle { .. } => "subgroup",
        }
    }

    /// The name of the kernel the error is about.
    pub fn kernel(&self) -> &str {
        match self {
            LimitError::ZeroExtent { kernel, .. }
            | LimitError::ThreadsPerBlock { kernel, .. }
            | LimitError::BlockDim { kernel, .. }
            | LimitError::GridDim { kernel, .. }
            | LimitError::SharedMemory { kernel, .. }
            | LimitError::BufferSize { kernel, .. }
            | LimitError::F16Unsupported { kernel, .. }
            | LimitError::MatrixUnits { kernel, .. }
            | LimitError::Shuffle { kernel, .. } => kernel,
        }
    }
}

const BLOCK_AXES: [ThreadAxis; 3] = [
    ThreadAxis::BlockIdxX,
    ThreadAxis::BlockIdxY,
    ThreadAxis::BlockIdxZ,
];
const THREAD_AXES: [ThreadAxis; 3] = [
    ThreadAxis::ThreadIdxX,
    ThreadAxis::ThreadIdxY,
    ThreadAxis::ThreadIdxZ,
];

/// Checks `kernel` against `limits`: launch extents, threads per block, per-axis block and
/// grid sizes, shared bytes and f16. Returns the first violation.
pub fn check_limits(kernel: &Kernel, limits: &TargetLimits) -> Result<(), LimitError> {
    let name = || kernel.name.clone();
    let target = || limits.name.clone();
    for d in 0..3 {
        if kernel.grid[d] == 0 {
            return Err(LimitError::ZeroExtent {
                kernel: name(),
                axis: BLOCK_AXES[d],
            });
        }
        if kernel.block[d] == 0 {
            return Err(LimitError::ZeroExtent {
                kernel: name(),
                axis: THREAD_AXES[d],
            });
        }
    }
    let threads = kernel.threads_per_block();
    if threads > limits.max_threads_per_block {
        return Err(LimitError::ThreadsPerBlock {
            kernel: name(),
            target: target(),
            limit: limits.max_threads_per_block,
            threads,
            block: kernel.block,
        });
    }
    for d in 0..3 {
        let extent = kernel.block[d] as u64;
        if extent > limits.max_block_dim[d] {
            return Err(LimitError::BlockDim {
                kernel: name(),
                target: target(),
                axis: THREAD_AXES[d],
                limit: limits.max_block_dim[d],
                extent,
            });
        }
        let extent = kernel.grid[d] as u64;
        if extent > limits.max_grid_dim[d] {
            return Err(LimitError::GridDim {
                kernel: name(),
                target: target(),
                axis: BLOCK_AXES[d],
                limit: limits.max_grid_dim[d],
                extent,
            });
        }
    }
    let allocations: Vec<(String, u64)> = kernel
        .shared
        .iter()
        .map(|b| (b.name().to_string(), b.bytes().max(0) as u64))
        .collect();
    let bytes: u64 = if limits.shared_overlays {
        crate::layout::shared_offsets(kernel).1
    } else {
        allocations.iter().map(|(_, b)| b).sum()
    };
    if bytes > limits.max_shared_bytes {
        return Err(LimitError::SharedMemory {
            kernel: name(),
            target: target(),
            limit: limits.max_shared_bytes,
            bytes,
            allocations,
        });
    }
    for (buffer, _) in kernel.buffer_params() {
        // Global bools are 32-bit words on every backend.
        let element = match buffer.dtype() {
            DType::F16 => 2,
            _ => 4,
        };
        let bytes = (buffer.numel().max(0) as u64).saturating_mul(element);
        if bytes > limits.max_buffer_bytes {
            return Err(LimitError::BufferSize {
                kernel: name(),
                target: target(),
                buffer: buffer.name().to_string(),
                limit: limits.max_buffer_bytes,
                bytes,
            });
        }
    }
    for f in &kernel.fragments {
        // A warpgroup unit (m64nNk16) runs every N that is a multiple of 8 up to its own.
        let shape_runs = |u: &MatrixUnit| {
            let (a, b) = (u.shape, f.shape());
            if f.is_warpgroup() {
                a.m == b.m && a.k == b.k && b.n % 8 == 0 && b.n <= a.n
            } else {
                a == b
            }
        };
        let runs = limits.matrix_units.iter().any(|u| {
            shape_runs(u)
                && match f.role() {
                    FragRole::Accumulator | FragRole::Rows => u.accumulator == f.dtype(),
                    FragRole::A | FragRole::B => u.inputs == f.dtype(),
                }
        });
        if !runs {
            let available = if limits.matrix_units.is_empty() {
                "none that weft can emit for it".to_string()
            } else {
                let list: Vec<String> = limits.matrix_units.iter().map(|u| u.to_string()).collect();
                format!("it runs {}", list.join(", "))
            };
            return Err(LimitError::MatrixUnits {
                kernel: name(),
                target: target(),
                fragment: format!(
                    "`{}` ({} {}, {})",
                    f.name(),
                    f.role().name(),
                    f.shape(),
                    f.dtype()
                ),
                available,
            });
        }
    }
    if let Some((mask, why)) = shuffle_misfit(kernel, limits) {
        return Err(LimitError::Shuffle {
            kernel: name(),
            target: target(),
            mask,
            why,
        });
    }
    if !limits.f16
        && let Some(used_by) = first_f16_use(kernel)
    {
        return Err(LimitError::F16Unsupported {
            kernel: name(),
            target: target(),
            used_by,
        });
    }
    Ok(())
}

/// The first shuffle of `kernel` that `limits` cannot run, with why.
fn shuffle_misfit(kernel: &Kernel, limits: &TargetLimits) -> Option<(i64, String)> {
    let mut masks = Vec::new();
    kernel.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            if let Expr::Call(Intrinsic::ShuffleXor, args) = e {
                masks.push(match args.get(1) {
                    Some(Expr::Int(m, _)) => *m,
                    _ => -1,
                });
            }
        })
    });
    let &first = masks.first()?;
    let Some(sg) = limits.subgroup else {
        return Some((first, "the target has no subgroup operations".to_string()));
    };
    let threads = kernel.threads_per_block();
    for m in masks {
        if m < 1 || m >= sg.min as i64 {
            return Some((
                m,
                format!(
                    "a mask must be a constant from 1 to {} (subgroups of {sg})",
                    sg.min as i64 - 1
                ),
            ));
        }
        if !threads.is_multiple_of(sg.max as u64) {
            return Some((
                m,
                format!(
                    "{threads} threads per block do not fill whole subgroups of {}",
                    sg.max
                ),
            ));
        }
    }
    None
}

/// The first parameter, allocation or expression of type f16, described for a message.
pub fn first_f16_use(kernel: &Kernel) -> Option<String> {
    for p in &kernel.params {
        match p {
            KernelParam::Buffer { buffer, .. } if buffer.dtype() == DType::F16 => {
                return Some(format!("buffer parameter `{}`", buffer.name()));
            }
            KernelParam::Scalar(v) if v.dtype() == DType::F16 => {
                return Some(format!("scalar parameter `{}`", v.name()));
            }
            _ => {}
        }
    }
    for b in &kernel.shared {
        if b.dtype() == DType::F16 {
            return Some(format!("shared allocation `{}`", b.name()));
        }
    }
    for b in &kernel.locals {
        if b.dtype() == DType::F16 {
            return Some(format!("local allocation `{}`", b.name()));
        }
    }
    let mut found: Option<String> = None;
    kernel.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            if found.is_none() && e.dtype() == DType::F16 && !matches!(e, Expr::Reduce(_)) {
                found = Some(format!("expression `{}`", expr_to_string(e)));
            }
        })
    });
    found
}

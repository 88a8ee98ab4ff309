//! weft-tune: Hidet's tuning (seed 002 sections 4.3 and 5.1.3) for weft's templates.
//!
//! A template ([`weft_ops::templates`]) comes with a hardware-centric schedule space: a
//! few hundred configs at most, drawn from what the target offers one block
//! ([`resources`]), the same for every input size. [`tune`] builds every config of the
//! space at one shape, compiles them all on every core, checks each against the float64
//! reference and times it by kernel time; the best goes into a [`Records`] file, which
//! `weft run` and `weft bench` consult ([`choose`]) before falling back to the template's
//! default config.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use weft_ops::{Shape, Workload};
//!
//! let target = weft_runtime::Target::parse("cuda")?;
//! let mut device = weft_runtime::open(&target)?;
//! let w = Workload::new("matmul", &Shape::parse("matmul", "m=2039,n=2039,k=2039")?)?;
//! let spec = w.op.template.expect("matmul has a template");
//! let res = weft_tune::resources(&target, &device.limits());
//! let tuned = weft_tune::tune(device.as_mut(), &w, spec, &res, &Default::default(), &())?;
//! let best = tuned.best().expect("a config ran");
//! println!("{} in {:?}", best.config, tuned.elapsed);
//! # Ok(()) }
//! ```

pub mod choose;
mod records;
mod tuner;

pub use choose::{Choice, ChoiceSource, DISAGREEMENT_FACTOR, choose};
pub use records::{Record, RecordError, RecordKey, Records, date, unix_now};
pub use tuner::{
    CHECK_ALL_ELEMENTS, CHECKED_FASTEST, Outcome, Progress, Trial, TuneError, TuneOptions, Tuned,
    tune,
};

use weft_codegen_common::TargetLimits;
use weft_ops::templates::Resources;
use weft_runtime::{Target, WgpuBackend};

/// What `target` offers one block, for a schedule space: threads and shared memory from
/// `limits` (an open device's, or the target's offline profile: WebGPU's 16 KiB for
/// `webgpu`, the adapter's limit for `vulkan`, 48 KiB for `cuda`), and a bound on
/// registers per thread — 255 (CUDA's most) on native backends, 128 where the GPU behind
/// the API is unknown (`webgpu`, `gl`) — and whether the compiler takes a register cap
/// (CUDA's `__launch_bounds__`).
pub fn resources(target: &Target, limits: &TargetLimits) -> Resources {
    let max_registers = match target {
        Target::Wgpu {
            backend: WgpuBackend::WebGpu | WgpuBackend::Gl,
            ..
        } => 128,
        _ => 255,
    };
    Resources {
        name: limits.name.clone(),
        max_threads: limits.max_threads_per_block.min(i64::MAX as u64) as i64,
        max_shared_bytes: limits.max_shared_bytes.min(i64::MAX as u64) as i64,
        max_registers,
        // HIP's `__launch_bounds__` takes the hint too (as waves per SIMD).
        register_cap: matches!(target, Target::Cuda { .. } | Target::Rocm { .. }),
        mma: {
            let mut sizes: Vec<i64> = limits
                .matrix_units
                .iter()
                .filter(|u| {
                    u.shape.m == u.shape.n
                        && u.shape.n == u.shape.k
                        && u.inputs == weft_ir::dtype::DType::F16
                        && u.accumulator == weft_ir::dtype::DType::F32
                })
                .map(|u| u.shape.m as i64)
                .collect();
            sizes.sort_unstable_by(|a, b| b.cmp(a));
            sizes.dedup();
            sizes
        },
    }
}

/// weft's version, as records store it: a record from another version is not used.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

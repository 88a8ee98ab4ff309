//! weft-tune: Hidet's tuning (seed 002 sections 4.3 and 5.1.3) for weft's templates.
//!
//! A template ([`weft_kernels`]) comes with a hardware-centric schedule space: a
//! few hundred configs at most, drawn from what the target offers one block (its
//! [`TargetLimits`](weft_codegen_common::TargetLimits): an open device's, or the
//! target's offline profile), the same for every input size. [`tune`] builds every config of the
//! space at one shape, compiles them all on every core, checks each against the float64
//! reference and times it by kernel time; the best goes into a [`Records`] file, which
//! `weft run` and `weft bench` consult ([`choose`]) before falling back to the template's
//! default config. [`measure`] is the one measurement driver (inputs → run → check →
//! time) that the tuner, `weft run`, `weft bench` and the test harness share.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use weft_ops::{Shape, Workload};
//!
//! let target = weft_runtime::Target::parse("cuda")?;
//! let mut device = weft_runtime::open(&target)?;
//! let w = Workload::new("matmul", &Shape::parse("matmul", "m=2039,n=2039,k=2039")?)?;
//! let spec = w.op.template.expect("matmul has a template");
//! let limits = device.limits();
//! let tuned = weft_tune::tune(device.as_mut(), &w, spec, &limits, &Default::default(), &())?;
//! let best = tuned.best().expect("a config ran");
//! println!("{} in {:?}", best.config, tuned.elapsed);
//! # Ok(()) }
//! ```

pub mod choose;
mod files;
pub mod measure;
mod records;
mod tuner;

pub use choose::{Choice, ChoiceSource, DISAGREEMENT_FACTOR, choose};
pub use files::{FileLock, not_regular, read_bounded, write_whole};
pub use records::{Record, RecordError, RecordKey, Records, Stored, date, unix_now};
pub use tuner::{
    CHECK_ALL_ELEMENTS, CHECKED_FASTEST, Outcome, Progress, Trial, TuneError, TuneOptions, Tuned,
    tune,
};

/// weft's version, as records store it: a record from another version is not used.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

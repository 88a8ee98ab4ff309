//! The bounds prover: every memory access of a lowered [`Kernel`] shown to stay inside its
//! buffer, at compile time.
//!
//! WebGPU requires that a shader never reads or writes outside its buffers, so wgpu (naga)
//! guards every access with a runtime check unless the module is created as trusted. weft
//! knows every index expression and every loop bound of its kernels, so it can prove most
//! accesses in bounds and create those kernels without the checks; a kernel with any
//! access it cannot prove keeps them. On CUDA, where nothing checks, the same report is a
//! bug finder.
//!
//! For each load and store (scalar or vector, global, shared or local) and each fragment
//! load, store and fragment-array index, the prover shows `0 ≤ first` and
//! `last < length`, where `first..=last` are the elements the access touches. What it
//! knows at the access ([`facts`]):
//!
//! - the range of every loop variable (`0..extent`), thread and block index (the launch
//!   shape) and `let` variable (interval and residue of its value);
//! - every condition that dominates the access — an enclosing `if` (its negation in the
//!   `else` when that is one comparison), the condition of a `select` or
//!   `if_then_else` for a load in its taken branch, the left side of `&&` (negated for
//!   `||`) for a load on the right — as linear inequalities over the index atoms, each
//!   tightened by what is known modulo some number (`4·j < 72` gives `4·j ≤ 68`).
//!
//! A bound is proven when interval arithmetic alone shows it, or when the bound minus a
//! non-negative combination of guards does ([`facts::Facts::nonneg`]): `C[r·72 + c]` with
//! `r < 100` and `c < 72` is `7199 − (r·72 + c) = 72·(99 − r) + (71 − c) ≥ 0`. Both are
//! tried with the index and guards as written, simplified with the narrowed ranges, and
//! with `let` variables inlined; and again with what division says of its operand
//! (`x = c·(x // c) + x % c`) added to the guards.
//!
//! It also lists every integer division whose divisor it cannot show to be neither 0 nor
//! −1 (naga guards those unless told not to). A kernel is proven when both lists are
//! empty.
//!
//! ```
//! use weft_ir::bounds::prove;
//! use weft_ir::dtype::DType;
//! use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis};
//! use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam};
//!
//! // out[t] = 1 for 128 threads, over 100 elements: proven only under `t < 100`.
//! let out = Buffer::new("out", vec![100], DType::F32, Scope::Global);
//! let t = Expr::Builtin(ThreadAxis::ThreadIdxX);
//! let store = KStmt::Store { buffer: out.clone(), index: t.clone(), value: Expr::f32(1.0), lanes: 1 };
//! let kernel = |body| Kernel {
//!     name: "fill".into(),
//!     params: vec![KernelParam::Buffer { buffer: out.clone(), access: Access::Write }],
//!     grid: [1, 1, 1], block: [128, 1, 1], shared: vec![], locals: vec![],
//!     body, min_blocks_per_sm: 0, async_copies: false, async_pending: 0, fragments: vec![],
//! };
//! assert!(!prove(&kernel(store.clone())).is_proven());
//! let guarded = KStmt::If { cond: t.lt(100), then: Box::new(store), otherwise: None };
//! assert!(prove(&kernel(guarded)).is_proven());
//! ```

mod facts;
mod walk;

use std::fmt;

use crate::expr::{Buffer, Expr, Scope};
use crate::kernel::{Kernel, LoweredFunc};

/// What an access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load,
    Store,
    /// A prefetch hint's element: proved like a load's, since an address outside the
    /// buffer is as wrong to name in a hint as in a load.
    Prefetch,
    /// A warp's fragment load: a tile of the buffer.
    FragmentLoad,
    /// A warp's fragment store: a tile of the buffer.
    FragmentStore,
    /// `frag[i]`: one tile of a fragment array.
    FragmentIndex,
    /// A `wgmma`'s operand tile in shared memory.
    WgmmaOperand,
    /// A TMA copy's box in shared memory.
    TmaBox,
    /// `bar[i]`: one barrier of an mbarrier array.
    BarrierIndex,
}

impl AccessKind {
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Prefetch => "prefetch",
            AccessKind::FragmentLoad => "fragment load",
            AccessKind::FragmentStore => "fragment store",
            AccessKind::FragmentIndex => "fragment index",
            AccessKind::WgmmaOperand => "wgmma operand",
            AccessKind::TmaBox => "TMA box",
            AccessKind::BarrierIndex => "mbarrier index",
        }
    }
}

/// One access of a kernel and what the prover found for it.
#[derive(Clone, Debug)]
pub struct AccessCheck {
    /// The buffer (or fragment array) accessed.
    pub buffer: String,
    /// Where it lives (fragment arrays count as local).
    pub scope: Scope,
    pub kind: AccessKind,
    /// The flat index of the first element touched.
    pub index: Expr,
    /// Elements touched from `index` on: the lanes of a vector access, the extent of a
    /// fragment tile in the buffer.
    pub span: i64,
    /// Elements in the buffer.
    pub length: i64,
    /// The elements the access may touch, first to last, by interval arithmetic with the
    /// guards applied to single variables; `None` where no interval was found.
    pub interval: Option<(i64, i64)>,
    /// `0 ≤ index` is proven.
    pub lower_proven: bool,
    /// `index + span ≤ length` is proven.
    pub upper_proven: bool,
    /// How many times this access (same buffer, kind, index and span) occurs.
    pub occurrences: usize,
}

impl AccessCheck {
    pub fn is_proven(&self) -> bool {
        self.lower_proven && self.upper_proven
    }
}

impl fmt::Display for AccessCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let index = crate::printer::expr_to_string(&self.index);
        let range = if self.span > 1 {
            format!("{index} .. +{}", self.span)
        } else {
            index
        };
        write!(
            f,
            "{}[{range}] ({}, {} buffer of {} elements): ",
            self.buffer,
            self.kind.name(),
            self.scope.name(),
            self.length
        )?;
        match self.interval {
            Some((lo, hi)) => write!(f, "touches [{lo}, {hi}]")?,
            None => f.write_str("no interval found for the index")?,
        }
        match (self.lower_proven, self.upper_proven) {
            (true, true) => f.write_str(", proven in bounds"),
            (false, true) => f.write_str(", `index >= 0` not proven"),
            (true, false) => write!(f, ", `last < {}` not proven", self.length),
            (false, false) => write!(
                f,
                ", neither `index >= 0` nor `last < {}` proven",
                self.length
            ),
        }
    }
}

/// The prover's result for one kernel.
#[derive(Clone, Debug)]
pub struct BoundsReport {
    pub kernel: String,
    /// Every distinct access, in program order.
    pub checks: Vec<AccessCheck>,
    /// Integer divisions and remainders whose divisor is not shown to be neither 0 nor
    /// −1 (naga guards those unless told not to; weft's own divide by constants).
    pub divisions: Vec<String>,
}

impl BoundsReport {
    /// True when every access is proven in bounds and every integer division safe.
    pub fn is_proven(&self) -> bool {
        self.checks.iter().all(AccessCheck::is_proven) && self.divisions.is_empty()
    }

    /// The accesses not proven in bounds.
    pub fn unproven(&self) -> impl Iterator<Item = &AccessCheck> {
        self.checks.iter().filter(|c| !c.is_proven())
    }

    /// One line: `all 14 accesses proven in bounds`, or how many were not and the first.
    pub fn summary(&self) -> String {
        let total = self.checks.len();
        let bad: Vec<&AccessCheck> = self.unproven().collect();
        let mut text = match bad.first() {
            None => format!("all {total} accesses proven in bounds"),
            Some(first) => format!(
                "{} of {total} accesses not proven in bounds, first: {first}",
                bad.len()
            ),
        };
        if let Some(d) = self.divisions.first() {
            text += &format!(
                "; {} integer division(s) by a divisor not shown nonzero, first: {d}",
                self.divisions.len()
            );
        }
        text
    }
}

impl fmt::Display for BoundsReport {
    /// The summary, then one line per unproven access.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bad: Vec<&AccessCheck> = self.unproven().collect();
        if self.is_proven() {
            return write!(f, "{}: {}", self.kernel, self.summary());
        }
        write!(
            f,
            "{}: {} of {} accesses not proven in bounds:",
            self.kernel,
            bad.len(),
            self.checks.len()
        )?;
        for c in bad {
            write!(f, "\n  {c}")?;
        }
        for d in &self.divisions {
            write!(
                f,
                "\n  integer division by a divisor not shown nonzero: {d}"
            )?;
        }
        Ok(())
    }
}

/// Proves the accesses of `kernel` in bounds (see the module docs).
pub fn prove(kernel: &Kernel) -> BoundsReport {
    prove_with_lengths(kernel, &|b| b.numel())
}

/// [`prove`] against buffers of the lengths `length` gives (elements) instead of their
/// shapes' — a runtime that binds shorter buffers, or a test that shortens one by an
/// element to show the proof is tight.
pub fn prove_with_lengths(kernel: &Kernel, length: &dyn Fn(&Buffer) -> i64) -> BoundsReport {
    let (checks, divisions) = walk::checks(kernel, length);
    BoundsReport {
        kernel: kernel.name.clone(),
        checks,
        divisions,
    }
}

/// [`prove`] for every kernel of `func`, in launch order.
pub fn prove_all(func: &LoweredFunc) -> Vec<BoundsReport> {
    func.kernels.iter().map(prove).collect()
}

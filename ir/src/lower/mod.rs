//! Lowering: a scheduled [`Func`] becomes a [`LoweredFunc`] of backend-neutral kernels.
//!
//! The passes, in order:
//! 1. **Kernel split** — each root-level statement of the Func is one kernel launch.
//! 2. **Launch shape** — loops bound to `blockIdx`/`threadIdx` give the grid and block
//!    dimensions and become thread indices.
//! 3. **Buffer compaction** ([`compact`]) — each shared or local buffer shrinks to the
//!    region one block (shared) or one thread (local) actually touches.
//! 4. **Conversion** ([`convert`]) — blocks become plain statements: iteration variables
//!    are replaced by their bindings, predicates become `if`s, an init runs before the
//!    reduction loops that feed only reduce variables, buffers are flattened, and
//!    vectorized copies become vector accesses ([`vectorize`]).
//! 5. **Task mappings** — expanded into loops ([`mapping::expand`]).
//! 6. **Finish** ([`finish`]) — index arithmetic simplified with the loop bounds, floor
//!    division written as C division where operands are provably non-negative (else an
//!    explicit floor form), barriers inserted where threads exchange data through shared
//!    memory ([`barrier`]), names made unique, and buffer accesses classified.

mod barrier;
mod compact;
mod convert;
mod fetch;
mod finish;
pub mod mapping;
mod unswitch;
mod vectorize;

use std::collections::HashMap;

use thiserror::Error;

use crate::expr::{Buffer, Scope, ThreadAxis};
use crate::func::{ForKind, Func, Stmt};
use crate::kernel::{Kernel, LoweredFunc};

/// Why a Func could not be lowered.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LowerError {
    #[error(
        "kernel {kernel}: {axis} is bound to extents {a} (loop `{loop_a}`) and {b} (loop `{loop_b}`); one axis has one extent per kernel"
    )]
    ThreadExtentMismatch {
        kernel: usize,
        axis: ThreadAxis,
        a: i64,
        loop_a: String,
        b: i64,
        loop_b: String,
    },
    #[error(
        "{scope} buffer `{buffer}` is used by {count} kernels (root-level statements); {scope} memory does not outlive a kernel — move its producer under the consumer with compute_at"
    )]
    ScopeAcrossKernels {
        buffer: String,
        scope: Scope,
        count: usize,
    },
    #[error(
        "local buffer `{buffer}` would hold {elements} elements per thread: region inference could not shrink it (compute it under the loop that uses it)"
    )]
    LocalTooLarge { buffer: String, elements: i64 },
    #[error("kernel {kernel}: launch dimension {what} = {value} exceeds {limit}")]
    LaunchTooLarge {
        kernel: usize,
        what: String,
        value: i64,
        limit: i64,
    },
    #[error(
        "kernel `{kernel}`: every thread along {axis} ({threads} threads) stores the same elements of shared stage `{stage}`: its fetch loops are bound to no {axis}, so each thread fetches the whole tile (a write-write race). Split the fetch loop of `{stage}` (after compute_at, `get_loops` on it) and bind the inner part to {axis} for a cooperative fetch"
    )]
    RedundantFetch {
        kernel: String,
        stage: String,
        axis: ThreadAxis,
        threads: u32,
    },
    #[error("task mapping: {0}")]
    Mapping(String),
    #[error("{0}")]
    Unsupported(String),
}

/// Lowers a scheduled Func.
pub fn lower(func: &Func) -> Result<LoweredFunc, LowerError> {
    let roots: Vec<&Stmt> = func.body.items().iter().collect();
    // Shared and local buffers cannot cross kernels.
    let mut users: HashMap<Buffer, usize> = HashMap::new();
    for r in &roots {
        for b in r.buffers() {
            if b.scope() != Scope::Global {
                *users.entry(b).or_default() += 1;
            }
        }
    }
    if let Some((b, n)) = users.iter().find(|(_, n)| **n > 1) {
        return Err(LowerError::ScopeAcrossKernels {
            buffer: b.name().to_string(),
            scope: b.scope(),
            count: *n,
        });
    }
    let temps: Vec<Buffer> = func
        .allocs
        .iter()
        .filter(|b| b.scope() == Scope::Global)
        .cloned()
        .collect();
    let mut kernels: Vec<Kernel> = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let name = if roots.len() == 1 {
            format!("{}_kernel", func.name)
        } else {
            format!("{}_kernel{}", func.name, i)
        };
        let (grid, block) = launch_shape(root, i)?;
        let compaction = compact::plan(root, func)?;
        let converted = convert::convert(root, func, &compaction, grid, block)?;
        let hints = func.kernel_hints.get(i).copied().unwrap_or_default();
        let kernel = finish::finish(name, converted, hints, func, &temps, grid, block)?;
        fetch::check(&kernel)?;
        kernels.push(kernel);
    }
    Ok(LoweredFunc {
        name: func.name.clone(),
        params: func.params.clone(),
        temps,
        kernels,
    })
}

/// Grid and block dimensions from the thread-bound loops of one kernel.
fn launch_shape(root: &Stmt, kernel: usize) -> Result<([u32; 3], [u32; 3]), LowerError> {
    let mut seen: HashMap<ThreadAxis, (i64, String)> = HashMap::new();
    let mut err = None;
    root.visit(&mut |s| {
        if let Stmt::For(f) = s
            && let ForKind::Bound(axis) = f.kind
        {
            match seen.get(&axis) {
                Some((e, l)) if *e != f.extent && err.is_none() => {
                    err = Some(LowerError::ThreadExtentMismatch {
                        kernel,
                        axis,
                        a: *e,
                        loop_a: l.clone(),
                        b: f.extent,
                        loop_b: f.var.name().to_string(),
                    })
                }
                Some(_) => {}
                None => {
                    seen.insert(axis, (f.extent, f.var.name().to_string()));
                }
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    let mut grid = [1u32; 3];
    let mut block = [1u32; 3];
    for (axis, (extent, _)) in seen {
        let limit = if axis.is_block() {
            i32::MAX as i64
        } else {
            1024
        };
        if extent > limit {
            return Err(LowerError::LaunchTooLarge {
                kernel,
                what: axis.name().to_string(),
                value: extent,
                limit,
            });
        }
        if axis.is_block() {
            grid[axis.dim()] = extent as u32;
        } else {
            block[axis.dim()] = extent as u32;
        }
    }
    Ok((grid, block))
}

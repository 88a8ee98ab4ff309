//! The redundant-fetch diagnostic: a shared-memory stage whose fetch no thread index
//! distributes.
//!
//! A user coming from TVM writes `cache_read(B, 0, "shared")` and `compute_at` at the loop
//! bound to `blockIdx.x`, and stops there. TVM lowers that, and so could weft: every thread
//! of the block then fetches the whole tile, writing each element of the shared buffer as
//! every other thread does, with no barrier between — a write-write race the interpreter
//! reports only when the kernel runs. Lowering finds it first: a store into shared memory
//! whose index, and every condition guarding it, ignore a thread axis of extent > 1 is
//! executed by all threads along that axis on the same elements.

use std::collections::HashSet;

use crate::expr::{Expr, Scope, ThreadAxis, Var};
use crate::kernel::{KStmt, Kernel};

use super::LowerError;

/// Fails with [`LowerError::RedundantFetch`] on the first shared store that every thread
/// along some thread axis performs on the same elements.
pub(super) fn check(kernel: &Kernel) -> Result<(), LowerError> {
    let axes: Vec<(ThreadAxis, u32)> = ThreadAxis::ALL
        .into_iter()
        .filter(|a| !a.is_block())
        .map(|a| (a, kernel.block[a.dim()]))
        .filter(|(_, n)| *n > 1)
        .collect();
    if axes.is_empty() {
        return Ok(());
    }
    let mut walk = Walk {
        axes: &axes,
        thread_lets: Vec::new(),
        found: None,
    };
    walk.stmt(&kernel.body, &HashSet::new());
    match walk.found {
        Some((stage, axis, threads)) => Err(LowerError::RedundantFetch {
            kernel: kernel.name.clone(),
            stage,
            axis,
            threads,
        }),
        None => Ok(()),
    }
}

struct Walk<'a> {
    axes: &'a [(ThreadAxis, u32)],
    /// `let` variables and the thread axes their values depend on.
    thread_lets: Vec<(Var, HashSet<ThreadAxis>)>,
    found: Option<(String, ThreadAxis, u32)>,
}

impl Walk<'_> {
    /// The thread axes `e` depends on, through `let` variables too.
    fn axes_of(&self, e: &Expr) -> HashSet<ThreadAxis> {
        let mut out = HashSet::new();
        e.visit(&mut |x| match x {
            Expr::Builtin(a) if !a.is_block() => {
                out.insert(*a);
            }
            Expr::Var(v) => {
                if let Some((_, axes)) = self.thread_lets.iter().rev().find(|(w, _)| w == v) {
                    out.extend(axes.iter().copied());
                }
            }
            _ => {}
        });
        out
    }

    /// `guarded`: the thread axes the enclosing conditions depend on.
    fn stmt(&mut self, s: &KStmt, guarded: &HashSet<ThreadAxis>) {
        if self.found.is_some() {
            return;
        }
        match s {
            KStmt::Seq(items) => items.iter().for_each(|i| self.stmt(i, guarded)),
            KStmt::For { body, .. } => self.stmt(body, guarded),
            KStmt::If {
                cond,
                then,
                otherwise,
            } => {
                let mut g = guarded.clone();
                g.extend(self.axes_of(cond));
                self.stmt(then, &g);
                if let Some(o) = otherwise {
                    self.stmt(o, &g);
                }
            }
            KStmt::Let { var, value, body } => {
                let axes = self.axes_of(value);
                self.thread_lets.push((var.clone(), axes));
                self.stmt(body, guarded);
                self.thread_lets.pop();
            }
            KStmt::Store { buffer, index, .. } if buffer.scope() == Scope::Shared => {
                let mut used = self.axes_of(index);
                used.extend(guarded.iter().copied());
                if let Some((axis, n)) = self.axes.iter().find(|(a, _)| !used.contains(a)) {
                    self.found = Some((buffer.name().to_string(), *axis, *n));
                }
            }
            KStmt::Mapping(m) => self.stmt(&m.body, guarded),
            // An atomic's old value is one thread's (a guarded slot), never a fetch.
            KStmt::Store { .. }
            | KStmt::Barrier
            | KStmt::Comment(_)
            | KStmt::Frag(_)
            | KStmt::Fence
            | KStmt::AtomicAdd(_)
            | KStmt::Prefetch { .. }
            | KStmt::Grid(_) => {}
        }
    }
}

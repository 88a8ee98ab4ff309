//! Barrier insertion: a `__syncthreads()` wherever threads of a block may exchange data
//! through shared memory.
//!
//! The pass walks each statement list keeping the shared buffers read and written since
//! the last barrier. Before a statement that reads or writes a buffer with a pending
//! write, or writes a buffer with a pending read, it inserts a barrier. It descends into
//! loops (whose extents are uniform) and into `if`s whose condition does not depend on
//! the thread; a conflict with what precedes a loop is settled by one barrier before the
//! loop, and the dependence carried from the end of one iteration to the start of the
//! next by a barrier at the top of the body. Barriers are never placed under a thread-dependent
//! condition, where some threads would skip them.

use std::collections::HashSet;

use crate::expr::{Expr, Var};
use crate::kernel::KStmt;

#[derive(Clone, Default, Debug)]
struct State {
    reads: HashSet<u64>,
    writes: HashSet<u64>,
}

impl State {
    fn union(&mut self, o: &State) {
        self.reads.extend(&o.reads);
        self.writes.extend(&o.writes);
    }
    /// A read after a pending write, or a write after a pending read. Two writes with no
    /// read between are not ordered by a barrier (cooperative fetches write disjoint
    /// elements; overlapping writes are a race the interpreter reports).
    fn conflicts(&self, a: &State) -> bool {
        a.reads.iter().any(|b| self.writes.contains(b))
            || a.writes.iter().any(|b| self.reads.contains(b))
    }
    fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }
}

fn shared_accesses(s: &KStmt, shared: &HashSet<u64>) -> State {
    let mut st = State::default();
    s.visit(&mut |s| {
        if let KStmt::Store { buffer, .. } = s
            && shared.contains(&buffer.id())
        {
            st.writes.insert(buffer.id());
        }
    });
    s.visit_exprs(&mut |e| {
        for (b, _) in e.loads() {
            if shared.contains(&b.id()) {
                st.reads.insert(b.id());
            }
        }
    });
    st
}

fn thread_dependent(e: &Expr, td: &HashSet<Var>) -> bool {
    e.uses_builtin(&|a| !a.is_block()) || e.vars().iter().any(|v| td.contains(v))
}

/// Inserts barriers into a kernel body that uses the shared buffers `shared` (by id).
pub(crate) fn insert_barriers(body: KStmt, shared: &HashSet<u64>) -> KStmt {
    if shared.is_empty() {
        return body;
    }
    let mut state = State::default();
    process(body, &mut state, shared, &mut HashSet::new())
}

fn process(s: KStmt, state: &mut State, shared: &HashSet<u64>, td: &mut HashSet<Var>) -> KStmt {
    match s {
        KStmt::Seq(items) => {
            let mut out = Vec::new();
            for i in items {
                let i = process(i, state, shared, td);
                match i {
                    KStmt::Seq(inner) => out.extend(inner),
                    i => out.push(i),
                }
            }
            KStmt::Seq(out)
        }
        KStmt::For {
            var,
            extent,
            unroll,
            body,
        } => {
            // A conflict with what came before the loop is settled once, before it.
            let whole = shared_accesses(&body, shared);
            let mut pre = Vec::new();
            if state.conflicts(&whole) {
                pre.push(KStmt::Barrier);
                state.clear();
            }
            // What one iteration leaves pending is seen by the next one.
            let mut end = State::default();
            process((*body).clone(), &mut end, shared, td);
            let mut st = state.clone();
            st.union(&end);
            let body = process(*body, &mut st, shared, td);
            *state = st;
            let l = KStmt::For {
                var,
                extent,
                unroll,
                body: Box::new(body),
            };
            KStmt::seq(pre.into_iter().chain([l]).collect())
        }
        KStmt::Let { var, value, body } => {
            if thread_dependent(&value, td) {
                td.insert(var.clone());
            }
            let a = shared_accesses(
                &KStmt::Let {
                    var: var.clone(),
                    value: value.clone(),
                    body: Box::new(KStmt::Seq(Vec::new())),
                },
                shared,
            );
            let mut pre = Vec::new();
            if state.conflicts(&a) {
                pre.push(KStmt::Barrier);
                state.clear();
            }
            state.union(&a);
            let body = process(*body, state, shared, td);
            let l = KStmt::Let {
                var,
                value,
                body: Box::new(body),
            };
            KStmt::seq(pre.into_iter().chain([l]).collect())
        }
        KStmt::If {
            cond,
            then,
            otherwise,
        } if !thread_dependent(&cond, td) => {
            let a = shared_accesses(
                &KStmt::If {
                    cond: cond.clone(),
                    then: Box::new(KStmt::Seq(Vec::new())),
                    otherwise: None,
                },
                shared,
            );
            let mut pre = Vec::new();
            if state.conflicts(&a) {
                pre.push(KStmt::Barrier);
                state.clear();
            }
            state.union(&a);
            let mut st_then = state.clone();
            let then = process(*then, &mut st_then, shared, td);
            let mut st_else = state.clone();
            let otherwise = otherwise.map(|o| Box::new(process(*o, &mut st_else, shared, td)));
            *state = st_then;
            state.union(&st_else);
            let i = KStmt::If {
                cond,
                then: Box::new(then),
                otherwise,
            };
            KStmt::seq(pre.into_iter().chain([i]).collect())
        }
        KStmt::Barrier => {
            state.clear();
            KStmt::Barrier
        }
        other => {
            let a = shared_accesses(&other, shared);
            let mut out = Vec::new();
            if state.conflicts(&a) {
                out.push(KStmt::Barrier);
                state.clear();
            }
            state.union(&a);
            out.push(other);
            KStmt::seq(out)
        }
    }
}

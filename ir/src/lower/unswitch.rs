//! Loop unswitching for bounds guards: `for i { if c { body } }`, where `c` does not
//! depend on `i` or on memory, becomes `if c { for i { body } }`.
//!
//! The rule-based reduction schedule leaves exactly that shape where its thread count
//! does not divide the outputs: every iteration of the reduction re-tests the thread's
//! own bounds. NVCC then branches around each load of the unrolled loop and cannot issue
//! them together; a split-K product's summing kernel over 64 parts of a 1×1000 output
//! took about 9 µs on an H100 that way (`measurements/h100-2026-11-27c`). Each
//! thread runs the same statements in the same order either way.

use crate::kernel::KStmt;

/// `body` with every loop whose whole body is one invariant guard turned inside out.
pub(crate) fn hoist_invariant_guards(body: KStmt) -> KStmt {
    body.rewrite(&mut |s| {
        let KStmt::For {
            var,
            extent,
            unroll,
            body,
        } = s
        else {
            return s;
        };
        let items = match *body {
            KStmt::Seq(items) => items,
            other => vec![other],
        };
        let hoistable = |s: &KStmt| match s {
            KStmt::If {
                cond,
                then,
                otherwise: None,
            } => {
                // A collective statement stays where its author put it.
                let mut collective = false;
                then.visit(&mut |s| {
                    collective |= matches!(s, KStmt::Barrier | KStmt::Frag(_) | KStmt::Grid(_))
                });
                !cond.uses_var(&var) && cond.loads().is_empty() && !collective
            }
            _ => false,
        };
        let mut statements = items.iter().filter(|s| !matches!(s, KStmt::Comment(_)));
        let guard = match (statements.next(), statements.next()) {
            (Some(s @ KStmt::If { cond, .. }), None) if hoistable(s) => Some(cond.clone()),
            _ => None,
        };
        let Some(cond) = guard else {
            return KStmt::For {
                var,
                extent,
                unroll,
                body: Box::new(KStmt::seq(items)),
            };
        };
        // The loop keeps its notes where they were, the guarded statements in the
        // guard's place.
        let inner = items
            .into_iter()
            .map(|s| match s {
                KStmt::If { then, .. } => *then,
                other => other,
            })
            .collect();
        KStmt::If {
            cond,
            then: Box::new(KStmt::For {
                var,
                extent,
                unroll,
                body: Box::new(KStmt::seq(inner)),
            }),
            otherwise: None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Buffer, Expr, Scope, ThreadAxis, Var};
    use crate::prelude::DType;

    fn tid() -> Expr {
        Expr::Builtin(ThreadAxis::ThreadIdxX)
    }

    /// A summing loop over 64 partials, its body (a note, then `extra` and the sum under
    /// the guard `cond`, given the loop's variable).
    fn sum_loop(cond: impl Fn(&Var) -> Expr, extra: Option<KStmt>) -> KStmt {
        let rz = Var::index("rz");
        let acc = Buffer::new("acc", vec![1], DType::F32, Scope::Local);
        let partial = Buffer::new("partial", vec![64 * 1000], DType::F32, Scope::Global);
        let add = KStmt::Store {
            buffer: acc.clone(),
            index: Expr::int(0),
            value: acc.load(vec![Expr::int(0)]) + partial.load(vec![rz.expr() * 1000 + tid()]),
            lanes: 1,
        };
        let guarded = KStmt::If {
            cond: cond(&rz),
            then: Box::new(KStmt::seq(extra.into_iter().chain([add]).collect())),
            otherwise: None,
        };
        KStmt::For {
            var: rz,
            extent: 64,
            unroll: false,
            body: Box::new(KStmt::seq(vec![
                KStmt::Comment("block ksum_update".into()),
                guarded,
            ])),
        }
    }

    /// A guard on the thread alone moves outside the loop, the loop's note with it.
    #[test]
    fn an_invariant_guard_goes_outside_the_loop() {
        let KStmt::If { then, .. } = hoist_invariant_guards(sum_loop(|_| tid().lt(1000), None))
        else {
            panic!("not hoisted");
        };
        let KStmt::For { body, .. } = *then else {
            panic!("no loop inside the guard");
        };
        let KStmt::Seq(items) = *body else {
            panic!("the note was lost");
        };
        assert!(matches!(items[0], KStmt::Comment(_)));
        assert!(matches!(items[1], KStmt::Store { .. }));
    }

    /// A guard on the loop's own variable, on memory, or around a barrier stays.
    #[test]
    fn other_guards_stay_inside() {
        let flag = Buffer::new("flag", vec![1], DType::I32, Scope::Global);
        let loops = [
            sum_loop(|rz| rz.expr().lt(7), None),
            sum_loop(|_| flag.load(vec![Expr::int(0)]).lt(1), None),
            sum_loop(|_| tid().lt(1000), Some(KStmt::Barrier)),
        ];
        for l in loops {
            assert!(
                matches!(hoist_invariant_guards(l.clone()), KStmt::For { .. }),
                "{l:?}"
            );
        }
    }
}

//! Task mappings (Hidet, seed 002 section 5.1): how tasks are assigned to workers and in
//! which order each worker runs its tasks.
//!
//! A mapping has `num_workers` workers and a task shape `d`. `spatial(d)` gives each of
//! `prod(d)` workers one task (row-major); `repeat(d)` gives one worker every task of `d`,
//! in row-major order. Composition `f1 * f2` has `n1 * n2` workers and task shape
//! `d1 ⊙ d2`, with `f3(w) = [t1 ⊙ d2 + t2 | t1 ∈ f1(w / n2), t2 ∈ f2(w % n2)]`.
//!
//! In the IR, a mapping applied to a worker expression is a loop statement
//! ([`crate::func::MappingLoop`]); lowering expands it into ordinary loops.

use std::ops::Mul;

/// A task mapping. Build with [`spatial`], [`repeat`] and `*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskMapping {
    Spatial(Vec<i64>),
    Repeat(Vec<i64>),
    Composed(Box<TaskMapping>, Box<TaskMapping>),
}

/// `spatial(d0, d1, ...)`: `prod(d)` workers, one task each.
pub fn spatial(shape: &[i64]) -> TaskMapping {
    TaskMapping::Spatial(shape.to_vec())
}

/// `repeat(d0, d1, ...)`: one worker runs all `prod(d)` tasks.
pub fn repeat(shape: &[i64]) -> TaskMapping {
    TaskMapping::Repeat(shape.to_vec())
}

impl Mul for TaskMapping {
    type Output = TaskMapping;
    /// Composition `self ∘ rhs` (see the module docs). Both sides must have the same
    /// number of task dimensions; [`TaskMapping::check`] reports when they do not.
    fn mul(self, rhs: TaskMapping) -> TaskMapping {
        TaskMapping::Composed(Box::new(self), Box::new(rhs))
    }
}

impl std::fmt::Display for TaskMapping {
    /// `spatial(4, 8) * repeat(2, 2)`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dims = |d: &[i64]| {
            d.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            TaskMapping::Spatial(d) => write!(f, "spatial({})", dims(d)),
            TaskMapping::Repeat(d) => write!(f, "repeat({})", dims(d)),
            TaskMapping::Composed(a, b) => write!(f, "{a} * {b}"),
        }
    }
}

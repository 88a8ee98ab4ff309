//! Task mappings (Hidet, seed 002 section 5.1): how tasks are assigned to workers and in
//! which order each worker runs its tasks.
//!
//! A mapping has `num_workers` workers and a task shape `d`. `spatial(d)` gives each of
//! `prod(d)` workers one task (row-major); `repeat(d)` gives one worker every task of `d`,
//! in row-major order. Composition `f1 * f2` has `n1 * n2` workers and task shape
//! `d1 ⊙ d2`, with `f3(w) = [t1 ⊙ d2 + t2 | t1 ∈ f1(w / n2), t2 ∈ f2(w % n2)]`: `f1`
//! distributes groups of tasks over groups of workers, `f2` the tasks of a group over the
//! workers of a group. Composition is associative.
//!
//! The paper's cooperative load of a 64x8 tile of A by 128 threads, 4 tasks each:
//!
//! ```
//! use weft_ir::mapping::{repeat, spatial};
//!
//! let m = repeat(&[4, 1]) * spatial(&[16, 8]);
//! assert_eq!((m.num_workers(), m.task_shape()), (128, vec![64, 8]));
//! // worker 0  -> (0, 0) (16, 0) (32, 0) (48, 0)
//! // worker 1  -> (0, 1) (16, 1) (32, 1) (48, 1)
//! // worker 9  -> (1, 1) (17, 1) (33, 1) (49, 1)
//! // worker 127 -> (15, 7) (31, 7) (47, 7) (63, 7)
//! assert_eq!(m.worker_tasks(9), vec![vec![1, 1], vec![17, 1], vec![33, 1], vec![49, 1]]);
//! ```
//!
//! In the IR, a mapping applied to a worker expression is a loop statement
//! ([`crate::func::MappingLoop`], [`crate::kernel::KMapping`]); lowering
//! ([`crate::lower::mapping::expand`]) turns it into ordinary loops and lets.

use std::ops::Mul;

use crate::dtype::DType;

/// A task mapping. Build with [`spatial`], [`repeat`] and `*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskMapping {
    Spatial(Vec<i64>),
    Repeat(Vec<i64>),
    Composed(Box<TaskMapping>, Box<TaskMapping>),
}

/// `spatial(d0, d1, ...)`: `prod(d)` workers, one task each, assigned row-major.
///
/// ```
/// use weft_ir::mapping::spatial;
///
/// // spatial(2, 3): worker -> task
/// //   0 -> (0, 0)   1 -> (0, 1)   2 -> (0, 2)
/// //   3 -> (1, 0)   4 -> (1, 1)   5 -> (1, 2)
/// let m = spatial(&[2, 3]);
/// assert_eq!(m.num_workers(), 6);
/// assert_eq!(m.worker_tasks(4), vec![vec![1, 1]]);
/// ```
pub fn spatial(shape: &[i64]) -> TaskMapping {
    TaskMapping::Spatial(shape.to_vec())
}

/// `repeat(d0, d1, ...)`: one worker runs all `prod(d)` tasks, in row-major order.
///
/// ```
/// use weft_ir::mapping::repeat;
///
/// // repeat(2, 2): worker 0 -> (0, 0) (0, 1) (1, 0) (1, 1)
/// let m = repeat(&[2, 2]);
/// assert_eq!(m.num_workers(), 1);
/// assert_eq!(m.worker_tasks(0), vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
/// ```
pub fn repeat(shape: &[i64]) -> TaskMapping {
    TaskMapping::Repeat(shape.to_vec())
}

impl Mul for TaskMapping {
    type Output = TaskMapping;
    /// Composition `self ∘ rhs` (see the module docs). Both sides must have the same
    /// number of task dimensions; [`TaskMapping::check`] reports when they do not.
    ///
    /// ```
    /// use weft_ir::mapping::{repeat, spatial};
    ///
    /// // spatial(2) * repeat(3): 2 workers, 6 tasks; worker w runs 3w, 3w + 1, 3w + 2.
    /// let blocked = spatial(&[2]) * repeat(&[3]);
    /// assert_eq!(blocked.worker_tasks(1), vec![vec![3], vec![4], vec![5]]);
    /// // repeat(3) * spatial(2): worker w runs w, w + 2, w + 4 (strided).
    /// let strided = repeat(&[3]) * spatial(&[2]);
    /// assert_eq!(strided.worker_tasks(1), vec![vec![1], vec![3], vec![5]]);
    /// ```
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

/// Why a mapping is invalid or cannot be expanded. Each variant names the mapping.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    #[error("`{mapping}`: composes mappings of {left} and {right} task dimensions")]
    RankMismatch {
        mapping: String,
        left: usize,
        right: usize,
    },
    #[error("`{mapping}`: extent {extent} of task dimension {dim} is not positive")]
    NonPositiveExtent {
        mapping: String,
        dim: usize,
        extent: i64,
    },
    #[error("`{mapping}`: the {what} does not fit in i32")]
    Overflow {
        mapping: String,
        /// `"worker count"` or `"task count"`.
        what: &'static str,
    },
    #[error("`{mapping}`: {rank} task dimensions but {vars} task variables")]
    TaskVarCount {
        mapping: String,
        rank: usize,
        vars: usize,
    },
    #[error("`{mapping}`: worker `{worker}` is a {dtype}, not an i32")]
    WorkerType {
        mapping: String,
        worker: String,
        dtype: DType,
    },
}

impl TaskMapping {
    /// The number of workers (`prod(d)` for spatial, 1 for repeat, the product for a
    /// composition). Saturates instead of overflowing; [`TaskMapping::check`] reports
    /// counts beyond `i32`.
    pub fn num_workers(&self) -> i64 {
        match self {
            TaskMapping::Spatial(d) => d.iter().fold(1i64, |a, &x| a.saturating_mul(x)),
            TaskMapping::Repeat(_) => 1,
            TaskMapping::Composed(a, b) => a.num_workers().saturating_mul(b.num_workers()),
        }
    }

    /// The task shape: `d` for spatial and repeat, the elementwise product for a
    /// composition (meaningful when both sides have the same rank).
    pub fn task_shape(&self) -> Vec<i64> {
        match self {
            TaskMapping::Spatial(d) | TaskMapping::Repeat(d) => d.clone(),
            TaskMapping::Composed(a, b) => a
                .task_shape()
                .iter()
                .zip(b.task_shape())
                .map(|(&x, y)| x.saturating_mul(y))
                .collect(),
        }
    }

    /// The number of task dimensions.
    pub fn rank(&self) -> usize {
        match self {
            TaskMapping::Spatial(d) | TaskMapping::Repeat(d) => d.len(),
            TaskMapping::Composed(a, _) => a.rank(),
        }
    }

    /// Checks that every composition joins mappings of one rank, that every extent is
    /// positive, and that the worker and task counts fit the `i32` index arithmetic.
    ///
    /// ```
    /// use weft_ir::mapping::{MappingError, repeat, spatial};
    ///
    /// assert!((spatial(&[4, 8]) * repeat(&[2, 2])).check().is_ok());
    /// assert!(matches!(
    ///     (spatial(&[4]) * repeat(&[2, 2])).check(),
    ///     Err(MappingError::RankMismatch { left: 1, right: 2, .. })
    /// ));
    /// ```
    pub fn check(&self) -> Result<(), MappingError> {
        self.check_parts(self)?;
        let fits = |v: Option<i64>| v.is_some_and(|v| v <= i32::MAX as i64);
        let workers = self.leaves().iter().try_fold(1i64, |a, l| match l {
            TaskMapping::Spatial(d) => d.iter().try_fold(a, |a, &x| a.checked_mul(x)),
            _ => Some(a),
        });
        if !fits(workers) {
            return Err(MappingError::Overflow {
                mapping: self.to_string(),
                what: "worker count",
            });
        }
        let tasks = self.leaves().iter().try_fold(1i64, |a, l| match l {
            TaskMapping::Spatial(d) | TaskMapping::Repeat(d) => {
                d.iter().try_fold(a, |a, &x| a.checked_mul(x))
            }
            TaskMapping::Composed(..) => Some(a),
        });
        if !fits(tasks) {
            return Err(MappingError::Overflow {
                mapping: self.to_string(),
                what: "task count",
            });
        }
        Ok(())
    }

    fn check_parts(&self, whole: &TaskMapping) -> Result<(), MappingError> {
        match self {
            TaskMapping::Spatial(d) | TaskMapping::Repeat(d) => {
                match d.iter().enumerate().find(|&(_, &x)| x <= 0) {
                    Some((dim, &extent)) => Err(MappingError::NonPositiveExtent {
                        mapping: whole.to_string(),
                        dim,
                        extent,
                    }),
                    None => Ok(()),
                }
            }
            TaskMapping::Composed(a, b) => {
                a.check_parts(whole)?;
                b.check_parts(whole)?;
                if a.rank() != b.rank() {
                    return Err(MappingError::RankMismatch {
                        mapping: whole.to_string(),
                        left: a.rank(),
                        right: b.rank(),
                    });
                }
                Ok(())
            }
        }
    }

    /// The spatial and repeat mappings this one composes, left to right (by
    /// associativity, the composition of the list equals the tree).
    pub(crate) fn leaves(&self) -> Vec<&TaskMapping> {
        match self {
            TaskMapping::Composed(a, b) => {
                let mut l = a.leaves();
                l.extend(b.leaves());
                l
            }
            leaf => vec![leaf],
        }
    }

    /// The tasks of worker `w`, in the order it runs them (empty for a worker outside
    /// `0..num_workers`). Meaningful for a mapping that passes [`TaskMapping::check`].
    ///
    /// ```
    /// use weft_ir::mapping::{repeat, spatial};
    ///
    /// // spatial(2, 1) * repeat(1, 2): worker -> tasks of the 2x2 domain
    /// //   0 -> (0, 0) (0, 1)
    /// //   1 -> (1, 0) (1, 1)
    /// let m = spatial(&[2, 1]) * repeat(&[1, 2]);
    /// assert_eq!(m.worker_tasks(1), vec![vec![1, 0], vec![1, 1]]);
    /// assert!(m.worker_tasks(2).is_empty());
    /// ```
    pub fn worker_tasks(&self, w: i64) -> Vec<Vec<i64>> {
        if w < 0 || w >= self.num_workers() {
            return Vec::new();
        }
        match self {
            TaskMapping::Spatial(d) => vec![unravel(w, d)],
            TaskMapping::Repeat(d) => {
                let total = d.iter().fold(1i64, |a, &x| a.saturating_mul(x.max(0)));
                (0..total).map(|i| unravel(i, d)).collect()
            }
            TaskMapping::Composed(f1, f2) => {
                let n2 = f2.num_workers();
                let d2 = f2.task_shape();
                let inner = f2.worker_tasks(w % n2);
                let mut out = Vec::new();
                for t1 in f1.worker_tasks(w / n2) {
                    for t2 in &inner {
                        out.push(
                            t1.iter()
                                .zip(&d2)
                                .zip(t2)
                                .map(|((&a, &d), &b)| a * d + b)
                                .collect(),
                        );
                    }
                }
                out
            }
        }
    }
}

/// The row-major multi-index of `i` in `shape` (extents positive).
fn unravel(mut i: i64, shape: &[i64]) -> Vec<i64> {
    let mut idx = vec![0; shape.len()];
    for (slot, &d) in idx.iter_mut().zip(shape).rev() {
        if d > 0 {
            *slot = i % d;
            i /= d;
        }
    }
    idx
}

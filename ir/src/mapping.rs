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
//! ([`crate::func::MappingLoop`], [`crate::kernel::KMapping`]); [`expand`] turns it into
//! ordinary loops and lets.

use std::collections::HashSet;
use std::ops::Mul;

use crate::arith::{Bounds, bound, simplify_with};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, Var};
use crate::kernel::{KMapping, KStmt};

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
    fn leaves(&self) -> Vec<&TaskMapping> {
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

/// Replaces every [`KStmt::Mapping`] in `stmt` (nested ones too) by ordinary code:
///
/// - a guard `if worker < num_workers` unless `bounds` prove it;
/// - one unrolled loop per dimension of extent > 1 of every `repeat` factor, outer factors
///   outside, over a fresh variable named after the task variable (`i_r0`, `i_r1`, ...,
///   chosen not to clash with any name in `stmt`);
/// - `let task_var = index` for each dimension, where the index adds up the repeat loop
///   variables and the spatial coordinates of the worker (`worker / stride % extent`,
///   with C `/` and `%`, as workers are non-negative), each scaled by the extents of the
///   factors to its right; simplified with `bounds`.
///
/// `bounds` should give the thread indices' extents (and any enclosing variables');
/// loop and task variables are added as the pass descends.
///
/// ```
/// use weft_ir::arith::Bounds;
/// use weft_ir::dtype::DType;
/// use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis, Var};
/// use weft_ir::kernel::{KMapping, KStmt};
/// use weft_ir::mapping::{expand, repeat, spatial};
///
/// let smem = Buffer::new("As", vec![64 * 8], DType::F32, Scope::Shared);
/// let (i, k) = (Var::index("i"), Var::index("k"));
/// let stmt = KStmt::Mapping(Box::new(KMapping {
///     mapping: repeat(&[4, 1]) * spatial(&[16, 8]),
///     worker: Expr::Builtin(ThreadAxis::ThreadIdxX),
///     task_vars: vec![i.clone(), k.clone()],
///     body: KStmt::Store { buffer: smem, index: i.expr() * 8 + k.expr(), value: Expr::f32(0.0), lanes: 1 },
/// }));
/// let mut bounds = Bounds::new();
/// bounds.set_axis(ThreadAxis::ThreadIdxX, 128);
/// // for i_r0 in range(4):
/// //     i = i_r0 * 16 + threadIdx.x / 8
/// //     k = threadIdx.x % 8
/// //     As[i * 8 + k] = 0.0
/// let KStmt::For { var, extent: 4, body, .. } = expand(&stmt, &bounds).unwrap() else { panic!() };
/// assert_eq!(var.name(), "i_r0");
/// assert!(matches!(*body, KStmt::Let { .. }));
/// ```
pub fn expand(stmt: &KStmt, bounds: &Bounds) -> Result<KStmt, MappingError> {
    let mut names = HashSet::new();
    stmt.visit(&mut |s| match s {
        KStmt::For { var, .. } | KStmt::Let { var, .. } => {
            names.insert(var.name().to_string());
        }
        KStmt::Mapping(m) => names.extend(m.task_vars.iter().map(|v| v.name().to_string())),
        _ => {}
    });
    stmt.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            if let Expr::Var(v) = e {
                names.insert(v.name().to_string());
            }
        })
    });
    let mut ex = Expander {
        names,
        bounds: bounds.clone(),
    };
    ex.stmt(stmt)
}

struct Expander {
    /// Every variable name in use, so fresh loop variables never shadow one.
    names: HashSet<String>,
    bounds: Bounds,
}

impl Expander {
    fn fresh(&mut self, base: &Var) -> Var {
        let mut k = 0;
        loop {
            let name = format!("{}_r{k}", base.name());
            if self.names.insert(name.clone()) {
                return base.renamed(name);
            }
            k += 1;
        }
    }

    fn stmt(&mut self, s: &KStmt) -> Result<KStmt, MappingError> {
        Ok(match s {
            KStmt::Seq(items) => KStmt::Seq(
                items
                    .iter()
                    .map(|i| self.stmt(i))
                    .collect::<Result<_, _>>()?,
            ),
            KStmt::For {
                var,
                extent,
                unroll,
                body,
            } => {
                let saved = self.bounds.clone();
                self.bounds.set_extent(var, *extent);
                let body = self.stmt(body);
                self.bounds = saved;
                KStmt::For {
                    var: var.clone(),
                    extent: *extent,
                    unroll: *unroll,
                    body: Box::new(body?),
                }
            }
            KStmt::If {
                cond,
                then,
                otherwise,
            } => KStmt::If {
                cond: cond.clone(),
                then: Box::new(self.stmt(then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.stmt(o)?)),
                    None => None,
                },
            },
            KStmt::Let { var, value, body } => {
                let saved = self.bounds.clone();
                match bound(value, &self.bounds) {
                    Some((lo, hi)) => self.bounds.set_range(var, lo, hi),
                    None => self.bounds.remove(var),
                }
                let body = self.stmt(body);
                self.bounds = saved;
                KStmt::Let {
                    var: var.clone(),
                    value: value.clone(),
                    body: Box::new(body?),
                }
            }
            KStmt::Store { .. } | KStmt::Barrier | KStmt::Comment(_) | KStmt::Frag(_) => s.clone(),
            KStmt::Mapping(m) => self.mapping(m)?,
        })
    }

    fn mapping(&mut self, m: &KMapping) -> Result<KStmt, MappingError> {
        let map = &m.mapping;
        map.check()?;
        let shape = map.task_shape();
        let rank = shape.len();
        if m.task_vars.len() != rank {
            return Err(MappingError::TaskVarCount {
                mapping: map.to_string(),
                rank,
                vars: m.task_vars.len(),
            });
        }
        if m.worker.dtype() != DType::I32 {
            return Err(MappingError::WorkerType {
                mapping: map.to_string(),
                worker: m.worker.to_string(),
                dtype: m.worker.dtype(),
            });
        }
        let n = map.num_workers();
        let proven = bound(&m.worker, &self.bounds).is_some_and(|(_, hi)| hi < n);
        let saved = self.bounds.clone();
        self.narrow_worker(&m.worker, n);

        let leaves = map.leaves();
        // The worker stride and the per-dimension task stride of each factor: the
        // products of the worker counts and extents of the factors to its right.
        let mut w_stride = vec![1i64; leaves.len()];
        let mut t_stride = vec![vec![1i64; rank]; leaves.len()];
        for i in (0..leaves.len().saturating_sub(1)).rev() {
            let next = &leaves[i + 1];
            w_stride[i] = w_stride[i + 1] * next.num_workers();
            for (j, &d) in next.task_shape().iter().enumerate() {
                t_stride[i][j] = t_stride[i + 1][j] * d;
            }
        }
        let mut loops = Vec::new();
        let mut terms: Vec<Vec<Expr>> = vec![Vec::new(); rank];
        for (i, leaf) in leaves.iter().enumerate() {
            let d = leaf.task_shape();
            let spatial = matches!(leaf, TaskMapping::Spatial(_));
            // Row-major strides of the worker's coordinates inside a spatial factor.
            let mut inner = vec![1i64; rank];
            for j in (0..rank.saturating_sub(1)).rev() {
                inner[j] = inner[j + 1] * d[j + 1];
            }
            for j in 0..rank {
                if d[j] <= 1 {
                    continue;
                }
                let coord = if spatial {
                    let div = w_stride[i] * inner[j];
                    let mut e = m.worker.clone();
                    if div > 1 {
                        e = Expr::binary(BinOp::Div, e, Expr::int(div));
                    }
                    Expr::binary(BinOp::Mod, e, Expr::int(d[j]))
                } else {
                    let r = self.fresh(&m.task_vars[j]);
                    self.bounds.set_extent(&r, d[j]);
                    loops.push((r.clone(), d[j]));
                    r.expr()
                };
                let s = t_stride[i][j];
                terms[j].push(if s > 1 { coord * s } else { coord });
            }
        }
        let values: Vec<Expr> = terms
            .into_iter()
            .map(|t| {
                let sum = t.into_iter().reduce(|a, b| a + b).unwrap_or(Expr::int(0));
                simplify_with(&sum, &self.bounds)
            })
            .collect();
        for (v, &d) in m.task_vars.iter().zip(&shape) {
            self.bounds.set_extent(v, d);
        }
        let body = self.stmt(&m.body);
        self.bounds = saved;
        let mut out = body?;
        for (v, value) in m.task_vars.iter().zip(values).rev() {
            out = KStmt::Let {
                var: v.clone(),
                value,
                body: Box::new(out),
            };
        }
        // Repeat loops are unrolled, as Hidet does: a worker's tasks are few, and their
        // coordinates often index per-thread arrays that must stay in registers.
        for (r, extent) in loops.into_iter().rev() {
            out = KStmt::For {
                var: r,
                extent,
                unroll: true,
                body: Box::new(out),
            };
        }
        if !proven {
            out = KStmt::If {
                cond: m.worker.clone().lt(n),
                then: Box::new(out),
                otherwise: None,
            };
        }
        Ok(out)
    }

    /// Inside the guard the worker lies in `0..n` (workers are non-negative): tell the
    /// simplifier, where the worker is a variable or a thread index.
    fn narrow_worker(&mut self, worker: &Expr, n: i64) {
        match worker {
            Expr::Var(v) => {
                let (lo, hi) = self.bounds.get(v).unwrap_or((0, n - 1));
                self.bounds.set_range(v, lo.max(0), hi.min(n - 1));
            }
            Expr::Builtin(a) => {
                let hi = self.bounds.axis(*a).map_or(n - 1, |(_, hi)| hi.min(n - 1));
                self.bounds.set_axis(*a, hi + 1);
            }
            _ => {}
        }
    }
}

//! Task-mapping expansion: the lowering pass that replaces every [`KStmt::Mapping`] by
//! ordinary loops, lets and a guard. The mapping values themselves ([`TaskMapping`],
//! [`spatial`](crate::mapping::spatial), [`repeat`](crate::mapping::repeat), composition,
//! [`MappingError`]) live in [`crate::mapping`].

use std::collections::HashSet;

use crate::arith::{Bounds, bound, simplify_with};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, Var};
use crate::kernel::{KMapping, KStmt};
use crate::mapping::{MappingError, TaskMapping};

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
/// use weft_ir::lower::mapping::expand;
/// use weft_ir::mapping::{repeat, spatial};
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
            KStmt::Store { .. }
            | KStmt::Barrier
            | KStmt::Comment(_)
            | KStmt::Frag(_)
            | KStmt::Fence
            | KStmt::AtomicAdd(_)
            | KStmt::Prefetch { .. }
            | KStmt::Grid(_) => s.clone(),
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

//! Loop transformations: `split`, `fuse`, `reorder`, `bind`, `unroll`, `vectorize`.

use super::{LoopRV, Result, Schedule, ScheduleError, enclosing_loops, feeds_reduce, tidy};
use crate::expr::{Expr, ThreadAxis, Var};
use crate::func::{For, ForKind, Func, IterKind, Stmt};

fn kind_name(k: ForKind) -> String {
    match k {
        ForKind::Serial => "serial".into(),
        ForKind::Unrolled => "unrolled".into(),
        ForKind::Vectorized => "vectorized".into(),
        ForKind::Bound(a) => format!("bound to {a}"),
    }
}

fn loop_at<'a>(func: &'a Func, path: &[usize]) -> &'a For {
    match func.body.at(path) {
        Some(Stmt::For(f)) => f,
        // Paths come from `find_loop` on this same Func.
        _ => unreachable!("path does not lead to a loop"),
    }
}

fn loop_at_mut<'a>(func: &'a mut Func, path: &[usize]) -> &'a mut For {
    match func.body.at_mut(path) {
        Some(Stmt::For(f)) => f,
        _ => unreachable!("path does not lead to a loop"),
    }
}

impl Schedule {
    /// Splits a loop into nested loops whose extents are `factors`, outermost first. At
    /// most one factor may be `None`; it is inferred as `ceil(extent / product(others))`.
    /// When the factors multiply to more than the extent, the blocks below get a
    /// predicate (`T.where`) instead of an error.
    ///
    /// Before, `sch.split(i, [None, 128])` on a 1000-long loop:
    /// ```text
    /// for i in range(1000):
    ///     with T.block("C"):
    ///         vi = T.axis.spatial(1000, i)
    /// ```
    /// After:
    /// ```text
    /// for i_0, i_1 in T.grid(8, 128):
    ///     with T.block("C"):
    ///         vi = T.axis.spatial(1000, i_0 * 128 + i_1)
    ///         T.where(i_0 * 128 + i_1 < 1000)
    /// ```
    pub fn split(&mut self, loop_: LoopRV, factors: &[Option<i64>]) -> Result<Vec<LoopRV>> {
        let var = self.loop_var(loop_)?;
        let path = self.loop_path(&var)?;
        let name = var.name().to_string();
        let err = |msg: String| ScheduleError::SplitFactors {
            loop_: name.clone(),
            msg,
        };
        let (extent, kind) = {
            let f = loop_at(&self.func, &path);
            (f.extent, f.kind)
        };
        if factors.is_empty() {
            return Err(err("no factors given".into()));
        }
        if factors.iter().filter(|f| f.is_none()).count() > 1 {
            return Err(err("at most one factor may be None (inferred)".into()));
        }
        if let Some(bad) = factors.iter().flatten().find(|f| **f <= 0) {
            return Err(err(format!("factor {bad} is not positive")));
        }
        if !matches!(kind, ForKind::Serial | ForKind::Unrolled) {
            return Err(ScheduleError::LoopKind {
                primitive: "split",
                loop_: name,
                kind: kind_name(kind),
                what: "split",
            });
        }
        let known: i64 = factors
            .iter()
            .flatten()
            .try_fold(1i64, |a, &f| a.checked_mul(f))
            .filter(|p| *p <= i32::MAX as i64)
            .ok_or_else(|| err("the factors' product overflows i32".into()))?;
        let given = factors.to_vec();
        let factors: Vec<i64> = factors
            .iter()
            .map(|f| f.unwrap_or((extent + known - 1) / known))
            .collect();
        let product: i64 = factors.iter().product();
        if product < extent {
            return Err(ScheduleError::SplitNotCovering {
                loop_: name,
                extent,
                factors: format!("{factors:?}"),
                product,
            });
        }
        let new_vars = self.transact(|func| {
            // Loop names follow TVM (`i_0`, `i_1`) and may repeat across nests: variables
            // are identified by identity, and lowering makes emitted names unique.
            let vars: Vec<Var> = (0..factors.len())
                .map(|k| var.renamed(format!("{name}_{k}")))
                .collect();
            // i = v0 * (f1 * f2 ...) + v1 * (f2 ...) + ... + v_last
            let mut repl = Expr::int(0);
            for (k, v) in vars.iter().enumerate() {
                let stride: i64 = factors[k + 1..].iter().product();
                repl = repl + v.expr() * Expr::int(stride);
            }
            let repl = tidy(&repl);
            let f = loop_at_mut(func, &path);
            let mut body = std::mem::replace(&mut f.body, Stmt::Seq(Vec::new()));
            body.rewrite_loop_exprs(&mut |e| tidy(&e.substitute1(&var, &repl)));
            if product > extent {
                let guard = repl.clone().lt(Expr::int(extent));
                add_predicate(&mut body, &guard);
            }
            let mut stmt = body;
            for (k, v) in vars.iter().enumerate().rev() {
                stmt = Stmt::For(Box::new(For {
                    var: v.clone(),
                    extent: factors[k],
                    kind: if k == vars.len() - 1 {
                        kind
                    } else {
                        ForKind::Serial
                    },
                    body: stmt,
                }));
            }
            if let Some(s) = func.body.at_mut(&path) {
                *s = stmt;
            }
            Ok(vars)
        })?;
        let out: Vec<LoopRV> = new_vars.into_iter().map(|v| self.new_loop_rv(v)).collect();
        self.record(super::Inst::Split {
            loop_,
            factors: given,
            out: out.clone(),
        });
        Ok(out)
    }

    /// Fuses adjacent loops (each the only statement in the body of the one before) into
    /// one loop of the product extent.
    ///
    /// Before, `sch.fuse(b, c)`:
    /// ```text
    /// for b, c in T.grid(3, 4):
    ///     ... vb = T.axis.spatial(3, b); vc = T.axis.spatial(4, c)
    /// ```
    /// After:
    /// ```text
    /// for b_c_fused in range(12):
    ///     ... vb = T.axis.spatial(3, b_c_fused // 4); vc = T.axis.spatial(4, b_c_fused % 4)
    /// ```
    pub fn fuse(&mut self, loops: &[LoopRV]) -> Result<LoopRV> {
        let vars: Vec<Var> = loops
            .iter()
            .map(|l| self.loop_var(*l))
            .collect::<Result<_>>()?;
        if vars.is_empty() {
            return Err(ScheduleError::TooLarge {
                primitive: "fuse",
                msg: "no loops given".into(),
            });
        }
        for (i, v) in vars.iter().enumerate() {
            if vars[..i].contains(v) {
                return Err(ScheduleError::DuplicateLoop {
                    primitive: "fuse",
                    loop_: v.name().to_string(),
                });
            }
        }
        let path = self.loop_path(&vars[0])?;
        // Check adjacency and kinds.
        let mut extents = Vec::new();
        {
            let mut f = loop_at(&self.func, &path);
            for (i, v) in vars.iter().enumerate() {
                if &f.var != v {
                    return Err(ScheduleError::FuseNotAdjacent {
                        outer: vars[i - 1].name().to_string(),
                        inner: v.name().to_string(),
                    });
                }
                if f.kind != ForKind::Serial {
                    return Err(ScheduleError::LoopKind {
                        primitive: "fuse",
                        loop_: v.name().to_string(),
                        kind: kind_name(f.kind),
                        what: "fused",
                    });
                }
                extents.push(f.extent);
                if i + 1 < vars.len() {
                    match &f.body {
                        Stmt::For(inner) => f = inner,
                        _ => {
                            self.loop_path(&vars[i + 1])?;
                            return Err(ScheduleError::FuseNotAdjacent {
                                outer: v.name().to_string(),
                                inner: vars[i + 1].name().to_string(),
                            });
                        }
                    }
                }
            }
        }
        // A loop feeding spatial variables must not merge with one feeding reduce
        // variables of the same block: the init would no longer run first.
        if let Some(Stmt::For(top)) = self.func.body.at(&path) {
            for r in top.body.blocks() {
                let feeds = |v: &Var, kind: IterKind| {
                    r.block
                        .iter_vars
                        .iter()
                        .zip(&r.bindings)
                        .any(|(iv, b)| iv.kind == kind && b.uses_var(v))
                };
                let s = vars.iter().find(|v| feeds(v, IterKind::Spatial));
                let red = vars.iter().find(|v| feeds(v, IterKind::Reduce));
                if let (Some(s), Some(red)) = (s, red) {
                    return Err(ScheduleError::FuseMixesIterKinds {
                        spatial: s.name().to_string(),
                        reduce: red.name().to_string(),
                        block: r.block.name.clone(),
                    });
                }
            }
        }
        let total = extents
            .iter()
            .try_fold(1i64, |a, &e| a.checked_mul(e))
            .filter(|p| *p <= i32::MAX as i64)
            .ok_or(ScheduleError::TooLarge {
                primitive: "fuse",
                msg: "the fused extent overflows i32".into(),
            })?;
        if vars.len() == 1 {
            return Ok(loops[0]);
        }
        let fused = self.transact(|func| {
            let base: Vec<&str> = vars.iter().map(|v| v.name()).collect();
            let fused = vars[0].renamed(format!("{}_fused", base.join("_")));
            // Peel the nest.
            let mut f = loop_at(func, &path);
            for _ in 1..vars.len() {
                if let Stmt::For(inner) = &f.body {
                    f = inner;
                }
            }
            let mut body = f.body.clone();
            // v_k = fused // (e_{k+1} * ... ) % e_k (no division for the innermost loop,
            // no modulo for the outermost).
            for (k, v) in vars.iter().enumerate() {
                let inner: i64 = extents[k + 1..].iter().product();
                let mut e = fused.expr();
                if inner > 1 {
                    e = e.floordiv(Expr::int(inner));
                }
                if k > 0 {
                    e = e.floormod(Expr::int(extents[k]));
                }
                let e = tidy(&e);
                body.rewrite_loop_exprs(&mut |x| tidy(&x.substitute1(v, &e)));
            }
            let stmt = Stmt::For(Box::new(For {
                var: fused.clone(),
                extent: total,
                kind: ForKind::Serial,
                body,
            }));
            if let Some(s) = func.body.at_mut(&path) {
                *s = stmt;
            }
            Ok(fused)
        })?;
        let out = self.new_loop_rv(fused);
        self.record(super::Inst::Fuse {
            loops: loops.to_vec(),
            out,
        });
        Ok(out)
    }

    /// Reorders loops of one nest. The loops must lie on one path from the root to a
    /// block, with nothing but loops between the outermost and the innermost given loop;
    /// loops not given stay where they are.
    ///
    /// Before, `sch.reorder(j, i)`:
    /// ```text
    /// for i, j in T.grid(4, 8):
    /// ```
    /// After:
    /// ```text
    /// for j, i in T.grid(8, 4):
    /// ```
    pub fn reorder(&mut self, loops: &[LoopRV]) -> Result<()> {
        let vars: Vec<Var> = loops
            .iter()
            .map(|l| self.loop_var(*l))
            .collect::<Result<_>>()?;
        for (i, v) in vars.iter().enumerate() {
            if vars[..i].contains(v) {
                return Err(ScheduleError::DuplicateLoop {
                    primitive: "reorder",
                    loop_: v.name().to_string(),
                });
            }
        }
        if vars.len() < 2 {
            self.record(super::Inst::Reorder {
                loops: loops.to_vec(),
            });
            return Ok(());
        }
        let mut paths: Vec<(Vec<usize>, Var)> = vars
            .iter()
            .map(|v| self.loop_path(v).map(|p| (p, v.clone())))
            .collect::<Result<_>>()?;
        paths.sort_by_key(|(p, _)| p.len());
        for w in paths.windows(2) {
            if !w[1].0.starts_with(&w[0].0) {
                return Err(ScheduleError::ReorderNotOneNest {
                    a: w[0].1.name().to_string(),
                    b: w[1].1.name().to_string(),
                });
            }
        }
        let (top, _) = paths[0].clone();
        let (bottom, _) = paths[paths.len() - 1].clone();
        // The chain of loops from top to bottom must be perfectly nested.
        let mut chain: Vec<For> = Vec::new();
        let mut s = self.func.body.at(&top);
        let mut depth = top.len();
        while let Some(Stmt::For(f)) = s {
            chain.push(For {
                var: f.var.clone(),
                extent: f.extent,
                kind: f.kind,
                body: Stmt::Seq(Vec::new()),
            });
            if depth == bottom.len() {
                break;
            }
            match &f.body {
                Stmt::For(_) => {
                    s = Some(&f.body);
                    depth += 1;
                }
                _ => {
                    return Err(ScheduleError::ReorderNotPerfect {
                        loop_: f.var.name().to_string(),
                    });
                }
            }
        }
        let innermost_body = match self.func.body.at(&bottom) {
            Some(Stmt::For(f)) => f.body.clone(),
            _ => unreachable!("bottom is a loop path"),
        };
        // Slots of the chain that hold given loops get the given loops in the new order.
        let mut given = vars.iter();
        let mut headers: Vec<For> = Vec::new();
        for c in &chain {
            if vars.contains(&c.var) {
                let v = given.next().cloned().unwrap_or_else(|| c.var.clone());
                let orig = chain
                    .iter()
                    .find(|x| x.var == v)
                    .cloned()
                    .unwrap_or(c.clone());
                headers.push(orig);
            } else {
                headers.push(c.clone());
            }
        }
        self.transact(|func| {
            let mut stmt = innermost_body;
            for h in headers.into_iter().rev() {
                stmt = Stmt::For(Box::new(For { body: stmt, ..h }));
            }
            if let Some(s) = func.body.at_mut(&top) {
                *s = stmt;
            }
            Ok(())
        })?;
        self.record(super::Inst::Reorder {
            loops: loops.to_vec(),
        });
        Ok(())
    }

    /// Binds a loop to a GPU index: one iteration per block or thread. All loops bound to
    /// one axis in one kernel must have the same extent, and a reduction loop cannot be
    /// bound.
    ///
    /// Before, `sch.bind(i_0, "blockIdx.x")`:
    /// ```text
    /// for i_0 in range(8):
    /// ```
    /// After:
    /// ```text
    /// for i_0 in T.thread_binding(8, thread="blockIdx.x"):
    /// ```
    pub fn bind(&mut self, loop_: LoopRV, axis: ThreadAxis) -> Result<()> {
        let var = self.loop_var(loop_)?;
        let path = self.loop_path(&var)?;
        let f = loop_at(&self.func, &path);
        if f.kind != ForKind::Serial {
            return Err(ScheduleError::LoopKind {
                primitive: "bind",
                loop_: var.name().to_string(),
                kind: kind_name(f.kind),
                what: "bound",
            });
        }
        if let Some((block, rv)) = feeds_reduce(&f.body, &var) {
            return Err(ScheduleError::ReduceLoop {
                primitive: "bind",
                loop_: var.name().to_string(),
                block,
                var: rv,
                what: "bound to a thread axis",
            });
        }
        let limit = if axis.is_block() {
            i32::MAX as i64
        } else {
            1024
        };
        if f.extent > limit {
            return Err(ScheduleError::TooLarge {
                primitive: "bind",
                msg: format!(
                    "loop `{}` has extent {}, more than {} allows ({limit})",
                    var.name(),
                    f.extent,
                    axis
                ),
            });
        }
        // One extent per axis in a kernel (the root-level statement holding the loop).
        let root: Vec<usize> = path.iter().take(1).copied().collect();
        let kernel = if matches!(self.func.body, Stmt::Seq(_)) {
            self.func.body.at(&root)
        } else {
            Some(&self.func.body)
        };
        if let Some(k) = kernel {
            let mut clash = None;
            k.visit(&mut |s| {
                if let Stmt::For(o) = s
                    && o.kind == ForKind::Bound(axis)
                    && o.extent != f.extent
                    && clash.is_none()
                {
                    clash = Some((o.var.name().to_string(), o.extent));
                }
            });
            if let Some((other, other_extent)) = clash {
                return Err(ScheduleError::ThreadExtentMismatch {
                    axis,
                    loop_: var.name().to_string(),
                    extent: f.extent,
                    other,
                    other_extent,
                });
            }
        }
        // A block that uses two loops bound to the same axis would see only i == j.
        for r in f.body.blocks() {
            if !r.bindings.iter().any(|b| b.uses_var(&var)) {
                continue;
            }
            let Some(bp) = super::find_block(&self.func.body, r.block.id) else {
                continue;
            };
            for (_, l) in enclosing_loops(&self.func.body, &bp) {
                if l.kind == ForKind::Bound(axis)
                    && l.var != var
                    && r.bindings.iter().any(|b| b.uses_var(&l.var))
                {
                    return Err(ScheduleError::AxisBoundTwice {
                        axis,
                        loop_: var.name().to_string(),
                        other: l.var.name().to_string(),
                        block: r.block.name.clone(),
                    });
                }
            }
        }
        self.transact(|func| {
            loop_at_mut(func, &path).kind = ForKind::Bound(axis);
            Ok(())
        })?;
        self.record(super::Inst::Bind { loop_, axis });
        Ok(())
    }

    /// Marks a loop to be unrolled fully by the emitter.
    ///
    /// Before: `for k_1 in range(4):` — after `sch.unroll(k_1)`: `for k_1 in T.unroll(4):`
    pub fn unroll(&mut self, loop_: LoopRV) -> Result<()> {
        self.set_kind(loop_, ForKind::Unrolled, "unroll", "unrolled")?;
        self.record(super::Inst::Unroll { loop_ });
        Ok(())
    }

    /// Marks a loop as vector lanes. Contiguous, aligned copies under it become `float4`
    /// (`vec4<f32>`) accesses; anything else is emitted as an unrolled loop. A loop that
    /// feeds a reduce variable cannot be vectorized.
    ///
    /// Before: `for ax2 in range(4):` — after `sch.vectorize(ax2)`:
    /// `for ax2 in T.vectorized(4):`
    pub fn vectorize(&mut self, loop_: LoopRV) -> Result<()> {
        let var = self.loop_var(loop_)?;
        let path = self.loop_path(&var)?;
        let f = loop_at(&self.func, &path);
        if let Some((block, rv)) = feeds_reduce(&f.body, &var) {
            return Err(ScheduleError::ReduceLoop {
                primitive: "vectorize",
                loop_: var.name().to_string(),
                block,
                var: rv,
                what: "vectorized",
            });
        }
        self.set_kind(loop_, ForKind::Vectorized, "vectorize", "vectorized")?;
        self.record(super::Inst::Vectorize { loop_ });
        Ok(())
    }

    fn set_kind(
        &mut self,
        loop_: LoopRV,
        kind: ForKind,
        primitive: &'static str,
        what: &'static str,
    ) -> Result<()> {
        let var = self.loop_var(loop_)?;
        let path = self.loop_path(&var)?;
        let cur = loop_at(&self.func, &path).kind;
        if !matches!(
            cur,
            ForKind::Serial | ForKind::Unrolled | ForKind::Vectorized
        ) {
            return Err(ScheduleError::LoopKind {
                primitive,
                loop_: var.name().to_string(),
                kind: kind_name(cur),
                what,
            });
        }
        self.transact(|func| {
            loop_at_mut(func, &path).kind = kind;
            Ok(())
        })
    }
}

/// Conjoins `guard` to the predicate of every block below `s`.
pub(crate) fn add_predicate(s: &mut Stmt, guard: &Expr) {
    match s {
        Stmt::Block(r) => {
            r.predicate = tidy(&r.predicate.clone().and(guard.clone()));
        }
        Stmt::Seq(items) => items.iter_mut().for_each(|i| add_predicate(i, guard)),
        Stmt::For(f) => add_predicate(&mut f.body, guard),
        Stmt::If {
            then, otherwise, ..
        } => {
            add_predicate(then, guard);
            if let Some(o) = otherwise {
                add_predicate(o, guard);
            }
        }
        Stmt::Mapping(m) => add_predicate(&mut m.body, guard),
        Stmt::Let { body, .. } => add_predicate(body, guard),
        Stmt::Store { .. }
        | Stmt::Barrier
        | Stmt::Frag(_)
        | Stmt::Fence
        | Stmt::AtomicAdd(_)
        | Stmt::Prefetch { .. }
        | Stmt::Grid(_) => {}
    }
}

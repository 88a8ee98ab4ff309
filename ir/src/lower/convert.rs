//! Func statements to kernel statements.

use std::collections::{HashMap, HashSet};

use super::LowerError;
use super::compact::Plan;
use super::vectorize::vectorize;
use crate::arith::{Bounds, simplify_with};
use crate::expr::{Buffer, Expr, Scope, Var};
use crate::func::{AtomicAdd, BlockRealize, ForKind, Func, IterKind, Stmt};
use crate::kernel::{KMapping, KStmt};
use crate::schedule::reduction::conjuncts;

pub(crate) struct Converted {
    pub body: KStmt,
    pub shared: Vec<Buffer>,
    pub locals: Vec<Buffer>,
}

struct Ctx<'a> {
    plan: &'a Plan,
    /// Loop variable -> what replaces it (a thread index for bound loops).
    env: HashMap<Var, Expr>,
    bounds: Bounds,
    /// Reduction blocks whose init is hoisted in front of a loop: loop var -> blocks.
    hoist: HashMap<Var, Vec<BlockRealize>>,
    hoisted: HashSet<u64>,
}

pub(crate) fn convert(
    root: &Stmt,
    func: &Func,
    plan: &Plan,
    grid: [u32; 3],
    block: [u32; 3],
) -> Result<Converted, LowerError> {
    let _ = func;
    let bounds = Bounds::of_launch(grid, block);
    let mut ctx = Ctx {
        plan,
        env: HashMap::new(),
        bounds,
        hoist: HashMap::new(),
        hoisted: HashSet::new(),
    };
    plan_init_hoisting(root, &mut Vec::new(), &mut ctx);
    let body = ctx.stmt(root)?;
    let mut shared = Vec::new();
    let mut locals = Vec::new();
    let mut compacted: Vec<&Buffer> = plan.values().map(|c| &c.buffer).collect();
    compacted.sort_by_key(|b| b.id());
    // Buffers a template declares are used at the shape it gave them (they are not
    // compacted: see `compact::plan`), after the compacted ones, in order of first use.
    let declared = root
        .buffers()
        .into_iter()
        .filter(|b| !plan.contains_key(b) && b.scope() != Scope::Global);
    for b in compacted.into_iter().cloned().chain(declared) {
        match b.scope() {
            Scope::Shared => shared.push(b),
            Scope::Local => locals.push(b),
            Scope::Global => {}
        }
    }
    Ok(Converted {
        body,
        shared,
        locals,
    })
}

/// For each reduction block with an init, the outermost loop from which every loop down to
/// the block feeds only reduce variables: the init runs once, just before that loop.
fn plan_init_hoisting(s: &Stmt, stack: &mut Vec<(Var, ForKind)>, ctx: &mut Ctx) {
    match s {
        Stmt::For(f) => {
            stack.push((f.var.clone(), f.kind));
            plan_init_hoisting(&f.body, stack, ctx);
            stack.pop();
        }
        Stmt::Block(r) if r.block.init.is_some() => {
            let spatial: Vec<&Expr> = r
                .block
                .iter_vars
                .iter()
                .zip(&r.bindings)
                .filter(|(v, _)| v.kind == IterKind::Spatial)
                .map(|(_, b)| b)
                .collect();
            let reduce: Vec<&Expr> = r
                .block
                .iter_vars
                .iter()
                .zip(&r.bindings)
                .filter(|(v, _)| v.kind == IterKind::Reduce)
                .map(|(_, b)| b)
                .collect();
            let mut at = None;
            let mut depth = stack.len();
            for (v, kind) in stack.iter().rev() {
                let feeds_spatial = spatial.iter().any(|b| b.uses_var(v));
                if feeds_spatial || matches!(kind, ForKind::Bound(_)) {
                    break;
                }
                at = Some(v.clone());
                depth -= 1;
            }
            // The init must run once per spatial point: no loop outside the hoisting
            // point may feed a reduce variable.
            let outer_reduce = stack[..depth]
                .iter()
                .any(|(v, _)| reduce.iter().any(|b| b.uses_var(v)));
            if let Some(v) = at.filter(|_| !outer_reduce) {
                ctx.hoist.entry(v).or_default().push((**r).clone());
                ctx.hoisted.insert(r.block.id.0);
            }
        }
        _ => {
            for c in s.children() {
                plan_init_hoisting(c, stack, ctx);
            }
        }
    }
}

impl Ctx<'_> {
    fn expr(&self, e: &Expr) -> Expr {
        let e = e.substitute(&self.env);
        let e = e.rewrite(&mut |x| match x {
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => {
                let (buffer, index) = self.access(&buffer, &indices);
                Expr::Load {
                    buffer,
                    indices: vec![index],
                    lanes,
                }
            }
            x => x,
        });
        simplify_with(&e, &self.bounds)
    }

    /// The buffer actually accessed and the flat index of `buffer[indices]`.
    fn access(&self, buffer: &Buffer, indices: &[Expr]) -> (Buffer, Expr) {
        let (buf, rel): (Buffer, Vec<Expr>) = match self.plan.get(buffer) {
            Some(c) => (
                c.buffer.clone(),
                indices
                    .iter()
                    .zip(&c.start)
                    .zip(&c.stride)
                    .map(|((i, s), g)| {
                        let rel = i.clone() - s.substitute(&self.env);
                        if *g > 1 {
                            rel.floordiv(Expr::int(*g))
                        } else {
                            rel
                        }
                    })
                    .collect(),
            ),
            None => (buffer.clone(), indices.to_vec()),
        };
        let strides = buf.strides();
        let mut flat = Expr::int(0);
        for (i, s) in rel.iter().zip(strides) {
            flat = flat + i.clone() * Expr::int(s);
        }
        (buf, simplify_with(&flat, &self.bounds))
    }

    fn store(&self, buffer: &Buffer, indices: &[Expr], value: &Expr) -> KStmt {
        let idx: Vec<Expr> = indices.iter().map(|i| self.expr(i)).collect();
        let (buffer, index) = self.access(buffer, &idx);
        KStmt::Store {
            buffer,
            index,
            value: self.expr(value),
            lanes: 1,
        }
    }

    fn stmt(&mut self, s: &Stmt) -> Result<KStmt, LowerError> {
        Ok(match s {
            Stmt::Seq(items) => KStmt::seq(
                items
                    .iter()
                    .map(|i| self.stmt(i))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Stmt::For(f) => {
                let inits = match self.hoist.get(&f.var) {
                    Some(blocks) => blocks
                        .clone()
                        .iter()
                        .map(|r| self.hoisted_init(r, &f.var))
                        .collect::<Vec<_>>(),
                    None => Vec::new(),
                };
                let lp = match f.kind {
                    ForKind::Bound(axis) => {
                        self.env.insert(f.var.clone(), Expr::Builtin(axis));
                        self.stmt(&f.body)?
                    }
                    ForKind::Serial | ForKind::Unrolled | ForKind::Vectorized => {
                        self.bounds.set_extent(&f.var, f.extent);
                        let body = self.stmt(&f.body)?;
                        let vector = if f.kind == ForKind::Vectorized {
                            vectorize(&f.var, f.extent, &body, &self.bounds)
                        } else {
                            None
                        };
                        match vector {
                            Some(v) if f.extent > 1 => v,
                            _ if f.extent == 1 => {
                                // A one-iteration loop: its variable is 0.
                                let m = HashMap::from([(f.var.clone(), Expr::int(0))]);
                                let b = &self.bounds;
                                body.map_exprs(&mut |e| simplify_with(&e.substitute(&m), b))
                            }
                            _ => KStmt::For {
                                var: f.var.clone(),
                                extent: f.extent,
                                unroll: f.kind != ForKind::Serial,
                                body: Box::new(body),
                            },
                        }
                    }
                };
                KStmt::seq(inits.into_iter().chain([lp]).collect())
            }
            Stmt::Block(r) => self.block(r),
            Stmt::Store {
                buffer,
                indices,
                value,
            } => self.store(buffer, indices, value),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => KStmt::If {
                cond: self.expr(cond),
                then: Box::new(self.stmt(then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.stmt(o)?)),
                    None => None,
                },
            },
            Stmt::Mapping(m) => KStmt::Mapping(Box::new(KMapping {
                mapping: m.mapping.clone(),
                worker: self.expr(&m.worker),
                task_vars: m.task_vars.clone(),
                body: self.stmt(&m.body)?,
            })),
            Stmt::Let { var, value, body } => {
                let value = self.expr(value);
                let saved = self.bounds.clone();
                self.bounds.set_let(var, &value);
                let body = self.stmt(body);
                self.bounds = saved;
                KStmt::Let {
                    var: var.clone(),
                    value,
                    body: Box::new(body?),
                }
            }
            Stmt::Barrier => KStmt::Barrier,
            Stmt::Fence => KStmt::Fence,
            Stmt::Grid(g) => KStmt::Grid(*g),
            Stmt::Prefetch { buffer, indices } => {
                let idx: Vec<Expr> = indices.iter().map(|e| self.expr(e)).collect();
                self.prefetch(buffer, &idx)
            }
            Stmt::AtomicAdd(a) => {
                let a = a.map_exprs(&mut |e| self.expr(e));
                let (buffer, index) = self.access(&a.buffer, &a.indices);
                let old = a.old.map(|(b, i)| {
                    let (b, flat) = self.access(&b, &i);
                    (b, vec![flat])
                });
                KStmt::AtomicAdd(Box::new(AtomicAdd {
                    buffer,
                    indices: vec![index],
                    value: a.value,
                    old,
                }))
            }
            Stmt::Frag(op) => {
                let op = op.map_exprs(&mut |e| self.expr(e));
                let flat: Vec<(Buffer, Vec<Expr>)> = op
                    .accesses()
                    .into_iter()
                    .map(|(buffer, origin, _)| {
                        let (buffer, flat) = self.access(buffer, origin);
                        (buffer, vec![flat])
                    })
                    .collect();
                let op = if flat.is_empty() {
                    op
                } else {
                    op.with_accesses(flat)
                };
                KStmt::Frag(Box::new(op))
            }
        })
    }

    /// Block body statements with iteration variables replaced by their bindings.
    fn block_stmts(&self, s: &Stmt, vars: &HashMap<Var, Expr>) -> KStmt {
        match s {
            Stmt::Seq(items) => {
                KStmt::seq(items.iter().map(|i| self.block_stmts(i, vars)).collect())
            }
            Stmt::Store {
                buffer,
                indices,
                value,
            } => {
                let idx: Vec<Expr> = indices.iter().map(|i| i.substitute(vars)).collect();
                self.store(buffer, &idx, &value.substitute(vars))
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => KStmt::If {
                cond: self.expr(&cond.substitute(vars)),
                then: Box::new(self.block_stmts(then, vars)),
                otherwise: otherwise
                    .as_ref()
                    .map(|o| Box::new(self.block_stmts(o, vars))),
            },
            Stmt::Prefetch { buffer, indices } => {
                let idx: Vec<Expr> = indices
                    .iter()
                    .map(|i| self.expr(&i.substitute(vars)))
                    .collect();
                self.prefetch(buffer, &idx)
            }
            // Blocks hold only stores and ifs; anything else was built by hand.
            other => KStmt::seq(
                other
                    .children()
                    .into_iter()
                    .map(|c| self.block_stmts(c, vars))
                    .collect(),
            ),
        }
    }

    /// A prefetch of `buffer[indices]` (indices already converted), at its flat index.
    fn prefetch(&self, buffer: &Buffer, indices: &[Expr]) -> KStmt {
        let (buffer, index) = self.access(buffer, indices);
        KStmt::Prefetch {
            buffer,
            index,
            bytes: 0,
        }
    }

    fn guard(&self, pred: &Expr, body: KStmt) -> KStmt {
        let cond = self.expr(pred);
        match cond {
            Expr::Bool(true) => body,
            Expr::Bool(false) => KStmt::Seq(Vec::new()),
            cond => KStmt::If {
                cond,
                then: Box::new(body),
                otherwise: None,
            },
        }
    }

    fn block(&self, r: &BlockRealize) -> KStmt {
        let b = &r.block;
        let vars: HashMap<Var, Expr> = b
            .iter_vars
            .iter()
            .zip(&r.bindings)
            .map(|(iv, e)| (iv.var.clone(), e.clone()))
            .collect();
        let mut body = self.block_stmts(&b.body, &vars);
        if let Some(init) = &b.init
            && !self.hoisted.contains(&b.id.0)
        {
            // Run the init at the first reduction step.
            let first = Expr::all(
                b.iter_vars
                    .iter()
                    .zip(&r.bindings)
                    .filter(|(v, _)| v.kind == IterKind::Reduce)
                    .map(|(_, e)| e.clone().eq_(Expr::int(0))),
            );
            let init = self.block_stmts(init, &vars);
            body = KStmt::seq(vec![self.guard(&first, init), body]);
        }
        let guarded = self.guard(&r.predicate, body);
        KStmt::seq(vec![KStmt::Comment(format!("block {}", b.name)), guarded])
    }

    /// The init of a reduction block, placed before loop `at`: the loops from `at` down
    /// feed only reduce variables, so the spatial point is fixed here.
    fn hoisted_init(&self, r: &BlockRealize, at: &Var) -> KStmt {
        let _ = at;
        let b = &r.block;
        let vars: HashMap<Var, Expr> = b
            .iter_vars
            .iter()
            .zip(&r.bindings)
            .filter(|(iv, _)| iv.kind == IterKind::Spatial)
            .map(|(iv, e)| (iv.var.clone(), e.clone()))
            .collect();
        let reduce_loops: Vec<Var> = b
            .iter_vars
            .iter()
            .zip(&r.bindings)
            .filter(|(iv, _)| iv.kind == IterKind::Reduce)
            .flat_map(|(_, e)| e.vars())
            .collect();
        let pred = Expr::all(
            conjuncts(&r.predicate)
                .into_iter()
                .filter(|c| !c.uses_any(&reduce_loops)),
        );
        let init = b.init.as_ref().map(|i| self.block_stmts(i, &vars));
        KStmt::seq(vec![
            KStmt::Comment(format!("block {} (init)", b.name)),
            self.guard(&pred, init.unwrap_or(KStmt::Seq(Vec::new()))),
        ])
    }
}

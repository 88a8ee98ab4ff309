//! Compute location: `compute_at` and `reverse_compute_at`.

use super::region::{Access, DimRegion, union_region};
use super::{
    BlockRV, LoopRV, Result, Schedule, ScheduleError, enclosing_loops, find_block, find_loop,
    own_subtree, tidy,
};
use crate::arith::{Bounds, bound};
use crate::expr::{Buffer, Expr, Scope, Var};
use crate::func::{Block, BlockId, BlockRealize, For, ForKind, Func, IterKind, Path, Stmt};

/// Variables that sweep while a region of `buffer` is used under loop `lpath`: loops
/// inside it on the way to `path`, and thread-bound loops outside it whose threads share
/// the buffer (threadIdx for shared memory, every index for global memory).
fn relaxed_bounds(func: &Func, lpath: &[usize], path: &[usize], scope: Scope) -> Bounds {
    let mut b = Bounds::new();
    for (p, f) in enclosing_loops(&func.body, path) {
        let inside = p.len() > lpath.len();
        let shared_thread = match (f.kind, scope) {
            (ForKind::Bound(a), Scope::Shared) => !a.is_block(),
            (ForKind::Bound(_), Scope::Global) => true,
            _ => false,
        };
        if inside || shared_thread {
            b.set_extent(&f.var, f.extent);
        }
    }
    b
}

/// Ranges of every loop variable of the Func (for domain guards).
fn all_loop_bounds(func: &Func) -> Bounds {
    let mut b = Bounds::new();
    func.body.visit(&mut |s| {
        if let Stmt::For(f) = s {
            b.set_extent(&f.var, f.extent);
        }
    });
    b
}

/// Checks that `block` stores only to one buffer, at exactly its spatial iteration
/// variables in order, and returns that buffer.
fn simple_output(block: &Block, primitive: &'static str) -> Result<Buffer> {
    let writes = block.writes();
    let shape_err = |msg: &str| ScheduleError::BlockShape {
        primitive,
        block: block.name.clone(),
        msg: msg.to_string(),
    };
    if writes.len() != 1 {
        return Err(shape_err("must write exactly one buffer"));
    }
    let spatial: Vec<Expr> = block
        .iter_vars
        .iter()
        .filter(|v| v.kind == IterKind::Spatial)
        .map(|v| v.var.expr())
        .collect();
    for (buf, idx, is_write) in block.accesses() {
        if is_write && buf == writes[0] && idx != spatial {
            return Err(shape_err(
                "must store at exactly its spatial iteration variables, in order",
            ));
        }
    }
    Ok(writes[0].clone())
}

/// Builds the loop nest for a block moved under a loop: one loop per spatial variable
/// over its region, then full loops for reduce variables.
fn region_nest(func: &Func, realize: &BlockRealize, region: &[DimRegion]) -> Stmt {
    let block = &realize.block;
    let mut loop_vars = Vec::new();
    let mut bindings = Vec::new();
    let mut guards = Vec::new();
    let mut bounds = all_loop_bounds(func);
    let mut d = 0;
    for (k, iv) in block.iter_vars.iter().enumerate() {
        // Names follow TensorIR (`ax0`, `ax1`) and may repeat across nests.
        let v = Var::index(format!("ax{k}"));
        match iv.kind {
            IterKind::Spatial => {
                let r = region.get(d).cloned().unwrap_or(DimRegion {
                    start: Expr::int(0),
                    extent: iv.extent,
                    stride: 1,
                });
                let extent = r.extent;
                d += 1;
                bounds.set_extent(&v, extent);
                let bind = tidy(&(r.start + v.expr() * Expr::int(r.stride)));
                if let Some((lo, hi)) = bound(&bind, &bounds) {
                    if lo < 0 {
                        guards.push(bind.clone().ge(Expr::int(0)));
                    }
                    if hi >= iv.extent {
                        guards.push(bind.clone().lt(Expr::int(iv.extent)));
                    }
                }
                loop_vars.push((v, extent));
                bindings.push(bind);
            }
            IterKind::Reduce => {
                loop_vars.push((v.clone(), iv.extent));
                bindings.push(v.expr());
            }
        }
    }
    let mut stmt = Stmt::Block(Box::new(BlockRealize {
        bindings,
        predicate: tidy(&Expr::all(guards)),
        block: block.clone(),
    }));
    for (v, extent) in loop_vars.into_iter().rev() {
        stmt = Stmt::For(Box::new(For {
            var: v,
            extent,
            kind: ForKind::Serial,
            body: stmt,
        }));
    }
    stmt
}

/// The accesses of `buffer` by the block at `path`, in loop-variable terms (bindings
/// substituted), with the block's predicate as facts.
fn accesses_in_loop_terms(r: &BlockRealize, buffer: &Buffer, writes: bool) -> Vec<Access> {
    let subst = r
        .block
        .iter_vars
        .iter()
        .zip(&r.bindings)
        .map(|(iv, b)| (iv.var.clone(), b.clone()))
        .collect();
    let facts = super::region::upper_facts(&r.predicate);
    r.block
        .accesses()
        .into_iter()
        .filter(|(b, _, w)| b == buffer && *w == writes)
        .map(|(_, idx, _)| Access {
            indices: idx.iter().map(|e| tidy(&e.substitute(&subst))).collect(),
            facts: facts.clone(),
        })
        .collect()
}

impl Schedule {
    /// The block and loop of a move: the block's identity, the loop variable and path,
    /// the block realize and the path of the block's own nest (which must not hold the
    /// loop).
    fn locate_move(
        &self,
        block: BlockRV,
        loop_: LoopRV,
        primitive: &'static str,
    ) -> Result<(BlockId, Var, Path, BlockRealize, Path)> {
        let id = self.block_id(block)?;
        let var = self.loop_var(loop_)?;
        let bpath = self.block_path(id)?;
        let lpath = self.loop_path(&var)?;
        let realize = match self.func.body.at(&bpath) {
            Some(Stmt::Block(r)) => (**r).clone(),
            _ => unreachable!("block_path leads to a block"),
        };
        let sub = own_subtree(&self.func.body, &bpath);
        if lpath.starts_with(&sub) {
            return Err(ScheduleError::LoopInsideBlock {
                primitive,
                block: realize.block.name.clone(),
                loop_: var.name().to_string(),
            });
        }
        Ok((id, var, lpath, realize, sub))
    }

    /// Moves a producer block under `loop`, computing only the part of its output that
    /// the consumers under the loop need (region inference). Loops inside `loop` are
    /// relaxed; so are thread-bound loops whose threads share the buffer (threadIdx for
    /// `shared`, all for `global`). The moved block gets loops `ax0, ax1, ...` over the
    /// region and a predicate where the region may leave the buffer.
    ///
    /// Before, `sch.compute_at(A_shared, i_1)` (seed 001, window sum):
    /// ```text
    /// for ax0 in range(1027):
    ///     with T.block("A_shared"): v0 = T.axis.spatial(1027, ax0); A_shared[v0] = A[v0]
    /// for i_0 in T.thread_binding(8, thread="blockIdx.x"):
    ///     for i_1 in T.thread_binding(128, thread="threadIdx.x"):
    ///         with T.block("C"): ... B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
    /// ```
    /// After:
    /// ```text
    /// for i_0 in T.thread_binding(8, thread="blockIdx.x"):
    ///     for i_1 in T.thread_binding(128, thread="threadIdx.x"):
    ///         for ax0 in range(130):
    ///             with T.block("A_shared"): v0 = T.axis.spatial(1027, i_0 * 128 + ax0) ...
    ///         with T.block("C"): ...
    /// ```
    pub fn compute_at(&mut self, block: BlockRV, loop_: LoopRV) -> Result<()> {
        let (id, var, lpath, realize, sub) = self.locate_move(block, loop_, "compute_at")?;
        let name = realize.block.name.clone();
        let out = simple_output(&realize.block, "compute_at")?;
        // Every consumer must be under the loop.
        let mut consumers: Vec<(BlockId, Path)> = Vec::new();
        for r in self.func.body.blocks() {
            if r.block.id == id || !r.block.reads().contains(&out) && !reads_any(&r.block, &out) {
                continue;
            }
            let p = find_block(&self.func.body, r.block.id).unwrap_or_default();
            if !p.starts_with(&lpath) {
                return Err(ScheduleError::NotEnclosingConsumer {
                    block: name,
                    loop_: var.name().to_string(),
                    consumer: r.block.name.clone(),
                    buffer: out.name().to_string(),
                });
            }
            consumers.push((r.block.id, p));
        }
        if consumers.is_empty() {
            return Err(ScheduleError::NoConsumer {
                block: name,
                loop_: var.name().to_string(),
                buffer: out.name().to_string(),
            });
        }
        let others: Vec<BlockId> = consumers.iter().map(|(i, _)| *i).collect();
        let paths: Vec<Path> = consumers.into_iter().map(|(_, p)| p).collect();
        let place = Placement {
            realize: &realize,
            subtree: &sub,
            loop_var: &var,
            loop_path: &lpath,
        };
        self.transact(|func| place.apply(func, &out, &paths, &others, Side::BeforeConsumers))?;
        self.record(super::Inst::ComputeAt { block, loop_ });
        Ok(())
    }

    /// Moves a consumer block under `loop`, after its producers there, computing only the
    /// part that the producers under the loop write. The consumer must read the produced
    /// buffer at exactly its iteration variables (as the copy block of `cache_write` does).
    ///
    /// Before, `sch.reverse_compute_at(C_local, j_1)` (seed 001, local blocking):
    /// ```text
    /// for i_0, j_0, i_1, j_1, k_0, k_1, i_2, j_2 in T.grid(...):
    ///     with T.block("C"): ... C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
    /// for ax0, ax1 in T.grid(1024, 1024):
    ///     with T.block("C_local"): ... C[v0, v1] = C_local[v0, v1]
    /// ```
    /// After:
    /// ```text
    /// for i_0, j_0, i_1, j_1 in T.grid(...):
    ///     for k_0, k_1, i_2, j_2 in T.grid(...): ...
    ///     for ax0, ax1 in T.grid(8, 8):
    ///         with T.block("C_local"):
    ///             v0 = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + ax0) ...
    /// ```
    pub fn reverse_compute_at(&mut self, block: BlockRV, loop_: LoopRV) -> Result<()> {
        let (id, var, lpath, realize, sub) =
            self.locate_move(block, loop_, "reverse_compute_at")?;
        let name = realize.block.name.clone();
        if realize.block.is_reduction() {
            return Err(ScheduleError::BlockShape {
                primitive: "reverse_compute_at",
                block: name,
                msg: "is a reduction; only spatial consumers can be moved".into(),
            });
        }
        simple_output(&realize.block, "reverse_compute_at")?;
        // The produced buffer: one the block reads at exactly its iteration variables,
        // written by some block under the loop.
        let ivars: Vec<Expr> = realize
            .block
            .iter_vars
            .iter()
            .map(|v| v.var.expr())
            .collect();
        let mut input = None;
        for (buf, idx, w) in realize.block.accesses() {
            if !w && idx == ivars {
                let written_under = self.func.body.blocks().iter().any(|r| {
                    r.block.id != id
                        && r.block.writes().contains(&buf)
                        && find_block(&self.func.body, r.block.id)
                            .is_some_and(|p| p.starts_with(&lpath))
                });
                if written_under {
                    input = Some(buf);
                    break;
                }
            }
        }
        let Some(input) = input else {
            return Err(ScheduleError::BlockShape {
                primitive: "reverse_compute_at",
                block: name,
                msg: format!(
                    "must read, at exactly its iteration variables, a buffer written under loop `{}`",
                    var.name()
                ),
            });
        };
        let mut producers = Vec::new();
        let mut producer_ids = Vec::new();
        for r in self.func.body.blocks() {
            if r.block.id == id || !r.block.writes().contains(&input) {
                continue;
            }
            let p = find_block(&self.func.body, r.block.id).unwrap_or_default();
            if !p.starts_with(&lpath) {
                return Err(ScheduleError::NotEnclosingProducer {
                    block: name,
                    loop_: var.name().to_string(),
                    producer: r.block.name.clone(),
                    buffer: input.name().to_string(),
                });
            }
            producers.push(p);
            producer_ids.push(r.block.id);
        }
        let place = Placement {
            realize: &realize,
            subtree: &sub,
            loop_var: &var,
            loop_path: &lpath,
        };
        self.transact(|func| {
            place.apply(
                func,
                &input,
                &producers,
                &producer_ids,
                Side::AfterProducers,
            )
        })?;
        self.record(super::Inst::ReverseComputeAt { block, loop_ });
        Ok(())
    }
}

/// Where a moved block goes among the statements of the loop body.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// A producer, before its first consumer.
    BeforeConsumers,
    /// A consumer, after its last producer.
    AfterProducers,
}

/// A block being moved under a loop (what `compute_at` and `reverse_compute_at` share).
struct Placement<'a> {
    realize: &'a BlockRealize,
    /// The block's own loop nest, removed from where it was.
    subtree: &'a [usize],
    loop_var: &'a Var,
    loop_path: &'a [usize],
}

impl Placement<'_> {
    /// Infers the region of `buffer` that the blocks at `paths` (the consumers, or the
    /// producers) access under the loop, removes the block's old nest and inserts a new
    /// nest over that region beside the blocks `ids`.
    fn apply(
        &self,
        func: &mut Func,
        buffer: &Buffer,
        paths: &[Path],
        ids: &[BlockId],
        side: Side,
    ) -> Result<()> {
        let writes = side == Side::AfterProducers;
        let mut accesses = Vec::new();
        let mut relaxed = Bounds::new();
        for p in paths {
            let b = relaxed_bounds(func, self.loop_path, p, buffer.scope());
            merge_bounds(&mut relaxed, &b, func, p);
            if let Some(Stmt::Block(r)) = func.body.at(p) {
                let mut acc = accesses_in_loop_terms(r, buffer, writes);
                acc.iter_mut().for_each(|a| a.facts.clear());
                accesses.extend(acc);
            }
        }
        let region = union_region(&accesses, buffer.shape(), &relaxed);
        func.body.remove_at(self.subtree);
        super::normalize(&mut func.body);
        let nest = region_nest(func, self.realize, &region);
        insert_in_loop(
            func,
            self.loop_var,
            nest,
            ids,
            side == Side::BeforeConsumers,
        );
        Ok(())
    }
}

fn reads_any(block: &Block, buf: &Buffer) -> bool {
    block.accesses().iter().any(|(b, _, w)| b == buf && !w)
}

fn merge_bounds(into: &mut Bounds, from: &Bounds, func: &Func, path: &[usize]) {
    for (_, f) in enclosing_loops(&func.body, path) {
        if let Some((lo, hi)) = from.get(&f.var) {
            into.set_range(&f.var, lo, hi);
        }
    }
}

/// Inserts `nest` into the body of loop `var`: before the first statement holding one of
/// `ids` (a producer goes before its first consumer), or after the last one (a consumer
/// goes after its last producer).
fn insert_in_loop(func: &mut Func, var: &Var, nest: Stmt, ids: &[BlockId], before: bool) {
    let lp = find_loop(&func.body, var).unwrap_or_default();
    let Some(Stmt::For(f)) = func.body.at_mut(&lp) else {
        return;
    };
    let old = std::mem::replace(&mut f.body, Stmt::Seq(Vec::new()));
    let mut items = match old {
        Stmt::Seq(items) => items,
        s => vec![s],
    };
    let holds = |s: &Stmt| s.blocks().iter().any(|r| ids.contains(&r.block.id));
    let at = if before {
        items.iter().position(holds).unwrap_or(0)
    } else {
        items
            .iter()
            .rposition(holds)
            .map(|i| i + 1)
            .unwrap_or(items.len())
    };
    items.insert(at, nest);
    f.body = Stmt::seq(items);
}

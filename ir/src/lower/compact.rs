//! Buffer compaction: shrink each shared or local buffer to the region it is used over.
//!
//! For a shared buffer, the region is what one *block* of threads touches; for a local
//! buffer, what one *thread* touches. The region is taken at the lowest common ancestor
//! of all accesses: loops enclosing it are fixed, loops below it sweep, and for shared
//! buffers every `threadIdx` loop sweeps too. Seed 001's window sum keeps 130 elements of
//! `A_shared`, not 1027.

use std::collections::HashMap;

use super::LowerError;
use crate::arith::Bounds;
use crate::expr::{Buffer, Expr, Scope};
use crate::func::{ForKind, Func, Path, Stmt};
use crate::schedule::region::{Access, union_region, upper_facts};
use crate::schedule::{enclosing_loops, find_block};

/// Where a compacted buffer starts (per dimension, over loop variables) and its new
/// shape.
#[derive(Clone, Debug)]
pub(crate) struct Compacted {
    pub buffer: Buffer,
    pub start: Vec<Expr>,
    /// Only every `stride`-th index of a dimension is touched.
    pub stride: Vec<i64>,
}

/// Old buffer -> compacted buffer.
pub(crate) type Plan = HashMap<Buffer, Compacted>;

/// Largest per-thread array lowering accepts.
const MAX_LOCAL: i64 = 1 << 14;

pub(crate) fn plan(root: &Stmt, func: &Func) -> Result<Plan, LowerError> {
    let _ = func;
    // A buffer that statements outside blocks touch (a template's) keeps its declared
    // shape: its author indexes it directly, with no block regions to infer from.
    let declared = outside_blocks(root);
    let mut uses: HashMap<Buffer, Vec<(Path, Access)>> = HashMap::new();
    let mut order: Vec<Buffer> = Vec::new();
    for r in root.blocks() {
        let Some(path) = find_block(root, r.block.id) else {
            continue;
        };
        let subst = r
            .block
            .iter_vars
            .iter()
            .zip(&r.bindings)
            .map(|(iv, b)| (iv.var.clone(), b.clone()))
            .collect();
        let facts = upper_facts(&r.predicate);
        for (buf, idx, _) in r.block.accesses() {
            if buf.scope() == Scope::Global || declared.contains(&buf) {
                continue;
            }
            if !order.contains(&buf) {
                order.push(buf.clone());
            }
            uses.entry(buf).or_default().push((
                path.clone(),
                Access {
                    indices: idx
                        .iter()
                        .map(|e| crate::arith::simplify(&e.substitute(&subst)))
                        .collect(),
                    facts: facts.clone(),
                },
            ));
        }
    }
    let mut plan = Plan::new();
    for buf in order {
        let Some(list) = uses.remove(&buf) else {
            continue;
        };
        // Lowest common ancestor of the accesses.
        let mut lca: Path = list[0].0.clone();
        for (p, _) in &list[1..] {
            let n = lca.iter().zip(p).take_while(|(a, b)| a == b).count();
            lca.truncate(n);
        }
        let mut relaxed = Bounds::new();
        for (p, _) in &list {
            for (lp, f) in enclosing_loops(root, p) {
                let below = lp.len() >= lca.len();
                let shared_thread = matches!(f.kind, ForKind::Bound(a) if !a.is_block())
                    && buf.scope() == Scope::Shared;
                if below || shared_thread {
                    relaxed.set_extent(&f.var, f.extent);
                }
            }
        }
        let accesses: Vec<Access> = list.into_iter().map(|(_, a)| a).collect();
        let region = union_region(&accesses, buf.shape(), &relaxed);
        let shape: Vec<i64> = region.iter().map(|r| r.extent).collect();
        let new = buf.derive(buf.name(), shape, buf.scope());
        if buf.scope() == Scope::Local && new.numel() > MAX_LOCAL {
            return Err(LowerError::LocalTooLarge {
                buffer: buf.name().to_string(),
                elements: new.numel(),
            });
        }
        plan.insert(
            buf.clone(),
            Compacted {
                buffer: new,
                stride: region.iter().map(|r| r.stride).collect(),
                start: region.into_iter().map(|r| r.start).collect(),
            },
        );
    }
    Ok(plan)
}

/// The buffers loaded or stored by statements that are not inside a block.
fn outside_blocks(s: &Stmt) -> Vec<Buffer> {
    fn go(s: &Stmt, out: &mut Vec<Buffer>) {
        let mut add = |b: &Buffer| {
            if !out.contains(b) {
                out.push(b.clone());
            }
        };
        match s {
            Stmt::Block(_) => return,
            Stmt::Store {
                buffer,
                indices,
                value,
            } => {
                add(buffer);
                for e in indices.iter().chain([value]) {
                    e.loads().into_iter().for_each(|(b, _)| add(b));
                }
            }
            Stmt::If { cond: e, .. } | Stmt::Let { value: e, .. } => {
                e.loads().into_iter().for_each(|(b, _)| add(b))
            }
            Stmt::Mapping(m) => m.worker.loads().into_iter().for_each(|(b, _)| add(b)),
            Stmt::Frag(op) => {
                for (b, _, _) in op.accesses() {
                    add(b)
                }
                if let Some(b) = op.tma_source() {
                    add(b)
                }
                for e in op.exprs() {
                    e.loads().into_iter().for_each(|(b, _)| add(b));
                }
            }
            Stmt::AtomicAdd(a) => {
                add(&a.buffer);
                if let Some((b, _)) = &a.old {
                    add(b)
                }
                for e in a.exprs() {
                    e.loads().into_iter().for_each(|(b, _)| add(b));
                }
            }
            Stmt::Prefetch { buffer, indices } => {
                add(buffer);
                for e in indices {
                    e.loads().into_iter().for_each(|(b, _)| add(b));
                }
            }
            Stmt::Seq(_) | Stmt::For(_) | Stmt::Barrier | Stmt::Fence | Stmt::Grid(_) => {}
        }
        for c in s.children() {
            go(c, out);
        }
    }
    let mut out = Vec::new();
    go(s, &mut out);
    out
}

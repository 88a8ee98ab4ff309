//! The last passes: task mappings, integer division, barriers, names, parameters.

use std::collections::{HashMap, HashSet};

use super::LowerError;
use super::barrier::insert_barriers;
use super::convert::Converted;
use crate::arith::{Bounds, bound, simplify_with};
use crate::expr::{BinOp, Buffer, Expr, ThreadAxis, Var};
use crate::fragment::Fragment;
use crate::func::{Func, KernelHints, Param};
use crate::kernel::{Access, KStmt, Kernel, KernelParam};

pub(crate) fn finish(
    name: String,
    c: Converted,
    hints: KernelHints,
    func: &Func,
    temps: &[Buffer],
    grid: [u32; 3],
    block: [u32; 3],
) -> Result<Kernel, LowerError> {
    let mut bounds = Bounds::of_launch(grid, block);
    let body = expand_mappings(c.body.clone(), &bounds)?;
    let body = rewrite_division(&body, &mut bounds);
    // Barriers the author placed (a template's) are kept as the only ones: the
    // interpreter's race check verifies them, and adding more would undo a pipeline
    // that relies on exactly one barrier per step.
    let mut explicit = false;
    body.visit(&mut |s| explicit |= matches!(s, KStmt::Barrier));
    let shared: HashSet<u64> = c.shared.iter().map(|b| b.id()).collect();
    let body = if explicit {
        body
    } else {
        insert_barriers(body, &shared)
    };
    let body = super::unswitch::hoist_invariant_guards(body);
    let body = unique_names(body, func, &c);
    let params = kernel_params(&body, func, temps);
    let mut fragments: Vec<Fragment> = Vec::new();
    body.visit(&mut |s| {
        if let KStmt::Frag(op) = s {
            for f in op.fragments() {
                if !fragments.contains(f) {
                    fragments.push(f.clone());
                }
            }
        }
    });
    Ok(Kernel {
        name,
        params,
        grid,
        block,
        shared: c.shared,
        locals: c.locals,
        body,
        min_blocks_per_sm: hints.min_blocks_per_sm,
        async_copies: hints.async_copies,
        async_pending: hints.async_pending,
        fragments,
    })
}

fn expand_mappings(body: KStmt, bounds: &Bounds) -> Result<KStmt, LowerError> {
    let mut has = false;
    body.visit(&mut |s| has |= matches!(s, KStmt::Mapping(_)));
    if !has {
        return Ok(body);
    }
    super::mapping::expand(&body, bounds).map_err(|e| LowerError::Mapping(e.to_string()))
}

/// Floor division and modulo as C operators: plain `/` and `%` where the dividend is
/// provably non-negative (and the divisor a positive constant), a shifted form where a
/// lower bound is known, and an explicit floor form otherwise.
fn floor_to_c(e: &Expr, b: &Bounds) -> Expr {
    e.rewrite(&mut |x| match x {
        Expr::Binary(op @ (BinOp::FloorDiv | BinOp::FloorMod), a, d) => {
            let div = op == BinOp::FloorDiv;
            let c_op = if div { BinOp::Div } else { BinOp::Mod };
            match d.as_int() {
                Some(c) if c > 0 => match bound(&a, b) {
                    Some((lo, _)) if lo >= 0 => Expr::Binary(c_op, a, d),
                    Some((lo, _)) => {
                        // (a + k*c) is non-negative: floor and C division agree on it.
                        let k = (-lo + c - 1) / c;
                        let shifted = simplify_with(&(*a + Expr::int(k * c)), b);
                        if div {
                            Expr::binary(BinOp::Div, shifted, Expr::int(c)) - Expr::int(k)
                        } else {
                            Expr::binary(BinOp::Mod, shifted, Expr::int(c))
                        }
                    }
                    None => {
                        // Only `/` on a possibly negative dividend: `%` of negative values
                        // is not portable (GLSL leaves its sign undefined).
                        let q = Expr::select(
                            a.clone().ge(Expr::int(0)),
                            Expr::binary(BinOp::Div, (*a).clone(), Expr::int(c)),
                            Expr::binary(BinOp::Div, (*a).clone() - Expr::int(c - 1), Expr::int(c)),
                        );
                        if div { q } else { *a - q * Expr::int(c) }
                    }
                },
                _ => {
                    // General divisor: C division rounds toward zero; step down when it
                    // was inexact and the signs differ. Again no `%` on negative values.
                    let q = Expr::binary(BinOp::Div, (*a).clone(), (*d).clone());
                    let inexact = (q.clone() * (*d).clone()).ne_((*a).clone());
                    let signs = a.clone().lt(Expr::int(0)).ne_(d.clone().lt(Expr::int(0)));
                    let fq = Expr::select(inexact.and(signs), q.clone() - Expr::int(1), q);
                    if div { fq } else { *a - fq * *d }
                }
            }
        }
        x => x,
    })
}

fn rewrite_division(s: &KStmt, b: &mut Bounds) -> KStmt {
    let fix = |e: &Expr, b: &Bounds| floor_to_c(&simplify_with(e, b), b);
    match s {
        KStmt::Seq(items) => KStmt::Seq(items.iter().map(|i| rewrite_division(i, b)).collect()),
        KStmt::For {
            var,
            extent,
            unroll,
            body,
        } => {
            b.set_extent(var, *extent);
            KStmt::For {
                var: var.clone(),
                extent: *extent,
                unroll: *unroll,
                body: Box::new(rewrite_division(body, b)),
            }
        }
        KStmt::Let { var, value, body } => {
            let value2 = fix(value, b);
            if let Some((lo, hi)) = bound(value, b) {
                b.set_range(var, lo, hi);
            }
            KStmt::Let {
                var: var.clone(),
                value: value2,
                body: Box::new(rewrite_division(body, b)),
            }
        }
        KStmt::If {
            cond,
            then,
            otherwise,
        } => match fix(cond, b) {
            // A condition that bounds proved (a store guard at a tile edge the shape never
            // reaches) leaves only the branch taken.
            Expr::Bool(true) => rewrite_division(then, b),
            Expr::Bool(false) => match otherwise {
                Some(o) => rewrite_division(o, b),
                None => KStmt::Seq(Vec::new()),
            },
            cond => KStmt::If {
                cond,
                then: Box::new(rewrite_division(then, b)),
                otherwise: otherwise.as_ref().map(|o| Box::new(rewrite_division(o, b))),
            },
        },
        KStmt::Store {
            buffer,
            index,
            value,
            lanes,
        } => KStmt::Store {
            buffer: buffer.clone(),
            index: fix(index, b),
            value: fix(value, b),
            lanes: *lanes,
        },
        KStmt::Barrier => KStmt::Barrier,
        KStmt::Fence => KStmt::Fence,
        KStmt::AtomicAdd(a) => KStmt::AtomicAdd(Box::new(a.map_exprs(&mut |e| fix(e, b)))),
        KStmt::Prefetch {
            buffer,
            index,
            bytes,
        } => KStmt::Prefetch {
            buffer: buffer.clone(),
            index: fix(index, b),
            bytes: *bytes,
        },
        KStmt::Grid(g) => KStmt::Grid(*g),
        KStmt::Comment(t) => KStmt::Comment(t.clone()),
        KStmt::Frag(op) => KStmt::Frag(Box::new(op.map_exprs(&mut |e| fix(e, b)))),
        KStmt::Mapping(m) => KStmt::Mapping(m.clone()),
    }
}

/// Gives every loop and let variable of the kernel a distinct name (TensorIR lets
/// sibling nests reuse `ax0`; C and WGSL scopes would accept it, but a reader should not
/// have to track shadowing).
fn unique_names(body: KStmt, func: &Func, c: &Converted) -> KStmt {
    let mut used: HashSet<String> = func.params.iter().map(|p| p.name().to_string()).collect();
    used.extend(func.allocs.iter().map(|b| b.name().to_string()));
    used.extend(
        c.shared
            .iter()
            .chain(&c.locals)
            .map(|b| b.name().to_string()),
    );
    used.extend(ThreadAxis::ALL.iter().map(|a| a.var_name().to_string()));
    let mut seen: HashMap<Var, Var> = HashMap::new();
    rename(body, &mut used, &mut seen)
}

fn rename(s: KStmt, used: &mut HashSet<String>, seen: &mut HashMap<Var, Var>) -> KStmt {
    let fresh = |v: &Var, used: &mut HashSet<String>| -> Var {
        if !used.contains(v.name()) {
            used.insert(v.name().to_string());
            return v.clone();
        }
        let mut k = 1;
        loop {
            let n = format!("{}_{}", v.name(), k);
            if !used.contains(&n) {
                used.insert(n.clone());
                return v.renamed(n);
            }
            k += 1;
        }
    };
    match s {
        KStmt::Seq(items) => KStmt::Seq(items.into_iter().map(|i| rename(i, used, seen)).collect()),
        KStmt::For {
            var,
            extent,
            unroll,
            body,
        } => {
            let nv = fresh(&var, used);
            let body = if nv != var {
                let m = HashMap::from([(var.clone(), nv.expr())]);
                body.map_exprs(&mut |e| e.substitute(&m))
            } else {
                *body
            };
            seen.insert(var, nv.clone());
            KStmt::For {
                var: nv,
                extent,
                unroll,
                body: Box::new(rename(body, used, seen)),
            }
        }
        KStmt::Let { var, value, body } => {
            let nv = fresh(&var, used);
            let body = if nv != var {
                let m = HashMap::from([(var.clone(), nv.expr())]);
                body.map_exprs(&mut |e| e.substitute(&m))
            } else {
                *body
            };
            KStmt::Let {
                var: nv,
                value,
                body: Box::new(rename(body, used, seen)),
            }
        }
        KStmt::If {
            cond,
            then,
            otherwise,
        } => KStmt::If {
            cond,
            then: Box::new(rename(*then, used, seen)),
            otherwise: otherwise.map(|o| Box::new(rename(*o, used, seen))),
        },
        other => other,
    }
}

/// The global buffers and scalars the kernel uses, in the function's parameter order
/// (temporaries last), with how each buffer is accessed.
fn kernel_params(body: &KStmt, func: &Func, temps: &[Buffer]) -> Vec<KernelParam> {
    let mut reads: HashSet<u64> = HashSet::new();
    let mut writes: HashSet<u64> = HashSet::new();
    let mut vars: HashSet<Var> = HashSet::new();
    body.visit(&mut |s| match s {
        KStmt::Store { buffer, .. } => {
            writes.insert(buffer.id());
        }
        KStmt::Frag(op) => {
            for (b, _, write) in op.accesses() {
                if write {
                    writes.insert(b.id());
                } else {
                    reads.insert(b.id());
                }
            }
            if let Some(b) = op.tma_source() {
                reads.insert(b.id());
            }
        }
        // An atomic reads and writes its element; its old value is stored.
        KStmt::AtomicAdd(a) => {
            reads.insert(a.buffer.id());
            writes.insert(a.buffer.id());
            if let Some((b, _)) = &a.old {
                writes.insert(b.id());
            }
        }
        // A prefetched element is read (the buffer must be a parameter).
        KStmt::Prefetch { buffer, .. } => {
            reads.insert(buffer.id());
        }
        _ => {}
    });
    body.visit_exprs(&mut |e| {
        for (b, _) in e.loads() {
            reads.insert(b.id());
        }
        vars.extend(e.vars());
    });
    let access = |b: &Buffer| match (reads.contains(&b.id()), writes.contains(&b.id())) {
        (true, true) => Some(Access::ReadWrite),
        (true, false) => Some(Access::Read),
        (false, true) => Some(Access::Write),
        (false, false) => None,
    };
    let mut out = Vec::new();
    for p in &func.params {
        match p {
            Param::Buffer(b) => {
                if let Some(a) = access(b) {
                    out.push(KernelParam::Buffer {
                        buffer: b.clone(),
                        access: a,
                    });
                }
            }
            Param::Scalar(v) => {
                if vars.contains(v) {
                    out.push(KernelParam::Scalar(v.clone()));
                }
            }
        }
    }
    for t in temps {
        if let Some(a) = access(t) {
            out.push(KernelParam::Buffer {
                buffer: t.clone(),
                access: a,
            });
        }
    }
    out
}

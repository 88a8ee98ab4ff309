//! Post-scheduling fusion (Hidet, seed 002 sections 4.2 and 5.2): an anchor op is
//! scheduled alone — by primitives or a template — and afterwards the te ops around it
//! are fused into the scheduled program.
//!
//! - A **prologue** is an injective op (no reduction) that computes an input of the
//!   anchor: each load of that input is replaced by the op's expression at the load's
//!   indices (recursively, so a chain of prologues inlines whole).
//! - An **epilogue** is a bijective op that consumes the anchor's output: every element
//!   of its output reads one element of its input, at an index that is a mixed-radix
//!   permutation of its own (an elementwise op, a reshape, a transpose, the NCHW view of
//!   a GEMM result). Each store of the anchor's output becomes a store of the epilogue's
//!   output, at the inverted index, of the epilogue's expression of the stored value.
//!
//! An op that is neither is refused with a [`FusionError`] naming it. The result is an
//! ordinary [`Func`] whose parameters are the graph's inputs and its output.
//!
//! Seed 002's figure 15: the anchor reverses `A` (`B[i] = A[99 - i]`); the prologue
//! `A[i] = C[i] * 2.0` and the epilogue `D[i // 50, i % 50] = B[i] * 3.0` fuse into it:
//!
//! ```
//! use weft_ir::prelude::*;
//! use weft_ir::schedule::Schedule;
//!
//! let c = te::placeholder("C", &[100], DType::F32);
//! let a = te::compute("A", &[("i", 100)], |i| c.at(&[&i[0]]) * 2.0f32);
//! let b = te::compute("B", &[("i", 100)], |i| a.at(&[Expr::int(99) - &i[0]]));
//! let d = te::compute("D", &[("p", 2), ("q", 50)], |i| b.at(&[&i[0] * 50 + &i[1]]) * 3.0f32);
//!
//! // Schedule the anchor alone, over its own inputs and output.
//! let mut sch = Schedule::new(te::create_func_with_inputs("reverse", &[&a], &[&b]).unwrap());
//! let blk = sch.get_block("B").unwrap();
//! let i = sch.get_loops(blk).unwrap()[0];
//! sch.bind(i, ThreadAxis::ThreadIdxX).unwrap();
//!
//! let fused = weft_ir::fusion::fuse(sch.func(), &d).unwrap();
//! assert_eq!(fused.prologues, ["A"]);
//! assert_eq!(fused.epilogues, ["D"]);
//! // The block reads `C[99 - vi] * 2.0` where it read `A[99 - vi]`, and stores `* 3.0`
//! // at `(vi // 50, vi % 50)`:
//! let text = fused.func.to_string();
//! assert!(text.contains("def reverse(C: T.Buffer((100,), \"float32\"), D: T.Buffer((2, 50), \"float32\")):"));
//! assert!(text.contains("D[vi // 50, vi % 50] = C[99 - vi] * T.float32(2) * T.float32(3)"));
//! ```

use std::collections::HashMap;

use thiserror::Error;

use crate::arith::{Affine, simplify};
use crate::expr::{BinOp, Buffer, Expr, Scope, Var};
use crate::func::{Func, Param, Stmt};
use crate::te::ComputeOp;

/// A scheduled anchor with its prologues and epilogues fused in.
#[derive(Clone, Debug)]
pub struct Fused {
    pub func: Func,
    /// The ops inlined into the anchor's loads, in the order they were met.
    pub prologues: Vec<String>,
    /// The ops rewritten into its stores, from the anchor outwards.
    pub epilogues: Vec<String>,
}

/// Why a graph cannot be fused around its anchor. Each variant names the op at fault.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum FusionError {
    #[error(
        "`{op}` is a reduction, not an injective op: it cannot be a prologue (schedule it as a kernel of its own, or as the anchor)"
    )]
    NotInjective { op: String },
    #[error("`{op}` is not a bijective epilogue: {why}")]
    NotBijective { op: String, why: String },
    #[error("the anchor `{anchor}` {what}")]
    Anchor { anchor: String, what: String },
    #[error("the output `{output}` is not computed from the anchor's output `{anchor_output}`")]
    Unreached {
        output: String,
        anchor_output: String,
    },
}

/// Fuses the te ops around the scheduled `anchor` so that the result computes `output`:
/// computed inputs of the anchor are inlined (prologues), and the ops between the
/// anchor's output and `output` are rewritten into the anchor's stores (epilogues).
pub fn fuse(anchor: &Func, output: &Buffer) -> Result<Fused, FusionError> {
    let anchor_err = |what: String| FusionError::Anchor {
        anchor: anchor.name.clone(),
        what,
    };
    let stored: Vec<Buffer> = anchor
        .buffer_params()
        .filter(|b| stored_in(&anchor.body, b))
        .cloned()
        .collect();
    let [c] = stored.as_slice() else {
        return Err(anchor_err(format!(
            "writes {} parameters; fusion needs exactly one output",
            stored.len()
        )));
    };
    let chain = epilogue_chain(c, output)?;
    if !chain.is_empty() && loaded_in(&anchor.body, c) {
        return Err(anchor_err(format!(
            "reads its own output `{}` (it accumulates in place): give it a local accumulator (cache_write) to fuse an epilogue",
            c.name()
        )));
    }

    // Prefetches of what fusion inlines (a prologue's tensor, or the anchor's output
    // that the epilogues replace) name no buffer of the fused kernel: they go.
    let mut body = anchor.body.clone();
    drop_prefetches(&mut body, &|b| {
        b.producer().is_some() && (b != c || !chain.is_empty())
    });
    // Epilogues: every store of `c` becomes a store of the chain's last tensor.
    rewrite_stores(&mut body, c, &chain);
    // Prologues: every load of a computed tensor becomes its expression.
    let mut prologues = Vec::new();
    let mut failed = None;
    body.rewrite_body_exprs(&mut |e| inline_loads(e, &mut prologues, &mut failed));
    body.rewrite_loop_exprs(&mut |e| inline_loads(e, &mut prologues, &mut failed));
    if let Some(e) = failed {
        return Err(e);
    }

    let params = fused_params(anchor, &body, c, output);
    let allocs = anchor
        .allocs
        .iter()
        .filter(|b| b.scope() != Scope::Global || mentioned(&body, b))
        .cloned()
        .collect();
    Ok(Fused {
        func: Func {
            name: anchor.name.clone(),
            params,
            allocs,
            body,
            kernel_hints: anchor.kernel_hints.clone(),
        },
        prologues,
        epilogues: chain.iter().map(|e| e.op.name.clone()).collect(),
    })
}

/// One epilogue: the tensor it computes, its op, the input on the anchor's side, and
/// where each of its axes lies in the input's flat index.
struct Epilogue {
    tensor: Buffer,
    op: std::sync::Arc<ComputeOp>,
    input: Buffer,
    digits: Vec<Place>,
}

/// Where an epilogue's axis lies in its input's flat index.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// One mixed-radix digit `(stride in the input's flat index, axis extent)`.
    Digit(i64, i64),
    /// Two digits: the input reads the axis as a quotient and a remainder by `q`
    /// (`k // q`, `k % q`: a grouped convolution's output channel as its product's
    /// index and that product's column), and the axis is `hi · q + lo`.
    Split {
        hi: (i64, i64),
        lo: (i64, i64),
        q: i64,
    },
}

/// An axis read as a quotient and a remainder: the variables standing for them, and the
/// divisor.
type SplitAxis = (Var, Var, i64);

/// `index` with every `axis // q` and `axis % q` of an axis of `op` (one `q` an axis,
/// dividing its extent) replaced by new variables, and for each axis so split its
/// quotient and remainder variables and `q`.
fn split_axes(op: &ComputeOp, index: &[Expr]) -> (Vec<Expr>, Vec<Option<SplitAxis>>) {
    let divisor = |e: &Expr, want: BinOp, axis: &Var| match e {
        Expr::Binary(o, a, b) if *o == want && matches!(&**a, Expr::Var(v) if v == axis) => {
            b.as_int()
        }
        _ => None,
    };
    let mut splits = Vec::new();
    let mut index = index.to_vec();
    for axis in &op.axes {
        let mut q = None;
        for e in &index {
            e.visit(&mut |x| {
                if let Some(d) = divisor(x, BinOp::FloorDiv, &axis.var)
                    .or_else(|| divisor(x, BinOp::FloorMod, &axis.var))
                {
                    q = match q {
                        None => Some(Some(d)),
                        Some(Some(seen)) if seen == d => Some(Some(d)),
                        Some(_) => Some(None),
                    };
                }
            });
        }
        let Some(Some(q)) = q.filter(|q| q.is_some_and(|q| q > 1 && axis.extent % q == 0)) else {
            splits.push(None);
            continue;
        };
        let hi = Var::new(format!("{}_hi", axis.var), axis.var.dtype());
        let lo = Var::new(format!("{}_lo", axis.var), axis.var.dtype());
        index = index
            .iter()
            .map(|e| {
                e.rewrite(&mut |x| {
                    if divisor(&x, BinOp::FloorDiv, &axis.var) == Some(q) {
                        Expr::Var(hi.clone())
                    } else if divisor(&x, BinOp::FloorMod, &axis.var) == Some(q) {
                        Expr::Var(lo.clone())
                    } else {
                        x
                    }
                })
            })
            .collect();
        splits.push(Some((hi, lo, q)));
    }
    (index, splits)
}

fn stored_in(s: &Stmt, b: &Buffer) -> bool {
    let mut found = false;
    s.visit(&mut |s| match s {
        Stmt::Store { buffer, .. } => found |= buffer == b,
        // An atomic writes its element, and its old value's.
        Stmt::AtomicAdd(a) => {
            found |= a.buffer == *b || a.old.as_ref().is_some_and(|(o, _)| o == b);
        }
        _ => {}
    });
    found
}

fn loaded_in(s: &Stmt, b: &Buffer) -> bool {
    let mut found = false;
    s.visit_exprs(&mut |e| found |= e.loads().iter().any(|(x, _)| *x == b));
    found
}

/// Whether a fragment operation of `s` reads `b` (a fragment load, a `wgmma` operand
/// tile, a TMA copy's source).
fn frag_read_in(s: &Stmt, b: &Buffer) -> bool {
    let mut found = false;
    s.visit(&mut |s| {
        if let Stmt::Frag(op) = s {
            found |= op.tma_source() == Some(b)
                || op.accesses().iter().any(|(x, _, write)| !write && *x == b);
        }
    });
    found
}

/// Whether `s` prefetches an element of `b`.
fn prefetched_in(s: &Stmt, b: &Buffer) -> bool {
    let mut found = false;
    s.visit(&mut |s| found |= matches!(s, Stmt::Prefetch { buffer, .. } if buffer == b));
    found
}

/// Removes every prefetch of a buffer for which `gone` holds: a prefetch that is a
/// statement's only body becomes an empty sequence.
fn drop_prefetches(s: &mut Stmt, gone: &dyn Fn(&Buffer) -> bool) {
    let dropped = |s: &Stmt| matches!(s, Stmt::Prefetch { buffer, .. } if gone(buffer));
    if dropped(s) {
        *s = Stmt::Seq(Vec::new());
        return;
    }
    if let Stmt::Seq(items) = s {
        items.retain(|i| !dropped(i));
    }
    for i in 0..s.children().len() {
        if let Some(child) = s.child_mut(i) {
            drop_prefetches(child, gone);
        }
    }
}

fn mentioned(s: &Stmt, b: &Buffer) -> bool {
    stored_in(s, b) || loaded_in(s, b) || prefetched_in(s, b)
}

/// True if `t` is `c` or computed (through any chain of ops) from it.
fn depends_on(t: &Buffer, c: &Buffer) -> bool {
    if t == c {
        return true;
    }
    t.producer()
        .is_some_and(|op| op.body.loads().iter().any(|(x, _)| depends_on(x, c)))
}

/// The ops from `c` out to `output`, checked bijective, innermost first.
fn epilogue_chain(c: &Buffer, output: &Buffer) -> Result<Vec<Epilogue>, FusionError> {
    let mut chain = Vec::new();
    let mut t = output.clone();
    while t != *c {
        let unreached = || FusionError::Unreached {
            output: output.name().to_string(),
            anchor_output: c.name().to_string(),
        };
        let op = t.producer().cloned().ok_or_else(unreached)?;
        let not_bijective = |why: String| FusionError::NotBijective {
            op: op.name.clone(),
            why,
        };
        if matches!(op.body, Expr::Reduce(_)) {
            return Err(not_bijective("it is a reduction".into()));
        }
        let mut on_path: Vec<Buffer> = Vec::new();
        for (x, _) in op.body.loads() {
            if depends_on(x, c) && !on_path.contains(x) {
                on_path.push(x.clone());
            }
        }
        let input = match on_path.as_slice() {
            [x] => x.clone(),
            [] => return Err(unreached()),
            many => {
                return Err(not_bijective(format!(
                    "it reads the anchor's output through {} tensors",
                    many.len()
                )));
            }
        };
        if input.producer().is_some() && input != *c && !depends_on(&input, c) {
            return Err(unreached());
        }
        let digits = digits_of(&op, &input).map_err(not_bijective)?;
        chain.push(Epilogue {
            tensor: t.clone(),
            op,
            input: input.clone(),
            digits,
        });
        t = input;
    }
    chain.reverse();
    Ok(chain)
}

/// Checks that `op` reads `input` at one index, a mixed-radix permutation of its axes,
/// and returns each axis's `(stride in the input's flat index, extent)`.
fn digits_of(op: &ComputeOp, input: &Buffer) -> Result<Vec<Place>, String> {
    // Axes are split only where the index is no permutation of them whole: an epilogue
    // that fused before keeps the digits (and the code) it had.
    digits_split(op, input, false).or_else(|whole| digits_split(op, input, true).map_err(|_| whole))
}

/// [`digits_of`], with axes read as a quotient and a remainder taken as two digits where
/// `split`.
fn digits_split(op: &ComputeOp, input: &Buffer, split: bool) -> Result<Vec<Place>, String> {
    let loads: Vec<Vec<Expr>> = op
        .body
        .loads()
        .into_iter()
        .filter(|(b, _)| *b == input)
        .map(|(_, i)| i.to_vec())
        .collect();
    let first = loads.first().ok_or("it does not read its input")?;
    if loads.iter().any(|l| l != first) {
        return Err(format!(
            "it reads `{}` at more than one index",
            input.name()
        ));
    }
    let strides = input.strides();
    let (first, splits) = if split {
        split_axes(op, first)
    } else {
        (first.clone(), vec![None; op.axes.len()])
    };
    let flat = first
        .iter()
        .zip(&strides)
        .fold(Expr::int(0), |acc, (i, &s)| acc + i.clone() * s);
    let affine = Affine::from_expr(&simplify(&flat));
    if affine.constant != 0 {
        return Err(format!("its index into `{}` has an offset", input.name()));
    }
    let mut digits = Vec::new();
    let mut known: Vec<Expr> = Vec::new();
    let stride = |e: Expr, name: &dyn std::fmt::Display, extent: i64| {
        let coef = affine.coef(&e);
        if coef <= 0 && extent > 1 {
            return Err(format!(
                "its axis `{name}` does not reach `{}` with a positive stride",
                input.name()
            ));
        }
        Ok((coef.max(1), extent))
    };
    for (axis, split) in op.axes.iter().zip(&splits) {
        match split {
            None => {
                let (s, e) = stride(axis.expr(), &axis.var, axis.extent)?;
                digits.push(Place::Digit(s, e));
                known.push(axis.expr());
            }
            Some((hi, lo, q)) => {
                let (hi, lo) = (Expr::Var(hi.clone()), Expr::Var(lo.clone()));
                digits.push(Place::Split {
                    hi: stride(hi.clone(), &axis.var, axis.extent / q)?,
                    lo: stride(lo.clone(), &axis.var, *q)?,
                    q: *q,
                });
                known.extend([hi, lo]);
            }
        }
    }
    if affine.terms.iter().any(|(t, _)| !known.contains(t)) {
        return Err(format!(
            "its index into `{}` is not a linear function of its axes",
            input.name()
        ));
    }
    // Sorted by stride, each stride must be the product of the extents below it, and
    // all of them must cover the input: then every input element has one preimage.
    let mut sorted: Vec<(i64, i64)> = digits
        .iter()
        .flat_map(|p| match *p {
            Place::Digit(s, e) => vec![(s, e)],
            Place::Split { hi, lo, .. } => vec![hi, lo],
        })
        .filter(|d| d.1 > 1)
        .collect();
    sorted.sort();
    let mut expect = 1;
    for (s, e) in &sorted {
        if *s != expect {
            return Err(format!(
                "its index into `{}` skips or repeats elements (stride {s} where {expect} was due)",
                input.name()
            ));
        }
        expect *= e;
    }
    if expect != input.numel() {
        return Err(format!(
            "it covers {expect} of the {} elements of `{}`",
            input.numel(),
            input.name()
        ));
    }
    Ok(digits)
}

/// Replaces each store of `c` by the store the epilogue chain makes of it.
fn rewrite_stores(s: &mut Stmt, c: &Buffer, chain: &[Epilogue]) {
    if chain.is_empty() {
        return;
    }
    if let Stmt::Store {
        buffer,
        indices,
        value,
    } = s
        && buffer == c
    {
        let mut val = value.clone();
        let mut idx = indices.clone();
        for e in chain {
            // The epilogue's axes at the element the anchor stores.
            let axes: Vec<Expr> = e
                .digits
                .iter()
                .map(|&place| match place {
                    Place::Digit(stride, extent) => digit_of(&e.input, &idx, (stride, extent)),
                    Place::Split { hi, lo, q } => {
                        simplify(&(digit_of(&e.input, &idx, hi) * q + digit_of(&e.input, &idx, lo)))
                    }
                })
                .collect();
            let subst: HashMap<Var, Expr> =
                e.op.axes
                    .iter()
                    .map(|a| a.var.clone())
                    .zip(axes.iter().cloned())
                    .collect();
            let input = e.input.clone();
            let stored = val.clone();
            val =
                e.op.body
                    .rewrite(&mut |x| match &x {
                        Expr::Load { buffer, .. } if *buffer == input => stored.clone(),
                        _ => x,
                    })
                    .substitute(&subst);
            idx = axes;
        }
        let last = &chain[chain.len() - 1];
        *s = Stmt::Store {
            buffer: last.tensor.clone(),
            indices: idx,
            value: val,
        };
        return;
    }
    for i in 0..s.children().len() {
        if let Some(child) = s.child_mut(i) {
            rewrite_stores(child, c, chain);
        }
    }
}

/// The digit `(stride, extent)` of the flat index of `b[indices]`: taken from the one
/// dimension it lies in where there is one (`i // 56 % 56`, and no modulo for a
/// dimension's top digit), else from the whole flat index.
fn digit_of(b: &Buffer, indices: &[Expr], (stride, extent): (i64, i64)) -> Expr {
    if extent == 1 {
        return Expr::int(0);
    }
    let strides = b.strides();
    for (d, (&ds, &size)) in strides.iter().zip(b.shape()).enumerate() {
        if stride % ds == 0 && stride / ds * extent <= size {
            let within = stride / ds;
            let q = if within == 1 {
                indices[d].clone()
            } else {
                indices[d].clone().floordiv(within)
            };
            let top = within * extent == size;
            return simplify(&if top { q } else { q.floormod(extent) });
        }
    }
    let flat = indices
        .iter()
        .zip(strides)
        .fold(Expr::int(0), |acc, (i, s)| acc + i.clone() * s);
    let q = flat.floordiv(stride);
    simplify(&if stride * extent == b.numel() {
        q
    } else {
        q.floormod(extent)
    })
}

/// `e` with every load of a computed tensor replaced by its op's expression (repeatedly).
fn inline_loads(e: &Expr, inlined: &mut Vec<String>, failed: &mut Option<FusionError>) -> Expr {
    e.rewrite(&mut |x| match &x {
        Expr::Load {
            buffer, indices, ..
        } => match buffer.producer() {
            Some(op) => {
                if matches!(op.body, Expr::Reduce(_)) {
                    failed.get_or_insert(FusionError::NotInjective {
                        op: op.name.clone(),
                    });
                    return x;
                }
                if !inlined.contains(&op.name) {
                    inlined.push(op.name.clone());
                }
                let subst: HashMap<Var, Expr> = op
                    .axes
                    .iter()
                    .map(|a| a.var.clone())
                    .zip(indices.iter().cloned())
                    .collect();
                inline_loads(&op.body.substitute(&subst), inlined, failed)
            }
            None => x,
        },
        _ => x,
    })
}

/// The fused function's parameters: the anchor's, in order, with each inlined input
/// replaced by the inputs it reads and the anchor's output by `output`; then any other
/// input the epilogues read, before the output.
fn fused_params(anchor: &Func, body: &Stmt, c: &Buffer, output: &Buffer) -> Vec<Param> {
    // Every global input the fused body reads: through loads in expressions, and through
    // fragment operations (fragment loads from global memory, TMA copies), which read
    // whole tiles and are no expressions, and through prefetches (the kernel names the
    // buffer). `Stmt::buffers` lists them all, with the stores.
    let inputs: Vec<Buffer> = body
        .buffers()
        .into_iter()
        .filter(|b| {
            b.scope() == Scope::Global
                && b.producer().is_none()
                && b != output
                && !anchor.allocs.contains(b)
                && (loaded_in(body, b) || frag_read_in(body, b) || prefetched_in(body, b))
        })
        .collect();
    let mut inputs = inputs;
    let position = |b: &Buffer| {
        anchor
            .params
            .iter()
            .position(|p| matches!(p, Param::Buffer(x) if x == b))
            .unwrap_or(usize::MAX)
    };
    // Keep the anchor's own inputs first and in its order; the rest in order of first use.
    inputs.sort_by_key(|b| position(b));
    let mut params: Vec<Param> = Vec::new();
    for p in &anchor.params {
        match p {
            Param::Scalar(v) => params.push(Param::Scalar(v.clone())),
            Param::Buffer(b) if b == c => {}
            Param::Buffer(_) => {}
        }
    }
    let mut out: Vec<Param> = inputs.into_iter().map(Param::Buffer).collect();
    out.extend(params);
    out.push(Param::Buffer(output.clone()));
    out
}

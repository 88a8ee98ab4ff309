//! The checks every emitter runs before writing: the guarantees of `weft_ir::kernel` that
//! emission relies on, plus small analyses the writers share.

use std::collections::{BTreeSet, HashMap, HashSet};

use weft_ir::expr::{BinOp, Buffer, Expr, Intrinsic, Scope, ThreadAxis, UnOp};
use weft_ir::func::GridControl;
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam};
use weft_ir::printer::expr_to_string;

use crate::error::{EmitError, UnloweredNode};

/// Vector widths the emitters have types for (`float2`, `float4`, `vec4<f32>`, ...);
/// 8 lanes only for f16 (16 bytes, see [`supported_lanes`]).
pub const SUPPORTED_LANES: [u32; 4] = [1, 2, 4, 8];

/// Whether a `lanes`-wide copy of `dtype` has a type in every emitter: 8 lanes are
/// 16 bytes only for halves.
pub fn supported_lanes(dtype: weft_ir::dtype::DType, lanes: u32) -> bool {
    SUPPORTED_LANES.contains(&lanes) && (lanes < 8 || dtype == weft_ir::dtype::DType::F16)
}

/// Checks the lowering contract: no task mapping, reduction, floor division or modulo, no
/// multi-index load; every accessed buffer is a parameter or an allocation; vector
/// accesses are copies of a supported width; prefetches name global parameters; a wait
/// for the previous grid is placed where the emitters can write it ([`check_grid_wait`]).
/// `backend` names the emitter in errors.
pub fn check_lowered(kernel: &Kernel, backend: &'static str) -> Result<(), EmitError> {
    let mut err: Option<EmitError> = None;
    let unlowered = |node, detail: String| EmitError::Unlowered {
        kernel: kernel.name.clone(),
        node,
        detail,
    };
    kernel.body.visit(&mut |s| {
        if err.is_some() {
            return;
        }
        if let KStmt::Mapping(m) = s {
            let vars: Vec<&str> = m.task_vars.iter().map(|v| v.name()).collect();
            err = Some(unlowered(
                UnloweredNode::TaskMapping,
                format!(
                    "for {} in T.task_mapping({}, worker={})",
                    vars.join(", "),
                    m.mapping,
                    expr_to_string(&m.worker)
                ),
            ));
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    if let Some(what) = check_fragments(kernel) {
        return Err(EmitError::Invalid {
            kernel: kernel.name.clone(),
            what,
        });
    }
    kernel.body.visit_exprs(&mut |root| {
        root.visit(&mut |e| {
            if err.is_some() {
                return;
            }
            let node = match e {
                Expr::Reduce(_) => Some(UnloweredNode::Reduce),
                Expr::Binary(BinOp::FloorDiv, ..) => Some(UnloweredNode::FloorDiv),
                Expr::Binary(BinOp::FloorMod, ..) => Some(UnloweredNode::FloorMod),
                Expr::Load { indices, .. } if indices.len() != 1 => {
                    Some(UnloweredNode::MultiIndexLoad)
                }
                _ => None,
            };
            if let Some(node) = node {
                err = Some(unlowered(node, expr_to_string(e)));
            }
        })
    });
    if let Some(e) = err {
        return Err(e);
    }
    check_buffers_and_lanes(kernel, backend)?;
    check_grid_wait(kernel)
}

fn check_buffers_and_lanes(kernel: &Kernel, backend: &'static str) -> Result<(), EmitError> {
    let declared: HashSet<u64> = kernel
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParam::Buffer { buffer, .. } => Some(buffer.id()),
            KernelParam::Scalar(_) => None,
        })
        .chain(kernel.shared.iter().chain(&kernel.locals).map(Buffer::id))
        .collect();
    let invalid = |what: String| EmitError::Invalid {
        kernel: kernel.name.clone(),
        what,
    };
    // Arrays are declared with their length: no language has a valid empty one, and an
    // index past i32 cannot be written in weft's index type.
    for b in kernel.shared.iter().chain(&kernel.locals) {
        if b.numel() < 1 || b.numel() > i32::MAX as i64 {
            return Err(invalid(format!(
                "allocation `{}` has {} elements",
                b.name(),
                b.numel()
            )));
        }
    }
    let mut err: Option<EmitError> = None;
    let check_access = |buffer: &Buffer, lanes: u32, err: &mut Option<EmitError>| {
        if err.is_some() {
            return;
        }
        if !declared.contains(&buffer.id()) {
            *err = Some(invalid(format!(
                "buffer `{}` is accessed but is neither a parameter nor an allocation",
                buffer.name()
            )));
        } else if !supported_lanes(buffer.dtype(), lanes) {
            *err = Some(EmitError::Unsupported {
                kernel: kernel.name.clone(),
                backend,
                what: format!("a {lanes}-lane access of `{}`", buffer.name()),
            });
        }
    };
    let params: HashSet<u64> = kernel.buffer_params().map(|(b, _)| b.id()).collect();
    kernel.body.visit(&mut |s| {
        // A prefetch brings global memory towards the multiprocessors: its buffer is a
        // parameter (declared, and not shared or local).
        if let KStmt::Prefetch { buffer, .. } = s {
            check_access(buffer, 1, &mut err);
            if err.is_none() && !params.contains(&buffer.id()) {
                err = Some(invalid(format!(
                    "prefetch of `{}`, which is not a global buffer parameter",
                    buffer.name()
                )));
            }
        }
        if let KStmt::Store {
            buffer,
            value,
            lanes,
            ..
        } = s
        {
            check_access(buffer, *lanes, &mut err);
            if *lanes > 1 && err.is_none() {
                let copy = matches!(value, Expr::Load { buffer: src, lanes: l, .. }
                    if *l == *lanes && src.dtype() == buffer.dtype());
                if !copy {
                    err = Some(invalid(format!(
                        "the {lanes}-lane store to `{}` does not copy a {lanes}-lane load of \
                         the same type",
                        buffer.name()
                    )));
                }
            }
        }
    });
    kernel.body.visit_exprs(&mut |root| {
        // A vector load is allowed only as the whole value of a vector store (checked
        // above), so skip the root and refuse one anywhere below it.
        let mut first = true;
        root.visit(&mut |e| {
            let is_root = std::mem::take(&mut first);
            if let Expr::Load { buffer, lanes, .. } = e {
                check_access(buffer, *lanes, &mut err);
                if *lanes > 1 && !is_root && err.is_none() {
                    err = Some(invalid(format!(
                        "a {lanes}-lane load of `{}` is used inside an expression (vector \
                         loads may only be copied by a store)",
                        buffer.name()
                    )));
                }
            }
        })
    });
    // A vector load as the root of a condition or a let value is not a copy either.
    kernel.body.visit(&mut |s| {
        let root = match s {
            KStmt::If { cond, .. } => Some(cond),
            KStmt::Let { value, .. } => Some(value),
            _ => None,
        };
        if err.is_none()
            && let Some(Expr::Load { buffer, lanes, .. }) = root
            && *lanes > 1
        {
            err = Some(invalid(format!(
                "a {lanes}-lane load of `{}` outside a vector store",
                buffer.name()
            )));
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Checks where the kernel waits for the previous grid when it places the wait itself
/// ([`GridControl::Wait`]; without one, emitters wait at the top of the body): at most
/// one wait, at the top level of the body (inside `let`s and sequences, not under a loop
/// or an `if`, which some threads could skip or repeat), and before it nothing that
/// touches memory but prefetches, loads of the buffers the kernel reads as constants of
/// the run ([`Access::Constant`]: no kernel writes them) and stores to the thread's own
/// registers (local arrays). Whatever runs before the wait may see the previous
/// kernel's writes half done: a load there could read stale data, a store could be
/// overwritten, and barriers, fences and atomics there order nothing the kernel needs.
pub fn check_grid_wait(kernel: &Kernel) -> Result<(), EmitError> {
    let invalid = |what: String| EmitError::Invalid {
        kernel: kernel.name.clone(),
        what,
    };
    let mut waits = 0;
    kernel
        .body
        .visit(&mut |s| waits += matches!(s, KStmt::Grid(GridControl::Wait)) as usize);
    match waits {
        0 => return Ok(()),
        1 => {}
        n => {
            return Err(invalid(format!(
                "it waits for the previous kernel {n} times (one wait at most)"
            )));
        }
    }
    let constants: Vec<u64> = kernel
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParam::Buffer {
                buffer,
                access: Access::Constant,
            } => Some(buffer.id()),
            KernelParam::Buffer { .. } | KernelParam::Scalar(_) => None,
        })
        .collect();
    match before_wait(&kernel.body, &constants) {
        Ok(true) => Ok(()),
        // Counted above, so not reached; an error rather than a panic all the same.
        Ok(false) => Err(invalid(
            "its wait for the previous kernel was not found".into(),
        )),
        Err(what) => Err(invalid(what)),
    }
}

/// Walks the top level of a body in program order up to the wait: `Ok(true)` once the
/// wait is met, `Ok(false)` when `s` ends without it, and what is wrong otherwise.
fn before_wait(s: &KStmt, constants: &[u64]) -> Result<bool, String> {
    let early = |what: String| {
        format!(
            "{what} comes before its wait for the previous kernel (only prefetches, loads of constants and stores to registers may)"
        )
    };
    match s {
        KStmt::Grid(GridControl::Wait) => Ok(true),
        KStmt::Seq(items) => {
            for item in items {
                if before_wait(item, constants)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        KStmt::Let { var, value, body } => {
            if let Some(b) = loaded(value, constants) {
                return Err(early(format!("a load of {b} in the value of `{var}`")));
            }
            before_wait(body, constants)
        }
        other => {
            let mut holds_wait = false;
            other.visit(&mut |s| holds_wait |= matches!(s, KStmt::Grid(GridControl::Wait)));
            if holds_wait {
                // Sequences and lets were walked above: what holds it is a branch or a loop.
                let within = if matches!(other, KStmt::If { .. }) {
                    "an `if`"
                } else {
                    "a loop"
                };
                return Err(format!(
                    "its wait for the previous kernel is inside {within} (it belongs at the top level of the body, where every thread reaches it once)"
                ));
            }
            match touches_memory(other, constants) {
                Some(what) => Err(early(what)),
                None => Ok(false),
            }
        }
    }
}

/// The first buffer `e` loads that is neither one of `constants` nor the thread's own
/// registers (a local array), if any (its name in backquotes, `shared` before a shared
/// one's).
fn loaded(e: &Expr, constants: &[u64]) -> Option<String> {
    let mut found = None;
    e.visit(&mut |x| {
        if let Expr::Load { buffer, .. } = x
            && found.is_none()
            && !constants.contains(&buffer.id())
        {
            found = match buffer.scope() {
                Scope::Global => Some(format!("`{}`", buffer.name())),
                Scope::Shared => Some(format!("shared `{}`", buffer.name())),
                Scope::Local => None,
            };
        }
    });
    found
}

/// The first thing `s` does to memory other than prefetching, loading `constants` and
/// storing to the thread's registers, if any (described).
fn touches_memory(s: &KStmt, constants: &[u64]) -> Option<String> {
    let mut found: Option<String> = None;
    s.visit(&mut |s| {
        if found.is_some() {
            return;
        }
        found = match s {
            KStmt::Store { buffer, .. } if buffer.scope() == Scope::Local => None,
            KStmt::Store { buffer, .. } => Some(format!("a store to `{}`", buffer.name())),
            KStmt::Barrier => Some("a barrier".into()),
            KStmt::Fence => Some("a device-scope fence".into()),
            KStmt::AtomicAdd(a) => Some(format!("an atomic add on `{}`", a.buffer.name())),
            KStmt::Frag(op) => Some(format!(
                "a matrix-fragment operation (`{}`)",
                weft_ir::printer::frag_op_string(op)
            )),
            KStmt::Mapping(_) => Some("a task mapping".into()),
            KStmt::Seq(_)
            | KStmt::For { .. }
            | KStmt::If { .. }
            | KStmt::Let { .. }
            | KStmt::Comment(_)
            | KStmt::Prefetch { .. }
            | KStmt::Grid(_) => None,
        };
    });
    if found.is_none() {
        s.visit_exprs(&mut |e| {
            if found.is_none() {
                found = loaded(e, constants).map(|b| format!("a load of {b}"));
            }
        });
    }
    found
}

/// The access widths of each buffer (by id) over the whole kernel body.
pub fn buffer_lanes(kernel: &Kernel) -> HashMap<u64, BTreeSet<u32>> {
    let mut out: HashMap<u64, BTreeSet<u32>> = HashMap::new();
    kernel.body.visit(&mut |s| {
        if let KStmt::Store { buffer, lanes, .. } = s {
            out.entry(buffer.id()).or_default().insert(*lanes);
        }
    });
    kernel.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            if let Expr::Load { buffer, lanes, .. } = e {
                out.entry(buffer.id()).or_default().insert(*lanes);
            }
        })
    });
    out
}

/// The buffers (by id) that fragment operations load from or store to: their tiles
/// need the matrix units' alignment.
pub fn fragment_buffers(kernel: &Kernel) -> HashSet<u64> {
    let mut out = HashSet::new();
    kernel.body.visit(&mut |s| {
        if let KStmt::Frag(op) = s {
            for (b, _, _) in op.accesses() {
                out.insert(b.id());
            }
        }
    });
    out
}

/// The fragment operations' problems a lowered kernel cannot have: an origin with more
/// than one index, a fragment the kernel does not declare.
fn check_fragments(kernel: &Kernel) -> Option<String> {
    let mut err = None;
    kernel.body.visit(&mut |s| {
        let KStmt::Frag(op) = s else { return };
        if err.is_some() {
            return;
        }
        if let Some((_, origin, _)) = op.accesses().into_iter().find(|a| a.1.len() != 1) {
            err = Some(format!(
                "`{}` has {} origin indices; lowered tiles have one flat index",
                weft_ir::printer::frag_op_string(op),
                origin.len()
            ));
        }
        if let Some(f) = op
            .fragments()
            .into_iter()
            .find(|f| !kernel.fragments.contains(f))
        {
            err = Some(format!(
                "fragment `{}` is not declared by the kernel",
                f.name()
            ));
        }
    });
    err
}

/// The thread and block indices the body reads, in [`ThreadAxis::ALL`] order.
pub fn used_builtins(kernel: &Kernel) -> Vec<ThreadAxis> {
    let mut used = HashSet::new();
    kernel.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            if let Expr::Builtin(a) = e {
                used.insert(*a);
            }
        })
    });
    ThreadAxis::ALL
        .into_iter()
        .filter(|a| used.contains(a))
        .collect()
}

/// True if `e` reads memory anywhere.
pub fn contains_load(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |e| found |= matches!(e, Expr::Load { .. }));
    found
}

/// Rewrites `sigmoid(x)` as `1 / (1 + exp(-x))` in `x`'s type, so that no backend needs a
/// spelling for it.
pub fn expand_sigmoid(e: &Expr) -> Expr {
    e.rewrite(&mut |e| match e {
        Expr::Call(Intrinsic::Sigmoid, mut args) if args.len() == 1 => {
            let x = args.remove(0);
            let d = x.dtype();
            let one = Expr::constant(1.0, d);
            let exp = Expr::Call(Intrinsic::Exp, vec![Expr::Unary(UnOp::Neg, Box::new(x))]);
            Expr::binary(BinOp::Div, one.clone(), Expr::binary(BinOp::Add, one, exp))
        }
        e => e,
    })
}

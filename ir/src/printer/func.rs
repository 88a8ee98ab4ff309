//! The Func IR as TVMScript, and `Display` for [`Func`].

use std::fmt;

use super::{expr_to_string, line, shape_tuple};
use crate::arith::{Affine, simplify};
use crate::expr::{Buffer, Expr, Scope};
use crate::func::{Block, BlockRealize, For, ForKind, Func, IterKind, Param, Stmt};

/// Prints a [`Func`] as TVMScript.
pub fn print_func(f: &Func) -> String {
    let mut out = String::new();
    out.push_str("@T.prim_func\n");
    let params: Vec<String> = f.params.iter().map(param_decl).collect();
    out.push_str(&format!("def {}({}):\n", f.name, params.join(", ")));
    if f.kernel_hints.iter().any(|h| *h != Default::default()) {
        let hints: Vec<String> = f
            .kernel_hints
            .iter()
            .map(|h| {
                let copies = super::async_attrs(h.async_copies, h.async_pending)
                    .map(|a| format!(", {a}"))
                    .unwrap_or_default();
                format!("{{\"min_blocks_per_sm\": {}{copies}}}", h.min_blocks_per_sm)
            })
            .collect();
        line(
            &mut out,
            1,
            &format!("T.func_attr({{\"kernel_hints\": [{}]}})", hints.join(", ")),
        );
    }
    for b in &f.allocs {
        line(&mut out, 1, &alloc_decl(b));
    }
    write_stmt(&f.body, 1, &mut out);
    out
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_func(self))
    }
}

pub(crate) fn param_decl(p: &Param) -> String {
    match p {
        Param::Buffer(b) => format!(
            "{}: T.Buffer({}, \"{}\")",
            b.name(),
            shape_tuple(b.shape()),
            b.dtype().tvm_name()
        ),
        Param::Scalar(v) => format!("{}: T.{}", v.name(), v.dtype().tvm_name()),
    }
}

pub(crate) fn alloc_decl(b: &Buffer) -> String {
    let dtype = if b.dtype() == crate::dtype::DType::F32 {
        String::new()
    } else {
        format!(", \"{}\"", b.dtype().tvm_name())
    };
    let scope = if b.scope() == Scope::Global {
        String::new()
    } else {
        format!(", scope=\"{}\"", b.scope())
    };
    let over = if b.hosts().is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = b.hosts().iter().map(|h| h.name()).collect();
        format!(", over=[{}]", names.join(", "))
    };
    format!(
        "{} = T.alloc_buffer({}{}{}{})",
        b.name(),
        shape_tuple(b.shape()),
        dtype,
        scope,
        over
    )
}

fn write_stmt(s: &Stmt, level: usize, out: &mut String) {
    match s {
        Stmt::Seq(items) => {
            if items.is_empty() {
                line(out, level, "T.evaluate(0)");
            }
            items.iter().for_each(|i| write_stmt(i, level, out));
        }
        Stmt::For(f) => write_for(f, level, out),
        Stmt::Block(r) => write_block(r, level, out),
        Stmt::Store {
            buffer,
            indices,
            value,
        } => {
            let idx: Vec<String> = indices.iter().map(expr_to_string).collect();
            line(
                out,
                level,
                &format!(
                    "{}[{}] = {}",
                    buffer.name(),
                    idx.join(", "),
                    expr_to_string(value)
                ),
            );
        }
        Stmt::If {
            cond,
            then,
            otherwise,
        } => {
            line(out, level, &format!("if {}:", expr_to_string(cond)));
            write_stmt(then, level + 1, out);
            if let Some(o) = otherwise {
                line(out, level, "else:");
                write_stmt(o, level + 1, out);
            }
        }
        Stmt::Mapping(m) => {
            let vars: Vec<&str> = m.task_vars.iter().map(|v| v.name()).collect();
            line(
                out,
                level,
                &format!(
                    "for {} in T.task_mapping({}, worker={}):",
                    vars.join(", "),
                    m.mapping,
                    expr_to_string(&m.worker)
                ),
            );
            write_stmt(&m.body, level + 1, out);
        }
        Stmt::Let { var, value, body } => {
            line(
                out,
                level,
                &format!(
                    "{var}: T.{} = {}",
                    var.dtype().tvm_name(),
                    expr_to_string(value)
                ),
            );
            write_stmt(body, level, out);
        }
        Stmt::Barrier => line(out, level, "T.tvm_storage_sync(\"shared\")"),
        Stmt::Fence => line(out, level, super::FENCE),
        Stmt::AtomicAdd(a) => line(out, level, &super::atomic_add(a)),
        Stmt::Prefetch { buffer, indices } => line(out, level, &super::prefetch(buffer, indices)),
        Stmt::Grid(g) => line(out, level, super::grid(*g)),
        Stmt::Frag(op) => line(out, level, &super::fragment::frag_op(op)),
    }
}

fn write_for(f: &For, level: usize, out: &mut String) {
    // Perfectly nested serial loops print as one `T.grid`, as TVMScript does.
    if f.kind == ForKind::Serial {
        let mut vars = vec![f.var.name().to_string()];
        let mut extents = vec![f.extent.to_string()];
        let mut body = &f.body;
        while let Stmt::For(inner) = body {
            if inner.kind != ForKind::Serial {
                break;
            }
            vars.push(inner.var.name().to_string());
            extents.push(inner.extent.to_string());
            body = &inner.body;
        }
        let head = if vars.len() == 1 {
            format!("for {} in range({}):", vars[0], extents[0])
        } else {
            format!("for {} in T.grid({}):", vars.join(", "), extents.join(", "))
        };
        line(out, level, &head);
        write_stmt(body, level + 1, out);
        return;
    }
    let head = match f.kind {
        ForKind::Unrolled => format!("for {} in T.unroll({}):", f.var, f.extent),
        ForKind::Vectorized => format!("for {} in T.vectorized({}):", f.var, f.extent),
        ForKind::Bound(a) => format!(
            "for {} in T.thread_binding({}, thread=\"{}\"):",
            f.var, f.extent, a
        ),
        ForKind::Serial => unreachable!("serial loops are printed above"),
    };
    line(out, level, &head);
    write_stmt(&f.body, level + 1, out);
}

fn write_block(r: &BlockRealize, level: usize, out: &mut String) {
    let b = &r.block;
    line(out, level, &format!("with T.block(\"{}\"):", b.name));
    let l = level + 1;
    for (iv, bind) in b.iter_vars.iter().zip(&r.bindings) {
        let kind = match iv.kind {
            IterKind::Spatial => "spatial",
            IterKind::Reduce => "reduce",
        };
        line(
            out,
            l,
            &format!(
                "{} = T.axis.{}({}, {})",
                iv.var,
                kind,
                iv.extent,
                expr_to_string(bind)
            ),
        );
    }
    if r.predicate != Expr::Bool(true) {
        line(
            out,
            l,
            &format!("T.where({})", expr_to_string(&r.predicate)),
        );
    }
    line(
        out,
        l,
        &format!("T.reads({})", regions(b, false).join(", ")),
    );
    line(
        out,
        l,
        &format!("T.writes({})", regions(b, true).join(", ")),
    );
    if let Some(init) = &b.init {
        line(out, l, "with T.init():");
        write_stmt(init, l + 1, out);
    }
    write_stmt(&b.body, l, out);
}

/// The access regions of a block, one per buffer, as `A[vi:vi + 3, vj]`.
fn regions(b: &Block, writes: bool) -> Vec<String> {
    let bufs = if writes {
        b.writes()
    } else {
        let mut r = b.reads();
        // After decompose_reduction an update block reads its accumulator: list it first,
        // as TensorIR does.
        if b.init.is_none() {
            let w = b.writes();
            r.sort_by_key(|x| !w.contains(x));
        }
        r
    };
    let accesses = b.accesses();
    bufs.iter()
        .map(|buf| {
            let idx: Vec<&Vec<Expr>> = accesses
                .iter()
                .filter(|(x, _, w)| x == buf && (*w == writes || (!writes && !*w)))
                .map(|(_, i, _)| i)
                .collect();
            let dims: Vec<String> = (0..buf.ndim())
                .map(|d| dim_region(idx.iter().filter_map(|i| i.get(d)), buf.shape()[d]))
                .collect();
            format!("{}[{}]", buf.name(), dims.join(", "))
        })
        .collect()
}

fn dim_region<'a>(exprs: impl Iterator<Item = &'a Expr>, extent: i64) -> String {
    let exprs: Vec<&Expr> = exprs.collect();
    let Some(first) = exprs.first() else {
        return format!("0:{extent}");
    };
    let base = Affine::from_expr(first);
    let mut lo = 0i64;
    let mut hi = 0i64;
    for e in &exprs {
        match Affine::from_expr(e).minus(&base).as_const() {
            Some(d) => {
                lo = lo.min(d);
                hi = hi.max(d);
            }
            None => return format!("0:{extent}"),
        }
    }
    if lo == hi {
        return expr_to_string(first);
    }
    let start = simplify(&((*first).clone() + Expr::int(lo)));
    let end = simplify(&((*first).clone() + Expr::int(hi + 1)));
    format!("{}:{}", expr_to_string(&start), expr_to_string(&end))
}

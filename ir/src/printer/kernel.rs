//! Lowered kernels, in the style of TVM's lowered TIR (seed 000's IR listings), and
//! `Display` for [`Kernel`] and [`LoweredFunc`].

use std::fmt;

use super::func::{alloc_decl, param_decl};
use super::{expr_to_string, line};
use crate::expr::{Expr, ThreadAxis};
use crate::kernel::{KStmt, Kernel, KernelParam, LoweredFunc};

/// Prints a lowered function: its parameters, then each kernel's launch and body.
pub fn print_lowered(f: &LoweredFunc) -> String {
    let mut out = String::new();
    out.push_str("@T.prim_func\n");
    let params: Vec<String> = f.params.iter().map(param_decl).collect();
    out.push_str(&format!("def {}({}):\n", f.name, params.join(", ")));
    for t in &f.temps {
        line(&mut out, 1, &alloc_decl(t));
    }
    for (i, k) in f.kernels.iter().enumerate() {
        if f.kernels.len() > 1 {
            if i > 0 {
                out.push('\n');
            }
            line(&mut out, 1, &format!("# kernel {}: {}", i, k.name));
        }
        write_kernel_body(k, 1, &mut out);
    }
    out
}

impl fmt::Display for LoweredFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_lowered(self))
    }
}

/// Prints one kernel alone, with its parameters.
pub fn print_kernel(k: &Kernel) -> String {
    let mut out = String::new();
    out.push_str("@T.prim_func\n");
    let params: Vec<String> = k
        .params
        .iter()
        .map(|p| match p {
            KernelParam::Buffer { buffer, access } => format!(
                "{}: T.Buffer(({},), \"{}\")  # {:?}",
                buffer.name(),
                buffer.numel(),
                buffer.dtype().tvm_name(),
                access
            ),
            KernelParam::Scalar(v) => format!("{}: T.{}", v.name(), v.dtype().tvm_name()),
        })
        .collect();
    out.push_str(&format!("def {}(\n", k.name));
    for p in params {
        line(&mut out, 1, &format!("{p},"));
    }
    out.push_str("):\n");
    write_kernel_body(k, 1, &mut out);
    out
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_kernel(self))
    }
}

fn write_kernel_body(k: &Kernel, level: usize, out: &mut String) {
    let mut used = Vec::new();
    k.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            if let Expr::Builtin(a) = e
                && !used.contains(a)
            {
                used.push(*a);
            }
        })
    });
    for a in ThreadAxis::ALL {
        let extent = if a.is_block() {
            k.grid[a.dim()]
        } else {
            k.block[a.dim()]
        };
        if extent > 1 || used.contains(&a) {
            line(
                out,
                level,
                &format!(
                    "{} = T.launch_thread(\"{}\", {})",
                    a.var_name(),
                    a.name(),
                    extent
                ),
            );
        }
    }
    if k.min_blocks_per_sm > 0 {
        line(
            out,
            level,
            &format!(
                "T.func_attr({{\"min_blocks_per_sm\": {}}})",
                k.min_blocks_per_sm
            ),
        );
    }
    if let Some(attrs) = super::async_attrs(k.async_copies, k.async_pending) {
        line(out, level, &format!("T.func_attr({{{attrs}}})"));
    }
    for b in k.shared.iter().chain(&k.locals) {
        line(out, level, &alloc_decl(b));
    }
    for f in &k.fragments {
        line(out, level, &super::fragment::fragment_decl(f));
    }
    write_kstmt(&k.body, level, out);
}

fn write_kstmt(s: &KStmt, level: usize, out: &mut String) {
    match s {
        KStmt::Seq(items) => {
            if items.is_empty() {
                line(out, level, "T.evaluate(0)");
            }
            items.iter().for_each(|i| write_kstmt(i, level, out));
        }
        KStmt::For {
            var,
            extent,
            unroll,
            body,
        } => {
            if *unroll {
                line(out, level, &format!("for {var} in T.unroll({extent}):"));
                write_kstmt(body, level + 1, out);
                return;
            }
            let mut vars = vec![var.name().to_string()];
            let mut extents = vec![extent.to_string()];
            let mut inner: &KStmt = body;
            while let KStmt::For {
                var,
                extent,
                unroll: false,
                body,
            } = inner
            {
                vars.push(var.name().to_string());
                extents.push(extent.to_string());
                inner = body;
            }
            if vars.len() == 1 {
                line(
                    out,
                    level,
                    &format!("for {} in range({}):", vars[0], extents[0]),
                );
            } else {
                line(
                    out,
                    level,
                    &format!("for {} in T.grid({}):", vars.join(", "), extents.join(", ")),
                );
            }
            write_kstmt(inner, level + 1, out);
        }
        KStmt::If {
            cond,
            then,
            otherwise,
        } => {
            line(out, level, &format!("if {}:", expr_to_string(cond)));
            write_kstmt(then, level + 1, out);
            if let Some(o) = otherwise {
                line(out, level, "else:");
                write_kstmt(o, level + 1, out);
            }
        }
        KStmt::Let { var, value, body } => {
            line(
                out,
                level,
                &format!(
                    "{}: T.{} = {}",
                    var,
                    var.dtype().tvm_name(),
                    expr_to_string(value)
                ),
            );
            write_kstmt(body, level, out);
        }
        KStmt::Store {
            buffer,
            index,
            value,
            lanes,
        } => {
            let idx = if *lanes > 1 {
                format!(
                    "{}:{}",
                    expr_to_string(index),
                    expr_to_string(&(index.clone() + Expr::int(*lanes as i64)))
                )
            } else {
                expr_to_string(index)
            };
            line(
                out,
                level,
                &format!("{}[{}] = {}", buffer.name(), idx, expr_to_string(value)),
            );
        }
        KStmt::Barrier => line(out, level, "T.tvm_storage_sync(\"shared\")"),
        KStmt::Fence => line(out, level, super::FENCE),
        KStmt::AtomicAdd(a) => line(out, level, &super::atomic_add(a)),
        KStmt::Prefetch {
            buffer,
            index,
            bytes,
        } => {
            let text = super::prefetch(buffer, std::slice::from_ref(index));
            match bytes {
                0 => line(out, level, &text),
                b => line(out, level, &format!("{text}  # {b} bytes")),
            }
        }
        KStmt::Grid(g) => line(out, level, super::grid(*g)),
        KStmt::Comment(t) => line(out, level, &format!("# {t}")),
        KStmt::Frag(op) => line(out, level, &super::fragment::frag_op(op)),
        KStmt::Mapping(m) => {
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
            write_kstmt(&m.body, level + 1, out);
        }
    }
}

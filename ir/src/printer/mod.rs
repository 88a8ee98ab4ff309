//! Stable, readable printers for every IR level, close to the TVMScript the seeds show.
//! Their output is the format of the IR snapshots and of error messages. The `Display`
//! impls of [`Expr`], [`Func`](crate::func::Func), [`Kernel`](crate::kernel::Kernel) and
//! [`LoweredFunc`](crate::kernel::LoweredFunc) live here, beside the printers they call,
//! so the IR modules need not import the printer back.

mod expr;
mod fragment;
mod func;
mod kernel;

pub use expr::write_expr;
pub use func::print_func;

/// One fragment operation as TVMScript (`T.tvm_mma_sync(...)`).
pub fn frag_op_string(op: &crate::fragment::FragOp) -> String {
    fragment::frag_op(op)
}
pub use kernel::{print_kernel, print_lowered};

use crate::expr::Expr;

/// One level of indentation.
pub const INDENT: &str = "    ";

/// `e` as TVMScript.
pub fn expr_to_string(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(e, &mut s);
    s
}

pub(crate) fn shape_tuple(shape: &[i64]) -> String {
    if shape.len() == 1 {
        format!("({},)", shape[0])
    } else {
        format!(
            "({})",
            shape
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The attribute entries of a kernel's asynchronous copies (`"async_copies": True`, with
/// `"async_pending": n` for a pipeline), or `None` when its copies are synchronous.
pub(crate) fn async_attrs(copies: bool, pending: u32) -> Option<String> {
    match (copies, pending) {
        (false, _) => None,
        (true, 0) => Some("\"async_copies\": True".to_string()),
        (true, n) => Some(format!("\"async_copies\": True, \"async_pending\": {n}")),
    }
}

/// The text of a device-scope fence, at every IR level.
pub(crate) const FENCE: &str = "T.thread_fence(\"device\")";

/// `T.prefetch(B[i, j])`: a hint, at every IR level.
pub(crate) fn prefetch(buffer: &crate::expr::Buffer, indices: &[Expr]) -> String {
    let idx: Vec<String> = indices.iter().map(expr_to_string).collect();
    format!("T.prefetch({}[{}])", buffer.name(), idx.join(", "))
}

/// `T.grid_wait()` / `T.grid_launch_dependents()`, at every IR level.
pub(crate) fn grid(g: crate::func::GridControl) -> &'static str {
    match g {
        crate::func::GridControl::Wait => "T.grid_wait()",
        crate::func::GridControl::LaunchDependents => "T.grid_launch_dependents()",
    }
}

/// `old[j] = T.atomic_add(counter[i], value)` (without `old[j] = ` where the old value
/// goes nowhere).
pub(crate) fn atomic_add(a: &crate::func::AtomicAdd) -> String {
    let at = |b: &crate::expr::Buffer, idx: &[Expr]| {
        let idx: Vec<String> = idx.iter().map(expr_to_string).collect();
        format!("{}[{}]", b.name(), idx.join(", "))
    };
    let call = format!(
        "T.atomic_add({}, {})",
        at(&a.buffer, &a.indices),
        expr_to_string(&a.value)
    );
    match &a.old {
        Some((b, idx)) => format!("{} = {call}", at(b, idx)),
        None => call,
    }
}

pub(crate) fn line(out: &mut String, level: usize, text: &str) {
    for _ in 0..level {
        out.push_str(INDENT);
    }
    out.push_str(text);
    out.push('\n');
}

//! Retargeting a kernel's stores into a larger buffer: into a Concat's slice (every
//! store shifted along the Concat's axis, so the Concat itself costs no copy and no
//! kernel), or into a cache at positions read on the device ([`super::update`]).

use weft_ir::func::{Func, Param, Stmt};
use weft_ir::prelude::*;

/// Retargets `func`'s stores of `from` into `to` at `offset` along `axis`, and its
/// parameter `from` to `to`.
pub(crate) fn retarget(func: &mut Func, from: &Buffer, to: &Buffer, axis: usize, offset: i64) {
    retarget_by(func, from, to, &|idx: &mut Vec<Expr>| {
        idx[axis] = idx[axis].clone() + offset;
    });
}

/// Retargets `func`'s stores of `from` into `to`, each store's indices (in `to`'s
/// dimensions) rewritten by `shift`, and its parameter `from` to `to`.
pub(crate) fn retarget_by(
    func: &mut Func,
    from: &Buffer,
    to: &Buffer,
    shift: &dyn Fn(&mut Vec<Expr>),
) {
    rewrite(&mut func.body, from, to, shift);
    for p in &mut func.params {
        if matches!(p, Param::Buffer(b) if b == from) {
            *p = Param::Buffer(to.clone());
        }
    }
}

fn rewrite(s: &mut Stmt, from: &Buffer, to: &Buffer, shift: &dyn Fn(&mut Vec<Expr>)) {
    if let Stmt::Store {
        buffer, indices, ..
    } = s
        && buffer == from
    {
        *buffer = to.clone();
        shift(indices);
        return;
    }
    for i in 0..s.children().len() {
        if let Some(child) = s.child_mut(i) {
            rewrite(child, from, to, shift);
        }
    }
}

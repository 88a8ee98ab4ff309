//! Writing into a Concat's slice: every store of a kernel's output becomes a store into
//! the concatenated buffer, shifted along the Concat's axis — so the Concat itself costs
//! no copy and no kernel.

use weft_ir::func::{Func, Param, Stmt};
use weft_ir::prelude::*;

/// Retargets `func`'s stores of `from` into `to` at `offset` along `axis`, and its
/// parameter `from` to `to`.
pub(crate) fn retarget(func: &mut Func, from: &Buffer, to: &Buffer, axis: usize, offset: i64) {
    rewrite(&mut func.body, from, to, axis, offset);
    for p in &mut func.params {
        if matches!(p, Param::Buffer(b) if b == from) {
            *p = Param::Buffer(to.clone());
        }
    }
}

fn rewrite(s: &mut Stmt, from: &Buffer, to: &Buffer, axis: usize, offset: i64) {
    if let Stmt::Store {
        buffer, indices, ..
    } = s
        && buffer == from
    {
        *buffer = to.clone();
        indices[axis] = indices[axis].clone() + offset;
        return;
    }
    for i in 0..s.children().len() {
        if let Some(child) = s.child_mut(i) {
            rewrite(child, from, to, axis, offset);
        }
    }
}

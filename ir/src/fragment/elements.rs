//! Element-wise fragment operations ([`FragOp::Map`], [`FragOp::RowReduce`],
//! [`FragOp::Convert`]): their checks, and the one element layout weft emits them for.
//!
//! The operations are defined per element, whoever holds it. A target emits them only
//! where each thread knows which elements of a tile its registers hold. On CUDA that is
//! PTX's layout for `mma.m16n8k16` (two of them make weft's 16×16 tile; `g = lane / 4`,
//! `t = 2·(lane % 4)`):
//!
//! ```text
//! accumulator f32, 8 a lane:  c[4·nb + 2h + e] = C[g + 8h][8nb + t + e]
//! rows, 2 a lane:             r[h] = R[g + 8h]   (the same in the 4 lanes of a quad)
//! A f16, 4 × b32 a lane:      a[h + 2kb] = A[g + 8h][t + 8kb .. +1]
//! ```
//!
//! So a row's 16 values sit in the 4 lanes of one quad (a row reduction is each lane's
//! own 4 values, then two butterfly shuffles), and accumulator element `4kb + 2h + e`
//! is A element `(g + 8h, t + 8kb + e)`: an accumulator becomes the next product's A
//! operand in the registers that hold it, as FlashAttention-2 keeps P.

use super::{FragOp, FragRef, FragRole};
use crate::dtype::DType;

/// Checks an element-wise operation: roles, shapes and types (see [`FragOp`]).
pub(super) fn check(op: &FragOp) -> Result<(), String> {
    let plain_acc = |r: &FragRef| r.frag.role() == FragRole::Accumulator && !r.frag.is_warpgroup();
    match op {
        FragOp::Map {
            dst,
            row,
            col,
            args,
            value,
        } => {
            let rows = dst.frag.role() == FragRole::Rows;
            if !rows && !plain_acc(dst) {
                return Err(format!(
                    "map: `{}` is a {} fragment; maps write accumulators (of a warp) or rows",
                    dst.frag.name(),
                    dst.frag.role().name()
                ));
            }
            if value.dtype() != dst.frag.dtype() {
                return Err(format!(
                    "map: the value is {} but `{}` is {}",
                    value.dtype(),
                    dst.frag.name(),
                    dst.frag.dtype()
                ));
            }
            for v in [row, col] {
                if v.dtype() != DType::I32 {
                    return Err(format!(
                        "map: `{}` must be i32, not {}",
                        v.name(),
                        v.dtype()
                    ));
                }
            }
            for (v, r) in args {
                let fits = match r.frag.role() {
                    FragRole::Rows => r.frag.shape().m == dst.frag.shape().m,
                    FragRole::Accumulator => {
                        !rows && plain_acc(r) && r.frag.shape() == dst.frag.shape()
                    }
                    _ => false,
                };
                if !fits {
                    return Err(format!(
                        "map: `{}` ({} {}) cannot be read element by element into `{}` ({} {})",
                        r.frag.name(),
                        r.frag.role().name(),
                        r.frag.shape(),
                        dst.frag.name(),
                        dst.frag.role().name(),
                        dst.frag.shape()
                    ));
                }
                if v.dtype() != r.frag.dtype() {
                    return Err(format!(
                        "map: `{}` is {} but `{}` holds {}",
                        v.name(),
                        v.dtype(),
                        r.frag.name(),
                        r.frag.dtype()
                    ));
                }
            }
            Ok(())
        }
        FragOp::RowReduce {
            dst, src, tiles, ..
        } => {
            if dst.frag.role() != FragRole::Rows || !plain_acc(src) {
                return Err(format!(
                    "row reduction: `{}` must be rows and `{}` an accumulator of a warp",
                    dst.frag.name(),
                    src.frag.name()
                ));
            }
            if dst.frag.shape().m != src.frag.shape().m || dst.frag.dtype() != src.frag.dtype() {
                return Err(format!(
                    "row reduction: `{}` ({} {}) does not hold the rows of `{}` ({} {})",
                    dst.frag.name(),
                    dst.frag.dtype(),
                    dst.frag.shape(),
                    src.frag.name(),
                    src.frag.dtype(),
                    src.frag.shape()
                ));
            }
            if *tiles == 0 {
                return Err("row reduction over no tiles".to_string());
            }
            Ok(())
        }
        FragOp::Convert { dst, src } => {
            if dst.frag.role() != FragRole::A || !plain_acc(src) {
                return Err(format!(
                    "convert: `{}` must be an A fragment and `{}` an accumulator of a warp",
                    dst.frag.name(),
                    src.frag.name()
                ));
            }
            if dst.frag.dims() != src.frag.dims() {
                return Err(format!(
                    "convert: `{}` is {:?} but `{}` is {:?}",
                    dst.frag.name(),
                    dst.frag.dims(),
                    src.frag.name(),
                    src.frag.dims()
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

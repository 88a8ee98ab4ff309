//! Compiling fragment operations (tensor-core tiles, Hopper's swizzled stages and
//! mbarriers) into the interpreter's [`CFrag`] form.

use super::super::error::{InterpError, MemOp};
use super::super::fragment::{CBar, CFrag, CMem, CSwz, CTile};
use super::{Compiler, Loc};
use crate::expr::{Buffer, Expr, Var};
use crate::fragment::{FragOp, FragRef};
use crate::tma::{BarRef, SwizzledTile};

impl Compiler<'_> {
    fn tile(&mut self, r: &FragRef) -> Result<CTile, InterpError> {
        let Some(slot) = self.kernel.fragments.iter().position(|f| *f == r.frag) else {
            return Err(self.unsupported(format!(
                "fragment `{}` is not declared by the kernel",
                r.frag.name()
            )));
        };
        let index = self.expr(&r.index)?;
        if !self.ty(index).is_int() {
            return Err(self.mismatch(&r.index, "fragment index is not an integer"));
        }
        Ok(CTile {
            slot: slot as u32,
            index,
        })
    }

    fn frag_mem(
        &mut self,
        buffer: &Buffer,
        origin: &[Expr],
        stride: i64,
        op: MemOp,
    ) -> Result<CMem, InterpError> {
        let buf = self.buffer(buffer, op)?;
        let at = Expr::Load {
            buffer: buffer.clone(),
            indices: origin.to_vec(),
            lanes: 1,
        };
        let (origin, signed) = self.index(&at, origin)?;
        Ok(CMem {
            buf,
            origin,
            signed,
            stride,
        })
    }

    pub(super) fn frag(&mut self, op: &FragOp) -> Result<CFrag, InterpError> {
        op.check().map_err(|e| self.unsupported(e))?;
        Ok(match op {
            FragOp::Fill { dst, value } => {
                let dst = self.tile(dst)?;
                let v = self.expr(value)?;
                let want = self.kernel.fragments[dst.slot as usize].dtype();
                if self.ty(v) != want {
                    return Err(self.mismatch(value, format!("fill of a {want} fragment")));
                }
                CFrag::Fill { dst, value: v }
            }
            FragOp::Map {
                dst,
                row,
                col,
                args,
                value,
            } => {
                let dst = self.tile(dst)?;
                let args = args
                    .iter()
                    .map(|(v, r)| Ok((v, self.tile(r)?)))
                    .collect::<Result<Vec<_>, InterpError>>()?;
                // The element's coordinates and arguments are per thread (each lane takes
                // an element): columns the executor fills before evaluating `value`.
                let bound = |c: &mut Self, v: &Var| {
                    let col = c.new_col();
                    c.bind(v, Loc::Col(col), v.dtype());
                    col
                };
                let (row_col, col_col) = (bound(self, row), bound(self, col));
                let arg_cols: Vec<(u32, CTile)> =
                    args.iter().map(|&(v, t)| (bound(self, v), t)).collect();
                let v = self.expr(value);
                for var in [row, col].into_iter().chain(args.iter().map(|(v, _)| *v)) {
                    self.unbind(var);
                }
                CFrag::Map {
                    dst,
                    row: row_col,
                    col: col_col,
                    args: arg_cols,
                    value: v?,
                }
            }
            FragOp::RowReduce {
                dst,
                src,
                tiles,
                op,
            } => CFrag::RowReduce {
                dst: self.tile(dst)?,
                src: self.tile(src)?,
                tiles: *tiles,
                max: *op == crate::fragment::RowOp::Max,
            },
            FragOp::Convert { dst, src } => CFrag::Convert {
                dst: self.tile(dst)?,
                src: self.tile(src)?,
            },
            FragOp::Load {
                dst,
                buffer,
                origin,
                stride,
            } => CFrag::Load {
                dst: self.tile(dst)?,
                mem: self.frag_mem(buffer, origin, *stride, MemOp::Read)?,
            },
            FragOp::Store {
                src,
                buffer,
                origin,
                stride,
            } => CFrag::Store {
                src: self.tile(src)?,
                mem: self.frag_mem(buffer, origin, *stride, MemOp::Write)?,
            },
            FragOp::Mma { d, a, b, c } => CFrag::Mma {
                d: self.tile(d)?,
                a: self.tile(a)?,
                b: self.tile(b)?,
                c: self.tile(c)?,
            },
            FragOp::WgMma { d, a, b } => CFrag::WgMma {
                d: self.tile(d)?,
                a: self.swizzled(a)?,
                b: self.swizzled(b)?,
            },
            FragOp::WgFence => CFrag::WgFence,
            FragOp::WgCommit => CFrag::WgCommit,
            FragOp::WgWait { pending } => CFrag::WgWait(*pending),
            FragOp::Tma {
                dst,
                origin,
                src,
                coords,
                rows,
                bar,
            } => {
                let dst = self.frag_mem(dst, origin, 0, MemOp::Write)?;
                let src_slot = self.buffer(src, MemOp::Read)?;
                let coords = coords
                    .iter()
                    .map(|c| {
                        let n = self.expr(c)?;
                        if !self.ty(n).is_int() {
                            return Err(self.mismatch(c, "a TMA coordinate is not an integer"));
                        }
                        Ok(n)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                CFrag::Tma {
                    dst,
                    src: src_slot,
                    coords,
                    rows: *rows,
                    bar: self.bar(bar)?,
                }
            }
            FragOp::BarInit { bar, arrivals } => CFrag::BarInit {
                bar: self.bar(bar)?,
                arrivals: *arrivals,
            },
            FragOp::BarExpect { bar, bytes } => CFrag::BarExpect {
                bar: self.bar(bar)?,
                bytes: *bytes,
            },
            FragOp::BarWait { bar, parity } => {
                let bar = self.bar(bar)?;
                let p = self.expr(parity)?;
                if !self.ty(p).is_int() {
                    return Err(self.mismatch(parity, "an mbarrier parity is not an integer"));
                }
                CFrag::BarWait { bar, parity: p }
            }
        })
    }

    fn swizzled(&mut self, t: &SwizzledTile) -> Result<CSwz, InterpError> {
        let mem = self.frag_mem(&t.buffer, &t.origin, 0, MemOp::Read)?;
        self.async_read.insert(mem.buf);
        Ok(CSwz {
            buf: mem.buf,
            origin: mem.origin,
            signed: mem.signed,
            major: t.major,
            box_elems: t.box_elems,
        })
    }

    fn bar(&mut self, b: &BarRef) -> Result<CBar, InterpError> {
        let slot = match self.mbars.iter().position(|m| *m == b.bar) {
            Some(i) => i,
            None => {
                self.mbars.push(b.bar.clone());
                self.mbars.len() - 1
            }
        };
        let index = self.expr(&b.index)?;
        if !self.ty(index).is_int() {
            return Err(self.mismatch(&b.index, "an mbarrier index is not an integer"));
        }
        Ok(CBar {
            slot: slot as u32,
            index,
        })
    }
}

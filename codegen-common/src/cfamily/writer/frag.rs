//! The writer's matrix-fragment and Hopper operations (`wgmma`, TMA, mbarriers): each
//! [`FragOp`] as one call of the dialect's fragment helpers.

use weft_ir::expr::{Buffer, Expr};
use weft_ir::fragment::{FragOp, FragRef};

use super::Writer;
use crate::cfamily::Dialect;
use crate::error::EmitError;
use crate::names::NameKey;

impl<D: Dialect> Writer<'_, D> {
    /// `frag[index]`: one tile of a fragment array.
    fn tile_ref(&mut self, r: &FragRef) -> Result<String, EmitError> {
        let name = self.name(NameKey::Buffer(r.frag.id()), r.frag.name())?;
        Ok(format!("{name}[{}]", self.expr(&r.index)?.0))
    }

    /// `name + origin`: a pointer to a tile's first element (one flat origin).
    fn tile_ptr(&mut self, b: &Buffer, origin: &[Expr]) -> Result<String, EmitError> {
        let name = self.buffer_name(b)?;
        let [o] = origin else {
            return Err(self.invalid(format!("tile of `{}` without a flat origin", b.name())));
        };
        Ok(match o.as_int() {
            Some(0) => name,
            _ => format!("{name} + {}", self.expr(o)?.0),
        })
    }

    /// A fragment operation, without the trailing `;`.
    pub(super) fn frag(&mut self, op: &FragOp) -> Result<String, EmitError> {
        let Some(fd) = self.d.fragments() else {
            return Err(self.unsupported("matrix fragments".into()));
        };
        let tile = |w: &mut Self, r: &FragRef| w.tile_ref(r);
        let ptr = |w: &mut Self, b: &Buffer, origin: &[Expr]| w.tile_ptr(b, origin);
        Ok(match op {
            FragOp::Fill { dst, value } => {
                let t = tile(self, dst)?;
                let v = self.expr(value)?.0;
                fd.fill(&dst.frag, &t, &v)
            }
            FragOp::Load { dst, .. } if dst.frag.is_warpgroup() => {
                return Err(self.unsupported(format!(
                    "a load of warpgroup accumulator `{}` (wgmma accumulators start filled)",
                    dst.frag.name()
                )));
            }
            FragOp::Load {
                dst,
                buffer,
                origin,
                stride,
            } => {
                let t = tile(self, dst)?;
                let p = ptr(self, buffer, origin)?;
                fd.load(&dst.frag, &t, &p, *stride, buffer.scope())
            }
            FragOp::Store {
                src,
                buffer,
                origin,
                stride,
            } => {
                let t = tile(self, src)?;
                let p = ptr(self, buffer, origin)?;
                fd.store(&src.frag, &t, &p, *stride).map_err(|why| {
                    self.unsupported(format!("a store of fragment `{}`: {why}", src.frag.name()))
                })?
            }
            FragOp::Map {
                dst,
                row,
                col,
                args,
                value,
            } => {
                let t = tile(self, dst)?;
                let arg_tiles = args
                    .iter()
                    .map(|(_, r)| tile(self, r))
                    .collect::<Result<Vec<_>, _>>()?;
                // The element's names live in the statement's own scope.
                self.namer.push_scope();
                let mut declare =
                    |v: &weft_ir::expr::Var| self.namer.declare(NameKey::Var(v.id()), v.name());
                // Coordinates the value does not read are not declared.
                let mut coord = |v: &weft_ir::expr::Var| value.uses_var(v).then(|| declare(v));
                let (row_name, col_name) = (coord(row), coord(col));
                let names: Vec<String> = args.iter().map(|(v, _)| declare(v)).collect();
                let v = self.expr(value);
                self.namer.pop_scope();
                let m = crate::cfamily::ElementMap {
                    dst: &dst.frag,
                    tile: t,
                    row: row_name,
                    col: col_name,
                    args: names
                        .into_iter()
                        .zip(args.iter().zip(arg_tiles))
                        .map(|(n, ((_, r), t))| (n, &r.frag, t))
                        .collect(),
                    value: v?.0,
                };
                fd.map(&m).map_err(|why| {
                    self.unsupported(format!("a map of `{}`: {why}", dst.frag.name()))
                })?
            }
            FragOp::RowReduce {
                dst,
                src,
                tiles,
                op,
            } => {
                let (d, first) = (tile(self, dst)?, tile(self, src)?);
                let max = *op == weft_ir::fragment::RowOp::Max;
                fd.row_reduce(&d, &src.frag, &first, *tiles, max)
                    .map_err(|why| {
                        self.unsupported(format!("a row reduction of `{}`: {why}", src.frag.name()))
                    })?
            }
            FragOp::Convert { dst, src } => {
                let (d, s) = (tile(self, dst)?, tile(self, src)?);
                fd.convert(&dst.frag, &d, &src.frag, &s).map_err(|why| {
                    self.unsupported(format!("a conversion of `{}`: {why}", src.frag.name()))
                })?
            }
            FragOp::Mma { d, a, b, c } => {
                let acc = d.frag.clone();
                let [d, a, b, c] = [
                    tile(self, d)?,
                    tile(self, a)?,
                    tile(self, b)?,
                    tile(self, c)?,
                ];
                fd.mma(&acc, &d, &a, &b, &c)
            }
            other => {
                let text = self.hopper(fd, other)?;
                return text.map_err(|why| self.unsupported(why));
            }
        })
    }

    /// Hopper's asynchronous operations ([`weft_ir::tma`]), through the dialect; the
    /// inner `Err` says why the dialect has no spelling for one.
    fn hopper(
        &mut self,
        fd: &dyn crate::cfamily::FragmentDialect,
        op: &FragOp,
    ) -> Result<Result<String, String>, EmitError> {
        let ptr = |w: &mut Self, b: &Buffer, origin: &[Expr]| w.tile_ptr(b, origin);
        let bar = |w: &mut Self, b: &weft_ir::tma::BarRef| -> Result<String, EmitError> {
            let name = w.name(NameKey::Buffer(b.bar.id()), b.bar.name())?;
            Ok(format!("&{name}[{}]", w.expr(&b.index)?.0))
        };
        Ok(match op {
            FragOp::WgMma { d, a, b } => {
                let t = self.tile_ref(d)?;
                let (pa, pb) = (
                    ptr(self, &a.buffer, &a.origin)?,
                    ptr(self, &b.buffer, &b.origin)?,
                );
                fd.wgmma(&d.frag, &t, &pa, &pb, b.box_elems * 2)
            }
            FragOp::WgFence => fd.wgmma_sync("fence", 0),
            FragOp::WgCommit => fd.wgmma_sync("commit", 0),
            FragOp::WgWait { pending } => fd.wgmma_sync("wait", *pending),
            FragOp::Tma {
                dst,
                origin,
                src,
                coords,
                rows,
                bar: b,
            } => {
                let maps = self.kernel.tensor_maps();
                let Some(i) = maps
                    .iter()
                    .position(|m| m.buffer == *src && m.rows == *rows)
                else {
                    return Err(self.invalid(format!("no tensor map for `{}`", src.name())));
                };
                let map = self.name(NameKey::TensorMap(i), src.name())?;
                let p = ptr(self, dst, origin)?;
                // Innermost first, as the tensor map's dimensions.
                let mut cs = Vec::new();
                for c in coords.iter().rev() {
                    cs.push(self.expr(c)?.0);
                }
                let bp = bar(self, b)?;
                fd.tma_load(&p, &map, &cs, &bp)
            }
            FragOp::BarInit { bar: b, arrivals } => {
                let bp = bar(self, b)?;
                fd.mbarrier_op("init", &bp, &arrivals.to_string())
            }
            FragOp::BarExpect { bar: b, bytes } => {
                let bp = bar(self, b)?;
                fd.mbarrier_op("expect", &bp, &bytes.to_string())
            }
            FragOp::BarWait { bar: b, parity } => {
                let bp = bar(self, b)?;
                let p = self.expr(parity)?.0;
                fd.mbarrier_op("wait", &bp, &p)
            }
            _ => Err("not a Hopper operation".to_string()),
        })
    }
}

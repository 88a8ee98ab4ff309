//! What the IR's passes ask of a [`FragOp`]: its expressions and accesses (to rewrite,
//! bound and fuse them), the threads that run it, and its checks.

use super::{FragLayout, FragOp, FragRef, FragRole, Fragment, WARPGROUP, elements};
use crate::dtype::DType;
use crate::expr::{Buffer, Expr, Scope};
use crate::tma::{BarRef, Major, ROW, SwizzledTile};

/// Columns of a warpgroup MMA's `B` operand and accumulator, and the operand tiles'
/// shapes: `A` is 64 × 16, `B` is 16 × `n`.
fn wg_dims(d: &FragRef) -> (i64, i64, i64) {
    let s = d.frag.shape();
    (s.m as i64, s.n as i64, s.k as i64)
}

impl FragOp {
    /// Every expression of the operation: fragment indices, the fill value, the origin.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            FragOp::Fill { dst, value } => vec![&dst.index, value],
            FragOp::Map {
                dst, args, value, ..
            } => std::iter::once(&dst.index)
                .chain(args.iter().map(|(_, r)| &r.index))
                .chain([value])
                .collect(),
            FragOp::RowReduce { dst, src, .. } | FragOp::Convert { dst, src } => {
                vec![&dst.index, &src.index]
            }
            FragOp::Load { dst: r, origin, .. } | FragOp::Store { src: r, origin, .. } => {
                std::iter::once(&r.index).chain(origin).collect()
            }
            FragOp::Mma { d, a, b, c } => vec![&d.index, &a.index, &b.index, &c.index],
            FragOp::WgMma { d, a, b } => std::iter::once(&d.index)
                .chain(&a.origin)
                .chain(&b.origin)
                .collect(),
            FragOp::WgFence | FragOp::WgCommit | FragOp::WgWait { .. } => vec![],
            FragOp::Tma {
                origin,
                coords,
                bar,
                ..
            } => origin
                .iter()
                .chain(coords)
                .chain(std::iter::once(&bar.index))
                .collect(),
            FragOp::BarInit { bar, .. } | FragOp::BarExpect { bar, .. } => vec![&bar.index],
            FragOp::BarWait { bar, parity } => vec![&bar.index, parity],
        }
    }

    /// The operation with every expression passed through `f`.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> FragOp {
        let bar = |b: &BarRef, f: &mut dyn FnMut(&Expr) -> Expr| BarRef {
            bar: b.bar.clone(),
            index: f(&b.index),
        };
        let tile = |t: &SwizzledTile, f: &mut dyn FnMut(&Expr) -> Expr| SwizzledTile {
            origin: t.origin.iter().map(&mut *f).collect(),
            ..t.clone()
        };
        match self {
            FragOp::Fill { dst, value } => FragOp::Fill {
                dst: dst.map(f),
                value: f(value),
            },
            FragOp::Map {
                dst,
                row,
                col,
                args,
                value,
            } => FragOp::Map {
                dst: dst.map(f),
                row: row.clone(),
                col: col.clone(),
                args: args.iter().map(|(v, r)| (v.clone(), r.map(f))).collect(),
                value: f(value),
            },
            FragOp::RowReduce {
                dst,
                src,
                tiles,
                op,
            } => FragOp::RowReduce {
                dst: dst.map(f),
                src: src.map(f),
                tiles: *tiles,
                op: *op,
            },
            FragOp::Convert { dst, src } => FragOp::Convert {
                dst: dst.map(f),
                src: src.map(f),
            },
            FragOp::Load {
                dst,
                buffer,
                origin,
                stride,
            } => FragOp::Load {
                dst: dst.map(f),
                buffer: buffer.clone(),
                origin: origin.iter().map(&mut *f).collect(),
                stride: *stride,
            },
            FragOp::Store {
                src,
                buffer,
                origin,
                stride,
            } => FragOp::Store {
                src: src.map(f),
                buffer: buffer.clone(),
                origin: origin.iter().map(&mut *f).collect(),
                stride: *stride,
            },
            FragOp::Mma { d, a, b, c } => FragOp::Mma {
                d: d.map(f),
                a: a.map(f),
                b: b.map(f),
                c: c.map(f),
            },
            FragOp::WgMma { d, a, b } => FragOp::WgMma {
                d: d.map(f),
                a: tile(a, f),
                b: tile(b, f),
            },
            FragOp::WgFence | FragOp::WgCommit | FragOp::WgWait { .. } => self.clone(),
            FragOp::Tma {
                dst,
                origin,
                src,
                coords,
                rows,
                bar: b,
            } => FragOp::Tma {
                dst: dst.clone(),
                origin: origin.iter().map(&mut *f).collect(),
                src: src.clone(),
                coords: coords.iter().map(&mut *f).collect(),
                rows: *rows,
                bar: bar(b, f),
            },
            FragOp::BarInit { bar: b, arrivals } => FragOp::BarInit {
                bar: bar(b, f),
                arrivals: *arrivals,
            },
            FragOp::BarExpect { bar: b, bytes } => FragOp::BarExpect {
                bar: bar(b, f),
                bytes: *bytes,
            },
            FragOp::BarWait { bar: b, parity } => FragOp::BarWait {
                bar: bar(b, f),
                parity: f(parity),
            },
        }
    }

    /// The one buffer a fragment load or store touches, and whether it writes it.
    pub fn buffer(&self) -> Option<(&Buffer, bool)> {
        self.access().map(|(b, _, writes)| (b, writes))
    }

    /// The buffer a fragment load or store touches, the tile's origin in it, and whether
    /// it writes ([`FragOp::accesses`] for every operation).
    pub fn access(&self) -> Option<(&Buffer, &[Expr], bool)> {
        match self {
            FragOp::Load { buffer, origin, .. } => Some((buffer, origin, false)),
            FragOp::Store { buffer, origin, .. } => Some((buffer, origin, true)),
            _ => None,
        }
    }

    /// Every shared or local region the operation touches through an origin: the buffer,
    /// the origin, and whether it writes. A TMA copy's global source is addressed by
    /// coordinates, not an origin, and is not among them ([`FragOp::tma_source`]).
    pub fn accesses(&self) -> Vec<(&Buffer, &[Expr], bool)> {
        match self {
            FragOp::WgMma { a, b, .. } => vec![
                (&a.buffer, a.origin.as_slice(), false),
                (&b.buffer, b.origin.as_slice(), false),
            ],
            FragOp::Tma { dst, origin, .. } => vec![(dst, origin.as_slice(), true)],
            other => other.access().into_iter().collect(),
        }
    }

    /// The same operation with its [`FragOp::accesses`] replaced, in order (lowering
    /// flattens the origins and may move a buffer).
    pub fn with_accesses(&self, mut new: Vec<(Buffer, Vec<Expr>)>) -> FragOp {
        let mut next = || new.remove(0);
        match self {
            FragOp::Load { dst, stride, .. } => {
                let (buffer, origin) = next();
                FragOp::Load {
                    dst: dst.clone(),
                    buffer,
                    origin,
                    stride: *stride,
                }
            }
            FragOp::Store { src, stride, .. } => {
                let (buffer, origin) = next();
                FragOp::Store {
                    src: src.clone(),
                    buffer,
                    origin,
                    stride: *stride,
                }
            }
            FragOp::WgMma { d, a, b } => {
                let (ab, ao) = next();
                let (bb, bo) = next();
                FragOp::WgMma {
                    d: d.clone(),
                    a: SwizzledTile {
                        buffer: ab,
                        origin: ao,
                        ..a.clone()
                    },
                    b: SwizzledTile {
                        buffer: bb,
                        origin: bo,
                        ..b.clone()
                    },
                }
            }
            FragOp::Tma {
                src,
                coords,
                rows,
                bar,
                ..
            } => {
                let (dst, origin) = next();
                FragOp::Tma {
                    dst,
                    origin,
                    src: src.clone(),
                    coords: coords.clone(),
                    rows: *rows,
                    bar: bar.clone(),
                }
            }
            other => other.clone(),
        }
    }

    /// The same operation on another buffer at another origin (lowering flattens).
    pub fn with_access(&self, buffer: Buffer, origin: Vec<Expr>) -> FragOp {
        self.with_accesses(vec![(buffer, origin)])
    }

    /// The global tensor a TMA copy reads.
    pub fn tma_source(&self) -> Option<&Buffer> {
        match self {
            FragOp::Tma { src, .. } => Some(src),
            _ => None,
        }
    }

    /// The mbarrier the operation names.
    pub fn mbarrier(&self) -> Option<&BarRef> {
        match self {
            FragOp::Tma { bar, .. }
            | FragOp::BarInit { bar, .. }
            | FragOp::BarExpect { bar, .. }
            | FragOp::BarWait { bar, .. } => Some(bar),
            _ => None,
        }
    }

    /// Threads that run the operation together: a warp for fragment operations, a
    /// warpgroup for `wgmma` and its fences, and each thread on its own (1) for TMA
    /// copies and mbarrier operations.
    pub fn threads(&self) -> u32 {
        match self {
            FragOp::WgMma { .. } | FragOp::WgFence | FragOp::WgCommit | FragOp::WgWait { .. } => {
                WARPGROUP
            }
            FragOp::Tma { .. }
            | FragOp::BarInit { .. }
            | FragOp::BarExpect { .. }
            | FragOp::BarWait { .. } => 1,
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. }
            | FragOp::Map { dst: r, .. }
            | FragOp::RowReduce { dst: r, .. }
            | FragOp::Convert { dst: r, .. } => r.frag.threads(),
            FragOp::Mma { d, .. } => d.frag.threads(),
        }
    }

    /// The fragments the operation names, in order.
    pub fn fragments(&self) -> Vec<&Fragment> {
        match self {
            FragOp::Map { .. } | FragOp::RowReduce { .. } | FragOp::Convert { .. } => {
                self.frag_refs().into_iter().map(|r| &r.frag).collect()
            }
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. }
            | FragOp::WgMma { d: r, .. } => vec![&r.frag],
            FragOp::Mma { d, a, b, c } => vec![&d.frag, &a.frag, &b.frag, &c.frag],
            _ => vec![],
        }
    }

    /// The fragment tiles the operation names, in order.
    pub fn frag_refs(&self) -> Vec<&FragRef> {
        match self {
            FragOp::Map { dst, args, .. } => std::iter::once(dst)
                .chain(args.iter().map(|(_, r)| r))
                .collect(),
            FragOp::RowReduce { dst, src, .. } | FragOp::Convert { dst, src } => vec![dst, src],
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. }
            | FragOp::WgMma { d: r, .. } => vec![r],
            FragOp::Mma { d, a, b, c } => vec![d, a, b, c],
            _ => vec![],
        }
    }

    /// Checks roles, shapes and types: `Mma` takes an `A`, a `B` and two accumulators of
    /// one shape, `A` and `B` of one type; a tile's rows fit its stride; a `wgmma` takes
    /// a warpgroup accumulator and f16 tiles of shared buffers; a TMA copy goes from a
    /// global tensor to a shared buffer of the same type.
    pub fn check(&self) -> Result<(), String> {
        match self {
            FragOp::Map { .. } | FragOp::RowReduce { .. } | FragOp::Convert { .. } => {
                elements::check(self)
            }
            FragOp::Mma { d, a, b, c } => {
                let roles = [
                    (d, FragRole::Accumulator),
                    (a, FragRole::A),
                    (b, FragRole::B),
                    (c, FragRole::Accumulator),
                ];
                for (r, role) in roles {
                    if r.frag.role() != role {
                        return Err(format!(
                            "mma: `{}` is a {} fragment where a {} is expected",
                            r.frag.name(),
                            r.frag.role().name(),
                            role.name()
                        ));
                    }
                }
                if let Some(r) = [d, a, b, c].into_iter().find(|r| r.frag.is_warpgroup()) {
                    return Err(format!(
                        "mma: `{}` is a warpgroup accumulator (m64); it takes wgmma",
                        r.frag.name()
                    ));
                }
                let shape = d.frag.shape();
                if let Some(r) = [a, b, c].into_iter().find(|r| r.frag.shape() != shape) {
                    return Err(format!(
                        "mma: `{}` is {} but `{}` is {}",
                        r.frag.name(),
                        r.frag.shape(),
                        d.frag.name(),
                        shape
                    ));
                }
                if a.frag.dtype() != b.frag.dtype() || d.frag.dtype() != c.frag.dtype() {
                    return Err(format!(
                        "mma: A and B must share a type ({} vs {}), as must C and D ({} vs {})",
                        a.frag.dtype(),
                        b.frag.dtype(),
                        c.frag.dtype(),
                        d.frag.dtype()
                    ));
                }
                Ok(())
            }
            FragOp::Load {
                dst: r,
                buffer,
                stride,
                ..
            }
            | FragOp::Store {
                src: r,
                buffer,
                stride,
                ..
            } => {
                if r.frag.role() == FragRole::Rows {
                    return Err(format!(
                        "`{}` holds rows: it is neither loaded nor stored (map it into an accumulator)",
                        r.frag.name()
                    ));
                }
                let (rows, cols) = r.frag.dims();
                let along = match r.frag.layout() {
                    FragLayout::RowMajor => cols,
                    FragLayout::ColMajor => rows,
                };
                if buffer.dtype() != r.frag.dtype() {
                    return Err(format!(
                        "`{}` is {} but fragment `{}` is {}",
                        buffer.name(),
                        buffer.dtype(),
                        r.frag.name(),
                        r.frag.dtype()
                    ));
                }
                if *stride < along as i64 {
                    return Err(format!(
                        "`{}`: rows {stride} elements apart cannot hold a tile {along} wide",
                        buffer.name()
                    ));
                }
                Ok(())
            }
            FragOp::WgMma { d, a, b } => {
                let (m, n, k) = wg_dims(d);
                if !d.frag.is_warpgroup() || d.frag.dtype() != DType::F32 || k != 16 {
                    return Err(format!(
                        "wgmma: `{}` must be an f32 m64nNk16 accumulator, not a {} {} {}",
                        d.frag.name(),
                        d.frag.dtype(),
                        d.frag.role().name(),
                        d.frag.shape()
                    ));
                }
                if n % 8 != 0 || !(8..=256).contains(&n) || (n > ROW && n % ROW != 0) {
                    return Err(format!(
                        "wgmma: n = {n} must be a multiple of 8 up to 64, or of 64 up to 256"
                    ));
                }
                for (t, major, what) in [(a, Major::K, "A"), (b, Major::Mn, "B")] {
                    if t.major != major {
                        return Err(format!(
                            "wgmma: the {what} tile `{}` must be {}",
                            t.buffer.name(),
                            major.name()
                        ));
                    }
                    if t.buffer.dtype() != DType::F16 || t.buffer.scope() != Scope::Shared {
                        return Err(format!(
                            "wgmma: the {what} tile `{}` must be a shared f16 buffer, not {} {}",
                            t.buffer.name(),
                            t.buffer.scope().name(),
                            t.buffer.dtype()
                        ));
                    }
                }
                if n > ROW && b.box_elems < 16 * ROW {
                    return Err(format!(
                        "wgmma: the B tile `{}` has boxes {} elements apart, fewer than a 16-row box",
                        b.buffer.name(),
                        b.box_elems
                    ));
                }
                let _ = m;
                Ok(())
            }
            FragOp::Tma {
                dst,
                src,
                coords,
                rows,
                ..
            } => {
                if dst.scope() != Scope::Shared || src.scope() != Scope::Global {
                    return Err(format!(
                        "tma: copies a global tensor into shared memory, not `{}` ({}) into `{}` ({})",
                        src.name(),
                        src.scope().name(),
                        dst.name(),
                        dst.scope().name()
                    ));
                }
                if dst.dtype() != DType::F16 || src.dtype() != DType::F16 {
                    return Err(format!(
                        "tma: copies f16 tensors, not `{}` ({}) into `{}` ({})",
                        src.name(),
                        src.dtype(),
                        dst.name(),
                        dst.dtype()
                    ));
                }
                if coords.len() != src.ndim() || !(2..=3).contains(&src.ndim()) {
                    return Err(format!(
                        "tma: `{}` has {} dimensions and {} coordinates; copies take 2 or 3 of each",
                        src.name(),
                        src.ndim(),
                        coords.len()
                    ));
                }
                if !(1..=256).contains(rows) {
                    return Err(format!("tma: a box of {rows} rows; 1 to 256"));
                }
                Ok(())
            }
            FragOp::Fill { .. }
            | FragOp::WgFence
            | FragOp::WgCommit
            | FragOp::WgWait { .. }
            | FragOp::BarInit { .. }
            | FragOp::BarExpect { .. }
            | FragOp::BarWait { .. } => Ok(()),
        }
    }
}

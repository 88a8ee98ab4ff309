//! Matrix fragments: a warp's (or simdgroup's) tile of a matrix, the operand of the
//! matrix units (tensor cores, cooperative matrices, simdgroup matrices).
//!
//! A [`Fragment`] is an array of `count` tiles, each the whole matrix of one operand of
//! `D = A·B + C` for an `m×n×k` multiply: `A` is `m×k`, `B` is `k×n`, the accumulator is
//! `m×n`. It belongs to a warp, not a thread: the 32 threads of a warp execute every
//! [`FragOp`] together, with the same arguments, as `wmma::*_sync`, `coopLoad` and
//! `simdgroup_load` require. So fragment operations sit inside a task mapping whose
//! worker is the warp (`threadIdx.x / 32`), under conditions that are uniform per warp;
//! the interpreter checks both and reports a divergent or non-uniform use as an error.
//!
//! A tile in memory starts at an element (`origin`) and has its rows `stride` elements
//! apart. Element `(i, j)` of a row-major tile is at `origin + i·stride + j`; of a
//! column-major tile at `origin + j·stride + i` (the buffer holds the transpose).
//! Accumulators are always loaded and stored row-major; an `A` or `B` tile is stored in
//! its own layout (a template copies operand tiles global → shared through fragments where
//! element-wise copies are slow: WGSL stores an f16 at a time).
//!
//! In the printed IR (TVM's spelling):
//!
//! ```text
//! acc = T.alloc_fragment("accumulator", m=16, n=16, k=16, "float32", count=4)
//! T.tvm_fill_fragment(acc[i], T.float32(0))
//! T.tvm_load_matrix_sync(a[0], A_shared[(w * 16) * 40], stride=40, "row_major")
//! T.tvm_mma_sync(acc[i], a[0], b[i], acc[i])
//! T.tvm_store_matrix_sync(acc[i], C_shared[...], stride=72)
//! ```

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::dtype::DType;
use crate::expr::{Buffer, Expr, fresh_id};

/// Threads that execute a fragment operation together (a CUDA warp, a Metal simdgroup,
/// a Vulkan subgroup of 32).
pub const WARP: u32 = 32;

/// The operand a fragment holds in `D = A·B + C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragRole {
    A,
    B,
    Accumulator,
}

impl FragRole {
    /// TVM's scope name: `matrix_a`, `matrix_b`, `accumulator`.
    pub fn name(self) -> &'static str {
        match self {
            FragRole::A => "matrix_a",
            FragRole::B => "matrix_b",
            FragRole::Accumulator => "accumulator",
        }
    }
}

/// How an operand tile is laid out in memory (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragLayout {
    RowMajor,
    ColMajor,
}

impl FragLayout {
    pub fn name(self) -> &'static str {
        match self {
            FragLayout::RowMajor => "row_major",
            FragLayout::ColMajor => "col_major",
        }
    }
}

/// The shape of one matrix multiply-accumulate: `m×k` times `k×n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MmaShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl fmt::Display for MmaShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m{}n{}k{}", self.m, self.n, self.k)
    }
}

struct FragNode {
    id: u64,
    name: String,
    role: FragRole,
    shape: MmaShape,
    dtype: DType,
    layout: FragLayout,
    count: u32,
}

/// An array of `count` fragments of one role, shape, element type and layout.
#[derive(Clone)]
pub struct Fragment(Arc<FragNode>);

impl Fragment {
    /// A new fragment array. The layout matters for `A` and `B` only (accumulators are
    /// row-major). Checked where templates declare it ([`crate::template`]).
    pub fn new(
        name: impl Into<String>,
        role: FragRole,
        shape: MmaShape,
        dtype: DType,
        layout: FragLayout,
        count: u32,
    ) -> Fragment {
        let layout = match role {
            FragRole::Accumulator => FragLayout::RowMajor,
            _ => layout,
        };
        Fragment(Arc::new(FragNode {
            id: fresh_id(),
            name: name.into(),
            role,
            shape,
            dtype,
            layout,
            count,
        }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn role(&self) -> FragRole {
        self.0.role
    }
    pub fn shape(&self) -> MmaShape {
        self.0.shape
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn layout(&self) -> FragLayout {
        self.0.layout
    }
    /// How many tiles the array holds.
    pub fn count(&self) -> u32 {
        self.0.count
    }

    /// Rows and columns of one tile: `m×k` for `A`, `k×n` for `B`, `m×n` for the
    /// accumulator.
    pub fn dims(&self) -> (u32, u32) {
        let s = self.0.shape;
        match self.0.role {
            FragRole::A => (s.m, s.k),
            FragRole::B => (s.k, s.n),
            FragRole::Accumulator => (s.m, s.n),
        }
    }

    /// Elements of one tile.
    pub fn tile_len(&self) -> usize {
        let (r, c) = self.dims();
        r as usize * c as usize
    }

    /// Offset (relative to a tile's origin) of element `(i, j)` for a tile with rows
    /// `stride` apart.
    pub fn offset(&self, i: u32, j: u32, stride: i64) -> i64 {
        match self.0.layout {
            FragLayout::RowMajor => i as i64 * stride + j as i64,
            FragLayout::ColMajor => j as i64 * stride + i as i64,
        }
    }
}

impl PartialEq for Fragment {
    fn eq(&self, other: &Fragment) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Fragment {}
impl Hash for Fragment {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}

impl fmt::Debug for Fragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {} {}",
            self.0.name,
            self.0.role.name(),
            self.0.shape,
            self.0.dtype
        )
    }
}

/// One tile of a fragment array: `frag[index]`.
#[derive(Clone, Debug)]
pub struct FragRef {
    pub frag: Fragment,
    pub index: Expr,
}

impl FragRef {
    fn map(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> FragRef {
        FragRef {
            frag: self.frag.clone(),
            index: f(&self.index),
        }
    }
}

/// A warp-wide fragment operation. In the Func IR `origin` holds one index per buffer
/// dimension; in a lowered kernel, one flat index.
#[derive(Clone, Debug)]
pub enum FragOp {
    /// Every element of `dst` becomes `value`.
    Fill { dst: FragRef, value: Expr },
    /// `dst` ← the tile of `buffer` at `origin`, rows `stride` apart.
    Load {
        dst: FragRef,
        buffer: Buffer,
        origin: Vec<Expr>,
        stride: i64,
    },
    /// The tile of `buffer` at `origin` ← `src` (an accumulator), row-major.
    Store {
        src: FragRef,
        buffer: Buffer,
        origin: Vec<Expr>,
        stride: i64,
    },
    /// `d = a·b + c`, products and sums in the accumulator's type.
    Mma {
        d: FragRef,
        a: FragRef,
        b: FragRef,
        c: FragRef,
    },
}

impl FragOp {
    /// Every expression of the operation: fragment indices, the fill value, the origin.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            FragOp::Fill { dst, value } => vec![&dst.index, value],
            FragOp::Load { dst: r, origin, .. } | FragOp::Store { src: r, origin, .. } => {
                std::iter::once(&r.index).chain(origin).collect()
            }
            FragOp::Mma { d, a, b, c } => vec![&d.index, &a.index, &b.index, &c.index],
        }
    }

    /// The operation with every expression passed through `f`.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> FragOp {
        match self {
            FragOp::Fill { dst, value } => FragOp::Fill {
                dst: dst.map(f),
                value: f(value),
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
        }
    }

    /// The buffer the operation touches, and whether it writes it.
    pub fn buffer(&self) -> Option<(&Buffer, bool)> {
        self.access().map(|(b, _, writes)| (b, writes))
    }

    /// The buffer the operation touches, the tile's origin in it, and whether it writes.
    pub fn access(&self) -> Option<(&Buffer, &[Expr], bool)> {
        match self {
            FragOp::Load { buffer, origin, .. } => Some((buffer, origin, false)),
            FragOp::Store { buffer, origin, .. } => Some((buffer, origin, true)),
            FragOp::Fill { .. } | FragOp::Mma { .. } => None,
        }
    }

    /// The same operation on another buffer at another origin (lowering flattens).
    pub fn with_access(&self, buffer: Buffer, origin: Vec<Expr>) -> FragOp {
        match self {
            FragOp::Load { dst, stride, .. } => FragOp::Load {
                dst: dst.clone(),
                buffer,
                origin,
                stride: *stride,
            },
            FragOp::Store { src, stride, .. } => FragOp::Store {
                src: src.clone(),
                buffer,
                origin,
                stride: *stride,
            },
            other => other.clone(),
        }
    }

    /// The fragments the operation names, in order.
    pub fn fragments(&self) -> Vec<&Fragment> {
        match self {
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. } => vec![&r.frag],
            FragOp::Mma { d, a, b, c } => vec![&d.frag, &a.frag, &b.frag, &c.frag],
        }
    }

    /// Checks roles, shapes and types: `Mma` takes an `A`, a `B` and two accumulators of
    /// one shape, `A` and `B` of one type; a tile's rows fit its stride.
    pub fn check(&self) -> Result<(), String> {
        match self {
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
            FragOp::Fill { .. } => Ok(()),
        }
    }
}

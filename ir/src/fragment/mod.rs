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
//! Element-wise work on accumulators ([`FragOp::Map`], [`FragOp::RowReduce`],
//! [`FragOp::Convert`]) and the per-row values of a [`FragRole::Rows`] fragment keep a
//! flash-attention step in registers: the scores' row maxima and sums, the
//! probabilities, the output's rescaling. Their semantics are stated per element (row
//! `i`, column `j` of a tile); which thread holds which element is the target's
//! ([`elements`] has CUDA's), so only targets whose fragments expose their elements
//! emit them (`TargetLimits::fragment_elements`).
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
use crate::expr::{Buffer, Expr, Var, fresh_id};
use crate::tma::{BarRef, SwizzledTile};

pub mod elements;
mod ops;

/// Threads that execute a fragment operation together (a CUDA warp, a Metal simdgroup,
/// a Vulkan subgroup of 32).
pub const WARP: u32 = 32;

/// Threads of a warpgroup: the four consecutive warps that run a `wgmma` together.
pub const WARPGROUP: u32 = 128;

/// Rows of a warpgroup MMA (`wgmma.m64nNk16`): an accumulator of this height belongs to a
/// warpgroup, not a warp.
pub const WGMMA_M: u32 = 64;

/// The operand a fragment holds in `D = A·B + C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragRole {
    A,
    B,
    Accumulator,
    /// One value per row of an `m×n` accumulator tile (an `m×1` column): a row
    /// reduction's result, held as the accumulator's rows are (Triton's slice layout).
    Rows,
}

impl FragRole {
    /// TVM's scope name: `matrix_a`, `matrix_b`, `accumulator`.
    pub fn name(self) -> &'static str {
        match self {
            FragRole::A => "matrix_a",
            FragRole::B => "matrix_b",
            FragRole::Accumulator => "accumulator",
            FragRole::Rows => "rows",
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
            FragRole::Accumulator | FragRole::Rows => FragLayout::RowMajor,
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

    /// Whether the fragment belongs to a warpgroup (a `wgmma` accumulator, `m64nNk16`)
    /// rather than to a warp.
    pub fn is_warpgroup(&self) -> bool {
        self.0.role == FragRole::Accumulator && self.0.shape.m == WGMMA_M
    }

    /// Threads that own the fragment together: a warp, or a warpgroup.
    pub fn threads(&self) -> u32 {
        if self.is_warpgroup() { WARPGROUP } else { WARP }
    }

    /// Rows and columns of one tile: `m×k` for `A`, `k×n` for `B`, `m×n` for the
    /// accumulator.
    pub fn dims(&self) -> (u32, u32) {
        let s = self.0.shape;
        match self.0.role {
            FragRole::A => (s.m, s.k),
            FragRole::B => (s.k, s.n),
            FragRole::Accumulator => (s.m, s.n),
            FragRole::Rows => (s.m, 1),
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

/// A warp-wide fragment operation, or one of Hopper's asynchronous operations (warpgroup
/// MMAs, TMA copies, mbarriers: [`crate::tma`]). In the Func IR `origin` holds one index
/// per buffer dimension; in a lowered kernel, one flat index.
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
    /// Every element `(i, j)` of `dst` (an accumulator or rows tile) ← `value`, with
    /// `row` and `col` bound to `i` and `j` (`j` = 0 in a rows tile) and each `args[n].0`
    /// to element `(i, j)` of tile `args[n].1`: an accumulator of `dst`'s shape, or a
    /// rows tile, whose element `i` every column of the row reads. `value` may load from
    /// memory (an element's loads are its owning thread's).
    Map {
        dst: FragRef,
        row: Var,
        col: Var,
        args: Vec<(Var, FragRef)>,
        value: Expr,
    },
    /// Rows tile `dst` ← for each row `i`, the maximum or the sum of element `(i, j)`
    /// of accumulator tiles `src.index .. src.index + tiles`, over every column `j`.
    RowReduce {
        dst: FragRef,
        src: FragRef,
        tiles: u32,
        op: RowOp,
    },
    /// `A` tile `dst` ← accumulator tile `src` (`m×n` = `m×k`) rounded to `dst`'s type:
    /// the probabilities of one product as the next product's operand.
    Convert { dst: FragRef, src: FragRef },
    /// `d = a·b + c`, products and sums in the accumulator's type.
    Mma {
        d: FragRef,
        a: FragRef,
        b: FragRef,
        c: FragRef,
    },
    /// `d += a·b` for a warpgroup accumulator `d` (`m64nNk16`, f32) with both operands
    /// read from shared memory (`wgmma.mma_async`), asynchronously: neither `d` nor the
    /// operand tiles may be touched until a [`FragOp::WgWait`] has retired it.
    WgMma {
        d: FragRef,
        a: SwizzledTile,
        b: SwizzledTile,
    },
    /// Orders the warpgroup's register and shared-memory accesses before the `wgmma`s
    /// that follow (`wgmma.fence`).
    WgFence,
    /// Closes the batch of `wgmma`s issued since the last commit (`wgmma.commit_group`).
    WgCommit,
    /// Waits until at most `pending` committed batches are still running
    /// (`wgmma.wait_group`).
    WgWait { pending: u32 },
    /// One thread copies a `rows × 64` box of the global tensor `src`, whose element
    /// `[coords]` is the box's first, into shared `dst` at `origin` (swizzled; elements
    /// outside `src` read as zero), completing `rows · 128` bytes on `bar`
    /// (`cp.async.bulk.tensor` through a tensor map the launch builds from `src`).
    Tma {
        dst: Buffer,
        origin: Vec<Expr>,
        src: Buffer,
        coords: Vec<Expr>,
        rows: u32,
        bar: BarRef,
    },
    /// One thread initialises `bar` to expect `arrivals` arrivals a phase.
    BarInit { bar: BarRef, arrivals: u32 },
    /// One thread arrives on `bar` and adds `bytes` to the transactions its phase waits
    /// for (`mbarrier.arrive.expect_tx`).
    BarExpect { bar: BarRef, bytes: u32 },
    /// Each thread waits until the phase of `bar` with parity `parity` has completed
    /// (`mbarrier.try_wait.parity` in a loop).
    BarWait { bar: BarRef, parity: Expr },
}

/// The combination of a [`FragOp::RowReduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowOp {
    Max,
    Sum,
}

impl RowOp {
    pub fn name(self) -> &'static str {
        match self {
            RowOp::Max => "max",
            RowOp::Sum => "sum",
        }
    }
}

//! Hopper's asynchronous data path (sm_90a): TMA bulk tensor copies into shared memory,
//! the mbarriers that tell a block when a copy has landed, and the operand tiles that
//! warpgroup MMAs (`wgmma`) read straight from shared memory.
//!
//! **The swizzled layout.** Every shared buffer that TMA writes and `wgmma` reads is laid
//! out in rows of 128 bytes (64 halves), and within each 1024-byte group of 8 rows the
//! 16-byte chunk `j` of row `r` is stored at chunk `j ^ (r % 8)` (CUDA's 128-byte
//! swizzle, which keeps `wgmma`'s reads free of bank conflicts). Both sides apply the
//! same permutation — the TMA unit when it writes, `wgmma` through the swizzle mode of
//! its shared-memory descriptor when it reads — so the IR, the printer, the bounds
//! prover and the interpreter all see *logical* element order: element `(r, c)` of a
//! box at `origin + r·64 + c`. The emitter applies the swizzle where it names it (the
//! tensor map and the descriptors), and aligns such buffers to 1024 bytes so that the
//! groups of 8 rows start where the hardware's do.
//!
//! **Operands.** An `A` operand ([`Major::K`]) is 64 rows (m) by 16 columns (k) of a
//! buffer of 64-half rows: element `(i, kk)` at `origin + i·64 + kk`. A `B` operand
//! ([`Major::Mn`]) is 16 rows (k) by `n` columns held in boxes of 64 columns each,
//! `box_elems` apart: element `(kk, j)` at `origin + (j / 64)·box_elems + kk·64 + j % 64`
//! (a row-major `B` of a matmul, copied 64 columns per TMA box).
//!
//! **Synchronisation.** A TMA copy completes on an mbarrier (its bytes counted against
//! the barrier's expected transaction count); threads wait on the barrier's phase
//! parity before they read the copy. `wgmma` runs asynchronously: a fence before the
//! first one, a commit after a batch, and a wait that leaves at most `pending` batches in
//! flight before the accumulators or the operand tiles are touched again. The
//! interpreter checks each of these orders (see [`crate::interp`]).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::expr::{Buffer, Expr, fresh_id};

/// Halves in one 128-byte row of the swizzled layout.
pub const ROW: i64 = 64;

/// Rows in one swizzle group (1024 bytes).
pub const GROUP_ROWS: i64 = 8;

/// The alignment, in bytes, of a buffer in the swizzled layout: one swizzle group.
pub const SWIZZLE_ALIGN: u32 = 1024;

/// Where a swizzled tile's element of flat offset `lin` (in halves, from a buffer start
/// aligned to 1024 bytes) physically lies: what the hardware does with the address.
pub fn swizzled(lin: i64) -> i64 {
    let chunk = (lin >> 3) & 7;
    let row = (lin >> 6) & 7;
    (lin & !0x3f) | ((chunk ^ row) << 3) | (lin & 7)
}

struct MBarNode {
    id: u64,
    name: String,
    count: u32,
}

/// An array of `count` mbarriers in shared memory (CUDA's `mbarrier` objects: 8 bytes
/// each, an arrival count, a transaction count and a phase bit).
#[derive(Clone)]
pub struct MBarrier(Arc<MBarNode>);

impl MBarrier {
    pub fn new(name: impl Into<String>, count: u32) -> MBarrier {
        MBarrier(Arc::new(MBarNode {
            id: fresh_id(),
            name: name.into(),
            count,
        }))
    }
    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// How many barriers the array holds.
    pub fn count(&self) -> u32 {
        self.0.count
    }
}

impl PartialEq for MBarrier {
    fn eq(&self, other: &MBarrier) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for MBarrier {}
impl Hash for MBarrier {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl fmt::Debug for MBarrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: mbarrier × {}", self.0.name, self.0.count)
    }
}

/// One barrier of an array: `bar[index]`.
#[derive(Clone, Debug)]
pub struct BarRef {
    pub bar: MBarrier,
    pub index: Expr,
}

/// Which dimension of an operand tile is contiguous in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Major {
    /// k contiguous: an `A` tile copied from a row-major `A` (64 rows × 16 k).
    K,
    /// m or n contiguous: a `B` tile copied from a row-major `B` (16 k × n), in boxes of
    /// 64 columns.
    Mn,
}

impl Major {
    pub fn name(self) -> &'static str {
        match self {
            Major::K => "k_major",
            Major::Mn => "mn_major",
        }
    }
}

/// A shared-memory operand of a warpgroup MMA (see the module docs for its layout).
#[derive(Clone, Debug)]
pub struct SwizzledTile {
    pub buffer: Buffer,
    /// Its first element: one index per buffer dimension in the Func IR, one flat index
    /// in a lowered kernel.
    pub origin: Vec<Expr>,
    pub major: Major,
    /// Elements between consecutive boxes of 64 columns ([`Major::Mn`]; unused for `K`).
    pub box_elems: i64,
}

impl SwizzledTile {
    /// Offsets (from the origin) of the tile's elements, row-major over its logical
    /// `rows × cols`.
    pub fn offsets(&self, rows: i64, cols: i64) -> Vec<i64> {
        let mut out = Vec::with_capacity((rows * cols) as usize);
        for r in 0..rows {
            for c in 0..cols {
                out.push(match self.major {
                    Major::K => r * ROW + c,
                    Major::Mn => (c / ROW) * self.box_elems + r * ROW + c % ROW,
                });
            }
        }
        out
    }

    /// The largest offset of an `rows × cols` tile, plus one: the span the bounds prover
    /// checks from the origin.
    pub fn span(&self, rows: i64, cols: i64) -> i64 {
        match self.major {
            Major::K => (rows - 1) * ROW + cols,
            Major::Mn => {
                ((cols - 1) / ROW) * self.box_elems + (rows - 1) * ROW + (cols - 1) % ROW + 1
            }
        }
    }
}

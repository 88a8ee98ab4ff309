//! Matrix fragments in the interpreter: compiled forms, and their execution, one warp at
//! a time.
//!
//! A fragment belongs to a warp: its tiles are stored once per warp of every block of
//! the batch. Each operation runs once per warp, after checking that all 32 threads of
//! the warp reached it (not in divergent control flow) and agree on its arguments, as
//! the hardware requires. Memory traffic is charged to the warp's threads element by
//! element (element `e` of a tile to lane `e % 32`), so the race check sees a fragment
//! store as 32 threads writing disjoint elements and a fragment load as reads by the
//! warp. Products and sums are those of the accumulator's type, rounded after every
//! step (fp16 inputs, fp32 accumulation: exactly what one `mma` step can produce).

use super::node::NodeId;
use crate::fragment::{FragLayout, Fragment};
use crate::tma::Major;

/// One tile operand: the fragment slot and the node of its index.
#[derive(Clone, Copy)]
pub(super) struct CTile {
    pub slot: u32,
    pub index: NodeId,
}

/// A memory side of a load or store.
#[derive(Clone, Copy)]
pub(super) struct CMem {
    pub buf: u32,
    pub origin: NodeId,
    pub signed: bool,
    pub stride: i64,
}

/// A `wgmma` operand tile in shared memory.
#[derive(Clone, Copy)]
pub(super) struct CSwz {
    pub buf: u32,
    pub origin: NodeId,
    pub signed: bool,
    pub major: Major,
    pub box_elems: i64,
}

/// One mbarrier: the array's slot and the node of its index.
#[derive(Clone, Copy)]
pub(super) struct CBar {
    pub slot: u32,
    pub index: NodeId,
}

/// A compiled fragment operation.
pub(super) enum CFrag {
    Fill {
        dst: CTile,
        value: NodeId,
    },
    /// `value` evaluated once per element, each lane of the warp taking elements
    /// `lane`, `lane + 32`, ...: with the element's row and column in columns `row`
    /// and `col`, and each argument tile's element in its column.
    Map {
        dst: CTile,
        row: u32,
        col: u32,
        args: Vec<(u32, CTile)>,
        value: NodeId,
    },
    RowReduce {
        dst: CTile,
        src: CTile,
        tiles: u32,
        max: bool,
    },
    Convert {
        dst: CTile,
        src: CTile,
    },
    Load {
        dst: CTile,
        mem: CMem,
    },
    Store {
        src: CTile,
        mem: CMem,
    },
    Mma {
        d: CTile,
        a: CTile,
        b: CTile,
        c: CTile,
    },
    WgMma {
        d: CTile,
        a: CSwz,
        b: CSwz,
    },
    WgFence,
    WgCommit,
    WgWait(u32),
    /// `dst.stride` is unused; `src` is the global buffer's slot.
    Tma {
        dst: CMem,
        src: u32,
        coords: Vec<NodeId>,
        rows: u32,
        bar: CBar,
    },
    BarInit {
        bar: CBar,
        arrivals: u32,
    },
    BarExpect {
        bar: CBar,
        bytes: u32,
    },
    BarWait {
        bar: CBar,
        parity: NodeId,
    },
}

impl CFrag {
    /// The nodes to evaluate before running it (all must agree across a warp).
    pub fn nodes(&self) -> Vec<(NodeId, &'static str)> {
        match self {
            CFrag::Fill { dst, value } => {
                vec![(dst.index, "fragment index"), (*value, "fill value")]
            }
            CFrag::Map { dst, args, .. } => std::iter::once(dst)
                .chain(args.iter().map(|(_, t)| t))
                .map(|t| (t.index, "fragment index"))
                .collect(),
            CFrag::RowReduce { dst, src, .. } | CFrag::Convert { dst, src } => {
                vec![(dst.index, "fragment index"), (src.index, "fragment index")]
            }
            CFrag::Load { dst: t, mem } | CFrag::Store { src: t, mem } => {
                vec![(t.index, "fragment index"), (mem.origin, "tile origin")]
            }
            CFrag::Mma { d, a, b, c } => [d, a, b, c]
                .into_iter()
                .map(|t| (t.index, "fragment index"))
                .collect(),
            CFrag::WgMma { d, a, b } => vec![
                (d.index, "fragment index"),
                (a.origin, "A tile origin"),
                (b.origin, "B tile origin"),
            ],
            CFrag::WgFence | CFrag::WgCommit | CFrag::WgWait(_) => vec![],
            CFrag::Tma {
                dst, coords, bar, ..
            } => {
                let mut out = vec![(dst.origin, "box origin"), (bar.index, "mbarrier index")];
                out.extend(coords.iter().map(|&c| (c, "box coordinate")));
                out
            }
            CFrag::BarInit { bar, .. } | CFrag::BarExpect { bar, .. } => {
                vec![(bar.index, "mbarrier index")]
            }
            CFrag::BarWait { bar, parity } => {
                vec![(bar.index, "mbarrier index"), (*parity, "parity")]
            }
        }
    }

    /// Threads that run it together (see [`crate::fragment::FragOp::threads`]).
    pub fn threads(&self, frags: &[Fragment]) -> usize {
        use crate::fragment::{WARP, WARPGROUP};
        let of = |t: &CTile| frags[t.slot as usize].threads() as usize;
        match self {
            CFrag::Fill { dst: t, .. }
            | CFrag::Load { dst: t, .. }
            | CFrag::Store { src: t, .. }
            | CFrag::Map { dst: t, .. }
            | CFrag::RowReduce { dst: t, .. }
            | CFrag::Convert { dst: t, .. } => of(t),
            CFrag::Mma { .. } => WARP as usize,
            CFrag::WgMma { .. } | CFrag::WgFence | CFrag::WgCommit | CFrag::WgWait(_) => {
                WARPGROUP as usize
            }
            CFrag::Tma { .. }
            | CFrag::BarInit { .. }
            | CFrag::BarExpect { .. }
            | CFrag::BarWait { .. } => 1,
        }
    }
}

/// Where element `(i, j)` of a tile of `f` lies, relative to the tile's origin.
pub(super) fn element_offsets(f: &Fragment, stride: i64) -> Vec<i64> {
    let (rows, cols) = f.dims();
    let mut out = Vec::with_capacity(f.tile_len());
    for i in 0..rows {
        for j in 0..cols {
            out.push(match f.layout() {
                FragLayout::RowMajor => i as i64 * stride + j as i64,
                FragLayout::ColMajor => j as i64 * stride + i as i64,
            });
        }
    }
    out
}

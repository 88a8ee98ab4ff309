//! The memory of a launch: global buffers, the shared arrays of each block of the current
//! batch, the locals of each lane, and their race records.
//!
//! The executor runs a *batch* of blocks side by side; a *lane* is one thread of one block
//! of the batch (lane `l` is thread `l % tpb` of the batch's block `l / tpb`). Each block
//! of the batch has its own shared arrays and its own epoch (see [`super::race`]), so
//! running blocks together changes nothing they can observe without racing.

use super::compile::BufKind;
use super::race::{Conflict, Tracker};
use super::sync::Sync;
use super::value::Raw;

/// Why an access failed (made into an [`super::InterpError`] once names are known).
pub(super) enum Fault {
    OutOfBounds,
    Misaligned,
    Race(Conflict),
    /// The overlay contract ([`crate::expr::Buffer::overlay`]) broken: `other` (a buffer
    /// slot of the other side) was touched in this barrier interval, or (`stale`) wrote
    /// the shared bytes since this side last did.
    Overlay {
        other: usize,
        stale: bool,
    },
}

/// A shared overlay and its hosts, by buffer slot.
pub(super) struct Overlay {
    pub overlay: usize,
    pub hosts: Vec<usize>,
}

/// One block's use of one overlay's bytes: which side wrote them last (0 none, 1 the
/// hosts, 2 the overlay), and the last epoch each side (hosts, overlay) was touched.
#[derive(Clone, Copy, Default)]
pub(super) struct Sharing {
    owner: u8,
    last: [u32; 2],
}

pub(super) struct Memory {
    /// Raw contents by buffer slot: global buffers whole, shared arrays one per block
    /// of the batch, locals one per lane.
    pub data: Vec<Vec<Raw>>,
    pub tracks: Vec<Option<Tracker>>,
    /// Elements of one instance of each buffer.
    pub numel: Vec<usize>,
    pub kind: Vec<BufKind>,
    /// For each lane: its block in the batch and its thread number in the block.
    pub lane_bb: Vec<u32>,
    pub lane_t: Vec<u32>,
    /// For each block of the batch: its linear block number and its current epoch.
    pub block_ids: Vec<u32>,
    pub epochs: Vec<u32>,
    /// The kernel's shared overlays; for each buffer slot, the overlays it is a side of
    /// (overlay index, whether it is the overlay); per overlay and block of the batch,
    /// who uses the bytes ([`Sharing`]).
    pub overlays: Vec<Overlay>,
    pub sides: Vec<Vec<(usize, bool)>>,
    pub sharing: Vec<Sharing>,
    /// Each buffer's poison (the value unwritten memory holds).
    pub poison: Vec<Raw>,
    /// Set when an overlay's bytes pass to the overlay in a block (overlay index, block
    /// of the batch): the executor then checks that no asynchronous copy into a host,
    /// and no `wgmma` reading one, is still in flight.
    pub handover: Option<(usize, usize)>,
    /// By buffer slot, for the shared tiles a `wgmma` reads: the epoch of each element's
    /// last write by a thread (the generic proxy), 0 where none or where TMA (the async
    /// proxy) wrote it last. A `wgmma` may read such an element only after a barrier
    /// that fences the proxies.
    pub generic: Vec<Option<Vec<u32>>>,
    /// What blocks ordered through counters ([`super::sync`]).
    pub sync: Sync,
}

impl Memory {
    /// Checks and records an access of `buf` by `lane` against the overlays `buf` is a
    /// side of. A write that takes the bytes from the other side poisons the other
    /// side's arrays in that block, as the GPU's shared bytes would be overwritten.
    fn share(&mut self, buf: usize, lane: usize, write: bool) -> Result<(), Fault> {
        if self.sides[buf].is_empty() {
            return Ok(());
        }
        let bb = self.lane_bb[lane] as usize;
        let batch = self.epochs.len();
        let e = self.epochs[bb];
        for k in 0..self.sides[buf].len() {
            let (o, is_overlay) = self.sides[buf][k];
            let side = is_overlay as usize;
            let other_slot = |m: &Memory| {
                let ov = &m.overlays[o];
                if is_overlay { ov.hosts[0] } else { ov.overlay }
            };
            let st = self.sharing[o * batch + bb];
            if st.last[1 - side] == e {
                return Err(Fault::Overlay {
                    other: other_slot(self),
                    stale: false,
                });
            }
            let mine = side as u8 + 1;
            if st.owner != 0 && st.owner != mine {
                if !write {
                    return Err(Fault::Overlay {
                        other: other_slot(self),
                        stale: true,
                    });
                }
                let theirs: Vec<usize> = if is_overlay {
                    self.overlays[o].hosts.clone()
                } else {
                    vec![self.overlays[o].overlay]
                };
                for t in theirs {
                    let n = self.numel[t];
                    let poison = self.poison[t];
                    if let Some(block) = self.data[t].get_mut(bb * n..(bb + 1) * n) {
                        block.fill(poison);
                    }
                }
                if is_overlay {
                    self.handover = Some((o, bb));
                }
            }
            let st = &mut self.sharing[o * batch + bb];
            if write {
                st.owner = mine;
            }
            st.last[side] = e;
        }
        Ok(())
    }

    /// The position in `data[buf]` of element `i` for `lane`, bounds checked.
    #[inline]
    fn offset(&self, buf: usize, i: i64, lane: usize) -> Result<usize, Fault> {
        let n = self.numel[buf];
        if i < 0 || i as u64 >= n as u64 {
            return Err(Fault::OutOfBounds);
        }
        Ok(match self.kind[buf] {
            BufKind::Global => i as usize,
            BufKind::Shared => self.lane_bb[lane] as usize * n + i as usize,
            BufKind::Local => lane * n + i as usize,
        })
    }

    /// Checks that a vector access of `lanes` elements at `i` is aligned and in bounds.
    pub fn check_vector(&self, buf: usize, i: i64, lanes: u32) -> Result<(), Fault> {
        if i.rem_euclid(lanes as i64) != 0 {
            return Err(Fault::Misaligned);
        }
        if i < 0 || i + lanes as i64 > self.numel[buf] as i64 {
            return Err(Fault::OutOfBounds);
        }
        Ok(())
    }

    /// Who `lane` is for the race records of `buf`: (block, thread, epoch). Shared
    /// arrays are per block, so there the block is always 0 and epochs alone order.
    #[inline]
    fn who(&self, buf: usize, lane: usize) -> (u32, u32, u32) {
        let bb = self.lane_bb[lane] as usize;
        let block = match self.kind[buf] {
            BufKind::Shared => 0,
            _ => self.block_ids[bb],
        };
        (block, self.lane_t[lane], self.epochs[bb])
    }

    #[inline]
    pub fn load(&mut self, buf: usize, i: i64, lane: usize) -> Result<Raw, Fault> {
        let at = self.offset(buf, i, lane)?;
        self.share(buf, lane, false)?;
        let (b, t, e) = self.who(buf, lane);
        if let Some(tr) = &mut self.tracks[buf] {
            let sync = &self.sync;
            tr.read(at, (b, t, e), |fb, fe| sync.ordered(fb, fe, b, e))
                .map_err(Fault::Race)?;
        }
        // `offset` checked the bounds; `get` keeps a broken invariant from panicking.
        self.data[buf].get(at).copied().ok_or(Fault::OutOfBounds)
    }

    /// A write outside the race records: a TMA copy's, which is ordered by its mbarrier
    /// and checked against the `wgmma`s in flight instead (see `hopper_exec`).
    pub fn store_untracked(
        &mut self,
        buf: usize,
        i: i64,
        lane: usize,
        v: Raw,
    ) -> Result<(), Fault> {
        let at = self.offset(buf, i, lane)?;
        self.share(buf, lane, true)?;
        match self.data[buf].get_mut(at) {
            Some(slot) => *slot = v,
            None => return Err(Fault::OutOfBounds),
        }
        if let Some(Some(g)) = self.generic.get_mut(buf)
            && let Some(e) = g.get_mut(at)
        {
            *e = 0;
        }
        Ok(())
    }

    /// The epoch of the last thread write of element `i` of `buf` as `lane` sees it
    /// ([`Memory::generic`]; 0 where none is tracked).
    pub fn generic_epoch(&self, buf: usize, i: i64, lane: usize) -> u32 {
        match (self.offset(buf, i, lane), self.generic.get(buf)) {
            (Ok(at), Some(Some(g))) => g.get(at).copied().unwrap_or(0),
            _ => 0,
        }
    }

    /// Element `i` of a global buffer, outside the race records, or `None` out of bounds.
    pub fn peek_global(&self, buf: usize, i: i64) -> Option<Raw> {
        if i < 0 || i as u64 >= self.numel[buf] as u64 {
            return None;
        }
        self.data[buf].get(i as usize).copied()
    }

    #[inline]
    pub fn store(&mut self, buf: usize, i: i64, lane: usize, v: Raw) -> Result<(), Fault> {
        let at = self.offset(buf, i, lane)?;
        self.share(buf, lane, true)?;
        let (b, t, e) = self.who(buf, lane);
        if let Some(tr) = &mut self.tracks[buf] {
            let sync = &self.sync;
            tr.write(at, (b, t, e), |fb, fe| sync.ordered(fb, fe, b, e))
                .map_err(Fault::Race)?;
        }
        match self.data[buf].get_mut(at) {
            Some(slot) => *slot = v,
            None => return Err(Fault::OutOfBounds),
        }
        if let Some(Some(g)) = self.generic.get_mut(buf)
            && let Some(w) = g.get_mut(at)
        {
            *w = e;
        }
        Ok(())
    }

    /// An atomic `data[i] += v` by `lane` on a global buffer, returning the old value:
    /// outside the race records (atomics never race with each other), but recorded as
    /// the block's arrival at the counter element ([`Sync::arrive`]).
    pub fn atomic_add(&mut self, buf: usize, i: i64, lane: usize, v: Raw) -> Result<Raw, Fault> {
        let at = self.offset(buf, i, lane)?;
        let (b, _, e) = self.who(buf, lane);
        let slot = self.data[buf].get_mut(at).ok_or(Fault::OutOfBounds)?;
        let old = *slot;
        // `i32` and `u32` alike: two's complement bits wrap the same.
        *slot = old.wrapping_add(v);
        self.sync.arrive((buf, at), b, e);
        Ok(old)
    }

    /// `lane`'s block fences: its writes so far are published at its next atomic.
    pub fn fence(&mut self, lane: usize) {
        let bb = self.lane_bb[lane] as usize;
        self.sync.fence(self.block_ids[bb], self.epochs[bb]);
    }
}

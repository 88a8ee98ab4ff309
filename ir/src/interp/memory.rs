//! The memory of a launch: global buffers, the shared arrays of each block of the current
//! batch, the locals of each lane, and their race records.
//!
//! The executor runs a *batch* of blocks side by side; a *lane* is one thread of one block
//! of the batch (lane `l` is thread `l % tpb` of the batch's block `l / tpb`). Each block
//! of the batch has its own shared arrays and its own epoch (see [`super::race`]), so
//! running blocks together changes nothing they can observe without racing.

use super::compile::BufKind;
use super::race::{Conflict, Tracker};
use super::value::Raw;

/// Why an access failed (made into an [`super::InterpError`] once names are known).
pub(super) enum Fault {
    OutOfBounds,
    Misaligned,
    Race(Conflict),
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
}

impl Memory {
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
        let (b, t, e) = self.who(buf, lane);
        if let Some(tr) = &mut self.tracks[buf] {
            tr.read(at, b, t, e).map_err(Fault::Race)?;
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
        match self.data[buf].get_mut(at) {
            Some(slot) => *slot = v,
            None => return Err(Fault::OutOfBounds),
        }
        Ok(())
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
        let (b, t, e) = self.who(buf, lane);
        if let Some(tr) = &mut self.tracks[buf] {
            tr.write(at, b, t, e).map_err(Fault::Race)?;
        }
        match self.data[buf].get_mut(at) {
            Some(slot) => *slot = v,
            None => return Err(Fault::OutOfBounds),
        }
        Ok(())
    }
}

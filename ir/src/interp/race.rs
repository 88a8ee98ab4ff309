//! Race detection: a small, constant-size record per element of every shared and global
//! buffer.
//!
//! Time is counted in *epochs*: the counter goes up at the start of every block and at
//! every barrier, so two accesses are ordered by a barrier exactly when their epochs
//! differ, and accesses of different blocks never share an epoch. An element records its
//! last writer (block, thread, epoch), and its readers in the latest read epoch: the
//! first one, and a second, distinct one if there was any — enough to decide whether any
//! reader other than the writer-to-be exists, and to name it. For global memory it also
//! remembers one reader of an earlier block, since blocks cannot order their accesses
//! against each other at all. Shared memory is per block, so there the block is always
//! 0 and only epochs matter.

use super::error::MemOp;

const NONE: u32 = u32::MAX;

/// The access history of one element.
#[derive(Clone, Copy, Debug)]
struct Cell {
    /// Epoch of the last write; 0 when never written (epochs start at 1).
    w_epoch: u32,
    w_block: u32,
    w_thread: u32,
    /// Epoch of the latest read; 0 when never read.
    r_epoch: u32,
    r_block: u32,
    r_thread: u32,
    /// A second reader in `r_epoch`, distinct from `r_thread`, or `NONE`.
    r_thread2: u32,
    /// A reader of a block before `r_block`, or `NONE`.
    x_block: u32,
    x_thread: u32,
}

const FRESH: Cell = Cell {
    w_epoch: 0,
    w_block: 0,
    w_thread: 0,
    r_epoch: 0,
    r_block: 0,
    r_thread: 0,
    r_thread2: NONE,
    x_block: NONE,
    x_thread: 0,
};

/// An access that conflicts with the current one: what it was and who did it (block
/// and thread, linear).
#[derive(Clone, Copy, Debug)]
pub(super) struct Conflict {
    pub first: MemOp,
    pub block: u32,
    pub thread: u32,
}

/// The access records of one buffer.
pub(super) struct Tracker {
    cells: Vec<Cell>,
}

impl Tracker {
    pub fn new(len: usize) -> Tracker {
        Tracker {
            cells: vec![FRESH; len],
        }
    }

    /// Records a read of element `i` by thread `t` of block `b` in epoch `e`; returns the
    /// unordered write it races with, if any. `i` is in bounds (checked by the caller).
    #[inline]
    /// `ordered(block, epoch)`: whether an access of another block at that epoch is
    /// ordered before this one through a counter ([`super::sync`]).
    pub fn read(
        &mut self,
        i: usize,
        (b, t, e): (u32, u32, u32),
        ordered: impl Fn(u32, u32) -> bool,
    ) -> Result<(), Conflict> {
        let Some(c) = self.cells.get_mut(i) else {
            return Ok(());
        };
        let unordered = |c: &Cell| c.w_block != b && !ordered(c.w_block, c.w_epoch);
        if c.w_epoch != 0 && (unordered(c) || (c.w_block == b && c.w_epoch == e && c.w_thread != t))
        {
            return Err(Conflict {
                first: MemOp::Write,
                block: c.w_block,
                thread: c.w_thread,
            });
        }
        if c.r_epoch == 0 {
            c.r_block = b;
        } else if c.r_block != b {
            c.x_block = c.r_block;
            c.x_thread = c.r_thread;
            c.r_block = b;
        }
        if c.r_epoch != e {
            c.r_epoch = e;
            c.r_thread = t;
            c.r_thread2 = NONE;
        } else if c.r_thread != t && c.r_thread2 == NONE {
            c.r_thread2 = t;
        }
        Ok(())
    }

    /// Records a write of element `i` by thread `t` of block `b` in epoch `e`; returns
    /// the unordered read or write it races with, if any (`ordered` as for reads).
    #[inline]
    pub fn write(
        &mut self,
        i: usize,
        (b, t, e): (u32, u32, u32),
        ordered: impl Fn(u32, u32) -> bool,
    ) -> Result<(), Conflict> {
        let Some(c) = self.cells.get_mut(i) else {
            return Ok(());
        };
        let unordered = |c: &Cell| c.w_block != b && !ordered(c.w_block, c.w_epoch);
        if c.w_epoch != 0 && (unordered(c) || (c.w_block == b && c.w_epoch == e && c.w_thread != t))
        {
            return Err(Conflict {
                first: MemOp::Write,
                block: c.w_block,
                thread: c.w_thread,
            });
        }
        if c.r_epoch != 0 {
            let read_by = |block, thread| Conflict {
                first: MemOp::Read,
                block,
                thread,
            };
            if c.r_block != b && !ordered(c.r_block, c.r_epoch) {
                return Err(read_by(c.r_block, c.r_thread));
            }
            if c.x_block != NONE {
                return Err(read_by(c.x_block, c.x_thread));
            }
            if c.r_epoch == e {
                if c.r_thread != t {
                    return Err(read_by(b, c.r_thread));
                }
                if c.r_thread2 != NONE {
                    return Err(read_by(b, c.r_thread2));
                }
            }
        }
        c.w_epoch = e;
        c.w_block = b;
        c.w_thread = t;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Copy, Debug)]
    enum Event {
        Access {
            block: u32,
            thread: u32,
            write: bool,
            elem: usize,
        },
        Barrier(u32),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            6 => (0u32..3, 0u32..3, any::<bool>(), 0usize..3).prop_map(
                |(block, thread, write, elem)| Event::Access { block, thread, write, elem }
            ),
            1 => (0u32..3).prop_map(Event::Barrier),
        ]
    }

    proptest! {
        /// Against a brute-force check of every pair of accesses, with blocks
        /// interleaved as the executor's batches interleave them: the tracker reports
        /// the first access that conflicts with an earlier one, and names an access it
        /// really conflicts with.
        #[test]
        fn matches_brute_force(events in prop::collection::vec(event(), 0..40)) {
            let mut epochs = [1u32, 2, 3];
            let mut next = 4;
            let mut tracker = Tracker::new(3);
            // (block, thread, epoch, write, elem) of every access so far.
            let mut seen: Vec<(u32, u32, u32, bool, usize)> = Vec::new();
            for ev in events {
                let (block, thread, write, elem) = match ev {
                    Event::Barrier(b) => {
                        epochs[b as usize] = next;
                        next += 1;
                        continue;
                    }
                    Event::Access { block, thread, write, elem } => (block, thread, write, elem),
                };
                let epoch = epochs[block as usize];
                let conflicts = |&&(b, t, e, w, x): &&(u32, u32, u32, bool, usize)| {
                    x == elem && (w || write) && (b, t) != (block, thread) && (b != block || e == epoch)
                };
                let truth: Vec<_> = seen.iter().filter(conflicts).collect();
                let none = |_, _| false;
                let got = if write {
                    tracker.write(elem, (block, thread, epoch), none)
                } else {
                    tracker.read(elem, (block, thread, epoch), none)
                };
                match got {
                    Ok(()) => prop_assert!(truth.is_empty(), "missed a race with {:?}", truth),
                    Err(c) => {
                        let named = truth.iter().any(|&&(b, t, _, w, _)| {
                            (b, t) == (c.block, c.thread) && (c.first == MemOp::Write) == w
                        });
                        prop_assert!(named, "reported {:?}, true conflicts {:?}", c, truth);
                        break;
                    }
                }
                seen.push((block, thread, epoch, write, elem));
            }
        }
    }
}

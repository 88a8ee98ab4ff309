//! Blocks that order their global accesses through a counter: the "last block combines"
//! pattern (each block writes its part, fences, and adds one to a counter atomically;
//! the block that sees the last count reads every part).
//!
//! The race records ([`super::race`]) take any two accesses of different blocks to one
//! element as a race, since blocks cannot order them with barriers. This module is the
//! one exception the device's memory model makes: a block's writes before a fence
//! (`__threadfence()`) that is followed by its atomic on a counter are visible to every
//! block whose later atomic on the same counter element observed it. It records, per
//! block, its latest fence; per counter element, the blocks that arrived after a fence;
//! and per block, the arrivals it acquired by its own atomic. A write is then ordered
//! before an access of another block when that block acquired the writer's arrival and
//! the write came no later than the writer's fence.
//!
//! A block that arrives without a fence publishes nothing, so a kernel that leaves the
//! fence out races here as it would on the device.

use std::collections::HashMap;

/// The synchronisation one launch has seen so far.
#[derive(Default)]
pub(super) struct Sync {
    /// By block (linear number): the epoch of its latest fence.
    fenced: HashMap<u32, u32>,
    /// By counter element (buffer slot, element): the blocks that arrived after a
    /// fence, with that fence's epoch.
    arrivals: HashMap<(usize, usize), Vec<(u32, u32)>>,
    /// By block: the arrivals it acquired (block, fence epoch) and the epoch of its
    /// atomic, from which on they are ordered before its accesses.
    acquired: HashMap<u32, Vec<(u32, u32, u32)>>,
}

impl Sync {
    /// Block `block` fences at epoch `epoch`.
    pub fn fence(&mut self, block: u32, epoch: u32) {
        self.fenced.insert(block, epoch);
    }

    /// Block `block` adds to counter element `counter` at epoch `epoch`: it acquires
    /// every arrival before it, and publishes its writes up to its latest fence.
    pub fn arrive(&mut self, counter: (usize, usize), block: u32, epoch: u32) {
        let before = self.arrivals.entry(counter).or_default();
        if !before.is_empty() {
            let got = self.acquired.entry(block).or_default();
            got.extend(before.iter().map(|&(b, f)| (b, f, epoch)));
        }
        if let Some(&f) = self.fenced.get(&block) {
            before.push((block, f));
        }
    }

    /// Whether an access by block `first` at epoch `first_epoch` is ordered before one
    /// by block `block` at epoch `epoch` through a counter.
    pub fn ordered(&self, first: u32, first_epoch: u32, block: u32, epoch: u32) -> bool {
        self.acquired.get(&block).is_some_and(|got| {
            got.iter()
                .any(|&(b, f, from)| b == first && first_epoch <= f && from <= epoch)
        })
    }
}

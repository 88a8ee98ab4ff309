//! Execution of Hopper's asynchronous operations ([`crate::tma`]): warpgroup MMAs, TMA
//! copies and mbarriers, with the orders the hardware leaves to the program checked.
//!
//! Both kinds of copy complete at once in the interpreter — a TMA box lands when it is
//! issued, a `wgmma` multiplies when it is issued — so what a GPU could get wrong is
//! tracked beside them instead:
//! - a TMA box is *landing* until a thread of its block has waited on the mbarrier phase
//!   the copy completes; a `wgmma` that reads a landing element is an error (on a GPU it
//!   would read whatever was there before);
//! - a `wgmma`'s operand tiles and accumulator are *in flight* until a
//!   `wgmma.wait_group` retires its commit group; a TMA copy that writes such an element,
//!   or a fill, load or store of such an accumulator, is an error;
//! - a `wgmma` needs a `wgmma.fence` since the warpgroup last wrote its accumulators by
//!   other means;
//! - an mbarrier wait whose phase has not completed when every copy before it has
//!   landed can never return: a deadlock on a GPU, an error here.
//!
//! TMA writes bypass the element race records (they are ordered by the mbarrier, which
//! the checks above cover); `wgmma` reads go through them like fragment loads, each
//! element charged to one thread of the warpgroup.

use std::collections::VecDeque;

use super::super::error::{InterpError, MemOp};
use super::super::fragment::{CBar, CFrag, CSwz, CTile};
use super::super::value::Raw;
use super::fragment_exec::{from_f64, to_f64};
use super::{Machine, index};
use crate::dtype::DType;
use crate::fragment::{WARP, WARPGROUP};
use crate::tma::ROW;

/// A range of one shared buffer of one block of the batch (`hi` exclusive).
#[derive(Clone, Copy, Debug)]
struct Region {
    bb: usize,
    buf: usize,
    lo: i64,
    hi: i64,
}

impl Region {
    fn overlaps(&self, o: &Region) -> bool {
        self.bb == o.bb && self.buf == o.buf && self.lo < o.hi && o.lo < self.hi
    }
}

/// The `wgmma`s of one commit group: what they read and which accumulator tiles they
/// write (fragment slot, offset in its storage).
#[derive(Default)]
struct Batch {
    reads: Vec<Region>,
    accs: Vec<(u32, usize)>,
}

/// One warpgroup's `wgmma` bookkeeping.
#[derive(Default)]
struct Group {
    fenced: bool,
    open: Batch,
    committed: VecDeque<Batch>,
}

impl Group {
    fn batches(&self) -> impl Iterator<Item = &Batch> {
        std::iter::once(&self.open).chain(&self.committed)
    }
}

/// One mbarrier.
#[derive(Clone, Copy, Default)]
struct Bar {
    init: bool,
    arrivals: u32,
    pending: u32,
    tx: i64,
    /// Completed phases.
    done: u32,
}

/// A TMA box not yet waited for: it completes phase `phase` of mbarrier `bar`.
struct Landing {
    region: Region,
    bar: (u32, usize),
    phase: u32,
}

/// The asynchronous state of the blocks of one batch.
#[derive(Default)]
pub(super) struct State {
    /// By mbarrier slot: `count` barriers per block of the batch.
    bars: Vec<Vec<Bar>>,
    /// By warpgroup of the batch (`lane / 128`).
    groups: Vec<Group>,
    landing: Vec<Landing>,
    /// By block of the batch: the epoch of the last `wgmma.wait_group` that retired
    /// `wgmma`s (0: none yet).
    retired: Vec<u32>,
}

impl<'p> Machine<'p> {
    /// Fresh state for a new batch of blocks.
    pub(super) fn reset_async(&mut self) {
        let batch = self.batch;
        let p = self.p;
        self.hop.bars = p
            .mbars
            .iter()
            .map(|m| vec![Bar::default(); batch * m.count() as usize])
            .collect();
        self.hop.groups = (0..self.lanes.div_ceil(WARPGROUP as usize))
            .map(|_| Group::default())
            .collect();
        self.hop.landing.clear();
        self.hop.retired = vec![0; batch];
    }

    /// After a write passed overlay `o`'s bytes from its hosts to it in block `bb` of the
    /// batch ([`super::memory::Memory::handover`]): nothing asynchronous may still use a
    /// host. A TMA box landing in one, or a `wgmma` in flight reading one, is an error;
    /// so is a write in the epoch of the last `wgmma.wait_group` that retired `wgmma`s,
    /// since another warpgroup may not have reached its wait yet (a barrier must come
    /// between).
    pub(super) fn check_handover(
        &self,
        o: usize,
        bb: usize,
        lane: usize,
    ) -> Result<(), InterpError> {
        let ov = &self.mem.overlays[o];
        let name = |buf: usize| self.p.bufs[buf].buffer.name().to_string();
        let overlay = name(ov.overlay);
        let host = |r: &Region| r.bb == bb && ov.hosts.contains(&r.buf);
        if let Some(l) = self.hop.landing.iter().find(|l| host(&l.region)) {
            return Err(self.async_error(
                format!(
                    "overlay `{overlay}` written while a TMA copy into `{}` (which it overlays) is in flight: wait for its mbarrier phase first",
                    name(l.region.buf)
                ),
                lane,
            ));
        }
        let first = bb * self.tpb;
        let groups = first / WARPGROUP as usize..(first + self.tpb).div_ceil(WARPGROUP as usize);
        for g in groups {
            let Some(group) = self.hop.groups.get(g) else {
                continue;
            };
            if let Some(r) = group.batches().flat_map(|b| &b.reads).find(|r| host(r)) {
                return Err(self.async_error(
                    format!(
                        "overlay `{overlay}` written while a wgmma reading `{}` (which it overlays) is in flight: wgmma.wait_group first",
                        name(r.buf)
                    ),
                    lane,
                ));
            }
        }
        if self
            .hop
            .retired
            .get(bb)
            .is_some_and(|&e| e != 0 && e == self.mem.epochs[bb])
        {
            return Err(self.async_error(
                format!(
                    "overlay `{overlay}` written with no barrier since the wgmma.wait_group that retired the wgmmas reading what it overlays (another warpgroup may still be reading it)"
                ),
                lane,
            ));
        }
        Ok(())
    }

    fn async_error(&self, what: String, lane: usize) -> InterpError {
        InterpError::AsyncOrder {
            kernel: self.p.kernel.clone(),
            what,
            at: self.tid(lane as u32),
        }
    }

    fn buf_name(&self, buf: usize) -> String {
        self.p.bufs[buf].buffer.name().to_string()
    }

    /// An error if tile `t` (at `at`) is a warpgroup accumulator a `wgmma` in flight
    /// writes; a write to it also means the next `wgmma` needs a fence.
    pub(super) fn acc_touched(
        &mut self,
        t: CTile,
        at: usize,
        first: usize,
    ) -> Result<(), InterpError> {
        let f = &self.p.frags[t.slot as usize];
        if !f.is_warpgroup() {
            return Ok(());
        }
        let g = first / WARPGROUP as usize;
        if self.hop.groups[g]
            .batches()
            .any(|b| b.accs.contains(&(t.slot, at)))
        {
            return Err(self.async_error(
                format!(
                    "accumulator `{}` touched while a wgmma that writes it is in flight \
                     (no wgmma.wait_group retired it)",
                    f.name()
                ),
                first,
            ));
        }
        self.hop.groups[g].fenced = false;
        Ok(())
    }

    /// `wgmma.fence`, `commit_group`, `wait_group` for the warpgroup from lane `first`.
    pub(super) fn wg_sync(&mut self, op: &CFrag, first: usize) -> Result<(), InterpError> {
        let bb = self.mem.lane_bb[first] as usize;
        let epoch = self.mem.epochs[bb];
        let g = &mut self.hop.groups[first / WARPGROUP as usize];
        match *op {
            CFrag::WgFence => g.fenced = true,
            CFrag::WgCommit => {
                let batch = std::mem::take(&mut g.open);
                g.committed.push_back(batch);
            }
            CFrag::WgWait(pending) => {
                let mut retired = false;
                while g.committed.len() > pending as usize {
                    retired |= g.committed.pop_front().is_some_and(|b| !b.reads.is_empty());
                }
                if retired && let Some(r) = self.hop.retired.get_mut(bb) {
                    *r = epoch;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// One `wgmma` of the warpgroup from lane `first`: `d += a · b` now, with what it
    /// reads and writes in flight until a wait retires it.
    pub(super) fn wgmma(
        &mut self,
        d: CTile,
        a: CSwz,
        b: CSwz,
        first: usize,
        vals: &[Raw],
    ) -> Result<(), InterpError> {
        let g = first / WARPGROUP as usize;
        if !self.hop.groups[g].fenced {
            return Err(self.async_error(
                "wgmma with no wgmma.fence since the warpgroup last wrote its accumulators"
                    .to_string(),
                first,
            ));
        }
        let at = self.tile_at(d, vals[0], first / WARP as usize)?;
        let fd = &self.p.frags[d.slot as usize];
        let s = fd.shape();
        let (m, n, k) = (s.m as i64, s.n as i64, s.k as i64);
        let bb = self.mem.lane_bb[first] as usize;
        let read_tile = |me: &mut Self, t: CSwz, origin: Raw, rows: i64, cols: i64| {
            let tile = crate::tma::SwizzledTile {
                buffer: me.p.bufs[t.buf as usize].buffer.clone(),
                origin: vec![],
                major: t.major,
                box_elems: t.box_elems,
            };
            let o = index(origin, t.signed);
            let region = Region {
                bb,
                buf: t.buf as usize,
                lo: o,
                hi: o + tile.span(rows, cols),
            };
            if let Some(l) = me.hop.landing.iter().find(|l| l.region.overlaps(&region)) {
                let name = me.p.mbars[l.bar.0 as usize].name().to_string();
                return Err(me.async_error(
                    format!(
                        "wgmma reads `{}`[{}..{}] before a wait on mbarrier `{name}`[{}] for \
                         the TMA copy that fills it",
                        me.buf_name(t.buf as usize),
                        region.lo,
                        region.hi,
                        l.bar.1
                    ),
                    first,
                ));
            }
            let mut out = Vec::with_capacity((rows * cols) as usize);
            let now = me.mem.epochs[bb];
            for (e, off) in tile.offsets(rows, cols).into_iter().enumerate() {
                let lane = first + e % WARPGROUP as usize;
                let i = o + off;
                let written = me.mem.generic_epoch(t.buf as usize, i, lane);
                if written != 0 && (!me.p.fence_at_barriers || written == now) {
                    let why = if me.p.fence_at_barriers {
                        "in this barrier interval"
                    } else {
                        "and the kernel has no fence.proxy.async (only kernels with \
                         asynchronous copies fence at their barriers)"
                    };
                    return Err(me.async_error(
                        format!(
                            "wgmma reads `{}`[{i}], which a thread wrote (the generic proxy) \
                             {why}: the async proxy may not see the write",
                            me.buf_name(t.buf as usize),
                        ),
                        first,
                    ));
                }
                match me.mem.load(t.buf as usize, i, lane) {
                    Ok(v) => out.push(to_f64(DType::F16, v)),
                    Err(f) => {
                        return Err(me.fault(f, t.buf as usize, i, 1, MemOp::Read, lane as u32));
                    }
                }
            }
            Ok((out, region))
        };
        let (av, ra) = read_tile(self, a, vals[1], m, k)?;
        let (bv, rb) = read_tile(self, b, vals[2], k, n)?;
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let acc = &mut self.frags[d.slot as usize][at..at + m * n];
        for i in 0..m {
            for j in 0..n {
                let mut x = to_f64(DType::F32, acc[i * n + j]);
                for kk in 0..k {
                    x = to_f64(
                        DType::F32,
                        from_f64(DType::F32, x + av[i * k + kk] * bv[kk * n + j]),
                    );
                }
                acc[i * n + j] = from_f64(DType::F32, x);
            }
        }
        let open = &mut self.hop.groups[g].open;
        open.reads.extend([ra, rb]);
        open.accs.push((d.slot, at));
        Ok(())
    }

    /// Whether a `wgmma` in flight (no `wait_group` retired it) reads part of `region`.
    fn read_in_flight(&self, region: &Region) -> bool {
        self.hop
            .groups
            .iter()
            .flat_map(|g| g.batches())
            .flat_map(|b| &b.reads)
            .any(|r| r.overlaps(region))
    }

    /// A thread's write of `lanes` elements of `buf` from `i` (a tile a `wgmma` reads):
    /// an error where a `wgmma` in flight reads any of them.
    pub(super) fn generic_write(
        &self,
        buf: usize,
        i: i64,
        lanes: i64,
        lane: usize,
    ) -> Result<(), InterpError> {
        let region = Region {
            bb: self.mem.lane_bb[lane] as usize,
            buf,
            lo: i,
            hi: i + lanes,
        };
        let in_flight = self.read_in_flight(&region);
        if in_flight {
            return Err(self.async_error(
                format!(
                    "a thread writes `{}`[{}..{}] while a wgmma that reads it is in flight \
                     (no wgmma.wait_group retired it)",
                    self.buf_name(buf),
                    region.lo,
                    region.hi
                ),
                lane,
            ));
        }
        Ok(())
    }

    /// TMA copies and mbarrier operations: each active thread on its own.
    pub(super) fn exec_async(&mut self, op: &'p CFrag, act: &[u32]) -> Result<(), InterpError> {
        let nodes = op.nodes();
        for &(n, _) in &nodes {
            self.eval(n, act)?;
        }
        let srcs = nodes
            .iter()
            .map(|&(n, _)| self.src(n, None))
            .collect::<Result<Vec<_>, InterpError>>()?;
        for &l in act {
            let vals: Vec<Raw> = srcs.iter().map(|s| s.get(&self.cols, l as usize)).collect();
            self.async_lane(op, l as usize, &vals)?;
        }
        Ok(())
    }

    /// The barrier `bar` names for `lane`, with its slot and index, bounds checked.
    fn bar_at(&self, bar: CBar, raw: Raw, lane: usize) -> Result<(u32, usize), InterpError> {
        let m = &self.p.mbars[bar.slot as usize];
        let i = raw as i32 as i64;
        if i < 0 || i >= m.count() as i64 {
            return Err(self.async_error(
                format!(
                    "mbarrier `{}`[{i}] outside its {} barriers",
                    m.name(),
                    m.count()
                ),
                lane,
            ));
        }
        let bb = self.mem.lane_bb[lane] as usize;
        Ok((bar.slot, bb * m.count() as usize + i as usize))
    }

    fn bar_mut(&mut self, (slot, at): (u32, usize)) -> &mut Bar {
        &mut self.hop.bars[slot as usize][at]
    }

    fn bar_name(&self, (slot, at): (u32, usize)) -> String {
        let m = &self.p.mbars[slot as usize];
        format!("`{}`[{}]", m.name(), at % m.count() as usize)
    }

    fn uninit(&self, b: (u32, usize), lane: usize) -> InterpError {
        self.async_error(
            format!("mbarrier {} used before mbarrier.init", self.bar_name(b)),
            lane,
        )
    }

    /// Completes the barrier's phase if nothing is pending.
    fn settle(&mut self, b: (u32, usize)) {
        let bar = self.bar_mut(b);
        if bar.pending == 0 && bar.tx == 0 {
            bar.done += 1;
            bar.pending = bar.arrivals;
        }
    }

    fn async_lane(&mut self, op: &CFrag, lane: usize, vals: &[Raw]) -> Result<(), InterpError> {
        match op {
            CFrag::BarInit { bar, arrivals } => {
                let b = self.bar_at(*bar, vals[0], lane)?;
                *self.bar_mut(b) = Bar {
                    init: true,
                    arrivals: *arrivals,
                    pending: *arrivals,
                    tx: 0,
                    done: 0,
                };
            }
            CFrag::BarExpect { bar, bytes } => {
                let b = self.bar_at(*bar, vals[0], lane)?;
                let st = *self.bar_mut(b);
                if !st.init {
                    return Err(self.uninit(b, lane));
                }
                if st.pending == 0 {
                    return Err(self.async_error(
                        format!(
                            "more arrivals on mbarrier {} than its phase expects",
                            self.bar_name(b)
                        ),
                        lane,
                    ));
                }
                let bar = self.bar_mut(b);
                bar.pending -= 1;
                bar.tx += *bytes as i64;
                self.settle(b);
            }
            CFrag::BarWait { bar, .. } => {
                let b = self.bar_at(*bar, vals[0], lane)?;
                let parity = vals[1] & 1;
                let st = *self.bar_mut(b);
                if !st.init {
                    return Err(self.uninit(b, lane));
                }
                // The phase with parity `parity` has completed when the phase in progress
                // has the other parity.
                if st.done & 1 == parity {
                    return Err(self.async_error(
                        format!(
                            "the wait on mbarrier {} for phase parity {parity} never returns: \
                             the phase has {} of {} arrivals and {} bytes of copies still to come",
                            self.bar_name(b),
                            st.pending,
                            st.arrivals,
                            st.tx
                        ),
                        lane,
                    ));
                }
                self.hop
                    .landing
                    .retain(|l| !(l.bar == b && l.phase < st.done));
            }
            CFrag::Tma {
                dst,
                src,
                coords,
                rows,
                bar,
            } => {
                let b = self.bar_at(*bar, vals[1], lane)?;
                if !self.bar_mut(b).init {
                    return Err(self.uninit(b, lane));
                }
                let origin = index(vals[0], dst.signed);
                let (dbuf, sbuf) = (dst.buf as usize, *src as usize);
                let rows = *rows as i64;
                let bb = self.mem.lane_bb[lane] as usize;
                let region = Region {
                    bb,
                    buf: dbuf,
                    lo: origin,
                    hi: origin + rows * ROW,
                };
                let in_flight = self.read_in_flight(&region);
                if in_flight {
                    return Err(self.async_error(
                        format!(
                            "a TMA copy writes `{}`[{}..{}] while a wgmma that reads it is in \
                             flight (no wgmma.wait_group retired it)",
                            self.buf_name(dbuf),
                            region.lo,
                            region.hi
                        ),
                        lane,
                    ));
                }
                let shape = self.p.bufs[sbuf].buffer.shape().to_vec();
                let strides = self.p.bufs[sbuf].buffer.strides();
                let c: Vec<i64> = coords
                    .iter()
                    .enumerate()
                    .map(|(i, _)| vals[2 + i] as i32 as i64)
                    .collect();
                let nd = shape.len();
                for r in 0..rows {
                    for col in 0..ROW {
                        let mut at = c.clone();
                        at[nd - 2] += r;
                        at[nd - 1] += col;
                        let inside = at
                            .iter()
                            .zip(&shape)
                            .all(|(&x, &len)| (0..len).contains(&x));
                        let v = if inside {
                            let flat: i64 = at.iter().zip(&strides).map(|(x, s)| x * s).sum();
                            self.mem.peek_global(sbuf, flat).unwrap_or(0)
                        } else {
                            0
                        };
                        let i = origin + r * ROW + col;
                        if let Err(f) = self.mem.store_untracked(dbuf, i, lane, v) {
                            return Err(self.fault(f, dbuf, i, 1, MemOp::Write, lane as u32));
                        }
                    }
                }
                let phase = self.bar_mut(b).done;
                self.hop.landing.push(Landing {
                    region,
                    bar: b,
                    phase,
                });
                self.bar_mut(b).tx -= rows * ROW * 2;
                self.settle(b);
            }
            _ => return Err(self.internal("a warp operation run per thread")),
        }
        Ok(())
    }
}

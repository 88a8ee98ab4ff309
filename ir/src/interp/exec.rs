//! The executor: runs a compiled kernel over its grid, the threads of a block in
//! lockstep.
//!
//! Every statement runs for the whole *active set* (a list of lanes) before the next one
//! starts, and every expression is evaluated one node at a time over the active set,
//! into that node's column. That is SIMT execution, and it makes dispatch cost per node,
//! not per thread and node. `if`, `select`, `&&` and `||` split the active set, so only
//! the taken side runs for each thread (a guarded load never executes unguarded).
//! Uniform nodes are evaluated once per statement instead.
//!
//! Small blocks are run several at a time (a *batch*, see [`super::memory`]), so that a
//! grid of one-thread blocks costs no more than one block of many threads. Blocks cannot
//! observe each other without a race, which is reported whatever the order, so this
//! changes no result.

use super::compile::{BufKind, CStmt, Loc, Op, Program};
use super::error::{InterpError, MemOp, ThreadId};
use super::memory::{Fault, Memory, Overlay};
use super::node::NodeId;
use super::race::Tracker;
use super::value::{self, Raw};

#[path = "column_exec.rs"]
mod column_exec;
#[path = "fragment_exec.rs"]
mod fragment_exec;
#[path = "hopper_exec.rs"]
mod hopper_exec;

/// Upper limit on the interpreter's register file and per-thread memory, in elements.
const MAX_ELEMS: usize = 1 << 28;

/// How many lanes a batch of blocks aims at.
const BATCH_LANES: usize = 512;

/// An operand: a uniform value, or the offset of a column in `cols`.
#[derive(Clone, Copy)]
enum Src {
    Uni(Raw),
    Col(usize),
}

impl Src {
    #[inline(always)]
    fn get(self, cols: &[Raw], t: usize) -> Raw {
        match self {
            Src::Uni(v) => v,
            Src::Col(o) => cols[o + t],
        }
    }
}

/// One kernel launch in progress.
pub(super) struct Machine<'p> {
    p: &'p Program,
    grid: [u32; 3],
    dims: [u32; 3],
    /// Threads per block, blocks per batch, and their product (lanes per batch).
    tpb: usize,
    batch: usize,
    lanes: usize,
    blocks: u32,
    uni: Vec<Raw>,
    cols: Vec<Raw>,
    mem: Memory,
    last_epoch: u32,
    /// Spare lane lists, reused so that splitting the active set does not allocate.
    pool: Vec<Vec<u32>>,
    scratch: Vec<Raw>,
    /// Active lanes per block of the batch, counted at barriers.
    counts: Vec<usize>,
    /// Fragment tiles, by fragment slot: per warp of the batch, `count` tiles each.
    frags: Vec<Vec<Raw>>,
    /// mbarriers, TMA copies and `wgmma`s of the batch ([`hopper_exec`]).
    hop: hopper_exec::State,
}

impl<'p> Machine<'p> {
    /// Prepares a launch of `p` over `grid` x `block`. `globals[i]` holds the raw data
    /// of buffer slot `i` if it is a global buffer (ignored otherwise); `scalars` the
    /// values of `p.scalars`, in order.
    pub fn new(
        p: &'p Program,
        grid: [u32; 3],
        block: [u32; 3],
        globals: Vec<Vec<Raw>>,
        scalars: &[Raw],
    ) -> Result<Machine<'p>, InterpError> {
        let too_big = |what: &str| InterpError::Unsupported {
            kernel: p.kernel.clone(),
            detail: format!("{what} too large to interpret"),
        };
        let tpb = block
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b as usize))
            .filter(|&n| n <= MAX_ELEMS)
            .ok_or_else(|| too_big("block"))?;
        let blocks = grid
            .iter()
            .try_fold(1u64, |a, &b| a.checked_mul(b as u64))
            .filter(|&n| n < u32::MAX as u64)
            .ok_or_else(|| too_big("grid"))? as u32;
        let batch = (BATCH_LANES / tpb.max(1)).clamp(1, (blocks as usize).max(1));
        let lanes = tpb * batch;
        let elems = |n: usize, what: &str| {
            n.checked_mul(lanes)
                .filter(|&n| n <= MAX_ELEMS)
                .ok_or_else(|| too_big(what))
        };
        let n_col_elems = elems(p.n_cols, "register file")?;
        let mut data = globals;
        data.resize(p.bufs.len(), Vec::new());
        let mut tracks = Vec::with_capacity(p.bufs.len());
        for (slot, b) in p.bufs.iter().enumerate() {
            let poison = value::poison(b.buffer.dtype());
            match b.kind {
                BufKind::Global => tracks.push(Some(Tracker::new(b.numel))),
                BufKind::Shared => {
                    let n = b
                        .numel
                        .checked_mul(batch)
                        .filter(|&n| n <= MAX_ELEMS)
                        .ok_or_else(|| too_big("shared memory"))?;
                    data[slot] = vec![poison; n];
                    tracks.push(Some(Tracker::new(n)));
                }
                BufKind::Local => {
                    data[slot] = vec![poison; elems(b.numel, "local memory")?];
                    tracks.push(None);
                }
            }
            if data[slot].len() < b.numel {
                return Err(InterpError::Internal {
                    kernel: p.kernel.clone(),
                    detail: format!("no data bound for `{}`", b.buffer.name()),
                });
            }
        }
        // The kernel's shared overlays, by buffer slot.
        let slot_of = |b: &crate::expr::Buffer| p.bufs.iter().position(|s| s.buffer == *b);
        let mut overlays = Vec::new();
        let mut sides = vec![Vec::new(); p.bufs.len()];
        for (slot, b) in p.bufs.iter().enumerate() {
            if b.kind != BufKind::Shared || b.buffer.hosts().is_empty() {
                continue;
            }
            let hosts: Vec<usize> = b.buffer.hosts().iter().filter_map(slot_of).collect();
            if hosts.len() != b.buffer.hosts().len() {
                return Err(InterpError::Unsupported {
                    kernel: p.kernel.clone(),
                    detail: format!(
                        "shared overlay `{}`: a host is not a shared array of the kernel",
                        b.buffer.name()
                    ),
                });
            }
            let o = overlays.len();
            sides[slot].push((o, true));
            for &h in &hosts {
                sides[h].push((o, false));
            }
            overlays.push(Overlay {
                overlay: slot,
                hosts,
            });
        }
        let mut uni = vec![0; p.n_uni];
        for &(slot, raw) in &p.consts {
            uni[slot as usize] = raw;
        }
        for (&(slot, _), &raw) in p.scalars.iter().zip(scalars) {
            uni[slot as usize] = raw;
        }
        let mut cols = vec![0; n_col_elems];
        let lane_t: Vec<u32> = (0..lanes).map(|l| (l % tpb.max(1)) as u32).collect();
        for (l, &t) in lane_t.iter().enumerate() {
            for (&c, v) in p.thread_cols.iter().zip(thread_xyz(block, t)) {
                cols[c as usize * lanes + l] = v;
            }
        }
        Ok(Machine {
            p,
            grid,
            dims: block,
            tpb,
            batch,
            lanes,
            blocks,
            uni,
            cols,
            mem: Memory {
                numel: p.bufs.iter().map(|b| b.numel).collect(),
                kind: p.bufs.iter().map(|b| b.kind).collect(),
                data,
                tracks,
                lane_bb: (0..lanes).map(|l| (l / tpb.max(1)) as u32).collect(),
                lane_t,
                block_ids: vec![0; batch],
                epochs: vec![0; batch],
                sides,
                sharing: vec![Default::default(); overlays.len() * batch],
                overlays,
                poison: p
                    .bufs
                    .iter()
                    .map(|b| value::poison(b.buffer.dtype()))
                    .collect(),
                handover: None,
                sync: Default::default(),
                generic: p
                    .bufs
                    .iter()
                    .zip(&p.async_read)
                    .map(|(b, &read)| {
                        (read && b.kind == BufKind::Shared).then(|| vec![0; b.numel * batch])
                    })
                    .collect(),
            },
            last_epoch: 0,
            pool: Vec::new(),
            scratch: Vec::new(),
            counts: vec![0; batch],
            frags: fragment_exec::storage(p, lanes),
            hop: hopper_exec::State::default(),
        })
    }

    /// Runs every block; returns the buffers' raw data, by slot.
    pub fn run(mut self) -> Result<Vec<Vec<Raw>>, InterpError> {
        if self.tpb == 0 {
            return Ok(self.mem.data);
        }
        let all: Vec<u32> = (0..self.lanes as u32).collect();
        let p = self.p;
        let mut first = 0;
        while first < self.blocks {
            let n = (self.blocks - first).min(self.batch as u32);
            self.start_batch(first, n as usize)?;
            self.exec(&p.body, &all[..n as usize * self.tpb])?;
            first += n;
        }
        Ok(self.mem.data)
    }

    /// Sets up blocks `first .. first + n` as the batch.
    fn start_batch(&mut self, first: u32, n: usize) -> Result<(), InterpError> {
        for bb in 0..n {
            self.mem.block_ids[bb] = first + bb as u32;
            self.mem.epochs[bb] = self.next_epoch()?;
        }
        let p = self.p;
        for l in 0..n * self.tpb {
            let id = self.block_xyz(first + (l / self.tpb) as u32);
            for (&c, v) in p.block_cols.iter().zip(id) {
                self.cols[c as usize * self.lanes + l] = v;
            }
        }
        self.reset_async();
        self.mem.sharing.fill(Default::default());
        // Fragments, shared and local memory start poisoned in every block.
        for (slot, f) in p.frags.iter().enumerate() {
            self.frags[slot].fill(value::poison(f.dtype()));
        }
        for (slot, buf) in p.bufs.iter().enumerate() {
            if buf.kind != BufKind::Global {
                let poison = value::poison(buf.buffer.dtype());
                self.mem.data[slot].fill(poison);
            }
        }
        Ok(())
    }

    fn next_epoch(&mut self) -> Result<u32, InterpError> {
        self.last_epoch =
            self.last_epoch
                .checked_add(1)
                .ok_or_else(|| InterpError::Unsupported {
                    kernel: self.p.kernel.clone(),
                    detail: "more than 2^32 blocks and barriers".into(),
                })?;
        Ok(self.last_epoch)
    }

    // ---- errors -------------------------------------------------------------------------

    fn block_xyz(&self, block: u32) -> [u32; 3] {
        let [gx, gy] = [self.grid[0].max(1), self.grid[1].max(1)];
        [block % gx, (block / gx) % gy, block / (gx * gy)]
    }

    fn tid_of(&self, block: u32, t: u32) -> ThreadId {
        ThreadId {
            block: self.block_xyz(block),
            thread: thread_xyz(self.dims, t),
        }
    }

    /// The block and thread of `lane`.
    fn tid(&self, lane: u32) -> ThreadId {
        let l = lane as usize;
        let bb = self.mem.lane_bb.get(l).copied().unwrap_or(0) as usize;
        let block = self.mem.block_ids.get(bb).copied().unwrap_or(0);
        self.tid_of(block, self.mem.lane_t.get(l).copied().unwrap_or(0))
    }

    fn internal(&self, detail: &str) -> InterpError {
        InterpError::Internal {
            kernel: self.p.kernel.clone(),
            detail: detail.to_string(),
        }
    }

    fn div0(&self, lane: u32) -> InterpError {
        InterpError::DivisionByZero {
            kernel: self.p.kernel.clone(),
            at: self.tid(lane),
        }
    }

    fn fault(
        &self,
        f: Fault,
        buf: usize,
        index: i64,
        lanes: u32,
        op: MemOp,
        lane: u32,
    ) -> InterpError {
        let kernel = self.p.kernel.clone();
        let b = &self.p.bufs[buf];
        let buffer = b.buffer.name().to_string();
        let at = self.tid(lane);
        match f {
            Fault::OutOfBounds => InterpError::OutOfBounds {
                kernel,
                buffer,
                op,
                index,
                lanes,
                len: b.numel,
                at,
            },
            Fault::Misaligned => InterpError::Misaligned {
                kernel,
                buffer,
                index,
                lanes,
                at,
            },
            Fault::Overlay { other, stale } => {
                let other = self.p.bufs[other].buffer.name();
                let what = if stale {
                    format!(
                        "{op} at [{index}] after `{other}`, which shares its bytes (a shared overlay), wrote them: write it again first"
                    )
                } else {
                    format!(
                        "{op} at [{index}] in the barrier interval where `{other}`, which shares its bytes (a shared overlay), was used: a barrier must come between"
                    )
                };
                InterpError::Overlay {
                    kernel,
                    buffer,
                    what,
                    at,
                }
            }
            Fault::Race(c) => {
                let (first, second) = (c.first, op);
                if b.kind == BufKind::Shared {
                    // Shared arrays are per block: the other thread is of this block.
                    let other = ThreadId {
                        block: at.block,
                        thread: thread_xyz(self.dims, c.thread),
                    };
                    InterpError::SharedRace {
                        kernel,
                        buffer,
                        index,
                        first,
                        second,
                        other,
                        at,
                    }
                } else {
                    InterpError::GlobalRace {
                        kernel,
                        buffer,
                        index,
                        first,
                        second,
                        other: self.tid_of(c.block, c.thread),
                        at,
                    }
                }
            }
        }
    }

    // ---- statements ---------------------------------------------------------------------

    fn take_list(&mut self) -> Vec<u32> {
        let mut l = self.pool.pop().unwrap_or_default();
        l.clear();
        l
    }

    fn exec(&mut self, s: &'p CStmt, act: &[u32]) -> Result<(), InterpError> {
        match s {
            CStmt::Seq(items) => {
                for i in items {
                    self.exec(i, act)?;
                }
            }
            CStmt::For { slot, extent, body } => {
                for i in 0..*extent {
                    self.uni[*slot as usize] = i;
                    self.exec(body, act)?;
                }
            }
            CStmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.eval(*cond, act)?;
                match self.src(*cond, None)? {
                    Src::Uni(v) => {
                        if v != 0 {
                            self.exec(then, act)?;
                        } else if let Some(o) = otherwise {
                            self.exec(o, act)?;
                        }
                    }
                    Src::Col(o) => {
                        let (yes, no) = self.split(o, act);
                        if !yes.is_empty() {
                            self.exec(then, &yes)?;
                        }
                        if let Some(other) = otherwise
                            && !no.is_empty()
                        {
                            self.exec(other, &no)?;
                        }
                        self.pool.push(yes);
                        self.pool.push(no);
                    }
                }
            }
            CStmt::Let { value, body } => {
                self.eval(*value, act)?;
                self.exec(body, act)?;
            }
            CStmt::Store {
                buf,
                idx,
                signed,
                value,
            } => {
                self.eval(*idx, act)?;
                self.eval(*value, act)?;
                let (si, sv) = (self.src(*idx, None)?, self.src(*value, None)?);
                let buf = *buf as usize;
                for &t in act {
                    let i = index(si.get(&self.cols, t as usize), *signed);
                    let v = sv.get(&self.cols, t as usize);
                    if let Err(f) = self.mem.store(buf, i, t as usize, v) {
                        return Err(self.fault(f, buf, i, 1, MemOp::Write, t));
                    }
                    if self.p.async_read[buf] {
                        self.generic_write(buf, i, 1, t as usize)?;
                    }
                }
            }
            CStmt::Copy {
                dst,
                dst_idx,
                dst_signed,
                src,
                src_idx,
                src_signed,
                lanes,
            } => {
                self.eval(*src_idx, act)?;
                self.eval(*dst_idx, act)?;
                let (si, di) = (self.src(*src_idx, None)?, self.src(*dst_idx, None)?);
                let (src, dst, n) = (*src as usize, *dst as usize, *lanes as usize);
                // All threads read before any writes, as in lockstep execution.
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                for &t in act {
                    let j = index(si.get(&self.cols, t as usize), *src_signed);
                    let read = self.mem.check_vector(src, j, *lanes).and_then(|()| {
                        (0..n as i64).try_for_each(|l| {
                            scratch.push(self.mem.load(src, j + l, t as usize)?);
                            Ok(())
                        })
                    });
                    if let Err(f) = read {
                        return Err(self.fault(f, src, j, *lanes, MemOp::Read, t));
                    }
                }
                for (k, &t) in act.iter().enumerate() {
                    let i = index(di.get(&self.cols, t as usize), *dst_signed);
                    let write = self.mem.check_vector(dst, i, *lanes).and_then(|()| {
                        (0..n).try_for_each(|l| {
                            let v = scratch.get(k * n + l).copied().unwrap_or_default();
                            self.mem.store(dst, i + l as i64, t as usize, v)
                        })
                    });
                    if let Err(f) = write {
                        return Err(self.fault(f, dst, i, *lanes, MemOp::Write, t));
                    }
                    if self.p.async_read[dst] {
                        self.generic_write(dst, i, *lanes as i64, t as usize)?;
                    }
                }
                self.scratch = scratch;
            }
            CStmt::Barrier => self.barrier(act)?,
            CStmt::Frag(op) => self.exec_frag(op, act)?,
            CStmt::Fence => {
                for &t in act {
                    self.mem.fence(t as usize);
                }
            }
            CStmt::AtomicAdd {
                buf,
                idx,
                signed,
                value,
                old,
            } => self.atomic_add(act, (*buf as usize, *idx, *signed), *value, *old)?,
            // Bounds only: a hint reads no value and takes no part in the race records.
            CStmt::Prefetch { buf, idx, signed } => {
                self.eval(*idx, act)?;
                let si = self.src(*idx, None)?;
                let buf = *buf as usize;
                for &t in act {
                    let i = index(si.get(&self.cols, t as usize), *signed);
                    if let Err(f) = self.mem.check_vector(buf, i, 1) {
                        return Err(self.fault(f, buf, i, 1, MemOp::Read, t));
                    }
                }
            }
        }
        // A write that passed an overlay's bytes to it (`Memory::share`).
        if let Some((o, bb)) = self.mem.handover.take() {
            let lane = act
                .iter()
                .copied()
                .find(|&l| self.mem.lane_bb[l as usize] as usize == bb)
                .unwrap_or_default();
            self.check_handover(o, bb, lane as usize)?;
        }
        Ok(())
    }

    /// `old = atomic_add(buf[idx], value)` for each active thread in turn: the threads
    /// of a block in order, as one of the orders a device may take.
    fn atomic_add(
        &mut self,
        act: &[u32],
        (buf, idx, signed): (usize, NodeId, bool),
        value: NodeId,
        old: Option<(u32, NodeId, bool)>,
    ) -> Result<(), InterpError> {
        self.eval(idx, act)?;
        self.eval(value, act)?;
        let (si, sv) = (self.src(idx, None)?, self.src(value, None)?);
        let so = match old {
            Some((slot, oi, os)) => {
                self.eval(oi, act)?;
                Some((slot as usize, self.src(oi, None)?, os))
            }
            None => None,
        };
        for &t in act {
            let i = index(si.get(&self.cols, t as usize), signed);
            let v = sv.get(&self.cols, t as usize);
            let was = match self.mem.atomic_add(buf, i, t as usize, v) {
                Ok(was) => was,
                Err(f) => return Err(self.fault(f, buf, i, 1, MemOp::Write, t)),
            };
            if let Some((slot, oi, os)) = so {
                let j = index(oi.get(&self.cols, t as usize), os);
                if let Err(f) = self.mem.store(slot, j, t as usize, was) {
                    return Err(self.fault(f, slot, j, 1, MemOp::Write, t));
                }
            }
        }
        Ok(())
    }

    /// A barrier: every block of the batch has all its threads here or none (a block
    /// that skipped the barrier as a whole is not divergent); the blocks that reach it
    /// enter a new epoch.
    fn barrier(&mut self, act: &[u32]) -> Result<(), InterpError> {
        self.counts.fill(0);
        for &l in act {
            let bb = self.mem.lane_bb[l as usize] as usize;
            self.counts[bb] += 1;
        }
        for bb in 0..self.batch {
            let n = self.counts[bb];
            if n != 0 && n != self.tpb {
                let first = act
                    .iter()
                    .copied()
                    .find(|&l| self.mem.lane_bb[l as usize] as usize == bb)
                    .unwrap_or(0);
                return Err(InterpError::DivergentBarrier {
                    kernel: self.p.kernel.clone(),
                    active: n,
                    total: self.tpb,
                    at: self.tid(first),
                });
            }
        }
        for bb in 0..self.batch {
            if self.counts[bb] == self.tpb {
                self.mem.epochs[bb] = self.next_epoch()?;
            }
        }
        Ok(())
    }

    /// Splits `act` by the bool column at offset `o`.
    fn split(&mut self, o: usize, act: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let (mut yes, mut no) = (self.take_list(), self.take_list());
        for &t in act {
            if self.cols[o + t as usize] != 0 {
                yes.push(t);
            } else {
                no.push(t);
            }
        }
        (yes, no)
    }

    /// Where node `n`'s value is, as an operand. With `below = Some(c)`, a column must
    /// come before column `c` (compile guarantees it; checked so a bug cannot panic).
    fn src(&self, n: NodeId, below: Option<usize>) -> Result<Src, InterpError> {
        match self.p.nodes[n as usize].loc {
            Loc::Uni(s) => Ok(Src::Uni(self.uni[s as usize])),
            Loc::Col(c) if below.is_none_or(|b| (c as usize) < b) => {
                Ok(Src::Col(c as usize * self.lanes))
            }
            Loc::Col(_) => Err(self.internal("operand column after its result")),
        }
    }

    // ---- expressions --------------------------------------------------------------------

    /// Evaluates node `n` for the threads of `act` (non-empty).
    fn eval(&mut self, n: NodeId, act: &[u32]) -> Result<(), InterpError> {
        let p = self.p;
        let node = &p.nodes[n as usize];
        match node.loc {
            Loc::Uni(_) => {
                let first = act.first().copied().unwrap_or(0);
                self.eval_uni(n, first).map(|_| ())
            }
            Loc::Col(c) => self.eval_col(&node.op, c as usize, act),
        }
    }

    /// Evaluates a uniform node once; `t` names the thread in errors.
    fn eval_uni(&mut self, n: NodeId, t: u32) -> Result<Raw, InterpError> {
        let p = self.p;
        let node = &p.nodes[n as usize];
        let Loc::Uni(slot) = node.loc else {
            return Err(self.internal("uniform node with a column"));
        };
        let v = match node.op {
            Op::Leaf => return Ok(self.uni[slot as usize]),
            Op::Bin(f, a, b) => {
                let (x, y) = (self.eval_uni(a, t)?, self.eval_uni(b, t)?);
                f(x, y).map_err(|_| self.div0(t))?
            }
            Op::And(a, b) => (self.eval_uni(a, t)? != 0 && self.eval_uni(b, t)? != 0) as Raw,
            Op::Or(a, b) => (self.eval_uni(a, t)? != 0 || self.eval_uni(b, t)? != 0) as Raw,
            Op::Un(f, a) => f(self.eval_uni(a, t)?),
            Op::Cast(from, to, a) => value::cast(from, to, self.eval_uni(a, t)?),
            Op::Select(c, x, y) => {
                if self.eval_uni(c, t)? != 0 {
                    self.eval_uni(x, t)?
                } else {
                    self.eval_uni(y, t)?
                }
            }
            Op::Call(f, ids, k) => {
                let mut args = [0; 3];
                for (a, &id) in args.iter_mut().zip(&ids).take(k) {
                    *a = self.eval_uni(id, t)?;
                }
                f(&args)
            }
            // Every thread holds the same value: the partner's is this one's. (Which
            // threads arrive is not checked for a uniform value, whose result cannot
            // differ; the hardware still wants them all.)
            Op::Shuffle(a, _) => self.eval_uni(a, t)?,
            Op::Load { .. } => return Err(self.internal("uniform load")),
        };
        self.uni[slot as usize] = v;
        Ok(v)
    }
}

/// An index value as a signed 64-bit number.
#[inline(always)]
fn index(raw: Raw, signed: bool) -> i64 {
    if signed {
        raw as i32 as i64
    } else {
        raw as i64
    }
}

/// `(x, y, z)` of linear thread number `t` in a block of `dims` (x fastest).
fn thread_xyz(dims: [u32; 3], t: u32) -> [u32; 3] {
    let [dx, dy, _] = dims;
    let (dx, dy) = (dx.max(1), dy.max(1));
    [t % dx, (t / dx) % dy, t / (dx * dy)]
}

//! The executor: runs a compiled kernel block by block, the threads of a block in
//! lockstep.
//!
//! Every statement runs for the whole *active set* (a list of thread numbers) before the
//! next one starts, and every expression is evaluated one node at a time over the active
//! set, into that node's column. That is SIMT execution, and it makes dispatch cost per
//! node, not per thread and node. `if`, `select`, `&&` and `||` split the active set, so
//! only the taken side runs for each thread (a guarded load never executes unguarded).
//! Uniform nodes are evaluated once per statement instead.

use super::compile::{BufKind, CStmt, Loc, NodeId, Op, Program};
use super::error::{InterpError, MemOp, ThreadId};
use super::race::{Conflict, Tracker};
use super::value::{self, Raw};

/// Upper limit on the interpreter's register file and per-thread memory, in elements.
const MAX_ELEMS: usize = 1 << 28;

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

/// Why an access failed (made into an [`InterpError`] with the names once known).
enum Fault {
    OutOfBounds,
    Misaligned,
    Race(Conflict),
}

/// The buffers of a launch and their race records.
struct Memory {
    data: Vec<Vec<Raw>>,
    tracks: Vec<Option<Tracker>>,
    numel: Vec<usize>,
    kind: Vec<BufKind>,
    epoch: u32,
    block: u32,
}

impl Memory {
    /// The position in `data[buf]` of element `i` for thread `t`, bounds checked.
    #[inline]
    fn offset(&self, buf: usize, i: i64, t: u32) -> Result<usize, Fault> {
        let n = self.numel[buf];
        if i < 0 || i as u64 >= n as u64 {
            return Err(Fault::OutOfBounds);
        }
        Ok(match self.kind[buf] {
            BufKind::Local => t as usize * n + i as usize,
            _ => i as usize,
        })
    }

    /// Checks that a vector access of `lanes` at `i` is aligned and in bounds.
    fn check_vector(&self, buf: usize, i: i64, lanes: u32) -> Result<(), Fault> {
        if i.rem_euclid(lanes as i64) != 0 {
            return Err(Fault::Misaligned);
        }
        if i < 0 || i + lanes as i64 > self.numel[buf] as i64 {
            return Err(Fault::OutOfBounds);
        }
        Ok(())
    }

    /// The block as race records see it: shared memory is per block, so there the
    /// block is always 0 and only epochs order accesses.
    #[inline]
    fn race_block(&self, buf: usize) -> u32 {
        if self.kind[buf] == BufKind::Shared {
            0
        } else {
            self.block
        }
    }

    #[inline]
    fn load(&mut self, buf: usize, i: i64, t: u32) -> Result<Raw, Fault> {
        let at = self.offset(buf, i, t)?;
        let b = self.race_block(buf);
        if let Some(tr) = &mut self.tracks[buf] {
            tr.read(at, b, t, self.epoch).map_err(Fault::Race)?;
        }
        // `offset` checked the bounds; `get` keeps a broken invariant from panicking.
        self.data[buf].get(at).copied().ok_or(Fault::OutOfBounds)
    }

    #[inline]
    fn store(&mut self, buf: usize, i: i64, t: u32, v: Raw) -> Result<(), Fault> {
        let at = self.offset(buf, i, t)?;
        let b = self.race_block(buf);
        if let Some(tr) = &mut self.tracks[buf] {
            tr.write(at, b, t, self.epoch).map_err(Fault::Race)?;
        }
        match self.data[buf].get_mut(at) {
            Some(slot) => *slot = v,
            None => return Err(Fault::OutOfBounds),
        }
        Ok(())
    }
}

/// One kernel launch in progress.
pub(super) struct Machine<'p> {
    p: &'p Program,
    grid: [u32; 3],
    dims: [u32; 3],
    tpb: usize,
    uni: Vec<Raw>,
    cols: Vec<Raw>,
    mem: Memory,
    /// Spare thread lists, reused so that splitting the active set does not allocate.
    pool: Vec<Vec<u32>>,
    scratch: Vec<Raw>,
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
            .try_fold(1usize, |a, &b| a.checked_mul(b as usize));
        let tpb = tpb
            .filter(|&n| n <= u32::MAX as usize)
            .ok_or_else(|| too_big("block"))?;
        let blocks = grid.iter().try_fold(1u64, |a, &b| a.checked_mul(b as u64));
        if blocks.is_none_or(|n| n >= u32::MAX as u64) {
            return Err(too_big("grid"));
        }
        let n_col_elems = p
            .n_cols
            .checked_mul(tpb)
            .filter(|&n| n <= MAX_ELEMS)
            .ok_or_else(|| too_big("register file"))?;
        let mut data = globals;
        data.resize(p.bufs.len(), Vec::new());
        let mut tracks = Vec::with_capacity(p.bufs.len());
        for (slot, b) in p.bufs.iter().enumerate() {
            match b.kind {
                BufKind::Global => tracks.push(Some(Tracker::new(b.numel))),
                BufKind::Shared => {
                    data[slot] = vec![value::poison(b.buffer.dtype()); b.numel];
                    tracks.push(Some(Tracker::new(b.numel)));
                }
                BufKind::Local => {
                    let n = b
                        .numel
                        .checked_mul(tpb)
                        .filter(|&n| n <= MAX_ELEMS)
                        .ok_or_else(|| too_big("local memory"))?;
                    data[slot] = vec![value::poison(b.buffer.dtype()); n];
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
        let mut uni = vec![0; p.n_uni];
        for &(slot, raw) in &p.consts {
            uni[slot as usize] = raw;
        }
        for (&(slot, _), &raw) in p.scalars.iter().zip(scalars) {
            uni[slot as usize] = raw;
        }
        let mut cols = vec![0; n_col_elems];
        for t in 0..tpb {
            let id = thread_xyz(block, t as u32);
            for d in 0..3 {
                cols[p.thread_cols[d] as usize * tpb + t] = id[d];
            }
        }
        Ok(Machine {
            p,
            grid,
            dims: block,
            tpb,
            uni,
            cols,
            mem: Memory {
                numel: p.bufs.iter().map(|b| b.numel).collect(),
                kind: p.bufs.iter().map(|b| b.kind).collect(),
                data,
                tracks,
                epoch: 0,
                block: 0,
            },
            pool: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// Runs every block; returns the buffers' raw data, by slot.
    pub fn run(mut self) -> Result<Vec<Vec<Raw>>, InterpError> {
        if self.tpb == 0 {
            return Ok(self.mem.data);
        }
        let all: Vec<u32> = (0..self.tpb as u32).collect();
        let p = self.p;
        let [gx, gy, gz] = self.grid;
        for bz in 0..gz {
            for by in 0..gy {
                for bx in 0..gx {
                    self.start_block([bx, by, bz])?;
                    self.exec(&p.body, &all)?;
                }
            }
        }
        Ok(self.mem.data)
    }

    fn start_block(&mut self, b: [u32; 3]) -> Result<(), InterpError> {
        for (&slot, &v) in self.p.block_slots.iter().zip(&b) {
            self.uni[slot as usize] = v;
        }
        self.mem.block = b[0] + self.grid[0] * (b[1] + self.grid[1] * b[2]);
        self.next_epoch()?;
        // Shared and local memory start poisoned in every block.
        for (slot, buf) in self.p.bufs.iter().enumerate() {
            if buf.kind != BufKind::Global {
                let poison = value::poison(buf.buffer.dtype());
                self.mem.data[slot].fill(poison);
            }
        }
        Ok(())
    }

    fn next_epoch(&mut self) -> Result<(), InterpError> {
        self.mem.epoch = self
            .mem
            .epoch
            .checked_add(1)
            .ok_or_else(|| InterpError::Unsupported {
                kernel: self.p.kernel.clone(),
                detail: "more than 2^32 blocks and barriers".into(),
            })?;
        Ok(())
    }

    // ---- errors -------------------------------------------------------------------------

    fn tid_of(&self, block: u32, t: u32) -> ThreadId {
        let [gx, gy] = [self.grid[0].max(1), self.grid[1].max(1)];
        ThreadId {
            block: [block % gx, (block / gx) % gy, block / (gx * gy)],
            thread: thread_xyz(self.dims, t),
        }
    }

    fn tid(&self, t: u32) -> ThreadId {
        self.tid_of(self.mem.block, t)
    }

    fn internal(&self, detail: &str) -> InterpError {
        InterpError::Internal {
            kernel: self.p.kernel.clone(),
            detail: detail.to_string(),
        }
    }

    fn div0(&self, t: u32) -> InterpError {
        InterpError::DivisionByZero {
            kernel: self.p.kernel.clone(),
            at: self.tid(t),
        }
    }

    fn fault(
        &self,
        f: Fault,
        buf: usize,
        index: i64,
        lanes: u32,
        op: MemOp,
        t: u32,
    ) -> InterpError {
        let kernel = self.p.kernel.clone();
        let b = &self.p.bufs[buf];
        let buffer = b.buffer.name().to_string();
        let at = self.tid(t);
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
            Fault::Race(c) => {
                let other = self.tid_of(c.block, c.thread);
                let (first, second) = (c.first, op);
                if b.kind == BufKind::Shared {
                    let other = self.tid_of(self.mem.block, c.thread);
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
                        other,
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
                    if let Err(f) = self.mem.store(buf, i, t, v) {
                        return Err(self.fault(f, buf, i, 1, MemOp::Write, t));
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
                            scratch.push(self.mem.load(src, j + l, t)?);
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
                            self.mem.store(dst, i + l as i64, t, v)
                        })
                    });
                    if let Err(f) = write {
                        return Err(self.fault(f, dst, i, *lanes, MemOp::Write, t));
                    }
                }
                self.scratch = scratch;
            }
            CStmt::Barrier => {
                if act.len() != self.tpb {
                    return Err(InterpError::DivergentBarrier {
                        kernel: self.p.kernel.clone(),
                        active: act.len(),
                        total: self.tpb,
                        at: self.tid(act.first().copied().unwrap_or(0)),
                    });
                }
                self.next_epoch()?;
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
                Ok(Src::Col(c as usize * self.tpb))
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
            Op::Load { .. } => return Err(self.internal("uniform load")),
        };
        self.uni[slot as usize] = v;
        Ok(v)
    }

    /// Evaluates a per-thread node into column `c`.
    fn eval_col(&mut self, op: &'p Op, c: usize, act: &[u32]) -> Result<(), InterpError> {
        let tpb = self.tpb;
        match *op {
            Op::Leaf => {}
            Op::Bin(f, a, b) => {
                self.eval(a, act)?;
                self.eval(b, act)?;
                let (sa, sb) = (self.src(a, Some(c))?, self.src(b, Some(c))?);
                let (lo, hi) = self.cols.split_at_mut(c * tpb);
                let mut bad = None;
                for &t in act {
                    let ti = t as usize;
                    match f(sa.get(lo, ti), sb.get(lo, ti)) {
                        Ok(v) => hi[ti] = v,
                        Err(_) => {
                            bad = Some(t);
                            break;
                        }
                    }
                }
                if let Some(t) = bad {
                    return Err(self.div0(t));
                }
            }
            Op::And(a, b) | Op::Or(a, b) => {
                let is_and = matches!(op, Op::And(..));
                self.eval(a, act)?;
                let sa = self.src(a, Some(c))?;
                // Threads for which `b` decides the result: `a` true for &&, false for ||.
                let mut need = self.take_list();
                for &t in act {
                    let av = sa.get(&self.cols, t as usize) != 0;
                    self.cols[c * tpb + t as usize] = av as Raw;
                    if av == is_and {
                        need.push(t);
                    }
                }
                if !need.is_empty() {
                    self.eval(b, &need)?;
                    let sb = self.src(b, Some(c))?;
                    for &t in &need {
                        let bv = sb.get(&self.cols, t as usize) != 0;
                        self.cols[c * tpb + t as usize] = bv as Raw;
                    }
                }
                self.pool.push(need);
            }
            Op::Un(f, a) => {
                self.eval(a, act)?;
                let sa = self.src(a, Some(c))?;
                let (lo, hi) = self.cols.split_at_mut(c * tpb);
                for &t in act {
                    hi[t as usize] = f(sa.get(lo, t as usize));
                }
            }
            Op::Cast(from, to, a) => {
                self.eval(a, act)?;
                let sa = self.src(a, Some(c))?;
                let (lo, hi) = self.cols.split_at_mut(c * tpb);
                for &t in act {
                    hi[t as usize] = value::cast(from, to, sa.get(lo, t as usize));
                }
            }
            Op::Call(f, ids, k) => {
                let mut srcs = [Src::Uni(0); 3];
                for (s, &id) in srcs.iter_mut().zip(&ids).take(k) {
                    self.eval(id, act)?;
                    *s = self.src(id, Some(c))?;
                }
                let (lo, hi) = self.cols.split_at_mut(c * tpb);
                for &t in act {
                    let ti = t as usize;
                    let args = [
                        srcs[0].get(lo, ti),
                        srcs[1].get(lo, ti),
                        srcs[2].get(lo, ti),
                    ];
                    hi[ti] = f(&args);
                }
            }
            Op::Select(cn, x, y) => {
                self.eval(cn, act)?;
                match self.src(cn, Some(c))? {
                    Src::Uni(v) => {
                        let taken = if v != 0 { x } else { y };
                        self.eval(taken, act)?;
                        self.copy_into(c, taken, act)?;
                    }
                    Src::Col(o) => {
                        let (yes, no) = self.split(o, act);
                        for (branch, list) in [(x, &yes), (y, &no)] {
                            if !list.is_empty() {
                                self.eval(branch, list)?;
                                self.copy_into(c, branch, list)?;
                            }
                        }
                        self.pool.push(yes);
                        self.pool.push(no);
                    }
                }
            }
            Op::Load {
                buf,
                idx,
                signed,
                as_bool,
            } => {
                self.eval(idx, act)?;
                let si = self.src(idx, Some(c))?;
                let buf = buf as usize;
                for &t in act {
                    let i = index(si.get(&self.cols, t as usize), signed);
                    match self.mem.load(buf, i, t) {
                        Ok(v) => {
                            let v = if as_bool { (v != 0) as Raw } else { v };
                            self.cols[c * tpb + t as usize] = v;
                        }
                        Err(f) => return Err(self.fault(f, buf, i, 1, MemOp::Read, t)),
                    }
                }
            }
        }
        Ok(())
    }

    /// Copies node `n`'s value into column `c` for the threads of `act`.
    fn copy_into(&mut self, c: usize, n: NodeId, act: &[u32]) -> Result<(), InterpError> {
        let s = self.src(n, Some(c))?;
        let (lo, hi) = self.cols.split_at_mut(c * self.tpb);
        for &t in act {
            hi[t as usize] = s.get(lo, t as usize);
        }
        Ok(())
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

//! Execution of per-thread nodes: a node's value for every active thread, in one column
//! of the register file (arithmetic, loads, shuffles).

use super::super::compile::Op;
use super::super::error::{InterpError, MemOp};
use super::super::node::NodeId;
use super::super::value::{self, Raw};
use super::{Machine, Src, index};

impl<'p> Machine<'p> {
    /// Evaluates a per-thread node into column `c`.
    pub(super) fn eval_col(
        &mut self,
        op: &'p Op,
        c: usize,
        act: &[u32],
    ) -> Result<(), InterpError> {
        let lanes = self.lanes;
        match *op {
            Op::Leaf => {}
            Op::Bin(f, a, b) => {
                self.eval(a, act)?;
                self.eval(b, act)?;
                let (sa, sb) = (self.src(a, Some(c))?, self.src(b, Some(c))?);
                let (lo, hi) = self.cols.split_at_mut(c * lanes);
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
                    self.cols[c * lanes + t as usize] = av as Raw;
                    if av == is_and {
                        need.push(t);
                    }
                }
                if !need.is_empty() {
                    self.eval(b, &need)?;
                    let sb = self.src(b, Some(c))?;
                    for &t in &need {
                        let bv = sb.get(&self.cols, t as usize) != 0;
                        self.cols[c * lanes + t as usize] = bv as Raw;
                    }
                }
                self.pool.push(need);
            }
            Op::Un(f, a) => {
                self.eval(a, act)?;
                let sa = self.src(a, Some(c))?;
                let (lo, hi) = self.cols.split_at_mut(c * lanes);
                for &t in act {
                    hi[t as usize] = f(sa.get(lo, t as usize));
                }
            }
            Op::Cast(from, to, a) => {
                self.eval(a, act)?;
                let sa = self.src(a, Some(c))?;
                let (lo, hi) = self.cols.split_at_mut(c * lanes);
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
                let (lo, hi) = self.cols.split_at_mut(c * lanes);
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
            Op::Shuffle(a, mask) => {
                self.eval(a, act)?;
                self.shuffle(c, a, mask, act)?;
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
                    match self.mem.load(buf, i, t as usize) {
                        Ok(v) => {
                            let v = if as_bool { (v != 0) as Raw } else { v };
                            self.cols[c * lanes + t as usize] = v;
                        }
                        Err(f) => return Err(self.fault(f, buf, i, 1, MemOp::Read, t)),
                    }
                }
            }
        }
        Ok(())
    }

    /// `shuffle_xor`: column `c` of each lane of `act` takes node `a`'s value at the lane
    /// of its block whose thread index is its own xor `mask`. Held to a stricter rule than
    /// the hardware's (a whole subgroup, whose size the interpreter does not know): every
    /// thread of the block takes part, as at a barrier, so a shuffle that is right here is
    /// right for any subgroup size the checker lets the mask span.
    fn shuffle(&mut self, c: usize, a: NodeId, mask: u32, act: &[u32]) -> Result<(), InterpError> {
        let tpb = self.tpb;
        let mut present = vec![false; self.lanes];
        self.counts.fill(0);
        for &l in act {
            present[l as usize] = true;
            self.counts[l as usize / tpb] += 1;
        }
        // Partners first (the precise message), then whole blocks.
        let misfit = |l: u32, whole: bool| {
            let t = l as usize % tpb;
            let partner = t ^ mask as usize;
            let why = if partner >= tpb {
                Some("is past the block's threads")
            } else if !present[l as usize - t + partner] {
                Some(
                    "does not arrive (the shuffle is under a condition that differs between threads)",
                )
            } else if whole && self.counts[l as usize / tpb] != tpb {
                Some("arrives, but not every thread of the block does")
            } else {
                None
            };
            why.map(|why| (l, partner, why))
        };
        let first = act
            .iter()
            .find_map(|&l| misfit(l, false))
            .or_else(|| act.iter().find_map(|&l| misfit(l, true)));
        if let Some((l, partner, why)) = first {
            return Err(InterpError::DivergentShuffle {
                kernel: self.p.kernel.clone(),
                mask,
                partner,
                why,
                at: self.tid(l),
            });
        }
        let s = self.src(a, Some(c))?;
        let (lo, hi) = self.cols.split_at_mut(c * self.lanes);
        for &l in act {
            let t = l as usize % tpb;
            hi[l as usize] = s.get(lo, l as usize - t + (t ^ mask as usize));
        }
        Ok(())
    }

    /// Copies node `n`'s value into column `c` for the threads of `act`.
    fn copy_into(&mut self, c: usize, n: NodeId, act: &[u32]) -> Result<(), InterpError> {
        let s = self.src(n, Some(c))?;
        let (lo, hi) = self.cols.split_at_mut(c * self.lanes);
        for &t in act {
            hi[t as usize] = s.get(lo, t as usize);
        }
        Ok(())
    }
}

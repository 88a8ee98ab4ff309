//! Execution of fragment operations (see [`super::super::fragment`] for the semantics).

use half::f16;

use super::super::compile::Program;
use super::super::error::{InterpError, MemOp};
use super::super::fragment::{CFrag, CMem, CTile, element_offsets};
use super::super::value::{self, Raw};
use super::{Machine, Src, index};
use crate::dtype::DType;
use crate::fragment::WARP;

const W: usize = WARP as usize;

/// Storage for every fragment array of `p`, once per warp of `lanes` threads, poisoned.
pub(super) fn storage(p: &Program, lanes: usize) -> Vec<Vec<Raw>> {
    p.frags
        .iter()
        .map(|f| {
            let n = (lanes / W) * f.count() as usize * f.tile_len();
            vec![value::poison(f.dtype()); n]
        })
        .collect()
}

pub(super) fn to_f64(dtype: DType, r: Raw) -> f64 {
    match dtype {
        DType::F16 => f16::from_bits(r as u16).to_f64(),
        _ => f32::from_bits(r) as f64,
    }
}

pub(super) fn from_f64(dtype: DType, x: f64) -> Raw {
    match dtype {
        DType::F16 => f16::from_f64(x).to_bits() as Raw,
        _ => (x as f32).to_bits(),
    }
}

impl<'p> Machine<'p> {
    /// Runs `op` once for every warp (or warpgroup) of `act`, after checking that the
    /// whole warp is there and agrees on the arguments; TMA copies and mbarrier
    /// operations once per thread.
    pub(super) fn exec_frag(&mut self, op: &'p CFrag, act: &[u32]) -> Result<(), InterpError> {
        let group = op.threads(&self.p.frags);
        if group == 1 {
            return self.exec_async(op, act);
        }
        let nodes = op.nodes();
        for &(n, _) in &nodes {
            self.eval(n, act)?;
        }
        let srcs = nodes
            .iter()
            .map(|&(n, what)| Ok((self.src(n, None)?, what)))
            .collect::<Result<Vec<(Src, &str)>, InterpError>>()?;
        let mut vals = vec![0; srcs.len()];
        let mut i = 0;
        while i < act.len() {
            // Active lists are in lane order and a block is whole warps, so a warp's
            // (or warpgroup's) active lanes are a contiguous run with one value of
            // `lane / group`.
            let w = act[i] as usize / group;
            let j = i + act[i..]
                .iter()
                .take_while(|&&l| l as usize / group == w)
                .count();
            let lanes = &act[i..j];
            if lanes.len() != group {
                return Err(InterpError::DivergentFragment {
                    kernel: self.p.kernel.clone(),
                    fragment: self.frag_name(op),
                    active: lanes.len(),
                    at: self.tid(lanes[0]),
                });
            }
            for (v, &(s, what)) in vals.iter_mut().zip(&srcs) {
                let first = s.get(&self.cols, lanes[0] as usize);
                if let Some(&l) = lanes
                    .iter()
                    .find(|&&l| s.get(&self.cols, l as usize) != first)
                {
                    return Err(InterpError::NonUniformFragment {
                        kernel: self.p.kernel.clone(),
                        fragment: self.frag_name(op),
                        what,
                        first: first as i32,
                        second: s.get(&self.cols, l as usize) as i32,
                        at: self.tid(l),
                    });
                }
                *v = first;
            }
            self.frag_group(op, w * group, group, &vals)?;
            i = j;
        }
        Ok(())
    }

    fn frag_name(&self, op: &CFrag) -> String {
        let t = match op {
            CFrag::Fill { dst: t, .. }
            | CFrag::Load { dst: t, .. }
            | CFrag::Store { src: t, .. }
            | CFrag::Mma { d: t, .. }
            | CFrag::WgMma { d: t, .. }
            | CFrag::Map { dst: t, .. }
            | CFrag::RowReduce { dst: t, .. }
            | CFrag::Convert { dst: t, .. } => t,
            _ => return "wgmma".to_string(),
        };
        self.p.frags[t.slot as usize].name().to_string()
    }

    /// Offset of tile `t` (index value `raw`) of warp `w` in its storage (a warpgroup's
    /// tiles are stored with its first warp's).
    pub(super) fn tile_at(&self, t: CTile, raw: Raw, w: usize) -> Result<usize, InterpError> {
        let f = &self.p.frags[t.slot as usize];
        let i = raw as i32 as i64;
        if i < 0 || i >= f.count() as i64 {
            return Err(InterpError::FragmentIndex {
                kernel: self.p.kernel.clone(),
                fragment: f.name().to_string(),
                index: i,
                count: f.count(),
                at: self.tid((w * W) as u32),
            });
        }
        Ok((w * f.count() as usize + i as usize) * f.tile_len())
    }

    /// Runs `op` for the `group` threads from lane `first` (a warp or a warpgroup).
    fn frag_group(
        &mut self,
        op: &CFrag,
        first: usize,
        group: usize,
        vals: &[Raw],
    ) -> Result<(), InterpError> {
        let w = first / W;
        match *op {
            CFrag::Fill { dst, .. } => {
                let at = self.tile_at(dst, vals[0], w)?;
                self.acc_touched(dst, at, first)?;
                let n = self.p.frags[dst.slot as usize].tile_len();
                self.frags[dst.slot as usize][at..at + n].fill(vals[1]);
            }
            CFrag::Load { dst, mem } => {
                let at = self.tile_at(dst, vals[0], w)?;
                self.acc_touched(dst, at, first)?;
                self.frag_mem(dst, at, mem, vals[1], first, group, MemOp::Read)?;
            }
            CFrag::Store { src, mem } => {
                let at = self.tile_at(src, vals[0], w)?;
                self.acc_touched(src, at, first)?;
                self.frag_mem(src, at, mem, vals[1], first, group, MemOp::Write)?;
            }
            CFrag::Map {
                dst,
                row,
                col,
                ref args,
                value,
            } => self.frag_map(dst, (row, col), args, value, first, vals)?,
            CFrag::RowReduce {
                dst,
                src,
                tiles,
                max,
            } => {
                let at = self.tile_at(dst, vals[0], w)?;
                let from = self.tile_at(src, vals[1], w)?;
                // The last tile read must exist too.
                self.tile_at(src, vals[1].wrapping_add(tiles - 1), w)?;
                self.acc_touched(src, from, first)?;
                let f = &self.p.frags[src.slot as usize];
                let (rows, cols) = f.dims();
                let (rows, cols, dt) = (rows as usize, cols as usize, f.dtype());
                let n = rows * cols;
                for i in 0..rows {
                    let mut acc: Option<f64> = None;
                    for t in 0..tiles as usize {
                        for j in 0..cols {
                            let x = to_f64(
                                dt,
                                self.frags[src.slot as usize][from + t * n + i * cols + j],
                            );
                            acc = Some(match acc {
                                None => x,
                                Some(a) if max => a.max(x),
                                // Sums in the fragment's type, a rounding a step.
                                Some(a) => to_f64(dt, from_f64(dt, a + x)),
                            });
                        }
                    }
                    let r = from_f64(dt, acc.unwrap_or(0.0));
                    self.frags[dst.slot as usize][at + i] = r;
                }
            }
            CFrag::Convert { dst, src } => {
                let at = self.tile_at(dst, vals[0], w)?;
                let from = self.tile_at(src, vals[1], w)?;
                self.acc_touched(src, from, first)?;
                let (ts, td) = (
                    self.p.frags[src.slot as usize].dtype(),
                    self.p.frags[dst.slot as usize].dtype(),
                );
                let n = self.p.frags[dst.slot as usize].tile_len();
                for e in 0..n {
                    let x = to_f64(ts, self.frags[src.slot as usize][from + e]);
                    self.frags[dst.slot as usize][at + e] = from_f64(td, x);
                }
            }
            CFrag::WgMma { d, a, b } => self.wgmma(d, a, b, first, vals)?,
            CFrag::WgFence | CFrag::WgCommit | CFrag::WgWait(_) => self.wg_sync(op, first)?,
            CFrag::Tma { .. }
            | CFrag::BarInit { .. }
            | CFrag::BarExpect { .. }
            | CFrag::BarWait { .. } => {
                return Err(self.internal("a per-thread operation in a warp"));
            }
            CFrag::Mma { d, a, b, c } => {
                let [da, aa, ba, ca] = [
                    self.tile_at(d, vals[0], w)?,
                    self.tile_at(a, vals[1], w)?,
                    self.tile_at(b, vals[2], w)?,
                    self.tile_at(c, vals[3], w)?,
                ];
                let fd = &self.p.frags[d.slot as usize];
                let fa = &self.p.frags[a.slot as usize];
                let s = fd.shape();
                let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
                let (ta, tc) = (fa.dtype(), fd.dtype());
                let av: Vec<f64> = self.frags[a.slot as usize][aa..aa + m * k]
                    .iter()
                    .map(|&r| to_f64(ta, r))
                    .collect();
                let bv: Vec<f64> = self.frags[b.slot as usize][ba..ba + k * n]
                    .iter()
                    .map(|&r| to_f64(ta, r))
                    .collect();
                let cv: Vec<Raw> = self.frags[c.slot as usize][ca..ca + m * n].to_vec();
                let out = &mut self.frags[d.slot as usize][da..da + m * n];
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = to_f64(tc, cv[i * n + j]);
                        for kk in 0..k {
                            // One product and one sum in the accumulator's type.
                            acc = to_f64(tc, from_f64(tc, acc + av[i * k + kk] * bv[kk * n + j]));
                        }
                        out[i * n + j] = from_f64(tc, acc);
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs a [`CFrag::Map`] on the tile of the warp from lane `first`: lane `l` takes
    /// elements `l`, `l + 32`, ... (row-major), evaluates the value with the element's
    /// coordinates and arguments in their columns, and the results replace the tile once
    /// all are computed (an argument may be the tile itself).
    fn frag_map(
        &mut self,
        dst: CTile,
        (row, col): (u32, u32),
        args: &[(u32, CTile)],
        value: super::super::node::NodeId,
        first: usize,
        vals: &[Raw],
    ) -> Result<(), InterpError> {
        let w = first / W;
        let at = self.tile_at(dst, vals[0], w)?;
        self.acc_touched(dst, at, first)?;
        let mut arg_at = Vec::with_capacity(args.len());
        for (i, &(c, t)) in args.iter().enumerate() {
            let a = self.tile_at(t, vals[1 + i], w)?;
            self.acc_touched(t, a, first)?;
            let rows = self.p.frags[t.slot as usize].role() == crate::fragment::FragRole::Rows;
            arg_at.push((c as usize, t.slot as usize, a, rows));
        }
        let (rows, cols) = self.p.frags[dst.slot as usize].dims();
        let (len, cols) = (rows as usize * cols as usize, cols as usize);
        let mut out = vec![0; len];
        let mut lanes = self.take_list();
        for base in (0..len).step_by(W) {
            lanes.clear();
            for l in 0..W.min(len - base) {
                let (e, lane) = (base + l, first + l);
                let (i, j) = (e / cols, e % cols);
                self.cols[row as usize * self.lanes + lane] = i as Raw;
                self.cols[col as usize * self.lanes + lane] = j as Raw;
                for &(c, slot, a, by_row) in &arg_at {
                    self.cols[c * self.lanes + lane] =
                        self.frags[slot][a + if by_row { i } else { e }];
                }
                lanes.push(lane as u32);
            }
            self.eval(value, &lanes)?;
            let s = self.src(value, None)?;
            for (l, o) in out[base..].iter_mut().take(lanes.len()).enumerate() {
                *o = s.get(&self.cols, first + l);
            }
        }
        self.pool.push(lanes);
        self.frags[dst.slot as usize][at..at + len].copy_from_slice(&out);
        Ok(())
    }

    /// Moves one tile between fragment storage (at `at`) and memory; element `e` is
    /// charged to lane `first + e % group` (the warp's or warpgroup's threads).
    #[allow(clippy::too_many_arguments)]
    fn frag_mem(
        &mut self,
        t: CTile,
        at: usize,
        mem: CMem,
        origin: Raw,
        first: usize,
        group: usize,
        op: MemOp,
    ) -> Result<(), InterpError> {
        let f = &self.p.frags[t.slot as usize];
        let origin = index(origin, mem.signed);
        let buf = mem.buf as usize;
        for (e, off) in element_offsets(f, mem.stride).into_iter().enumerate() {
            let i = origin + off;
            let lane = first + e % group;
            let r = match op {
                MemOp::Read => self.mem.load(buf, i, lane).map(|v| {
                    self.frags[t.slot as usize][at + e] = v;
                }),
                MemOp::Write => {
                    let v = self.frags[t.slot as usize][at + e];
                    self.mem.store(buf, i, lane, v)
                }
            };
            if let Err(fault) = r {
                return Err(self.fault(fault, buf, i, 1, op, lane as u32));
            }
        }
        Ok(())
    }
}

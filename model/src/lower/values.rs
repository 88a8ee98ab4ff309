//! The value of a graph tensor at te indices: a load of its buffer where it is stored,
//! the node's expression where the group computes it inline (prologues, epilogues), or
//! whatever the anchor gives for its own output (an accumulator, a GEMM result).
//!
//! This is how a group becomes one kernel: its stored output is one te `compute` whose
//! body is the value of that tensor, every inlined node substituted into it.
//!
//! Values are always in logical indices (the graph's shapes) and always f32: a stored
//! tensor's buffer is in its storage type and memory order (`Tensor::dtype`,
//! `Tensor::layout`), and reading it permutes the indices into memory order and widens
//! an f16 element to f32 ([`Stored`]). Every group — injective, reduction, anchor —
//! reads through here, so every one reads NHWC and f16 right; the stored output is
//! written back in its own order and type by `lower_group`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use weft_graph::op::{Binary, Unary};
use weft_graph::passes::memory_order;
use weft_graph::{Graph, NodeId, Op, TensorId};
use weft_ir::prelude::*;

/// A stored tensor's buffer and the order of its dimensions in memory: what reading it
/// at logical indices needs (and nothing that borrows the group, so that an anchor's
/// result closure can keep it).
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    buffer: Buffer,
    /// `order[d]`: the logical dimension stored `d`-th.
    order: Vec<usize>,
}

impl Stored {
    /// The element at logical `idx`, in the buffer's own type.
    pub(crate) fn load(&self, idx: &[Expr]) -> Expr {
        self.buffer.at(&in_memory_order(&self.order, idx))
    }

    /// The element at logical `idx`, in f32 (all arithmetic is f32).
    pub(crate) fn at(&self, idx: &[Expr]) -> Expr {
        convert(self.load(idx), DType::F32)
    }
}

/// Logical indices in memory order.
pub(crate) fn in_memory_order<T: Clone>(order: &[usize], idx: &[T]) -> Vec<T> {
    order.iter().map(|&d| idx[d].clone()).collect()
}

/// Indices in memory order back in logical order.
pub(crate) fn in_logical_order<T: Clone>(order: &[usize], idx: &[T]) -> Vec<T> {
    let mut out = idx.to_vec();
    for (p, &d) in order.iter().enumerate() {
        out[d] = idx[p].clone();
    }
    out
}

/// `e` as a value of `dtype`: a cast, unless it already is one (a widened f16 load asked
/// for in f16 is the load itself, not a round trip through f32).
pub(crate) fn convert(e: Expr, dtype: DType) -> Expr {
    if e.dtype() == dtype {
        return e;
    }
    if let Expr::Cast(_, inner) = &e
        && inner.dtype() == dtype
    {
        return (**inner).clone();
    }
    e.cast(dtype)
}

/// The anchor's own output, given at indices by the anchor's lowering.
pub(crate) type Root<'a> = Box<dyn Fn(&[Expr]) -> Expr + 'a>;

/// The root's output where computing it reads other tensors' values (a row
/// normalization reading its input through the group's prologue).
pub(crate) type RootReading<'a> = Box<dyn Fn(&Values<'a>, &[Expr]) -> Expr + 'a>;

/// What a group's expressions are built in.
pub(crate) struct Values<'g> {
    g: &'g Graph,
    /// Nodes computed inline, by the tensor they give.
    inline: HashMap<TensorId, NodeId>,
    /// The anchor's output, where the group has one (set once the anchor's buffers are).
    root: RefCell<Option<(TensorId, RootReading<'g>)>>,
    /// Buffers of stored tensors read so far, in order of first read.
    buffers: RefCell<Vec<(TensorId, Buffer)>>,
    /// Names already taken by buffers of this group.
    names: RefCell<HashSet<String>>,
}

impl<'g> Values<'g> {
    /// Values where the `inline` nodes are computed in place.
    pub(crate) fn new(g: &'g Graph, inline: impl IntoIterator<Item = NodeId>) -> Values<'g> {
        Values {
            g,
            inline: inline
                .into_iter()
                .map(|n| (g.nodes[n.0].output, n))
                .collect(),
            root: RefCell::new(None),
            buffers: RefCell::new(Vec::new()),
            names: RefCell::new(HashSet::new()),
        }
    }

    /// From now on `t`'s value is given by `f` (the anchor's result).
    pub(crate) fn set_root(&self, t: TensorId, f: Root<'g>) {
        *self.root.borrow_mut() = Some((t, Box::new(move |_, ix| f(ix))));
    }

    /// From now on `t`'s value is given by `f`, which may read other values.
    pub(crate) fn set_root_reading(&self, t: TensorId, f: RootReading<'g>) {
        *self.root.borrow_mut() = Some((t, f));
    }

    /// The buffers read, with the tensors they hold, in order of first read.
    pub(crate) fn buffers(&self) -> Vec<(TensorId, Buffer)> {
        self.buffers.borrow().clone()
    }

    /// Registers `buffer` (made by a template) as holding tensor `t`: only for a tensor
    /// stored row-major in the buffer's type (the templates that make their own buffers
    /// read f32 NCHW).
    pub(crate) fn adopt(&self, t: TensorId, buffer: &Buffer) {
        self.names.borrow_mut().insert(buffer.name().to_string());
        self.buffers.borrow_mut().push((t, buffer.clone()));
    }

    /// The buffer that holds stored tensor `t` in the kernel: its storage type, its
    /// dimensions in memory order.
    pub(crate) fn buffer(&self, t: TensorId) -> Buffer {
        if let Some((_, b)) = self.buffers.borrow().iter().find(|(x, _)| *x == t) {
            return b.clone();
        }
        let tensor = self.g.tensor(t);
        let name = self.fresh_name(&tensor.name);
        let order = memory_order(tensor.layout, tensor.shape.len());
        let shape: Vec<i64> = in_memory_order(&order, &tensor.shape)
            .into_iter()
            .map(|d| d as i64)
            .collect();
        let b = te::placeholder(&name, &shape, tensor.dtype);
        self.buffers.borrow_mut().push((t, b.clone()));
        b
    }

    /// Stored tensor `t`'s buffer, read at logical indices.
    pub(crate) fn stored(&self, t: TensorId) -> Stored {
        let tensor = self.g.tensor(t);
        Stored {
            buffer: self.buffer(t),
            order: memory_order(tensor.layout, tensor.shape.len()),
        }
    }

    /// The stored tensor whose memory holds `t` element for element in row-major order,
    /// if there is one: `t` itself where it is stored row-major, or the stored tensor
    /// under a chain of reshapes (flattens, identities) the group computes inline, which
    /// move no element. A product can then read that memory as a plain `[rows, cols]`
    /// matrix (a transformer's `[b, s, k]` activation as `[b·s, k]`).
    pub(crate) fn stored_rows(&self, t: TensorId) -> Option<TensorId> {
        if self.root.borrow().as_ref().is_some_and(|(r, _)| *r == t) {
            return None;
        }
        match self.inline.get(&t) {
            Some(&n) => match self.g.nodes[n.0].op {
                Op::Reshape { .. } | Op::Flatten { .. } | Op::Identity => {
                    let input = self.g.nodes[n.0].inputs[0];
                    (self.g.tensor(input).dtype == self.g.tensor(t).dtype)
                        .then(|| self.stored_rows(input))
                        .flatten()
                }
                _ => None,
            },
            None => {
                let tensor = self.g.tensor(t);
                let order = memory_order(tensor.layout, tensor.shape.len());
                order.iter().enumerate().all(|(i, &d)| i == d).then_some(t)
            }
        }
    }

    /// A C/WGSL/MSL identifier from a tensor name, unique in the group.
    pub(crate) fn fresh_name(&self, name: &str) -> String {
        let mut base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        base.truncate(40);
        let base = format!("t_{}", base.trim_matches('_'));
        let mut names = self.names.borrow_mut();
        let mut unique = base.clone();
        let mut n = 1;
        while names.contains(&unique) {
            unique = format!("{base}_{n}");
            n += 1;
        }
        names.insert(unique.clone());
        unique
    }

    /// The value of tensor `t` at `idx` (one index per dimension of its shape).
    pub(crate) fn at(&self, t: TensorId, idx: &[Expr]) -> Expr {
        if let Some((r, f)) = &*self.root.borrow()
            && *r == t
        {
            return f(self, idx);
        }
        match self.inline.get(&t) {
            Some(&n) => self.node(n, idx),
            None => self.stored(t).at(idx),
        }
    }

    /// The value of tensor `t` at `idx` in `dtype`: an f16 tensor's element as it is
    /// stored where `dtype` is f16 (what the fp16 matmul template's operands read).
    pub(crate) fn at_as(&self, t: TensorId, idx: &[Expr], dtype: DType) -> Expr {
        convert(self.at(t, idx), dtype)
    }

    /// The value of node `n`'s output at `idx`: its op on its inputs' values.
    fn node(&self, n: NodeId, idx: &[Expr]) -> Expr {
        let node = &self.g.nodes[n.0];
        let out_shape = &self.g.tensor(node.output).shape;
        let input = |i: usize, at: &[Expr]| self.at(node.inputs[i], at);
        let bcast = |i: usize| broadcast_index(&self.g.tensor(node.inputs[i]).shape, idx);
        match &node.op {
            Op::Unary(u) => {
                let half = self.g.tensor(node.output).dtype == DType::F16;
                unary(*u, input(0, idx), half)
            }
            Op::Binary(Binary::Pow) => {
                // A constant scalar exponent (GELU's x³) is known here.
                let exponent = self
                    .g
                    .tensor(node.inputs[1])
                    .data
                    .as_ref()
                    .and_then(|d| (d.len() == 1).then(|| d.iter().next().copied()).flatten());
                pow(input(0, &bcast(0)), input(1, &bcast(1)), exponent)
            }
            Op::Binary(b) => binary(*b, input(0, &bcast(0)), input(1, &bcast(1))),
            Op::Clip { min, max } => {
                te::minimum(te::maximum(input(0, idx), *min as f32), *max as f32)
            }
            Op::Identity => input(0, idx),
            Op::BatchNorm { epsilon } => {
                let c = [idx[1].clone()];
                let (scale, bias, mean, var) =
                    (input(1, &c), input(2, &c), input(3, &c), input(4, &c));
                (input(0, idx) - mean) * scale * te::rsqrt(var + *epsilon as f32) + bias
            }
            Op::Flatten { .. } | Op::Reshape { .. } => {
                let in_shape = &self.g.tensor(node.inputs[0]).shape;
                input(0, &reindex(out_shape, in_shape, idx))
            }
            Op::Concat { axis } => {
                // The inputs in order along `axis`: the last one is the fallback.
                let mut ends = Vec::new();
                let mut end = 0;
                for &t in &node.inputs {
                    end += self.g.tensor(t).shape[*axis];
                    ends.push(end);
                }
                let mut value: Option<Expr> = None;
                for i in (0..node.inputs.len()).rev() {
                    let start = if i == 0 { 0 } else { ends[i - 1] };
                    let mut at = idx.to_vec();
                    at[*axis] = idx[*axis].clone() - start as i64;
                    let v = input(i, &at);
                    value = Some(match value {
                        None => v,
                        Some(rest) => {
                            te::if_then_else(idx[*axis].clone().lt(ends[i] as i64), v, rest)
                        }
                    });
                }
                // Inference refuses a Concat of no inputs.
                value.expect("a Concat has inputs")
            }
            Op::Transpose { perm } => {
                let mut at = vec![Expr::int(0); idx.len()];
                for (d, &p) in perm.iter().enumerate() {
                    at[p] = idx[d].clone();
                }
                input(0, &at)
            }
            Op::Slice { starts, steps, .. } => {
                let at: Vec<Expr> = idx
                    .iter()
                    .enumerate()
                    .map(|(d, i)| match (starts[d] as i64, steps[d]) {
                        (0, 1) => i.clone(),
                        (s, 1) => i.clone() + s,
                        (s, k) => i.clone() * k + s,
                    })
                    .collect();
                input(0, &at)
            }
            Op::Expand { .. } => input(0, &bcast(0)),
            Op::Where => te::if_then_else(
                input(0, &bcast(0)).ne_(0.0f32),
                input(1, &bcast(1)),
                input(2, &bcast(2)),
            ),
            Op::IsNaN => {
                let x = input(0, idx);
                truth(x.clone().ne_(x))
            }
            Op::Cast { to } => cast(input(0, idx), *to),
            Op::Gather { axis } => {
                let data = &self.g.tensor(node.inputs[0]).shape;
                let q = self.g.tensor(node.inputs[1]).shape.len();
                let i = self.index(node.inputs[1], &idx[*axis..*axis + q], data[*axis]);
                let mut at = idx[..*axis].to_vec();
                at.push(i);
                at.extend_from_slice(&idx[*axis + q..]);
                input(0, &at)
            }
            Op::GatherElements { axis } => {
                let n = self.g.tensor(node.inputs[0]).shape[*axis];
                let mut at = idx.to_vec();
                at[*axis] = self.index(node.inputs[1], idx, n);
                input(0, &at)
            }
            Op::GatherNd => {
                let data = &self.g.tensor(node.inputs[0]).shape;
                let r = self.g.tensor(node.inputs[1]).shape.len();
                let q = self.g.tensor(node.inputs[1]).shape[r - 1];
                let mut at: Vec<Expr> = (0..q)
                    .map(|j| {
                        let mut ii = idx[..r - 1].to_vec();
                        ii.push(Expr::int(j as i64));
                        self.index(node.inputs[1], &ii, data[j])
                    })
                    .collect();
                at.extend_from_slice(&idx[r - 1..]);
                input(0, &at)
            }
            // The partition inlines only injective nodes; the anchor's own output comes
            // from `root`.
            other => unreachable!("{} is not computed inline", other.name()),
        }
    }
}

impl Values<'_> {
    /// The integer in index tensor `t` at `idx`, as an index into a dimension of `n`:
    /// negative ones counted from the end, then clamped into `[0, n)`, so that a bad
    /// index reads the nearest row (as the reference does) and the prover sees every
    /// gather in bounds.
    fn index(&self, t: TensorId, idx: &[Expr], n: usize) -> Expr {
        let n = n as i64;
        let v = self.at(t, idx).cast(DType::I32);
        let v = te::if_then_else(v.clone().lt(0), v.clone() + n, v);
        v.max(0).min(n - 1)
    }
}

/// A condition as a value: 1 or 0 (bools are f32 numbers inside a kernel).
fn truth(c: Expr) -> Expr {
    te::if_then_else(c, Expr::f32(1.0), Expr::f32(0.0))
}

/// `x` (an f32 value) converted to `to`, as an f32 value again: integers toward zero,
/// bools as 1 or 0, f16 rounded.
fn cast(x: Expr, to: DType) -> Expr {
    match to {
        DType::F32 => x,
        DType::F16 => x.cast(DType::F16).cast(DType::F32),
        DType::I32 | DType::U32 => {
            te::if_then_else(x.clone().lt(0.0f32), te::ceil(x.clone()), te::floor(x))
        }
        DType::Bool => truth(x.ne_(0.0f32)),
    }
}

/// The index into an input of shape `shape` that NumPy broadcasting reads for output
/// index `idx`: aligned at the right, a dimension of 1 read at 0.
pub(crate) fn broadcast_index(shape: &[usize], idx: &[Expr]) -> Vec<Expr> {
    let pad = idx.len() - shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(d, &s)| {
            if s == 1 {
                Expr::int(0)
            } else {
                idx[pad + d].clone()
            }
        })
        .collect()
}

/// The index into `to` (a shape of as many elements) of the element at `idx` in `from`,
/// both row-major: a reshape's index map.
///
/// The two shapes are cut into the shortest runs of dimensions with equal products
/// (`[1, 7, 32]` and `[1, 7, 2, 16]`: `[1] [7] [32 | 2, 16]`); each run maps on its own,
/// so a split dimension is a sum of strided indices and only a merge divides. That keeps
/// a reshape after an anchor an epilogue post-scheduling fusion can invert.
pub(crate) fn reindex(from: &[usize], to: &[usize], idx: &[Expr]) -> Vec<Expr> {
    if from == to {
        return idx.to_vec();
    }
    let mut out = Vec::with_capacity(to.len());
    let (mut i, mut j) = (0, 0);
    while i < from.len() || j < to.len() {
        // The next run: a dimension of each side, then more of whichever side has the
        // smaller product until the two match.
        let (i0, j0) = (i, j);
        let (mut pf, mut pt) = (1usize, 1usize);
        if i < from.len() {
            pf *= from[i];
            i += 1;
        }
        if j < to.len() {
            pt *= to[j];
            j += 1;
        }
        while pf != pt {
            if pf < pt && i < from.len() {
                pf *= from[i];
                i += 1;
            } else if pt < pf && j < to.len() {
                pt *= to[j];
                j += 1;
            } else {
                break;
            }
        }
        if pf != pt {
            // Unreachable for shapes of equal element counts; the flat map is always right.
            return reindex_flat(from, to, idx);
        }
        let mut flat = Expr::int(0);
        for (e, &d) in idx[i0..i].iter().zip(&from[i0..i]) {
            flat = if d == 1 {
                flat
            } else {
                flat * d as i64 + e.clone()
            };
        }
        let mut stride: i64 = pt as i64;
        for (k, &d) in to[j0..j].iter().enumerate() {
            stride /= d.max(1) as i64;
            if d == 1 {
                out.push(Expr::int(0));
                continue;
            }
            let q = if stride == 1 {
                flat.clone()
            } else {
                flat.clone() / stride
            };
            // The run's first dimension needs no modulo: the flat index is below pt.
            let first = to[j0..j0 + k].iter().all(|&x| x == 1);
            out.push(if first { q } else { q % d as i64 });
        }
    }
    out
}

/// `reindex` through one flat index over the whole shape.
fn reindex_flat(from: &[usize], to: &[usize], idx: &[Expr]) -> Vec<Expr> {
    let mut flat = Expr::int(0);
    for (i, &d) in idx.iter().zip(from) {
        flat = flat * d as i64 + i.clone();
    }
    let mut out = Vec::with_capacity(to.len());
    let mut stride: i64 = to.iter().product::<usize>() as i64;
    for (k, &d) in to.iter().enumerate() {
        stride /= d.max(1) as i64;
        let q = if stride == 1 {
            flat.clone()
        } else {
            flat.clone() / stride
        };
        out.push(if k == 0 { q } else { q % d as i64 });
    }
    out
}

/// An elementwise function of one value, in f32. `half`: the result is an f16 tensor, so
/// tanh may be approximated within binary16's precision ([`te::tanh_approx`]: on the H100
/// GPT-2's c_fc with its tanh-GELU epilogue went from 61.8 to 47.9 µs,
/// `docs/wgmma-epilogue.md`).
pub(crate) fn unary(u: Unary, x: Expr, half: bool) -> Expr {
    let f = |v: f64| v as f32;
    let tanh = |x: Expr| {
        if half {
            te::tanh_approx(x)
        } else {
            te::tanh(x)
        }
    };
    match u {
        Unary::Relu => te::maximum(x, 0.0f32),
        Unary::Sigmoid => te::sigmoid(x),
        Unary::Tanh => tanh(x),
        Unary::Exp => te::exp(x),
        Unary::Log => te::log(x),
        Unary::Sqrt => te::sqrt(x),
        Unary::Abs => te::abs(x),
        Unary::Neg => Expr::f32(0.0) - x,
        Unary::Reciprocal => Expr::f32(1.0) / x,
        Unary::Floor => te::floor(x),
        Unary::Ceil => te::ceil(x),
        Unary::Sin => te::sin(x),
        Unary::Cos => te::cos(x),
        Unary::Erf => erf(x),
        Unary::Softplus => {
            // ln(1 + e^x), and x itself where e^x would overflow f32.
            te::if_then_else(
                x.clone().gt(20.0f32),
                x.clone(),
                te::log(te::exp(x) + 1.0f32),
            )
        }
        Unary::HardSigmoid { alpha, beta } => {
            te::minimum(te::maximum(x * f(alpha) + f(beta), 0.0f32), 1.0f32)
        }
        Unary::HardSwish => {
            x.clone() * te::minimum(te::maximum(x / 6.0f32 + 0.5f32, 0.0f32), 1.0f32)
        }
        Unary::LeakyRelu { alpha } => {
            te::if_then_else(x.clone().ge(0.0f32), x.clone(), x * f(alpha))
        }
        Unary::Elu { alpha } => te::if_then_else(
            x.clone().ge(0.0f32),
            x.clone(),
            (te::exp(x) - 1.0f32) * f(alpha),
        ),
        Unary::Selu { alpha, gamma } => te::if_then_else(
            x.clone().gt(0.0f32),
            x.clone() * f(gamma),
            (te::exp(x) - 1.0f32) * f(alpha * gamma),
        ),
        Unary::Celu { alpha } => {
            te::maximum(x.clone(), 0.0f32)
                + te::minimum((te::exp(x / f(alpha)) - 1.0f32) * f(alpha), 0.0f32)
        }
        Unary::ThresholdedRelu { alpha } => {
            te::if_then_else(x.clone().gt(f(alpha)), x, Expr::f32(0.0))
        }
        Unary::Softsign => x.clone() / (te::abs(x) + 1.0f32),
        Unary::Sign => te::if_then_else(
            x.clone().gt(0.0f32),
            Expr::f32(1.0),
            te::if_then_else(x.lt(0.0f32), Expr::f32(-1.0), Expr::f32(0.0)),
        ),
        Unary::Round => {
            // Halves to even: floor(x + 0.5), less one where x + 0.5 was an odd integer
            // reached from a half.
            let r = te::floor(x.clone() + 0.5f32);
            let half = (r.clone() - x).eq_(0.5f32);
            let odd = (r.clone() - te::floor(r.clone() / 2.0f32) * 2.0f32).eq_(1.0f32);
            te::if_then_else(half.and(odd), r.clone() - 1.0f32, r)
        }
        Unary::Tan => te::sin(x.clone()) / te::cos(x),
        Unary::Sinh => (te::exp(x.clone()) - te::exp(-x)) * 0.5f32,
        Unary::Cosh => (te::exp(x.clone()) + te::exp(-x)) * 0.5f32,
        Unary::Asinh => te::log(x.clone() + te::sqrt(x.clone() * x + 1.0f32)),
        Unary::Acosh => te::log(x.clone() + te::sqrt(x.clone() * x - 1.0f32)),
        Unary::Atanh => te::log((x.clone() + 1.0f32) / (Expr::f32(1.0) - x)) * 0.5f32,
        Unary::Atan => atan(x),
        Unary::Asin => atan(x.clone() / te::sqrt(Expr::f32(1.0) - x.clone() * x)),
        Unary::Acos => {
            Expr::f32(std::f32::consts::FRAC_PI_2)
                - atan(x.clone() / te::sqrt(Expr::f32(1.0) - x.clone() * x))
        }
        Unary::Mish => x.clone() * tanh(unary(Unary::Softplus, x, half)),
        Unary::Gelu { tanh: false } => {
            x.clone() * (erf(x * std::f32::consts::FRAC_1_SQRT_2) + 1.0f32) * 0.5f32
        }
        Unary::Gelu { tanh: true } => {
            // Kept as tanh: the identity x·sigmoid(2u) = x / (1 + 2^(−2u·log2 e)) made
            // GPT-2's c_fc (this epilogue on 4096 × 3072 elements) 59.6 → 92 µs on the
            // H100 (`h100-2026-11-26f/gelu.txt`): the division costs more there than tanh.
            let inner =
                (x.clone() + x.clone() * x.clone() * x.clone() * 0.044_715f32) * 0.797_884_6f32;
            x * (tanh(inner) + 1.0f32) * 0.5f32
        }
        Unary::Not => truth(x.eq_(0.0f32)),
    }
}

/// atan in f32: reduced to [0, 1] by atan(x) = π/2 − atan(1/x); there a first guess
/// (π/4·t − t(t − 1)(0.2447 + 0.0663t), within 1.5e-3) refined by two Newton steps on
/// tan(y) = t, which leave only f32's rounding.
fn atan(x: Expr) -> Expr {
    let a = te::abs(x.clone());
    let big = a.clone().gt(1.0f32);
    let t = te::if_then_else(big.clone(), Expr::f32(1.0) / a.clone(), a);
    let mut y = t.clone() * std::f32::consts::FRAC_PI_4
        - t.clone() * (t.clone() - 1.0f32) * (t.clone() * 0.0663f32 + 0.2447f32);
    for _ in 0..2 {
        // y ← y − (tan y − t)·cos² y = y − (sin y − t·cos y)·cos y.
        let (s, c) = (te::sin(y.clone()), te::cos(y.clone()));
        y = y - (s - t.clone() * c.clone()) * c;
    }
    let r = te::if_then_else(big, Expr::f32(std::f32::consts::FRAC_PI_2) - y.clone(), y);
    te::if_then_else(x.lt(0.0f32), -r.clone(), r)
}

/// erf in f32 (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7: the f32
/// rounding of values near 1).
fn erf(x: Expr) -> Expr {
    let a = te::abs(x.clone());
    let t = Expr::f32(1.0) / (a.clone() * 0.327_591_1f32 + 1.0f32);
    let poly = ((((t.clone() * 1.061_405_4f32 - 1.453_152_f32) * t.clone() + 1.421_413_7f32)
        * t.clone()
        - 0.284_496_74f32)
        * t.clone()
        + 0.254_829_6f32)
        * t;
    // exp(−a²) as 2^(−a²·log2 e): one `exp2` on GPUs.
    let y = Expr::f32(1.0) - poly * te::exp2(a.clone() * a * -std::f32::consts::LOG2_E);
    te::if_then_else(x.lt(0.0f32), Expr::f32(0.0) - y.clone(), y)
}

/// `x^y` as ONNX defines it on every target: WGSL's and MSL's `pow` are undefined for a
/// negative base (and CUDA's `powf` is not, so the targets would disagree). A constant
/// small integer exponent is a product (exact, and faster); otherwise `|x|^y`, negated
/// for an odd integer `y` where `x < 0`, NaN for a fractional one, and 1 where `y = 0`.
fn pow(x: Expr, y: Expr, constant: Option<f32>) -> Expr {
    if let Some(c) = constant
        && c.fract() == 0.0
        && (1.0..=4.0).contains(&c.abs())
    {
        let mut p = x.clone();
        for _ in 1..c.abs() as i32 {
            p = p * x.clone();
        }
        return if c < 0.0 { Expr::f32(1.0) / p } else { p };
    }
    if constant == Some(0.5) {
        return te::sqrt(x);
    }
    let magnitude = te::pow(te::abs(x.clone()), y.clone());
    let integer = te::floor(y.clone()).eq_(y.clone());
    let odd = (y.clone() - te::floor(y.clone() * 0.5f32) * 2.0f32).eq_(1.0f32);
    let negative = te::if_then_else(
        integer,
        te::if_then_else(odd, -magnitude.clone(), magnitude.clone()),
        Expr::f32(f32::NAN),
    );
    te::if_then_else(
        y.eq_(0.0f32),
        Expr::f32(1.0),
        te::if_then_else(x.lt(0.0f32), negative, magnitude),
    )
}

/// An elementwise function of two values, in f32.
pub(crate) fn binary(b: Binary, x: Expr, y: Expr) -> Expr {
    match b {
        Binary::Add => x + y,
        Binary::Sub => x - y,
        Binary::Mul => x * y,
        Binary::Div => x / y,
        Binary::Pow => pow(x, y, None),
        Binary::Max => te::maximum(x, y),
        Binary::Min => te::minimum(x, y),
        Binary::PRelu => te::if_then_else(x.clone().ge(0.0f32), x.clone(), x * y),
        Binary::Equal => truth(x.eq_(y)),
        Binary::Less => truth(x.lt(y)),
        Binary::LessOrEqual => truth(x.le(y)),
        Binary::Greater => truth(x.gt(y)),
        Binary::GreaterOrEqual => truth(x.ge(y)),
        Binary::And => truth(x.ne_(0.0f32).and(y.ne_(0.0f32))),
        Binary::Or => truth(x.ne_(0.0f32).or(y.ne_(0.0f32))),
        Binary::Xor => truth((truth(x.ne_(0.0f32)) + truth(y.ne_(0.0f32))).eq_(1.0f32)),
    }
}

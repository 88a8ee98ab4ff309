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
use std::collections::{BTreeMap, HashMap, HashSet};

use weft_graph::op::Inline;
pub(crate) use weft_graph::op::{broadcast_index, reindex};
use weft_graph::partition::Slice;
use weft_graph::passes::memory_order;
use weft_graph::{Graph, Node, NodeId, Op, Tensor, TensorId};
use weft_ir::prelude::*;

/// A stored tensor's buffer and the order of its dimensions in memory: what reading it
/// at logical indices needs (and nothing that borrows the group, so that an anchor's
/// result closure can keep it).
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    buffer: Buffer,
    /// `order[d]`: the logical dimension stored `d`-th.
    order: Vec<usize>,
    /// Where the tensor lies in a larger buffer (a Concat's): the logical axis and the
    /// offset along it.
    shift: Option<(usize, i64)>,
}

impl Stored {
    /// The element at logical `idx`, in the buffer's own type.
    pub(crate) fn load(&self, idx: &[Expr]) -> Expr {
        match self.shift {
            Some((axis, offset)) => {
                let mut at = idx.to_vec();
                at[axis] = at[axis].clone() + offset;
                self.buffer.at(&in_memory_order(&self.order, &at))
            }
            None => self.buffer.at(&in_memory_order(&self.order, idx)),
        }
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
    /// Tensors that live in another one's buffer, and where
    /// ([`weft_graph::partition::Partition::places`]).
    places: &'g BTreeMap<TensorId, Slice>,
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
    /// Values where the `inline` nodes are computed in place, and the tensors `places`
    /// holds read in the buffers it says.
    pub(crate) fn new(
        g: &'g Graph,
        places: &'g BTreeMap<TensorId, Slice>,
        inline: impl IntoIterator<Item = NodeId>,
    ) -> Values<'g> {
        Values {
            g,
            places,
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

    /// The buffers read, with the tensors they hold (a slice's: the tensor whose buffer
    /// it lies in), in order of first read.
    pub(crate) fn buffers(&self) -> Vec<(TensorId, Buffer)> {
        self.buffers.borrow().clone()
    }

    /// Registers `buffer` (made by a template) as holding tensor `t`: only for a tensor
    /// stored row-major in the buffer's type (the templates that make their own buffers
    /// read f32 NCHW) that starts its buffer ([`Values::leads`]).
    pub(crate) fn adopt(&self, t: TensorId, buffer: &Buffer) {
        self.names.borrow_mut().insert(buffer.name().to_string());
        self.buffers
            .borrow_mut()
            .push((self.home(t), buffer.clone()));
    }

    /// The tensor whose buffer holds `t`: itself, or the Concat it is a slice of.
    fn home(&self, t: TensorId) -> TensorId {
        self.places.get(&t).map_or(t, |s| s.buffer)
    }

    /// True where `t`'s elements are the first ones of the buffer that holds it, in its
    /// own memory order: `t` has a buffer of its own, or it is a slice starting the
    /// buffer where only dimensions of extent 1 are stored outside the Concat's axis
    /// (channels of a batch-1 NCHW tensor). A template may then read it as a buffer of
    /// its own shape; a strided slice it must read through [`Values::at`].
    pub(crate) fn leads(&self, t: TensorId) -> bool {
        let Some(s) = self.places.get(&t) else {
            return true;
        };
        let tensor = self.g.tensor(t);
        let order = memory_order(tensor.layout, tensor.shape.len());
        let mut outer = order.iter().take_while(|&&d| d != s.axis);
        s.offset == 0 && outer.all(|&d| tensor.shape[d] == 1)
    }

    /// The buffer that holds stored tensor `t` in the kernel (or the buffer it is a slice
    /// of): its storage type, its dimensions in memory order.
    pub(crate) fn buffer(&self, t: TensorId) -> Buffer {
        let t = self.home(t);
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

    /// Whether every run of stored tensor `t` along its innermost stored dimension starts
    /// `lanes`-aligned in the buffer that holds it (that dimension's extent, and a
    /// Concat's, a multiple of `lanes`; a slice along it starting at such a multiple):
    /// where a vector of `lanes` elements at an aligned index of that dimension is one
    /// aligned vector access.
    pub(crate) fn runs_aligned(&self, t: TensorId, lanes: i64) -> bool {
        let inner = |t: TensorId| {
            let tensor = self.g.tensor(t);
            let order = memory_order(tensor.layout, tensor.shape.len());
            order.last().map(|&d| (d, tensor.shape[d] as i64))
        };
        let Some((axis, extent)) = inner(t) else {
            return false;
        };
        if extent % lanes != 0 {
            return false;
        }
        match self.places.get(&t) {
            None => true,
            // Along any other axis a slice starts at a multiple of the innermost extent.
            Some(s) => {
                inner(s.buffer).is_some_and(|(_, whole)| whole % lanes == 0)
                    && (s.axis != axis || s.offset as i64 % lanes == 0)
            }
        }
    }

    /// Whether the group computes `t` at its reader's loads (a prologue node's output),
    /// rather than reading it stored.
    pub(crate) fn computes(&self, t: TensorId) -> bool {
        self.inline.contains_key(&t)
    }

    /// Stored tensor `t`'s buffer, read at logical indices.
    pub(crate) fn stored(&self, t: TensorId) -> Stored {
        let tensor = self.g.tensor(t);
        Stored {
            buffer: self.buffer(t),
            // A slice's buffer is stored in its type and layout (the partition places
            // only such), so its memory order is the slice's.
            order: memory_order(tensor.layout, tensor.shape.len()),
            shift: self.places.get(&t).map(|s| (s.axis, s.offset as i64)),
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
            Some(&n) => {
                let node = &self.g.nodes[n.0];
                // Reshapes and identities move no element; any other op does.
                let moves_none = matches!(node.op, Op::Reshape(_) | Op::Flatten(_) | Op::Identity);
                let input = node.inputs[0];
                (moves_none && self.g.tensor(input).dtype == self.g.tensor(t).dtype)
                    .then(|| self.stored_rows(input))
                    .flatten()
            }
            None => {
                let tensor = self.g.tensor(t);
                let order = memory_order(tensor.layout, tensor.shape.len());
                let row_major = order.iter().enumerate().all(|(i, &d)| i == d);
                (row_major && self.leads(t)).then_some(t)
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

    /// The value of node `n`'s output at `idx`: its op's expression
    /// ([`weft_graph::op::OpDef::inline`]) on its inputs' values.
    fn node(&self, n: NodeId, idx: &[Expr]) -> Expr {
        let node = &self.g.nodes[n.0];
        let inline = NodeValues { vals: self, node };
        // The partition inlines only injective nodes, whose ops all give an expression;
        // the anchor's own output comes from `root`.
        node.op
            .def()
            .inline(&inline, idx)
            .unwrap_or_else(|| unreachable!("{} is not computed inline", node.op.name()))
    }
}

/// One inlined node's inputs and output, as its op's expression reads them.
struct NodeValues<'v, 'g> {
    vals: &'v Values<'g>,
    node: &'g Node,
}

impl Inline for NodeValues<'_, '_> {
    fn input(&self, i: usize, idx: &[Expr]) -> Expr {
        self.vals.at(self.node.inputs[i], idx)
    }

    fn input_count(&self) -> usize {
        self.node.inputs.len()
    }

    fn input_tensor(&self, i: usize) -> &Tensor {
        self.vals.g.tensor(self.node.inputs[i])
    }

    fn output(&self) -> &Tensor {
        self.vals.g.tensor(self.node.output)
    }
}

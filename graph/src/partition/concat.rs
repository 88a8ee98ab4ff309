//! Concats written in place by their producers: which tensors live inside another
//! tensor's buffer, and which Concats therefore run no kernel.
//!
//! A Concat's output is one buffer; each input is a slice of it along the Concat's axis.
//! Where every input is stored by a kernel (a group's output), that kernel writes
//! straight into its slice and the Concat copies nothing. Every reader of an input then
//! reads it through its slice ([`Slice`]: the buffer, the axis, where it starts) — at
//! batch 1 along NCHW's channels a contiguous range, elsewhere a strided view.
//!
//! Concats that share inputs share one buffer where they are one chain. DenseNet's dense
//! block concatenates, before each layer, every feature map so far:
//! `cat₁ = [f₀]`, `cat₂ = [f₀, n₁]`, …, `catₗ = [f₀, n₁, …, nₗ₋₁]` — each one's inputs
//! a prefix of the next one's. Walked in graph order, `cat₂` finds `f₀` already the whole
//! of `cat₁`'s buffer, so `cat₁` moves into `cat₂` (its slice `[0, |f₀|)`), and so on:
//! the block ends with one buffer, its last Concat's, in which each layer's new channels
//! are written once and every earlier Concat is a view of a prefix. The quadratic copying
//! goes, and with it a kernel a layer.
//!
//! A Concat copies (today's kernel) where any input cannot be placed, and the partition
//! keeps why ([`Copied`], printed by `weft model graph`): a graph input or constant (no
//! kernel of this model stores it), a graph output (it keeps a buffer of its own), a
//! tensor stored in another type or layout than the Concat (the f16 pass's casts), an
//! input read twice, a tensor that lies already in a buffer whose other parts this Concat
//! does not read in the same order (two Concats that are not one chain), Concats along
//! different axes, or a kernel that would read the buffer it writes into (one binding
//! both read and written, which WebGPU refuses).

use std::collections::{BTreeMap, HashMap};

use super::{Group, Slice, update::in_place};
use crate::graph::{Graph, NodeId, TensorId};
use crate::op::Role;

/// A Concat that copies its inputs (a kernel of its own), and why it could not be a view.
#[derive(Clone, Debug, PartialEq)]
pub struct Copied {
    pub node: NodeId,
    pub why: String,
}

/// What [`place`] decided.
pub(super) struct Placed {
    /// Concats that run no kernel, in graph order.
    pub(super) views: Vec<NodeId>,
    /// Concats that copy, with why.
    pub(super) copies: Vec<Copied>,
    /// Every tensor that lives inside another one's buffer, by where (the buffer is
    /// always a tensor placed nowhere: slices of slices are resolved).
    pub(super) places: BTreeMap<TensorId, Slice>,
}

/// Places the inputs of `g`'s Concats in their buffers, Concat by Concat in graph order,
/// over `groups` (each with its inputs known). A Concat either places all its inputs or
/// none.
pub(super) fn place(g: &Graph, groups: &[Group]) -> Placed {
    let producer: HashMap<TensorId, usize> = groups
        .iter()
        .enumerate()
        .map(|(i, gr)| (gr.output, i))
        .collect();
    let mut placed = Placed {
        views: Vec::new(),
        copies: Vec::new(),
        places: BTreeMap::new(),
    };
    for (i, n) in g.nodes.iter().enumerate() {
        let Role::Join { axis } = n.op.role() else {
            continue;
        };
        let node = NodeId(i);
        let cx = Concat {
            g,
            groups,
            producer: &producer,
            views: &placed.views,
            node,
            axis,
        };
        match cx.place(&placed.places) {
            Ok(next) => {
                placed.places = next;
                placed.views.push(node);
            }
            Err(why) => placed.copies.push(Copied { node, why }),
        }
    }
    placed
}

/// One Concat being placed, with what placing it reads.
struct Concat<'a> {
    g: &'a Graph,
    groups: &'a [Group],
    producer: &'a HashMap<TensorId, usize>,
    /// The Concats placed so far: their kernels go.
    views: &'a [NodeId],
    node: NodeId,
    axis: usize,
}

impl Concat<'_> {
    fn name(&self, t: TensorId) -> String {
        format!("%{}", self.g.tensor(t).name)
    }

    /// `t`'s extent along the Concat's axis.
    fn extent(&self, t: TensorId) -> usize {
        self.g.tensor(t).shape[self.axis]
    }

    /// The places with this Concat's added, or why it must copy.
    fn place(
        &self,
        places: &BTreeMap<TensorId, Slice>,
    ) -> Result<BTreeMap<TensorId, Slice>, String> {
        let g = self.g;
        let n = &g.nodes[self.node.0];
        let out = n.output;
        for (k, &t) in n.inputs.iter().enumerate() {
            if n.inputs[..k].contains(&t) {
                return Err(format!("it reads {} twice", self.name(t)));
            }
            let (a, b) = (g.tensor(t), g.tensor(out));
            if (a.dtype, a.layout) != (b.dtype, b.layout) {
                return Err(format!(
                    "{} is stored as {} {:?}, the Concat as {} {:?}",
                    self.name(t),
                    a.dtype,
                    a.layout,
                    b.dtype,
                    b.layout
                ));
            }
        }
        let mut next = places.clone();
        if let Some(start) = self.within_one(places) {
            // Every input lies in one buffer already, in order: the Concat is a view of it.
            if g.outputs.contains(&out) {
                return Err(format!(
                    "its inputs lie in {} and it is a graph output",
                    self.name(start.buffer)
                ));
            }
            next.insert(out, start);
            return Ok(next);
        }
        let mut offset = 0;
        let mut k = 0;
        while k < n.inputs.len() {
            let t = n.inputs[k];
            // A buffer moving whole into this one: a tensor already holding others (an
            // earlier Concat of the chain), or the run of inputs that covers one.
            let (buffer, run) = match places.get(&t) {
                Some(s) => (Some(s.buffer), self.run(places, k, s.buffer)?),
                None if places.values().any(|s| s.buffer == t) => (Some(t), 1),
                None => (None, 1),
            };
            match buffer {
                Some(b) => {
                    self.movable(places, b)?;
                    for s in next.values_mut().filter(|s| s.buffer == b) {
                        s.buffer = out;
                        s.offset += offset;
                    }
                    next.insert(
                        b,
                        Slice {
                            buffer: out,
                            axis: self.axis,
                            offset,
                        },
                    );
                    offset += self.extent(b);
                }
                None => {
                    self.writable(t)?;
                    next.insert(
                        t,
                        Slice {
                            buffer: out,
                            axis: self.axis,
                            offset,
                        },
                    );
                    offset += self.extent(t);
                }
            }
            k += run;
        }
        self.no_kernel_reads_what_it_writes(&next, out)?;
        Ok(next)
    }

    /// Where the Concat starts, if every input lies in one buffer, one after another
    /// along the Concat's axis.
    fn within_one(&self, places: &BTreeMap<TensorId, Slice>) -> Option<Slice> {
        let inputs = &self.g.nodes[self.node.0].inputs;
        let first = *places.get(inputs.first()?)?;
        let mut end = first.offset;
        for &t in inputs {
            let s = places.get(&t)?;
            if s.buffer != first.buffer || s.axis != self.axis || s.offset != end {
                return None;
            }
            end += self.extent(t);
        }
        Some(Slice {
            axis: self.axis,
            ..first
        })
    }

    /// How many inputs from the `k`-th on cover buffer `b` whole, from its start, in
    /// order; an error where they do not.
    fn run(&self, places: &BTreeMap<TensorId, Slice>, k: usize, b: TensorId) -> Result<usize, String> {
        let inputs = &self.g.nodes[self.node.0].inputs;
        let mut end = 0;
        let mut count = 0;
        for &t in &inputs[k..] {
            match places.get(&t) {
                Some(s) if s.buffer == b && s.offset == end && s.axis == self.axis => {
                    end += self.extent(t);
                    count += 1;
                }
                Some(_) | None => break,
            }
        }
        if count == 0 || end != self.extent(b) {
            return Err(format!(
                "{} lies in {}, whose parts it does not read whole and in order (Concats that are not one chain)",
                self.name(inputs[k]),
                self.name(b)
            ));
        }
        Ok(count)
    }

    /// Whether buffer `b` (a tensor holding others) may become a slice of this Concat.
    fn movable(&self, places: &BTreeMap<TensorId, Slice>, b: TensorId) -> Result<(), String> {
        if self.g.outputs.contains(&b) {
            return Err(format!(
                "{} is a graph output (it keeps a buffer of its own)",
                self.name(b)
            ));
        }
        let axis = places.values().find(|s| s.buffer == b).map(|s| s.axis);
        if axis.is_some_and(|a| a != self.axis) {
            return Err(format!(
                "{} joins its parts along another axis",
                self.name(b)
            ));
        }
        Ok(())
    }

    /// Whether the kernel that stores `t` can store it into a slice instead.
    fn writable(&self, t: TensorId) -> Result<(), String> {
        let g = self.g;
        if g.outputs.contains(&t) {
            return Err(format!(
                "{} is a graph output (it keeps a buffer of its own)",
                self.name(t)
            ));
        }
        if g.inputs.contains(&t) {
            return Err(format!("{} is a graph input", self.name(t)));
        }
        if g.tensor(t).is_constant() {
            return Err(format!("{} is a constant", self.name(t)));
        }
        let Some(&gi) = self.producer.get(&t) else {
            return Err(format!("no kernel stores {}", self.name(t)));
        };
        if in_place(g, self.groups[gi].root) {
            return Err(format!(
                "{} is a cache updated in place",
                self.name(t)
            ));
        }
        Ok(())
    }

    /// An error where a kernel writing into `out`'s buffer also reads from it.
    fn no_kernel_reads_what_it_writes(
        &self,
        places: &BTreeMap<TensorId, Slice>,
        out: TensorId,
    ) -> Result<(), String> {
        let root = |t: TensorId| places.get(&t).map_or(t, |s| s.buffer);
        for gr in self.groups.iter().filter(|gr| !self.views.contains(&gr.root)) {
            let writes_here = places.get(&gr.output).is_some_and(|s| s.buffer == out);
            if !writes_here {
                continue;
            }
            if let Some(&t) = gr.inputs.iter().find(|&&t| root(t) == out) {
                return Err(format!(
                    "the kernel storing {} reads {} from the same buffer",
                    self.name(gr.output),
                    self.name(t)
                ));
            }
        }
        Ok(())
    }
}

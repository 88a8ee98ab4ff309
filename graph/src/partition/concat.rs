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
use crate::graph::{Graph, NodeId, TensorId, type_text};
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
                    "{} is stored as {}, the Concat as {}",
                    self.name(t),
                    type_text(a),
                    type_text(b)
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
    fn run(
        &self,
        places: &BTreeMap<TensorId, Slice>,
        k: usize,
        b: TensorId,
    ) -> Result<usize, String> {
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
            return Err(format!("{} is a cache updated in place", self.name(t)));
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
        for gr in self
            .groups
            .iter()
            .filter(|gr| !self.views.contains(&gr.root))
        {
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

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};
    use weft_ir::dtype::DType;

    use std::collections::HashSet;

    use super::super::{Partition, Pricing, partition, partition_keeping};
    use crate::builder::GraphBuilder;
    use crate::graph::{Graph, TensorId};
    use crate::op::{Conv, PoolKind};
    use crate::tensor::Layout;

    fn weight(b: &mut GraphBuilder, name: &str, shape: &[usize]) -> TensorId {
        b.weight(name, ArrayD::from_elem(IxDyn(shape), 0.1))
    }

    /// A dense block as torchvision exports it: before each of `layers` layers, the
    /// Concat of every feature map so far (the first of one input), then (`bottleneck`)
    /// a 1x1 convolution of it and a 3x3 convolution making `growth` new channels; the
    /// block ends in the Concat of all.
    fn dense_block(layers: usize, batch: usize, bottleneck: bool) -> Graph {
        let (c0, growth) = (4, 2);
        let mut b = GraphBuilder::new("dense");
        let x = b.input("x", &[batch, 3, 7, 7], DType::F32);
        let w0 = weight(&mut b, "w_stem", &[c0, 3, 3, 3]);
        let stem = b.conv("stem", x, w0, None, Conv::new(1, 1)).unwrap();
        let f0 = b.pool("pool0", PoolKind::Max, stem, 3, 1, 1).unwrap();
        let mut features = vec![f0];
        for i in 0..layers {
            let cat = b.concat(format!("cat{i}"), &features, 1).unwrap();
            let mut r = b.relu(format!("relu{i}"), cat).unwrap();
            let mut c = c0 + growth * i;
            if bottleneck {
                let w = weight(&mut b, &format!("w1_{i}"), &[8, c, 1, 1]);
                let h = b
                    .conv(format!("neck{i}"), r, w, None, Conv::new(1, 0))
                    .unwrap();
                r = b.relu(format!("neck_relu{i}"), h).unwrap();
                c = 8;
            }
            let w = weight(&mut b, &format!("w{i}"), &[growth, c, 3, 3]);
            let new = b
                .conv(format!("conv{i}"), r, w, None, Conv::new(1, 1))
                .unwrap();
            features.push(new);
        }
        let all = b.concat("block", &features, 1).unwrap();
        let y = b.relu("after", all).unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    fn tensor(g: &Graph, name: &str) -> TensorId {
        let i = g.tensors.iter().position(|t| t.name == name).unwrap();
        TensorId(i)
    }

    /// By the tiled rule (the staged rule left out): the ReLUs computed at the
    /// convolutions' loads, reading the block's buffer.
    fn tiled(g: &Graph) -> Partition {
        let pricing = Pricing {
            staged: false,
            ..Pricing::all(None)
        };
        partition_keeping(g, &HashSet::new(), pricing)
    }

    fn copies(g: &Graph, p: &Partition) -> Vec<String> {
        p.copies
            .iter()
            .map(|c| format!("{}: {}", g.nodes[c.node.0].name, c.why))
            .collect()
    }

    #[test]
    fn a_dense_block_is_one_buffer_every_concat_a_prefix_of() {
        for batch in [1, 2] {
            let g = dense_block(4, batch, true);
            let p = tiled(&g);
            assert!(p.copies.is_empty(), "{:?}", copies(&g, &p));
            assert_eq!(p.views.len(), 5);
            let block = tensor(&g, "block");
            // Every layer's Concat a view of the block's buffer from its start, each new
            // feature map written once at its place.
            for i in 0..4 {
                let s = p.places[&tensor(&g, &format!("cat{i}"))];
                assert_eq!((s.buffer, s.axis, s.offset), (block, 1, 0));
                let s = p.places[&tensor(&g, &format!("conv{i}"))];
                assert_eq!((s.buffer, s.offset), (block, 4 + 2 * i));
            }
            assert_eq!(p.places[&tensor(&g, "pool0")].offset, 0);
            assert!(!p.places.contains_key(&block));
            // The convolutions and the pool store into the block; no Concat runs a
            // kernel: stem, pool, four bottlenecks and convolutions, the last ReLU.
            assert_eq!(p.groups.len(), 11);
            let into_block = p.groups.iter().filter(|gr| gr.slice.is_some()).count();
            assert_eq!(into_block, 5);
            // Readers of a layer's Concat read the block's buffer.
            assert_eq!(p.home(tensor(&g, "cat2")), block);
        }
    }

    #[test]
    fn a_dense_block_without_bottlenecks_copies() {
        // Each convolution reads its Concat (through the ReLU it computes at its loads):
        // writing its channels into the same buffer would bind it read and written at
        // once, which WebGPU refuses.
        let g = dense_block(2, 1, false);
        let p = tiled(&g);
        assert_eq!(
            copies(&g, &p),
            [
                "cat1: the kernel storing %conv0 reads %cat0 from the same buffer",
                "block: the kernel storing %conv0 reads %cat0 from the same buffer",
            ]
        );
        // The first Concat (of one input) is the pool's buffer.
        assert_eq!(p.views.len(), 1);
    }

    #[test]
    fn by_the_staged_rule_a_dense_block_needs_no_copies() {
        // Each ReLU over a layer's Concat is a kernel of its own (it computes, and a
        // convolution's template computes none of its operands): it reads the block's
        // buffer and stores its own tensor, so every convolution writes its channels into
        // the block with nothing of the block read in the same kernel.
        for bottleneck in [false, true] {
            let g = dense_block(3, 1, bottleneck);
            let p = partition(&g);
            assert!(p.copies.is_empty(), "{:?}", copies(&g, &p));
            let block = tensor(&g, "block");
            for i in 0..3 {
                let s = p.places[&tensor(&g, &format!("conv{i}"))];
                assert_eq!((s.buffer, s.offset), (block, 4 + 2 * i));
                let relu = tensor(&g, &format!("relu{i}"));
                assert!(
                    p.groups.iter().any(|gr| gr.output == relu),
                    "relu{i} is stored by a kernel of its own"
                );
            }
        }
    }

    #[test]
    fn a_later_concat_of_inputs_lying_in_order_is_a_view_inside() {
        // `[a, b, c]` first, then `[b, c]`: the second is a view of the first from `a`'s end.
        let mut b = GraphBuilder::new("inside");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let a = b.relu("a", x).unwrap();
        let m = b.pool("m", PoolKind::Max, x, 3, 1, 1).unwrap();
        let v = b.pool("v", PoolKind::Average, x, 3, 1, 1).unwrap();
        let all = b.concat("all", &[a, m, v], 1).unwrap();
        let tail = b.concat("tail", &[m, v], 1).unwrap();
        let w = weight(&mut b, "w", &[2, 4, 3, 3]);
        let y = b.conv("y", tail, w, None, Conv::new(1, 1)).unwrap();
        b.output(all);
        b.output(y);
        let g = b.finish().unwrap();
        let p = partition(&g);
        assert!(p.copies.is_empty(), "{:?}", copies(&g, &p));
        let s = p.places[&tail];
        assert_eq!((s.buffer, s.axis, s.offset), (all, 1, 2));
        // A graph output holds the others; it is placed nowhere.
        assert_eq!(p.home(all), all);
    }

    #[test]
    fn concats_that_are_not_one_chain_copy_and_say_why() {
        // `a` in two Concats whose other inputs differ: the second one copies.
        let mut b = GraphBuilder::new("two");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let a = b.relu("a", x).unwrap();
        let c = b.pool("c", PoolKind::Max, x, 3, 1, 1).unwrap();
        let d = b.pool("d", PoolKind::Average, x, 3, 1, 1).unwrap();
        let one = b.concat("one", &[a, c], 1).unwrap();
        let two = b.concat("two", &[a, d], 1).unwrap();
        let y = b.add("y", one, two).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let p = partition(&g);
        assert_eq!(p.views.len(), 1);
        let why = copies(&g, &p);
        assert_eq!(
            why,
            [
                "two: %a lies in %one, whose parts it does not read whole and in order (Concats that are not one chain)"
            ]
        );
        // The copy reads `a` where it lies: in `one`'s buffer.
        assert_eq!(p.home(a), one);
    }

    #[test]
    fn inputs_no_kernel_stores_in_place_copy() {
        // A graph input, a graph output, and a convolution that reads the tensor it would
        // be concatenated beside (it would read and write one buffer).
        let mut b = GraphBuilder::new("refused");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let r = b.relu("r", x).unwrap();
        let from_input = b.concat("from_input", &[x, r], 1).unwrap();
        let o = b.relu("o", x).unwrap();
        let m = b.pool("m", PoolKind::Max, x, 3, 1, 1).unwrap();
        let with_output = b.concat("with_output", &[o, m], 1).unwrap();
        let a = b.pool("a", PoolKind::Average, x, 3, 1, 1).unwrap();
        let w = weight(&mut b, "w", &[2, 2, 3, 3]);
        let c = b.conv("c", a, w, None, Conv::new(1, 1)).unwrap();
        let beside = b.concat("beside", &[a, c], 1).unwrap();
        for t in [from_input, with_output, o, beside] {
            b.output(t);
        }
        let g = b.finish().unwrap();
        let p = partition(&g);
        assert!(p.views.is_empty());
        assert_eq!(
            copies(&g, &p),
            [
                "from_input: %x is a graph input",
                "with_output: %o is a graph output (it keeps a buffer of its own)",
                "beside: the kernel storing %c reads %a from the same buffer",
            ]
        );
        assert!(p.places.is_empty());
    }

    #[test]
    fn an_input_stored_in_another_layout_copies() {
        let mut b = GraphBuilder::new("layouts");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let r = b.relu("r", x).unwrap();
        let m = b.pool("m", PoolKind::Max, x, 3, 1, 1).unwrap();
        let cat = b.concat("cat", &[r, m], 1).unwrap();
        let y = b.relu("y", cat).unwrap();
        b.output(y);
        let mut g = b.finish().unwrap();
        g.tensors[r.0].layout = Layout::ChannelsLast;
        let p = partition(&g);
        assert_eq!(
            copies(&g, &p),
            ["cat: %r is stored as f32[1,2,5,5] nhwc, the Concat as f32[1,4,5,5]"]
        );
    }
}

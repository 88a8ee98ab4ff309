//! Fusion partitioning (the Hidet paper's step 2, §5): the graph cut into sub-graphs, each
//! of which becomes one kernel.
//!
//! - Every **anchor** (a convolution, a Gemm, a MatMul) starts a group and takes the
//!   chain of elementwise readers after it (bias, residual add, batch norm left
//!   unfolded, ReLU, ReLU6, any activation, reshapes, transposes) as long as each link has one
//!   reader and is no graph output: post-scheduling fusion rewrites them into the
//!   anchor's stores.
//! - Every **reduction** left (pooling, global pooling) is a group of its own.
//! - Every **injective** node left is inlined into the one group that reads it (a
//!   prologue: computed at the reader's loads, never stored) where it has one reader,
//!   else it roots a group of its own, which the rule-based injective schedule runs.
//!   A prologue whose work times the anchor's reads of each element passes a stated bound
//!   is computed once by a kernel of its own instead ([`cost`] states the rule), and the
//!   partition keeps each such [`Decision`] for `weft model graph` to show.
//! - A **Concat** costs no copy where it can: each input's group writes straight into
//!   its slice of the concatenated buffer (stored in the same type and layout), every
//!   reader reads it there, and the Concat runs no kernel; a chain of Concats each of
//!   whose inputs lead the next one's (DenseNet's dense block) shares one buffer
//!   ([`concat`]).
//!
//! - No node is inlined more than [`MAX_INLINE_DEPTH`] links from its group's stored
//!   tensor, and no epilogue is longer: a group becomes one expression per element, and
//!   an expression nested once per fused node would make lowering recurse once per node
//!   (a chain of a million Relus would overflow the stack). Past the bound the chain is
//!   cut into groups of its own.
//!
//! Groups run in the order of the last node each holds, which is a topological order:
//! a group reads only graph inputs, constants, and outputs of groups whose last node
//! comes before its reader.

mod concat;
pub mod cost;
pub mod gated;
pub mod row_norm;
mod shown;
pub mod skinny;
#[cfg(test)]
mod test_graphs;
mod update;

pub use concat::Copied;
pub use gated::{Gated, fold_gated};
pub use row_norm::{Fold, fold_row_norms};
pub use shown::Shown;
pub use skinny::SkinnyTemplate;

/// The keys of what the partition decides that `--disable-pass` also takes (they are no
/// graph passes): the cost rule, the staged templates' rule, the skinny products' rule,
/// the norm fold.
pub const KEYS: [&str; 4] = [cost::KEY, cost::STAGED_KEY, skinny::KEY, row_norm::KEY];
pub use update::in_place;

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::graph::{Graph, NodeId, TensorId};
use crate::op::{Epilogue, Role};

/// What a group is built around, which decides how it is scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    /// A convolution or matrix product, scheduled by a template.
    Anchor,
    /// A reduction (pooling, softmax, layer norm, Reduce*), scheduled by the rule-based
    /// reduction schedule.
    Reduction,
    /// Elementwise and layout ops, scheduled by the rule-based injective schedule.
    Injective,
}

/// Where a tensor lives inside a larger buffer: its slice of a Concat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The tensor whose buffer holds it (a Concat's output).
    pub buffer: TensorId,
    pub axis: usize,
    /// Where the group's part starts along `axis`.
    pub offset: usize,
}

/// One sub-graph: one kernel (or a template's few).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub kind: GroupKind,
    /// The anchor, the reduction, or (injective) the node whose output is stored.
    pub root: NodeId,
    /// Injective nodes computed inside the group's loads, producers first.
    pub prologue: Vec<NodeId>,
    /// The elementwise chain after the root, in order.
    pub epilogue: Vec<NodeId>,
    /// The tensor the group stores.
    pub output: TensorId,
    /// Tensors read from outside the group (graph inputs, constants, other groups'
    /// outputs), in order of first read.
    pub inputs: Vec<TensorId>,
    /// Where the output is written when it is part of a Concat.
    pub slice: Option<Slice>,
    /// An RMS norm of the product's `a` computed inside its kernel ([`row_norm`]): the
    /// norm's output is never stored.
    pub row_norm: Option<NodeId>,
    /// A gated MLP's activation of the product's two halves, stored by the product's
    /// kernel instead of its output ([`gated`]): the group's output is its Mul's.
    pub gated: Option<Gated>,
}

impl Partition {
    /// The tensor whose buffer holds `t`: `t` itself, or the buffer it is a slice of.
    pub fn home(&self, t: TensorId) -> TensorId {
        self.places.get(&t).map_or(t, |s| s.buffer)
    }
}

impl Group {
    /// Every node of the group: its folded norm, prologue, root, epilogue.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.row_norm
            .into_iter()
            .chain(self.prologue.iter().copied())
            .chain(std::iter::once(self.root))
            .chain(self.epilogue.iter().copied())
            .chain(self.gated.iter().flat_map(|gt| gt.nodes()))
    }
}

/// A graph cut into groups.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// In the order they run.
    pub groups: Vec<Group>,
    /// Concats that run no kernel: their inputs' groups write into their slices
    /// ([`concat`] says when).
    pub views: Vec<NodeId>,
    /// Concats that copy (a kernel of their own), and why they could not be views.
    pub copies: Vec<Copied>,
    /// Every tensor that lives inside another one's buffer (a Concat's input, or a
    /// Concat that is a view of a later one's prefix): every kernel writes and reads it
    /// there. The buffer is always a tensor placed nowhere.
    pub places: BTreeMap<TensorId, Slice>,
    /// Where each prologue chain that computes anything went, and why ([`cost`]).
    pub decisions: Vec<Decision>,
    /// Each RMS norm read by a product: folded into the product's kernel or not, and
    /// why ([`row_norm`]; empty until [`fold_row_norms`] runs).
    pub folds: Vec<Fold>,
}

/// The fate of one prologue chain under the cost rule ([`cost`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The anchor that reads the chain's value.
    pub anchor: NodeId,
    /// Which of the anchor's inputs the chain computes.
    pub input: usize,
    /// The chain's nodes, producers first; the last one's output is the anchor's input.
    pub chain: Vec<NodeId>,
    /// Operations per element ([`cost::work`]).
    pub work: f64,
    /// The anchor's reads of each element ([`cost::reads`]), or for a skinny product
    /// its template's computations of each ([`skinny`]).
    pub reads: f64,
    /// Elements of the anchor's input each element of `stored`'s output becomes through
    /// a broadcast among the chain's last layout changes (1 without one): the chain is
    /// priced per element before the broadcast, `work · reads · spread`.
    pub spread: f64,
    /// The node whose output a kernel of its own stores when the chain leaves the loads:
    /// the chain's last node, or the last that computes before a broadcast.
    pub stored: NodeId,
    /// The rule that priced it.
    pub rule: Rule,
    /// In the anchor's loads (`true`), or a kernel of its own.
    pub inlined: bool,
}

/// Which rule priced a chain, and its bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// The tiled templates': `W·R ≤` [`cost::PROLOGUE_BOUND`] (attention's keys, values
    /// and masks, and its queries at few rows; convolutions, products and attention's
    /// queries where the staged rule is left out).
    Tiled,
    /// A convolution's or product's tiled template, or an attention's query tiles, which
    /// stage their operands through shared memory ([`cost::staged`]): a chain that
    /// computes anything is a kernel of its own (bound 0).
    Staged,
    /// The skinny product's ([`skinny`]): `W·C ≤ bytes ·`
    /// [`skinny::OPS_PER_BYTE`], `C` the template's computations of an element of `a`.
    Skinny {
        /// The product's rows.
        rows: usize,
        /// Bytes of `b` the product streams per element of `a`.
        bytes: f64,
    },
}

impl Rule {
    /// The most `W` times reads (or computations) an element a chain may cost inline.
    pub fn bound(&self) -> f64 {
        match self {
            Rule::Tiled => cost::PROLOGUE_BOUND,
            Rule::Staged => 0.0,
            Rule::Skinny { bytes, .. } => bytes * skinny::OPS_PER_BYTE,
        }
    }
}

/// The most links of fused nodes between a group's stored tensor and any node inlined
/// into it (prologue depth), and the longest epilogue. No zoo model comes near it (their
/// deepest prologue is a few normalizations long); a chain past it is cut.
pub const MAX_INLINE_DEPTH: usize = 128;

/// Partitions `g` (after [`crate::passes::optimize`], so batch norms are folded and
/// constants computed).
pub fn partition(g: &Graph) -> Partition {
    partition_keeping(g, &HashSet::new(), Pricing::all(None))
}

/// Which of the partition's rules price the prologue chains ([`partition_keeping`]).
#[derive(Clone, Copy)]
pub struct Pricing<'a> {
    /// The cost rule at all (`false`: every prologue stays in its anchor's loads, the
    /// rule off: `--disable-pass fusion-cost`, to measure what it is worth).
    pub by_cost: bool,
    /// Convolutions' and products' tiled templates by the staged rule
    /// ([`cost::staged`]; `false`: by the tiled rule, `--disable-pass staged-prologue`).
    pub staged: bool,
    /// The model compiler's skinny-product template, whose products' `a` chains the rule
    /// prices by what it streams ([`skinny`]); `None` prices them as the tiled templates'.
    pub skinny: Option<&'a SkinnyTemplate<'a>>,
}

impl<'a> Pricing<'a> {
    /// Every rule on, skinny products priced by `skinny` where given.
    pub fn all(skinny: Option<&'a SkinnyTemplate<'a>>) -> Pricing<'a> {
        Pricing {
            by_cost: true,
            staged: true,
            skinny,
        }
    }
}

/// [`partition`], with no node of `not_epilogue` taken into an anchor's epilogue: the
/// chain stops before it (it becomes a prologue of its reader, or a group of its own).
/// The model compiler names the nodes whose epilogue the lowering could not fuse (a
/// reshape that merges axes the anchor's index keeps apart, as MobileViT's unfolding of
/// patches does). `pricing` says which rules price the prologue chains ([`Pricing`]).
pub fn partition_keeping(g: &Graph, not_epilogue: &HashSet<NodeId>, pricing: Pricing) -> Partition {
    let readers = readers(g);
    let outputs: HashSet<TensorId> = g.outputs.iter().copied().collect();
    let one_reader = |t: TensorId| -> Option<NodeId> {
        match readers.get(&t).map(Vec::as_slice) {
            Some([r]) if !outputs.contains(&t) => Some(*r),
            Some(_) | None => None,
        }
    };
    let mut group_of: HashMap<NodeId, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();

    // Anchors with their epilogue chains, and reductions.
    for (i, n) in g.nodes.iter().enumerate() {
        let id = NodeId(i);
        let kind = match n.op.role() {
            Role::Anchor(_) => GroupKind::Anchor,
            Role::Reduction(_) => GroupKind::Reduction,
            // A cache update stores into its cache: never inside a reader.
            Role::Update(_) => GroupKind::Injective,
            Role::Injective(_) | Role::Join { .. } => continue,
        };
        let mut epilogue = Vec::new();
        let mut t = n.output;
        if kind == GroupKind::Anchor {
            let mut permuted = false;
            while let Some(r) = one_reader(t) {
                if group_of.contains_key(&r)
                    || not_epilogue.contains(&r)
                    || !fits_epilogue(g, r, t)
                    || epilogue.len() >= MAX_INLINE_DEPTH
                {
                    break;
                }
                // Post-scheduling fusion writes each epilogue axis as one digit of the
                // anchor's flat index: a reshape after a permutation can merge axes the
                // permutation separated, which no such digit is. The reshape stays with
                // the reader (where it reads the permuted tensor as it is stored).
                let role = g.nodes[r.0].op.role();
                if permuted && role == Role::Injective(Epilogue::Reshape) {
                    break;
                }
                permuted |= role == Role::Injective(Epilogue::Permute);
                epilogue.push(r);
                t = g.nodes[r.0].output;
            }
        }
        let index = groups.len();
        group_of.insert(id, index);
        for &e in &epilogue {
            group_of.insert(e, index);
        }
        groups.push(Group {
            kind,
            root: id,
            prologue: Vec::new(),
            epilogue,
            output: t,
            inputs: Vec::new(),
            slice: None,
            row_norm: None,
            gated: None,
        });
    }

    // Injective nodes left: into their one reader's group, else a group of their own.
    // Walked backwards so that a reader's group is known before its producers. `depth`:
    // links from an inlined node to its group's stored tensor (roots and epilogues: 0).
    let mut depth: HashMap<NodeId, usize> = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate().rev() {
        let id = NodeId(i);
        if group_of.contains_key(&id) {
            continue;
        }
        let joins = |n: NodeId| matches!(g.nodes[n.0].op.role(), Role::Join { .. });
        let inline_into = match n.op.role() {
            Role::Anchor(_) | Role::Reduction(_) | Role::Update(_) => continue,
            // A join is a copy or a view: never computed inside its reader.
            Role::Join { .. } => None,
            Role::Injective(_) => one_reader(n.output)
                .filter(|r| depth.get(r).copied().unwrap_or(0) < MAX_INLINE_DEPTH)
                .and_then(|r| group_of.get(&r).copied().map(|gi| (gi, r)))
                .filter(|&(gi, _)| !joins(groups[gi].root)),
        };
        match inline_into {
            Some((gi, r)) => {
                // Sorted below; pushed here so that a long chain costs no quadratic shift.
                groups[gi].prologue.push(id);
                group_of.insert(id, gi);
                depth.insert(id, depth.get(&r).copied().unwrap_or(0) + 1);
            }
            None => {
                group_of.insert(id, groups.len());
                groups.push(Group {
                    kind: GroupKind::Injective,
                    root: id,
                    prologue: Vec::new(),
                    epilogue: Vec::new(),
                    output: n.output,
                    inputs: Vec::new(),
                    slice: None,
                    row_norm: None,
                    gated: None,
                });
            }
        }
    }

    let decisions = if pricing.by_cost {
        cost::split(g, &mut groups, &mut group_of, pricing)
    } else {
        Vec::new()
    };

    // Inputs of each group: tensors read from outside it.
    for gr in &mut groups {
        gr.prologue.sort();
        gr.inputs = inputs_of(g, gr);
    }

    // Concats written in place: their inputs' groups write into their slices, and the
    // Concats' own groups go.
    let placed = concat::place(g, &groups);
    groups.retain(|gr| !placed.views.contains(&gr.root));
    for gr in &mut groups {
        gr.slice = placed.places.get(&gr.output).copied();
    }
    groups.sort_by_key(|gr| gr.nodes().map(|n| n.0).max());
    Partition {
        groups,
        views: placed.views,
        copies: placed.copies,
        places: placed.places,
        decisions,
        folds: Vec::new(),
    }
}

/// The tensors `gr` reads from outside itself (graph inputs, constants, other groups'
/// outputs), in order of first read by its nodes in graph order.
fn inputs_of(g: &Graph, gr: &Group) -> Vec<TensorId> {
    let inside: HashSet<TensorId> = gr.nodes().map(|n| g.nodes[n.0].output).collect();
    let mut inputs = Vec::new();
    let mut ordered: Vec<NodeId> = gr.nodes().collect();
    ordered.sort();
    for n in ordered {
        for &t in &g.nodes[n.0].inputs {
            if !inside.contains(&t) && !inputs.contains(&t) {
                inputs.push(t);
            }
        }
    }
    inputs
}

/// Which nodes read each tensor (a node reading it twice counted once).
fn readers(g: &Graph) -> HashMap<TensorId, Vec<NodeId>> {
    g.consumers()
}

/// True if node `r` can follow tensor `t` in an anchor's epilogue: elementwise on `t`
/// at `t`'s own shape (no broadcast of `t`, which would store one element twice), reading
/// `t` once, or a reshape of it.
fn fits_epilogue(g: &Graph, r: NodeId, t: TensorId) -> bool {
    let n = &g.nodes[r.0];
    let reads_t = n.inputs.iter().filter(|&&i| i == t).count();
    if reads_t != 1 {
        return false;
    }
    match n.op.role() {
        Role::Injective(Epilogue::Pointwise | Epilogue::Reshape | Epilogue::Permute) => true,
        Role::Injective(Epilogue::SameShape) => g.tensor(n.output).shape == g.tensor(t).shape,
        Role::Injective(Epilogue::FirstInput) => n.inputs[0] == t,
        Role::Injective(Epilogue::Never)
        | Role::Join { .. }
        | Role::Update(_)
        | Role::Anchor(_)
        | Role::Reduction(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::{Binary, Conv, Op, PoolKind, Reshape, Transpose, Unary};
    use ndarray::{ArrayD, IxDyn};
    use weft_ir::dtype::DType;

    fn weight(b: &mut GraphBuilder, name: &str, shape: &[usize]) -> TensorId {
        b.weight(name, ArrayD::from_elem(IxDyn(shape), 0.1))
    }

    /// A residual block: conv → relu → conv (+ x) → relu, then a pool and a classifier.
    fn block() -> Graph {
        let mut b = GraphBuilder::new("block");
        let x = b.input("x", &[1, 4, 8, 8], DType::F32);
        let w1 = weight(&mut b, "w1", &[4, 4, 3, 3]);
        let b1 = weight(&mut b, "b1", &[4]);
        let w2 = weight(&mut b, "w2", &[4, 4, 3, 3]);
        let y = b.conv("conv1", x, w1, Some(b1), Conv::new(1, 1)).unwrap();
        let y = b.relu("relu1", y).unwrap();
        let y = b.conv("conv2", y, w2, None, Conv::new(1, 1)).unwrap();
        let y = b.add("add", y, x).unwrap();
        let y = b.relu("relu2", y).unwrap();
        let p = b.global_pool("pool", PoolKind::Average, y).unwrap();
        let f = b.flatten("flatten", p, 1).unwrap();
        let wf = weight(&mut b, "wf", &[3, 4]);
        let bf = weight(&mut b, "bf", &[3]);
        let out = b.linear("fc", f, wf, bf).unwrap();
        b.output(out);
        b.finish().unwrap()
    }

    #[test]
    fn anchors_take_their_epilogues_and_the_flatten_is_a_prologue() {
        let g = block();
        let p = partition(&g);
        let names = |ids: &[NodeId]| -> Vec<String> {
            ids.iter().map(|n| g.nodes[n.0].name.clone()).collect()
        };
        assert_eq!(
            p.groups.len(),
            4,
            "{}",
            Shown {
                graph: &g,
                partition: &p,
                schedules: None
            }
        );
        assert_eq!(names(&[p.groups[0].root]), ["conv1"]);
        assert_eq!(names(&p.groups[0].epilogue), ["relu1"]);
        assert_eq!(names(&p.groups[1].epilogue), ["add", "relu2"]);
        assert_eq!(p.groups[2].kind, GroupKind::Reduction);
        assert_eq!(names(&p.groups[3].prologue), ["flatten"]);
        // conv2's group reads relu1's output, its weight and the block's input.
        let inputs: Vec<&str> = p.groups[1]
            .inputs
            .iter()
            .map(|&t| g.tensor(t).name.as_str())
            .collect();
        assert_eq!(inputs, ["relu1", "w2", "x"]);
    }

    #[test]
    fn concat_inputs_write_into_their_slices() {
        let mut b = GraphBuilder::new("cat");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let w = weight(&mut b, "w", &[3, 2, 1, 1]);
        let a = b.conv("a", x, w, None, Conv::new(1, 0)).unwrap();
        let a = b.relu("a_relu", a).unwrap();
        let m = b.pool("m", PoolKind::Max, x, 3, 1, 1).unwrap();
        let c = b.concat("cat", &[a, m], 1).unwrap();
        let y = b.relu("after", c).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let p = partition(&g);
        assert_eq!(p.views.len(), 1);
        assert_eq!(p.groups.len(), 3);
        let cat = g.nodes[3].output;
        assert_eq!(
            p.groups[0].slice,
            Some(Slice {
                buffer: cat,
                axis: 1,
                offset: 0
            })
        );
        assert_eq!(
            p.groups[1].slice,
            Some(Slice {
                buffer: cat,
                axis: 1,
                offset: 3
            })
        );
        assert_eq!(p.groups[2].inputs, [cat]);
    }

    #[test]
    fn a_nested_concat_writes_into_the_outer_one() {
        // cat(cat(a, m), r) along one axis: a, m and r all write into the outer buffer.
        let mut b = GraphBuilder::new("nested");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let w = weight(&mut b, "w", &[3, 2, 1, 1]);
        let a = b.conv("a", x, w, None, Conv::new(1, 0)).unwrap();
        let m = b.pool("m", PoolKind::Max, x, 3, 1, 1).unwrap();
        let inner = b.concat("inner", &[a, m], 1).unwrap();
        let r = b.relu("r", x).unwrap();
        let outer = b.concat("outer", &[inner, r], 1).unwrap();
        let y = b.relu("after", outer).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let p = partition(&g);
        assert_eq!(p.views.len(), 2);
        let slices: Vec<(TensorId, usize, usize)> = p
            .groups
            .iter()
            .filter_map(|gr| gr.slice)
            .map(|s| (s.buffer, s.axis, s.offset))
            .collect();
        assert_eq!(slices, [(outer, 1, 0), (outer, 1, 3), (outer, 1, 5)]);

        // Along another axis the outer Concat copies (the inner one's parts would not be
        // contiguous in it).
        let mut b = GraphBuilder::new("across");
        let x = b.input("x", &[1, 2, 5, 5], DType::F32);
        let z = b.input("z", &[1, 4, 5, 5], DType::F32);
        let e = b.relu("e", x).unwrap();
        let f = b.unary("f", Unary::Neg, x).unwrap();
        let inner = b.concat("inner", &[e, f], 1).unwrap();
        let h = b.relu("h", z).unwrap();
        let outer = b.concat("outer", &[inner, h], 2).unwrap();
        b.output(outer);
        let g = b.finish().unwrap();
        let p = partition(&g);
        assert_eq!(p.views.len(), 1);
        let buffers: Vec<TensorId> = p
            .groups
            .iter()
            .filter_map(|gr| gr.slice)
            .map(|s| s.buffer)
            .collect();
        assert_eq!(buffers, [inner, inner]);
    }

    #[test]
    fn a_tensor_read_twice_is_stored() {
        let mut b = GraphBuilder::new("two");
        let x = b.input("x", &[6], DType::F32);
        let r = b.relu("r", x).unwrap();
        let s = b.add("s", r, r).unwrap();
        let t = b.relu("t", s).unwrap();
        let u = b.add("u", t, r).unwrap();
        b.output(u);
        let g = b.finish().unwrap();
        let p = partition(&g);
        // `r` is read by two nodes: stored; `s` and `t` inline into `u`.
        assert_eq!(p.groups.len(), 2);
        assert_eq!(p.groups[0].output, r);
        assert_eq!(p.groups[1].prologue.len(), 2);
    }

    /// A product's output permuted, then merged back into rows (attention's context as
    /// the output projection reads it): the transpose is the anchor's epilogue, so the
    /// tensor is stored permuted; the merging reshape is the next product's prologue.
    #[test]
    fn a_transpose_is_an_epilogue_and_the_reshape_after_it_a_prologue() {
        let mut b = GraphBuilder::new("heads");
        let x = b.input("x", &[2, 5, 3], DType::F32);
        let y = b.input("y", &[2, 3, 4], DType::F32);
        let p = b.node("p", Op::MatMul, &[x, y]).unwrap();
        let t = b
            .node(
                "t",
                Op::Transpose(Transpose {
                    perm: vec![1, 0, 2],
                }),
                &[p],
            )
            .unwrap();
        let r = b
            .node("r", Op::Reshape(Reshape { shape: vec![5, 8] }), &[t])
            .unwrap();
        let w = weight(&mut b, "w", &[8, 6]);
        let out = b.node("q", Op::MatMul, &[r, w]).unwrap();
        b.output(out);
        let g = b.finish().unwrap();
        let part = partition(&g);
        assert_eq!(part.groups.len(), 2);
        assert_eq!(part.groups[0].output, t);
        let name = |n: &NodeId| g.nodes[n.0].name.clone();
        assert_eq!(
            part.groups[0].epilogue.iter().map(name).collect::<Vec<_>>(),
            ["t"]
        );
        assert_eq!(
            part.groups[1].prologue.iter().map(name).collect::<Vec<_>>(),
            ["r"]
        );
    }

    /// `h · w` after PyTorch's GELU of `h` (`Div, Erf, Add, Mul, Mul`), or after a bias
    /// add; `w` of `n` columns.
    fn prologue_into_product(gelu: bool, n: usize) -> Graph {
        let mut b = GraphBuilder::new("ffn");
        let h = b.input("h", &[128, 3072], DType::F32);
        let w = weight(&mut b, "w", &[3072, n]);
        let c = b.weight("c", ArrayD::from_elem(IxDyn(&[]), std::f32::consts::SQRT_2));
        let a = if gelu {
            let d = b.binary("div", Binary::Div, h, c).unwrap();
            let e = b.unary("erf", Unary::Erf, d).unwrap();
            let one = b.weight("one", ArrayD::from_elem(IxDyn(&[]), 1.0));
            let p = b.add("plus", e, one).unwrap();
            let m = b.binary("mul", Binary::Mul, h, p).unwrap();
            let half = b.weight("half", ArrayD::from_elem(IxDyn(&[]), 0.5));
            b.binary("half_mul", Binary::Mul, m, half).unwrap()
        } else {
            let bias = weight(&mut b, "bias", &[3072]);
            b.add("bias_add", h, bias).unwrap()
        };
        let y = b.node("down", Op::MatMul, &[a, w]).unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    #[test]
    fn a_gelu_read_six_times_by_a_product_is_a_kernel_of_its_own() {
        let g = prologue_into_product(true, 768);
        let p = partition(&g);
        let shown = Shown {
            graph: &g,
            partition: &p,
            schedules: None,
        }
        .to_string();
        assert_eq!(p.groups.len(), 2, "{shown}");
        assert_eq!(p.groups[0].kind, GroupKind::Injective, "{shown}");
        assert_eq!(g.nodes[p.groups[0].root.0].name, "half_mul");
        assert_eq!(p.groups[0].prologue.len(), 4, "{shown}");
        assert!(p.groups[1].prologue.is_empty(), "{shown}");
        let d = &p.decisions[0];
        assert!(!d.inlined && d.reads == 6.0 && d.work > 20.0, "{d:?}");
        assert!(shown.contains("a kernel of its own"), "{shown}");
    }

    #[test]
    fn a_bias_add_stays_in_the_loads_until_the_product_reads_it_too_often() {
        // By the tiled rule (the staged rule left out).
        let tiled = |g: &Graph| {
            let pricing = Pricing {
                staged: false,
                ..Pricing::all(None)
            };
            partition_keeping(g, &HashSet::new(), pricing)
        };
        let g = prologue_into_product(false, 768);
        let p = tiled(&g);
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0].prologue.len(), 1);
        assert!(p.decisions[0].inlined && p.decisions[0].work == 1.0);
        assert_eq!(p.decisions[0].rule, Rule::Tiled);
        // 16384 columns: each element of `h` read 128 times, 128 adds past the bound.
        let g = prologue_into_product(false, 16384);
        let p = tiled(&g);
        assert_eq!(p.groups.len(), 2);
        assert!(!p.decisions[0].inlined && p.decisions[0].reads == 128.0);
    }

    #[test]
    fn by_the_staged_rule_a_product_computes_none_of_its_operands() {
        // The bias add (1 op, read once) is a kernel of its own before the product's
        // staged template.
        let g = prologue_into_product(false, 768);
        let p = partition(&g);
        let shown = Shown {
            graph: &g,
            partition: &p,
            schedules: None,
        }
        .to_string();
        assert_eq!(p.groups.len(), 2, "{shown}");
        let d = &p.decisions[0];
        assert!(
            !d.inlined && d.work == 1.0 && d.rule == Rule::Staged,
            "{d:?}"
        );
        assert!(
            shown.contains("computed at the loads of a staged template"),
            "{shown}"
        );
    }
}

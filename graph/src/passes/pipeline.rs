//! The pass pipeline: every graph pass listed once ([`PIPELINE`]), with the key a user
//! leaves it out by and the name its report line prints, run once per compile, in order,
//! with one [`PassContext`].
//!
//! The context is what a pass may know beyond the graph: the target's limits, the
//! precision the model is compiled in, the passes the user disabled, and a
//! [`TargetQuery`] through which a pass asks the lowering what only the lowering knows
//! (whether the fused attention kernel fits the target, say). A pass that leaves
//! something undone it would otherwise have done says why ([`PassContext::note`]); its
//! report line prints the reason.
//!
//! Two stages: the [`Stage::Rewrite`] passes change what the nodes are (each may be
//! disabled, an A/B of what one pass is worth); then the graph is compacted and
//! validated, and the [`Stage::Storage`] passes choose how each tensor is stored (types
//! and layouts: never a value), which a compile cannot do without.

use std::cell::RefCell;
use std::fmt;

use weft_codegen_common::TargetLimits;
use weft_ir::dtype::DType;

use super::{
    Precision, assign_precision, assign_weight_layouts, compact, fold_batch_norms, fold_constants,
    group_kv_heads, merge_sibling_products, recognize_activations, recognize_attention,
    recognize_layer_norms, recognize_rms_norms, recognize_rotary, remove_dead, remove_identities,
    split_wide_weights,
};
use crate::graph::{Graph, GraphError, Node};

/// A graph pass: rewrites the graph in place, seeing the compile's context, and says how
/// many nodes (or tensors, for the storage passes) it changed.
pub type Pass = fn(&mut Graph, &PassContext) -> usize;

/// What only the lowering knows about the target, asked by the passes that must not
/// make a node the target cannot run. The model compiler implements it; a context
/// without a target ([`PassContext::default`]) answers with [`EveryKernelFits`].
pub trait TargetQuery {
    /// Whether the fused kernel of `node`, an `Attention` of `graph`, fits the target
    /// with its `q`, `k` and `v` stored as `dtype` (F16 where all three are, else F32),
    /// at the shapes `graph` gives them. `Err` says why not, in words a report prints.
    fn attention_fits(&self, graph: &Graph, node: &Node, dtype: DType) -> Result<(), String>;
}

/// A target without limits the passes need to ask about: every fused kernel fits.
#[derive(Clone, Copy, Debug, Default)]
pub struct EveryKernelFits;

impl TargetQuery for EveryKernelFits {
    fn attention_fits(&self, _: &Graph, _: &Node, _: DType) -> Result<(), String> {
        Ok(())
    }
}

/// What a pass sees besides the graph: one per compile.
pub struct PassContext<'a> {
    /// The target the model is compiled for.
    pub limits: TargetLimits,
    /// How the model's tensors are stored ([`assign_precision`] applies it; a pass whose
    /// answer depends on a tensor's storage type asks [`PassContext::stored_dtype`]).
    pub precision: Precision,
    /// Keys of the passes ([`PIPELINE`]) left out of this compile.
    pub disabled: Vec<String>,
    /// The lowering's answers about the target.
    pub target: &'a dyn TargetQuery,
    /// Where set, products of at most this many rows read their weight K-major
    /// (`weft_kernels::gemv::kmajor`, `WEFT_GEMV_KMAJOR=1`): [`super::assign_weight_layouts`]
    /// stores `B` `[N, K]` where every reader is such a product. The model compiler sets
    /// it (`weft_kernels::gemv::MAX_M`): this crate knows no template. `None`: off.
    pub kmajor_rows: Option<usize>,
    /// Why the running pass left something undone, taken into its report.
    note: RefCell<Option<String>>,
}

impl fmt::Debug for PassContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PassContext")
            .field("target", &self.limits.name)
            .field("precision", &self.precision)
            .field("disabled", &self.disabled)
            .finish_non_exhaustive()
    }
}

impl Default for PassContext<'static> {
    /// The offline CUDA profile, f32, every pass on, every fused kernel fitting: the
    /// context of a graph-level test.
    fn default() -> Self {
        PassContext::new(TargetLimits::cuda())
    }
}

impl PassContext<'static> {
    /// A context for `limits`, f32, every pass on; the target answers that every fused
    /// kernel fits until [`PassContext::with_target`] says otherwise.
    pub fn new(limits: TargetLimits) -> Self {
        PassContext {
            limits,
            precision: Precision::F32,
            disabled: Vec::new(),
            target: &EveryKernelFits,
            kmajor_rows: None,
            note: RefCell::new(None),
        }
    }
}

impl<'a> PassContext<'a> {
    /// The same context, its tensors stored in `precision`.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The same context without the passes whose keys `disabled` holds.
    pub fn with_disabled(mut self, disabled: &[String]) -> Self {
        self.disabled = disabled.to_vec();
        self
    }

    /// The same context, products of at most `rows` rows reading their weights K-major
    /// (`None`: none do, the default).
    pub fn with_kmajor_rows(mut self, rows: Option<usize>) -> Self {
        self.kmajor_rows = rows;
        self
    }

    /// The same context, asking `target` what only the lowering knows.
    pub fn with_target<'b>(self, target: &'b dyn TargetQuery) -> PassContext<'b> {
        PassContext {
            limits: self.limits,
            precision: self.precision,
            disabled: self.disabled,
            target,
            kmajor_rows: self.kmajor_rows,
            note: self.note,
        }
    }

    /// Whether the pass keyed `key` is left out.
    pub fn is_disabled(&self, key: &str) -> bool {
        self.disabled.iter().any(|d| d == key)
    }

    /// The type tensor `t` of `g` will be stored in once [`assign_precision`] has run
    /// (which runs after every rewrite), for a tensor no convolution or product reads as
    /// its weight.
    pub fn stored_dtype(&self, g: &Graph, t: crate::TensorId) -> DType {
        super::precision::stored_dtype(g, t, self.precision)
    }

    /// Records why the running pass left something undone; its report line says it
    /// (`recognize attention: undone, …: 0 node(s)`). A second note replaces the first.
    pub fn note(&self, why: impl Into<String>) {
        *self.note.borrow_mut() = Some(why.into());
    }

    pub(super) fn take_note(&self) -> Option<String> {
        self.note.borrow_mut().take()
    }
}

/// Whether a pass may be left out, and what graph it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Changes what the nodes are; may be disabled by its key.
    Rewrite,
    /// Chooses how tensors are stored, on the compacted and validated graph; always runs
    /// (a compile needs a storage type for every tensor).
    Storage,
}

/// One pass of a pipeline.
#[derive(Clone, Copy, Debug)]
pub struct PassEntry {
    /// The key a user leaves it out by (`weft model run --disable-pass KEY`).
    pub key: &'static str,
    /// Its name in reports.
    pub name: &'static str,
    pub stage: Stage,
    pub run: Pass,
}

/// What one pass changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassReport {
    /// The pass's name ([`PassEntry::name`]).
    pub pass: &'static str,
    /// Nodes it removed or rewrote (tensors, for the storage passes).
    pub changed: usize,
    /// Why it left something undone ([`PassContext::note`]).
    pub note: Option<String>,
}

impl fmt::Display for PassReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.note {
            Some(note) => write!(f, "{}: {note}: {} node(s)", self.pass, self.changed),
            None => write!(f, "{}: {} node(s)", self.pass, self.changed),
        }
    }
}

/// Every pass of a compile, in the order a compiler wants them: identities out first (so
/// that batch norms meet their convolutions), constants folded, decomposed activations
/// (GELU, SiLU, Mish, HardSwish, HardSigmoid) made one op each, decomposed layer and RMS norms
/// made one node, rotate-half rotary embeddings made one node, attention (two products and a softmax) made one node where the target
/// holds its kernel, query heads grouped by the KV head they share where an exporter repeated
/// its keys and values ([`group_kv_heads`]), sibling products of one activation (query, key, value) made one
/// product, weights wider than the target's buffers cut into column blocks, batch norms folded into the convolutions before them, what no output needs
/// any more removed; then each tensor's storage type and layout, and the weights stored
/// as the products read them (storage only, after the activations' layouts are known).
pub const PIPELINE: &[PassEntry] = &[
    PassEntry {
        key: "identities",
        name: "remove identities",
        stage: Stage::Rewrite,
        run: remove_identities,
    },
    PassEntry {
        key: "constants",
        name: "fold constants",
        stage: Stage::Rewrite,
        run: fold_constants,
    },
    PassEntry {
        key: "activations",
        name: "recognize activations",
        stage: Stage::Rewrite,
        run: recognize_activations,
    },
    PassEntry {
        key: "layer-norms",
        name: "recognize layer norms",
        stage: Stage::Rewrite,
        run: recognize_layer_norms,
    },
    PassEntry {
        key: "rms-norms",
        name: "recognize RMS norms",
        stage: Stage::Rewrite,
        run: recognize_rms_norms,
    },
    PassEntry {
        key: "rotary",
        name: "recognize rotary embeddings",
        stage: Stage::Rewrite,
        run: recognize_rotary,
    },
    PassEntry {
        key: "attention",
        name: "recognize attention",
        stage: Stage::Rewrite,
        run: recognize_attention,
    },
    PassEntry {
        key: "attention-groups",
        name: "group query heads by their KV head",
        stage: Stage::Rewrite,
        run: group_kv_heads,
    },
    PassEntry {
        key: "siblings",
        name: "merge sibling products",
        stage: Stage::Rewrite,
        run: merge_sibling_products,
    },
    PassEntry {
        key: "wide-weights",
        name: "split weights wider than a buffer",
        stage: Stage::Rewrite,
        run: split_wide_weights,
    },
    PassEntry {
        key: "batch-norms",
        name: "fold batch norms into convolutions",
        stage: Stage::Rewrite,
        run: fold_batch_norms,
    },
    PassEntry {
        key: "dead",
        name: "remove dead nodes",
        stage: Stage::Rewrite,
        run: remove_dead,
    },
    PassEntry {
        key: "precision",
        name: "assign precision and layout",
        stage: Stage::Storage,
        run: assign_precision,
    },
    PassEntry {
        key: "weight-layouts",
        name: "store weights as the products read them",
        stage: Stage::Storage,
        run: assign_weight_layouts,
    },
];

/// Runs `passes` once each, in order, on a copy of `graph`: the rewrites (those `cx`
/// does not disable), then compaction and validation, then the storage passes. One
/// report per pass, in order, a disabled one reporting 0. A disabled key that names no
/// pass, or a storage pass, is refused.
pub fn run_pipeline(
    graph: &Graph,
    passes: &[PassEntry],
    cx: &PassContext,
) -> Result<(Graph, Vec<PassReport>), GraphError> {
    for key in &cx.disabled {
        match passes.iter().find(|p| p.key == key) {
            Some(p) if p.stage == Stage::Storage => {
                return Err(GraphError::FixedPass { key: key.clone() });
            }
            Some(_) => {}
            // Not passes: the partition's cost rules and its norm fold, which the compile
            // reads from the same list.
            None if crate::partition::KEYS.contains(&key.as_str()) => {}
            None => {
                let known: Vec<&str> = passes
                    .iter()
                    .filter(|p| p.stage == Stage::Rewrite)
                    .map(|p| p.key)
                    .chain(crate::partition::KEYS)
                    .collect();
                return Err(GraphError::UnknownPass {
                    key: key.clone(),
                    known: known.join(", "),
                });
            }
        }
    }
    let mut g = graph.clone();
    let mut reports = Vec::with_capacity(passes.len());
    let mut compacted = false;
    for pass in passes {
        // The storage passes count tensors: the ones removed nodes left must be gone.
        if pass.stage == Stage::Storage && !compacted {
            g = compact(g);
            g.validate()?;
            compacted = true;
        }
        let changed = if cx.is_disabled(pass.key) {
            0
        } else {
            (pass.run)(&mut g, cx)
        };
        reports.push(PassReport {
            pass: pass.name,
            changed,
            note: cx.take_note(),
        });
    }
    if !compacted {
        g = compact(g);
        g.validate()?;
    }
    Ok((g, reports))
}

/// The whole [`PIPELINE`] with `cx`.
pub fn optimize_in(
    graph: &Graph,
    cx: &PassContext,
) -> Result<(Graph, Vec<PassReport>), GraphError> {
    run_pipeline(graph, PIPELINE, cx)
}

/// The whole [`PIPELINE`] with the default context (f32, every pass, every kernel
/// fitting).
pub fn optimize(graph: &Graph) -> Result<(Graph, Vec<PassReport>), GraphError> {
    optimize_in(graph, &PassContext::default())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use weft_ir::dtype::DType;

    use super::*;
    use crate::builder::GraphBuilder;

    fn small() -> Graph {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[2, 3], DType::F32);
        let y = b.relu("relu", x).unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    /// How often [`counted`] ran.
    static RUNS: AtomicUsize = AtomicUsize::new(0);

    fn counted(_: &mut Graph, _: &PassContext) -> usize {
        RUNS.fetch_add(1, Ordering::SeqCst);
        0
    }

    #[test]
    fn every_pass_runs_once_in_order_and_reports_once() {
        let mut passes = PIPELINE.to_vec();
        passes.insert(
            3,
            PassEntry {
                key: "counted",
                name: "count the runs",
                stage: Stage::Rewrite,
                run: counted,
            },
        );
        let before = RUNS.load(Ordering::SeqCst);
        let (_, reports) = run_pipeline(&small(), &passes, &PassContext::default()).unwrap();
        assert_eq!(RUNS.load(Ordering::SeqCst) - before, 1);
        let names: Vec<&str> = reports.iter().map(|r| r.pass).collect();
        let listed: Vec<&str> = passes.iter().map(|p| p.name).collect();
        assert_eq!(names, listed);
        // Left out, it does not run and reports 0.
        let cx = PassContext::default().with_disabled(&["counted".to_string()]);
        let before = RUNS.load(Ordering::SeqCst);
        let (_, reports) = run_pipeline(&small(), &passes, &cx).unwrap();
        assert_eq!(RUNS.load(Ordering::SeqCst), before);
        assert_eq!(reports.len(), passes.len());
        assert_eq!(reports[3].to_string(), "count the runs: 0 node(s)");
    }

    #[test]
    fn the_storage_stage_sees_a_compact_graph_and_cannot_be_left_out() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[2, 3], DType::F32);
        let dead = b.relu("dead", x).unwrap();
        let _ = b.relu("deader", dead).unwrap();
        let y = b.relu("relu", x).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let cx = PassContext::default().with_precision(Precision::F16);
        let (h, reports) = optimize_in(&g, &cx).unwrap();
        // The dead ReLUs went, and the tensors they wrote with them: the precision pass
        // counts only what is left (the graph's input and output, which stay f32).
        assert_eq!(h.nodes.len(), 1);
        assert_eq!(h.tensors.len(), 2);
        let line = |name: &str| {
            reports
                .iter()
                .find(|r| r.pass == name)
                .map(ToString::to_string)
        };
        assert_eq!(
            line("remove dead nodes").as_deref(),
            Some("remove dead nodes: 2 node(s)")
        );
        assert_eq!(
            line("assign precision and layout").as_deref(),
            Some("assign precision and layout: 0 node(s)")
        );
        let refused = |key: &str| {
            let cx = PassContext::default().with_disabled(&[key.to_string()]);
            optimize_in(&g, &cx).unwrap_err().to_string()
        };
        assert_eq!(
            refused("precision"),
            "the pass `precision` cannot be left out: it chooses how tensors are stored"
        );
        assert_eq!(
            refused("atention"),
            "no pass is called `atention`; the passes are identities, constants, \
             activations, layer-norms, rms-norms, rotary, attention, attention-groups, siblings, wide-weights, \
             batch-norms, dead, \
             fusion-cost, staged-prologue, skinny-prologue, norm-fold"
        );
    }
}

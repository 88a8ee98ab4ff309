//! A compiled model: the graph after the pass pipeline, its partition, each group lowered
//! to one scheduled function and its kernels, and the buffer plan — everything but the
//! device. [`CompiledModel::load`] puts it on one ([`Executable`]).

use std::collections::HashSet;
use weft_codegen_common::TargetLimits;
use weft_graph::Graph;
use weft_graph::NodeId;
use weft_graph::op::{Epilogue, Role};
use weft_graph::partition::{
    Partition, Pricing, Shown, SkinnyTemplate, fold_gated, fold_row_norms, partition_keeping,
};
use weft_graph::passes::{PassContext, PassReport, Precision, optimize_in};
use weft_graph::symbolic::{Binding, bind};
use weft_ir::dtype::DType;
use weft_ir::fusion::FusionError;
use weft_runtime::Device;

use crate::anchor::Choices;
use crate::bound_rows::{RowBound, RowBounding, bound_rows};
use crate::error::{LowerError, ModelError};
use crate::executable::Executable;
use crate::guard::{IndexGuard, add_index_guards};
use crate::lower::siblings::{self, Among, Asked, Beside};
use crate::lower::{LoweredGroup, Lowering, lower_group};
use crate::plan::{Plan, Reuse};

/// The key of `CompileOptions::disabled` that turns the partition's cost rule off
/// (`weft_graph::partition::cost`): every prologue stays in its anchor's loads.
pub use weft_graph::partition::cost::KEY as FUSION_COST;

/// The key of `CompileOptions::disabled` that prices convolutions' and products'
/// prologues by the tiled rule (`W·R` under a bound) instead of the staged rule
/// (`weft_graph::partition::cost::staged`: a chain that computes anything is a kernel
/// of its own).
pub use weft_graph::partition::cost::STAGED_KEY as STAGED_PROLOGUE;

/// The key of `CompileOptions::disabled` that leaves every kernel alone, none joined
/// with another ([`crate::horizontal`]).
pub use crate::horizontal::KEY as HORIZONTAL;

/// The key of `CompileOptions::disabled` that runs a symbolic model's kernels whole at
/// every length (`crate::bound_rows::bound_symbol` off): what the bounding is worth.
pub use crate::bound_rows::SYMBOL_KEY as SYMBOL_BOUND;

/// The key of `CompileOptions::disabled` that leaves every RMS norm a kernel of its own
/// (`weft_graph::partition::row_norm`): none folded into the skinny product reading it.
pub use weft_graph::partition::row_norm::KEY as NORM_FOLD;

/// The key of `CompileOptions::disabled` that prices the prologues of skinny products'
/// `a` by the tiled templates' rule (`weft_graph::partition::skinny`) where
/// [`CompileOptions::skinny_prologue`] would price them by what they stream: a gated
/// MLP's `silu(gate) · up` is then a kernel of its own before a decode step's
/// down-projection.
pub use weft_graph::partition::skinny::KEY as SKINNY_PROLOGUE;

/// How a model is compiled: one value for every constructor's arguments.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// How tensors are stored (the model still takes and gives f32 row-major tensors).
    pub precision: Precision,
    /// Configs for anchors (a tuning run's, or records'), taken before the stated rule.
    pub choices: Choices,
    /// Keys of the graph passes to leave out ([`weft_graph::passes::PIPELINE`]): what
    /// one pass is worth, measured.
    pub disabled: Vec<String>,
    /// Rows whose count an input gives at run time, which bounds the kernels' work
    /// ([`crate::bound_rows`]; on targets that [`crate::bound_rows::supported`]).
    pub row_bound: Option<RowBound>,
    /// Price a skinny product's `a` chains by the bytes of `b` it streams
    /// (`weft_graph::partition::skinny`), so cheap ones are computed in its loads; off,
    /// they are priced as the tiled templates' (by the staged rule: a kernel of their
    /// own). Off by default: on the H200 (seventh session, TinyLlama-shaped fp16 decode,
    /// 4 layers, batch 1, two rounds) `silu(gate) · up` in the down-projection's loads
    /// made the step 260.6 µs against 251.0 µs as a kernel of its own. The environment's
    /// `WEFT_SKINNY_PROLOGUE` (`0` or `1`) overrides it, for the A/B.
    pub skinny_prologue: bool,
    /// Store the weights that only skinny products read K-major (`[N, K]`) and run
    /// those products on `weft_kernels::gemv::kmajor` (a warp a column) instead of the
    /// row-major skinny template (`docs/gemv-template.md`, "The K-major variant"). Off by
    /// default until the H200 says it is faster; the environment's `WEFT_GEMV_KMAJOR`
    /// (`0` or `1`) overrides it, for the A/B. Products reading an RMS norm the
    /// partition folds stay on the row-major template (the K-major kernel folds no
    /// norm yet).
    pub gemv_kmajor: bool,
    /// On targets where a kernel's wait for the one before it is a statement of its own
    /// (CUDA on sm_90 and later: `TargetLimits::grid_dependency`), what the skinny
    /// products (a decode step's) do before that wait — prefetch the rows of their
    /// weight each thread will read into L2, or only place the wait — while the kernel
    /// before each of them lets it launch at its start (`crate::pdl`). Off by default:
    /// measured slower on the H200 (`docs/gemv-template.md`, "Prefetching before the
    /// wait"). The environment's `WEFT_PREFETCH` (`0`, `wait`, `1`, `sectors`) overrides
    /// it, for the A/B.
    pub weight_prefetch: weft_kernels::gemv::Lead,
    /// Store a gated MLP's `silu(gate) · up` from the gate/up product's kernel
    /// (`weft_graph::partition::gated`, `weft_kernels::gemv::template_gated`) instead of
    /// a kernel of its own after it. Off by default: timed on the H200 in the fourteenth
    /// session, a kernel fewer a layer and the same step (`docs/l2-ahead.md`, last
    /// paragraph); the environment's `WEFT_GATED_STORE` (`0` or `1`) overrides it, for
    /// the A/B.
    pub gated_store: bool,
    /// Bytes of the next skinny products' weights each skinny product asks L2 for once
    /// it has stored its output (`crate::ahead`), on targets that place a kernel's wait
    /// (CUDA on sm_90 and later); 0, the default, asks nothing: measured slower on the
    /// H200 (`docs/l2-ahead.md`). The environment's `WEFT_L2_AHEAD` (megabytes, a whole
    /// number; `0` off) overrides it, for the A/B.
    pub l2_ahead: usize,
    /// Bytes of the next skinny products' weights asked of L2 by a kernel of its own
    /// launched beside the chain (`crate::beside`: on a second stream, forked after a
    /// skinny product that other kernels follow before the next product, joined at the
    /// run's end), on targets that place a kernel's wait (CUDA on sm_90 and later); 0,
    /// the default, asks nothing. The environment's `WEFT_L2_BESIDE` (megabytes, a whole
    /// number; `0` off) overrides it, for the A/B.
    pub l2_beside: usize,
}

/// The environment variable that overrides [`CompileOptions::gated_store`] (`0` or `1`;
/// anything else refused, naming it).
pub const GATED_STORE_ENV: &str = "WEFT_GATED_STORE";

/// The environment variable that overrides [`CompileOptions::l2_ahead`] (megabytes, a
/// whole number up to 1024; anything else refused, naming it).
pub const L2_AHEAD_ENV: &str = "WEFT_L2_AHEAD";

/// The environment variable that overrides [`CompileOptions::l2_beside`] (megabytes, a
/// whole number up to 1024; anything else refused, naming it).
pub const L2_BESIDE_ENV: &str = "WEFT_L2_BESIDE";

/// The environment variable that overrides [`CompileOptions::weight_prefetch`] (a name
/// of `weft_kernels::gemv::Lead::NAMES`; anything else refused, naming it).
pub const PREFETCH_ENV: &str = "WEFT_PREFETCH";

/// The environment variable that sets when the memory plan reuses a buffer
/// ([`crate::plan::Reuse`]): `target` (the default: [`Reuse::Waiting`] where the target
/// orders dispatches by the buffers they bind, `TargetLimits::usage_barriers`, else
/// [`Reuse::Always`]), `always`, `waiting` or `never`; anything else refused, naming it.
pub const REUSE_ENV: &str = "WEFT_REUSE";

/// How the memory plan reuses buffers on a target offering `limits`: [`REUSE_ENV`] where
/// it is set, else by the target.
pub fn reuse_for(limits: &TargetLimits) -> Result<Reuse, ModelError> {
    let by_target = if limits.usage_barriers {
        Reuse::Waiting
    } else {
        Reuse::Always
    };
    match std::env::var(REUSE_ENV) {
        Err(_) => Ok(by_target),
        Ok(v) if v == "target" => Ok(by_target),
        Ok(v) => Reuse::NAMES
            .iter()
            .find(|(name, _)| *name == v)
            .map(|&(_, reuse)| reuse)
            .ok_or_else(|| ModelError::Setting {
                variable: REUSE_ENV.into(),
                value: v,
                values: std::iter::once("target")
                    .chain(Reuse::NAMES.iter().map(|(name, _)| *name))
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
    }
}

/// The environment variable that overrides [`CompileOptions::gemv_kmajor`] (`0` or `1`;
/// anything else refused, naming it).
pub const GEMV_KMAJOR_ENV: &str = "WEFT_GEMV_KMAJOR";

impl CompileOptions {
    /// The same options, tensors stored in `precision`.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The same options, the anchors `choices` holds taking its configs.
    pub fn with_choices(mut self, choices: Choices) -> Self {
        self.choices = choices;
        self
    }

    /// The same options, the kernels over `bound`'s rows doing no work past their count
    /// at run time.
    pub fn with_row_bound(mut self, bound: RowBound) -> Self {
        self.row_bound = Some(bound);
        self
    }

    /// The same options with skinny products' prologues priced by what they stream
    /// (`true`) or as the tiled templates' (`false`, the default).
    pub fn with_skinny_prologue(mut self, on: bool) -> Self {
        self.skinny_prologue = on;
        self
    }

    /// The same options with the skinny products' weights K-major on the K-major template
    /// (`true`) or row-major on the row-major one (`false`, the default).
    pub fn with_gemv_kmajor(mut self, on: bool) -> Self {
        self.gemv_kmajor = on;
        self
    }

    /// The same options with gated MLPs' activations stored by their gate/up products
    /// (`true`) or by kernels of their own (`false`, the default).
    pub fn with_gated_store(mut self, on: bool) -> Self {
        self.gated_store = on;
        self
    }

    /// Whether gate/up products store their gated activation: `WEFT_GATED_STORE` where it
    /// is set (anything but `0` or `1` refused, naming it), else [`Self::gated_store`].
    pub fn gated_on(&self) -> Result<bool, ModelError> {
        switch(GATED_STORE_ENV, self.gated_store)
    }

    /// The same options with each skinny product asking L2 for `bytes` of the next
    /// products' weights (0: nothing).
    pub fn with_l2_ahead(mut self, bytes: usize) -> Self {
        self.l2_ahead = bytes;
        self
    }

    /// Bytes each skinny product asks L2 for ahead: `WEFT_L2_AHEAD` (megabytes) where it
    /// is set (anything but a whole number up to 1024 refused, naming it), else
    /// [`Self::l2_ahead`].
    pub fn l2_ahead_bytes(&self) -> Result<usize, ModelError> {
        megabytes(L2_AHEAD_ENV, self.l2_ahead)
    }

    /// The same options with a kernel beside the chain asking L2 for `bytes` of the
    /// next products' weights after each skinny product a window follows (0: nothing).
    pub fn with_l2_beside(mut self, bytes: usize) -> Self {
        self.l2_beside = bytes;
        self
    }

    /// Bytes asked of L2 beside the chain: `WEFT_L2_BESIDE` (megabytes) where it is set
    /// (anything but a whole number up to 1024 refused, naming it), else
    /// [`Self::l2_beside`].
    pub fn l2_beside_bytes(&self) -> Result<usize, ModelError> {
        megabytes(L2_BESIDE_ENV, self.l2_beside)
    }

    /// The same options with skinny products doing `lead` before they wait for the
    /// kernel before them where the target places that wait.
    pub fn with_weight_prefetch(mut self, lead: weft_kernels::gemv::Lead) -> Self {
        self.weight_prefetch = lead;
        self
    }

    /// What skinny products do before their wait: `WEFT_PREFETCH` where it is set (a
    /// name that is none of `Lead::NAMES` refused, naming the variable), else
    /// [`Self::weight_prefetch`].
    pub fn prefetch_lead(&self) -> Result<weft_kernels::gemv::Lead, ModelError> {
        use weft_kernels::gemv::Lead;
        match std::env::var(PREFETCH_ENV) {
            Err(_) => Ok(self.weight_prefetch),
            Ok(v) => Lead::parse(&v).ok_or_else(|| ModelError::Setting {
                variable: PREFETCH_ENV.into(),
                value: v,
                values: Lead::NAMES
                    .iter()
                    .map(|(n, _)| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Whether skinny products read K-major weights: `WEFT_GEMV_KMAJOR` where it is set
    /// (anything but `0` or `1` refused, naming it), else [`Self::gemv_kmajor`].
    pub fn kmajor_on(&self) -> Result<bool, ModelError> {
        switch(GEMV_KMAJOR_ENV, self.gemv_kmajor)
    }

    /// Whether the skinny rule prices prologues: `WEFT_SKINNY_PROLOGUE` where it is set
    /// (anything but `0` or `1` refused, naming it), else [`Self::skinny_prologue`].
    fn skinny_on(&self) -> Result<bool, ModelError> {
        switch("WEFT_SKINNY_PROLOGUE", self.skinny_prologue)
    }

    /// The same options without the graph passes `disabled` names.
    pub fn with_disabled(mut self, disabled: &[String]) -> Self {
        self.disabled = disabled.to_vec();
        self
    }
}

/// The switch `variable` of the environment where it is set (`0` or `1`; anything else
/// refused, naming it), else `default`.
fn switch(variable: &str, default: bool) -> Result<bool, ModelError> {
    match std::env::var(variable).as_deref() {
        Err(_) => Ok(default),
        Ok("0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(other) => Err(ModelError::Switch {
            variable: variable.into(),
            value: other.into(),
        }),
    }
}

/// The bytes `variable` of the environment gives in megabytes where it is set (a whole
/// number up to 1024; anything else refused, naming it), else `default` bytes.
fn megabytes(variable: &str, default: usize) -> Result<usize, ModelError> {
    match std::env::var(variable) {
        Err(_) => Ok(default),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(mb) if mb <= 1024 => Ok(mb * 1_000_000),
            _ => Err(ModelError::Setting {
                variable: variable.into(),
                value: v,
                values: "a whole number of megabytes, 0 to 1024".into(),
            }),
        },
    }
}

/// A model compiled for a target: everything but the device.
#[derive(Debug)]
pub struct CompiledModel {
    /// The graph after the passes.
    pub graph: Graph,
    /// What each pass changed, one report per pass of the pipeline, in order.
    pub passes: Vec<PassReport>,
    pub partition: Partition,
    /// One per partition group, in run order: its scheduled function and its kernels.
    pub groups: Vec<LoweredGroup>,
    pub plan: Plan,
    /// The guards on indices computed on the device, whose flags are the graph's last
    /// outputs ([`crate::guard`]).
    pub guards: Vec<IndexGuard>,
    /// The symbolic dimensions the model takes at run time, and where its inputs and
    /// outputs hold them (empty for a graph of static shapes): `crate::symbolic`.
    pub symbolic: Binding,
    /// One line per kernel that runs several groups' kernels as one, and why
    /// ([`crate::horizontal`]).
    pub horizontal: Vec<String>,
    /// The kernels whose blocks past the run's rows do nothing (none without
    /// [`CompileOptions::row_bound`]).
    pub bounded: RowBounding,
}

/// How the attention pass's report line starts where the target cannot hold the fused
/// kernel's tiles and the graph keeps attention unfused (WebGPU's 16 KiB of workgroup
/// memory): the pass's name and its note.
pub const ATTENTION_UNDONE: &str =
    "recognize attention: undone, no attention tiling fits the target's shared memory";

/// The node to keep out of `group`'s epilogue where lowering it failed with `e` because
/// fusion could not write the epilogue: its last reshape or permutation.
fn unfusable_epilogue(
    graph: &Graph,
    group: &weft_graph::partition::Group,
    e: &ModelError,
) -> Option<NodeId> {
    let ModelError::Lower { source, .. } = e else {
        return None;
    };
    let unfusable = match &**source {
        LowerError::Fusion(FusionError::NotBijective { .. }) => true,
        // The kernel library's rule-based schedules (a direct convolution, a pool) say
        // it in words: the fusion error's own.
        LowerError::Kernels(why) => why.contains("is not a bijective epilogue"),
        LowerError::Fusion(_)
        | LowerError::Template(_)
        | LowerError::Config(_)
        | LowerError::PaddedCopy(_)
        | LowerError::Refused(_) => false,
    };
    if !unfusable {
        return None;
    }
    group.epilogue.iter().rev().copied().find(|n| {
        matches!(
            graph.nodes[n.0].op.role(),
            Role::Injective(Epilogue::Reshape | Epilogue::Permute)
        )
    })
}

impl CompiledModel {
    /// Runs the pass pipeline (once, in `options`' precision, asking the lowering what
    /// fits `limits`), partitions, lowers every group for a target offering `limits`,
    /// and plans the buffers.
    pub fn compile(
        graph: &Graph,
        limits: &TargetLimits,
        options: &CompileOptions,
    ) -> Result<CompiledModel, ModelError> {
        if options.precision.dtype() == DType::F16 && !limits.f16 {
            return Err(ModelError::Precision(format!(
                "the target `{}` has no 16-bit floats (an adapter without shader-f16?): compile in f32",
                limits.name
            )));
        }
        // Symbols become value inputs and masks first: every pass and kernel after this
        // sees a graph of static shapes, built at each symbol's maximum.
        let bound;
        let (graph, symbolic) = if graph.symbols.is_empty() {
            (graph, Binding::default())
        } else {
            let (g, b) = bind(graph)?;
            bound = g;
            (&bound, b)
        };
        // Nothing is lowered or allocated for a tensor weft's i32 indices cannot reach.
        graph.check_sizes()?;
        let lowering = Lowering { limits };
        // The horizontal fusion is this crate's, not a graph pass: the graph's pipeline
        // does not know its key.
        let horizontal_on = !options.disabled.iter().any(|d| d == HORIZONTAL);
        let symbol_bound_on = !options.disabled.iter().any(|d| d == SYMBOL_BOUND);
        let graph_disabled: Vec<String> = options
            .disabled
            .iter()
            .filter(|d| *d != HORIZONTAL && *d != SYMBOL_BOUND)
            .cloned()
            .collect();
        // K-major weights for the skinny products (the K-major template's rows).
        let kmajor = options.kmajor_on()?;
        let gated = options.gated_on()?;
        let reuse = reuse_for(limits)?;
        let split_beside = match limits.usage_barriers {
            true => siblings::asked().map_err(|values| ModelError::Setting {
                variable: siblings::SWITCH.into(),
                value: std::env::var(siblings::SWITCH).unwrap_or_default(),
                values: values.into(),
            })?,
            false => Asked {
                beside: Beside::Split,
                among: Among::Siblings,
            },
        };
        // Read by the fp16 template's rule itself (`matmul_f16::Switches::from_env`), which
        // takes a value it does not know as the switch's default: checked here so that
        // such a value is refused, naming it.
        use weft_kernels::matmul_f16::{vk_split, vk_views, wide_views};
        for (variable, asked) in [
            (wide_views::SWITCH, wide_views::asked().map(|_| ())),
            (vk_views::SWITCH, vk_views::asked().map(|_| ())),
            (vk_split::SWITCH, vk_split::asked().map(|_| ())),
        ] {
            if let Err(values) = asked {
                return Err(ModelError::Setting {
                    variable: variable.into(),
                    value: std::env::var(variable).unwrap_or_default(),
                    values: values.into(),
                });
            }
        }
        let prefetch = match limits.grid_dependency {
            true => options.prefetch_lead()?,
            false => weft_kernels::gemv::Lead::Off,
        };
        let (ahead, beside) = match limits.grid_dependency {
            true => (options.l2_ahead_bytes()?, options.l2_beside_bytes()?),
            false => (0, 0),
        };
        let choices = options
            .choices
            .clone()
            .with_gemv_kmajor(kmajor)
            .with_prefetch(prefetch);
        let cx = PassContext::new(limits.clone())
            .with_precision(options.precision)
            .with_disabled(&graph_disabled)
            .with_kmajor_rows(kmajor.then_some(weft_kernels::gemv::MAX_M as usize))
            .with_target(&lowering);
        let (mut graph, passes) = optimize_in(graph, &cx)?;
        // After the passes, so that indices they fold are checked as constants.
        let guards = add_index_guards(&mut graph)?;
        // An epilogue post-scheduling fusion cannot write (a reshape merging axes the
        // anchor's index keeps apart) is cut at its last reshape or permutation, and the
        // graph partitioned again; each round cuts one more node, so it ends.
        let mut not_epilogue: HashSet<NodeId> = HashSet::new();
        // The skinny-product template's computations of `a`, which its products'
        // prologues are priced by.
        let computes = |m, n, dtype| crate::lower::gemv_computes(limits, m, n, dtype);
        let skinny = SkinnyTemplate {
            max_rows: weft_kernels::gemv::MAX_M as usize,
            computes: &computes,
        };
        let skinny_on =
            options.skinny_on()? && !options.disabled.iter().any(|d| d == SKINNY_PROLOGUE);
        let skinny = skinny_on.then_some(&skinny);
        let (partition, mut groups) = loop {
            let off = |key: &str| options.disabled.iter().any(|d| d == key);
            let pricing = Pricing {
                by_cost: !off(FUSION_COST),
                staged: !off(STAGED_PROLOGUE),
                skinny,
            };
            let mut partition = partition_keeping(&graph, &not_epilogue, pricing);
            if !options.disabled.iter().any(|d| d == NORM_FOLD) {
                // The skinny-product template is the one that computes a folded norm.
                fold_row_norms(&graph, &mut partition, weft_kernels::gemv::MAX_M as usize);
            }
            if gated {
                fold_gated(&graph, &mut partition, weft_kernels::gemv::MAX_M as usize);
            }
            // What of each anchor the rule keeps whole (`WEFT_SPLIT_BESIDE`; none unless
            // asked).
            let beside = split_beside.per_group(&graph, &partition.groups);
            let lowered = partition
                .groups
                .iter()
                .zip(beside)
                .enumerate()
                .map(|(i, (gr, beside))| {
                    lower_group(&graph, &partition.places, gr, i, limits, &choices, beside)
                        .map_err(|e| (gr, e))
                })
                .collect::<Result<Vec<_>, _>>();
            match lowered {
                Ok(groups) => break (partition, groups),
                Err((gr, e)) => match unfusable_epilogue(&graph, gr, &e) {
                    Some(cut) if not_epilogue.insert(cut) => {}
                    Some(_) | None => return Err(e),
                },
            }
        };
        let horizontal = if horizontal_on {
            crate::horizontal::fuse(&graph, &partition, &mut groups, limits)
        } else {
            Vec::new()
        };
        // Asked for (the prefill's prompt), or a symbolic model's kernels bounded by its
        // (first) symbol's value.
        let symbol_bound = !symbolic.symbols.is_empty() && symbol_bound_on;
        let bounded = match &options.row_bound {
            Some(_) | None
                if (options.row_bound.is_some() || symbol_bound)
                    && !crate::bound_rows::supported(limits) =>
            {
                RowBounding {
                    off: Some(format!(
                        "`{}` takes no barrier under a condition read from a buffer",
                        limits.name
                    )),
                    ..RowBounding::default()
                }
            }
            Some(rb) => bound_rows(&graph, &partition, &mut groups, rb),
            None if symbol_bound => {
                crate::bound_rows::bound_symbol(&graph, &partition, &mut groups, &symbolic)
            }
            None => RowBounding::default(),
        };
        // Last: the kernels are final once joined and bounded.
        crate::pdl::launch_early(&mut groups);
        crate::pdl::mark_constants(&graph, &mut groups);
        crate::ahead::bring(&graph, &partition, &mut groups, ahead);
        crate::beside::bring(&graph, &partition, &mut groups, limits, beside);
        let kernels: Vec<usize> = groups.iter().map(|g| g.kernels.kernels.len()).collect();
        let plan = Plan::reusing(
            &graph,
            &partition,
            &crate::horizontal::positions(&groups),
            &kernels,
            reuse,
        );
        Ok(CompiledModel {
            graph,
            passes,
            partition,
            groups,
            plan,
            guards,
            symbolic,
            horizontal,
            bounded,
        })
    }

    /// Kernels of one run.
    pub fn kernel_count(&self) -> usize {
        self.groups.iter().map(|g| g.kernels.kernels.len()).sum()
    }

    /// The partition with each kernel's schedule, as `weft model graph` prints it.
    pub fn show(&self) -> String {
        let schedules: Vec<String> = self.groups.iter().map(|g| g.schedule.clone()).collect();
        Shown {
            graph: &self.graph,
            partition: &self.partition,
            schedules: Some(&schedules),
        }
        .to_string()
    }

    /// Uploads the weights, allocates the planned buffers and compiles every kernel on
    /// `dev`: the executable, which runs without this value.
    pub fn load(&self, dev: &mut dyn Device) -> Result<Executable, ModelError> {
        let exe = Executable::load(&self.graph, &self.groups, &self.plan, &self.guards, dev)?;
        exe.with_symbols(&self.symbolic, dev)
    }

    /// [`CompiledModel::load`] with the graph inputs `shared` names bound to the given
    /// buffers ([`Executable::load_sharing`]).
    pub fn load_sharing(
        &self,
        dev: &mut dyn Device,
        shared: &std::collections::HashMap<String, weft_runtime::BufferId>,
    ) -> Result<Executable, ModelError> {
        let exe = Executable::load_sharing(
            &self.graph,
            &self.groups,
            &self.plan,
            &self.guards,
            shared,
            dev,
        )?;
        exe.with_symbols(&self.symbolic, dev)
    }
}

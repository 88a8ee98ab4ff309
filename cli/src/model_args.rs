//! `weft model`'s command line (clap derive), apart from the op-level commands' args.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// Whole models: `zoo:NAME` (resnet50, inception_v3, mobilenet_v2, bert_base, gpt2, llama),
/// an `.onnx` file, or a Hugging Face checkpoint directory (`config.json` and
/// `*.safetensors` of a Llama-family model).
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

/// The `weft model` subcommands.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Compile and run a model on a target: the end-to-end kernel time of the whole
    /// launch, the host's view, the kernel count, peak memory, and the error against the
    /// float64 reference where it checked.
    Run(ModelRunArgs),
    /// Print the partitioned graph: which nodes went into which kernel, and each
    /// kernel's template and config (or rule).
    Graph(ModelGraphArgs),
    /// End-to-end rows per target, and a per-kernel table of where the time goes
    /// (which graph nodes each kernel holds, its schedule, its time and share).
    Bench(ModelBenchArgs),
    /// Tune every distinct anchor (convolution or product on a matmul template) of a
    /// model on a target, all anchors at once, and save the fastest candidates as
    /// ordinary tuning records, which `weft model run` and `bench` then use.
    Tune(ModelTuneArgs),
    /// Write a model (a zoo model, or any imported graph) as an ONNX file (opset 17,
    /// weights as initializers), so that other engines run the same weights.
    Export(ModelExportArgs),
    /// Run a model in weft and in ONNX Runtime (CPU, through its Python package) on the
    /// same inputs; where they disagree beyond the dtype's tolerance, bisect to the first
    /// graph node whose output differs and print it, its op, attributes and inputs, and
    /// both sides' statistics. Exit 0: they agree; 1: they disagree; 2: bad input.
    Check(ModelCheckArgs),
    /// Greedy generation over a KV cache kept on the device (`zoo:llama`, or a Hugging
    /// Face checkpoint directory): a prefill step, then one decode step per token,
    /// replayed with only the token ids and the position written; prints the ids, the
    /// prefill time, the time to the first token, decode tokens/s, peak device memory
    /// and the bandwidth of the decode step. `--check` compares the ids with the float64
    /// evaluator's greedy generation (no cache). Exit 0: done (and equal); 1: different
    /// ids; 2: bad input (more tokens than the cache holds, ...).
    Generate(ModelGenerateArgs),
}

/// `weft model generate`.
#[derive(Debug, Args)]
pub struct ModelGenerateArgs {
    /// `zoo:llama`, a Hugging Face checkpoint directory (llama, mistral, qwen2), or an
    /// ONNX decoder exported with past keys and values (optimum's `past_key_values.*`
    /// inputs and `present.*` outputs).
    pub model: String,
    /// A target string (`weft targets` lists what this machine has).
    #[arg(long)]
    pub target: String,
    /// Element type: f32, or f16 with f32 accumulation.
    #[arg(long, value_enum, default_value_t = ModelDType::F32)]
    pub dtype: ModelDType,
    /// Prompt length: seeded random ids (default 8).
    #[arg(long, conflicts_with_all = ["prompt_ids", "prompt"], value_parser = clap::value_parser!(u32).range(1..))]
    pub prompt_tokens: Option<u32>,
    /// The prompt's ids, comma-separated (every sequence of the batch takes them).
    #[arg(long, value_delimiter = ',', conflicts_with = "prompt")]
    pub prompt_ids: Option<Vec<i64>>,
    /// The prompt as text, encoded by the checkpoint's `tokenizer.json` (every sequence
    /// of the batch takes it); the generated ids are decoded back to text.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Tokens to generate per sequence (the cache holds prompt + new − 1 positions).
    #[arg(long, default_value_t = 16)]
    pub new_tokens: u32,
    /// The longest prompt the prefill is compiled for: one compile takes every prompt
    /// of 1..=N tokens (default: the prompt's length rounded up to a power of two, at
    /// least 16, at most the cache's positions). The cache holds at least N positions.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_prompt: Option<u32>,
    /// Sequences generated at once.
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Compare the ids with the float64 evaluator's greedy generation (small models).
    #[arg(long)]
    pub check: bool,
    /// Timed runs of each step.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Also print the decode step's per-kernel table (each kernel timed alone, as
    /// `weft model bench` prints a model's): where one token's time goes.
    #[arg(long)]
    pub kernels: bool,
    /// Seed of `zoo:llama`'s weights and of a random prompt.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Graph passes (and partition rules: `fusion-cost`, `staged-prologue`, `skinny-prologue`,
    /// `norm-fold`) to leave out of
    /// both steps' compiles, by key, comma-separated, as `weft model run` takes them:
    /// what one is worth to a decode step, measured in one build.
    #[arg(long = "disable-pass", value_delimiter = ',')]
    pub disable_pass: Vec<String>,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

/// The element type a model runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelDType {
    F32,
    F16,
}

/// Which model, at which batch and resolution.
#[derive(Clone, Debug, Args)]
pub struct ModelSource {
    /// `zoo:NAME`, a path to an `.onnx` file, or a Hugging Face checkpoint directory
    /// (`config.json` and `model.safetensors` or its shards; llama, mistral, qwen2).
    pub model: String,
    /// Batch size (zoo models; an ONNX model's symbolic batch dimension).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
    /// Input height and width of a zoo model (default: the model's own, 224 or 299).
    #[arg(long)]
    pub resolution: Option<u32>,
    /// Tokens per sequence of a zoo transformer (`zoo:bert_base`, `zoo:gpt2`, `zoo:llama`)
    /// or a checkpoint (default 128, at most the model's positions).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub seq: Option<u32>,
    /// Element type: f32 (no TF32), or f16 with f32 accumulation.
    #[arg(long, value_enum, default_value_t = ModelDType::F32)]
    pub dtype: ModelDType,
    /// Graph passes to leave out, by key, comma-separated (`attention`, `attention-groups` (an attention over
    /// keys and values repeated from fewer KV heads reads them repeated, its query heads
    /// not grouped), `siblings`,
    /// `activations`, `layer-norms`, `rms-norms`, `batch-norms`, `constants`,
    /// `identities`, `dead`), `fusion-cost` (the partition's cost rule: every
    /// prologue in its anchor's loads), `staged-prologue` (convolutions' and products'
    /// prologues priced by the tiled rule, `W·R` under a bound, instead of none that
    /// computes kept in their loads), `skinny-prologue` (a skinny product's prologue
    /// priced by the tiled templates' rule, not by the weight bytes it streams),
    /// `horizontal` (small independent kernels launched as one), `norm-fold` (every
    /// RMS norm a kernel of its own, none computed in the skinny product reading it) and
    /// `symbol-bound` (a symbolic model's kernels run whole at every length, none
    /// skipping its blocks past the run's length): what one pass is worth, measured
    /// (run, graph and bench).
    #[arg(long = "disable-pass", value_delimiter = ',')]
    pub disable_pass: Vec<String>,
    /// An ONNX file's symbolic dimension (`dim_param`) sized: `NAME=SIZE` fixes it,
    /// `NAME=MIN..MAX` makes it a symbol compiled once at MAX and run at any length of
    /// the range (`weft model run --dim-value NAME=N`); repeat for several.
    #[arg(long = "dim", value_name = "NAME=SIZE|NAME=MIN..MAX")]
    pub dim: Vec<String>,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

/// `zoo:llama`'s configuration (refused for other models): each size left out keeps
/// TinyLlama-1.1B's (22 layers, hidden 2048, 32 heads, 4 KV heads, intermediate 5632,
/// vocabulary 32000, 2048 positions, θ 10000, ε 1e-5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Args)]
pub struct LlamaArgs {
    /// Decoder layers (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub layers: Option<u32>,
    /// Hidden width (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub hidden: Option<u32>,
    /// Query heads (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub heads: Option<u32>,
    /// Key/value heads, dividing the query heads (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub kv_heads: Option<u32>,
    /// Each head's width (`zoo:llama`; default hidden / heads).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub head_dim: Option<u32>,
    /// The gated MLP's width (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub intermediate: Option<u32>,
    /// Vocabulary size (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub vocab: Option<u32>,
    /// The longest sequence (`zoo:llama`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_positions: Option<u32>,
    /// The rotary embedding's base θ (`zoo:llama`).
    #[arg(long)]
    pub rope_theta: Option<f64>,
    /// The RMS norms' ε (`zoo:llama`).
    #[arg(long)]
    pub rms_norm_eps: Option<f64>,
    /// `lm_head` is the embedding, transposed (`zoo:llama`).
    #[arg(long)]
    pub tie_word_embeddings: bool,
}

impl LlamaArgs {
    /// The options given, as their flags (empty where none was).
    pub fn given(&self) -> Vec<&'static str> {
        let sizes = [
            ("--layers", self.layers),
            ("--hidden", self.hidden),
            ("--heads", self.heads),
            ("--kv-heads", self.kv_heads),
            ("--head-dim", self.head_dim),
            ("--intermediate", self.intermediate),
            ("--vocab", self.vocab),
            ("--max-positions", self.max_positions),
        ];
        let mut given: Vec<&'static str> = sizes
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(f, _)| *f)
            .collect();
        if self.rope_theta.is_some() {
            given.push("--rope-theta");
        }
        if self.rms_norm_eps.is_some() {
            given.push("--rms-norm-eps");
        }
        if self.tie_word_embeddings {
            given.push("--tie-word-embeddings");
        }
        given
    }
}

/// `weft model run`.
#[derive(Clone, Debug, Args)]
pub struct ModelRunArgs {
    #[command(flatten)]
    pub source: ModelSource,
    /// A target string (`weft targets` lists what this machine has). Default: the best
    /// this machine has — cuda, else a GPU through wgpu, else a CPU driver (llvmpipe,
    /// lavapipe), else the interpreter; on a CPU a zoo model runs small unless its
    /// `--resolution` or `--seq` is given.
    #[arg(long)]
    pub target: Option<String>,
    /// Run on the `.npy` inputs in DIR: one `NAME.npy` per graph input, NAME the
    /// tensor's name with every character outside `[A-Za-z0-9._-]` replaced by `_`.
    #[arg(long, value_name = "DIR")]
    pub inputs: Option<PathBuf>,
    /// Write every graph input and output as `NAME.npy` into DIR.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Tuning records to use (default: the file `weft tune` saves to; `weft model
    /// tune` writes them).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Timed runs of the whole model.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Skip the float64 reference check (it is skipped anyway for models too large to
    /// evaluate on the host in seconds).
    #[arg(long)]
    pub no_check: bool,
    /// Run a model with symbolic dimensions (`--dim NAME=MIN..MAX`) at these lengths:
    /// compiled once, run at each (`NAME=N` or `NAME=N1,N2,...`; every symbol named,
    /// with as many lengths each, or one), each run checked against the float64
    /// reference of the file imported at that length.
    #[arg(long = "dim-value", value_name = "NAME=N[,N...]")]
    pub dim_value: Vec<String>,
    /// With `--dim-value`, a model of one symbolic dimension is compiled once per bucket
    /// of its range and each run takes the bucket holding its length: `auto` (buckets
    /// ending at 16, 64, 256, … and the range's maximum), `none` (one compile at the
    /// maximum) or the buckets' last lengths, `N1,N2,...`.
    #[arg(long, value_name = "auto|none|N1,N2,...", default_value = "auto")]
    pub buckets: String,
}

/// `weft model graph`.
#[derive(Debug, Args)]
pub struct ModelGraphArgs {
    #[command(flatten)]
    pub source: ModelSource,
    /// The target whose limits the kernels are scheduled for (default `cuda`: printing
    /// needs no GPU).
    #[arg(long, default_value = "cuda")]
    pub target: String,
    /// Also print the graph after the passes, one node a line.
    #[arg(long)]
    pub nodes: bool,
    /// Also write each kernel group's source, as the target compiles it, into this
    /// folder: `NNN-NAME.cu` (`.wgsl`, `.metal`, `.hip`; the lowered IR for `cpu`), in
    /// run order.
    #[arg(long, value_name = "DIR")]
    pub emit: Option<std::path::PathBuf>,
}

/// `weft model bench`.
#[derive(Debug, Args)]
pub struct ModelBenchArgs {
    #[command(flatten)]
    pub source: ModelSource,
    /// Target strings, comma-separated (`cuda,vulkan`).
    #[arg(long, default_value = "cuda")]
    pub targets: String,
    /// Timed runs of the whole model (and of each kernel for the table).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Leave out the per-kernel table.
    #[arg(long)]
    pub no_kernels: bool,
    /// Tuning records to use (default: the file `weft tune` saves to).
    #[arg(long)]
    pub records: Option<PathBuf>,
}

/// `weft model tune`.
#[derive(Debug, Args)]
pub struct ModelTuneArgs {
    #[command(flatten)]
    pub source: ModelSource,
    /// The target to tune for.
    #[arg(long)]
    pub target: String,
    /// The records file to add to (default: the file `weft tune` saves to).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Candidates per anchor, the stated rule's own included: one compile of the whole
    /// model per candidate.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub trials: u32,
    /// Timed runs of each kernel per candidate.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Seed of the random inputs the candidates are checked on.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// `weft model export`.
#[derive(Debug, Args)]
pub struct ModelExportArgs {
    #[command(flatten)]
    pub source: ModelSource,
    /// The `.onnx` file to write (written whole: a temporary file renamed into place).
    pub out: PathBuf,
}

/// `weft model check`.
#[derive(Clone, Debug, Args)]
pub struct ModelCheckArgs {
    #[command(flatten)]
    pub source: ModelSource,
    /// A target string (`weft targets` lists what this machine has). Default: the best
    /// this machine has, as for `weft model run`.
    #[arg(long)]
    pub target: Option<String>,
    /// Run on the `.npy` inputs in DIR (one `NAME.npy` per graph input, as `weft model
    /// run --inputs` reads them); default: seeded random inputs.
    #[arg(long, value_name = "DIR")]
    pub inputs: Option<PathBuf>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The outputs the framework gave on the same inputs (PyTorch's, say): one `NAME.npy`
    /// per graph output. Says whether the export agrees with the framework at all (ONNX
    /// Runtime against it) and whether weft does.
    #[arg(long, value_name = "DIR")]
    pub expect: Option<PathBuf>,
    /// The file ONNX Runtime runs, where it is not MODEL: the original of an edited or
    /// re-exported model, with the same inputs, outputs and tensor names.
    #[arg(long, value_name = "FILE")]
    pub ort_model: Option<PathBuf>,
    /// Tensors stored and compared per compile while bisecting: the range of nodes left
    /// shrinks by this plus one each compile (1: plain bisection, one tensor a compile).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub probes: u32,
    /// The Python that runs ONNX Runtime (with the `onnxruntime`, `onnx` and `numpy`
    /// packages).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Tuning records to use (default: the file `weft tune` saves to).
    #[arg(long)]
    pub records: Option<PathBuf>,
}

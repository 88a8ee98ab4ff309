//! The command line, as clap derive structs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// weft: a tensor-program compiler. One schedule, emitted as CUDA C, WGSL and Metal, run
/// on NVIDIA GPUs through CUDA and on any GPU (or a CPU Vulkan driver) through wgpu.
///
/// Exit status: 0 when everything ran and matched the float64 reference; 1 when a result
/// was wrong (error above tolerance, an unwritten element) or a kernel failed on its
/// device; 2 on bad input, an unavailable target, or a kernel a target refuses.
#[derive(Debug, Parser)]
// The version names the commit too (`weft 0.1.0 (1a2b3c4d5e6f)`): the timing scripts
// record `weft --version` as the provenance of their figures.
#[command(
    name = "weft",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WEFT_COMMIT"), ")"),
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every target with whether this machine can run it, its device, or why not.
    Targets,
    /// Every op with its shape parameters, schedules and benchmark sizes.
    Ops,
    /// Print the scheduled function (or its lowered kernels).
    Ir(IrArgs),
    /// Print the source a target compiles (CUDA C, HIP, WGSL or MSL); needs no device.
    Emit(EmitArgs),
    /// Compile offline for a GPU this machine lacks and print each kernel's resources
    /// (registers, spills, shared memory, occupancy): `rocm` targets, through hipcc.
    Compile(CompileArgs),
    /// Run on random inputs, check against the float64 reference, print the median kernel
    /// time, the host's launch overhead and the error.
    Run(RunArgs),
    /// Time every op x schedule on every chosen target, with throughput, ratios between
    /// targets and, on CUDA, reference rows (cuBLAS, cuDNN, a device-to-device copy) timed
    /// the same way in the same process.
    Bench(BenchArgs),
    /// Tune an op's template for a shape on a target: build every config of its schedule
    /// space, compile them in parallel, check and time each by kernel time, print the
    /// best five and keep the best in the tuning records (which `run` and `bench` use).
    Tune(TuneArgs),
    /// Over a set of shapes, time the config the template's rule picks with no record
    /// beside the best a tuning at each shape finds, fixed configs and the vendor library
    /// (the figure of defaults and of input-size sensitivity; `weft report --sweeps`
    /// draws it).
    Sweep(SweepArgs),
    /// Benchmark (or read earlier benchmark JSON), compile every op x schedule for AMD
    /// and Apple offline, and rewrite the results page, its charts (PNG and SVG) and
    /// `report.json`: the figures in `docs/` come from this command.
    Report(ReportArgs),
    /// Whole models (`zoo:resnet50`, `zoo:inception_v3`, `zoo:mobilenet_v2`,
    /// `zoo:bert_base`, `zoo:gpt2`, or an `.onnx` file): `run`, `graph`.
    Model(crate::model_args::ModelArgs),
}

/// Which op, schedule and shape.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// The op (`weft ops` lists them).
    #[arg(long)]
    pub op: String,
    /// A schedule of the op; its best when not given.
    #[arg(long)]
    pub schedule: Option<String>,
    /// Shape parameters by name, e.g. `m=1024,n=1024,k=1024`; others keep the op's
    /// default (seed) size.
    #[arg(long)]
    pub shape: Option<String>,
    /// A template's config, `name=value,...` (`weft tune --list` prints them); the
    /// parameters given override the template's default for the target.
    #[arg(long)]
    pub config: Option<String>,
}

/// `weft ir`.
#[derive(Debug, Args)]
pub struct IrArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Print the lowered kernels instead of the scheduled function.
    #[arg(long)]
    pub lowered: bool,
    /// Print the schedule's trace (the primitives applied) before the IR.
    #[arg(long)]
    pub trace: bool,
}

/// `weft emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// A target string: `cuda` (CUDA C); `rocm` (HIP); `vulkan`, `dx12`, `gl`, `wgpu`, `webgpu` (WGSL);
    /// `metal` (MSL); `cpu` (the lowered IR the interpreter runs). Kernels are checked
    /// against the target's offline limits: CUDA's (99 KiB shared, 1024 threads; with
    /// `-arch=sm_XX` that architecture's opt-in shared memory, 227 KiB for sm_90), WebGPU's
    /// defaults for the WGSL targets (16 KiB, 256 invocations), Apple's for Metal (32 KiB,
    /// 1024).
    #[arg(long)]
    pub target: String,
}

/// `weft compile`.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The op; with `--all`, every op when not given.
    #[arg(long, required_unless_present = "all")]
    pub op: Option<String>,
    /// A schedule of the op; its best when not given (with `--all`: every schedule).
    #[arg(long)]
    pub schedule: Option<String>,
    /// Shape parameters by name (`m=256,k=64`); default: the op's seed size.
    #[arg(long)]
    pub shape: Option<String>,
    /// A template's config, `name=value,...`; default: the template's for the target.
    #[arg(long)]
    pub config: Option<String>,
    /// A target that compiles offline: `rocm` (gfx90a), `rocm -arch=gfx1100`, ...
    #[arg(long)]
    pub target: String,
    /// Compile every schedule of every op (or of `--op`) at its seed size.
    #[arg(long)]
    pub all: bool,
}

/// `weft run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The op; with `--all`, every op when not given.
    #[arg(long, required_unless_present = "all")]
    pub op: Option<String>,
    /// A schedule of the op; its best when not given (with `--all`: every schedule).
    #[arg(long)]
    pub schedule: Option<String>,
    /// Shape parameters by name (`m=256,k=64`). Default: the op's first small shape on
    /// `cpu` and CPU adapters (llvmpipe), its seed size elsewhere; with `--all`, its small
    /// shapes.
    #[arg(long)]
    pub shape: Option<String>,
    /// A target string (`weft targets` lists what this machine has).
    #[arg(long)]
    pub target: String,
    /// Timed runs (default: up to 20, fewer when one run is slow).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    /// Run every schedule of every op (or of `--op`) at the op's small shapes.
    #[arg(long)]
    pub all: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// wgpu targets: keep naga's runtime checks in every shader. By default a kernel
    /// runs without them only where weft's bounds prover shows every access in bounds.
    #[arg(long)]
    pub checked_shaders: bool,
    /// A template's config, `name=value,...`; the parameters given override the
    /// template's default for the target. Without it: a tuning record for this shape and
    /// device, else the config the template's rule picks for the shape and target (or
    /// its default, for a template without a rule).
    #[arg(long)]
    pub config: Option<String>,
    /// Tuning records to use (default: `$WEFT_RECORDS`, else
    /// `$XDG_CACHE_HOME/weft/tuning-records.json`, else `~/.cache/weft/...`).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Write the inputs and the output as `.npy` files into DIR (`A.npy`, `B.npy`,
    /// `C.npy`, ... named after the op's tensors; float16 tensors as float16).
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    pub save: Option<PathBuf>,
    /// Run on the `.npy` inputs in DIR (one per input tensor, as `--save` writes them)
    /// instead of random ones; dtypes and shapes must match the op at `--shape`.
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    pub inputs: Option<PathBuf>,
}

/// Which shapes `weft bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SizeClass {
    /// The op's small shapes (fit for the interpreter and CPU drivers).
    Small,
    /// The op's benchmark shapes (the seeds' sizes).
    Bench,
}

/// `weft bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Target strings, comma-separated; the first is the baseline of the ratio column.
    /// Default: every GPU target (cuda first, then vulkan/metal/dx12 on a GPU adapter),
    /// else the best wgpu adapter, else the CPU interpreter.
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<String>,
    /// Ops, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Shapes to measure. Default: `bench` on GPUs, `small` on `cpu` and CPU adapters.
    #[arg(long, value_enum)]
    pub size: Option<SizeClass>,
    /// Timed runs per row (default: up to 20, fewer when one run is slow).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    #[command(flatten)]
    pub checks: ShaderCheckArgs,
    /// Tuning records for template schedules (default: as for `weft run`).
    #[arg(long)]
    pub records: Option<PathBuf>,
}

/// `weft report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The folder for `results.md`, `charts/` and `report.json`.
    #[arg(long, default_value = "docs")]
    pub out: PathBuf,
    /// Earlier runs to put on the page: files written by `weft bench --json` or a
    /// report's `report.json` (comma-separated or repeated).
    #[arg(long, value_delimiter = ',')]
    pub from: Vec<PathBuf>,
    /// Run no benchmark here: only the `--from` files and the offline compiles.
    #[arg(long)]
    pub no_run: bool,
    /// Skip the offline compiles (AMD through hipcc, the MSL check).
    #[arg(long)]
    pub no_compile: bool,
    /// The benchmark run here (as `weft bench` takes it).
    #[command(flatten)]
    pub bench: BenchArgs,
    /// Whole models to time end to end (`zoo:resnet50,zoo:resnet50@8`: `@N` is the
    /// batch), each on every `--model-targets` target in every `--model-dtypes` dtype.
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Targets the models run on.
    #[arg(long, value_delimiter = ',', default_value = "cuda,vulkan")]
    pub model_targets: Vec<String>,
    /// Element types the models run in.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "f32,f16")]
    pub model_dtypes: Vec<crate::model_args::ModelDType>,
    /// Tuning records the models compile with (default: the file `weft tune` saves to).
    #[arg(long)]
    pub model_records: Option<PathBuf>,
    /// Input height and width of the zoo models (default: each model's own).
    #[arg(long)]
    pub model_resolution: Option<u32>,
    /// Sequence lengths the zoo transformers run at, comma-separated (each a row of its
    /// own; default 128); other models ignore it.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub model_seq: Vec<u32>,
    /// Timed runs of each model.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub model_iters: u32,
    /// Shape sweeps to put on the page: files written by `weft sweep --json`
    /// (comma-separated or repeated; the parts of one sweep are joined).
    #[arg(long, value_delimiter = ',')]
    pub sweeps: Vec<PathBuf>,
    /// Baselines measured in the same call: JSON lines from `scripts/torch_models.py`
    /// (PyTorch eager, one CUDA graph, torch.compile: beside weft's model rows) and
    /// `scripts/torch_attention.py` (SDPA: beside weft's `attention-f16` rows), in one
    /// file or concatenated.
    #[arg(long)]
    pub baselines: Option<PathBuf>,
    /// The corpus against PyTorch: JSON written by `scripts/speed.py --json`, one file per
    /// device call (comma-separated or repeated; a later run's figure for the same model,
    /// batch and column replaces an earlier one's).
    #[arg(long, value_delimiter = ',')]
    pub corpus: Vec<PathBuf>,
    /// Generation against PyTorch: JSON written by `scripts/generate_check.py --speed`
    /// (comma-separated or repeated).
    #[arg(long, value_delimiter = ',')]
    pub generation: Vec<PathBuf>,
}

/// `weft sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The op: any op with a template (`matmul`, `matmul-f16`, `gemv`, `gemv-f16`,
    /// `gemv-kmajor`, `gemv-kmajor-f16`, `conv2d-f16`, `attention-f16`, ...); cuBLAS is timed beside the products.
    #[arg(long, default_value = "matmul")]
    pub op: String,
    /// A target string (`cuda`, `vulkan`, `cpu`, ...).
    #[arg(long)]
    pub target: String,
    /// The shapes: `mixed` (60 products: squares, primes, small M, long K, BERT/ViT/GPT-2
    /// projections, ResNet-50's convolutions as GEMMs), `cubes:FROM:TO[:STEP]` (m = n =
    /// k), both for the products only, `resnet50` (ResNet-50's distinct convolutions at
    /// batch 1, for the convolution ops), `llama-decode` (TinyLlama's decode products at
    /// batch 1 and 8, for the products and the skinny products; GB/s printed for the
    /// latter; for `attention-f16`, the decode step's attention over caches of 191 to
    /// 2048 positions, the split-KV rule beside the one-kernel rule), `depthwise` (ConvNeXt-tiny's and EfficientNet-B0's depthwise convolutions
    /// at batch 1 and 8, for `depthwise-conv2d` and `depthwise-conv2d-f16`), or shapes
    /// separated by `;`.
    #[arg(long)]
    pub shapes: String,
    /// Measure only part I of N of the shapes (`1/2`): a long sweep as several runs,
    /// which `weft report --sweeps` joins.
    #[arg(long)]
    pub part: Option<String>,
    /// Configs of the space tuning times at each shape, spread over it (besides the
    /// rule's and the fixed configs); 0: no tuning.
    #[arg(long, default_value_t = 64)]
    pub sample: u32,
    /// Device time to spend timing one config, in ms.
    #[arg(long, default_value_t = 20)]
    pub budget_ms: u32,
    /// Configs timed at every shape as they are, separated by `;`: `default` (the
    /// template's fixed default), a whole config, or `NAME:CONFIG` to name it on the page.
    #[arg(long, value_delimiter = ';')]
    pub fixed: Vec<String>,
    /// Tune only over the space's configs with these parameter values (`bk=16,mb=0`):
    /// a sub-space, such as the tiles a rule chooses among.
    #[arg(long)]
    pub only: Option<String>,
    /// Write every config timed at each shape into the JSON, not only the best: the data
    /// a rule is fitted and checked on.
    #[arg(long)]
    pub trials: bool,
    /// Write the sweep as JSON (rewritten whole after every shape).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `weft tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The op (its template is tuned).
    #[arg(long)]
    pub op: String,
    /// Shape parameters by name (`m=2039,n=2039,k=2039`); default: the op's seed size on
    /// GPUs, its first small shape on `cpu` and CPU adapters.
    #[arg(long)]
    pub shape: Option<String>,
    /// A target string (`cuda`, `vulkan`, `webgpu`, `cpu`, ...).
    #[arg(long)]
    pub target: String,
    /// Print the schedule space for the target and stop (needs no shape; uses the open
    /// device's limits where the target is available, its offline profile otherwise).
    #[arg(long)]
    pub list: bool,
    /// Time at most N configs, spread over the space. Default: the whole space on GPUs,
    /// 16 on `cpu` and CPU adapters (the interpreter and llvmpipe are slow).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub sample: Option<u32>,
    /// The records file to update (default: as for `weft run`).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Do not write a record.
    #[arg(long)]
    pub no_save: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub checks: ShaderCheckArgs,
}

/// Runtime checks in wgpu shaders, for the commands that time kernels.
#[derive(Debug, Args)]
pub struct ShaderCheckArgs {
    /// wgpu targets: keep naga's runtime checks in every shader. By default a kernel runs
    /// without them only where weft's bounds prover shows every access in bounds.
    #[arg(long, conflicts_with = "unchecked_shaders")]
    pub checked_shaders: bool,
    /// wgpu targets: drop naga's runtime checks from every shader, proven or not (to
    /// measure what the checks cost; an out-of-bounds access is then undefined behaviour).
    #[arg(long)]
    pub unchecked_shaders: bool,
}

impl ShaderCheckArgs {
    /// The mode the flags ask for.
    pub fn mode(&self) -> weft_runtime::ShaderChecks {
        if self.checked_shaders {
            weft_runtime::ShaderChecks::Checked
        } else if self.unchecked_shaders {
            weft_runtime::ShaderChecks::Unchecked
        } else {
            weft_runtime::ShaderChecks::Proven
        }
    }
}

//! What `weft model` works on: a model named on the command line (`zoo:NAME`, a path to
//! an `.onnx` file, or a Hugging Face checkpoint directory) as a graph, and its tensors
//! as `.npy` files named after them.

use std::path::{Path, PathBuf};

use ndarray::ArrayD;
use thiserror::Error;
use weft_graph::Graph;
use weft_ir::dtype::DType;

use crate::model_args::LlamaArgs;
use crate::npy;
use weft_graph::zoo::llama::LlamaConfig;
use weft_graph::zoo::{self, ZooOptions};

/// Why a model could not be read, or its tensors read or written.
#[derive(Debug, Error)]
pub enum ModelFileError {
    #[error("{0}")]
    Zoo(String),
    #[error("`{}`: {reason}", path.display())]
    Onnx { path: PathBuf, reason: String },
    #[error(
        "`{0}` is neither `zoo:NAME` (zoo models: {1}), a path to an .onnx file, nor a checkpoint directory (config.json and *.safetensors)"
    )]
    Unknown(String, String),
    #[error("`{}` not found: --inputs expects one .npy file per graph input ({expected})", path.display())]
    MissingInput { path: PathBuf, expected: String },
    #[error("`{}`: {reason}", path.display())]
    Npy { path: PathBuf, reason: String },
    /// A tensor too large for weft, and the options that sized the model.
    #[error("`{model}`: {reason}{options}")]
    TooLarge {
        model: String,
        reason: Box<weft_graph::GraphError>,
        /// `; at --batch N, …`, or nothing where the model runs as its file says.
        options: String,
    },
    /// A tensor's `.npy` file: its dtype, shape or bytes (the message names the file).
    #[error(transparent)]
    Tensor(Box<crate::npy::NpyError>),
    /// A Hugging Face checkpoint directory (the message names the file and tensor).
    #[error(transparent)]
    Checkpoint(Box<crate::checkpoint::CheckpointError>),
    /// A checkpoint's `tokenizer.json` (the message names the file).
    #[error(transparent)]
    Tokenizer(Box<crate::tokenizer::TokenizerError>),
    /// A `--dim` or `--dim-value` that does not parse or does not apply.
    #[error("{0}")]
    Dim(String),
}

/// What `--dim NAME=...` gives a symbolic dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// One size: the dimension is static.
    Size(usize),
    /// A range: a symbol compiled at its end.
    Range(std::ops::RangeInclusive<usize>),
}

/// `NAME=SIZE` or `NAME=MIN..MAX` (sizes from 1).
pub fn parse_dim(text: &str) -> Result<(String, Dim), ModelFileError> {
    let bad = |why: &str| {
        ModelFileError::Dim(format!(
            "--dim `{text}`: {why}; write NAME=SIZE or NAME=MIN..MAX (sizes from 1)"
        ))
    };
    let (name, spec) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
    if name.is_empty() {
        return Err(bad("no name"));
    }
    let size = |v: &str| -> Result<usize, ModelFileError> {
        match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(bad(&format!("`{v}` is not a size"))),
        }
    };
    let dim = match spec.split_once("..") {
        Some((lo, hi)) => {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(bad("the range is empty"));
            }
            Dim::Range(lo..=hi)
        }
        None => Dim::Size(size(spec)?),
    };
    Ok((name.to_string(), dim))
}

/// How a model is instantiated: batch, resolution and sequence length (zoo models; an
/// ONNX model's symbolic batch dimension).
#[derive(Clone, Copy, Debug)]
pub struct Instance {
    pub batch: usize,
    pub resolution: Option<usize>,
    /// Tokens per sequence (zoo transformers, `zoo:llama`, checkpoints).
    pub seq: Option<usize>,
    /// `zoo:llama`'s configuration (refused for other models).
    pub llama: LlamaArgs,
}

/// The graph of `model`: `zoo:NAME` built at `instance`, or an ONNX file imported with
/// its batch dimension bound.
pub fn load(model: &str, instance: Instance, dims: &[String]) -> Result<Graph, ModelFileError> {
    let mut instance = instance;
    let mut seq_symbol = None;
    if let Some(name) = model.strip_prefix("zoo:")
        && !dims.is_empty()
    {
        // BERT's and GPT-2's sequence: `--dim seq=SIZE` is `--seq`, `--dim seq=MIN..MAX`
        // builds at MAX with the input ids' axis 1 a symbol.
        if !zoo::takes_tokens(name) || name == "llama" || instance.seq.is_some() {
            return Err(ModelFileError::Dim(format!(
                "--dim applies to ONNX files and to zoo:bert_base and zoo:gpt2 (--dim seq=MIN..MAX, without --seq), not `{model}`{}",
                if instance.seq.is_some() {
                    " with --seq"
                } else {
                    ""
                }
            )));
        }
        for d in dims {
            match parse_dim(d)? {
                (n, Dim::Size(s)) if n == "seq" => instance.seq = Some(s),
                (n, Dim::Range(r)) if n == "seq" => {
                    instance.seq = Some(*r.end());
                    seq_symbol = Some(r);
                }
                (n, _) => {
                    return Err(ModelFileError::Dim(format!(
                        "--dim `{d}`: `{model}` has one symbolic dimension, `seq`, not `{n}`"
                    )));
                }
            }
        }
    } else if !dims.is_empty() && crate::checkpoint::is_checkpoint(Path::new(model)) {
        return Err(ModelFileError::Dim(format!(
            "--dim applies to ONNX files and zoo transformers; `{model}` takes --seq and --batch"
        )));
    }
    let mut g = build(model, instance, dims)?;
    if let Some(r) = seq_symbol {
        let ids = g.inputs[0];
        g.symbols.push(weft_graph::Symbol {
            name: "seq".into(),
            min: *r.start(),
            max: *r.end(),
            dims: vec![(ids, 1)],
            rows: Vec::new(),
        });
    }
    let leading = |&t: &weft_graph::TensorId| g.tensor(t).shape.first() == Some(&instance.batch);
    if instance.batch != 1 && !model.starts_with("zoo:") && !g.inputs.iter().any(leading) {
        eprintln!(
            "weft: warning: --batch {} does not apply to `{model}`: no input has a symbolic leading dimension; it runs at the sizes the file states",
            instance.batch
        );
    }
    g.check_sizes().map_err(|reason| ModelFileError::TooLarge {
        model: model.to_string(),
        reason: Box::new(reason),
        options: instance.sized_by(),
    })?;
    Ok(g)
}

impl Instance {
    /// The size options given (`--batch` past 1, `--resolution`, `--seq`) as the tail of a
    /// refusal that they may have caused; empty where none was.
    pub(crate) fn sized_by(&self) -> String {
        let mut given = Vec::new();
        if self.batch != 1 {
            given.push(format!("--batch {}", self.batch));
        }
        if let Some(r) = self.resolution {
            given.push(format!("--resolution {r}"));
        }
        if let Some(s) = self.seq {
            given.push(format!("--seq {s}"));
        }
        if given.is_empty() {
            return String::new();
        }
        format!(
            " (at {}: a smaller value makes smaller tensors)",
            given.join(" ")
        )
    }
}

/// The graph of `model` as built or imported, sizes not yet checked.
fn build(model: &str, instance: Instance, dims: &[String]) -> Result<Graph, ModelFileError> {
    let llama_given = instance.llama.given();
    if model != "zoo:llama"
        && let Some(flag) = llama_given.first()
    {
        return Err(ModelFileError::Zoo(format!(
            "{flag} applies to `zoo:llama` only, not `{model}`{}",
            if model.starts_with("zoo:") {
                ""
            } else {
                " (a checkpoint's config.json gives its sizes)"
            }
        )));
    }
    if let Some(name) = model.strip_prefix("zoo:") {
        // A size option the model has no use for is refused, not silently dropped.
        let transformer = zoo::takes_tokens(name);
        if transformer && instance.resolution.is_some() {
            return Err(ModelFileError::Zoo(format!(
                "--resolution does not apply to `{model}`, a transformer: it takes --seq"
            )));
        }
        if !transformer && instance.seq.is_some() && zoo::NAMES.contains(&name) {
            return Err(ModelFileError::Zoo(format!(
                "--seq does not apply to `{model}`, which is no transformer: it takes --resolution"
            )));
        }
        let mut opts =
            ZooOptions::for_model(name).map_err(|e| ModelFileError::Zoo(e.to_string()))?;
        opts.batch = instance.batch;
        if let Some(r) = instance.resolution {
            opts.resolution = r;
        }
        if let Some(s) = instance.seq {
            opts.seq = s;
        }
        if name == "llama" {
            let cfg = llama_config(&instance.llama)?;
            return zoo::build_llama(&cfg, &opts).map_err(|e| ModelFileError::Zoo(e.to_string()));
        }
        return zoo::build(name, &opts).map_err(|e| ModelFileError::Zoo(e.to_string()));
    }
    let path = Path::new(model);
    if crate::checkpoint::is_checkpoint(path) {
        if instance.resolution.is_some() {
            return Err(ModelFileError::Zoo(format!(
                "--resolution does not apply to `{model}`, a language model: it takes --seq"
            )));
        }
        return crate::checkpoint::load(path, instance.batch, instance.seq)
            .map_err(|e| ModelFileError::Checkpoint(Box::new(e)));
    }
    // A name that is there but cannot be followed (a symbolic link to nothing, a loop)
    // is the file the user meant: its import says why it cannot be read.
    if path.exists() || std::fs::symlink_metadata(path).is_ok() {
        for (flag, given) in [
            ("--resolution", instance.resolution),
            ("--seq", instance.seq),
        ] {
            if given.is_some() {
                return Err(ModelFileError::Onnx {
                    path: path.to_path_buf(),
                    reason: format!(
                        "{flag} applies to zoo models only: an ONNX file runs at the shapes it \
                         states (--batch sizes a symbolic leading dimension)"
                    ),
                });
            }
        }
        let mut opts = weft_onnx::ImportOptions {
            batch: Some(instance.batch),
            ..Default::default()
        };
        for d in dims {
            match parse_dim(d)? {
                (name, Dim::Size(n)) => opts.bindings.insert(name, n).map(drop),
                (name, Dim::Range(r)) => opts.symbols.insert(name, r).map(drop),
            };
        }
        return weft_onnx::load(path, &opts).map_err(|e| ModelFileError::Onnx {
            path: path.to_path_buf(),
            reason: match e {
                // The library's words name its API; the command line sizes only the
                // leading dimension.
                weft_onnx::ImportError::UnboundDim { input, index, dim } => format!(
                    "input `{input}` dimension {index} is the symbol `{dim}`, which the file gives no size: \
                     size it with --dim {dim}=SIZE, or --dim {dim}=MIN..MAX to compile it once for a \
                     range of sizes (--batch sizes a symbolic leading dimension)"
                ),
                other => other.to_string(),
            },
        });
    }
    Err(ModelFileError::Unknown(
        model.to_string(),
        zoo::NAMES.join(", "),
    ))
}

/// `zoo:llama`'s sizes: TinyLlama-1.1B's, each option given replacing its own (the head
/// width follows `--hidden / --heads` unless `--head-dim` is given).
pub(crate) fn llama_config(a: &LlamaArgs) -> Result<LlamaConfig, ModelFileError> {
    let d = LlamaConfig::tiny_llama();
    let size = |v: Option<u32>, default: usize| v.map_or(default, |v| v as usize);
    let hidden = size(a.hidden, d.hidden);
    let heads = size(a.heads, d.heads);
    let head_dim = match a.head_dim {
        Some(h) => h as usize,
        None if hidden.is_multiple_of(heads) => hidden / heads,
        None => {
            return Err(ModelFileError::Zoo(format!(
                "zoo:llama: --heads {heads} does not divide --hidden {hidden} (or give --head-dim)"
            )));
        }
    };
    Ok(LlamaConfig {
        layers: size(a.layers, d.layers),
        hidden,
        heads,
        kv_heads: size(a.kv_heads, d.kv_heads.min(heads)),
        head_dim,
        intermediate: size(a.intermediate, d.intermediate),
        vocab: size(a.vocab, d.vocab),
        max_positions: size(a.max_positions, d.max_positions),
        rope_theta: a.rope_theta.unwrap_or(d.rope_theta),
        rms_norm_eps: a.rms_norm_eps.unwrap_or(d.rms_norm_eps),
        tie_word_embeddings: a.tie_word_embeddings,
        qkv_bias: false,
        o_bias: false,
    })
}

/// Tensor names as file names, one to one: each `NAME.npy` with every character outside
/// `[A-Za-z0-9._-]` replaced by `_`, and where that name is taken by an earlier tensor
/// (`a:b` and `a/b` both `a_b`), `NAME-2.npy`, `NAME-3.npy`, ... — in the order given, so
/// the same names always map to the same files (a graph's inputs come first wherever
/// they are listed, so `--save` and `--inputs` agree).
pub fn file_names(tensors: &[&str]) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    tensors
        .iter()
        .map(|t| {
            let base = clean_name(t);
            let mut name = format!("{base}.npy");
            let mut n = 1;
            // Case folded: `A.npy` and `a.npy` are one file on macOS and Windows.
            while !taken.insert(name.to_lowercase()) {
                n += 1;
                name = format!("{base}-{n}.npy");
            }
            name
        })
        .collect()
}

/// `name` with every character outside `[A-Za-z0-9._-]` replaced by `_`.
pub fn clean_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Reads one `NAME.npy` per graph input of `g` from `dir`, each checked against the
/// input's shape.
pub fn read_inputs(dir: &Path, g: &Graph) -> Result<Vec<ArrayD<f32>>, ModelFileError> {
    let names: Vec<&str> = g
        .inputs
        .iter()
        .map(|&t| g.tensor(t).name.as_str())
        .collect();
    let files = file_names(&names);
    let expected = g
        .inputs
        .iter()
        .zip(&files)
        .map(|(&t, file)| {
            let t = g.tensor(t);
            let typ = crate::npy::numpy_name(t.dtype);
            if clean_name(&t.name) + ".npy" == *file {
                format!("{file} {typ} {:?}", t.shape)
            } else {
                format!("{file} (`{}`) {typ} {:?}", escaped(&t.name), t.shape)
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    g.inputs
        .iter()
        .zip(&files)
        .map(|(&t, file)| {
            let tensor = g.tensor(t);
            let path = dir.join(file);
            if !path.exists() {
                return Err(ModelFileError::MissingInput {
                    path,
                    expected: expected.clone(),
                });
            }
            npy::read_tensor(&path, &tensor.name, &tensor.shape, tensor.dtype)
                .map_err(|e| ModelFileError::Tensor(Box::new(e)))
        })
        .collect()
}

/// Writes `values` as `.npy` files in `dir` (created if needed) named by [`file_names`],
/// each written whole (a temporary file renamed into place) and only over a regular file
/// or a new path; returns the paths.
pub fn write_tensors(
    dir: &Path,
    values: &[(&str, DType, &ArrayD<f32>)],
) -> Result<Vec<PathBuf>, ModelFileError> {
    let io = |path: &Path, e: &dyn std::fmt::Display| ModelFileError::Npy {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    if dir.exists() && !dir.is_dir() {
        let kind = weft_tune::not_regular(dir).unwrap_or("a file");
        let why = format!("it is {kind}, and --save writes files into a folder: name a folder");
        return Err(io(dir, &why));
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let names: Vec<&str> = values.iter().map(|v| v.0).collect();
    let mut written = Vec::new();
    for ((_, dtype, a), file) in values.iter().zip(file_names(&names)) {
        let path = dir.join(&file);
        if let Some(kind) = weft_tune::not_regular(&path) {
            let why =
                format!("it is {kind}, and weft writes only over a regular file or a new path");
            return Err(io(&path, &why));
        }
        let tmp = dir.join(format!(".{file}.tmp"));
        npy::write(&tmp, *dtype, a).map_err(|e| ModelFileError::Tensor(Box::new(e)))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, &e))?;
        written.push(path);
    }
    Ok(written)
}

/// `text` with terminal control characters escaped (`\x1b`, `\n`, ...): a name read from
/// a model file is printed as data, never as an instruction to the terminal.
pub fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

//! Hugging Face checkpoints of Llama-family models: a directory holding `config.json` and
//! `model.safetensors` (or shards listed by `model.safetensors.index.json`). The config
//! drives `zoo:llama`'s builder ([`weft_graph::zoo::llama`]); the weights come from the
//! files, f32, f16, bf16 or f64 converted to f32, each checked against the shape the
//! config implies. `model_type` llama, mistral and qwen2 are taken (the same graph; Qwen2
//! with biases on q/k/v); others are refused by name, as are configs whose graph weft
//! does not build (rope scaling, an activation other than SiLU, MLP biases, a sliding
//! window shorter than the sequence).
//!
//! Every file is read bounded by its size (only regular files; the buffer reserved
//! fallibly), and the safetensors header is checked by the `safetensors` crate against
//! the file's length before any tensor is read.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;
use thiserror::Error;
use weft_graph::Graph;
use weft_graph::zoo::llama::{self, LlamaConfig, LlamaError, LlamaWeights};

/// The model types whose graph is `zoo:llama`'s.
const TYPES: &[&str] = &["llama", "mistral", "qwen2"];

/// Why a checkpoint was not loaded: each names the file, and the tensor or key.
#[derive(Debug, Error)]
pub enum CheckpointError {
    #[error("`{}`: {reason}", path.display())]
    File { path: PathBuf, reason: String },
    #[error("`{}`: key `{key}`: {reason}", path.display())]
    Config {
        path: PathBuf,
        key: String,
        reason: String,
    },
    #[error("`{}`: model_type `{model_type}` is not one weft builds (it builds {})", path.display(), TYPES.join(", "))]
    Unsupported { path: PathBuf, model_type: String },
    #[error("`{}`: no tensor `{name}` (the config implies it)", path.display())]
    Missing { path: PathBuf, name: String },
    #[error("`{}`: tensor `{name}` has shape {got:?}; the config implies {want:?}", path.display())]
    Shape {
        path: PathBuf,
        name: String,
        got: Vec<usize>,
        want: Vec<usize>,
    },
    #[error("`{}`: tensor `{name}` is {dtype:?}; weft reads F32, F16, BF16 and F64 weights", path.display())]
    DType {
        path: PathBuf,
        name: String,
        dtype: Dtype,
    },
    #[error("`{}`: {reason}", dir.display())]
    Build { dir: PathBuf, reason: String },
}

/// Whether `dir` looks like a checkpoint: a directory with a `config.json`.
pub fn is_checkpoint(dir: &Path) -> bool {
    dir.is_dir() && dir.join("config.json").exists()
}

/// The checkpoint in `dir` as a graph on `batch` sequences of `seq` tokens (default 128,
/// at most the model's positions).
pub fn load(dir: &Path, batch: usize, seq: Option<usize>) -> Result<Graph, CheckpointError> {
    let (name, cfg, mut weights) = open(dir)?;
    let seq = seq.unwrap_or(cfg.max_positions.min(128));
    let config_path = dir.join("config.json");
    let text = read_bounded(&config_path)?;
    let json: Value = serde_json::from_slice(&text).map_err(|e| CheckpointError::File {
        path: config_path.clone(),
        reason: format!("not JSON: {e}"),
    })?;
    sliding_window(&config_path, &json, seq)?;
    llama::llama(&name, &cfg, batch, seq, &mut weights).map_err(|e| built(dir, Some(&weights), e))
}

/// The checkpoint in `dir`: its name, its sizes and its weights, read as the graph
/// builders ask for them (`zoo::llama`, `zoo::llama_step`).
pub fn open(dir: &Path) -> Result<(String, LlamaConfig, Weights), CheckpointError> {
    let config_path = dir.join("config.json");
    let text = read_bounded(&config_path)?;
    let json: Value = serde_json::from_slice(&text).map_err(|e| CheckpointError::File {
        path: config_path.clone(),
        reason: format!("not JSON: {e}"),
    })?;
    let cfg = config(&config_path, &json)?;
    let weights = Weights::open(dir)?;
    let name = dir.file_name().map_or("checkpoint".to_string(), |n| {
        n.to_string_lossy().into_owned()
    });
    Ok((name, cfg, weights))
}

/// A graph builder's error on the checkpoint in `dir` as the file's error.
/// (`weights` names the file of a tensor of the wrong shape; without it, the directory.)
pub fn built(
    dir: &Path,
    weights: Option<&Weights>,
    e: LlamaError<CheckpointError>,
) -> CheckpointError {
    match e {
        LlamaError::Weights(e) => e,
        LlamaError::Shape { name, got, want } => CheckpointError::Shape {
            path: weights.map_or(dir.to_path_buf(), |w| w.file_of(&name)),
            name,
            got,
            want,
        },
        LlamaError::Config(reason) => CheckpointError::Build {
            dir: dir.to_path_buf(),
            reason: format!("config.json: {reason}"),
        },
        LlamaError::Graph(e) => CheckpointError::Build {
            dir: dir.to_path_buf(),
            reason: e.to_string(),
        },
    }
}

/// The whole of the regular file `path`, read bounded by its size.
fn read_bounded(path: &Path) -> Result<Vec<u8>, CheckpointError> {
    let err = |reason: String| CheckpointError::File {
        path: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(err("not a regular file".to_string()));
    }
    let len = usize::try_from(meta.len()).map_err(|_| err("too large".to_string()))?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(len)
        .map_err(|_| err(format!("{len} bytes do not fit in this host's memory")))?;
    let file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    file.take(meta.len())
        .read_to_end(&mut buf)
        .map_err(|e| err(e.to_string()))?;
    Ok(buf)
}

/// The sizes `config.json` gives, checked against what the graph builds.
fn config(path: &Path, json: &Value) -> Result<LlamaConfig, CheckpointError> {
    let bad = |key: &str, reason: String| CheckpointError::Config {
        path: path.to_path_buf(),
        key: key.to_string(),
        reason,
    };
    let field = |key: &str| json.get(key).filter(|v| !v.is_null());
    let size = |key: &str| -> Result<Option<usize>, CheckpointError> {
        field(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| bad(key, format!("{v} is not a size ≥ 1")))
            })
            .transpose()
    };
    let need = |key: &str| size(key)?.ok_or_else(|| bad(key, "missing".to_string()));
    let number = |key: &str, default: f64| -> Result<f64, CheckpointError> {
        field(key).map_or(Ok(default), |v| {
            v.as_f64()
                .ok_or_else(|| bad(key, format!("{v} is not a number")))
        })
    };
    let flag = |key: &str, default: bool| -> Result<bool, CheckpointError> {
        field(key).map_or(Ok(default), |v| {
            v.as_bool()
                .ok_or_else(|| bad(key, format!("{v} is not true or false")))
        })
    };
    let model_type = field("model_type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("model_type", "missing".to_string()))?;
    if !TYPES.contains(&model_type) {
        return Err(CheckpointError::Unsupported {
            path: path.to_path_buf(),
            model_type: model_type.to_string(),
        });
    }
    let act = field("hidden_act")
        .and_then(Value::as_str)
        .unwrap_or("silu");
    if act != "silu" {
        return Err(bad(
            "hidden_act",
            format!("`{act}`: weft builds the SiLU MLP only"),
        ));
    }
    // transformers 5 writes `rope_parameters` (θ inside), earlier versions `rope_theta`
    // and `rope_scaling`: either way, only the unscaled ("default") embedding.
    for key in ["rope_parameters", "rope_scaling"] {
        if let Some(rope) = field(key) {
            let kind = rope
                .get("rope_type")
                .or_else(|| rope.get("type"))
                .and_then(Value::as_str);
            if kind != Some("default") {
                return Err(bad(
                    key,
                    format!("{rope}: weft builds unscaled rotary embeddings only"),
                ));
            }
        }
    }
    let rope_theta = match field("rope_parameters").and_then(|r| r.get("rope_theta")) {
        Some(v) => v
            .as_f64()
            .ok_or_else(|| bad("rope_parameters", format!("rope_theta {v} is not a number")))?,
        None => number("rope_theta", 10000.0)?,
    };
    if flag("mlp_bias", false)? {
        return Err(bad(
            "mlp_bias",
            "true: weft builds the MLP without biases".to_string(),
        ));
    }
    let hidden = need("hidden_size")?;
    let heads = need("num_attention_heads")?;
    let head_dim = match size("head_dim")? {
        Some(d) => d,
        None if hidden.is_multiple_of(heads) => hidden / heads,
        None => {
            return Err(bad(
                "num_attention_heads",
                format!("{heads} heads do not divide hidden_size {hidden}"),
            ));
        }
    };
    let qwen = model_type == "qwen2";
    let attention_bias = flag("attention_bias", false)?;
    Ok(LlamaConfig {
        layers: need("num_hidden_layers")?,
        hidden,
        heads,
        kv_heads: size("num_key_value_heads")?.unwrap_or(heads),
        head_dim,
        intermediate: need("intermediate_size")?,
        vocab: need("vocab_size")?,
        max_positions: size("max_position_embeddings")?.unwrap_or(2048),
        rope_theta,
        rms_norm_eps: number("rms_norm_eps", 1e-6)?,
        tie_word_embeddings: flag("tie_word_embeddings", false)?,
        qkv_bias: qwen || attention_bias,
        o_bias: !qwen && attention_bias,
    })
}

/// Mistral's and Qwen2's sliding window: the graph attends to every earlier token, which
/// is the model's answer only while the sequence fits in the window.
fn sliding_window(path: &Path, json: &Value, seq: usize) -> Result<(), CheckpointError> {
    let sliding_layers = json
        .get("layer_types")
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(|l| l.as_str() != Some("full_attention")));
    let used = sliding_layers
        || json
            .get("use_sliding_window")
            .and_then(Value::as_bool)
            .unwrap_or(json.get("model_type").and_then(Value::as_str) == Some("mistral"));
    let window = json.get("sliding_window").and_then(Value::as_u64);
    match window {
        Some(w) if used && (seq as u64) > w => Err(CheckpointError::Config {
            path: path.to_path_buf(),
            key: "sliding_window".to_string(),
            reason: format!(
                "{w}, shorter than the {seq} tokens asked for: weft attends to every earlier \
                 token (--seq {w} or less)"
            ),
        }),
        Some(_) | None => Ok(()),
    }
}

/// The checkpoint's safetensors files, whole in memory, and which holds each tensor.
pub struct Weights {
    files: Vec<(PathBuf, Vec<u8>)>,
    /// Tensor name → index into `files`.
    index: HashMap<String, usize>,
}

impl Weights {
    /// `model.safetensors`, or the shards `model.safetensors.index.json` names.
    fn open(dir: &Path) -> Result<Weights, CheckpointError> {
        let single = dir.join("model.safetensors");
        let index_path = dir.join("model.safetensors.index.json");
        let paths = if single.exists() {
            vec![single]
        } else if index_path.exists() {
            shards(dir, &index_path)?
        } else {
            return Err(CheckpointError::File {
                path: dir.to_path_buf(),
                reason: "holds neither model.safetensors nor model.safetensors.index.json"
                    .to_string(),
            });
        };
        let mut files = Vec::new();
        let mut index = HashMap::new();
        for (i, path) in paths.into_iter().enumerate() {
            let bytes = read_bounded(&path)?;
            let st = SafeTensors::deserialize(&bytes).map_err(|e| CheckpointError::File {
                path: path.clone(),
                reason: format!("not a safetensors file: {e}"),
            })?;
            for name in st.names() {
                index.entry(name.to_string()).or_insert(i);
            }
            files.push((path, bytes));
        }
        Ok(Weights { files, index })
    }

    /// The file holding `name`, or the first file where none does.
    fn file_of(&self, name: &str) -> PathBuf {
        let i = self.index.get(name).copied().unwrap_or(0);
        self.files
            .get(i)
            .map_or_else(PathBuf::new, |(p, _)| p.clone())
    }
}

/// The shard files of an index's `weight_map`, each a plain file name in `dir`.
fn shards(dir: &Path, index_path: &Path) -> Result<Vec<PathBuf>, CheckpointError> {
    let text = read_bounded(index_path)?;
    let bad = |reason: String| CheckpointError::File {
        path: index_path.to_path_buf(),
        reason,
    };
    let json: Value = serde_json::from_slice(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let map = json
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no `weight_map` object".to_string()))?;
    let mut names: Vec<&str> = Vec::new();
    for (tensor, file) in map {
        let file = file
            .as_str()
            .ok_or_else(|| bad(format!("`{tensor}` maps to {file}, not a file name")))?;
        // A shard is a file beside the index: no directories, no way out of `dir`.
        let plain = Path::new(file).file_name().and_then(|n| n.to_str()) == Some(file);
        if !plain || file == ".." {
            return Err(bad(format!(
                "`{tensor}` maps to `{file}`, not a file name in the directory"
            )));
        }
        if !names.contains(&file) {
            names.push(file);
        }
    }
    names.sort_unstable();
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

impl LlamaWeights for Weights {
    type Error = CheckpointError;

    fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<ArrayD<f32>, CheckpointError> {
        let Some(&i) = self.index.get(name) else {
            let files: Vec<String> = self
                .files
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect();
            return Err(CheckpointError::Missing {
                path: PathBuf::from(files.join("`, `")),
                name: name.to_string(),
            });
        };
        let (path, bytes) = &self.files[i];
        let st = SafeTensors::deserialize(bytes).map_err(|e| CheckpointError::File {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let view = st.tensor(name).map_err(|e| CheckpointError::File {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        if view.shape() != shape {
            return Err(CheckpointError::Shape {
                path: path.clone(),
                name: name.to_string(),
                got: view.shape().to_vec(),
                want: shape.to_vec(),
            });
        }
        let data = view.data();
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Dtype::F64 => data
                .chunks_exact(8)
                .map(|c| {
                    let b: [u8; 8] = c.try_into().unwrap_or([0; 8]);
                    f64::from_le_bytes(b) as f32
                })
                .collect(),
            other => {
                return Err(CheckpointError::DType {
                    path: path.clone(),
                    name: name.to_string(),
                    dtype: other,
                });
            }
        };
        // The crate checked that the bytes are the shape's (its `TensorView` validation).
        ArrayD::from_shape_vec(IxDyn(shape), values).map_err(|e| CheckpointError::File {
            path: path.clone(),
            reason: format!("tensor `{name}`: {e}"),
        })
    }
}

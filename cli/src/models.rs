//! What `weft model` works on: a model named on the command line (`zoo:NAME` or a path to
//! an `.onnx` file) as a graph, and its tensors as `.npy` files named after them.

use std::path::{Path, PathBuf};

use ndarray::ArrayD;
use thiserror::Error;
use weft_graph::Graph;
use weft_ir::dtype::DType;

use crate::npy;
use weft_graph::zoo::{self, ZooOptions};

/// Why a model could not be read, or its tensors read or written.
#[derive(Debug, Error)]
pub enum ModelFileError {
    #[error("{0}")]
    Zoo(String),
    #[error("`{}`: {reason}", path.display())]
    Onnx { path: PathBuf, reason: String },
    #[error("`{0}` is neither `zoo:NAME` (zoo models: {1}) nor a path to an .onnx file")]
    Unknown(String, String),
    #[error("`{}` not found: --inputs expects one .npy file per graph input ({expected})", path.display())]
    MissingInput { path: PathBuf, expected: String },
    #[error("`{}`: {reason}", path.display())]
    Npy { path: PathBuf, reason: String },
    /// A tensor's `.npy` file: its dtype, shape or bytes (the message names the file).
    #[error(transparent)]
    Tensor(Box<crate::npy::NpyError>),
}

/// How a model is instantiated: batch, resolution and sequence length (zoo models; an
/// ONNX model's symbolic batch dimension).
#[derive(Clone, Copy, Debug)]
pub struct Instance {
    pub batch: usize,
    pub resolution: Option<usize>,
    /// Tokens per sequence (zoo transformers).
    pub seq: Option<usize>,
}

/// The graph of `model`: `zoo:NAME` built at `instance`, or an ONNX file imported with
/// its batch dimension bound.
pub fn load(model: &str, instance: Instance) -> Result<Graph, ModelFileError> {
    if let Some(name) = model.strip_prefix("zoo:") {
        let mut opts =
            ZooOptions::for_model(name).map_err(|e| ModelFileError::Zoo(e.to_string()))?;
        opts.batch = instance.batch;
        if let Some(r) = instance.resolution {
            opts.resolution = r;
        }
        if let Some(s) = instance.seq {
            opts.seq = s;
        }
        return zoo::build(name, &opts).map_err(|e| ModelFileError::Zoo(e.to_string()));
    }
    let path = Path::new(model);
    if path.exists() {
        let opts = weft_onnx::ImportOptions {
            batch: Some(instance.batch),
            ..Default::default()
        };
        return weft_onnx::load(path, &opts).map_err(|e| ModelFileError::Onnx {
            path: path.to_path_buf(),
            reason: e.to_string(),
        });
    }
    Err(ModelFileError::Unknown(
        model.to_string(),
        zoo::NAMES.join(", "),
    ))
}

/// A tensor name as a file name: every character outside `[A-Za-z0-9._-]` becomes `_`.
pub fn file_name(tensor: &str) -> String {
    format!("{}.npy", clean_name(tensor))
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
    let expected = g
        .inputs
        .iter()
        .map(|&t| {
            let t = g.tensor(t);
            format!("{} {} {:?}", file_name(&t.name), t.dtype, t.shape)
        })
        .collect::<Vec<_>>()
        .join(", ");
    g.inputs
        .iter()
        .map(|&t| {
            let tensor = g.tensor(t);
            let path = dir.join(file_name(&tensor.name));
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

/// Writes `values` as `NAME.npy` files in `dir` (created if needed), each written whole
/// (a temporary file renamed into place); returns the paths.
pub fn write_tensors(
    dir: &Path,
    values: &[(&str, DType, &ArrayD<f32>)],
) -> Result<Vec<PathBuf>, ModelFileError> {
    let io = |path: &Path, e: &dyn std::fmt::Display| ModelFileError::Npy {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let mut written = Vec::new();
    for (name, dtype, a) in values {
        let path = dir.join(file_name(name));
        let tmp = dir.join(format!(".{}.tmp", file_name(name)));
        npy::write(&tmp, *dtype, a).map_err(|e| ModelFileError::Tensor(Box::new(e)))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, &e))?;
        written.push(path);
    }
    Ok(written)
}

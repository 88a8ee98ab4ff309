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
    /// A tensor too large for weft, and the options that sized the model.
    #[error("`{model}`: {reason}{options}")]
    TooLarge {
        model: String,
        reason: weft_graph::GraphError,
        /// `; at --batch N, …`, or nothing where the model runs as its file says.
        options: String,
    },
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
    let g = build(model, instance)?;
    g.check_sizes().map_err(|reason| ModelFileError::TooLarge {
        model: model.to_string(),
        reason,
        options: instance.sized_by(),
    })?;
    Ok(g)
}

impl Instance {
    /// The size options given (`--batch` past 1, `--resolution`, `--seq`) as the tail of a
    /// refusal that they may have caused; empty where none was.
    fn sized_by(&self) -> String {
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
fn build(model: &str, instance: Instance) -> Result<Graph, ModelFileError> {
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
    // A name that is there but cannot be followed (a symbolic link to nothing, a loop)
    // is the file the user meant: its import says why it cannot be read.
    if path.exists() || std::fs::symlink_metadata(path).is_ok() {
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
    if let Some(kind) = weft_tune::not_regular(dir).filter(|_| !dir.is_dir()) {
        return Err(io(
            dir,
            &format!("it is {kind}: --save writes files into a folder"),
        ));
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

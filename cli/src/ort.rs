//! ONNX Runtime, `weft model check`'s other engine, reached through its Python package:
//! the script `scripts/ort_check.py` (compiled into the binary) runs the file as written
//! on the CPU with graph optimizations off, the tensors asked for added to the graph's
//! outputs, and writes every value as float64 `.npy`. The inputs are written once, in
//! each graph input's own element type; each run exposes the tensors one bisection round
//! compares, and what came back is kept by name, so no tensor is asked for twice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::ArrayD;
use serde::Deserialize;
use weft_ir::dtype::DType;

use crate::error::CliError;
use crate::npy;

/// The script, as the binary runs it (`python3 -c SCRIPT MANIFEST`).
const SCRIPT: &str = include_str!("../../scripts/ort_check.py");

/// The status the script exits with where a Python package is missing.
const MISSING: i32 = 3;

/// A folder of this process's own under the system's temporary folder, removed with
/// everything in it when dropped.
pub(crate) struct WorkDir(PathBuf);

impl WorkDir {
    /// A new, empty folder named after `what`.
    pub(crate) fn new(what: &str) -> Result<WorkDir, CliError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("weft-{what}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| CliError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(WorkDir(dir))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // Best effort: a temporary folder left behind is no error of the command.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The node of the file ONNX Runtime runs that computes a tensor.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Producer {
    /// The node's name: the file's, or `{op}_{index}` where it has none.
    pub(crate) node: String,
    /// Its op type.
    pub(crate) op: String,
    /// Its attributes as the file has them, `name=value, ...` (empty: none).
    pub(crate) attributes: String,
}

/// `info.json` as the script writes it.
#[derive(Deserialize)]
struct Info {
    version: String,
    outputs: Vec<String>,
    values: HashMap<String, Producer>,
}

/// ONNX Runtime on one model and one set of inputs.
pub(crate) struct Ort<'a> {
    python: &'a str,
    model: &'a Path,
    work: &'a Path,
    /// Each graph input's ONNX name and its `.npy` file.
    inputs: Vec<(String, PathBuf)>,
    /// ONNX Runtime's version.
    pub(crate) version: String,
    /// The graph outputs' names, in order, and their values.
    pub(crate) outputs: Vec<(String, ArrayD<f64>)>,
    /// Every node output of the file and the node that computes it.
    pub(crate) producers: HashMap<String, Producer>,
    /// The values fetched so far, by tensor name.
    values: HashMap<String, ArrayD<f64>>,
    /// Runs of ONNX Runtime so far.
    pub(crate) runs: usize,
}

impl<'a> Ort<'a> {
    /// Writes `inputs` (a graph input's name, element type and value each) into `work`
    /// and runs `model` once on them: its outputs and the names of its node outputs.
    pub(crate) fn start(
        python: &'a str,
        model: &'a Path,
        work: &'a Path,
        inputs: &[(&str, DType, &ArrayD<f32>)],
    ) -> Result<Ort<'a>, CliError> {
        let mut files = Vec::with_capacity(inputs.len());
        for (k, (name, dtype, x)) in inputs.iter().enumerate() {
            let path = work.join(format!("input_{k}.npy"));
            let tmp = work.join(format!(".input_{k}.npy.tmp"));
            npy::write(&tmp, *dtype, x)?;
            std::fs::rename(&tmp, &path).map_err(|source| CliError::Io {
                path: path.clone(),
                source,
            })?;
            files.push((name.to_string(), path));
        }
        let mut ort = Ort {
            python,
            model,
            work,
            inputs: files,
            version: String::new(),
            outputs: Vec::new(),
            producers: HashMap::new(),
            values: HashMap::new(),
            runs: 0,
        };
        let (info, outputs) = ort.run(&[])?;
        ort.version = info.version;
        ort.producers = info.values;
        ort.outputs = info.outputs.into_iter().zip(outputs).collect();
        Ok(ort)
    }

    /// The values of the node outputs `names` (each one [`Ort::producers`] holds), one
    /// run of ONNX Runtime for those not fetched before.
    pub(crate) fn values(&mut self, names: &[String]) -> Result<Vec<&ArrayD<f64>>, CliError> {
        let mut new: Vec<String> = Vec::new();
        for n in names {
            if !self.values.contains_key(n) && !new.contains(n) {
                new.push(n.clone());
            }
        }
        if !new.is_empty() {
            let (_, got) = self.run(&new)?;
            let exposed = got.into_iter().skip(self.outputs.len());
            for (n, v) in new.into_iter().zip(exposed) {
                self.values.insert(n, v);
            }
        }
        names
            .iter()
            .map(|n| {
                self.values.get(n).ok_or_else(|| CliError::Ort {
                    model: self.model.to_path_buf(),
                    detail: format!("the script returned no value for `{n}`"),
                })
            })
            .collect()
    }

    /// One run of the script exposing `expose`: what it says of the file, and the graph
    /// outputs' values followed by the exposed tensors'.
    fn run(&mut self, expose: &[String]) -> Result<(Info, Vec<ArrayD<f64>>), CliError> {
        self.runs += 1;
        let out = self.work.join(format!("run_{}", self.runs));
        let io = |path: &Path, source| CliError::Io {
            path: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(&out).map_err(|e| io(&out, e))?;
        let manifest = serde_json::json!({
            "model": self.model,
            "inputs": self.inputs,
            "expose": expose,
            "out": out,
        });
        let path = self.work.join("manifest.json");
        let tmp = self.work.join(".manifest.json.tmp");
        std::fs::write(&tmp, manifest.to_string()).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
        let done = Command::new(self.python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(&path)
            .output()
            .map_err(|e| CliError::NoOrt {
                what: format!("`{}` cannot be started ({e})", self.python),
            })?;
        let stderr = String::from_utf8_lossy(&done.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        if done.status.code() == Some(MISSING) {
            let packages: Vec<String> = last
                .strip_prefix("missing: ")
                .unwrap_or(&last)
                .split_whitespace()
                .map(|p| format!("`{p}`"))
                .collect();
            let noun = if packages.len() == 1 {
                "package"
            } else {
                "packages"
            };
            return Err(CliError::NoOrt {
                what: format!(
                    "`{}` lacks the Python {noun} {}",
                    self.python,
                    packages.join(", ")
                ),
            });
        }
        let failed = |detail: String| CliError::Ort {
            model: self.model.to_path_buf(),
            detail,
        };
        if !done.status.success() {
            return Err(failed(if last.is_empty() {
                format!("the script exited with {}", done.status)
            } else {
                last
            }));
        }
        let text = std::fs::read_to_string(out.join("info.json"))
            .map_err(|e| failed(format!("its info.json: {e}")))?;
        let info: Info =
            serde_json::from_str(&text).map_err(|e| failed(format!("its info.json: {e}")))?;
        let count = info.outputs.len() + expose.len();
        let values = (0..count)
            .map(|k| {
                let p = out.join(format!("value_{k}.npy"));
                ndarray_npy::read_npy::<_, ArrayD<f64>>(&p)
                    .map_err(|e| failed(format!("reading `{}`: {e}", p.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // The values are kept in memory; the files go.
        let _ = std::fs::remove_dir_all(&out);
        Ok((info, values))
    }
}

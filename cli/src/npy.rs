//! `.npy` files in and out of `weft run` (`--save DIR`, `--inputs DIR`), so that a user
//! checks weft against NumPy or PyTorch on the same data.
//!
//! One file per tensor, named after the workload's buffer (`A.npy`, `B.npy`, `C.npy`),
//! little-endian, C order; float32 buffers as `<f4` and float16 buffers as `<f2`
//! (NumPy's `float16`). ndarray-npy reads and writes the header; the data is raw
//! little-endian words, because ndarray-npy has no float16 element (float16 bytes are
//! written as they are, never widened). A file in Fortran order is read as such.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use ndarray_npy::npy::header::{Header, Layout};
use py_literal::Value as PyValue;
use thiserror::Error;
use weft_ir::dtype::DType;
use weft_ir::expr::Buffer;
use weft_ops::Workload;

/// What can go wrong with a `.npy` file; each names the file and what was expected.
#[derive(Debug, Error)]
pub enum NpyError {
    #[error(
        "`{}` not found: --inputs expects one .npy file per input of `{op}` ({expected})",
        path.display()
    )]
    Missing {
        path: PathBuf,
        op: String,
        /// Every file expected, with its dtype and shape.
        expected: String,
    },
    #[error("`{}` has shape {got:?}; {input} needs {expected:?}", path.display())]
    Shape {
        path: PathBuf,
        /// Which input: "input `B` of `matmul` at m=64,n=32,k=16".
        input: String,
        got: Vec<usize>,
        expected: Vec<usize>,
    },
    #[error(
        "`{}` holds dtype {got}; input `{buffer}` needs {expected} (NumPy `{numpy}`, \
         little-endian: `x.astype(np.{numpy})`)",
        path.display()
    )]
    DType {
        path: PathBuf,
        buffer: String,
        got: String,
        expected: &'static str,
        numpy: &'static str,
    },
    #[error("`{}` is not a valid .npy file: {reason}", path.display())]
    Format { path: PathBuf, reason: String },
    #[error("{what} `{}`: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The `.npy` descriptor and NumPy name of a buffer's dtype (weft's workloads take and
/// give float32 and float16 tensors).
fn descriptor(dtype: DType) -> (&'static str, &'static str) {
    match dtype {
        DType::F16 => ("<f2", "float16"),
        _ => ("<f4", "float32"),
    }
}

fn shape_of(b: &Buffer) -> Vec<usize> {
    b.shape().iter().map(|&d| d.max(0) as usize).collect()
}

/// The file of buffer `b` in `dir`.
pub fn path_of(dir: &Path, b: &Buffer) -> PathBuf {
    dir.join(format!("{}.npy", b.name()))
}

/// Writes `inputs` and `output` of `w` into `dir` (created if needed); returns the paths
/// written, inputs first. float16 buffers hold values exact in float16 already.
pub fn save(
    dir: &Path,
    w: &Workload,
    inputs: &[ArrayD<f32>],
    output: &ArrayD<f32>,
) -> Result<Vec<PathBuf>, NpyError> {
    std::fs::create_dir_all(dir).map_err(|source| NpyError::Io {
        what: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (b, a) in w.inputs.iter().zip(inputs).chain([(&w.output, output)]) {
        let path = path_of(dir, b);
        write(&path, b.dtype(), a)?;
        written.push(path);
    }
    Ok(written)
}

fn write(path: &Path, dtype: DType, a: &ArrayD<f32>) -> Result<(), NpyError> {
    let io = |source| NpyError::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    };
    let header = Header {
        type_descriptor: PyValue::String(descriptor(dtype).0.into()),
        layout: Layout::Standard,
        shape: a.shape().to_vec(),
    };
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    header.write(&mut out).map_err(|e| NpyError::Format {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    // `iter()` walks in C order, the order the header declares.
    let mut bytes = Vec::with_capacity(a.len() * 4);
    for &x in a.iter() {
        match dtype {
            DType::F16 => bytes.extend(half::f16::from_f32(x).to_le_bytes()),
            _ => bytes.extend(x.to_le_bytes()),
        }
    }
    out.write_all(&bytes).map_err(io)?;
    out.flush().map_err(io)
}

/// Reads the inputs of `w` from `dir` (one `<buffer>.npy` each), checked against each
/// buffer's dtype and shape; float16 files become float32 arrays of the same values.
pub fn load(dir: &Path, w: &Workload) -> Result<Vec<ArrayD<f32>>, NpyError> {
    w.inputs.iter().map(|b| read(dir, w, b)).collect()
}

fn expected_files(dir: &Path, w: &Workload) -> String {
    w.inputs
        .iter()
        .map(|b| {
            let name = path_of(dir, b);
            let name = name.file_name().unwrap_or_default().to_string_lossy();
            format!("{name}: {} {:?}", descriptor(b.dtype()).1, shape_of(b))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn read(dir: &Path, w: &Workload, b: &Buffer) -> Result<ArrayD<f32>, NpyError> {
    let path = path_of(dir, b);
    let file = File::open(&path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => NpyError::Missing {
            path: path.clone(),
            op: w.op.name.to_string(),
            expected: expected_files(dir, w),
        },
        _ => NpyError::Io {
            what: "opening",
            path: path.clone(),
            source,
        },
    })?;
    let mut reader = BufReader::new(file);
    let format = |reason: String| NpyError::Format {
        path: path.clone(),
        reason,
    };
    let header = Header::from_reader(&mut reader).map_err(|e| format(e.to_string()))?;
    let (want, numpy) = descriptor(b.dtype());
    let got = match &header.type_descriptor {
        PyValue::String(s) => s.clone(),
        other => format!("{other} (a structured dtype)"),
    };
    // `|`/`=` byte orders do not apply to 2- and 4-byte floats in files NumPy writes on
    // little-endian machines; anything but the exact descriptor is refused by name.
    if got != want {
        return Err(NpyError::DType {
            path: path.clone(),
            buffer: b.name().to_string(),
            got: format!("`{got}`"),
            expected: if b.dtype() == DType::F16 {
                "float16 (`<f2`)"
            } else {
                "float32 (`<f4`)"
            },
            numpy,
        });
    }
    let expected = shape_of(b);
    if header.shape != expected {
        return Err(NpyError::Shape {
            path: path.clone(),
            input: format!("input `{}` of `{}` at {}", b.name(), w.op.name, w.shape),
            got: header.shape,
            expected,
        });
    }
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|source| NpyError::Io {
            what: "reading",
            path: path.clone(),
            source,
        })?;
    let numel: usize = expected.iter().product();
    let width = if b.dtype() == DType::F16 { 2 } else { 4 };
    if bytes.len() != numel * width {
        return Err(format(format!(
            "its header declares {numel} elements ({} bytes), the file holds {} bytes of data",
            numel * width,
            bytes.len()
        )));
    }
    let values: Vec<f32> = if width == 2 {
        bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()
    } else {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let dim = IxDyn(&expected);
    let array = if header.layout.is_fortran() {
        ArrayD::from_shape_vec(dim.f(), values)
    } else {
        ArrayD::from_shape_vec(dim, values)
    };
    array.map_err(|e| format(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weft-npy-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn float16_round_trips_as_float16() {
        let shape = weft_ops::Shape::parse("matmul-f16", "m=4,n=2,k=3").unwrap();
        let w = Workload::new("matmul-f16", &shape).unwrap();
        let inputs = w.random_inputs(1);
        let output = ArrayD::from_elem(IxDyn(&[4, 2]), 0.5f32);
        let dir = tmp("f16");
        let paths = save(&dir, &w, &inputs, &output).unwrap();
        assert_eq!(paths.len(), 3);
        let bytes = std::fs::read(&paths[0]).unwrap();
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).into_owned();
        assert!(text.contains("'descr': '<f2'"), "{text}");
        assert_eq!(load(&dir, &w).unwrap(), inputs);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fortran_order_is_read_as_such() {
        let shape = weft_ops::Shape::parse("matmul", "m=2,n=2,k=3").unwrap();
        let w = Workload::new("matmul", &shape).unwrap();
        let dir = tmp("fortran");
        std::fs::create_dir_all(&dir).unwrap();
        let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1f32, 2., 3., 4., 5., 6.]).unwrap();
        let b = ArrayD::from_elem(IxDyn(&[3, 2]), 1f32);
        // A in column-major order: the same matrix, stored transposed.
        let header = Header {
            type_descriptor: PyValue::String("<f4".into()),
            layout: Layout::Fortran,
            shape: vec![2, 3],
        };
        let mut file = File::create(dir.join("A.npy")).unwrap();
        header.write(&mut file).unwrap();
        for x in [1f32, 4., 2., 5., 3., 6.] {
            file.write_all(&x.to_le_bytes()).unwrap();
        }
        write(&dir.join("B.npy"), DType::F32, &b).unwrap();
        assert_eq!(load(&dir, &w).unwrap(), vec![a, b]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

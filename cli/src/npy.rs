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

/// Writes `a` (values in f32) to `path` as `dtype` is kept in a file: float32 `<f4`,
/// float16 `<f2`, weft's integers as int64 `<i8` (ONNX's index and token type), bool
/// `|b1`.
pub fn write(path: &Path, dtype: DType, a: &ArrayD<f32>) -> Result<(), NpyError> {
    let io = |source| NpyError::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    };
    let descr = match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I32 => "<i8",
        DType::U32 => "<u4",
        DType::Bool => "|b1",
    };
    let header = Header {
        type_descriptor: PyValue::String(descr.into()),
        layout: Layout::Standard,
        shape: a.shape().to_vec(),
    };
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    header.write(&mut out).map_err(|e| NpyError::Format {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    // `iter()` walks in C order, the order the header declares.
    let mut bytes = Vec::with_capacity(a.len() * 8);
    for &x in a.iter() {
        match dtype {
            DType::F32 => bytes.extend(x.to_le_bytes()),
            DType::F16 => bytes.extend(half::f16::from_f32(x).to_le_bytes()),
            DType::I32 => bytes.extend((x as i64).to_le_bytes()),
            DType::U32 => bytes.extend((x as u32).to_le_bytes()),
            DType::Bool => bytes.push(u8::from(x != 0.0)),
        }
    }
    out.write_all(&bytes).map_err(io)?;
    out.flush().map_err(io)
}

/// What a `.npy` file's elements are, by its descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    Float(usize),
    Int { bytes: usize, signed: bool },
    Bool,
}

impl Elem {
    /// The little-endian (or byte-wide) descriptors NumPy writes.
    fn of(descr: &str) -> Option<Elem> {
        Some(match descr {
            "<f2" => Elem::Float(2),
            "<f4" => Elem::Float(4),
            "<f8" => Elem::Float(8),
            "|i1" | "<i1" => Elem::Int {
                bytes: 1,
                signed: true,
            },
            "<i2" => Elem::Int {
                bytes: 2,
                signed: true,
            },
            "<i4" => Elem::Int {
                bytes: 4,
                signed: true,
            },
            "<i8" => Elem::Int {
                bytes: 8,
                signed: true,
            },
            "|u1" | "<u1" => Elem::Int {
                bytes: 1,
                signed: false,
            },
            "<u2" => Elem::Int {
                bytes: 2,
                signed: false,
            },
            "<u4" => Elem::Int {
                bytes: 4,
                signed: false,
            },
            "<u8" => Elem::Int {
                bytes: 8,
                signed: false,
            },
            "|b1" => Elem::Bool,
            _ => return None,
        })
    }

    fn bytes(self) -> usize {
        match self {
            Elem::Float(b) | Elem::Int { bytes: b, .. } => b,
            Elem::Bool => 1,
        }
    }

    /// Element `c` (its bytes) as f64.
    fn value(self, c: &[u8]) -> f64 {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        match self {
            Elem::Float(2) => f64::from(half::f16::from_le_bytes([c[0], c[1]]).to_f32()),
            Elem::Float(4) => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            Elem::Float(_) => f64::from_le_bytes(w),
            Elem::Int {
                bytes,
                signed: true,
            } => {
                // Sign-extend from `bytes`.
                let shift = 64 - 8 * bytes as u32;
                ((i64::from_le_bytes(w) << shift) >> shift) as f64
            }
            Elem::Int { signed: false, .. } => u64::from_le_bytes(w) as f64,
            Elem::Bool => f64::from(u8::from(c[0] != 0)),
        }
    }
}

/// Whether `path` is a regular file (links followed): a `.npy` is read from one, never
/// from a device or a FIFO, which could be read without end.
fn file_is_regular(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// NumPy's name of the type a graph input of `dtype` is usually given in (an ONNX INT64
/// input is `int64`, though weft computes it in i32).
pub fn numpy_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::F16 => "float32",
        DType::I32 | DType::U32 => "int64",
        DType::Bool => "bool",
    }
}

/// The element types a graph input of `dtype` reads from a file, in words and as
/// NumPy's name of the usual one.
fn takes(dtype: DType) -> (&'static str, &'static str) {
    match dtype {
        DType::F32 | DType::F16 => ("a float (float16, float32, float64)", "float32"),
        DType::I32 | DType::U32 => ("an integer (int8 to int64, uint8 to uint64)", "int64"),
        DType::Bool => ("bool", "bool_"),
    }
}

/// Whether a file of `elem` may feed a tensor of `dtype`: floats feed floats, integers
/// integers, bools (and uint8 0s and 1s) bools.
fn feeds(elem: Elem, dtype: DType) -> bool {
    match (elem, dtype) {
        (Elem::Float(_), DType::F32 | DType::F16) => true,
        (Elem::Int { .. }, DType::I32 | DType::U32) => true,
        (
            Elem::Bool
            | Elem::Int {
                bytes: 1,
                signed: false,
            },
            DType::Bool,
        ) => true,
        (Elem::Float(_) | Elem::Int { .. } | Elem::Bool, _) => false,
    }
}

/// Reads `path` as the tensor `name` of `shape` and element type `dtype` (a model's
/// input): any float width for a float tensor, any integer width for an integer one
/// (each value exact within weft's integers, ±2^24), bool for bool; the values in f32.
/// The file's length is checked against its header before anything is allocated.
pub fn read_tensor(
    path: &Path,
    name: &str,
    shape: &[usize],
    dtype: DType,
) -> Result<ArrayD<f32>, NpyError> {
    let file = File::open(path).map_err(|source| NpyError::Io {
        what: "opening",
        path: path.to_path_buf(),
        source,
    })?;
    let length = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    let mut reader = BufReader::new(file);
    let format = |reason: String| NpyError::Format {
        path: path.to_path_buf(),
        reason,
    };
    if !file_is_regular(path) {
        return Err(format(
            "it is not a regular file (a device, a FIFO or a folder)".into(),
        ));
    }
    // The magic string, the version and the header's length: 10 bytes before any header.
    if length < 10 {
        return Err(format(format!(
            "it is {length} bytes long, too short for even a .npy header (numpy.save writes one)"
        )));
    }
    let header = Header::from_reader(&mut reader).map_err(|e| format(e.to_string()))?;
    let got = match &header.type_descriptor {
        PyValue::String(s) => s.clone(),
        other => format!("{other} (a structured dtype)"),
    };
    let elem = Elem::of(&got).filter(|&e| feeds(e, dtype)).ok_or_else(|| {
        let (expected, numpy) = takes(dtype);
        NpyError::DType {
            path: path.to_path_buf(),
            buffer: name.to_string(),
            got: format!("`{got}`"),
            expected,
            numpy,
        }
    })?;
    if header.shape != shape {
        return Err(NpyError::Shape {
            path: path.to_path_buf(),
            input: format!("input `{name}`"),
            got: header.shape,
            expected: shape.to_vec(),
        });
    }
    let numel: usize = shape.iter().product();
    let want = numel
        .checked_mul(elem.bytes())
        .filter(|&b| (b as u64) <= length)
        .ok_or_else(|| {
            format(format!(
                "its header declares {numel} elements, more than the file's {length} bytes hold"
            ))
        })?;
    let mut bytes = Vec::with_capacity(want);
    reader
        .take(want as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| NpyError::Io {
            what: "reading",
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() != want {
        return Err(format(format!(
            "its header declares {numel} elements ({want} bytes), the file holds {} bytes of data",
            bytes.len()
        )));
    }
    let mut values = Vec::with_capacity(numel);
    for (i, c) in bytes.chunks_exact(elem.bytes()).enumerate() {
        let v = elem.value(c);
        if matches!(elem, Elem::Int { .. }) && v.abs() > f64::from(1u32 << 24) {
            return Err(format(format!(
                "element {i} is {v}, beyond what weft's integer tensors keep exactly (2^24)"
            )));
        }
        values.push(v as f32);
    }
    let dim = IxDyn(shape);
    let array = if header.layout.is_fortran() {
        ArrayD::from_shape_vec(dim.f(), values)
    } else {
        ArrayD::from_shape_vec(dim, values)
    };
    array.map_err(|e| format(e.to_string()))
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

//! weft graph → ONNX model: weights as raw little-endian initializers, static input and
//! output shapes, each op as its ONNX node.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use prost::Message;
pub use weft_graph::op::EXPORT_OPSET;
use weft_graph::op::{Attribute, Constant, ExportNode};
use weft_graph::{Graph, Tensor};
use weft_ir::dtype::DType;

use crate::error::ExportError;
use crate::proto::attribute_proto::AttributeType;
use crate::proto::tensor_proto::DataType;
use crate::proto::tensor_shape_proto::{Dimension, dimension};
use crate::proto::type_proto;
use crate::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

/// Writes `graph` to `path` as an ONNX model, whole: into a temporary file in the same
/// folder, then renamed over `path`, so a reader never sees half a model.
pub fn save(graph: &Graph, path: &Path) -> Result<(), ExportError> {
    let bytes = to_bytes(graph)?;
    let io = |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .map_or("model.onnx".into(), |n| n.to_string_lossy().into_owned());
    // A rename over a device node, a FIFO or a folder would replace it: only a regular
    // file or a new path is written.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a device, a FIFO or a folder): weft writes only over a regular file or a new path",
        )));
    }
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

/// The ONNX model of `graph`, serialized.
pub fn to_bytes(graph: &Graph) -> Result<Vec<u8>, ExportError> {
    Ok(to_model(graph)?.encode_to_vec())
}

/// The ONNX model of `graph`.
pub fn to_model(graph: &Graph) -> Result<ModelProto, ExportError> {
    graph.validate()?;
    // What each op adds to its node (its module's `OpDef::export`), before anything is
    // written: the opset is the newest any node needs.
    let mut exported = Vec::with_capacity(graph.nodes.len());
    for n in &graph.nodes {
        let inputs = n.inputs.iter().map(|&i| graph.tensor(i)).collect();
        let out = graph.tensor(n.output);
        let mut node = ExportNode::new(inputs, out);
        n.op.def()
            .export(&mut node)
            .map_err(|what| ExportError::Tensor {
                tensor: out.name.clone(),
                what,
            })?;
        exported.push(node);
    }
    let opset = exported
        .iter()
        .map(|e| e.opset)
        .max()
        .unwrap_or(EXPORT_OPSET);
    // The IR version each opset came with (opset 17: IR 8).
    let ir_version = match opset {
        ..=18 => 8,
        19..=20 => 9,
        _ => 10,
    };
    let mut names: HashSet<String> = graph.tensors.iter().map(|t| t.name.clone()).collect();
    let mut g = GraphProto {
        name: graph.name.clone(),
        ..GraphProto::default()
    };
    for &i in &graph.inputs {
        g.input.push(value_info(graph.tensor(i))?);
    }
    for t in &graph.tensors {
        if let Some(data) = &t.data {
            g.initializer.push(float_tensor(
                &t.name,
                &t.shape,
                data.iter().copied(),
                t.dtype,
            )?);
        }
    }
    for (n, e) in graph.nodes.iter().zip(&exported) {
        let mut inputs: Vec<String> = e.inputs.iter().map(|t| t.name.clone()).collect();
        let out = e.output;
        for (what, c) in &e.constants {
            let name = fresh(&mut names, &format!("{}_{what}", out.name));
            g.initializer.push(match c {
                Constant::Ints(values) => int64_tensor(&name, values),
                Constant::Scalar(v, dtype) => {
                    float_tensor(&name, &[], [*v as f32].into_iter(), *dtype)?
                }
            });
            inputs.push(name);
        }
        let attrs = e
            .attributes
            .iter()
            .map(|(name, a)| attribute(name, a, &out.name))
            .collect::<Result<Vec<_>, _>>()?;
        let mut op_type = n.op.name();
        if let Some((written, through)) = e.written_as {
            // Each unary op of the first input, a node of its own read by this one.
            for &u in through {
                let output = fresh(&mut names, &format!("{}_{}", out.name, u.to_lowercase()));
                g.node.push(NodeProto {
                    name: fresh(&mut names, &format!("{}_{}", n.name, u.to_lowercase())),
                    op_type: u.to_string(),
                    input: vec![inputs[0].clone()],
                    output: vec![output.clone()],
                    ..NodeProto::default()
                });
                inputs.push(output);
            }
            op_type = written;
        }
        g.node.push(NodeProto {
            name: n.name.clone(),
            op_type: op_type.to_string(),
            input: inputs,
            output: vec![out.name.clone()],
            attribute: attrs,
            ..NodeProto::default()
        });
    }
    for &o in &graph.outputs {
        g.output.push(value_info(graph.tensor(o))?);
    }
    Ok(ModelProto {
        ir_version,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        producer_name: "weft".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        graph: Some(g),
        ..ModelProto::default()
    })
}

/// An attribute of the node giving `out`, as ONNX writes it.
fn attribute(name: &str, a: &Attribute, out: &str) -> Result<AttributeProto, ExportError> {
    let base = AttributeProto {
        name: name.into(),
        ..AttributeProto::default()
    };
    Ok(match a {
        Attribute::Int(i) => AttributeProto {
            r#type: AttributeType::Int as i32,
            i: *i,
            ..base
        },
        Attribute::Ints(v) => AttributeProto {
            r#type: AttributeType::Ints as i32,
            ints: v.clone(),
            ..base
        },
        Attribute::Float(f) => AttributeProto {
            r#type: AttributeType::Float as i32,
            f: *f as f32,
            ..base
        },
        Attribute::String(text) => AttributeProto {
            r#type: AttributeType::String as i32,
            s: text.as_bytes().to_vec(),
            ..base
        },
        Attribute::DType(dtype) => AttributeProto {
            r#type: AttributeType::Int as i32,
            i: elem_type(out, *dtype)? as i64,
            ..base
        },
    })
}

/// `base`, or `base_2`, `base_3`, ... where taken; recorded as taken.
fn fresh(names: &mut HashSet<String>, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while names.contains(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    names.insert(name.clone());
    name
}

/// An int64 initializer (a shape, a Slice's bounds) called `name`.
fn int64_tensor(name: &str, values: &[i64]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: vec![values.len() as i64],
        data_type: DataType::Int64 as i32,
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..TensorProto::default()
    }
}

/// ONNX's element type for a dtype. weft's i32 tensors are ONNX's int64 ones (token ids,
/// indices: weft indexes in 32 bits on every device), so they are written as int64.
fn elem_type(t: &str, dtype: DType) -> Result<DataType, ExportError> {
    match dtype {
        DType::F32 => Ok(DataType::Float),
        DType::F16 => Ok(DataType::Float16),
        DType::I32 => Ok(DataType::Int64),
        DType::Bool => Ok(DataType::Bool),
        other => Err(ExportError::Tensor {
            tensor: t.to_string(),
            what: format!("is {other}: weft exports float, float16, int64 and bool tensors"),
        }),
    }
}

/// A float initializer in raw little-endian bytes of `dtype`.
fn float_tensor(
    name: &str,
    dims: &[usize],
    values: impl Iterator<Item = f32>,
    dtype: DType,
) -> Result<TensorProto, ExportError> {
    let ty = elem_type(name, dtype)?;
    let raw_data = match ty {
        DataType::Float16 => values
            .flat_map(|v| half::f16::from_f32(v).to_le_bytes())
            .collect(),
        DataType::Int64 => values.flat_map(|v| (v as i64).to_le_bytes()).collect(),
        DataType::Bool => values.map(|v| u8::from(v != 0.0)).collect(),
        _ => values.flat_map(f32::to_le_bytes).collect(),
    };
    Ok(TensorProto {
        name: name.to_string(),
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: ty as i32,
        raw_data,
        ..TensorProto::default()
    })
}

/// A tensor's name, element type and static shape.
fn value_info(t: &Tensor) -> Result<ValueInfoProto, ExportError> {
    let dim = t
        .shape
        .iter()
        .map(|&d| Dimension {
            value: Some(dimension::Value::DimValue(d as i64)),
            ..Dimension::default()
        })
        .collect();
    Ok(ValueInfoProto {
        name: t.name.clone(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: elem_type(&t.name, t.dtype)? as i32,
                shape: Some(TensorShapeProto { dim }),
            })),
            ..TypeProto::default()
        }),
        ..ValueInfoProto::default()
    })
}

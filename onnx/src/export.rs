//! weft graph → ONNX model: weights as raw little-endian initializers, static input and
//! output shapes, each op as its ONNX node.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use prost::Message;
use weft_graph::op::{Op, PoolKind, Unary};
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

/// The default-domain opset models are written in; ops newer than it raise it (Mish to
/// 18, Gelu to 20).
pub const EXPORT_OPSET: i64 = 17;

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
    let opset = graph
        .nodes
        .iter()
        .map(|n| match n.op {
            Op::Unary(Unary::Gelu { .. }) => 20,
            Op::Unary(Unary::Mish) => 18,
            _ => EXPORT_OPSET,
        })
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
    for n in &graph.nodes {
        let mut inputs: Vec<String> = n
            .inputs
            .iter()
            .map(|&i| graph.tensor(i).name.clone())
            .collect();
        let out = graph.tensor(n.output);
        let mut attrs = Vec::new();
        match &n.op {
            Op::Conv(c) => {
                let w = graph.tensor(n.inputs[1]);
                attrs.push(ints("kernel_shape", &w.shape[2..]));
                attrs.push(ints("strides", &c.strides));
                attrs.push(ints("pads", &c.pads));
                attrs.push(ints("dilations", &c.dilations));
                attrs.push(int("group", c.groups as i64));
            }
            Op::BatchNorm { epsilon } => attrs.push(float("epsilon", *epsilon)),
            Op::Unary(u) => match *u {
                Unary::HardSigmoid { alpha, beta } => {
                    attrs.push(float("alpha", alpha));
                    attrs.push(float("beta", beta));
                }
                Unary::Selu { alpha, gamma } => {
                    attrs.push(float("alpha", alpha));
                    attrs.push(float("gamma", gamma));
                }
                Unary::LeakyRelu { alpha }
                | Unary::Elu { alpha }
                | Unary::Celu { alpha }
                | Unary::ThresholdedRelu { alpha } => attrs.push(float("alpha", alpha)),
                Unary::Gelu { tanh: true } => attrs.push(AttributeProto {
                    name: "approximate".into(),
                    r#type: AttributeType::String as i32,
                    s: b"tanh".to_vec(),
                    ..AttributeProto::default()
                }),
                _ => {}
            },
            Op::Clip { min, max } => {
                // Bounds are inputs since opset 11, in the input's element type.
                for (what, v) in [("min", *min), ("max", *max)] {
                    let name = fresh(&mut names, &format!("{}_{what}", out.name));
                    g.initializer.push(float_tensor(
                        &name,
                        &[],
                        [v as f32].into_iter(),
                        out.dtype,
                    )?);
                    inputs.push(name);
                }
            }
            Op::Pool(p) => {
                attrs.push(ints("kernel_shape", &p.kernel));
                attrs.push(ints("strides", &p.strides));
                attrs.push(ints("pads", &p.pads));
                attrs.push(int("ceil_mode", i64::from(p.ceil_mode)));
                if p.kind == PoolKind::Average {
                    attrs.push(int("count_include_pad", i64::from(p.count_include_pad)));
                }
            }
            Op::Concat { axis } | Op::Flatten { axis } => attrs.push(int("axis", *axis as i64)),
            Op::Reshape { shape } => {
                let name = fresh(&mut names, &format!("{}_shape", out.name));
                g.initializer.push(TensorProto {
                    name: name.clone(),
                    dims: vec![shape.len() as i64],
                    data_type: DataType::Int64 as i32,
                    raw_data: shape
                        .iter()
                        .flat_map(|&d| (d as i64).to_le_bytes())
                        .collect(),
                    ..TensorProto::default()
                });
                inputs.push(name);
            }
            Op::Gemm(gm) => {
                attrs.push(float("alpha", gm.alpha));
                attrs.push(float("beta", gm.beta));
                attrs.push(int("transA", i64::from(gm.trans_a)));
                attrs.push(int("transB", i64::from(gm.trans_b)));
            }
            Op::Binary(_) | Op::GlobalPool(_) | Op::MatMul | Op::Identity => {}
        }
        g.node.push(NodeProto {
            name: n.name.clone(),
            op_type: n.op.name().to_string(),
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

/// ONNX's element type for a float dtype.
fn elem_type(t: &str, dtype: DType) -> Result<DataType, ExportError> {
    match dtype {
        DType::F32 => Ok(DataType::Float),
        DType::F16 => Ok(DataType::Float16),
        other => Err(ExportError::Tensor {
            tensor: t.to_string(),
            what: format!("is {other}: weft exports float and float16 tensors"),
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

fn int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i,
        ..AttributeProto::default()
    }
}

fn ints(name: &str, v: &[usize]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.iter().map(|&d| d as i64).collect(),
        ..AttributeProto::default()
    }
}

fn float(name: &str, f: f64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Float as i32,
        f: f as f32,
        ..AttributeProto::default()
    }
}

//! weft graph → ONNX model: weights as raw little-endian initializers, static input and
//! output shapes, each op as its ONNX node.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use prost::Message;
use weft_graph::op::{Op, PoolKind, ReduceKind, Unary};
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
            // ONNX's Attention came with opset 23.
            Op::Attention { .. } => 23,
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
            Op::Reshape { shape } | Op::Expand { shape } => {
                let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                inputs.push(int_input(&mut g, &mut names, &out.name, "shape", &shape));
            }
            Op::Transpose { perm } => attrs.push(ints("perm", perm)),
            Op::Slice {
                starts,
                steps,
                sizes,
            } => {
                let dims = &graph.tensor(n.inputs[0]).shape;
                let starts: Vec<i64> = starts.iter().map(|&s| s as i64).collect();
                // One past the last element read; below 0 for a negative step that
                // reads element 0 (ONNX counts a negative end from the back, so that
                // is written as −n − 1, which clamps to "before 0").
                let ends: Vec<i64> = (0..dims.len())
                    .map(|d| {
                        let end = starts[d] + sizes[d] as i64 * steps[d];
                        if end < 0 { -(dims[d] as i64) - 1 } else { end }
                    })
                    .collect();
                let axes: Vec<i64> = (0..dims.len() as i64).collect();
                for (what, v) in [
                    ("starts", &starts),
                    ("ends", &ends),
                    ("axes", &axes),
                    ("steps", steps),
                ] {
                    inputs.push(int_input(&mut g, &mut names, &out.name, what, v));
                }
            }
            Op::Cast { to } => attrs.push(int("to", elem_type(&out.name, *to)? as i64)),
            Op::Gather { axis } | Op::GatherElements { axis } | Op::Softmax { axis } => {
                attrs.push(int("axis", *axis as i64))
            }
            Op::LayerNorm { axis, epsilon } => {
                attrs.push(int("axis", *axis as i64));
                attrs.push(float("epsilon", *epsilon));
            }
            Op::Reduce {
                kind,
                axes,
                keep_dims,
            } => {
                attrs.push(int("keepdims", i64::from(*keep_dims)));
                // ReduceSum takes its axes as an input from opset 13; the others as an
                // attribute until opset 18.
                if *kind == ReduceKind::Sum {
                    let axes: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
                    inputs.push(int_input(&mut g, &mut names, &out.name, "axes", &axes));
                } else {
                    attrs.push(ints("axes", axes));
                }
            }
            Op::Gemm(gm) => {
                attrs.push(float("alpha", gm.alpha));
                attrs.push(float("beta", gm.beta));
                attrs.push(int("transA", i64::from(gm.trans_a)));
                attrs.push(int("transB", i64::from(gm.trans_b)));
            }
            Op::Attention { scale, causal, .. } => {
                // ONNX's Attention reads 3-D inputs as `[batch, seq, heads · size]`;
                // weft's leading dimensions are batch and heads: 4-D only. (The NaN
                // guard is not written: ONNX's op leaves a row of -inf scores as is.)
                if out.shape.len() != 4 {
                    return Err(ExportError::Tensor {
                        tensor: out.name.clone(),
                        what: format!(
                            "an Attention of rank {} (ONNX's Attention takes [batch, heads, seq, size])",
                            out.shape.len()
                        ),
                    });
                }
                attrs.push(float("scale", *scale));
                attrs.push(int("is_causal", i64::from(*causal)));
            }
            Op::Binary(_)
            | Op::GlobalPool(_)
            | Op::MatMul
            | Op::Identity
            | Op::Where
            | Op::IsNaN
            | Op::GatherNd => {}
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

/// An int64 initializer named after `out` and `what` (a shape, a Slice's bounds), as
/// the name of a node input.
fn int_input(
    g: &mut GraphProto,
    names: &mut HashSet<String>,
    out: &str,
    what: &str,
    values: &[i64],
) -> String {
    let name = fresh(names, &format!("{out}_{what}"));
    g.initializer.push(TensorProto {
        name: name.clone(),
        dims: vec![values.len() as i64],
        data_type: DataType::Int64 as i32,
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..TensorProto::default()
    });
    name
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

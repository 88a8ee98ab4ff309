//! Files weft must refuse, each with a typed error whose message names the problem: not
//! ONNX at all, unsupported ops, opsets and attributes, external data, unbound
//! dimensions, undefined or computed inputs, shapes that disagree.

use std::collections::HashMap;

use prost::Message;
use rand::{RngCore, SeedableRng, rngs::StdRng};
use weft_graph::GraphBuilder;
use weft_graph::op::{Conv, Reshape};
use weft_ir::dtype::DType;
use weft_onnx::proto::attribute_proto::AttributeType;
use weft_onnx::proto::tensor_proto::{DataLocation, DataType};
use weft_onnx::proto::tensor_shape_proto::{Dimension, dimension};
use weft_onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    TensorProto, TensorShapeProto, TypeProto, ValueInfoProto, type_proto,
};
use weft_onnx::{Const, ConstData, ImportError, ImportOptions, from_bytes, load};

/// A dimension: a number or a symbol.
enum D {
    N(i64),
    S(&'static str),
}

fn value_info(name: &str, dims: &[D]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                D::N(n) => dimension::Value::DimValue(*n),
                D::S(s) => dimension::Value::DimParam(s.to_string()),
            }),
            ..Dimension::default()
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: DataType::Float as i32,
                shape: Some(TensorShapeProto { dim }),
            })),
            ..TypeProto::default()
        }),
        ..ValueInfoProto::default()
    }
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..NodeProto::default()
    }
}

fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..AttributeProto::default()
    }
}

fn floats(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: DataType::Float as i32,
        float_data: v.to_vec(),
        ..TensorProto::default()
    }
}

fn model(opset: i64, graph: GraphProto) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(graph),
        ..ModelProto::default()
    }
}

/// `y = Relu(x)`, x `[2, 3]`, at `opset`.
fn relu(opset: i64) -> ModelProto {
    model(
        opset,
        GraphProto {
            node: vec![node("Relu", "relu", &["x"], &["y"])],
            input: vec![value_info("x", &[D::N(2), D::N(3)])],
            output: vec![value_info("y", &[D::N(2), D::N(3)])],
            ..GraphProto::default()
        },
    )
}

fn import(m: &ModelProto) -> Result<weft_graph::Graph, ImportError> {
    from_bytes(&m.encode_to_vec(), &ImportOptions::default())
}

/// The error's message, checked to contain every fragment.
fn refused(r: Result<weft_graph::Graph, ImportError>, fragments: &[&str]) -> ImportError {
    let e = r.expect_err("must be refused");
    let msg = e.to_string();
    for f in fragments {
        assert!(msg.contains(f), "`{msg}` does not name `{f}`");
    }
    e
}

/// The bytes of a real model: a small CNN written by weft's export.
fn real_model() -> Vec<u8> {
    let mut b = GraphBuilder::new("cnn");
    let x = b.input("x", &[1, 3, 16, 16], DType::F32);
    let w = b.weight("w", ndarray::ArrayD::ones(vec![16, 3, 3, 3]));
    let y = b.conv("conv", x, w, None, Conv::new(1, 1)).unwrap();
    let y = b.relu("relu", y).unwrap();
    b.output(y);
    weft_onnx::to_bytes(&b.finish().unwrap()).unwrap()
}

#[test]
fn truncated_random_and_empty_files_are_not_onnx() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ImportOptions::default();
    let bytes = real_model();
    assert!(from_bytes(&bytes, &opts).is_ok());
    let half = dir.path().join("half.onnx");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let e = refused(load(&half, &opts), &["not an ONNX model"]);
    assert!(matches!(e, ImportError::NotOnnx(_)), "{e:?}");

    let mut noise = vec![0u8; 4096];
    StdRng::seed_from_u64(1).fill_bytes(&mut noise);
    let e = refused(from_bytes(&noise, &opts), &["not an ONNX model"]);
    assert!(matches!(e, ImportError::NotOnnx(_)), "{e:?}");

    let empty = dir.path().join("empty.onnx");
    std::fs::write(&empty, b"").unwrap();
    refused(load(&empty, &opts), &["not an ONNX model", "empty"]);

    let missing = dir.path().join("missing.onnx");
    refused(load(&missing, &opts), &["cannot read", "missing.onnx"]);

    // Valid protobuf, but no graph.
    let no_graph = ModelProto {
        ir_version: 8,
        ..ModelProto::default()
    };
    let e = refused(from_bytes(&no_graph.encode_to_vec(), &opts), &["no graph"]);
    assert!(matches!(e, ImportError::NoGraph));
}

#[test]
fn unsupported_ops_domains_and_opsets_are_named() {
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    g.node[0] = node("NonMaxSuppression", "nms", &["x"], &["y"]);
    refused(import(&m), &["NonMaxSuppression", "`nms`", "opset 17"]);

    let mut m = relu(19);
    m.graph.as_mut().unwrap().node[0] = node("Gelu", "gelu", &["x"], &["y"]);
    refused(
        import(&m),
        &[
            "Gelu",
            "`gelu`",
            "opset 19",
            "weft imports it from opset 20",
        ],
    );

    let mut m = relu(17);
    m.graph.as_mut().unwrap().node[0].domain = "com.microsoft".into();
    refused(import(&m), &["com.microsoft", "`relu`"]);

    refused(import(&relu(6)), &["opset 6", "7 to 23"]);
    refused(import(&relu(24)), &["opset 24", "7 to 23"]);
    let mut m = relu(17);
    m.opset_import[0].domain = "ai.onnx.ml".into();
    refused(import(&m), &["imports no opset of the default"]);
    assert!(import(&relu(7)).is_ok() && import(&relu(13)).is_ok() && import(&relu(23)).is_ok());
}

#[test]
fn external_data_is_refused_naming_the_tensor() {
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    g.node[0] = node("Add", "add", &["x", "bias"], &["y"]);
    g.initializer.push(TensorProto {
        name: "bias".into(),
        dims: vec![3],
        data_type: DataType::Float as i32,
        data_location: DataLocation::External as i32,
        external_data: vec![StringStringEntryProto {
            key: "location".into(),
            value: "weights.bin".into(),
        }],
        ..TensorProto::default()
    });
    let e = refused(import(&m), &["`bias`", "external"]);
    assert!(matches!(e, ImportError::ExternalData(_)));
}

#[test]
fn symbolic_dims_need_bindings() {
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    g.input[0] = value_info("x", &[D::S("N"), D::S("width")]);
    g.output[0] = value_info("y", &[D::S("N"), D::S("width")]);
    let e = refused(import(&m), &["input `x`", "dimension 0", "`N`"]);
    assert!(matches!(e, ImportError::UnboundDim { .. }));
    let bytes = m.encode_to_vec();
    let batch_only = ImportOptions {
        batch: Some(4),
        ..ImportOptions::default()
    };
    refused(from_bytes(&bytes, &batch_only), &["dimension 1", "`width`"]);
    let opts = ImportOptions {
        batch: Some(4),
        bindings: HashMap::from([("width".to_string(), 7)]),
        ..ImportOptions::default()
    };
    let g = from_bytes(&bytes, &opts).unwrap();
    assert_eq!(g.tensor(g.inputs[0]).shape, [4, 7]);
    // A binding by name wins over the batch.
    let opts = ImportOptions {
        batch: Some(4),
        bindings: HashMap::from([("N".to_string(), 2), ("width".to_string(), 7)]),
        ..ImportOptions::default()
    };
    let g = from_bytes(&bytes, &opts).unwrap();
    assert_eq!(g.tensor(g.outputs[0]).shape, [2, 7]);
}

#[test]
fn inputs_nothing_defines_and_computed_shapes_are_named() {
    let mut m = relu(17);
    m.graph.as_mut().unwrap().node[0] = node("Add", "add", &["x", "ghost"], &["y"]);
    let e = refused(import(&m), &["`add`", "`ghost`"]);
    assert!(matches!(e, ImportError::Undefined { .. }));

    // Reshape's shape computed from a graph input.
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    g.input.push(value_info("s", &[D::N(2)]));
    g.node = vec![
        node("Relu", "r", &["s"], &["s2"]),
        node("Reshape", "reshape", &["x", "s2"], &["y"]),
    ];
    refused(import(&m), &["`reshape`", "`s2`", "must be a constant"]);

    let mut m = relu(17);
    m.graph.as_mut().unwrap().output[0].name = "nowhere".into();
    refused(import(&m), &["`nowhere`"]);
}

/// `y = Reshape(x, s)` with the shape `s` an int64 graph input of 2 elements.
fn reshape_by_input() -> ModelProto {
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    let mut s = value_info("s", &[D::N(2)]);
    if let Some(type_proto::Value::TensorType(t)) = s.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.elem_type = DataType::Int64 as i32;
    }
    g.input.push(s);
    g.node = vec![node("Reshape", "reshape", &["x", "s"], &["y"])];
    g.output[0] = value_info("y", &[D::N(3), D::N(2)]);
    m
}

#[test]
fn graph_inputs_bound_at_import_fold() {
    let m = reshape_by_input();
    let e = refused(import(&m), &["`reshape`", "`s`", "graph input", "bind it"]);
    assert!(matches!(
        e,
        ImportError::NotConstant {
            graph_input: true,
            ..
        }
    ));
    let bind = |dims: Vec<usize>, data: ConstData| ImportOptions {
        constants: HashMap::from([("s".to_string(), Const { dims, data })]),
        ..ImportOptions::default()
    };
    // Bound, `s` is a constant and no longer an input.
    let g = from_bytes(
        &m.encode_to_vec(),
        &bind(vec![2], ConstData::Int(vec![3, 2])),
    )
    .unwrap();
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.tensor(g.outputs[0]).shape, [3, 2]);
    // A name that is no input, a value of another kind or shape, a value out of range.
    let bytes = m.encode_to_vec();
    let mut opts = bind(vec![2], ConstData::Int(vec![3, 2]));
    opts.constants.insert(
        "t".into(),
        Const {
            dims: vec![],
            data: ConstData::Int(vec![1]),
        },
    );
    refused(
        from_bytes(&bytes, &opts),
        &["`t`", "no graph input", "x, s"],
    );
    let floats = ConstData::Float {
        values: ndarray::ArrayD::zeros(ndarray::IxDyn(&[2])),
        dtype: DType::F32,
    };
    refused(
        from_bytes(&bytes, &bind(vec![2], floats)),
        &["`s`", "INT64", "float"],
    );
    refused(
        from_bytes(&bytes, &bind(vec![3], ConstData::Int(vec![3, 2, 1]))),
        &["`s`", "shape [2]", "[3]"],
    );
    refused(
        from_bytes(&bytes, &bind(vec![2], ConstData::Int(vec![3]))),
        &["`s`", "1 elements", "take 2"],
    );
}

#[test]
fn unsupported_attributes_are_named() {
    // A 4-D convolution.
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    let four = [D::N(1), D::N(2), D::N(4), D::N(4), D::N(4), D::N(4)];
    g.input[0] = value_info("x", &four);
    g.output.clear();
    let mut conv = node("Conv", "conv4d", &["x", "w"], &["y"]);
    conv.attribute
        .push(ints_attr("kernel_shape", &[3, 3, 3, 3]));
    g.node = vec![conv];
    g.initializer
        .push(floats("w", &[1, 2, 3, 3, 3, 3], &[0.5; 162]));
    g.output.push(value_info("y", &[]));
    let e = refused(
        import(&m),
        &["`conv4d`", "kernel_shape", "4-D kernel", "3-D only"],
    );
    assert!(matches!(e, ImportError::Attribute { .. }));

    // Training batch normalization.
    let mut m = relu(15);
    let g = m.graph.as_mut().unwrap();
    let mut bn = node(
        "BatchNormalization",
        "bn",
        &["x", "s", "b", "m", "v"],
        &["y"],
    );
    bn.attribute.push(AttributeProto {
        name: "training_mode".into(),
        r#type: AttributeType::Int as i32,
        i: 1,
        ..AttributeProto::default()
    });
    g.node = vec![bn];
    for n in ["s", "b", "m", "v"] {
        g.initializer.push(floats(n, &[3], &[1.0; 3]));
    }
    refused(import(&m), &["`bn`", "training_mode"]);

    // An attribute of the wrong type.
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    let mut flat = node("Flatten", "flat", &["x"], &["y"]);
    flat.attribute.push(ints_attr("axis", &[1]));
    g.node = vec![flat];
    refused(import(&m), &["`flat`", "`axis`", "INTS", "not INT"]);
}

#[test]
fn loss_targets_and_reductions_weft_cannot_take_are_named() {
    // NegativeLogLikelihoodLoss of scores `[2, 3, 4]` at targets of `target` (type, dims).
    let nll = |elem: DataType, dims: &[i64], reduction: &str| {
        let mut m = relu(13);
        let g = m.graph.as_mut().unwrap();
        g.input[0] = value_info("x", &[D::N(2), D::N(3), D::N(4)]);
        let mut t = value_info("t", &dims.iter().map(|&d| D::N(d)).collect::<Vec<_>>());
        if let Some(TypeProto {
            value: Some(type_proto::Value::TensorType(tt)),
            ..
        }) = &mut t.r#type
        {
            tt.elem_type = elem as i32;
        }
        g.input.push(t);
        let mut n = node("NegativeLogLikelihoodLoss", "nll", &["x", "t"], &["y"]);
        n.attribute.push(AttributeProto {
            name: "reduction".into(),
            r#type: AttributeType::String as i32,
            s: reduction.as_bytes().to_vec(),
            ..AttributeProto::default()
        });
        g.node = vec![n];
        g.output = vec![value_info("y", &[])];
        m
    };
    // Right, for contrast: int64 targets `[2, 4]`, a mean.
    import(&nll(DataType::Int64, &[2, 4], "mean")).expect("a loss weft takes");
    refused(
        import(&nll(DataType::Float, &[2, 4], "mean")),
        &["`nll`", "target", "integers"],
    );
    refused(
        import(&nll(DataType::Int64, &[2, 3], "sum")),
        &["`nll`", "[2, 3]", "need targets [2, 4]"],
    );
    let e = refused(
        import(&nll(DataType::Int64, &[2, 4], "max")),
        &["`nll`", "reduction", "`max`"],
    );
    assert!(matches!(e, ImportError::Attribute { .. }));
}

#[test]
fn a_stated_output_shape_that_disagrees_is_named() {
    let mut m = relu(17);
    m.graph.as_mut().unwrap().output[0] = value_info("y", &[D::N(2), D::N(4)]);
    let e = refused(import(&m), &["`y`", "[2, 4]", "[2, 3]"]);
    assert!(matches!(e, ImportError::ShapeMismatch { .. }));
    // A symbol where the file states one is no disagreement.
    let mut m = relu(17);
    m.graph.as_mut().unwrap().output[0] = value_info("y", &[D::S("batch"), D::N(3)]);
    assert!(import(&m).is_ok());
}

#[test]
fn bad_tensor_data_is_named() {
    let mut m = relu(17);
    let g = m.graph.as_mut().unwrap();
    g.node[0] = node("Add", "add", &["x", "bias"], &["y"]);
    g.initializer.push(TensorProto {
        name: "bias".into(),
        dims: vec![3],
        data_type: DataType::Float as i32,
        raw_data: vec![0; 10],
        ..TensorProto::default()
    });
    refused(import(&m), &["`bias`", "10 bytes"]);
    let g = m.graph.as_mut().unwrap();
    g.initializer[0] = TensorProto {
        name: "bias".into(),
        dims: vec![3],
        data_type: DataType::String as i32,
        ..TensorProto::default()
    };
    refused(import(&m), &["`bias`", "STRING"]);
}

#[test]
fn mutated_models_never_panic() {
    // A model using many ops, its bytes flipped at random: every import must return,
    // Ok or a typed error.
    let mut b = GraphBuilder::new("cnn");
    let x = b.input("x", &[1, 4, 9, 7], DType::F32);
    let w = b.weight("w", ndarray::ArrayD::ones(vec![4, 2, 3, 3]));
    let y = b
        .conv("conv", x, w, None, Conv::new(2, 1).grouped(2))
        .unwrap();
    let y = b.clip("clip", y, 0.0, 6.0).unwrap();
    let y = b
        .pool("pool", weft_graph::op::PoolKind::Average, y, 2, 1, 1)
        .unwrap();
    let y = b.flatten("flat", y, 1).unwrap();
    let r = b
        .node(
            "reshape",
            weft_graph::Op::Reshape(Reshape { shape: vec![2, 60] }),
            &[y],
        )
        .unwrap();
    b.output(r);
    let bytes = weft_onnx::to_bytes(&b.finish().unwrap()).unwrap();
    let mut rng = StdRng::seed_from_u64(99);
    let opts = ImportOptions {
        batch: Some(1),
        ..ImportOptions::default()
    };
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let mut m = bytes.clone();
        for _ in 0..1 + rng.next_u32() % 4 {
            let i = rng.next_u32() as usize % m.len();
            m[i] = rng.next_u32() as u8;
        }
        match from_bytes(&m, &opts) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                err += 1;
            }
        }
    }
    assert!(ok > 0 && err > 0, "{ok} imported, {err} refused");
}

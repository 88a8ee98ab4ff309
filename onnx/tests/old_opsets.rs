//! Opsets before 13 give as attributes what later ones give as inputs. Where such a node
//! reads only constants, folding at import evaluates it, and must read the attribute
//! too: a Squeeze whose `axes` attribute were missed would drop every dimension of 1, a
//! Slice whose bounds were missed would keep everything. (The converters' reading of
//! the same attributes is checked against ONNX Runtime in `ops.rs`, by `op_models.py`'s
//! `*_opsetN` cases.)

use ndarray::{ArrayD, IxDyn};
use prost::Message;
use weft_graph::reference;
use weft_onnx::proto::attribute_proto::AttributeType;
use weft_onnx::proto::tensor_proto::DataType;
use weft_onnx::proto::tensor_shape_proto::{Dimension, dimension};
use weft_onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto, type_proto,
};
use weft_onnx::{ImportOptions, from_bytes};

fn value_info(name: &str, dims: &[i64]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|&n| Dimension {
            value: Some(dimension::Value::DimValue(n)),
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

/// Node `op` of `inputs` to `output`, with integer-list attributes `attrs`.
fn node(op: &str, inputs: &[&str], output: &str, attrs: &[(&str, &[i64])]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: output.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        attribute: attrs
            .iter()
            .map(|(name, v)| AttributeProto {
                name: name.to_string(),
                r#type: AttributeType::Ints as i32,
                ints: v.to_vec(),
                ..AttributeProto::default()
            })
            .collect(),
        ..NodeProto::default()
    }
}

/// `y = op(c) + x` at `opset`, `c` the constant `[1, 3, 1]` holding 1, 2, 3 and `x` a
/// graph input `[1, 4]`; the graph's `y` and its reference value for `x = 10, 20, 30,
/// 40`.
fn run(opset: i64, op: NodeProto, y_dims: &[i64]) -> ArrayD<f64> {
    let graph = GraphProto {
        node: vec![op, node("Add", &["t", "x"], "y", &[])],
        initializer: vec![TensorProto {
            name: "c".into(),
            dims: vec![1, 3, 1],
            data_type: DataType::Float as i32,
            float_data: vec![1.0, 2.0, 3.0],
            ..TensorProto::default()
        }],
        input: vec![value_info("x", &[1, 4])],
        output: vec![value_info("y", y_dims)],
        ..GraphProto::default()
    };
    let model = ModelProto {
        ir_version: 6,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(graph),
        ..ModelProto::default()
    };
    let g = from_bytes(&model.encode_to_vec(), &ImportOptions::default())
        .unwrap_or_else(|e| panic!("opset {opset}: {e}"));
    let x = ArrayD::from_shape_vec(IxDyn(&[1, 4]), vec![10.0, 20.0, 30.0, 40.0]).unwrap();
    reference::evaluate(&g, &[x]).unwrap().remove(0)
}

#[test]
fn attributes_of_old_opsets_fold_at_import() {
    // Squeeze-11 of axis 0 only: [3, 1], + [1, 4] = [3, 4]; squeezing every dimension
    // of 1 would give [3], which does not broadcast against [1, 4].
    let y = run(11, node("Squeeze", &["c"], "t", &[("axes", &[0])]), &[3, 4]);
    assert_eq!(y.shape(), &[3, 4]);
    assert_eq!(y[[2, 1]], 23.0);
    // Unsqueeze-7 of [1, 3, 1] at axis 3: [1, 3, 1, 1], + [1, 4] = [1, 3, 1, 4].
    let y = run(
        7,
        node("Unsqueeze", &["c"], "t", &[("axes", &[3])]),
        &[1, 3, 1, 4],
    );
    assert_eq!(y.shape(), &[1, 3, 1, 4]);
    // Slice-9 of elements 1..3 of axis 1: [1, 2, 1] holding 2, 3.
    let slice = node(
        "Slice",
        &["c"],
        "t",
        &[("starts", &[1]), ("ends", &[3]), ("axes", &[1])],
    );
    let y = run(9, slice, &[1, 2, 4]);
    assert_eq!(y.shape(), &[1, 2, 4]);
    assert_eq!(y[[0, 0, 0]], 12.0);
    assert_eq!(y[[0, 1, 3]], 43.0);
}

//! Which versions of each ONNX op weft imports.
//!
//! An ONNX model names one opset per domain; each op's effective version is the newest
//! `since_version` of its schema at or below that opset. [`SINCE_VERSIONS`] lists, per op
//! weft imports, the since-versions that are effective at some opset from
//! [`MIN_OPSET`] to [`MAX_OPSET`]; weft implements each listed version (later versions of
//! these ops added element types, not behaviour weft models differently). An op with no
//! listed version at or below the opset did not exist yet (Gelu before 20, HardSwish
//! before 14) and is refused.
//!
//! Generated with onnx 1.23.2's schemas:
//!
//! ```text
//! python3 -c 'import onnx.defs as d
//! for op in OPS:
//!     vs = set()
//!     for v in range(13, 23):
//!         try: vs.add(d.get_schema(op, max_inclusive_version=v).since_version)
//!         except Exception: pass
//!     print(op, sorted(vs))'
//! ```

/// The oldest default-domain opset weft imports.
pub const MIN_OPSET: i64 = 13;
/// The newest default-domain opset weft imports.
pub const MAX_OPSET: i64 = 22;

/// Per op type, in name order: the since-versions weft implements.
pub const SINCE_VERSIONS: &[(&str, &[i64])] = &[
    ("Abs", &[13]),
    ("Acos", &[7, 22]),
    ("Acosh", &[9, 22]),
    ("Add", &[13, 14]),
    ("And", &[7]),
    ("Asin", &[7, 22]),
    ("Asinh", &[9, 22]),
    ("Atan", &[7, 22]),
    ("Atanh", &[9, 22]),
    ("AveragePool", &[11, 19, 22]),
    ("BatchNormalization", &[9, 14, 15]),
    ("Cast", &[13, 19, 21]),
    ("Ceil", &[13]),
    ("Celu", &[12]),
    ("Clip", &[13]),
    ("Concat", &[13]),
    ("Constant", &[13, 19, 21]),
    ("ConstantOfShape", &[9, 20, 21]),
    ("Conv", &[11, 22]),
    ("Cos", &[7, 22]),
    ("Cosh", &[9, 22]),
    ("Div", &[13, 14]),
    ("Dropout", &[13, 22]),
    ("Elu", &[6, 22]),
    ("Equal", &[13, 19]),
    ("Erf", &[13]),
    ("Exp", &[13]),
    ("Expand", &[13]),
    ("Flatten", &[13, 21]),
    ("Floor", &[13]),
    ("Gather", &[13]),
    ("GatherElements", &[13]),
    ("GatherND", &[13]),
    ("Gelu", &[20]),
    ("Gemm", &[13]),
    ("GlobalAveragePool", &[1, 22]),
    ("GlobalMaxPool", &[1, 22]),
    ("Greater", &[13]),
    ("GreaterOrEqual", &[12, 16]),
    ("HardSigmoid", &[6, 22]),
    ("HardSwish", &[14, 22]),
    ("Identity", &[13, 14, 16, 19, 21]),
    ("IsNaN", &[13, 20]),
    ("LayerNormalization", &[17]),
    ("LeakyRelu", &[6, 16]),
    ("Less", &[13]),
    ("LessOrEqual", &[12, 16]),
    ("Log", &[13]),
    ("MatMul", &[13]),
    ("Max", &[13]),
    ("MaxPool", &[12, 22]),
    ("Min", &[13]),
    ("Mish", &[18, 22]),
    ("Mul", &[13, 14]),
    ("Neg", &[13]),
    ("Not", &[1]),
    ("Or", &[7]),
    ("PRelu", &[9, 16]),
    ("Pow", &[13, 15]),
    ("Range", &[11]),
    ("Reciprocal", &[13]),
    ("ReduceMax", &[13, 18, 20]),
    ("ReduceMean", &[13, 18]),
    ("ReduceMin", &[13, 18, 20]),
    ("ReduceSum", &[13]),
    ("Relu", &[13, 14]),
    ("Reshape", &[13, 14, 19, 21]),
    ("Round", &[11, 22]),
    ("Selu", &[6, 22]),
    ("Shape", &[13, 15, 19, 21]),
    ("Sigmoid", &[13]),
    ("Sign", &[13]),
    ("Sin", &[7, 22]),
    ("Sinh", &[9, 22]),
    ("Size", &[13, 19, 21]),
    ("Slice", &[13]),
    ("Softmax", &[13]),
    ("Softplus", &[1, 22]),
    ("Softsign", &[1, 22]),
    ("Split", &[13, 18]),
    ("Sqrt", &[13]),
    ("Squeeze", &[13, 21]),
    ("Sub", &[13, 14]),
    ("Sum", &[13]),
    ("Tan", &[7, 22]),
    ("Tanh", &[13]),
    ("ThresholdedRelu", &[10, 22]),
    ("Transpose", &[13, 21]),
    ("Unsqueeze", &[13, 21]),
    ("Where", &[9, 16]),
    ("Xor", &[7]),
];

/// What an op is at an opset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effective {
    /// weft implements the op at this since-version.
    Version(i64),
    /// weft imports the op, but it is not in the default domain at this opset.
    NotYet { first: i64 },
    /// weft does not import the op at all.
    Unknown,
}

/// The version of `op` that opset `opset` of the default domain picks.
pub fn effective(op: &str, opset: i64) -> Effective {
    let Ok(i) = SINCE_VERSIONS.binary_search_by(|(name, _)| name.cmp(&op)) else {
        return Effective::Unknown;
    };
    let versions = SINCE_VERSIONS[i].1;
    match versions.iter().rev().find(|&&v| v <= opset) {
        Some(&v) => Effective::Version(v),
        None => Effective::NotYet { first: versions[0] },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_picks_versions() {
        assert!(SINCE_VERSIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(effective("Conv", 13), Effective::Version(11));
        assert_eq!(effective("Conv", 22), Effective::Version(22));
        assert_eq!(effective("Reshape", 20), Effective::Version(19));
        assert_eq!(effective("Gelu", 19), Effective::NotYet { first: 20 });
        assert_eq!(effective("NonMaxSuppression", 17), Effective::Unknown);
    }
}

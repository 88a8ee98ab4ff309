//! Which versions of each ONNX op weft imports.
//!
//! An ONNX model names one opset per domain; each op's effective version is the newest
//! `since_version` of its schema at or below that opset. Each op's module in
//! `weft_graph::op` lists, with its converter ([`weft_graph::op::onnx::OnnxOp`]), the
//! since-versions that are effective at some opset from [`MIN_OPSET`] to [`MAX_OPSET`];
//! [`IMPORT_ONLY`] lists the ops that never become graph nodes (constants and the shape
//! arithmetic folded at import). weft implements each listed version (later versions of
//! these ops added element types, not behaviour weft models differently). An op with no
//! listed version at or below the opset did not exist yet (Gelu before 20, HardSwish
//! before 14) and is refused.
//!
//! The versions were generated with onnx 1.23.2's schemas:
//!
//! ```text
//! python3 -c 'import onnx.defs as d
//! for op in OPS:
//!     vs = set()
//!     for v in range(7, 24):
//!         try: vs.add(d.get_schema(op, max_inclusive_version=v).since_version)
//!         except Exception: pass
//!     print(op, sorted(vs))'
//! ```

use weft_graph::op::Op;
use weft_graph::op::onnx::OnnxOp;

/// The oldest default-domain opset weft imports.
pub const MIN_OPSET: i64 = 7;
/// The newest default-domain opset weft imports.
pub const MAX_OPSET: i64 = 23;

/// The ops weft imports that never become graph nodes, in name order: `Constant` (a
/// value), and the shape arithmetic only folding at import evaluates (refused where its
/// inputs are computed).
pub const IMPORT_ONLY: &[(&str, &[i64])] = &[
    ("Constant", &[1, 9, 11, 12, 13, 19, 21, 23]),
    ("ConstantOfShape", &[9, 20, 21, 23]),
    ("Range", &[11]),
    ("Shape", &[1, 13, 15, 19, 21, 23]),
    ("Size", &[1, 13, 19, 21, 23]),
];

/// How a node of an imported op type becomes part of the graph.
#[derive(Clone, Copy, Debug)]
pub enum Import {
    /// By its op's converter.
    Op(&'static OnnxOp),
    /// A `Constant`: a value, no node.
    Constant,
    /// Shape arithmetic, which folding evaluates where its inputs are constants.
    Folded,
}

/// What an op is at an opset.
#[derive(Clone, Copy, Debug)]
pub enum Effective {
    /// weft implements the op at this since-version, this way.
    Version(i64, Import),
    /// weft imports the op, but it is not in the default domain at this opset.
    NotYet { first: i64 },
    /// weft does not import the op at all.
    Unknown,
}

/// Every op type weft imports and its since-versions, in name order.
pub fn imported() -> Vec<(&'static str, &'static [i64])> {
    let mut all: Vec<(&'static str, &'static [i64])> = Op::onnx_ops()
        .map(|o| (o.op_type, o.since))
        .chain(IMPORT_ONLY.iter().copied())
        .collect();
    all.sort_by_key(|(name, _)| *name);
    all
}

/// The version of `op` that opset `opset` of the default domain picks, and how it is
/// imported.
pub fn effective(op: &str, opset: i64) -> Effective {
    let found = match Op::onnx_ops().find(|o| o.op_type == op) {
        Some(o) => Some((o.since, Import::Op(o))),
        None => IMPORT_ONLY
            .iter()
            .find(|(name, _)| *name == op)
            .map(|&(name, since)| {
                let how = if name == "Constant" {
                    Import::Constant
                } else {
                    Import::Folded
                };
                (since, how)
            }),
    };
    let Some((versions, how)) = found else {
        return Effective::Unknown;
    };
    match versions.iter().rev().find(|&&v| v <= opset) {
        Some(&v) => Effective::Version(v, how),
        None => Effective::NotYet { first: versions[0] },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(op: &str, opset: i64) -> Option<i64> {
        match effective(op, opset) {
            Effective::Version(v, _) => Some(v),
            Effective::NotYet { .. } | Effective::Unknown => None,
        }
    }

    #[test]
    fn each_op_is_listed_once_and_versions_are_picked() {
        let all = imported();
        assert!(
            all.windows(2).all(|w| w[0].0 < w[1].0),
            "an op listed twice"
        );
        assert!(all.iter().all(|(_, v)| v.windows(2).all(|w| w[0] < w[1])));
        assert_eq!(version("Conv", 13), Some(11));
        assert_eq!(version("Conv", 22), Some(22));
        assert_eq!(version("Reshape", 20), Some(19));
        assert_eq!(version("Softmax", 12), Some(11));
        assert_eq!(version("Squeeze", 7), Some(1));
        assert_eq!(version("Relu", 7), Some(6));
        assert_eq!(version("Upsample", 9), Some(9));
        assert!(matches!(
            effective("Where", 8),
            Effective::NotYet { first: 9 }
        ));
        assert!(matches!(
            effective("Gelu", 19),
            Effective::NotYet { first: 20 }
        ));
        assert!(matches!(
            effective("NonMaxSuppression", 17),
            Effective::Unknown
        ));
        assert_eq!(version("RMSNormalization", 22), None);
        assert_eq!(version("RMSNormalization", 23), Some(23));
        assert!(matches!(
            effective("Shape", 17),
            Effective::Version(15, Import::Folded)
        ));
    }
}

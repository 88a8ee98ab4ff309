//! Folds that read a decoder's past length: what each computes at every length, checked
//! at three of them (see the parent module).

use super::super::Importer;
use super::super::attrs::Attrs;
use super::super::fold::{Arr, broadcast_from, numel, unravel};
use crate::error::ImportError;
use crate::proto::NodeProto;

/// How a fold that read the past's length came out.
pub(super) enum Followed {
    /// The same at every length (a comparison whose answer does not change, a size).
    Plain,
    /// Affine in the length, each element's slope.
    Slope(Vec<f64>),
    /// Not a constant: the node becomes a graph op over the length as data.
    Graph,
}

impl Importer<'_> {
    /// Follows a fold `node` whose inputs `ins` include constants folded from the past's
    /// length (`out`: its value at `capacity − seq`, computed); None where none is.
    fn fold_position(
        &mut self,
        node: &NodeProto,
        a: &Attrs,
        ins: &[Option<Arr>],
        out: &Arr,
    ) -> Result<Option<Followed>, ImportError> {
        let Some(state) = &self.cache else {
            return Ok(None);
        };
        let slopes: Vec<Option<&Vec<f64>>> = node
            .input
            .iter()
            .map(|n| state.slopes.get(n.as_str()))
            .collect();
        if slopes.iter().all(Option::is_none) {
            return Ok(None);
        }
        let past = state.past() as f64;
        let refuse = |what: String| ImportError::Node {
            node: a.name.to_string(),
            op: node.op_type.clone(),
            what: format!(
                "{what}, a value computed from the past keys' length: weft follows it into sizes, positions and comparisons only"
            ),
        };
        // The inputs at `past − k`.
        let at = |k: f64| -> Vec<Option<Arr>> {
            ins.iter()
                .zip(&slopes)
                .map(|(x, s)| match (x, s) {
                    (Some(x), Some(s)) => Some(Arr {
                        v: x.v.iter().zip(s.iter()).map(|(v, s)| v - s * k).collect(),
                        ..x.clone()
                    }),
                    (x, _) => x.clone(),
                })
                .collect()
        };
        let op = node.op_type.as_str();
        let tainted = |i: usize| slopes.get(i).copied().flatten().is_some();
        // Where the past's length is 0 at every run, it is a plain constant; a Shape or
        // Size reads only sizes, the cache's at every run.
        if past == 0.0 || matches!(op, "Shape" | "Size") {
            return Ok(Some(Followed::Plain));
        }
        let (one_less, zero) = (
            self.evaluate(node, a, &at(1.0))?,
            self.evaluate(node, a, &at(past))?,
        );
        let (Some(one_less), Some(zero)) = (one_less, zero) else {
            return Err(refuse(format!(
                "{op} of it cannot be evaluated at every length"
            )));
        };
        if one_less.dims != out.dims || zero.dims != out.dims {
            // Its size follows the length: right as the cache's (every tensor is as
            // long as the cache) where only sizes read it.
            let sizes_only = match op {
                "Range" => !tainted(0) && !tainted(2),
                "ConstantOfShape" => true,
                "Expand" | "Reshape" => !tainted(0),
                _ => false,
            };
            return if sizes_only {
                Ok(Some(Followed::Plain))
            } else {
                Err(refuse(format!(
                    "{op} of it has a size that changes with it"
                )))
            };
        }
        let slope: Vec<f64> = out.v.iter().zip(&one_less.v).map(|(v, w)| v - w).collect();
        let affine = out
            .v
            .iter()
            .zip(&zero.v)
            .zip(&slope)
            .all(|((v, z), s)| (v - z - s * past).abs() < 1e-9);
        let flat = slope.iter().all(|&s| s == 0.0);
        match op {
            // Affine in every input: the slopes follow.
            "Cast" | "Identity" | "Neg" | "Add" | "Sub" | "Concat" | "Unsqueeze" | "Squeeze"
            | "Flatten" | "Transpose" => {}
            "Mul" if slopes.iter().filter(|s| s.is_some()).count() == 1 => {}
            "Where" if !tainted(0) => {}
            // A table read at positions computed from the length (GPT-2's position
            // embedding at `cache_position`): its rows are no affine function of it, so
            // the gather is computed on the device at the positions as data.
            "Gather" | "GatherND" if !tainted(0) && !affine => {
                return Ok(Some(Followed::Graph));
            }
            "Gather" | "GatherND" | "Slice" | "Reshape" | "Expand" if !tainted(0) => {}
            "Gather" | "GatherND" | "Reshape" | "Expand" if (1..ins.len()).all(|i| !tainted(i)) => {
            }
            "Slice" if (1..ins.len()).any(tainted) => {
                return Err(refuse("a Slice bounded by it".into()));
            }
            // A comparison whose answer is the same at every length is a constant; one
            // whose answer changes is computed on the device.
            "Equal" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" => {
                return Ok(Some(if self.comparison_fixed(op, ins, &slopes, past)? {
                    Followed::Plain
                } else {
                    Followed::Graph
                }));
            }
            _ => return Ok(Some(Followed::Graph)),
        }
        if !affine {
            return Err(refuse(format!("{op} of it is not affine in it")));
        }
        Ok(Some(if flat {
            Followed::Plain
        } else {
            Followed::Slope(slope)
        }))
    }

    /// Whether comparison `op` of two values affine in the past's length `p` has each
    /// element's answer the same for every `p` in `0..=past`.
    fn comparison_fixed(
        &self,
        op: &str,
        ins: &[Option<Arr>],
        slopes: &[Option<&Vec<f64>>],
        past: f64,
    ) -> Result<bool, ImportError> {
        let (Some(Some(x)), Some(Some(y))) = (ins.first(), ins.get(1)) else {
            return Ok(false);
        };
        let dims: Vec<usize> = {
            let r = x.dims.len().max(y.dims.len());
            let pad = |d: &[usize]| {
                let mut v = vec![1; r - d.len()];
                v.extend_from_slice(d);
                v
            };
            let (dx, dy) = (pad(&x.dims), pad(&y.dims));
            dx.iter().zip(&dy).map(|(&p, &q)| p.max(q)).collect()
        };
        let slope = |k: usize, p: usize| slopes.get(k).copied().flatten().map_or(0.0, |s| s[p]);
        for i in 0..numel(&dims) {
            let ix = unravel(i, &dims);
            let (px, py) = (broadcast_from(&ix, &x.dims), broadcast_from(&ix, &y.dims));
            // The difference x − y at the length `past` and its slope.
            let d = x.v[px] - y.v[py];
            let s = slope(0, px) - slope(1, py);
            let at = |p: f64| d + s * (p - past);
            let same = match op {
                "Equal" => {
                    // Equal at the one length where the difference is 0, if it is a
                    // whole length in range.
                    if s == 0.0 {
                        true
                    } else {
                        let root = past - d / s;
                        !(root.fract() == 0.0 && (0.0..=past).contains(&root))
                    }
                }
                // Monotone in the length: the same answer at both ends is the same
                // between.
                "Less" => (at(0.0) < 0.0) == (at(past) < 0.0),
                "LessOrEqual" => (at(0.0) <= 0.0) == (at(past) <= 0.0),
                "Greater" => (at(0.0) > 0.0) == (at(past) > 0.0),
                _ => (at(0.0) >= 0.0) == (at(past) >= 0.0),
            };
            if !same {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Records how a fold that read the past's length came out; false where the node is
    /// to be a graph op instead.
    pub(in crate::import) fn follow_position(
        &mut self,
        node: &NodeProto,
        a: &Attrs,
        ins: &[Option<Arr>],
        out: &Arr,
    ) -> Result<bool, ImportError> {
        match self.fold_position(node, a, ins, out)? {
            None | Some(Followed::Plain) => Ok(true),
            Some(Followed::Slope(s)) => {
                let state = self.cache.as_mut().expect("followed");
                state.slopes.insert(node.output[0].clone(), s);
                Ok(true)
            }
            Some(Followed::Graph) => Ok(false),
        }
    }

    /// After an op's import read constants (`used`: input index, name) as shapes or
    /// bounds: one folded from the past's length is right only as a Reshape's or an
    /// Expand's target (a size: the cache's length).
    pub(in crate::import) fn check_position_reads(
        &self,
        node: &NodeProto,
        name: &str,
        used: &[(usize, String)],
    ) -> Result<(), ImportError> {
        let Some(state) = &self.cache else {
            return Ok(());
        };
        for (k, cname) in used {
            if !state.sloped(cname) {
                continue;
            }
            let size = matches!((node.op_type.as_str(), *k), ("Reshape" | "Expand", 1));
            if !size {
                return Err(ImportError::Node {
                    node: name.to_string(),
                    op: node.op_type.clone(),
                    what: format!(
                        "it reads `{cname}`, computed from the past keys' length, as input {k}: weft follows that length into sizes (a Reshape's or Expand's target), positions and comparisons only"
                    ),
                });
            }
        }
        Ok(())
    }
}

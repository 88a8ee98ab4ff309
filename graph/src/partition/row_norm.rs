//! An RMS norm folded into the skinny product that reads it (issue 60, the decode step).
//!
//! A decoder layer's two RMS norms each feed one product (after the siblings pass: the
//! merged q/k/v and gate/up products), and the final norm feeds the vocabulary head. At
//! a decode step's few rows each norm is a kernel of one block a row that costs about as
//! much as its launch (~3.5 µs on the H200, 45 of them in TinyLlama's step). Since
//! `RMSNorm(x) · W = r ⊙ ((x ⊙ γ) · W)` with `r[row] = 1 / sqrt(mean_k x[row, k]² + ε)` a
//! factor a row, the product's skinny template computes the norm itself: it reads
//! `x · γ` at its loads of `a`, sums the squares of `x` in the same pass (each of its
//! blocks reads every row of `a` anyway) and scales each sum by `r` at the store
//! (`weft_kernels::gemv::template_normed`). The norm's group goes; its node joins the
//! product's group as [`Group::row_norm`].
//!
//! **The rule**: an RMS norm (`LayerNorm { rms: true }`, no bias) over the last axis is
//! folded where its output is no graph output and is read by one node only, as input 0 (`a`, not transposed) of
//! a MatMul or Gemm anchor over a two-dimensional `b` (not a batched product), whose
//! rows are at most `max_rows` (the skinny template's, `weft_kernels::gemv::MAX_M`, which
//! the model compiler passes: this crate knows no template), and where the norm's own
//! group computes nothing in its loads (a prologue would be recomputed by every block of
//! the product). The norm's axis is then the product's contraction axis. Everywhere else
//! the norm stays a kernel of its own, and [`Fold`] says why (`weft model graph`).
//!
//! The graph is unchanged: the float64 evaluator, the passes and the import never see
//! the fold.

use super::cost;
use super::{Group, GroupKind, Partition, inputs_of};
use crate::graph::{Graph, NodeId};
use crate::op::{Anchor, Op, Product, Role};

/// The key that leaves every RMS norm a kernel of its own
/// (`--disable-pass norm-fold`): what the fold is worth, measured.
pub const KEY: &str = "norm-fold";

/// The fate of one RMS norm whose reader is a matrix product.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    /// The norm.
    pub norm: NodeId,
    /// The product reading it.
    pub product: NodeId,
    /// Computed inside the product's kernel (`true`), or a kernel of its own.
    pub folded: bool,
    /// Why, in words (`1 row(s) ≤ 8, 2048 wide`, `128 rows > 8`).
    pub why: String,
}

/// Folds each RMS norm the rule takes into the product that reads it, in `p`: the norm's
/// group goes and its node becomes the product group's `row_norm`. `p.folds` records
/// the fate of every RMS norm read by a product, folded or not.
pub fn fold_row_norms(g: &Graph, p: &mut Partition, max_rows: usize) {
    let mut folds = Vec::new();
    let readers = g.consumers();
    let mut gone = Vec::new();
    for (ni, norm_group) in p.groups.iter().enumerate() {
        let norm = norm_group.root;
        let node = &g.nodes[norm.0];
        let Op::LayerNorm(ln) = &node.op else {
            continue;
        };
        if !ln.rms {
            continue;
        }
        let reader = match readers.get(&node.output).map(Vec::as_slice) {
            Some([r]) => *r,
            Some(_) | None => continue,
        };
        let Some(ai) = p.groups.iter().position(|gr| gr.root == reader) else {
            continue;
        };
        let product = match g.nodes[reader.0].op.role() {
            Role::Anchor(Anchor::Product(pr)) => pr,
            Role::Anchor(Anchor::Conv(_) | Anchor::Attention(_))
            | Role::Reduction(_)
            | Role::Injective(_)
            | Role::Join { .. }
            | Role::Update(_) => continue,
        };
        let why_not = refusal(g, norm_group, &p.groups[ai], product, max_rows);
        let folded = why_not.is_none();
        let why = why_not.unwrap_or_else(|| {
            let x = &g.tensor(node.inputs[0]).shape;
            let rows: usize = x[..x.len() - 1].iter().product();
            format!(
                "{rows} row(s) ≤ {max_rows}, over the product's contraction axis of {}",
                x[x.len() - 1]
            )
        });
        folds.push(Fold {
            norm,
            product: reader,
            folded,
            why,
        });
        if folded {
            gone.push((ni, ai));
        }
    }
    for &(ni, ai) in &gone {
        let (norm, prologue) = (p.groups[ni].root, p.groups[ni].prologue.clone());
        let anchor = &mut p.groups[ai];
        anchor.row_norm = Some(norm);
        anchor.prologue.extend(prologue);
        anchor.prologue.sort();
        anchor.inputs = inputs_of(g, anchor);
    }
    let groups = std::mem::take(&mut p.groups);
    p.groups = groups
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !gone.iter().any(|&(ni, _)| ni == *i))
        .map(|(_, gr)| gr)
        .collect();
    p.folds = folds;
}

/// Why the norm rooting `norm_group` cannot fold into `anchor` (a product), or `None`
/// where it can.
fn refusal(
    g: &Graph,
    norm_group: &Group,
    anchor: &Group,
    product: Product<'_>,
    max_rows: usize,
) -> Option<String> {
    let node = &g.nodes[norm_group.root.0];
    let Op::LayerNorm(ln) = &node.op else {
        return Some("not an RMS norm".into());
    };
    let x = &g.tensor(node.inputs[0]).shape;
    let reader = &g.nodes[anchor.root.0];
    let rows: usize = x[..x.len().saturating_sub(1)].iter().product();
    let work: f64 = norm_group
        .prologue
        .iter()
        .map(|&n| cost::own_work(g, n).0)
        .sum();
    let trans_a = match product {
        Product::Gemm(gm) => gm.trans_a,
        Product::MatMul => false,
    };
    if ln.axis + 1 != x.len() {
        Some(format!(
            "it normalizes axes {}.. of {x:?}, not the last one alone",
            ln.axis
        ))
    } else if g.outputs.contains(&node.output) {
        Some("its output is a graph output too".into())
    } else if node.inputs.len() > 2 {
        Some("it adds a bias".into())
    } else if norm_group.kind != GroupKind::Reduction || anchor.kind != GroupKind::Anchor {
        Some("not a norm's group and a product's".into())
    } else if reader.inputs[0] != node.output || reader.inputs[1..].contains(&node.output) {
        Some("the product reads it as other than its `a`".into())
    } else if trans_a {
        Some("the product reads it transposed".into())
    } else if g.tensor(reader.inputs[1]).shape.len() != 2 {
        Some("a batched product".into())
    } else if rows > max_rows {
        Some(format!(
            "{rows} rows > {max_rows} (the skinny-product template's)"
        ))
    } else if work > 0.0 {
        Some(format!(
            "its input is computed in its loads ({work:.0} ops/element), which every block of the product would recompute"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::LayerNorm;
    use crate::partition::{Shown, partition};
    use ndarray::{ArrayD, IxDyn};
    use weft_ir::dtype::DType;

    /// `[1, rows, 16]` → the norm (RMS or not) → `· w`; the norm's output a graph output
    /// too where `output`.
    fn normed(rows: usize, rms: bool, output: bool) -> Graph {
        let mut b = GraphBuilder::new("normed");
        let x = b.input("x", &[1, rows, 16], DType::F32);
        let gamma = b.weight("gamma", ArrayD::from_elem(IxDyn(&[16]), 1.5));
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[16, 5]), 0.1));
        let norm = Op::LayerNorm(LayerNorm {
            axis: 2,
            epsilon: 1e-5,
            rms,
        });
        let y = b.node("norm", norm, &[x, gamma]).unwrap();
        let p = b.node("proj", Op::MatMul, &[y, w]).unwrap();
        b.output(p);
        if output {
            b.output(y);
        }
        b.finish().unwrap()
    }

    fn folded(g: &Graph) -> (Partition, String) {
        let mut p = partition(g);
        fold_row_norms(g, &mut p, 8);
        let shown = Shown {
            graph: g,
            partition: &p,
            schedules: None,
        }
        .to_string();
        (p, shown)
    }

    #[test]
    fn a_norm_before_a_product_of_few_rows_joins_its_group() {
        let g = normed(8, true, false);
        let (p, shown) = folded(&g);
        assert_eq!(p.groups.len(), 1, "{shown}");
        let gr = &p.groups[0];
        assert_eq!(gr.row_norm, Some(NodeId(0)));
        // The group reads the norm's input and scale, never its output.
        let names: Vec<&str> = gr
            .inputs
            .iter()
            .map(|&t| g.tensor(t).name.as_str())
            .collect();
        assert_eq!(names, ["x", "gamma", "w"], "{shown}");
        assert!(
            shown.contains("row norm: norm:RMSNormalization")
                && shown.contains(
                    "RMS norm norm:RMSNormalization read by proj:MatMul: in the product's kernel"
                )
                && shown.contains("8 row(s) ≤ 8, over the product's contraction axis of 16"),
            "{shown}"
        );
    }

    #[test]
    fn elsewhere_the_norm_keeps_its_kernel_and_says_why() {
        for (g, why) in [
            (normed(9, true, false), Some("9 rows > 8")),
            (
                normed(2, true, true),
                Some("its output is a graph output too"),
            ),
            (normed(2, false, false), None),
        ] {
            let (p, shown) = folded(&g);
            assert_eq!(p.groups.len(), 2, "{shown}");
            assert!(p.groups.iter().all(|gr| gr.row_norm.is_none()), "{shown}");
            match why {
                Some(why) => assert!(
                    shown.contains(&format!("a kernel of its own — {why}")),
                    "{shown}"
                ),
                // A layer norm with a mean is no factor a row: nothing to say.
                None => assert!(p.folds.is_empty(), "{shown}"),
            }
        }
    }
}

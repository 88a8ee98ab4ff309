//! The partition as `weft model graph` prints it.

use std::fmt;

use super::{GroupKind, Partition, Rule, cost, skinny};
use crate::graph::{Graph, NodeId, type_text};

/// The partition as `weft model graph` prints it: one line per kernel with the nodes it
/// holds, then the Concats that cost no copy.
pub struct Shown<'a> {
    pub graph: &'a Graph,
    pub partition: &'a Partition,
    /// Per group, what schedules it (template and config), where known.
    pub schedules: Option<&'a [String]>,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.graph;
        let name = |n: NodeId| {
            let node = &g.nodes[n.0];
            format!("{}:{}", node.name, node.op.name())
        };
        for (i, gr) in self.partition.groups.iter().enumerate() {
            let kind = match gr.kind {
                GroupKind::Anchor => "anchor",
                GroupKind::Reduction => "reduction",
                GroupKind::Injective => "injective",
            };
            let out = g.tensor(gr.output);
            write!(f, "kernel {i:>3} [{kind}] {}", name(gr.root))?;
            if let Some(n) = gr.row_norm {
                write!(f, "  row norm: {}", name(n))?;
            }
            if !gr.prologue.is_empty() {
                let p: Vec<String> = gr.prologue.iter().map(|&n| name(n)).collect();
                write!(f, "  prologue: {}", p.join(", "))?;
            }
            if !gr.epilogue.is_empty() {
                let e: Vec<String> = gr.epilogue.iter().map(|&n| name(n)).collect();
                write!(f, "  epilogue: {}", e.join(" → "))?;
            }
            if let Some(gt) = gr.gated {
                let e: Vec<String> = gt.nodes().iter().map(|&n| name(n)).collect();
                write!(f, "  gated: {}", e.join(", "))?;
            }
            write!(f, "  → %{}: {}", out.name, type_text(out))?;
            if let Some(s) = gr.slice {
                write!(
                    f,
                    " into %{}[axis {} at {}]",
                    g.tensor(s.buffer).name,
                    s.axis,
                    s.offset
                )?;
            }
            if let Some(s) = self.schedules.and_then(|s| s.get(i)) {
                write!(f, "\n             {s}")?;
            }
            writeln!(f)?;
        }
        for &v in &self.partition.views {
            let out = g.nodes[v.0].output;
            match self.partition.places.get(&out) {
                Some(s) => writeln!(
                    f,
                    "no kernel: {} (a view of %{}[axis {} at {}])",
                    name(v),
                    g.tensor(s.buffer).name,
                    s.axis,
                    s.offset
                )?,
                None => writeln!(
                    f,
                    "no kernel: {} (its inputs write into their slices)",
                    name(v)
                )?,
            }
        }
        for c in &self.partition.copies {
            writeln!(f, "copy: {} ({})", name(c.node), c.why)?;
        }
        for d in &self.partition.decisions {
            let chain: Vec<String> = d.chain.iter().map(|&n| name(n)).collect();
            let cost = d.work * d.reads * d.spread;
            // A broadcast after the chain's computing part: priced and stored before it.
            let spread = if d.spread > 1.0 {
                format!(" × broadcast {:.0}×", d.spread)
            } else {
                String::new()
            };
            let stored = if d.spread > 1.0 && !d.inlined {
                format!(" (stored at {}, before the broadcast)", name(d.stored))
            } else {
                String::new()
            };
            let (cmp, fate) = if d.inlined {
                ("≤", "in the anchor's loads")
            } else {
                (">", "a kernel of its own")
            };
            let (anchor, work) = (name(d.anchor), d.work);
            let head = format!(
                "prologue of {anchor} (input {}): {}",
                d.input,
                chain.join(", ")
            );
            match d.rule {
                Rule::Tiled => writeln!(
                    f,
                    "{head} — {work:.0} ops/element × read {:.1}×{spread} = {cost:.0} {cmp} {:.0}: {fate}{stored}",
                    d.reads,
                    cost::PROLOGUE_BOUND,
                )?,
                Rule::Staged => writeln!(
                    f,
                    "{head} — {work:.0} ops/element computed at the loads of a staged template (× read {:.1}×{spread}): {fate}{stored}",
                    d.reads,
                )?,
                Rule::Skinny { rows, bytes } => writeln!(
                    f,
                    "{head} — {work:.0} ops/element × computed {:.0}×{spread} = {cost:.0} {cmp} {bytes:.0} B of b an element × {:.0} ops/B = {:.0} (skinny product, {rows} row(s)): {fate}{stored}",
                    d.reads,
                    skinny::OPS_PER_BYTE,
                    d.rule.bound(),
                )?,
            }
        }
        for fold in &self.partition.folds {
            let fate = if fold.folded {
                "in the product's kernel (its sums of squares beside the product's, its factor a row at the store)"
            } else {
                "a kernel of its own"
            };
            writeln!(
                f,
                "RMS norm {} read by {}: {fate} — {}",
                name(fold.norm),
                name(fold.product),
                fold.why
            )?;
        }
        Ok(())
    }
}

//! Testing a pass, in one style for every pass: a small graph in, the rewritten graph
//! out. [`rewrite`] runs one pass on a copy of a graph with a default context (or
//! [`rewrite_in`] with a given one); [`Rewrite::check`] compares the printed rewritten
//! graph with the text the test expects, and the outputs of the graph before and after
//! on the same inputs, in float64 ([`max_difference`]).
//!
//! ```
//! use weft_graph::GraphBuilder;
//! use weft_graph::op::Op;
//! use weft_graph::passes::remove_identities;
//! use weft_graph::passes::testing::rewrite;
//! use weft_ir::dtype::DType;
//!
//! let mut b = GraphBuilder::new("t");
//! let x = b.input("x", &[4], DType::F32);
//! let a = b.node("id", Op::Identity, &[x]).unwrap();
//! let y = b.relu("relu", a).unwrap();
//! b.output(y);
//! let g = b.finish().unwrap();
//! rewrite(&g, remove_identities).check(
//!     1,
//!     "
//!     graph t (1 nodes, 0 parameters)
//!       input  %x: f32[4]
//!       %relu = Relu(%x): f32[4]    # relu
//!       output %relu
//!     ",
//!     0.0,
//! );
//! ```
//!
//! The expected text is indented as the test's code is: [`Rewrite::check`] compares it
//! without its common indentation and its blank first and last lines.
//!
//! These are helpers for tests (they panic on a graph the reference cannot evaluate).

use ndarray::{ArrayD, IxDyn};

use super::{Pass, PassContext, compact};
use crate::graph::Graph;
use crate::reference::evaluate;

/// One pass run on a copy of a graph.
#[derive(Clone, Debug)]
pub struct Rewrite {
    /// The graph as given.
    pub before: Graph,
    /// The graph the pass left, compacted (the tensors nothing reads any more gone).
    pub after: Graph,
    /// What the pass returned.
    pub changed: usize,
    /// Why it left something undone ([`PassContext::note`]).
    pub note: Option<String>,
}

/// Runs `pass` on a copy of `g` with the default context ([`PassContext::default`]: f32,
/// the offline CUDA profile, every fused kernel fitting).
pub fn rewrite(g: &Graph, pass: Pass) -> Rewrite {
    rewrite_in(g, pass, &PassContext::default())
}

/// Runs `pass` on a copy of `g` with `cx`.
pub fn rewrite_in(g: &Graph, pass: Pass, cx: &PassContext) -> Rewrite {
    let mut after = g.clone();
    let changed = pass(&mut after, cx);
    Rewrite {
        before: g.clone(),
        after: compact(after),
        changed,
        note: cx.take_note(),
    }
}

impl Rewrite {
    /// The rewritten graph as `Display` prints it (`weft model graph --nodes`).
    pub fn printed(&self) -> String {
        self.after.to_string()
    }

    /// The largest difference between the outputs before and after, in float64.
    pub fn max_difference(&self) -> f64 {
        max_difference(&self.before, &self.after)
    }

    /// Asserts that the rewritten graph is valid, that the pass changed `changed` nodes,
    /// prints as `printed` (compared without its common indentation: [`dedent`]), and
    /// computes what the graph before computed to within `tolerance`. Returns the
    /// rewrite for more checks.
    #[track_caller]
    pub fn check(&self, changed: usize, printed: &str, tolerance: f64) -> &Self {
        if let Err(e) = self.after.validate() {
            panic!("the rewritten graph is not valid: {e}\n{}", self.printed());
        }
        assert_eq!(
            dedent(&self.printed()),
            dedent(printed),
            "the rewritten graph"
        );
        assert_eq!(self.changed, changed, "nodes changed");
        let d = self.max_difference();
        assert!(
            d <= tolerance,
            "the outputs differ by {d:e} (tolerance {tolerance:e})"
        );
        self
    }
}

/// `text` without its blank first and last lines and without the indentation its
/// lines share: a graph's text written inside a test's indented code.
pub fn dedent(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    if lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Inputs of the graph's shapes from a fixed sequence in [-1, 1).
pub fn inputs(g: &Graph) -> Vec<ArrayD<f64>> {
    let mut seed = 12345u64;
    g.inputs
        .iter()
        .map(|&i| {
            ArrayD::from_shape_fn(IxDyn(&g.tensor(i).shape), |_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            })
        })
        .collect()
}

/// The largest difference between the outputs of `a` and `b` on the same inputs
/// ([`inputs`]), in float64; infinite where either holds a NaN the other does not.
pub fn max_difference(a: &Graph, b: &Graph) -> f64 {
    let x = inputs(a);
    let evaluated = |g: &Graph| {
        evaluate(g, &x).unwrap_or_else(|e| panic!("graph `{}` does not evaluate: {e}", g.name))
    };
    let (ya, yb) = (evaluated(a), evaluated(b));
    assert_eq!(ya.len(), yb.len(), "the number of outputs");
    ya.iter()
        .zip(&yb)
        .map(|(p, q)| {
            assert_eq!(p.shape(), q.shape(), "an output's shape");
            p.iter().zip(q).fold(0.0f64, |m, (&u, &v)| {
                // The same value (an infinity too) or NaN on both sides: no difference.
                let d = if u == v || (u.is_nan() && v.is_nan()) {
                    0.0
                } else {
                    (u - v).abs()
                };
                // f64::max drops a NaN: a NaN on one side only is the largest difference.
                if d.is_nan() { f64::INFINITY } else { m.max(d) }
            })
        })
        .fold(0.0, f64::max)
}

//! Activations recognized: the chains of primitive ops PyTorch's exporters write for
//! the activations ONNX (or weft) has one op for, made that one op.
//!
//! ```text
//! GELU        x · 0.5 · (1 + Erf(x / √2))                       (x / √2 or x · 1/√2)
//! GELU, tanh  x · 0.5 · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))  (Pow(x, 3) or x·x·x)
//! SiLU        x · Sigmoid(x)
//! Mish        x · Tanh(Softplus(x))                              (or Log(1 + Exp(x)))
//! HardSwish   x · HardSigmoid(x) (alpha 1/6, beta 1/2), or x · Clip(x + 3, 0, 6) / 6
//! HardSigmoid Clip(x + 3, 0, 6) / 6
//! ```
//!
//! Why: left as a chain, an activation before a product is fused as a prologue into the
//! product's loads, and each of its ops recomputed for every tile that reads an element
//! (BERT's FFN down-projection: 73.8 µs with GELU as five ops, 9 µs as one). One op is
//! fused as the epilogue of its producer instead.
//!
//! Products are matched as a whole: the factors of a tree of `Mul`s (and of `Div`s by a
//! constant, and `Pow(·, 2 or 3)`) are collected in any order and association, the
//! constant ones multiplied together. Only a chain whose intermediate tensors nothing
//! else reads (and no graph output names) is rewritten, and only where the result has
//! the shape and type of `x` (a constant factor does not broadcast it).

use std::collections::HashMap;

use super::PassContext;
use crate::graph::{Graph, Node, NodeId, TensorId};
use crate::op::{Binary, Clip, Op, OpDef, Unary};

/// Rewrites each recognized activation chain into one node; returns how many nodes went.
pub fn recognize_activations(g: &mut Graph, _: &PassContext) -> usize {
    let mut removed = 0;
    while let Some(m) = find(g) {
        removed += rewrite(g, m);
    }
    removed
}

/// One match: the root node (whose output the activation writes), the other nodes of the
/// chain, the activation and its input.
struct Match {
    root: NodeId,
    nodes: Vec<NodeId>,
    op: Unary,
    x: TensorId,
}

/// The graph as the matcher reads it.
struct View<'g> {
    g: &'g Graph,
    producers: HashMap<TensorId, NodeId>,
    consumers: HashMap<TensorId, Vec<NodeId>>,
}

/// The factors of a product: the tensors multiplied, the constants' product, and the
/// nodes the product was read through.
#[derive(Default)]
struct Factors {
    terms: Vec<TensorId>,
    scale: f64,
    nodes: Vec<NodeId>,
}

/// `a` and `b` the same constant to f32's precision (exporters write f32 constants).
fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-5 * b.abs()
}

impl View<'_> {
    /// Read by one node only, and no graph output: a chain may swallow it.
    fn internal(&self, t: TensorId) -> bool {
        self.consumers.get(&t).map_or(0, Vec::len) == 1 && !self.g.outputs.contains(&t)
    }

    /// The node writing `t`, where `t` is internal.
    fn inner(&self, t: TensorId) -> Option<(NodeId, &Node)> {
        if !self.internal(t) {
            return None;
        }
        let &n = self.producers.get(&t)?;
        Some((n, &self.g.nodes[n.0]))
    }

    /// The input of the internal unary `op` writing `t`.
    fn unary(&self, t: TensorId, op: Unary, nodes: &mut Vec<NodeId>) -> Option<TensorId> {
        let (id, n) = self.inner(t)?;
        (n.op == Op::Unary(op)).then(|| {
            nodes.push(id);
            n.inputs[0]
        })
    }

    /// `u` where `t` is the internal `Add(u, c)` or `Add(c, u)` of the constant `c`.
    fn plus(&self, t: TensorId, c: f64, nodes: &mut Vec<NodeId>) -> Option<TensorId> {
        let (id, n) = self.inner(t)?;
        if n.op != Op::Binary(Binary::Add) {
            return None;
        }
        let is_c = |t: TensorId| super::scalar(self.g, t).is_some_and(|v| near(v, c));
        let (a, b) = (n.inputs[0], n.inputs[1]);
        let u = match (is_c(a), is_c(b)) {
            (false, true) => a,
            (true, false) => b,
            (true, true) | (false, false) => return None,
        };
        nodes.push(id);
        Some(u)
    }

    /// The factors of the product written at `t`, reading into `t`'s producer where
    /// `root` or `t` is internal.
    fn factors(&self, t: TensorId, root: bool) -> Factors {
        let mut f = Factors {
            scale: 1.0,
            ..Factors::default()
        };
        self.collect(t, root, &mut f);
        f
    }

    fn collect(&self, t: TensorId, root: bool, f: &mut Factors) {
        if let Some(c) = super::scalar(self.g, t) {
            f.scale *= c;
            return;
        }
        let producer = if root {
            self.producers.get(&t).map(|&n| (n, &self.g.nodes[n.0]))
        } else {
            self.inner(t)
        };
        let Some((id, n)) = producer else {
            f.terms.push(t);
            return;
        };
        let &[a, b] = &n.inputs[..] else {
            f.terms.push(t);
            return;
        };
        let constant = super::scalar(self.g, b);
        if n.op == Op::Binary(Binary::Mul) {
            f.nodes.push(id);
            self.collect(a, false, f);
            self.collect(b, false, f);
        } else if let (Op::Binary(Binary::Div), Some(c)) = (&n.op, constant)
            && c != 0.0
        {
            f.nodes.push(id);
            f.scale /= c;
            self.collect(a, false, f);
        } else if let (Op::Binary(Binary::Pow), Some(p)) = (&n.op, constant)
            && (p == 2.0 || p == 3.0)
        {
            f.nodes.push(id);
            for _ in 0..p as usize {
                f.terms.push(a);
            }
        } else {
            f.terms.push(t);
        }
    }
}

/// Of two terms, the one that is `x` and the other, for each choice of `x`.
fn pairs(terms: &[TensorId]) -> Vec<(TensorId, TensorId)> {
    if let &[a, b] = terms {
        vec![(a, b), (b, a)]
    } else {
        Vec::new()
    }
}

fn find(g: &Graph) -> Option<Match> {
    let v = View {
        g,
        producers: g.producers(),
        consumers: g.consumers(),
    };
    for (i, n) in g.nodes.iter().enumerate() {
        if !matches!(n.op, Op::Binary(Binary::Mul | Binary::Div)) {
            continue;
        }
        let f = v.factors(n.output, true);
        let found = [gelu, gelu_tanh, silu, mish, hard_swish, hard_sigmoid]
            .iter()
            .find_map(|rule| rule(&v, &f));
        let Some((op, x, mut nodes)) = found else {
            continue;
        };
        let (xt, yt) = (g.tensor(x), g.tensor(n.output));
        if xt.shape != yt.shape || xt.dtype != yt.dtype || xt.is_constant() {
            continue;
        }
        nodes.extend(f.nodes.iter().copied().filter(|&m| m != NodeId(i)));
        return Some(Match {
            root: NodeId(i),
            nodes,
            op,
            x,
        });
    }
    None
}

/// What a rule found: the activation, its input, and the chain's nodes besides the
/// product's.
type Found = (Unary, TensorId, Vec<NodeId>);

/// `x · 0.5 · (1 + Erf(x / √2))`.
fn gelu(v: &View, f: &Factors) -> Option<Found> {
    if !near(f.scale, 0.5) {
        return None;
    }
    pairs(&f.terms).into_iter().find_map(|(x, a)| {
        let mut nodes = Vec::new();
        let e = v.plus(a, 1.0, &mut nodes)?;
        let b = v.unary(e, Unary::Erf, &mut nodes)?;
        v.inner(b)?;
        let inner = v.factors(b, false);
        let fits = inner.terms == [x] && near(inner.scale, std::f64::consts::FRAC_1_SQRT_2);
        fits.then(|| {
            nodes.extend(inner.nodes);
            (Unary::Gelu { tanh: false }, x, nodes)
        })
    })
}

/// `x · 0.5 · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))`.
fn gelu_tanh(v: &View, f: &Factors) -> Option<Found> {
    if !near(f.scale, 0.5) {
        return None;
    }
    let k = (2.0 / std::f64::consts::PI).sqrt();
    pairs(&f.terms).into_iter().find_map(|(x, a)| {
        let mut nodes = Vec::new();
        let t = v.plus(a, 1.0, &mut nodes)?;
        let s = v.unary(t, Unary::Tanh, &mut nodes)?;
        v.inner(s)?;
        let scaled = v.factors(s, false);
        let [u] = scaled.terms[..] else {
            return None;
        };
        if !near(scaled.scale, k) {
            return None;
        }
        nodes.extend(scaled.nodes);
        let (add, sum) = v.inner(u)?;
        if sum.op != Op::Binary(Binary::Add) {
            return None;
        }
        let (a, b) = (sum.inputs[0], sum.inputs[1]);
        let cube = if a == x {
            b
        } else if b == x {
            a
        } else {
            return None;
        };
        nodes.push(add);
        v.inner(cube)?;
        let cubed = v.factors(cube, false);
        let fits = cubed.terms == [x, x, x] && near(cubed.scale, 0.044715);
        fits.then(|| {
            nodes.extend(cubed.nodes);
            (Unary::Gelu { tanh: true }, x, nodes)
        })
    })
}

/// `x · Sigmoid(x)`.
fn silu(v: &View, f: &Factors) -> Option<Found> {
    if f.scale != 1.0 {
        return None;
    }
    pairs(&f.terms).into_iter().find_map(|(x, s)| {
        let mut nodes = Vec::new();
        (v.unary(s, Unary::Sigmoid, &mut nodes)? == x).then_some((Unary::Silu, x, nodes))
    })
}

/// `x · Tanh(Softplus(x))`, Softplus also as `Log(1 + Exp(x))`.
fn mish(v: &View, f: &Factors) -> Option<Found> {
    if f.scale != 1.0 {
        return None;
    }
    pairs(&f.terms).into_iter().find_map(|(x, t)| {
        let mut nodes = Vec::new();
        let p = v.unary(t, Unary::Tanh, &mut nodes)?;
        let softplus = {
            let mut more = Vec::new();
            let by_op = v.unary(p, Unary::Softplus, &mut more);
            if by_op == Some(x) {
                Some(more)
            } else {
                let mut more = Vec::new();
                let e = v
                    .unary(p, Unary::Log, &mut more)
                    .and_then(|q| v.plus(q, 1.0, &mut more))
                    .and_then(|e| v.unary(e, Unary::Exp, &mut more));
                (e == Some(x)).then_some(more)
            }
        };
        softplus.map(|more| {
            nodes.extend(more);
            (Unary::Mish, x, nodes)
        })
    })
}

/// `x` where `t` is the internal `Clip(x + 3, 0, 6)`.
fn relu6_of_x_plus_3(v: &View, t: TensorId, nodes: &mut Vec<NodeId>) -> Option<TensorId> {
    let (id, n) = v.inner(t)?;
    if n.op != Op::Clip(Clip { min: 0.0, max: 6.0 }) {
        return None;
    }
    nodes.push(id);
    v.plus(n.inputs[0], 3.0, nodes)
}

/// `x · HardSigmoid(x)` (alpha 1/6, beta 1/2), or `x · Clip(x + 3, 0, 6) / 6`.
fn hard_swish(v: &View, f: &Factors) -> Option<Found> {
    pairs(&f.terms).into_iter().find_map(|(x, h)| {
        let mut nodes = Vec::new();
        if f.scale == 1.0 {
            let (id, n) = v.inner(h)?;
            let Op::Unary(Unary::HardSigmoid { alpha, beta }) = n.op else {
                return None;
            };
            let fits = near(alpha, 1.0 / 6.0) && near(beta, 0.5) && n.inputs[0] == x;
            nodes.push(id);
            fits.then_some((Unary::HardSwish, x, nodes))
        } else if near(f.scale, 1.0 / 6.0) {
            (relu6_of_x_plus_3(v, h, &mut nodes)? == x).then_some((Unary::HardSwish, x, nodes))
        } else {
            None
        }
    })
}

/// `Clip(x + 3, 0, 6) / 6`.
fn hard_sigmoid(v: &View, f: &Factors) -> Option<Found> {
    let [c] = f.terms[..] else {
        return None;
    };
    if !near(f.scale, 1.0 / 6.0) {
        return None;
    }
    let mut nodes = Vec::new();
    let x = relu6_of_x_plus_3(v, c, &mut nodes)?;
    let op = Unary::HardSigmoid {
        alpha: 1.0 / 6.0,
        beta: 0.5,
    };
    Some((op, x, nodes))
}

/// The root becomes the activation (its readers come after it); the chain's other nodes
/// go.
fn rewrite(g: &mut Graph, m: Match) -> usize {
    let root = &mut g.nodes[m.root.0];
    root.name = format!("{}::{}", root.name, m.op.name().to_lowercase());
    root.op = Op::Unary(m.op);
    root.inputs = vec![m.x];
    super::remove_nodes(g, m.nodes)
}

#[cfg(test)]
#[path = "activations_tests.rs"]
mod tests;

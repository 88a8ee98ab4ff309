//! Which constants folded at import depend on a symbolic dimension's size, and how.
//!
//! Exporters compute shapes from the inputs' sizes (`Shape → Gather → Unsqueeze →
//! Concat → Reshape`) and build position ids and masks from them (`Range(0, n)`,
//! `ConstantOfShape([n, n])`, a position table's first `n` rows). `fold` evaluates all of
//! it here, at each symbol's maximum; this module says, for every constant it makes,
//! what that maximum stands for, so that each one is used only where its value at the
//! maximum is right at every length:
//!
//! - an element **is the size** ([`Dep::Size`]: read from an axis that is the symbol,
//!   then only moved: gathered, concatenated, reshaped) — right as a shape that sizes an
//!   axis which follows the symbol (a Reshape's, an Expand's target, a Slice's end),
//!   checked on the graph once the consuming node is in it;
//! - an element **depends on the size otherwise** ([`Dep::Other`]: `n − 1`, `2n`, a
//!   comparison) — refused wherever it is used;
//! - a constant is **numbered by the positions** along an axis (`rows`: `Range(0, n)`,
//!   `ConstantOfShape([n])`, anything computed elementwise from those and from values
//!   that do not depend on `n`) — its entry at position `i` is the same at every length,
//!   so it is right as data: it becomes a weight built at the maximum that carries the
//!   symbol along that axis ([`weft_graph::Symbol::rows`]), masked past `n` wherever it
//!   is mixed across it, as an input's axis is;
//! - anything else computed from them (`opaque`) is refused wherever it is used.
//!
//! A refusal names the Shape or Size node the size came from.

use std::collections::HashSet;

use weft_graph::symbolic::carry;
use weft_graph::{Graph, TensorId};

use super::Importer;
use super::attrs::Attrs;
use super::fold::{Arr, Kind, broadcast_from, numel, unravel};
use crate::error::ImportError;
use crate::proto::NodeProto;

/// How one element of a folded constant depends on a symbol's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dep {
    /// Not at all.
    Free,
    /// It is the size.
    Size,
    /// It is computed from the size.
    Other,
}

/// How a folded constant depends on a symbol (absent: not at all).
#[derive(Clone, Debug)]
pub(super) struct Taint {
    /// The symbol, by its index in the graph's symbols.
    pub(super) symbol: usize,
    /// The Shape or Size node that read it, and which of the two.
    pub(super) origin: (String, &'static str),
    /// Per element (row-major); empty where every element is free.
    pub(super) deps: Vec<Dep>,
    /// Axes along which the constant is numbered by the symbol's positions.
    pub(super) rows: Vec<usize>,
    /// Computed in a way this module does not follow.
    pub(super) opaque: bool,
}

impl Taint {
    fn dep(&self, i: usize) -> Dep {
        self.deps.get(i).copied().unwrap_or(Dep::Free)
    }

    /// True where some element depends on the size.
    pub(super) fn sized(&self) -> bool {
        self.deps.iter().any(|&d| d != Dep::Free)
    }

    /// True where some element depends on the size other than by being it.
    fn other(&self) -> bool {
        self.deps.contains(&Dep::Other)
    }

    fn opaque_like(t: &Taint) -> Taint {
        Taint {
            symbol: t.symbol,
            origin: t.origin.clone(),
            deps: Vec::new(),
            rows: Vec::new(),
            opaque: true,
        }
    }
}

/// `dims` as `[0, 1, 2, ...]` in `kind` Int: folded through an op that moves elements, it
/// says where each output element came from.
fn iota(dims: &[usize], offset: usize) -> Arr {
    Arr {
        dims: dims.to_vec(),
        v: (offset..offset + numel(dims)).map(|i| i as f64).collect(),
        kind: Kind::Int,
    }
}

impl Importer<'_> {
    /// The taint of `node`'s folded output `out` (None: it depends on no symbol).
    pub(super) fn fold_taint(
        &self,
        node: &NodeProto,
        a: &Attrs,
        ins: &[Option<Arr>],
        read: Option<TensorId>,
        out: &Arr,
    ) -> Result<Option<Taint>, ImportError> {
        let op = node.op_type.as_str();
        if matches!(op, "Shape" | "Size") {
            return Ok(self.read_taint(node, a, ins, read));
        }
        let taints: Vec<Option<&Taint>> = node
            .input
            .iter()
            .map(|n| self.taint.get(n.as_str()))
            .collect();
        let Some(first) = taints.iter().flatten().next().copied() else {
            return Ok(None);
        };
        let opaque = Taint::opaque_like(first);
        if taints
            .iter()
            .flatten()
            .any(|t| t.opaque || t.symbol != first.symbol)
        {
            return Ok(Some(opaque));
        }
        let t = |i: usize| taints.get(i).copied().flatten();
        let sized = |i: usize| t(i).is_some_and(Taint::sized);
        let mut result = Taint {
            deps: Vec::new(),
            rows: Vec::new(),
            opaque: false,
            ..opaque.clone()
        };
        match op {
            // Elementwise: a value computed from the size depends on it otherwise; the
            // positions numbered along an axis stay numbered (a causal mask compares two
            // such ranges, position ids add an offset that does not depend on `n`).
            "Cast" | "Identity" | "Not" | "Neg" | "Abs" | "Sqrt" | "Ceil" | "Floor" | "Clip"
            | "Where" | "Add" | "Sub" | "Mul" | "Div" | "Mod" | "Max" | "Min" | "Equal"
            | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" | "And" | "Or" | "Xor" => {
                let dims = &out.dims;
                for (k, input) in ins.iter().enumerate() {
                    let (Some(x), Some(tk)) = (input, t(k)) else {
                        continue;
                    };
                    let pad = dims.len() - x.dims.len();
                    for &r in &tk.rows {
                        if !result.rows.contains(&(r + pad)) {
                            result.rows.push(r + pad);
                        }
                    }
                }
                // An operand as long as the maximum along a numbered axis without being
                // numbered itself holds the file to that one length (as for the graph's
                // broadcasts, `Importer::check_constants_along`).
                for &axis in &result.rows {
                    let fixed = ins.iter().enumerate().any(|(k, x)| {
                        let Some(x) = x else {
                            return false;
                        };
                        let pad = dims.len() - x.dims.len();
                        axis >= pad
                            && x.dims[axis - pad] == dims[axis]
                            && dims[axis] > 1
                            && !t(k).is_some_and(|tk| tk.rows.contains(&(axis - pad)))
                    });
                    if fixed {
                        return Ok(Some(opaque));
                    }
                }
                if (0..ins.len()).any(sized) {
                    let min = self.graph.symbols[result.symbol].min as f64;
                    result.deps = (0..numel(dims))
                        .map(|i| {
                            let ix = unravel(i, dims);
                            let at: Vec<(Dep, f64)> = ins
                                .iter()
                                .enumerate()
                                .map(|(k, x)| match x {
                                    Some(x) => {
                                        let p = broadcast_from(&ix, &x.dims);
                                        (t(k).map_or(Dep::Free, |tk| tk.dep(p)), x.v[p])
                                    }
                                    None => (Dep::Free, 0.0),
                                })
                                .collect();
                            elementwise_dep(op, &at, min)
                        })
                        .collect();
                }
            }
            // `Range(s, n, d)` numbers positions where only its limit is the size.
            "Range" => {
                if sized(0) || sized(2) || t(1).is_some_and(|l| l.other() || !l.rows.is_empty()) {
                    return Ok(Some(opaque));
                }
                if sized(1) {
                    result.rows.push(0);
                }
            }
            "ConstantOfShape" => {
                let Some(shape) = t(0) else {
                    return Ok(None);
                };
                if shape.other() || !shape.rows.is_empty() {
                    return Ok(Some(opaque));
                }
                result.rows = (0..out.dims.len())
                    .filter(|&k| shape.dep(k) == Dep::Size)
                    .collect();
            }
            "Gather" | "GatherND" | "Concat" | "Unsqueeze" | "Squeeze" | "Reshape" | "Flatten"
            | "Slice" | "Expand" | "Transpose" => {
                result = match self.moved_taint(node, a, ins, &taints, out, result)? {
                    Some(t) if t.opaque => return Ok(Some(t)),
                    Some(t) => t,
                    None => return Ok(None),
                };
            }
            // Shape and Size are read above; every other op this module folds is listed.
            other => {
                debug_assert!(false, "{other} folds but has no taint rule");
                return Ok(Some(opaque));
            }
        }
        // A numbered axis is as long as the symbol (`Range(2, n)` is not: its entries
        // would sit at the wrong positions).
        let max = self.graph.symbols[result.symbol].max;
        if result
            .rows
            .iter()
            .any(|&axis| out.dims.get(axis) != Some(&max))
        {
            return Ok(Some(Taint::opaque_like(&result)));
        }
        Ok((result.sized() || !result.rows.is_empty()).then_some(result))
    }

    /// A Shape's or Size's output: which of its elements are a symbol's size.
    fn read_taint(
        &self,
        node: &NodeProto,
        a: &Attrs,
        ins: &[Option<Arr>],
        read: Option<TensorId>,
    ) -> Option<Taint> {
        let op: &'static str = if node.op_type == "Shape" {
            "Shape"
        } else {
            "Size"
        };
        let dims = ins.first().and_then(Option::as_ref)?.dims.clone();
        // Per axis of the input: the symbol along it, and whether the axis is exactly it.
        let mut along: Vec<Option<(usize, bool)>> = vec![None; dims.len()];
        let mut unknown = None;
        match read {
            Some(tensor) => {
                for (s, sym) in self.graph.symbols.iter().enumerate() {
                    match carry(&self.graph, sym) {
                        Ok(carried) => {
                            for d in carried.dims.get(&tensor).into_iter().flatten() {
                                let exact = d.inner == 1 && dims.get(d.axis) == Some(&sym.max);
                                if let Some(x) = along.get_mut(d.axis) {
                                    *x = Some((s, exact));
                                }
                            }
                        }
                        // The graph so far does not carry it: the compile will refuse
                        // the node at fault; nothing read here may be trusted.
                        Err(_) => unknown = Some(s),
                    }
                }
            }
            None => {
                let t = self.taint.get(node.input[0].as_str())?;
                if t.opaque {
                    unknown = Some(t.symbol);
                }
                for &r in &t.rows {
                    if let Some(x) = along.get_mut(r) {
                        *x = Some((t.symbol, true));
                    }
                }
            }
        }
        let origin = (a.name.to_string(), op);
        if let Some(symbol) = unknown {
            return Some(Taint {
                symbol,
                origin,
                deps: Vec::new(),
                rows: Vec::new(),
                opaque: true,
            });
        }
        let symbols: HashSet<usize> = along.iter().flatten().map(|&(s, _)| s).collect();
        let &symbol = symbols.iter().next()?;
        let opaque = symbols.len() > 1;
        let deps: Vec<Dep> = if op == "Shape" {
            let r = dims.len() as i64;
            let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
            let s = clamp(a.int("start", 0).unwrap_or(0));
            let e = clamp(a.int("end", r).unwrap_or(r)).max(s);
            along[s..e]
                .iter()
                .map(|x| match x {
                    None => Dep::Free,
                    Some((_, true)) => Dep::Size,
                    Some((_, false)) => Dep::Other,
                })
                .collect()
        } else {
            vec![Dep::Other]
        };
        Some(Taint {
            symbol,
            origin,
            deps,
            rows: Vec::new(),
            opaque,
        })
    }

    /// The taint of an op that moves elements (Gather, Concat, the reshapes, Slice,
    /// Expand, Transpose): folded again over the positions of its data, it says where
    /// each output element came from.
    fn moved_taint(
        &self,
        node: &NodeProto,
        a: &Attrs,
        ins: &[Option<Arr>],
        taints: &[Option<&Taint>],
        out: &Arr,
        mut result: Taint,
    ) -> Result<Option<Taint>, ImportError> {
        let op = node.op_type.as_str();
        let opaque = Ok(Some(Taint::opaque_like(&result)));
        let t = |i: usize| taints.get(i).copied().flatten();
        // The inputs whose elements move: every part of a Concat, else the first.
        let data: Vec<usize> = if op == "Concat" {
            (0..ins.len()).collect()
        } else {
            vec![0]
        };
        let rest_tainted = (0..ins.len())
            .filter(|k| !data.contains(k))
            .any(|k| t(k).is_some());
        let mut traced: Vec<Option<Arr>> = ins.to_vec();
        let mut offsets = Vec::with_capacity(data.len());
        let mut offset = 0;
        for &k in &data {
            let Some(x) = ins.get(k).and_then(Option::as_ref) else {
                return opaque;
            };
            offsets.push(offset);
            traced[k] = Some(iota(&x.dims, offset));
            offset += numel(&x.dims);
        }
        let Some(trace) = self.evaluate(node, a, &traced)? else {
            return opaque;
        };
        let from: Vec<usize> = trace.v.iter().map(|&f| f as usize).collect();
        // Each output element's input (index into `data`) and its position there.
        let source = |f: usize| -> (usize, usize) {
            let part = offsets.iter().rposition(|&o| o <= f).unwrap_or(0);
            (part, f - offsets[part])
        };
        let mut deps = vec![Dep::Free; numel(&out.dims)];
        for (i, d) in deps.iter_mut().enumerate() {
            let (part, at) = source(from[i]);
            if let Some(tk) = t(data[part]) {
                *d = tk.dep(at);
            }
        }
        // Positions numbered along an input axis stay numbered where an output axis
        // follows them element for element.
        for (part, &k) in data.iter().enumerate() {
            let Some(tk) = t(k) else {
                continue;
            };
            let Some(x) = ins.get(k).and_then(Option::as_ref) else {
                return opaque;
            };
            let mine: Vec<(usize, usize)> = from
                .iter()
                .enumerate()
                .filter_map(|(i, &f)| {
                    let (p, at) = source(f);
                    (p == part).then_some((i, at))
                })
                .collect();
            for &b in &tk.rows {
                let found = (0..out.dims.len()).find(|&axis| {
                    out.dims[axis] == x.dims[b]
                        && mine
                            .iter()
                            .all(|&(i, at)| coord(i, &out.dims, axis) == coord(at, &x.dims, b))
                });
                match found {
                    Some(axis) if !result.rows.contains(&axis) => result.rows.push(axis),
                    Some(_) => {}
                    None if op == "Gather" => {
                        // Gathered along the positions at constant indices: the same
                        // entries at every length where each index is below the least.
                        let min = self.graph.symbols[result.symbol].min as f64;
                        let idx = ins.get(1).and_then(Option::as_ref);
                        let below = idx.is_some_and(|idx| {
                            idx.v.iter().all(|&v| v >= 0.0 && v < min) && t(1).is_none()
                        });
                        if !below {
                            return opaque;
                        }
                    }
                    None => return opaque,
                }
            }
        }
        // Concatenated parts are numbered along the same axes or the file holds to one
        // length (a part as long as the maximum that is not numbered).
        if op == "Concat" {
            for &k in &data {
                let numbered = t(k).is_some_and(|tk| !tk.rows.is_empty());
                let Some(x) = ins.get(k).and_then(Option::as_ref) else {
                    return opaque;
                };
                if !numbered
                    && result
                        .rows
                        .iter()
                        .any(|&axis| x.dims.get(axis) == out.dims.get(axis))
                {
                    return opaque;
                }
            }
        }
        // The op's other inputs: Gather's indices, the shapes and bounds.
        if rest_tainted {
            match op {
                // The index tuples' own axes lead the output's.
                "GatherND" => {
                    let Some(idx) = t(1) else {
                        return opaque;
                    };
                    let rank = ins
                        .get(1)
                        .and_then(Option::as_ref)
                        .map_or(0, |x| x.dims.len());
                    if idx.sized() || idx.rows.iter().any(|&r| r + 1 >= rank) {
                        return opaque;
                    }
                    for &r in &idx.rows {
                        if !result.rows.contains(&r) {
                            result.rows.push(r);
                        }
                    }
                }
                "Gather" => {
                    let Some(idx) = t(1) else {
                        return opaque;
                    };
                    if idx.sized() {
                        return opaque;
                    }
                    let ax = {
                        let r = ins[0].as_ref().map_or(0, |x| x.dims.len()) as i64;
                        let v = a.int("axis", 0)?;
                        (if v < 0 { v + r } else { v }) as usize
                    };
                    for &r in &idx.rows {
                        result.rows.push(ax + r);
                    }
                }
                // A target shape whose entry is the size numbers that output axis: the
                // elements along it do not depend on `n` (they are `x`'s, moved).
                "Reshape" | "Expand" => {
                    let Some(shape) = t(1) else {
                        return opaque;
                    };
                    if shape.other() || !shape.rows.is_empty() {
                        return opaque;
                    }
                    let len = ins.get(1).and_then(Option::as_ref).map_or(0, |s| s.v.len());
                    let pad = out.dims.len().saturating_sub(len);
                    for k in 0..len {
                        if shape.dep(k) == Dep::Size && !result.rows.contains(&(k + pad)) {
                            result.rows.push(k + pad);
                        }
                    }
                }
                // Slice(x, 0, n) of a constant: its first `n` entries along the axis.
                "Slice" => {
                    if t(1).is_some() || t(3).is_some() || t(4).is_some() {
                        return opaque;
                    }
                    let Some(ends) = t(2) else {
                        return opaque;
                    };
                    if ends.other() || !ends.rows.is_empty() {
                        return opaque;
                    }
                    let rank = out.dims.len();
                    let axes: Vec<usize> = match ins.get(3).and_then(Option::as_ref) {
                        Some(ax) => {
                            ax.v.iter()
                                .map(|&v| (if v < 0.0 { v + rank as f64 } else { v }) as usize)
                                .collect()
                        }
                        None => (0..rank).collect(),
                    };
                    for (k, &axis) in axes.iter().enumerate() {
                        if ends.dep(k) == Dep::Size && !result.rows.contains(&axis) {
                            result.rows.push(axis);
                        }
                    }
                }
                _ => return opaque,
            }
        }
        result.deps = deps;
        Ok((result.sized() || !result.rows.is_empty()).then_some(result))
    }

    /// Where a constant that depends on a symbol becomes a graph tensor: numbered by its
    /// positions, it carries the symbol; computed from its size, it is refused.
    pub(super) fn taint_as_data(&mut self, name: &str, id: TensorId) {
        let Some(t) = self.taint.get(name) else {
            return;
        };
        if t.opaque || t.sized() {
            let why = format!("reaches `{name}` as data");
            self.refuse_taint(t.clone(), &why);
            return;
        }
        let symbol = &mut self.graph.symbols[t.symbol];
        for &axis in &t.rows {
            if !symbol.rows.contains(&(id, axis)) {
                symbol.rows.push((id, axis));
            }
        }
    }

    /// After node `node` (its ONNX output `out`) read the constants `used` as shapes or
    /// bounds: each entry that is a symbol's size must size an axis that follows the
    /// symbol, and no other taint may be read so.
    pub(super) fn check_taint_as_shapes(
        &mut self,
        node: &NodeProto,
        name: &str,
        used: &[(usize, String)],
    ) {
        let op = node.op_type.as_str();
        for (k, cname) in used {
            let Some(t) = self.taint.get(cname.as_str()).cloned() else {
                continue;
            };
            if t.opaque || t.other() || !t.rows.is_empty() {
                let why = format!("reaches input {k} of `{name}` ({op})");
                self.refuse_taint(t, &why);
                continue;
            }
            let Some(c) = self.consts.get(cname.as_str()) else {
                continue;
            };
            let len = numel(&c.dims);
            let Some(out) = node
                .output
                .first()
                .and_then(|o| self.values.get(o))
                .copied()
            else {
                continue;
            };
            let rank = self.graph.tensor(out).shape.len();
            // Output axis sized by entry `e` of input `k`.
            let axis_of: Box<dyn Fn(usize) -> Option<usize>> = match (op, *k) {
                ("Reshape", 1) => Box::new(Some),
                ("Expand", 1) => Box::new(move |e| (e + rank).checked_sub(len)),
                ("Slice", 2) => {
                    let axes = node
                        .input
                        .get(3)
                        .and_then(|n| self.consts.get(n.as_str()))
                        .and_then(|c| c.ints().map(<[i64]>::to_vec));
                    Box::new(move |e| match &axes {
                        Some(ax) => ax
                            .get(e)
                            .map(|&v| (if v < 0 { v + rank as i64 } else { v }) as usize),
                        None => Some(e),
                    })
                }
                _ => Box::new(|_| None),
            };
            let carried = carry(&self.graph, &self.graph.symbols[t.symbol]).ok();
            for e in (0..len).filter(|&e| t.dep(e) == Dep::Size) {
                let follows = axis_of(e).is_some_and(|axis| {
                    carried.as_ref().is_none_or(|c| {
                        c.dims
                            .get(&out)
                            .is_some_and(|ds| ds.iter().any(|d| d.axis == axis && d.inner == 1))
                    })
                });
                if !follows {
                    let why = format!(
                        "sizes `{}` through input {k} of `{name}` ({op}) along an axis that does not follow the symbol",
                        self.graph.tensor(out).name
                    );
                    self.refuse_taint(t.clone(), &why);
                    break;
                }
            }
        }
    }

    fn refuse_taint(&mut self, t: Taint, why: &str) {
        if self.refused.is_some() {
            return;
        }
        let s = &self.graph.symbols[t.symbol];
        let how = if t.opaque || t.other() {
            "a value computed from it"
        } else if t.sized() {
            "its size"
        } else {
            "a constant numbered by its positions"
        };
        self.refused = Some(ImportError::Node {
            node: t.origin.0,
            op: t.origin.1.to_string(),
            what: format!(
                "it reads the symbolic dimension `{}` ({}..{}), and {how} {why}: weft carries a size read from a symbol only into the shapes of axes that follow it, and into position numbers and masks",
                s.name, s.min, s.max
            ),
        });
    }
}

/// Coordinate along `axis` of flat position `i` in `dims` (row-major).
fn coord(i: usize, dims: &[usize], axis: usize) -> usize {
    let inner: usize = dims[axis + 1..].iter().product();
    (i / inner.max(1)) % dims[axis].max(1)
}

/// How element `i` of an elementwise op's output depends on the size, from its inputs'
/// elements there (`at`: each one's dependence and value at the maximum, which a
/// [`Dep::Size`] element is; `min`: the symbol's least size).
fn elementwise_dep(op: &str, at: &[(Dep, f64)], min: f64) -> Dep {
    let max = at
        .iter()
        .find(|&&(d, _)| d == Dep::Size)
        .map_or(min, |&(_, v)| v);
    let free = |k: usize| at.get(k).is_none_or(|&(d, _)| d == Dep::Free);
    let all_free = at.iter().all(|&(d, _)| d == Dep::Free);
    match op {
        "Cast" | "Identity" => at.first().map_or(Dep::Free, |&(d, _)| d),
        // A condition that does not depend on `n` picks an element that keeps its own
        // dependence (the exporters' `where(shape == -1, 1, shape)`).
        "Where" if free(0) => {
            let pick = if at[0].1 != 0.0 { 1 } else { 2 };
            at.get(pick).map_or(Dep::Free, |&(d, _)| d)
        }
        // A product with an exact 0 that does not depend on `n` is 0 at every length (a
        // batch of one's index times the length; the size is finite).
        "Mul"
            if at.iter().any(|&(d, v)| d == Dep::Free && v == 0.0)
                && at.iter().all(|&(d, _)| d != Dep::Other) =>
        {
            Dep::Free
        }
        // The size compared with a constant: the same answer at the least size as at the
        // maximum means the same at every size between (each comparison is monotone in
        // `n`), so it does not depend on it (`n == -1`, `n > 0`).
        "Equal" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" if at.len() == 2 => {
            let sizes = at.iter().filter(|&&(d, _)| d == Dep::Size).count();
            let others = at.iter().filter(|&&(d, _)| d == Dep::Other).count();
            if sizes == 0 && others == 0 {
                return Dep::Free;
            }
            if sizes != 1 || others != 0 {
                return Dep::Other;
            }
            let cmp = |p: f64, q: f64| match op {
                "Equal" => p == q,
                "Less" => p < q,
                "LessOrEqual" => p <= q,
                "Greater" => p > q,
                _ => p >= q,
            };
            let (p, q) = (at[0].1, at[1].1);
            if op == "Equal" {
                // Equal to a constant inside the range is true at one size only.
                let c = if at[0].0 == Dep::Size { q } else { p };
                return if (min..=max).contains(&c) {
                    Dep::Other
                } else {
                    Dep::Free
                };
            }
            let at_min = if at[0].0 == Dep::Size {
                cmp(min, q)
            } else {
                cmp(p, min)
            };
            if at_min == cmp(p, q) {
                Dep::Free
            } else {
                Dep::Other
            }
        }
        _ if all_free => Dep::Free,
        _ => Dep::Other,
    }
}

/// True where `id` is a constant some symbol's positions number (see the module).
pub(super) fn numbered(g: &Graph, id: TensorId) -> bool {
    g.symbols
        .iter()
        .any(|s| s.rows.iter().any(|&(t, _)| t == id))
}

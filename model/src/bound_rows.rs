//! Work bounded by a length given at run time (issue 60, item 1: "kernels take their
//! sizes as launch arguments"). A graph built at `max` rows along one axis of an input
//! (the prefill's prompt, `input_ids` axis 1) whose run-time count `n` is another input
//! (`prompt_length`, i32 `[1]`): every kernel storing a tensor whose rows are those rows
//! reads `n` at its start, and a block whose stores all lie at rows `n` or past does
//! nothing (the whole body under one condition that is the same for every thread of the
//! block, so no barrier is skipped by part of it).
//!
//! What makes it right, each step checked and the bounding left off where one fails:
//! - **Which tensors hold the rows** ([`OpDef::symbolic`], from the input's axis; as
//!   `weft_graph::symbolic::carry` but stopping where an op does not carry them): a row
//!   below `n` of such a tensor is computed from rows below `n` only.
//! - **Who needs the rows past `n`**: a node that reads such a tensor and does not carry
//!   its rows (a scatter into a cache, a reduction over them, a graph output) needs every
//!   row, and so does everything its input is computed from, row by row, up to the
//!   inputs. Two readers need rows below `n` only: `Where(row < n, x, constant)` (the
//!   rows past `n` are the constant: the prefill's keys and values before the caches),
//!   and a `Gather` along the rows at `n − c` (`c ≥ 1`, the sampled row). A group whose
//!   output holds the rows and nothing needs whole is bounded; its rows past `n` hold
//!   what the buffer held.
//! - **Which blocks write which rows**: the group's output is laid out row-major with
//!   the rows outermost (every axis before them of size 1), so a flat index `i` lies at
//!   row `i / stride`. Of each global write of a kernel (stores to the output only:
//!   a kernel writing anything else global is left alone) the index with every thread
//!   index and loop variable at 0 is `first(block)`, an expression of the block's
//!   indices; every write of the block is proven `≥ first(block)` by interval
//!   arithmetic on the difference (the block's own terms cancel), so a block with
//!   `first(block) ≥ n · stride` writes no row below `n`.
//!
//! Off on WGSL targets, whose uniformity rule refuses a barrier under a condition read
//! from a buffer (a `workgroupUniformLoad` of `n` would lift that), and for graphs the
//! caller did not ask it for: static graphs compile as before.
//!
//! [`OpDef::symbolic`]: weft_graph::op::OpDef::symbolic

use std::collections::{HashMap, HashSet};

use weft_codegen_common::TargetLimits;
use weft_graph::op::symbolic::SymbolicIn;
use weft_graph::op::{Binary, Op};
use weft_graph::partition::Partition;
use weft_graph::symbolic::{Binding, Carry, SymDim};
use weft_graph::{Graph, Layout, Node, NodeId, TensorId};
use weft_ir::arith::{Affine, Bounds, bound, simplify, simplify_with};
use weft_ir::expr::{BinOp, Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::fragment::FragOp;
use weft_ir::func::{GridControl, Param};
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam};

use crate::lower::{Horizontal, LoweredGroup};

/// The key of `CompileOptions::disabled` that leaves a symbolic model's kernels whole
/// at every length ([`bound_symbol`] off).
pub const SYMBOL_KEY: &str = "symbol-bound";

/// What bounds the rows: `rows`'s axis `axis` (built at its greatest count) holds them,
/// and input `length` (i32 `[1]`) their count at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowBound {
    pub rows: String,
    pub axis: usize,
    pub length: String,
}

/// A kernel whose blocks past the run's rows do nothing.
#[derive(Clone, Debug)]
pub struct BoundedKernel {
    /// The kernel's name.
    pub kernel: String,
    /// The first flat index of the output each block writes, an expression of the
    /// block's indices.
    pub first: Expr,
    /// Elements of the output per row.
    pub stride: i64,
    pub grid: [u32; 3],
}

/// What [`bound_rows`] did: the kernels it bounded, and of the rest why not.
#[derive(Clone, Debug, Default)]
pub struct RowBounding {
    pub kernels: Vec<BoundedKernel>,
    /// Every kernel of the model, with blocks.
    pub all_blocks: u64,
    /// Why the bounding is off for the whole model, where it is.
    pub off: Option<String>,
}

impl RowBounding {
    /// Nothing bounded yet, over the blocks of every kernel of `groups`.
    fn new(groups: &[LoweredGroup]) -> RowBounding {
        let all_blocks = groups
            .iter()
            .flat_map(|gr| &gr.kernels.kernels)
            .map(|k| k.grid.iter().map(|&d| u64::from(d)).product::<u64>())
            .sum();
        RowBounding {
            all_blocks,
            ..RowBounding::default()
        }
    }

    /// Blocks that run their body at `n` rows, and the blocks of every kernel of the
    /// model: the first count falls with `n` where kernels were bounded.
    pub fn blocks_at(&self, n: usize) -> (u64, u64) {
        let mut skipped = 0;
        for k in &self.kernels {
            each_block(k.grid, |axes| {
                let mut b = Bounds::new();
                for (axis, v) in axes {
                    b.narrow_axis(axis, v, v);
                }
                // Unbounded values count as work (never happens for a checked first()).
                if bound(&k.first, &b).is_some_and(|(lo, _)| lo >= n as i64 * k.stride) {
                    skipped += 1;
                }
            });
        }
        (self.all_blocks - skipped, self.all_blocks)
    }
}

fn each_block(grid: [u32; 3], mut f: impl FnMut([(ThreadAxis, i64); 3])) {
    for z in 0..grid[2] as i64 {
        for y in 0..grid[1] as i64 {
            for x in 0..grid[0] as i64 {
                f([
                    (ThreadAxis::BlockIdxX, x),
                    (ThreadAxis::BlockIdxY, y),
                    (ThreadAxis::BlockIdxZ, z),
                ]);
            }
        }
    }
}

/// Whether `limits`' target takes a barrier under a condition read from a buffer.
pub fn supported(limits: &TargetLimits) -> bool {
    limits.name == "cpu" || limits.name.starts_with("cuda") || limits.name == "rocm"
}

/// Bounds every kernel of `groups` it can (see the module) by `rb`, adding the length
/// input to their parameters.
pub fn bound_rows(
    g: &Graph,
    partition: &Partition,
    groups: &mut [LoweredGroup],
    rb: &RowBound,
) -> RowBounding {
    let input = |name: &str| g.inputs.iter().copied().find(|&t| g.tensor(t).name == name);
    let (Some(rows), Some(length)) = (input(&rb.rows), input(&rb.length)) else {
        return RowBounding {
            off: Some(format!(
                "the graph has no input `{}` or `{}`",
                rb.rows, rb.length
            )),
            ..RowBounding::new(groups)
        };
    };
    let Some(&max) = g.tensor(rows).shape.get(rb.axis) else {
        return RowBounding {
            off: Some(format!("`{}` has no axis {}", rb.rows, rb.axis)),
            ..RowBounding::new(groups)
        };
    };
    let source = Source {
        seeds: vec![(rows, rb.axis)],
        length,
        min: 1,
        max,
        cut: HashMap::new(),
    };
    bound_from(g, partition, groups, &source)
}

/// Bounds the kernels of a model compiled with symbolic dimensions by its first
/// symbol's value (`symbol.NAME`, f32 `[1]`, which the run writes): the rows are the
/// symbol's along its inputs' axes, and an output holding them is cut back to the
/// run's length (`Executable::run_at`), so its rows past it are needed by nobody.
pub fn bound_symbol(
    g: &Graph,
    partition: &Partition,
    groups: &mut [LoweredGroup],
    binding: &Binding,
) -> RowBounding {
    let Some(s) = binding.symbols.first() else {
        return RowBounding::new(groups);
    };
    let Some(&length) = g.inputs.get(s.value_input) else {
        return RowBounding {
            off: Some(format!("the graph has no value input for `{}`", s.name)),
            ..RowBounding::new(groups)
        };
    };
    // The symbol's own axes (not merged with others: `inner` 1) of the original inputs.
    let seeds: Vec<(TensorId, usize)> = s
        .inputs
        .iter()
        .zip(&g.inputs)
        .flat_map(|(dims, &t)| {
            dims.iter()
                .filter(move |d| d.inner == 1 && g.tensor(t).shape.get(d.axis) == Some(&s.max))
                .map(move |d| (t, d.axis))
        })
        .collect();
    if seeds.is_empty() {
        return RowBounding {
            off: Some(format!(
                "no input holds `{}` along an axis of its own",
                s.name
            )),
            ..RowBounding::new(groups)
        };
    }
    let cut = g
        .outputs
        .iter()
        .zip(&s.outputs)
        .map(|(&t, dims)| (t, dims.clone()))
        .collect();
    let source = Source {
        seeds,
        length,
        min: s.min,
        max: s.max,
        cut,
    };
    bound_from(g, partition, groups, &source)
}

/// Where the rows start and what counts them.
struct Source {
    /// The inputs' axes that hold the rows, each built at `max`.
    seeds: Vec<(TensorId, usize)>,
    /// The input holding their count, `[1]`, i32 or f32.
    length: TensorId,
    min: usize,
    max: usize,
    /// Graph outputs a run cuts back to the length along these dims: where the rows lie
    /// in one exactly so, nothing needs its rows past the length.
    cut: HashMap<TensorId, Vec<SymDim>>,
}

fn bound_from(
    g: &Graph,
    partition: &Partition,
    groups: &mut [LoweredGroup],
    source: &Source,
) -> RowBounding {
    let mut out = RowBounding::new(groups);
    let (length, max) = (source.length, source.max);
    let dtype = g.tensor(length).dtype;
    if !matches!(
        dtype,
        weft_ir::dtype::DType::F32 | weft_ir::dtype::DType::I32
    ) || g.tensor(length).shape != [1]
    {
        out.off = Some(format!(
            "the length `{}` is {dtype:?} {:?}, not an i32 or f32 [1]",
            g.tensor(length).name,
            g.tensor(length).shape
        ));
        return out;
    }
    let carried = carry(g, source);
    let n_buffer = Buffer::new("bound_length", vec![1], dtype, Scope::Global);
    // One lowered group per partition group, in order.
    for (group, pg) in groups.iter_mut().zip(&partition.groups) {
        if group.horizontal != Horizontal::Alone {
            continue;
        }
        let t = g.tensor(pg.output);
        let Some(stride) = carried.stride(pg.output, &t.shape, max) else {
            continue;
        };
        if pg.slice.is_some()
            || partition.places.contains_key(&pg.output)
            || t.layout != Layout::RowMajor
        {
            continue;
        }
        let Some(out_param) = group.params.iter().position(|&p| p == pg.output) else {
            continue;
        };
        let Some(Param::Buffer(out_buffer)) = group.kernels.params.get(out_param).cloned() else {
            continue;
        };
        let mut any = false;
        for k in &mut group.kernels.kernels {
            let Some(first) = first_write(k, out_buffer.id()) else {
                continue;
            };
            guard(k, &first, stride, &n_buffer);
            out.kernels.push(BoundedKernel {
                kernel: k.name.clone(),
                first,
                stride,
                grid: k.grid,
            });
            any = true;
        }
        if any {
            group.kernels.params.push(Param::Buffer(n_buffer.clone()));
            group.params.push(length);
        }
    }
    out
}

/// Where the rows lie in each tensor, and which tensors something needs whole.
struct Carried {
    dims: HashMap<TensorId, Vec<SymDim>>,
    whole: HashSet<TensorId>,
}

impl Carried {
    /// Elements per row of `t` (`shape`), where `t` holds the rows outermost, whole
    /// along their axis, and nothing needs it whole.
    fn stride(&self, t: TensorId, shape: &[usize], max: usize) -> Option<i64> {
        if self.whole.contains(&t) {
            return None;
        }
        let [d] = self.dims.get(&t)?.as_slice() else {
            return None;
        };
        let outer_one = shape[..d.axis].iter().all(|&s| s == 1);
        if !outer_one || shape[d.axis] != max * d.inner {
            return None;
        }
        Some((d.inner * shape[d.axis + 1..].iter().product::<usize>()) as i64)
    }
}

/// Carries the rows of `source`'s seeds through `g`, and marks what is needed whole
/// (see the module).
fn carry(g: &Graph, source: &Source) -> Carried {
    let producers = g.producers();
    let (length, max) = (source.length, source.max);
    let mut c = Carried {
        dims: HashMap::new(),
        whole: HashSet::new(),
    };
    for &(t, axis) in &source.seeds {
        c.dims.entry(t).or_default().push(SymDim::whole(axis));
    }
    let mut needed: Vec<TensorId> = Vec::new();
    for n in &g.nodes {
        let dims: Vec<Vec<SymDim>> = n
            .inputs
            .iter()
            .map(|t| c.dims.get(t).cloned().unwrap_or_default())
            .collect();
        if dims.iter().all(Vec::is_empty) {
            continue;
        }
        if below_length(g, &producers, &c.dims, n, length, max) {
            // `Where(row < n, x, constant)` holds the rows as `x` does (a constant past
            // `n`); a consumer needing them whole stops at it (below).
            if n.op == Op::Where {
                c.dims.insert(n.output, dims[1].clone());
            }
            continue;
        }
        let inputs: Vec<&weft_graph::Tensor> = n.inputs.iter().map(|&t| g.tensor(t)).collect();
        let x = SymbolicIn {
            inputs: &inputs,
            dims: &dims,
            output: g.tensor(n.output),
            min: source.min,
            max,
        };
        match n.op.def().symbolic(&x) {
            Carry::Rows(out) if !out.is_empty() => {
                c.dims.insert(n.output, out);
            }
            // A softmax over keys, or a product contracting them, whose every mixed
            // input a symbol's masks replace past the length (`weft_graph::symbolic::
            // bind`): what it computes inside the length reads inside it only.
            Carry::Bounded { masks, output, .. }
                if !output.is_empty()
                    && masks.iter().all(|&(i, _)| {
                        masked_by_length(g, &producers, n.inputs[i], &dims[i], length, max)
                    }) =>
            {
                c.dims.insert(n.output, output);
            }
            // An output that holds none of the rows reads rows below `n` only (what
            // `Carry::Rows` states: BERT's first token, a slice within the least length).
            Carry::Rows(_) => {}
            Carry::Bounded { .. } | Carry::Refused(_) => {
                // It mixes the rows: it reads every row.
                for (t, d) in n.inputs.iter().zip(&dims) {
                    if !d.is_empty() {
                        needed.push(*t);
                    }
                }
            }
        }
    }
    // A graph output is needed whole unless the run cuts it back to the length along
    // exactly the dims the rows lie on.
    needed.extend(g.outputs.iter().filter(|t| {
        c.dims
            .get(t)
            .is_some_and(|d| source.cut.get(t).is_none_or(|cut| cut != d))
    }));
    // Whole rows of a tensor need whole rows of what it is computed from, row by row.
    while let Some(t) = needed.pop() {
        if !c.whole.insert(t) {
            continue;
        }
        if let Some(p) = producers.get(&t) {
            let node = &g.nodes[p.0];
            if below_length(g, &producers, &c.dims, node, length, max) {
                continue;
            }
            needed.extend(node.inputs.iter().filter(|i| c.dims.contains_key(i)));
        }
    }
    c
}

/// Whether `n` reads the rows below the length only: `Where(row < n, x, constant)` with
/// the rows' table along `x`'s rows, or a `Gather` along the rows at `n − c` (`c ≥ 1`).
fn below_length(
    g: &Graph,
    producers: &HashMap<TensorId, NodeId>,
    dims: &HashMap<TensorId, Vec<SymDim>>,
    n: &Node,
    length: TensorId,
    max: usize,
) -> bool {
    let made = |t: TensorId| producers.get(&t).map(|p| &g.nodes[p.0]);
    let constant = |t: TensorId| g.tensor(t).data.clone();
    let rows_on = |t: TensorId, axis: usize| {
        dims.get(&t).map(Vec::as_slice) == Some(&[SymDim::whole(axis)][..])
    };
    if n.op == Op::Where {
        let (Some(cond), true) = (made(n.inputs[0]), constant(n.inputs[2]).is_some()) else {
            return false;
        };
        if cond.op != Op::Binary(Binary::Less) || cond.inputs[1] != length {
            return false;
        }
        // The rows' table: row i holds i along the axis the rows lie on, size 1 elsewhere.
        let Some(table) = constant(cond.inputs[0]) else {
            return false;
        };
        let x = n.inputs[1];
        let shape = table.shape();
        if shape.len() != g.tensor(x).shape.len() || g.tensor(n.output).shape != g.tensor(x).shape {
            return false;
        }
        let axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] != 1).collect();
        let [a] = axes.as_slice() else {
            return false;
        };
        return shape[*a] == max
            && rows_on(x, *a)
            && table.iter().enumerate().all(|(i, &v)| v == i as f32);
    }
    if let Op::Gather(gather) = &n.op {
        let Some(sub) = made(n.inputs[1]) else {
            return false;
        };
        let Some(c) = sub.inputs.get(1).and_then(|&t| constant(t)) else {
            return false;
        };
        return sub.op == Op::Binary(Binary::Sub)
            && sub.inputs[0] == length
            && c.iter().all(|&v| v >= 1.0)
            && rows_on(n.inputs[0], gather.axis);
    }
    false
}

/// Whether `t` is `Where(valid, x, constant)` with `valid` true exactly at positions
/// below the length along every one of `dims` (`Less(positions, length)` per dim, joined
/// by `And`: the masks `weft_graph::symbolic::bind` writes), so that nothing of `x`
/// past the length along them reaches `t`.
fn masked_by_length(
    g: &Graph,
    producers: &HashMap<TensorId, NodeId>,
    t: TensorId,
    dims: &[SymDim],
    length: TensorId,
    max: usize,
) -> bool {
    let made = |t: TensorId| producers.get(&t).map(|p| &g.nodes[p.0]);
    let Some(w) = made(t) else {
        return false;
    };
    if w.op != Op::Where || g.tensor(w.inputs[2]).data.is_none() || dims.is_empty() {
        return false;
    }
    let rank = g.tensor(t).shape.len();
    // The dims the condition bounds, each `Less(positions, length)`.
    let mut covered: Vec<SymDim> = Vec::new();
    let mut pending = vec![w.inputs[0]];
    while let Some(c) = pending.pop() {
        let Some(node) = made(c) else {
            return false;
        };
        match node.op {
            Op::Binary(Binary::And) => pending.extend(&node.inputs),
            Op::Binary(Binary::Less) if node.inputs[1] == length => {
                let Some(table) = g.tensor(node.inputs[0]).data.clone() else {
                    return false;
                };
                let shape = table.shape();
                let axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] != 1).collect();
                let ([axis], true) = (axes.as_slice(), shape.len() == rank) else {
                    return false;
                };
                let Some(d) = dims.iter().find(|d| d.axis == *axis) else {
                    return false;
                };
                let inner = d.inner.max(1);
                let numbered = table
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| v == ((i / inner) % max) as f32);
                if !numbered || shape[*axis] != max * d.inner {
                    return false;
                }
                covered.push(*d);
            }
            _ => return false,
        }
    }
    dims.iter().all(|d| covered.contains(d))
}

/// The flat index of `kernel`'s first write to the buffer `out` for each block (see the
/// module): `None` where the kernel writes other global memory, writes in a way this
/// does not follow, or a write is not proven at or after it.
fn first_write(kernel: &Kernel, out: u64) -> Option<Expr> {
    let mut sites = Vec::new();
    let mut lets = HashMap::new();
    let mut loops = Vec::new();
    writes(&kernel.body, out, &mut lets, &mut loops, &mut sites)?;
    let (index, _) = sites.first()?;
    let at_zero = |e: &Expr, loops: &[(Var, i64)]| {
        let zeros: HashMap<Var, Expr> = loops
            .iter()
            .map(|(v, _)| (v.clone(), Expr::int(0)))
            .collect();
        e.substitute(&zeros).rewrite(&mut |e| match e {
            Expr::Builtin(a) if !a.is_block() => Expr::int(0),
            other => other,
        })
    };
    let all_loops: Vec<(Var, i64)> = sites.iter().flat_map(|(_, l)| l.clone()).collect();
    let first = at_zero(index, &all_loops);
    let only_blocks = first.vars().is_empty()
        && first.loads().is_empty()
        && !first.uses_builtin(&|a| !a.is_block());
    if !only_blocks {
        return None;
    }
    let first_affine = Affine::from_expr(&first);
    for (index, loops) in &sites {
        let mut b = Bounds::of_launch(kernel.grid, kernel.block);
        for (v, extent) in loops {
            b.set_extent(v, *extent);
        }
        let diff = Affine::from_expr(index).minus(&first_affine).to_expr();
        let (lo, _) = bound(&simplify_with(&diff, &b), &b)?;
        if lo < 0 {
            return None;
        }
    }
    // The zeros folded away: what the kernel computes at its start.
    Some(simplify(&first))
}

/// Collects each write to `out` (its index with the lets above it inlined, and the loops
/// around it); `None` at a global write elsewhere or one this does not follow.
fn writes(
    s: &KStmt,
    out: u64,
    lets: &mut HashMap<Var, Expr>,
    loops: &mut Vec<(Var, i64)>,
    sites: &mut Vec<(Expr, Vec<(Var, i64)>)>,
) -> Option<()> {
    match s {
        KStmt::Seq(items) => {
            for i in items {
                writes(i, out, lets, loops, sites)?;
            }
        }
        KStmt::For {
            var, extent, body, ..
        } => {
            loops.push((var.clone(), *extent));
            writes(body, out, lets, loops, sites)?;
            loops.pop();
        }
        KStmt::If {
            then, otherwise, ..
        } => {
            // Conditions only remove writes: the bound holds without them.
            writes(then, out, lets, loops, sites)?;
            if let Some(o) = otherwise {
                writes(o, out, lets, loops, sites)?;
            }
        }
        KStmt::Let { var, value, body } => {
            let value = value.substitute(lets);
            let old = lets.insert(var.clone(), value);
            writes(body, out, lets, loops, sites)?;
            match old {
                Some(v) => lets.insert(var.clone(), v),
                None => lets.remove(var),
            };
        }
        KStmt::Store { buffer, index, .. } => match buffer.scope() {
            Scope::Global if buffer.id() == out => {
                sites.push((index.substitute(lets), loops.clone()))
            }
            Scope::Global => return None,
            Scope::Shared | Scope::Local => {}
        },
        KStmt::Frag(op) => {
            // A fragment or TMA copy into global memory: not followed.
            if let FragOp::Store { buffer, .. } = op.as_ref()
                && buffer.scope() == Scope::Global
            {
                return None;
            }
            if let FragOp::Tma { dst, .. } = op.as_ref()
                && dst.scope() == Scope::Global
            {
                return None;
            }
        }
        KStmt::AtomicAdd(_) | KStmt::Mapping(_) => return None,
        KStmt::Barrier
        | KStmt::Comment(_)
        | KStmt::Fence
        | KStmt::Prefetch { .. }
        | KStmt::Grid(_) => {}
    }
    Some(())
}

/// `kernel`'s body under `first < n · stride`, `n` read from `length` at its start.
fn guard(kernel: &mut Kernel, first: &Expr, stride: i64, length: &Buffer) {
    let n = Var::new("bound_n", weft_ir::dtype::DType::I32);
    let load = Expr::Load {
        buffer: length.clone(),
        indices: vec![Expr::int(0)],
        lanes: 1,
    };
    // A symbol's value is an f32 whole number (what the masks compare positions with).
    let read = match length.dtype() {
        weft_ir::dtype::DType::F32 => load.cast(weft_ir::dtype::DType::I32),
        _ => load,
    };
    let limit = Expr::binary(BinOp::Mul, Expr::Var(n.clone()), Expr::int(stride));
    let body = std::mem::replace(&mut kernel.body, KStmt::Seq(Vec::new()));
    // `n` is read before anything else, and the body goes under a condition: a wait the
    // kernel placed after its prefetches goes, and the kernel waits at its top again.
    let body = body.without_grid(&|g| g == GridControl::Wait);
    kernel.body = KStmt::Let {
        var: n,
        value: read,
        body: Box::new(KStmt::If {
            cond: first.clone().lt(limit),
            then: Box::new(body),
            otherwise: None,
        }),
    };
    kernel.params.push(KernelParam::Buffer {
        buffer: length.clone(),
        access: Access::Read,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_codegen_common::contract::check_lowered;

    /// A kernel that waits for the previous one after its prefetches goes under the
    /// guard whole: `n` is read first, so the kernel waits at its top again (no wait is
    /// left to stand after that read, under the guard's `if`).
    #[test]
    fn a_guarded_kernel_waits_at_its_top() {
        let mut k = weft_testkit::handmade::prefetch_vecadd();
        check_lowered(&k, "test").unwrap();
        let n = Buffer::new("n", vec![1], weft_ir::dtype::DType::I32, Scope::Global);
        let first = Expr::Builtin(ThreadAxis::BlockIdxX) * 256;
        guard(&mut k, &first, 1, &n);
        let (mut waits, mut prefetches, mut triggers) = (0, 0, 0);
        k.body.visit(&mut |s| {
            waits += matches!(s, KStmt::Grid(GridControl::Wait)) as usize;
            triggers += matches!(s, KStmt::Grid(GridControl::LaunchDependents)) as usize;
            prefetches += matches!(s, KStmt::Prefetch { .. }) as usize;
        });
        assert_eq!((waits, prefetches, triggers), (0, 1, 1));
        check_lowered(&k, "test").unwrap();
    }
}

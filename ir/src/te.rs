//! The te front end: tensor expressions in the style of TVM's `te`.
//!
//! ```
//! use weft_ir::prelude::*;
//! let a = te::placeholder("A", &[1024], DType::F32);
//! let b = te::placeholder("B", &[1024], DType::F32);
//! let c = te::compute("C", &[("i", 1024)], |i| a.at(&[&i[0]]) + b.at(&[&i[0]]));
//! let func = te::create_func("vecadd", [&a, &b, &c]).unwrap();
//! assert_eq!(func.body.blocks().len(), 1);
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use thiserror::Error;

use crate::dtype::DType;
use crate::expr::{BinOp, Buffer, Expr, Intrinsic, IterVar, Reduce, ReduceOp, Scope, UnOp, Var};
use crate::func::{
    Block, BlockId, BlockRealize, BlockVar, For, ForKind, Func, IterKind, Param, Stmt,
};

pub use crate::expr::ComputeOp;

/// A te tensor is a global buffer; computed tensors remember their [`ComputeOp`].
pub type Tensor = Buffer;

/// An input tensor.
pub fn placeholder(name: &str, shape: &[i64], dtype: DType) -> Tensor {
    Buffer::new(name, shape.to_vec(), dtype, Scope::Global)
}

/// A scalar parameter (passed by value to the kernel).
pub fn scalar(name: &str, dtype: DType) -> Var {
    Var::new(name, dtype)
}

/// A computed tensor: `axes` names each output dimension and gives its extent; `f`
/// receives one index expression per axis and returns the element's value (possibly a
/// reduction made by [`sum`], [`max`] or [`min`]).
pub fn compute(name: &str, axes: &[(&str, i64)], f: impl FnOnce(&[Expr]) -> Expr) -> Tensor {
    let axes: Vec<IterVar> = axes.iter().map(|(n, e)| IterVar::new(*n, *e)).collect();
    let idx: Vec<Expr> = axes.iter().map(|a| a.expr()).collect();
    let body = f(&idx);
    let dtype = body.dtype();
    let shape = axes.iter().map(|a| a.extent).collect();
    Buffer::with_producer(
        name,
        shape,
        dtype,
        Arc::new(ComputeOp {
            name: name.to_string(),
            axes,
            body,
        }),
    )
}

/// A reduction axis running over `0..extent`.
pub fn reduce_axis(name: &str, extent: i64) -> IterVar {
    IterVar::new(name, extent)
}

fn reduce(op: ReduceOp, source: Expr, axes: &[&IterVar]) -> Expr {
    Expr::Reduce(Box::new(Reduce {
        op,
        source,
        axes: axes.iter().map(|a| (*a).clone()).collect(),
    }))
}

/// `sum(source)` over `axes`.
pub fn sum(source: Expr, axes: &[&IterVar]) -> Expr {
    reduce(ReduceOp::Sum, source, axes)
}
/// `max(source)` over `axes`.
pub fn max(source: Expr, axes: &[&IterVar]) -> Expr {
    reduce(ReduceOp::Max, source, axes)
}
/// `min(source)` over `axes`.
pub fn min(source: Expr, axes: &[&IterVar]) -> Expr {
    reduce(ReduceOp::Min, source, axes)
}

/// `cond ? t : f`, where a load in the untaken branch never executes.
pub fn if_then_else(cond: Expr, t: impl Into<Expr>, f: impl Into<Expr>) -> Expr {
    Expr::if_then_else(cond, t, f)
}
/// `cond ? t : f`.
pub fn select(cond: Expr, t: impl Into<Expr>, f: impl Into<Expr>) -> Expr {
    Expr::select(cond, t, f)
}
/// Conversion to `dtype`.
pub fn cast(x: impl Into<Expr>, dtype: DType) -> Expr {
    x.into().cast(dtype)
}
/// Conjunction of the conditions (`tvm.tir.all`).
pub fn all(conds: impl IntoIterator<Item = Expr>) -> Expr {
    Expr::all(conds)
}

macro_rules! unary_intrinsic {
    ($($name:ident => $i:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "(x)`")]
        pub fn $name(x: impl Into<Expr>) -> Expr {
            Expr::call(Intrinsic::$i, vec![x.into()])
        }
    )*};
}
unary_intrinsic!(exp => Exp, exp2 => Exp2, log => Log, sqrt => Sqrt, rsqrt => Rsqrt, tanh => Tanh,
    tanh_approx => TanhApprox, sigmoid => Sigmoid, sin => Sin, cos => Cos, abs => Abs, floor => Floor, ceil => Ceil);

/// `pow(x, y)`
pub fn pow(x: impl Into<Expr>, y: impl Into<Expr>) -> Expr {
    Expr::call(Intrinsic::Pow, vec![x.into(), y.into()])
}
/// `max(a, b)` elementwise (not a reduction).
pub fn maximum(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    a.into().max(b.into())
}
/// `min(a, b)` elementwise (not a reduction).
pub fn minimum(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    a.into().min(b.into())
}

/// Indexing sugar: `a.at(&[&i, &j])`.
pub trait TensorExt {
    /// A load of this tensor at `indices`.
    fn at<I: Into<Expr> + Clone>(&self, indices: &[I]) -> Expr;
}

impl TensorExt for Buffer {
    fn at<I: Into<Expr> + Clone>(&self, indices: &[I]) -> Expr {
        self.load(indices.iter().cloned().map(Into::into).collect())
    }
}

/// Errors in a te definition, each naming the tensor or expression at fault.
#[derive(Debug, Error, PartialEq)]
pub enum TeError {
    #[error(
        "tensor `{tensor}`: dimension {dim} has extent {extent}; extents must be in 1..=2^31-1"
    )]
    BadExtent {
        tensor: String,
        dim: usize,
        extent: i64,
    },
    #[error("tensor `{tensor}` has {numel} elements; weft indexes with i32, so at most 2^31-1")]
    TooLarge { tensor: String, numel: i128 },
    #[error("reduce axis `{axis}` of `{tensor}` has extent {extent}; it must be positive")]
    BadReduceExtent {
        tensor: String,
        axis: String,
        extent: i64,
    },
    #[error("`{tensor}` reads `{buffer}` with {got} indices, but `{buffer}` has {want} dimensions")]
    IndexCount {
        tensor: String,
        buffer: String,
        got: usize,
        want: usize,
    },
    #[error("in `{tensor}`: {msg} (in `{expr}`)")]
    Type {
        tensor: String,
        msg: String,
        expr: String,
    },
    #[error(
        "in `{tensor}`: a reduction may only appear at the top of a compute body (in `{expr}`)"
    )]
    NestedReduce { tensor: String, expr: String },
    #[error(
        "`{tensor}` reads `{buffer}`, which is neither a parameter of the function nor computed by te"
    )]
    UnboundInput { tensor: String, buffer: String },
    #[error(
        "`{tensor}` uses variable `{var}`, which is not one of its axes, a reduce axis or a scalar parameter"
    )]
    UnboundVar { tensor: String, var: String },
    #[error("two tensors or parameters are named `{name}`; names must be unique")]
    DuplicateName { name: String },
    #[error("the function has no computed output; pass at least one tensor made by te::compute")]
    NoOutput,
}

/// Checks `e` and returns its type. `tensor` names the compute for messages.
pub fn typecheck(e: &Expr, tensor: &str) -> Result<DType, TeError> {
    let err = |msg: String| TeError::Type {
        tensor: tensor.to_string(),
        msg,
        expr: e.to_string(),
    };
    Ok(match e {
        Expr::Int(_, d) => {
            if !d.is_int() {
                return Err(err(format!("integer constant of type {d}")));
            }
            *d
        }
        Expr::Float(_, d) => {
            if !d.is_float() {
                return Err(err(format!("float constant of type {d}")));
            }
            *d
        }
        Expr::Bool(_) => DType::Bool,
        Expr::Var(v) => v.dtype(),
        Expr::Builtin(_) => DType::I32,
        Expr::Binary(op, a, b) => {
            let (da, db) = (typecheck(a, tensor)?, typecheck(b, tensor)?);
            if da != db {
                return Err(err(format!(
                    "operands of {op:?} have types {da} and {db}; cast one of them"
                )));
            }
            match op {
                BinOp::And | BinOp::Or => {
                    if da != DType::Bool {
                        return Err(err(format!("{op:?} needs bool operands, got {da}")));
                    }
                    DType::Bool
                }
                op if op.is_comparison() => DType::Bool,
                BinOp::FloorDiv | BinOp::FloorMod | BinOp::Mod if !da.is_int() => {
                    return Err(err(format!("{op:?} needs integer operands, got {da}")));
                }
                _ if da == DType::Bool => {
                    return Err(err(format!("{op:?} on bool operands")));
                }
                _ => da,
            }
        }
        Expr::Unary(UnOp::Not, a) => {
            let d = typecheck(a, tensor)?;
            if d != DType::Bool {
                return Err(err(format!("`not` needs a bool operand, got {d}")));
            }
            DType::Bool
        }
        Expr::Unary(UnOp::Neg, a) => {
            let d = typecheck(a, tensor)?;
            if d == DType::Bool || d == DType::U32 {
                return Err(err(format!("negation of a {d}")));
            }
            d
        }
        Expr::Cast(d, a) => {
            typecheck(a, tensor)?;
            *d
        }
        Expr::Select(c, t, f) => {
            if typecheck(c, tensor)? != DType::Bool {
                return Err(err("the condition of a select must be bool".into()));
            }
            let (dt, df) = (typecheck(t, tensor)?, typecheck(f, tensor)?);
            if dt != df {
                return Err(err(format!("select branches have types {dt} and {df}")));
            }
            dt
        }
        Expr::Call(i, args) => {
            if args.len() != i.arity() {
                return Err(err(format!(
                    "{} takes {} arguments, got {}",
                    i.name(),
                    i.arity(),
                    args.len()
                )));
            }
            if *i == Intrinsic::ShuffleXor {
                let d = typecheck(&args[0], tensor)?;
                if !matches!(d, DType::F32 | DType::I32 | DType::U32) {
                    return Err(err(format!(
                        "shuffle_xor shuffles f32, i32 or u32, not {d}"
                    )));
                }
                if !matches!(args[1], Expr::Int(m, DType::I32) if m > 0) {
                    return Err(err(
                        "the mask of shuffle_xor must be a positive i32 constant".into(),
                    ));
                }
                return Ok(d);
            }
            let mut d0 = None;
            for a in args {
                let d = typecheck(a, tensor)?;
                let ok = d.is_float() || (*i == Intrinsic::Abs && d == DType::I32);
                if !ok {
                    return Err(err(format!("{} needs float arguments, got {d}", i.name())));
                }
                if d0.is_some_and(|d0| d0 != d) {
                    return Err(err(format!("{} arguments of mixed types", i.name())));
                }
                d0 = Some(d);
            }
            d0.unwrap_or(DType::F32)
        }
        Expr::Load {
            buffer, indices, ..
        } => {
            for i in indices {
                let d = typecheck(i, tensor)?;
                if d != DType::I32 {
                    return Err(err(format!(
                        "index of `{}` has type {d}; indices are i32",
                        buffer.name()
                    )));
                }
            }
            buffer.dtype()
        }
        Expr::Reduce(r) => {
            let d = typecheck(&r.source, tensor)?;
            if d == DType::Bool {
                return Err(err("reduction over bool values".into()));
            }
            d
        }
    })
}

fn check_shape(name: &str, shape: &[i64]) -> Result<(), TeError> {
    for (dim, &extent) in shape.iter().enumerate() {
        if extent < 1 || extent > i32::MAX as i64 {
            return Err(TeError::BadExtent {
                tensor: name.to_string(),
                dim,
                extent,
            });
        }
    }
    let numel: i128 = shape.iter().map(|&e| e as i128).product();
    if numel > i32::MAX as i128 {
        return Err(TeError::TooLarge {
            tensor: name.to_string(),
            numel,
        });
    }
    Ok(())
}

/// Builds the default [`Func`] of a te program: one loop nest and one block per computed
/// tensor, in dependence order (the program TensorIR's `create_prim_func` makes).
///
/// `params` are the function's inputs and outputs in call order: placeholders, scalars and
/// computed tensors. Computed tensors reachable from the outputs but not listed become
/// root allocations.
pub fn create_func<P: Into<Param>>(
    name: &str,
    params: impl IntoIterator<Item = P>,
) -> Result<Func, TeError> {
    let params: Vec<Param> = params.into_iter().map(Into::into).collect();
    create_func_stopping_at(name, params, &[])
}

/// Like [`create_func`] with parameters `inputs` then `outputs`, except that the inputs
/// are read as given even where te computes them: the function computes only the
/// outputs. This is how an anchor op is scheduled alone before its neighbours are fused
/// into it ([`crate::fusion`]).
pub fn create_func_with_inputs(
    name: &str,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
) -> Result<Func, TeError> {
    let params: Vec<Param> = inputs
        .iter()
        .chain(outputs)
        .map(|b| Param::Buffer((*b).clone()))
        .collect();
    let stop: Vec<Buffer> = inputs.iter().map(|b| (*b).clone()).collect();
    create_func_stopping_at(name, params, &stop)
}

fn create_func_stopping_at(
    name: &str,
    params: Vec<Param>,
    stop: &[Buffer],
) -> Result<Func, TeError> {
    let mut seen_names: Vec<&str> = Vec::new();
    for p in &params {
        if seen_names.contains(&p.name()) {
            return Err(TeError::DuplicateName {
                name: p.name().to_string(),
            });
        }
        seen_names.push(p.name());
    }
    // Collect computes reachable from the outputs, producers first.
    let mut order: Vec<Buffer> = Vec::new();
    fn visit(b: &Buffer, order: &mut Vec<Buffer>, stack: &mut Vec<u64>, stop: &[Buffer]) {
        if order.contains(b) || stack.contains(&b.id()) || stop.contains(b) {
            return;
        }
        let Some(op) = b.producer() else { return };
        stack.push(b.id());
        let mut inputs = Vec::new();
        op.body.visit(&mut |e| {
            if let Expr::Load { buffer, .. } = e {
                inputs.push(buffer.clone());
            }
        });
        for i in &inputs {
            visit(i, order, stack, stop);
        }
        stack.pop();
        order.push(b.clone());
    }
    for p in &params {
        if let Param::Buffer(b) = p {
            visit(b, &mut order, &mut Vec::new(), stop);
        }
    }
    if order.is_empty() {
        return Err(TeError::NoOutput);
    }
    let is_param = |b: &Buffer| {
        params
            .iter()
            .any(|p| matches!(p, Param::Buffer(x) if x == b))
    };
    let scalars: Vec<Var> = params
        .iter()
        .filter_map(|p| match p {
            Param::Scalar(v) => Some(v.clone()),
            _ => None,
        })
        .collect();
    for p in &params {
        if let Param::Buffer(b) = p {
            check_shape(b.name(), b.shape())?;
        }
    }
    let mut allocs = Vec::new();
    let mut nests = Vec::new();
    for b in &order {
        let Some(op) = b.producer() else { continue };
        if !is_param(b) {
            if seen_names.contains(&b.name()) {
                return Err(TeError::DuplicateName {
                    name: b.name().to_string(),
                });
            }
            seen_names.push(b.name());
            check_shape(b.name(), b.shape())?;
            allocs.push(b.clone());
        }
        nests.push(build_nest(b, op, &is_param, &scalars)?);
    }
    Ok(Func {
        name: name.to_string(),
        params,
        allocs,
        body: Stmt::seq(nests),
        kernel_hints: Vec::new(),
    })
}

fn build_nest(
    out: &Buffer,
    op: &ComputeOp,
    is_param: &dyn Fn(&Buffer) -> bool,
    scalars: &[Var],
) -> Result<Stmt, TeError> {
    let tname = op.name.as_str();
    typecheck(&op.body, tname)?;
    let (reduce_op, source, raxes) = match &op.body {
        Expr::Reduce(r) => (Some(r.op), r.source.clone(), r.axes.clone()),
        e => (None, e.clone(), Vec::new()),
    };
    let mut nested = false;
    source.visit(&mut |e| nested |= matches!(e, Expr::Reduce(_)));
    if nested {
        return Err(TeError::NestedReduce {
            tensor: tname.to_string(),
            expr: op.body.to_string(),
        });
    }
    for a in &raxes {
        if a.extent < 1 || a.extent > i32::MAX as i64 {
            return Err(TeError::BadReduceExtent {
                tensor: tname.to_string(),
                axis: a.var.name().to_string(),
                extent: a.extent,
            });
        }
    }
    // Every load names a parameter or a computed tensor, with the right index count.
    let mut err = None;
    source.visit(&mut |e| {
        if err.is_some() {
            return;
        }
        match e {
            Expr::Load {
                buffer, indices, ..
            } => {
                if buffer.producer().is_none() && !is_param(buffer) {
                    err = Some(TeError::UnboundInput {
                        tensor: tname.to_string(),
                        buffer: buffer.name().to_string(),
                    });
                } else if indices.len() != buffer.ndim() {
                    err = Some(TeError::IndexCount {
                        tensor: tname.to_string(),
                        buffer: buffer.name().to_string(),
                        got: indices.len(),
                        want: buffer.ndim(),
                    });
                }
            }
            Expr::Var(v) => {
                let known = op.axes.iter().any(|a| &a.var == v)
                    || raxes.iter().any(|a| &a.var == v)
                    || scalars.contains(v);
                if !known {
                    err = Some(TeError::UnboundVar {
                        tensor: tname.to_string(),
                        var: v.name().to_string(),
                    });
                }
            }
            _ => {}
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    // Loops carry the axis names; block variables are `v` + name, as in TensorIR scripts.
    let all_axes: Vec<(&IterVar, IterKind)> = op
        .axes
        .iter()
        .map(|a| (a, IterKind::Spatial))
        .chain(raxes.iter().map(|a| (a, IterKind::Reduce)))
        .collect();
    let loop_vars: Vec<Var> = all_axes
        .iter()
        .map(|(a, _)| Var::index(a.var.name()))
        .collect();
    let block_vars: Vec<BlockVar> = all_axes
        .iter()
        .map(|(a, kind)| BlockVar {
            var: Var::index(format!("v{}", a.var.name())),
            extent: a.extent,
            kind: *kind,
        })
        .collect();
    let subst: HashMap<Var, Expr> = all_axes
        .iter()
        .zip(&block_vars)
        .map(|((a, _), bv)| (a.var.clone(), bv.var.expr()))
        .collect();
    let out_idx: Vec<Expr> = block_vars[..op.axes.len()]
        .iter()
        .map(|v| v.var.expr())
        .collect();
    let value = source.substitute(&subst);
    let (init, body) = match reduce_op {
        Some(rop) => {
            let dtype = out.dtype();
            let init = Stmt::Store {
                buffer: out.clone(),
                indices: out_idx.clone(),
                value: rop.identity(dtype),
            };
            let acc = out.load(out_idx.clone());
            let body = Stmt::Store {
                buffer: out.clone(),
                indices: out_idx,
                value: rop.combine(acc, value),
            };
            (Some(init), body)
        }
        None => (
            None,
            Stmt::Store {
                buffer: out.clone(),
                indices: out_idx,
                value,
            },
        ),
    };
    let realize = Stmt::Block(Box::new(BlockRealize {
        bindings: loop_vars.iter().map(|v| v.expr()).collect(),
        predicate: Expr::Bool(true),
        block: Block {
            id: BlockId::fresh(),
            name: op.name.clone(),
            iter_vars: block_vars,
            init,
            body,
        },
    }));
    let mut stmt = realize;
    for (lv, (a, _)) in loop_vars.iter().zip(&all_axes).rev() {
        stmt = Stmt::For(Box::new(For {
            var: lv.clone(),
            extent: a.extent,
            kind: ForKind::Serial,
            body: stmt,
        }));
    }
    Ok(stmt)
}

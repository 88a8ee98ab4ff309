//! Variables, buffers and expressions: the vocabulary shared by the te front end, the Func
//! IR and the lowered [`Kernel`](crate::kernel::Kernel).
//!
//! One `Expr` type serves every level. The te front end may build [`Expr::Reduce`] (only at
//! the top of a compute body); the Func IR indexes buffers with one index per dimension;
//! lowering leaves one flat index per access and adds [`Expr::Builtin`] thread indices.

use std::collections::HashMap;

use crate::dtype::DType;

mod axis;
mod buffer;
mod build;
mod compute;
mod ops;
mod var;

pub use axis::{IterVar, ThreadAxis};
pub use buffer::{Buffer, Scope};
pub use compute::ComputeOp;
pub use ops::{BinOp, Intrinsic, Reduce, ReduceOp, UnOp};
pub use var::Var;
pub(crate) use var::fresh_id;

use build::coerce_literals;

/// An expression. Its `Display` ([`crate::printer`]) prints it as TVMScript.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer constant of type `i32` or `u32`.
    Int(i64, DType),
    /// A float constant of type `f32` or `f16`.
    Float(f64, DType),
    Bool(bool),
    Var(Var),
    /// A thread or block index (only after lowering).
    Builtin(ThreadAxis),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Cast(DType, Box<Expr>),
    /// `cond ? then : else`; both branches may be evaluated (`T.if_then_else` guards
    /// loads, see [`Expr::if_then_else`]).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Intrinsic, Vec<Expr>),
    /// A load of `lanes` consecutive elements (`lanes` > 1 only after vectorization, with
    /// one flat index).
    Load {
        buffer: Buffer,
        indices: Vec<Expr>,
        lanes: u32,
    },
    /// A te reduction (te only; lowered to a block with an init).
    Reduce(Box<Reduce>),
}

impl Expr {
    /// An `i32` constant.
    pub fn int(v: i64) -> Expr {
        Expr::Int(v, DType::I32)
    }
    /// An `f32` constant.
    pub fn f32(v: f32) -> Expr {
        Expr::Float(v as f64, DType::F32)
    }
    /// The zero of `dtype`.
    pub fn zero(dtype: DType) -> Expr {
        match dtype {
            DType::F32 | DType::F16 => Expr::Float(0.0, dtype),
            DType::I32 | DType::U32 => Expr::Int(0, dtype),
            DType::Bool => Expr::Bool(false),
        }
    }
    /// A constant of `dtype` with value `v`.
    pub fn constant(v: f64, dtype: DType) -> Expr {
        match dtype {
            DType::F32 | DType::F16 => Expr::Float(v, dtype),
            DType::I32 | DType::U32 => Expr::Int(v as i64, dtype),
            DType::Bool => Expr::Bool(v != 0.0),
        }
    }

    /// The type of this expression, assuming it is well typed (see
    /// [`crate::te::typecheck`]).
    pub fn dtype(&self) -> DType {
        match self {
            Expr::Int(_, d) | Expr::Float(_, d) | Expr::Cast(d, _) => *d,
            Expr::Bool(_) => DType::Bool,
            Expr::Var(v) => v.dtype(),
            Expr::Builtin(_) => DType::I32,
            Expr::Binary(op, a, _) => {
                if op.is_predicate() {
                    DType::Bool
                } else {
                    a.dtype()
                }
            }
            Expr::Unary(UnOp::Not, _) => DType::Bool,
            Expr::Unary(UnOp::Neg, a) => a.dtype(),
            Expr::Select(_, t, _) => t.dtype(),
            Expr::Call(_, args) => args.first().map(|a| a.dtype()).unwrap_or(DType::F32),
            Expr::Load { buffer, .. } => buffer.dtype(),
            Expr::Reduce(r) => r.source.dtype(),
        }
    }

    /// The value of an integer constant.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v, _) => Some(*v),
            _ => None,
        }
    }

    /// True for constants.
    pub fn is_const(&self) -> bool {
        matches!(self, Expr::Int(..) | Expr::Float(..) | Expr::Bool(_))
    }

    /// `a op b`. A constant operand takes the type of the other operand when both are
    /// floats or both are integers, so `x * 2.0` works for an `f16` `x`.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        let (a, b) = coerce_literals(a, b);
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    pub fn floordiv(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::FloorDiv, self, b.into())
    }
    pub fn floormod(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::FloorMod, self, b.into())
    }
    pub fn min(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Min, self, b.into())
    }
    pub fn max(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Max, self, b.into())
    }
    pub fn lt(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Lt, self, b.into())
    }
    pub fn le(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Le, self, b.into())
    }
    pub fn gt(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Gt, self, b.into())
    }
    pub fn ge(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ge, self, b.into())
    }
    pub fn eq_(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Eq, self, b.into())
    }
    pub fn ne_(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ne, self, b.into())
    }
    pub fn and(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::And, self, b.into())
    }
    pub fn or(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Or, self, b.into())
    }
    pub fn cast(self, dtype: DType) -> Expr {
        Expr::Cast(dtype, Box::new(self))
    }
    /// `cond ? t : f`.
    pub fn select(cond: Expr, t: impl Into<Expr>, f: impl Into<Expr>) -> Expr {
        let (t, f) = coerce_literals(t.into(), f.into());
        Expr::Select(Box::new(cond), Box::new(t), Box::new(f))
    }
    /// `T.if_then_else(cond, t, f)`. In weft's IR this is a select whose untaken branch
    /// is never a fault: lowering and the emitters keep a guarded load from executing
    /// when `cond` is false.
    pub fn if_then_else(cond: Expr, t: impl Into<Expr>, f: impl Into<Expr>) -> Expr {
        Expr::select(cond, t, f)
    }
    /// An intrinsic call.
    pub fn call(f: Intrinsic, args: Vec<Expr>) -> Expr {
        Expr::Call(f, args)
    }
    /// `T.shuffle_xor(value, mask)`: `value` as the subgroup's thread `lane ^ mask` holds
    /// it ([`Intrinsic::ShuffleXor`], a collective).
    pub fn shuffle_xor(value: Expr, mask: i64) -> Expr {
        Expr::Call(Intrinsic::ShuffleXor, vec![value, Expr::int(mask)])
    }

    /// Conjunction of `parts`; `true` when empty.
    pub fn all(parts: impl IntoIterator<Item = Expr>) -> Expr {
        let mut it = parts.into_iter();
        let Some(first) = it.next() else {
            return Expr::Bool(true);
        };
        it.fold(first, |acc, e| acc.and(e))
    }

    /// Calls `f` on this expression and every sub-expression, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {}
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) => a.visit(f),
            Expr::Select(c, t, e) => {
                c.visit(f);
                t.visit(f);
                e.visit(f);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.visit(f)),
            Expr::Load { indices, .. } => indices.iter().for_each(|a| a.visit(f)),
            Expr::Reduce(r) => r.source.visit(f),
        }
    }

    /// Rebuilds the expression bottom-up through `f`: `f` sees each node after its
    /// children were rebuilt and may replace it.
    pub fn rewrite(&self, f: &mut dyn FnMut(Expr) -> Expr) -> Expr {
        let node = match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {
                self.clone()
            }
            Expr::Binary(op, a, b) => {
                Expr::Binary(*op, Box::new(a.rewrite(f)), Box::new(b.rewrite(f)))
            }
            Expr::Unary(op, a) => Expr::Unary(*op, Box::new(a.rewrite(f))),
            Expr::Cast(d, a) => Expr::Cast(*d, Box::new(a.rewrite(f))),
            Expr::Select(c, t, e) => Expr::Select(
                Box::new(c.rewrite(f)),
                Box::new(t.rewrite(f)),
                Box::new(e.rewrite(f)),
            ),
            Expr::Call(i, args) => Expr::Call(*i, args.iter().map(|a| a.rewrite(f)).collect()),
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => Expr::Load {
                buffer: buffer.clone(),
                indices: indices.iter().map(|a| a.rewrite(f)).collect(),
                lanes: *lanes,
            },
            Expr::Reduce(r) => Expr::Reduce(Box::new(Reduce {
                op: r.op,
                source: r.source.rewrite(f),
                axes: r.axes.clone(),
            })),
        };
        f(node)
    }

    /// Replaces variables by expressions.
    pub fn substitute(&self, map: &HashMap<Var, Expr>) -> Expr {
        if map.is_empty() {
            return self.clone();
        }
        self.rewrite(&mut |e| match &e {
            Expr::Var(v) => map.get(v).cloned().unwrap_or(e),
            _ => e,
        })
    }

    /// Replaces one variable by an expression.
    pub fn substitute1(&self, var: &Var, value: &Expr) -> Expr {
        self.rewrite(&mut |e| match &e {
            Expr::Var(v) if v == var => value.clone(),
            _ => e,
        })
    }

    /// True if `var` occurs in this expression.
    pub fn uses_var(&self, var: &Var) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Expr::Var(v) = e {
                found |= v == var;
            }
        });
        found
    }

    /// True if any variable of `vars` occurs in this expression.
    pub fn uses_any(&self, vars: &[Var]) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Expr::Var(v) = e {
                found |= vars.contains(v);
            }
        });
        found
    }

    /// The distinct variables of this expression, in order of first occurrence.
    pub fn vars(&self) -> Vec<Var> {
        let mut out: Vec<Var> = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Var(v) = e
                && !out.contains(v)
            {
                out.push(v.clone());
            }
        });
        out
    }

    /// True if the expression reads a thread or block index.
    pub fn uses_builtin(&self, pred: &dyn Fn(ThreadAxis) -> bool) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Expr::Builtin(a) = e {
                found |= pred(*a);
            }
        });
        found
    }

    /// The loads in this expression, outermost first.
    pub fn loads(&self) -> Vec<(&Buffer, &[Expr])> {
        let mut out = Vec::new();
        fn walk<'a>(e: &'a Expr, out: &mut Vec<(&'a Buffer, &'a [Expr])>) {
            match e {
                Expr::Load {
                    buffer, indices, ..
                } => {
                    out.push((buffer, indices.as_slice()));
                    indices.iter().for_each(|i| walk(i, out));
                }
                Expr::Binary(_, a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Expr::Unary(_, a) | Expr::Cast(_, a) => walk(a, out),
                Expr::Select(c, t, f) => {
                    walk(c, out);
                    walk(t, out);
                    walk(f, out);
                }
                Expr::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
                Expr::Reduce(r) => walk(&r.source, out),
                _ => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

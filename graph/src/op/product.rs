//! Matrix products, the anchors of transformers and classifier heads: [`Gemm`]
//! (`alpha · op(a) · op(b) + beta · c` on matrices, `c` optional and broadcast to the
//! output, `op` transposing where `trans_a`/`trans_b`) and [`MatMul`] (NumPy's batching
//! rules; 1-D operands are made matrices at import).

mod einsum;

use std::fmt;

use ndarray::{Array2, ArrayD, Axis, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::binary::broadcast_with;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::reshape::Reshape;
use super::shapes::{arity, broadcast, rank, same_dtype};
use super::{Anchor, ExportNode, IndexUse, Inline, Op, OpDef, Product, Role};
use crate::tensor::Tensor;

/// A general matrix product's attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    pub alpha: f64,
    pub beta: f64,
    pub trans_a: bool,
    pub trans_b: bool,
}

/// A matrix product with NumPy's batching rules: `[.., M, K] · [.., K, N]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatMul;

impl OpDef for Gemm {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        // A is [m, k] (or [k, m] with transA), B [k, n] (or [n, k] with transB).
        let am = [usize::from(self.trans_a), usize::from(!self.trans_a)];
        let bk = [usize::from(self.trans_b), usize::from(!self.trans_b)];
        super::symbolic::product_carry(x, am, bk)
    }

    fn name(&self) -> &'static str {
        "Gemm"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(alpha={}, beta={}", self.alpha, self.beta)?;
        if self.trans_a {
            f.write_str(", transA")?;
        }
        if self.trans_b {
            f.write_str(", transB")?;
        }
        f.write_str(")")
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 3)?;
        same_dtype(inputs)?;
        let a = rank(inputs[0], 0, 2)?;
        let b = rank(inputs[1], 1, 2)?;
        let (m, k) = if self.trans_a {
            (a[1], a[0])
        } else {
            (a[0], a[1])
        };
        let (k2, n) = if self.trans_b {
            (b[1], b[0])
        } else {
            (b[0], b[1])
        };
        if k != k2 {
            return Err(format!(
                "op(A) is {m}x{k} and op(B) {k2}x{n}: the inner sizes differ"
            ));
        }
        if let Some(c) = inputs.get(2)
            && broadcast(&c.shape, &[m, n]).as_deref() != Some(&[m, n][..])
        {
            return Err(format!(
                "C `{}` {:?} does not broadcast to the {m}x{n} product",
                c.name, c.shape
            ));
        }
        Ok((vec![m, n], inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let mut a = as_matrix(x[0]);
        let mut b = as_matrix(x[1]);
        if self.trans_a {
            a = a.reversed_axes();
        }
        if self.trans_b {
            b = b.reversed_axes();
        }
        let mut out = (a.dot(&b) * self.alpha).into_dyn();
        if let Some(c) = x.get(2) {
            out = broadcast_with(&out, c, |p, q| p + self.beta * q);
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Anchor(Anchor::Product(Product::Gemm(self)))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.float("alpha", self.alpha);
        node.float("beta", self.beta);
        node.int("transA", i64::from(self.trans_a));
        node.int("transB", i64::from(self.trans_b));
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64 {
        // `a` is [m, k], or [k, m] transposed.
        let a = &inputs[0].shape;
        let k = if self.trans_a { a[0] } else { a[a.len() - 1] };
        output.numel() as f64 * k as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

impl OpDef for MatMul {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        let (a, b) = (x.inputs[0].shape.len(), x.inputs[1].shape.len());
        super::symbolic::product_carry(x, [a - 2, a - 1], [b - 2, b - 1])
    }

    fn name(&self) -> &'static str {
        "MatMul"
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 2)?;
        same_dtype(inputs)?;
        let (a, b) = (&inputs[0].shape, &inputs[1].shape);
        if a.len() < 2 || b.len() < 2 {
            return Err(format!(
                "inputs `{}` {:?} and `{}` {:?}: MatMul here takes matrices or batches of them",
                inputs[0].name, a, inputs[1].name, b
            ));
        }
        let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
        let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
        if k != k2 {
            return Err(format!(
                "`{}` {:?} has {k} columns, `{}` {:?} has {k2} rows",
                inputs[0].name, a, inputs[1].name, b
            ));
        }
        let batch = broadcast(&a[..a.len() - 2], &b[..b.len() - 2])
            .ok_or_else(|| format!("batch dimensions {a:?} and {b:?} do not broadcast"))?;
        let mut shape = batch;
        shape.extend([m, n]);
        Ok((shape, inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        matmul(x[0], x[1])
    }

    fn role(&self) -> Role<'_> {
        Role::Anchor(Anchor::Product(Product::MatMul))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64 {
        // `a` is [k] or [..., m, k].
        let a = &inputs[0].shape;
        output.numel() as f64 * a.last().copied().unwrap_or(1) as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// A product's multiply-adds: each output element sums K terms, K read off the first
/// operand as its smallest dimension (a bound good enough for the check's budget).
fn as_matrix(a: &ArrayD<f64>) -> Array2<f64> {
    a.view()
        .into_dimensionality::<ndarray::Ix2>()
        .expect("rank checked")
        .to_owned()
}

fn matmul(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let n = b.shape()[rb - 1];
    let batch = broadcast(&a.shape()[..ra - 2], &b.shape()[..rb - 2]).expect("checked");
    let mut a_shape = batch.clone();
    a_shape.extend([m, k]);
    let mut b_shape = batch.clone();
    b_shape.extend([k, n]);
    let av = a.broadcast(IxDyn(&a_shape)).expect("checked");
    let bv = b.broadcast(IxDyn(&b_shape)).expect("checked");
    let count: usize = batch.iter().product();
    let av = av
        .to_shape((count, m, k))
        .expect("broadcast view")
        .to_owned();
    let bv = bv
        .to_shape((count, k, n))
        .expect("broadcast view")
        .to_owned();
    let mut out = Vec::with_capacity(count * m * n);
    for i in 0..count {
        let p = av.index_axis(Axis(0), i).dot(&bv.index_axis(Axis(0), i));
        out.extend(p.iter().copied());
    }
    let mut shape = batch;
    shape.extend([m, n]);
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("sizes match")
}

/// ONNX's Gemm and MatMul, and Einsum as matrix products (`einsum.rs`).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Einsum", &[12], einsum::import),
    OnnxOp::new("Gemm", &[7, 9, 11, 13], import_gemm),
    OnnxOp::new("MatMul", &[1, 9, 13], import_matmul),
];

fn import_gemm(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let gemm = Gemm {
        alpha: n.float("alpha", 1.0)?,
        beta: n.float("beta", 1.0)?,
        trans_a: n.flag("transA", false)?,
        trans_b: n.flag("transB", false)?,
    };
    let mut inputs = vec![n.data(0)?, n.data(1)?];
    inputs.extend(n.opt_data(2)?);
    n.emit(Op::Gemm(gemm), inputs)
}

/// MatMul; a 1-D operand is made a matrix (a row on the left, a column on the right)
/// and its dimension dropped from the product, as NumPy does.
fn import_matmul(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let (mut a, mut b) = (n.data(0)?, n.data(1)?);
    let (sa, sb) = (n.shape(a), n.shape(b));
    if sa.len() >= 2 && sb.len() >= 2 {
        return n.emit(Op::MatMul, vec![a, b]);
    }
    if sa.len() == 1 {
        let shape = vec![1, sa[0]];
        a = n.step("row", Op::Reshape(Reshape { shape }), vec![a])?;
    }
    if sb.len() == 1 {
        let shape = vec![sb[0], 1];
        b = n.step("column", Op::Reshape(Reshape { shape }), vec![b])?;
    }
    let id = n.step("product", Op::MatMul, vec![a, b])?;
    let mut product = n.shape(id);
    let r = product.len();
    if sb.len() == 1 {
        product.remove(r - 1);
    }
    if sa.len() == 1 {
        product.remove(r - 2);
    }
    n.emit(Op::Reshape(Reshape { shape: product }), vec![id])
}

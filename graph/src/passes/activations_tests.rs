//! The activation chains of both PyTorch exporters (TorchScript and dynamo, as
//! `onnx/tests/fixtures/canon/ops.txt` lists them), each made one op.

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use super::*;
use crate::builder::GraphBuilder;
use crate::passes::testing::rewrite;

/// A graph of `x: f32[2,5]` through `chain`, then a ReLU (a reader after the chain).
fn graph(chain: impl FnOnce(&mut GraphBuilder, TensorId) -> TensorId) -> Graph {
    let mut b = GraphBuilder::new("act");
    let x = b.input("x", &[2, 5], DType::F32);
    let y = chain(&mut b, x);
    let out = b.relu("after", y).unwrap();
    b.output(out);
    b.finish().unwrap()
}

fn c(b: &mut GraphBuilder, name: &str, v: f32) -> TensorId {
    b.weight(name, ArrayD::from_elem(IxDyn(&[]), v))
}

fn bin(b: &mut GraphBuilder, name: &str, op: Binary, x: TensorId, y: TensorId) -> TensorId {
    b.binary(name, op, x, y).unwrap()
}

fn un(b: &mut GraphBuilder, name: &str, op: Unary, x: TensorId) -> TensorId {
    b.unary(name, op, x).unwrap()
}

/// The graph `act` with `%after = Relu(%NAME)` after the one node `line`.
fn one(line: &str, name: &str) -> String {
    format!(
        "
        graph act (2 nodes, 0 parameters)
          input  %x: f32[2,5]
          {line}
          %after = Relu(%{name}): f32[2,5]    # after
          output %after
        "
    )
}

#[test]
fn gelu_as_torchscript_writes_it() {
    // Div, Erf, Add, Mul(x, ·), Mul(·, 0.5).
    let g = graph(|b, x| {
        let s = c(b, "sqrt2", std::f32::consts::SQRT_2);
        let d = bin(b, "div", Binary::Div, x, s);
        let e = un(b, "erf", Unary::Erf, d);
        let one = c(b, "one", 1.0);
        let a = bin(b, "add", Binary::Add, e, one);
        let m = bin(b, "mul", Binary::Mul, x, a);
        let h = c(b, "half", 0.5);
        bin(b, "mul2", Binary::Mul, m, h)
    });
    rewrite(&g, recognize_activations).check(
        4,
        &one("%mul2 = Gelu(%x): f32[2,5]    # mul2::gelu", "mul2"),
        1e-7,
    );
}

#[test]
fn gelu_as_dynamo_writes_it() {
    // Div, Erf, Add(·, 1), Mul(0.5, ·), Mul(x, ·); and x · 1/√2 for the division.
    for by_mul in [false, true] {
        let g = graph(|b, x| {
            let d = if by_mul {
                let s = c(b, "r", std::f32::consts::FRAC_1_SQRT_2);
                bin(b, "div", Binary::Mul, s, x)
            } else {
                let s = c(b, "s", std::f32::consts::SQRT_2);
                bin(b, "div", Binary::Div, x, s)
            };
            let e = un(b, "erf", Unary::Erf, d);
            let one = c(b, "one", 1.0);
            let a = bin(b, "add", Binary::Add, one, e);
            let h = c(b, "half", 0.5);
            let m = bin(b, "mul", Binary::Mul, h, a);
            bin(b, "mul2", Binary::Mul, x, m)
        });
        rewrite(&g, recognize_activations).check(
            4,
            &one("%mul2 = Gelu(%x): f32[2,5]    # mul2::gelu", "mul2"),
            1e-7,
        );
    }
}

#[test]
fn gelu_tanh_as_both_exporters_write_it() {
    for pow in [false, true] {
        let g = graph(|b, x| {
            // x³ as Pow(x, 3) (dynamo) or x · (x · x) (TorchScript).
            let cube = if pow {
                let three = c(b, "three", 3.0);
                bin(b, "cube", Binary::Pow, x, three)
            } else {
                let sq = bin(b, "sq", Binary::Mul, x, x);
                bin(b, "cube", Binary::Mul, x, sq)
            };
            let k = c(b, "k", 0.044715);
            let p = bin(b, "p", Binary::Mul, k, cube);
            let s = bin(b, "s", Binary::Add, x, p);
            let r = c(b, "r", 0.797_884_6);
            let u = bin(b, "u", Binary::Mul, r, s);
            let t = un(b, "tanh", Unary::Tanh, u);
            let one = c(b, "one", 1.0);
            let a = bin(b, "a", Binary::Add, one, t);
            let m = bin(b, "m", Binary::Mul, x, a);
            let h = c(b, "half", 0.5);
            bin(b, "y", Binary::Mul, h, m)
        });
        rewrite(&g, recognize_activations).check(
            if pow { 7 } else { 8 },
            &one(
                "%y = Gelu(approximate=tanh)(%x): f32[2,5]    # y::gelu",
                "y",
            ),
            1e-7,
        );
    }
}

#[test]
fn silu_either_order() {
    for flip in [false, true] {
        let g = graph(|b, x| {
            let s = un(b, "sig", Unary::Sigmoid, x);
            if flip {
                bin(b, "y", Binary::Mul, s, x)
            } else {
                bin(b, "y", Binary::Mul, x, s)
            }
        });
        rewrite(&g, recognize_activations).check(
            1,
            &one("%y = Silu(%x): f32[2,5]    # y::silu", "y"),
            1e-15,
        );
    }
}

#[test]
fn mish_with_softplus_or_log_exp() {
    for log_exp in [false, true] {
        let g = graph(|b, x| {
            let p = if log_exp {
                let e = un(b, "exp", Unary::Exp, x);
                let one = c(b, "one", 1.0);
                let a = bin(b, "a", Binary::Add, e, one);
                un(b, "log", Unary::Log, a)
            } else {
                un(b, "softplus", Unary::Softplus, x)
            };
            let t = un(b, "tanh", Unary::Tanh, p);
            bin(b, "y", Binary::Mul, x, t)
        });
        rewrite(&g, recognize_activations).check(
            if log_exp { 4 } else { 2 },
            &one("%y = Mish(%x): f32[2,5]    # y::mish", "y"),
            1e-12,
        );
    }
}

#[test]
fn hard_swish_and_hard_sigmoid() {
    // x · HardSigmoid(x) with PyTorch's alpha and beta.
    let g = graph(|b, x| {
        let h = Unary::HardSigmoid {
            alpha: 1.0 / 6.0,
            beta: 0.5,
        };
        let s = un(b, "hs", h, x);
        bin(b, "y", Binary::Mul, s, x)
    });
    let line = "%y = HardSwish(%x): f32[2,5]    # y::hardswish";
    rewrite(&g, recognize_activations).check(1, &one(line, "y"), 1e-15);
    // x · Clip(x + 3, 0, 6) / 6, the division first or last.
    for late in [false, true] {
        let g = graph(|b, x| {
            let three = c(b, "three", 3.0);
            let a = bin(b, "a", Binary::Add, x, three);
            let r = b.clip("relu6", a, 0.0, 6.0).unwrap();
            let six = c(b, "six", 6.0);
            if late {
                let m = bin(b, "m", Binary::Mul, x, r);
                bin(b, "y", Binary::Div, m, six)
            } else {
                let d = bin(b, "d", Binary::Div, r, six);
                bin(b, "y", Binary::Mul, x, d)
            }
        });
        // Divided first, the division is a HardSigmoid, then x · HardSigmoid(x).
        rewrite(&g, recognize_activations).check(3, &one(line, "y"), 1e-15);
    }
    // Clip(x + 3, 0, 6) / 6 alone.
    let g = graph(|b, x| {
        let three = c(b, "three", 3.0);
        let a = bin(b, "a", Binary::Add, three, x);
        let r = b.clip("relu6", a, 0.0, 6.0).unwrap();
        let six = c(b, "six", 6.0);
        bin(b, "y", Binary::Div, r, six)
    });
    rewrite(&g, recognize_activations).check(
        2,
        &one(
            "%y = HardSigmoid(alpha=0.16666666666666666, beta=0.5)(%x): f32[2,5]    # y::hardsigmoid",
            "y",
        ),
        1e-15,
    );
}

#[test]
fn chains_that_are_not_the_activation_stay() {
    let unchanged = |g: &Graph| assert_eq!(rewrite(g, recognize_activations).changed, 0);
    // The Sigmoid read twice: it must stay, so the product stays too.
    unchanged(&graph(|b, x| {
        let s = un(b, "sig", Unary::Sigmoid, x);
        let y = bin(b, "y", Binary::Mul, x, s);
        bin(b, "z", Binary::Add, y, s)
    }));
    // x · Sigmoid(w) for another w.
    unchanged(&graph(|b, x| {
        let w = un(b, "w", Unary::Neg, x);
        let s = un(b, "sig", Unary::Sigmoid, w);
        bin(b, "y", Binary::Mul, x, s)
    }));
    // GELU's 0.5 as 0.6.
    unchanged(&graph(|b, x| {
        let s = c(b, "sqrt2", std::f32::consts::SQRT_2);
        let d = bin(b, "div", Binary::Div, x, s);
        let e = un(b, "erf", Unary::Erf, d);
        let one = c(b, "one", 1.0);
        let a = bin(b, "add", Binary::Add, e, one);
        let m = bin(b, "mul", Binary::Mul, x, a);
        let h = c(b, "h", 0.6);
        bin(b, "mul2", Binary::Mul, m, h)
    }));
    // A constant that broadcasts x to a larger shape.
    let mut b = GraphBuilder::new("act");
    let x = b.input("x", &[5], DType::F32);
    let s = un(&mut b, "sig", Unary::Sigmoid, x);
    let one = b.weight("one", ArrayD::from_elem(IxDyn(&[2, 1]), 1.0));
    let m = bin(&mut b, "m", Binary::Mul, s, one);
    let y = bin(&mut b, "y", Binary::Mul, x, m);
    b.output(y);
    unchanged(&b.finish().unwrap());
}

//! The partition's cost rule (`weft_graph::partition::cost`) through the whole model
//! compiler: PyTorch's GELU (`Div, Erf, Add, Mul, Mul`, the activation pass left out so
//! it stays five nodes) before a product wide enough to read each element ten times
//! becomes a kernel of its own, and the outputs are the float64 reference's with the
//! rule on and off, on the interpreter and on wgpu, in f32 and f16.

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, Op, Unary};
use weft_graph::partition::GroupKind;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::compiled::FUSION_COST;
use weft_model::{CompileOptions, CompiledModel};
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

/// `gelu(h) · w`, `h` [9, 40], `w` [40, 1300]: each element of `gelu(h)` read
/// 1300/128 ≈ 10 times by the product.
fn gelu_then_product() -> Graph {
    let mut b = GraphBuilder::new("gelu_product");
    let h = b.input("h", &[9, 40], DType::F32);
    let scalar =
        |b: &mut GraphBuilder, name: &str, v: f32| b.weight(name, ArrayD::from_elem(IxDyn(&[]), v));
    let c = scalar(&mut b, "sqrt2", std::f32::consts::SQRT_2);
    let one = scalar(&mut b, "one", 1.0);
    let half = scalar(&mut b, "half", 0.5);
    let d = b.binary("div", Binary::Div, h, c).unwrap();
    let e = b.unary("erf", Unary::Erf, d).unwrap();
    let p = b.add("plus", e, one).unwrap();
    let m = b.binary("mul", Binary::Mul, h, p).unwrap();
    let a = b.binary("half_mul", Binary::Mul, m, half).unwrap();
    let w = b.weight("w", Values(3).array(&[40, 1300], 0.2));
    let y = b.node("down", Op::MatMul, &[a, w]).unwrap();
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn a_costly_prologue_runs_as_its_own_kernel_and_stays_right() {
    let g = gelu_then_product();
    let input = Values(5).array(&[9, 40], 2.0);
    let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for precision in [Precision::F32, Precision::F16] {
            if precision == Precision::F16 && !dev.limits().f16 {
                eprintln!("{} has no f16: skipped", dev.name());
                continue;
            }
            for rule in [true, false] {
                let mut off = vec!["activations".to_string()];
                if !rule {
                    off.push(FUSION_COST.to_string());
                }
                let opts = CompileOptions::default()
                    .with_precision(precision)
                    .with_disabled(&off);
                let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
                let kinds: Vec<GroupKind> =
                    model.partition.groups.iter().map(|gr| gr.kind).collect();
                let want_kinds = if rule {
                    vec![GroupKind::Injective, GroupKind::Anchor]
                } else {
                    vec![GroupKind::Anchor]
                };
                assert_eq!(kinds, want_kinds, "{target} rule {rule}:\n{}", model.show());
                assert_eq!(model.show().contains("a kernel of its own"), rule);
                let exe = model.load(dev.as_mut()).unwrap();
                let got = exe.run(dev.as_mut(), std::slice::from_ref(&input)).unwrap();
                exe.free(dev.as_mut());
                let scale = want[0].iter().fold(0f64, |m, v| m.max(v.abs()));
                let err = got[0]
                    .iter()
                    .zip(want[0].iter())
                    .fold(0f64, |m, (&a, &b)| m.max((f64::from(a) - b).abs()))
                    / scale;
                let tol = if precision == Precision::F16 {
                    1e-2
                } else {
                    1e-5
                };
                assert!(
                    err <= tol,
                    "{target} {precision:?} rule {rule}: error {err:.2e}"
                );
            }
        }
    }
}

//! Element-wise fragment operations (maps with the element's coordinates, row reductions
//! into rows fragments, an accumulator turned into an A operand): a warp's row softmax of
//! one product fed into a second product, in the interpreter against float64; their
//! printed form; and their misuse as template errors.

use half::f16;
use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::fragment::{FragLayout, FragRole, MmaShape, RowOp};
use weft_ir::interp;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::template::Template;

const S16: MmaShape = MmaShape {
    m: 16,
    n: 16,
    k: 16,
};

fn halves(n: usize, seed: u64) -> Vec<f16> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| f16::from_f32(r.random_range(-1.0f32..1.0)))
        .collect()
}

/// Per warp (two a block), 16 rows of `Y = softmax(mask(A · B)) · V`: `A` `[32, 16]`, `B`
/// `[16, 32]` (two score tiles a row strip), `V` `[32, 16]`; scores at columns past
/// `keep` are masked through the element's column.
fn softmax_product(keep: i64) -> weft_ir::func::Func {
    let mut t = Template::new("warp_softmax");
    let a = t.input("A", &[32, 16], DType::F16);
    let b = t.input("B", &[16, 32], DType::F16);
    let v = t.input("V", &[32, 16], DType::F16);
    let y = t.output("Y", &[32, 16], DType::F32);
    t.kernel(1, 64, |kb| {
        let rm = FragLayout::RowMajor;
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, rm, 1);
        let fb = kb.fragment("b", FragRole::B, S16, DType::F16, rm, 1);
        let p = kb.fragment("p", FragRole::A, S16, DType::F16, rm, 2);
        let s = kb.fragment("s", FragRole::Accumulator, S16, DType::F32, rm, 2);
        let o = kb.fragment("o", FragRole::Accumulator, S16, DType::F32, rm, 1);
        let m = kb.fragment("m", FragRole::Rows, S16, DType::F32, rm, 1);
        let l = kb.fragment("l", FragRole::Rows, S16, DType::F32, rm, 1);
        let row0 = kb.let_("row0", kb.thread_x() / 32 * 16);
        let z = || Expr::int(0);
        kb.frag_load(&fa, 0, &a, [row0.clone(), z()]);
        kb.unroll("j", 2, |kb, j| {
            kb.frag_fill(&s, j.clone(), 0.0f32);
            kb.frag_load(&fb, 0, &b, [z(), j.clone() * 16]);
            kb.mma((&s, j.clone()), (&fa, z()), (&fb, z()), (&s, j.clone()));
            let col0 = j.clone() * 16;
            kb.frag_map((&s, j.clone()), &[(&s, j)], |_, c, x| {
                Expr::select((col0.clone() + c).lt(keep), x[0].clone(), Expr::f32(-1e30))
            });
        });
        kb.frag_row_reduce((&m, z()), (&s, z()), 2, RowOp::Max);
        kb.unroll("j", 2, |kb, j| {
            kb.frag_map((&s, j.clone()), &[(&s, j), (&m, z())], |_, _, x| {
                te::exp(x[0].clone() - x[1].clone())
            });
        });
        kb.frag_row_reduce((&l, z()), (&s, z()), 2, RowOp::Sum);
        kb.frag_fill(&o, 0, 0.0f32);
        kb.unroll("j", 2, |kb, j| {
            kb.frag_convert((&p, j.clone()), (&s, j.clone()));
            kb.frag_load(&fb, 0, &v, [j.clone() * 16, z()]);
            kb.mma((&o, z()), (&p, j), (&fb, z()), (&o, z()));
        });
        kb.frag_map((&o, z()), &[(&o, z()), (&l, z())], |_, _, x| {
            x[0].clone() / x[1].clone()
        });
        kb.frag_store(&o, 0, &y, [row0, z()]);
    });
    t.finish().unwrap()
}

#[test]
fn a_row_softmax_in_registers_feeds_the_next_product() {
    for keep in [32, 21] {
        let f = softmax_product(keep);
        let (a, b, v) = (halves(32 * 16, 1), halves(16 * 32, 2), halves(32 * 16, 3));
        let l = lower(&f).unwrap();
        let mut args = vec![
            Arg::Tensor(TensorData::F16(a.clone())),
            Arg::Tensor(TensorData::F16(b.clone())),
            Arg::Tensor(TensorData::F16(v.clone())),
            Arg::Tensor(TensorData::poisoned(DType::F32, 32 * 16)),
        ];
        interp::run(&l, &mut args).unwrap();
        let Some(Arg::Tensor(TensorData::F32(out))) = args.pop() else {
            panic!("the output is f32")
        };
        for i in 0..32 {
            let scores: Vec<f64> = (0..32)
                .map(|j| {
                    let dot: f64 = (0..16)
                        .map(|e| a[i * 16 + e].to_f64() * b[e * 32 + j].to_f64())
                        .sum();
                    if j < keep as usize { dot } else { -1e30 }
                })
                .collect();
            let max = scores.iter().copied().fold(f64::MIN, f64::max);
            let p: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let sum: f64 = p.iter().sum();
            for c in 0..16 {
                let want = (0..32).map(|j| p[j] * v[j * 16 + c].to_f64()).sum::<f64>() / sum;
                let got = out[i * 16 + c] as f64;
                // P enters the second product rounded to f16.
                assert!(
                    (got - want).abs() <= 2e-3,
                    "keep {keep} ({i}, {c}): {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn element_operations_print_as_they_read() {
    let l = lower(&softmax_product(32)).unwrap();
    let text = l.kernels[0].to_string();
    for s in [
        "T.alloc_fragment(\"rows\", m=16, n=16, k=16, \"float32\", count=1)",
        "T.frag_row_reduce(m[0], \"max\", s[0], tiles=2)",
        "T.frag_convert(p[",
        "T.frag_map(o[0], lambda ei, ej, x_o=o[0], x_l=l[0]: x_o / x_l)",
    ] {
        assert!(text.contains(s), "missing {s} in\n{text}");
    }
}

#[test]
fn misused_element_operations_are_template_errors() {
    // A map into an A operand, a reduction into an accumulator, a rows tile stored.
    type Body = fn(&mut weft_ir::template::KernelBuilder, &Buffer);
    let cases: [(&str, Body); 3] = [
        ("map", |kb, _| {
            let a = kb.fragment("a", FragRole::A, S16, DType::F16, FragLayout::RowMajor, 1);
            kb.frag_map((&a, Expr::int(0)), &[], |_, _, _| Expr::zero(DType::F16));
        }),
        ("row reduction", |kb, _| {
            let rm = FragLayout::RowMajor;
            let s = kb.fragment("s", FragRole::Accumulator, S16, DType::F32, rm, 1);
            let t = kb.fragment("t", FragRole::Accumulator, S16, DType::F32, rm, 1);
            kb.frag_row_reduce((&t, Expr::int(0)), (&s, Expr::int(0)), 1, RowOp::Sum);
        }),
        ("rows", |kb, c| {
            let r = kb.fragment(
                "r",
                FragRole::Rows,
                S16,
                DType::F32,
                FragLayout::RowMajor,
                1,
            );
            kb.frag_store(&r, 0, c, [0, 0]);
        }),
    ];
    for (what, body) in cases {
        let mut t = Template::new("bad");
        let c = t.output("C", &[16, 16], DType::F32);
        t.kernel(1, 32, |kb| body(kb, &c));
        let e = t.finish().unwrap_err().to_string();
        assert!(e.contains(what), "{what}: {e}");
    }
}

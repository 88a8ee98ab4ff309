//! Matrix fragments: a warp-level matmul written with them runs in the interpreter with
//! their exact semantics (fp16 inputs, fp32 accumulation), and the ways a template can
//! misuse them (a divergent warp, arguments that differ across the warp, a tile past a
//! buffer's end, wrong roles) are typed errors.

use half::f16;
use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::fragment::{FragLayout, FragRole, MmaShape};
use weft_ir::interp::{self, InterpError};
use weft_ir::lower::lower;
use weft_ir::mapping::spatial;
use weft_ir::prelude::*;
use weft_ir::template::{Template, TemplateError};

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

/// What can go wrong, on purpose.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Lanes 0..16 of each warp skip the store.
    Divergent,
    /// The A tile's origin depends on the lane.
    NonUniform,
    /// The last warp's B tile starts one row past the end.
    PastTheEnd,
}

/// C[m, n] = A[m, k] · B[k, n] (+ C, read back through the accumulator), one 16×16 output
/// tile per warp, two warps per block; `b_layout` says whether B is stored as `[k, n]`
/// (row-major) or `[n, k]` (its transpose).
fn warp_matmul(
    m: i64,
    n: i64,
    k: i64,
    b_layout: FragLayout,
    fault: Fault,
) -> Result<weft_ir::func::Func, TemplateError> {
    let mut t = Template::new("warp_mm");
    let a = t.input("A", &[m, k], DType::F16);
    let b_shape = match b_layout {
        FragLayout::RowMajor => [k, n],
        FragLayout::ColMajor => [n, k],
    };
    let b = t.input("B", &b_shape, DType::F16);
    let c = t.output("C", &[m, n], DType::F32);
    let tiles = (m / 16) * (n / 16);
    t.kernel((tiles + 1) / 2, 64, |kb| {
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, FragLayout::RowMajor, 1);
        let fb = kb.fragment("b", FragRole::B, S16, DType::F16, b_layout, 1);
        let acc = kb.fragment(
            "acc",
            FragRole::Accumulator,
            S16,
            DType::F32,
            FragLayout::RowMajor,
            1,
        );
        let warp = kb.thread_x() / 32 + kb.block_x() * 2;
        kb.for_tasks("w", spatial(&[2 * ((tiles + 1) / 2)]), warp, |kb, [w]| {
            let guard = w.clone().lt(Expr::int(tiles));
            kb.if_(guard, |kb| {
                let (ti, tj) = (w.clone() / (n / 16) * 16, w.clone() % (n / 16) * 16);
                kb.frag_fill(&acc, 0, 0.0f32);
                kb.serial("kk", k / 16, |kb, kk| {
                    let k0 = kk * 16;
                    let mut a_row = ti.clone();
                    if fault == Fault::NonUniform {
                        a_row = a_row + kb.thread_x() % 2;
                    }
                    kb.frag_load(&fa, 0, &a, [a_row, k0.clone()]);
                    let mut b_origin = match b_layout {
                        FragLayout::RowMajor => [k0.clone(), tj.clone()],
                        FragLayout::ColMajor => [tj.clone(), k0.clone()],
                    };
                    if fault == Fault::PastTheEnd {
                        b_origin[0] = b_origin[0].clone() + Expr::int(1);
                    }
                    kb.frag_load(&fb, 0, &b, b_origin);
                    let z = || Expr::int(0);
                    kb.mma((&acc, z()), (&fa, z()), (&fb, z()), (&acc, z()));
                });
                if fault == Fault::Divergent {
                    let lane_high = (kb.thread_x() % 32).ge(Expr::int(16));
                    kb.if_(lane_high, |kb| kb.frag_store(&acc, 0, &c, [ti, tj]));
                } else {
                    kb.frag_store(&acc, 0, &c, [ti, tj]);
                }
            });
        });
    });
    t.finish()
}

fn run(
    f: &weft_ir::func::Func,
    a: &[f16],
    b: &[f16],
    out_len: usize,
) -> Result<Vec<f32>, InterpError> {
    let l = lower(f).unwrap();
    let mut args = vec![
        Arg::Tensor(TensorData::F16(a.to_vec())),
        Arg::Tensor(TensorData::F16(b.to_vec())),
        Arg::Tensor(TensorData::poisoned(DType::F32, out_len)),
    ];
    interp::run(&l, &mut args)?;
    match args.pop() {
        Some(Arg::Tensor(TensorData::F32(v))) => Ok(v),
        other => panic!("unexpected output {other:?}"),
    }
}

#[test]
fn a_warp_matmul_with_fragments_matches_float64() {
    for (m, n, k, layout) in [
        (16, 16, 16, FragLayout::RowMajor),
        (48, 32, 80, FragLayout::RowMajor),
        (32, 48, 48, FragLayout::ColMajor),
    ] {
        let f = warp_matmul(m, n, k, layout, Fault::None).unwrap();
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let a = halves(mu * ku, 1);
        let b = halves(ku * nu, 2);
        let out = run(&f, &a, &b, mu * nu).unwrap();
        for i in 0..mu {
            for j in 0..nu {
                let want: f64 = (0..ku)
                    .map(|p| {
                        let bv = match layout {
                            FragLayout::RowMajor => b[p * nu + j],
                            FragLayout::ColMajor => b[j * ku + p],
                        };
                        a[i * ku + p].to_f64() * bv.to_f64()
                    })
                    .sum();
                let got = out[i * nu + j] as f64;
                // fp16 products are exact in f32; only the f32 sums round.
                assert!(
                    (got - want).abs() <= 1e-5 * (1.0 + want.abs()) * ku as f64,
                    "{m}x{n}x{k} at ({i}, {j}): {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn the_lowered_kernel_declares_its_fragments_and_prints_them() {
    let f = warp_matmul(32, 32, 32, FragLayout::RowMajor, Fault::None).unwrap();
    let l = lower(&f).unwrap();
    let k = &l.kernels[0];
    assert_eq!(k.fragments.len(), 3);
    assert!(k.uses_fragments());
    let text = k.to_string();
    for s in [
        "T.alloc_fragment(\"accumulator\", m=16, n=16, k=16, \"float32\", count=1)",
        "T.tvm_mma_sync(acc[0], a[0], b[0], acc[0])",
        "T.tvm_load_matrix_sync(a[0], A[",
        "stride=32, \"row_major\")",
        "T.tvm_store_matrix_sync(acc[0], C[",
    ] {
        assert!(text.contains(s), "missing {s} in\n{text}");
    }
}

#[test]
fn a_fragment_store_in_half_a_warp_is_a_divergence_error() {
    let f = warp_matmul(32, 32, 16, FragLayout::RowMajor, Fault::Divergent).unwrap();
    let e = run(&f, &halves(512, 1), &halves(512, 2), 1024).unwrap_err();
    assert!(
        matches!(e, InterpError::DivergentFragment { active: 16, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("16 of 32 threads"), "{e}");
}

#[test]
fn a_tile_origin_that_differs_across_the_warp_is_an_error() {
    let f = warp_matmul(32, 32, 16, FragLayout::RowMajor, Fault::NonUniform).unwrap();
    let e = run(&f, &halves(512, 1), &halves(512, 2), 1024).unwrap_err();
    assert!(
        matches!(
            e,
            InterpError::NonUniformFragment {
                what: "tile origin",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_tile_past_the_end_of_a_buffer_is_out_of_bounds() {
    let f = warp_matmul(32, 32, 16, FragLayout::RowMajor, Fault::PastTheEnd).unwrap();
    let e = run(&f, &halves(512, 1), &halves(512, 2), 1024).unwrap_err();
    assert!(
        matches!(e, InterpError::OutOfBounds { ref buffer, .. } if buffer == "B"),
        "{e}"
    );
}

#[test]
fn wrong_roles_types_and_strides_are_template_errors() {
    // mma with the operands swapped.
    let mut t = Template::new("bad_mma");
    let a = t.input("A", &[16, 16], DType::F16);
    let c = t.output("C", &[16, 16], DType::F32);
    t.kernel(1, 32, |kb| {
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, FragLayout::RowMajor, 1);
        let fb = kb.fragment("b", FragRole::B, S16, DType::F16, FragLayout::RowMajor, 1);
        let acc = kb.fragment(
            "acc",
            FragRole::Accumulator,
            S16,
            DType::F32,
            FragLayout::RowMajor,
            1,
        );
        kb.frag_load(&fa, 0, &a, [0, 0]);
        kb.frag_load(&fb, 0, &a, [0, 0]);
        let z = || Expr::int(0);
        kb.mma((&acc, z()), (&fb, z()), (&fa, z()), (&acc, z()));
        kb.frag_store(&acc, 0, &c, [0, 0]);
    });
    let e = t.finish().unwrap_err();
    assert!(
        e.to_string()
            .contains("`b` is a matrix_b fragment where a matrix_a is expected"),
        "{e}"
    );

    // An f32 buffer loaded into an f16 fragment; a tile wider than the buffer's rows.
    let mut t = Template::new("bad_load");
    let a = t.input("A", &[16, 16], DType::F32);
    let narrow = t.input("N", &[64, 8], DType::F16);
    let c = t.output("C", &[16, 16], DType::F32);
    t.kernel(1, 32, |kb| {
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, FragLayout::RowMajor, 1);
        kb.frag_load(&fa, 0, &a, [0, 0]);
        kb.frag_load(&fa, 0, &narrow, [0, 0]);
        kb.store(&c, [0, 0], 0.0f32);
    });
    let e = t.finish().unwrap_err();
    assert!(
        e.to_string().contains("`A` is f32 but fragment `a` is f16"),
        "{e}"
    );

    let mut t = Template::new("narrow");
    let narrow = t.input("N", &[64, 8], DType::F16);
    let c = t.output("C", &[16, 16], DType::F32);
    t.kernel(1, 32, |kb| {
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, FragLayout::RowMajor, 1);
        kb.frag_load(&fa, 0, &narrow, [0, 0]);
        kb.store(&c, [0, 0], 0.0f32);
    });
    let e = t.finish().unwrap_err();
    assert!(
        e.to_string()
            .contains("rows 8 elements apart cannot hold a tile 16 wide"),
        "{e}"
    );

    // Integer fragments do not exist.
    let mut t = Template::new("int_frag");
    let c = t.output("C", &[16, 16], DType::F32);
    t.kernel(1, 32, |kb| {
        kb.fragment("i", FragRole::A, S16, DType::I32, FragLayout::RowMajor, 1);
        kb.store(&c, [0, 0], 0.0f32);
    });
    assert!(
        t.finish()
            .unwrap_err()
            .to_string()
            .contains("fragments hold f16 or f32")
    );
}

#[test]
fn fragments_need_whole_warps() {
    let mut t = Template::new("odd_block");
    let a = t.input("A", &[16, 16], DType::F16);
    let c = t.output("C", &[16, 16], DType::F16);
    t.kernel(1, 48, |kb| {
        let fa = kb.fragment(
            "a",
            FragRole::Accumulator,
            S16,
            DType::F16,
            FragLayout::RowMajor,
            1,
        );
        kb.frag_load(&fa, 0, &a, [0, 0]);
        kb.frag_store(&fa, 0, &c, [0, 0]);
    });
    let f = t.finish().unwrap();
    let l = lower(&f).unwrap();
    let mut args = vec![
        Arg::Tensor(TensorData::F16(halves(256, 1))),
        Arg::Tensor(TensorData::poisoned(DType::F16, 256)),
    ];
    let e = interp::run(&l, &mut args).unwrap_err();
    assert!(
        e.to_string()
            .contains("a block of 48 threads is not a multiple of 32"),
        "{e}"
    );
}

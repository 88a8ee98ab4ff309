//! Matrix fragments on every target that has matrix units, in every way a template can
//! use them: A and B row- or column-major, loaded from global memory or from shared
//! memory (rows 16-byte aligned: CUDA's `ldmatrix`; or not: element by element), f32 or
//! f16 accumulators read from and written to global memory. `D = C + A·B` over small
//! integers is exact in every accumulator type, so the result must equal the float64
//! reference bit for bit: a wrong register layout cannot hide in a tolerance.

use half::f16;
use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::fragment::{FragLayout, FragRole, MmaShape};
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::template::Template;
use weft_testkit::devices::open_or_skip;
use weft_tests::testgen;

testgen!(fragments_in_every_layout_and_memory);

const S16: MmaShape = MmaShape {
    m: 16,
    n: 16,
    k: 16,
};

/// Where the operand tiles come from.
#[derive(Clone, Copy, Debug)]
enum Source {
    Global,
    /// A shared copy whose rows are `16 + pad` halves long.
    Shared {
        pad: i64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Variant {
    a: FragLayout,
    b: FragLayout,
    source: Source,
    acc: DType,
}

/// `D[m, n] = C[m, n] + A · B`, one warp per 16×16 tile of D. A column-major A is stored
/// as its transpose `[k, m]`, a column-major B as `[n, k]`.
fn warp_matmul(m: i64, n: i64, k: i64, v: Variant) -> weft_ir::func::Func {
    let mut t = Template::new("fragments");
    let stored = |layout, rows, cols| match layout {
        FragLayout::RowMajor => [rows, cols],
        FragLayout::ColMajor => [cols, rows],
    };
    let a = t.input("A", &stored(v.a, m, k), DType::F16);
    let b = t.input("B", &stored(v.b, k, n), DType::F16);
    let c = t.input("C", &[m, n], v.acc);
    let d = t.output("D", &[m, n], v.acc);
    let tiles_n = n / 16;
    t.kernel((m / 16) * tiles_n, 32, |kb| {
        let fa = kb.fragment("a", FragRole::A, S16, DType::F16, v.a, 1);
        let fb = kb.fragment("b", FragRole::B, S16, DType::F16, v.b, 1);
        let row = FragLayout::RowMajor;
        let acc = kb.fragment("acc", FragRole::Accumulator, S16, v.acc, row, 1);
        let tile = kb.block_x();
        let ti = kb.let_("ti", tile.clone() / tiles_n * 16);
        let tj = kb.let_("tj", tile % tiles_n * 16);
        let lane = kb.thread_x();
        let zero = || Expr::int(0);
        // Where a tile starts in its stored matrix: (row, col) of the operand at k0.
        let a_at = |k0: &Expr| match v.a {
            FragLayout::RowMajor => [ti.clone(), k0.clone()],
            FragLayout::ColMajor => [k0.clone(), ti.clone()],
        };
        let b_at = |k0: &Expr| match v.b {
            FragLayout::RowMajor => [k0.clone(), tj.clone()],
            FragLayout::ColMajor => [tj.clone(), k0.clone()],
        };
        kb.frag_load(&acc, 0, &c, [ti.clone(), tj.clone()]);
        let smem = match v.source {
            Source::Global => None,
            Source::Shared { pad } => Some((
                kb.shared("A_sh", &[16, 16 + pad], DType::F16),
                kb.shared("B_sh", &[16, 16 + pad], DType::F16),
            )),
        };
        kb.serial("kk", k / 16, |kb, kk| {
            let k0 = kb.let_("k0", kk * 16);
            match &smem {
                None => {
                    kb.frag_load(&fa, 0, &a, a_at(&k0));
                    kb.frag_load(&fb, 0, &b, b_at(&k0));
                }
                Some((a_sh, b_sh)) => {
                    // The stored 16×16 tiles, copied as they are (8 elements a lane).
                    kb.unroll("e", 8, |kb, e| {
                        let idx = e * 32 + lane.clone();
                        let (r, col) = (idx.clone() / 16, idx % 16);
                        let [ar, ac] = a_at(&k0);
                        let va = a.at(&[ar + r.clone(), ac + col.clone()]);
                        kb.store(a_sh, [r.clone(), col.clone()], va);
                        let [br, bc] = b_at(&k0);
                        let vb = b.at(&[br + r.clone(), bc + col.clone()]);
                        kb.store(b_sh, [r, col], vb);
                    });
                    kb.barrier();
                    kb.frag_load(&fa, 0, a_sh, [zero(), zero()]);
                    kb.frag_load(&fb, 0, b_sh, [zero(), zero()]);
                    kb.barrier();
                }
            }
            kb.mma((&acc, zero()), (&fa, zero()), (&fb, zero()), (&acc, zero()));
        });
        kb.frag_store(&acc, 0, &d, [ti, tj]);
    });
    t.finish().unwrap_or_else(|e| panic!("{v:?}: {e}"))
}

/// Every way of using fragments, with accumulators of `acc`.
fn variants(acc: DType) -> Vec<Variant> {
    let layouts = [FragLayout::RowMajor, FragLayout::ColMajor];
    let sources = [
        Source::Global,
        Source::Shared { pad: 8 },
        Source::Shared { pad: 4 },
    ];
    let mut out = Vec::new();
    for a in layouts {
        for b in layouts {
            for source in sources {
                out.push(Variant { a, b, source, acc });
            }
        }
    }
    out
}

/// The CUDA source of every variant compiles (NVRTC, no GPU needed): `ldmatrix` where the
/// shared rows are 16-byte aligned, element-wise loads from global memory and odd strides.
#[test]
fn every_variant_is_cuda_that_nvrtc_compiles() {
    for acc in [DType::F32, DType::F16] {
        for v in variants(acc) {
            let lowered = lower(&warp_matmul(32, 48, 64, v)).unwrap();
            let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default())
                .unwrap_or_else(|e| panic!("{v:?}: {e}"))
                .source;
            let ldsm = matches!(v.source, Source::Shared { pad: 8 });
            assert_eq!(cuda.contains("weft_ldsm_tile(a["), ldsm, "{v:?}:\n{cuda}");
            if let Err(e) = weft_codegen_cuda::nvrtc::check(&cuda) {
                panic!("{v:?}: {e}");
            }
        }
    }
}

/// Integers in -3..=3: every product and sum below is exact in f16 and f32.
fn small_ints(n: usize, rng: &mut impl Rng) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-3i32..=3) as f32).collect()
}

fn tensor(dtype: DType, v: &[f32]) -> TensorData {
    match dtype {
        DType::F16 => TensorData::F16(v.iter().map(|&x| f16::from_f32(x)).collect()),
        _ => TensorData::F32(v.to_vec()),
    }
}

fn fragments_in_every_layout_and_memory(target: &str) {
    let Some(mut device) = open_or_skip(target) else {
        return;
    };
    let limits = device.limits();
    let (m, n, k) = (32i64, 48i64, 64i64);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (a, b, c) = (
        small_ints(mu * ku, &mut rng),
        small_ints(ku * nu, &mut rng),
        small_ints(mu * nu, &mut rng),
    );
    let mut checked = 0;
    let mut failures = Vec::new();
    for acc in [DType::F32, DType::F16] {
        let runs = limits
            .matrix_units
            .iter()
            .any(|u| u.shape == S16 && u.inputs == DType::F16 && u.accumulator == acc);
        if !runs {
            eprintln!(
                "{target} ({}): no m16n16k16 f16 -> {acc} matrix unit, skipped",
                device.name()
            );
            continue;
        }
        for v in variants(acc) {
            let (a_layout, b_layout) = (v.a, v.b);
            let f = warp_matmul(m, n, k, v);
            let lowered = lower(&f).unwrap_or_else(|e| panic!("{v:?}: {e}"));
            // The operands as stored: transposed where column-major.
            let store = |x: &[f32], rows: usize, cols: usize, layout| match layout {
                FragLayout::RowMajor => x.to_vec(),
                FragLayout::ColMajor => (0..rows * cols)
                    .map(|q| x[(q % rows) * cols + q / rows])
                    .collect(),
            };
            let mut args = vec![
                Arg::Tensor(tensor(DType::F16, &store(&a, mu, ku, a_layout))),
                Arg::Tensor(tensor(DType::F16, &store(&b, ku, nu, b_layout))),
                Arg::Tensor(tensor(acc, &c)),
                Arg::Tensor(TensorData::poisoned(acc, mu * nu)),
            ];
            checked += 1;
            if let Err(e) = device.run(&lowered, &mut args) {
                failures.push(format!("{v:?}: {e}"));
                continue;
            }
            let got: Vec<f64> = match args.pop() {
                Some(Arg::Tensor(TensorData::F32(v))) => v.iter().map(|&x| x as f64).collect(),
                Some(Arg::Tensor(TensorData::F16(v))) => v.iter().map(|x| x.to_f64()).collect(),
                other => panic!("unexpected output {other:?}"),
            };
            let wrong = (0..mu * nu).find(|&q| {
                let (i, j) = (q / nu, q % nu);
                let want = c[q] as f64
                    + (0..ku)
                        .map(|p| a[i * ku + p] as f64 * b[p * nu + j] as f64)
                        .sum::<f64>();
                got[q] != want
            });
            if let Some(q) = wrong {
                failures.push(format!(
                    "{v:?}: D[{}, {}] = {} is wrong",
                    q / nu,
                    q % nu,
                    got[q]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} fragment variants failed on `{target}` ({}):\n{}",
        failures.len(),
        device.name(),
        failures.join("\n")
    );
    eprintln!(
        "{target} ({}): {checked} fragment variants exact",
        device.name()
    );
}

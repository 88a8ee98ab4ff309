//! The matmul template: every config of its space is right at odd sizes in the
//! interpreter (which also reports races and out-of-bounds accesses), its space is
//! hardware-centric, and its kernel has the structure the template promises.

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_ir::expr::{Expr, Scope};
use weft_ir::kernel::{KStmt, Kernel};
use weft_ir::mapping::{repeat, spatial};
use weft_kernels::Config;
use weft_kernels::matmul::{self, MatmulParams};
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn workload(m: i64, n: i64, k: i64) -> Workload {
    let shape = Shape::parse("matmul", &format!("m={m},n={n},k={k}")).unwrap();
    Workload::new("matmul", &shape).unwrap()
}

/// Every config the template may be built with: the spaces of CUDA and of WebGPU.
fn all_configs() -> Vec<Config> {
    let mut all = matmul::space(&TargetLimits::cuda());
    for c in matmul::space(&TargetLimits::webgpu_default()) {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    all
}

/// Runs config `c` at `m × n × k` in the interpreter; its error as a fraction of the
/// tolerance (at most 1 is right).
fn interp_error(c: &Config, (m, n, k): (i64, i64, i64), seed: u64) -> Result<f64, String> {
    let w = workload(m, n, k);
    let l = w
        .lower_with("template", Some(c))
        .map_err(|e| e.to_string())?;
    let inputs = w.random_inputs(seed);
    let out = w.run_interp(&l, &inputs).map_err(|e| e.to_string())?;
    Ok(Checker::new(&w, &inputs).check(&out).ratio)
}

/// The sizes the issue names, and the ones that test each edge alone.
const ODD_SHAPES: [(i64, i64, i64); 6] = [
    (1, 1, 1),
    (17, 33, 65),
    (100, 72, 136),
    (127, 129, 3),
    (2, 130, 5),
    (131, 1, 9),
];

proptest! {
    // 320 cases per run: configs sampled from the whole space, each at a named odd
    // shape or a random one (primes and 1 included by the ranges).
    #![proptest_config(ProptestConfig { cases: 320, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_config_is_right_at_odd_sizes(
        ci in any::<prop::sample::Index>(),
        named in any::<prop::sample::Index>(),
        random in (1i64..=140, 1i64..=140, 1i64..=70),
        use_named in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let configs = all_configs();
        let c = &configs[ci.index(configs.len())];
        let shape = if use_named { ODD_SHAPES[named.index(ODD_SHAPES.len())] } else { random };
        match interp_error(c, shape, seed) {
            Ok(e) => prop_assert!(e <= 1.0, "{c} at {shape:?}: error {e:e} of the tolerance"),
            Err(why) => prop_assert!(false, "{c} at {shape:?}: {why}"),
        }
    }
}

/// The 96-row tile (three repeats of the warp tile down: rows of A's tile not a power of
/// two) is right at every named odd shape and across ragged 96-row edges, whole and
/// split; it is in CUDA's space only (registers capped for three blocks).
#[test]
fn the_ninety_six_row_tile_is_right_at_odd_sizes() {
    let cuda = matmul::space(&TargetLimits::cuda());
    let thirds: Vec<&Config> = cuda.iter().filter(|c| c.get("rm") == Some(3)).collect();
    assert_eq!(thirds.len(), 2, "k steps of 8 and 16");
    for c in &thirds {
        let p = MatmulParams::from_config(c).unwrap();
        assert_eq!((p.block_m(), p.block_n(), p.min_blocks), (96, 128, 3));
    }
    for space in [
        TargetLimits::webgpu_default(),
        TargetLimits::rocm_arch("gfx90a"),
    ] {
        assert!(matmul::space(&space).iter().all(|c| c.get("rm") != Some(3)));
    }
    let shapes = ODD_SHAPES
        .iter()
        .copied()
        .chain([(193, 130, 40), (97, 257, 19)]);
    for (i, shape) in shapes.enumerate() {
        for c in &thirds {
            let e = interp_error(c, shape, i as u64).unwrap();
            assert!(e <= 1.0, "{c} at {shape:?}: error {e:e} of the tolerance");
        }
    }
    let split = Config::parse(&format!("{},sk=2", thirds[0])).unwrap();
    let e = interp_error(&split, (150, 140, 70), 7).unwrap();
    assert!(e <= 1.0, "{split}: error {e:e} of the tolerance");
}

#[test]
fn the_spaces_are_hardware_centric_and_small() {
    for r in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
        let space = matmul::space(&r);
        assert!(!space.is_empty() && space.len() <= 200, "{}", space.len());
        for c in &space {
            let p = MatmulParams::from_config(c).unwrap();
            assert!(p.threads() <= r.max_threads_per_block as i64, "{c}");
            assert!(p.shared_bytes() <= r.max_shared_bytes as i64, "{c}");
            assert!(p.registers() <= r.max_registers as i64, "{c}");
        }
        assert!(space.contains(&matmul::default_config(&r)));
    }
    // Seed 002's arrangement is the CUDA default (registers capped for two blocks per
    // multiprocessor); WebGPU's 16 KiB leave it out, and WebGPU takes no register cap.
    let cuda_default =
        MatmulParams::from_config(&matmul::default_config(&TargetLimits::cuda())).unwrap();
    assert_eq!(
        cuda_default,
        MatmulParams {
            min_blocks: 2,
            ..MatmulParams::SEED
        }
    );
    assert!(
        matmul::space(&TargetLimits::webgpu_default())
            .iter()
            .all(|c| c.get("mb") == Some(0))
    );
    assert!(!matmul::space(&TargetLimits::webgpu_default()).contains(&MatmulParams::SEED.config()));
}

#[test]
fn bad_configs_are_named_errors() {
    let w = workload(8, 8, 8);
    let seed = MatmulParams::SEED.config();
    let with = |name: &str, v: i64| {
        let mut c = seed.clone();
        for p in &mut c.0 {
            if p.0 == name {
                p.1 = v;
            }
        }
        c
    };
    for (c, needle) in [
        (with("lm", 8), "lm * ln"),
        (with("tm", 3), "`tm` = 3"),
        (with("bk", 12), "`bk` = 12"),
        (with("wm", 3), "power of two"),
        (Config(vec![("wm".into(), 4)]), "missing"),
        (Config::parse("zz=1").unwrap(), "unknown parameter `zz`"),
    ] {
        let e = w.lower_with("template", Some(&c)).unwrap_err().to_string();
        assert!(e.contains(needle), "{c}: {e}");
    }
    let e = w
        .lower_with("shared-blocking", Some(&seed))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`shared-blocking` of `matmul` is not a template, so it takes no config")
            && e.contains("its template schedule `template` does"),
        "{e}"
    );
}

/// The thread tile the template computes is seed 002's
/// `spatial(wm, wn) * repeat(rm, rn) * spatial(lm, ln) * repeat(tm, tn)`: the rows and
/// columns the kernel gives thread `tx` are the tasks that mapping gives worker `tx`.
#[test]
fn the_thread_tile_is_the_papers_task_mapping() {
    for c in all_configs() {
        let p = MatmulParams::from_config(&c).unwrap();
        let ([wm, wn], [rm, rn], [lm, ln], [tm, tn]) = (p.warps, p.repeat, p.lanes, p.tile);
        let mapping =
            spatial(&[wm, wn]) * repeat(&[rm, rn]) * spatial(&[lm, ln]) * repeat(&[tm, tn]);
        for tx in [0, 1, 31, 32, p.threads() - 1] {
            let (warp, lane) = (tx / 32, tx % 32);
            let (wi, wj, li, lj) = (warp / wn, warp % wn, lane / ln, lane % ln);
            let row0 = wi * (rm * lm * tm) + li * tm;
            let col0 = wj * (rn * ln * tn) + lj * tn;
            let mut ours = Vec::new();
            for ri in 0..rm {
                for e in 0..tm {
                    for rj in 0..rn {
                        for f in 0..tn {
                            ours.push(vec![row0 + ri * lm * tm + e, col0 + rj * ln * tn + f]);
                        }
                    }
                }
            }
            let mut theirs = mapping.worker_tasks(tx);
            ours.sort();
            theirs.sort();
            assert_eq!(ours, theirs, "{c}, thread {tx}");
        }
    }
}

fn kernel(c: &Config, m: i64, n: i64, k: i64) -> Kernel {
    let l = workload(m, n, k).lower_with("template", Some(c)).unwrap();
    assert_eq!(l.kernels.len(), 1);
    l.kernels.into_iter().next().unwrap()
}

/// The first statement at or below `s` that `f` accepts.
fn find<'a>(s: &'a KStmt, f: &dyn Fn(&KStmt) -> bool) -> Option<&'a KStmt> {
    if f(s) {
        return Some(s);
    }
    match s {
        KStmt::Seq(items) => items.iter().find_map(|i| find(i, f)),
        KStmt::For { body, .. } | KStmt::Let { body, .. } => find(body, f),
        KStmt::If {
            then, otherwise, ..
        } => find(then, f).or_else(|| otherwise.as_deref().and_then(|o| find(o, f))),
        _ => None,
    }
}

fn count(s: &KStmt, f: impl Fn(&KStmt) -> bool) -> usize {
    let mut n = 0;
    s.visit(&mut |x| n += f(x) as usize);
    n
}

/// Double buffering with one barrier per step, and no predicate inside the inner
/// product: the unrolled loop over the k tile holds neither an `if` nor a select.
#[test]
fn one_barrier_per_step_and_no_predicate_in_the_inner_product() {
    for c in all_configs() {
        let p = MatmulParams::from_config(&c).unwrap();
        let k = kernel(&c, 131, 67, 45);
        // The loop over k tiles: the kernel's one serial loop.
        let lp = find(&k.body, &|s| matches!(s, KStmt::For { unroll: false, .. }))
            .unwrap_or_else(|| panic!("{c}: no serial k loop"));
        assert_eq!(count(lp, |s| matches!(s, KStmt::Barrier)), 1, "{c}");
        let bk = p.bk;
        let inner = find(lp, &|s| {
            matches!(s, KStmt::For { var, extent, unroll: true, .. }
                if *extent == bk && var.name() == "kk")
        })
        .unwrap_or_else(|| panic!("{c}: no unrolled loop `kk` of {bk}"));
        assert_eq!(count(inner, |s| matches!(s, KStmt::If { .. })), 0, "{c}");
        let mut selects = 0;
        inner.visit_exprs(&mut |e| {
            e.visit(&mut |x| selects += matches!(x, Expr::Select(..)) as usize)
        });
        assert_eq!(selects, 0, "{c}: a select in the inner product:\n{inner:?}");
        // Two shared stages of each tile.
        assert_eq!(k.shared.len(), 2, "{c}");
        assert!(k.shared.iter().all(|b| b.shape()[0] == 2), "{c}");
    }
}

/// Selects at or below `s` that guard a load of global memory (a tested load; the
/// swizzle's selects, inlined into indices, are not).
fn selects(s: &KStmt) -> usize {
    let mut n = 0;
    s.visit_exprs(&mut |e| {
        e.visit(&mut |x| {
            if let Expr::Select(_, t, _) = x {
                let mut global = false;
                t.visit(&mut |y| {
                    global |=
                        matches!(y, Expr::Load { buffer, .. } if buffer.scope() == Scope::Global)
                });
                n += global as usize;
            }
        })
    });
    n
}

/// Whole k tiles load untested: rows of A and columns of B past the matrix's edge read
/// the last one (clamped; they reach only outputs never stored), and only the ragged
/// last tile tests k, behind a uniform branch of its own. With the tests in every step
/// ptxas re-evaluated one comparison per load (131 `ISETP` at 1021³ against 11 at 1024³).
#[test]
fn whole_k_tiles_load_without_tests() {
    for c in all_configs() {
        // k = 101: no k step divides it, and every one makes three tiles or more (with
        // two, the next tile is always the ragged last).
        let k = kernel(&c, 131, 67, 101);
        let lp = find(&k.body, &|s| matches!(s, KStmt::For { unroll: false, .. }))
            .unwrap_or_else(|| panic!("{c}: no serial k loop"));
        let Some(KStmt::If {
            then, otherwise, ..
        }) = find(lp, &|s| {
            matches!(
                s,
                KStmt::If {
                    otherwise: Some(_),
                    ..
                }
            )
        })
        else {
            panic!("{c}: no branch between whole and ragged tiles:\n{lp:?}");
        };
        assert_eq!(
            selects(then),
            0,
            "{c}: a test in a whole tile's loads:\n{then:?}"
        );
        // A tested vector load is `if c { copy } else { zeros }` (threads past a tile's
        // elements skip theirs under an `if` with no `else`).
        let tested = |s: &KStmt| {
            matches!(
                s,
                KStmt::If {
                    otherwise: Some(_),
                    ..
                }
            )
        };
        assert_eq!(count(then, tested), 0, "{c}");
        assert!(
            otherwise
                .as_deref()
                .is_some_and(|o| selects(o) + count(o, tested) > 0),
            "{c}: the ragged tile is not tested"
        );
        // k = 128: every tile whole, nothing tested in the loop.
        let k = kernel(&c, 131, 67, 128);
        let lp = find(&k.body, &|s| matches!(s, KStmt::For { unroll: false, .. })).unwrap();
        assert_eq!(selects(lp), 0, "{c}:\n{lp:?}");
    }
}

/// Vector accesses where rows allow: 128-bit loads of A when K % 4 == 0 and of B and
/// stores of C when N % 4 == 0; scalar ones otherwise, 2 mod 4 included (64-bit
/// accesses there ran 3% slower on an H200, `docs/matmul-template.md`).
#[test]
fn global_accesses_are_vectorized_where_rows_allow() {
    let c = MatmulParams::SEED.config();
    // The widths of every access of global buffer `name`: its stores and its loads.
    let widths = |k: &Kernel, name: &str| {
        let mut lanes = Vec::new();
        k.body.visit(&mut |s| {
            if let KStmt::Store {
                buffer, lanes: l, ..
            } = s
                && buffer.name() == name
            {
                lanes.push(*l);
            }
        });
        k.body.visit_exprs(&mut |e| {
            e.visit(&mut |x| {
                if let Expr::Load {
                    buffer, lanes: l, ..
                } = x
                    && buffer.name() == name
                    && buffer.scope() == Scope::Global
                {
                    lanes.push(*l);
                }
            })
        });
        lanes.sort();
        lanes.dedup();
        lanes
    };
    let aligned = kernel(&c, 100, 72, 136);
    for name in ["A", "B", "C"] {
        assert_eq!(widths(&aligned, name), [4], "{name} at 100x72x136");
    }
    // K = 135: A's rows are not 16-byte aligned; N = 72 still is.
    let odd_k = kernel(&c, 100, 72, 135);
    assert_eq!(widths(&odd_k, "A"), [1]);
    assert_eq!(widths(&odd_k, "B"), [4]);
    // N = 71: B and C scalar.
    let odd_n = kernel(&c, 100, 71, 136);
    assert_eq!(widths(&odd_n, "A"), [4]);
    assert_eq!(widths(&odd_n, "B"), [1]);
    assert_eq!(widths(&odd_n, "C"), [1]);
    // K = 134, N = 70 (2 mod 4): scalar accesses.
    let even = kernel(&c, 100, 70, 134);
    for name in ["A", "B", "C"] {
        assert_eq!(widths(&even, name), [1], "{name} at 100x70x134");
    }
    // And right there, whole and split, in the interpreter.
    for (m, n, k) in [(37, 70, 134), (5, 2, 6), (129, 134, 70)] {
        for config in [c.clone(), weft_kernels::split_k::split(c.clone(), 3)] {
            let e = interp_error(&config, (m, n, k), 7).unwrap();
            assert!(e <= 1.0, "{config} at {m}x{n}x{k}: {e:e}");
        }
    }
}

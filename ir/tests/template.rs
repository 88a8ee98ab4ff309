//! The template API: what it builds, how it lowers, and the typed errors of a template
//! written wrong. Every kernel runs in the interpreter, whose race and bounds checks see
//! a template's mistakes.

use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::interp::{self, InterpError};
use weft_ir::kernel::{KStmt, Kernel, LoweredFunc};
use weft_ir::lower::lower;
use weft_ir::mapping::{repeat, spatial};
use weft_ir::prelude::*;
use weft_ir::template::{Template, TemplateError, load_or};

fn run(l: &LoweredFunc, inputs: &[Vec<f32>], out_len: usize) -> Result<Vec<f32>, InterpError> {
    let mut args: Vec<Arg> = inputs
        .iter()
        .map(|x| Arg::Tensor(TensorData::F32(x.clone())))
        .collect();
    args.push(Arg::Tensor(TensorData::poisoned(DType::F32, out_len)));
    interp::run(l, &mut args)?;
    match args.pop() {
        Some(Arg::Tensor(TensorData::F32(v))) => Ok(v),
        other => panic!("unexpected output {other:?}"),
    }
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random::<f32>()).collect()
}

fn count(k: &Kernel, f: impl Fn(&KStmt) -> bool) -> usize {
    let mut n = 0;
    k.body.visit(&mut |s| n += f(s) as usize);
    n
}

/// Seed 002's figure 8 (a 64×8 tile of A loaded by 128 threads, four elements each) as a
/// template: the same program `mapping_lowering.rs` builds by hand in 60 lines.
#[test]
fn the_papers_cooperative_load_in_a_few_lines() {
    let mut t = Template::new("tile_copy");
    let a = t.input("A", &[64, 8], DType::F32);
    let b = t.output("B", &[64, 8], DType::F32);
    t.kernel(1, 128, |k| {
        let tx = k.thread_x();
        k.for_tasks(
            "i, k",
            repeat(&[4, 1]) * spatial(&[16, 8]),
            tx,
            |k, [i, j]| {
                k.store(&b, [i.clone(), j.clone()], a.at(&[i, j]) * 2.0f32);
            },
        );
    });
    let l = lower(&t.finish().unwrap()).unwrap();
    assert_eq!(l.kernels[0].block, [128, 1, 1]);
    // The repeat(4, 1) became one unrolled loop of four; no mapping is left.
    assert_eq!(count(&l.kernels[0], |s| matches!(s, KStmt::Mapping(_))), 0);
    assert_eq!(
        count(&l.kernels[0], |s| matches!(
            s,
            KStmt::For {
                extent: 4,
                unroll: true,
                ..
            }
        )),
        1
    );
    let xs = random(512, 1);
    let out = run(&l, std::slice::from_ref(&xs), 512).unwrap();
    for (o, x) in out.iter().zip(&xs) {
        assert_eq!(*o, x * 2.0);
    }
}

/// A double-buffered reduction over tiles written the way the matmul template is: two
/// shared stages, the next tile fetched while the current one is used, one barrier per
/// step. `barriers` decides which of the two barriers a step has; the interpreter must
/// accept the right program and report a race in the wrong one.
fn staged_sum(steps: i64, with_loop_barrier: bool) -> LoweredFunc {
    let n = 32;
    let mut t = Template::new("staged_sum");
    let x = t.input("X", &[steps, n], DType::F32);
    let y = t.output("Y", &[n], DType::F32);
    t.kernel(1, n, |k| {
        let tx = k.thread_x();
        let smem = k.shared("stage", &[2, n], DType::F32);
        let acc = k.local("acc", &[1], DType::F32);
        k.store(&acc, [0], 0.0f32);
        k.store(
            &smem,
            [Expr::int(0), tx.clone()],
            x.at(&[Expr::int(0), tx.clone()]),
        );
        k.barrier();
        k.serial("s", steps, |k, s| {
            let more = (s.clone() + 1).lt(steps);
            // Thread tx reads the element its neighbour stored: data crosses threads.
            let neighbour = (tx.clone() + 1) % n;
            let cur = smem.at(&[s.clone() % 2, neighbour]);
            k.store(&acc, [0], acc.at(&[0]) + cur);
            k.if_(more, |k| {
                let next = x.at(&[s.clone() + 1, tx.clone()]);
                k.store(&smem, [(s.clone() + 1) % 2, tx.clone()], next);
            });
            if with_loop_barrier {
                k.barrier();
            }
        });
        k.store(&y, [tx], acc.at(&[0]));
    });
    lower(&t.finish().unwrap()).unwrap()
}

#[test]
fn explicit_barriers_are_kept_and_checked_by_the_interpreter() {
    let (steps, n) = (5usize, 32usize);
    let xs = random(steps * n, 2);
    let right = staged_sum(steps as i64, true);
    // Exactly the author's two barriers: none added by lowering.
    assert_eq!(count(&right.kernels[0], |s| matches!(s, KStmt::Barrier)), 2);
    let out = run(&right, std::slice::from_ref(&xs), n).unwrap();
    for (t, o) in out.iter().enumerate() {
        let want: f32 = (0..steps).map(|s| xs[s * n + (t + 1) % n]).sum();
        assert!((o - want).abs() < 1e-5, "thread {t}: {o} vs {want}");
    }
    // Without the barrier in the loop, stage s is overwritten while a neighbour may still
    // read it: a shared-memory race the interpreter must report.
    let wrong = staged_sum(steps as i64, false);
    let err = run(&wrong, &[xs], n).unwrap_err();
    assert!(
        matches!(err, InterpError::SharedRace { .. }),
        "expected a shared race, got {err}"
    );
}

/// A predicated vector load at a tile edge: one 4-wide copy where the row is inside the
/// matrix, zeros where it is not, and the copy runs on the interpreter (which checks
/// alignment and bounds).
#[test]
fn predicated_vector_loads_lower_to_a_guarded_vector_copy() {
    let (rows, cols) = (5, 8);
    let mut t = Template::new("edge");
    let a = t.input("A", &[rows, cols], DType::F32);
    let b = t.output("B", &[8, cols], DType::F32);
    t.kernel(1, [2, 8], |k| {
        let (c, r) = (k.thread_x(), k.thread_y());
        let regs = k.local("regs", &[4], DType::F32);
        let inside = r.clone().lt(rows);
        k.copy_if(
            4,
            &regs,
            [Expr::int(0)],
            &a,
            [r.clone(), c.clone() * 4],
            inside,
            0.0f32,
        );
        k.copy(4, &b, [r, c * 4], &regs, [Expr::int(0)]);
    });
    let l = lower(&t.finish().unwrap()).unwrap();
    let k = &l.kernels[0];
    let vector_copies = count(k, |s| matches!(s, KStmt::Store { lanes: 4, .. }));
    assert_eq!(vector_copies, 2, "{k}");
    assert_eq!(
        count(k, |s| matches!(
            s,
            KStmt::If {
                otherwise: Some(_),
                ..
            }
        )),
        1
    );
    let xs = random((rows * cols) as usize, 3);
    let out = run(&l, std::slice::from_ref(&xs), (8 * cols) as usize).unwrap();
    for (i, o) in out.iter().enumerate() {
        let want = if i < (rows * cols) as usize {
            xs[i]
        } else {
            0.0
        };
        assert_eq!(*o, want, "element {i}");
    }
}

/// `let` names a value for everything after it; a loaded value with a fallback
/// (`load_or`) guards its load, so reading past the end is never done.
#[test]
fn lets_scope_what_follows_and_load_or_guards_its_load() {
    let n = 10;
    let mut t = Template::new("shift");
    let a = t.input("A", &[n], DType::F32);
    let b = t.output("B", &[16], DType::F32);
    t.kernel(1, 16, |k| {
        let i = k.let_("i", k.thread_x() + 3);
        let v = k.let_("v", load_or(&a, [i.clone()], i.clone().lt(n), -1.0f32));
        k.store(&b, [k.thread_x()], v.cast(DType::F32));
    });
    let func = t.finish().unwrap();
    let printed = func.to_string();
    assert!(printed.contains("i: T.int32 = tx + 3"), "{printed}");
    let out = run(&lower(&func).unwrap(), &[random(n as usize, 4)], 16).unwrap();
    assert_eq!(out[15], -1.0);
    assert!(out[6] >= 0.0);
}

fn error_of(build: impl FnOnce(&mut Template)) -> TemplateError {
    let mut t = Template::new("bad");
    build(&mut t);
    t.finish().unwrap_err()
}

#[test]
fn template_mistakes_are_typed_errors_that_name_them() {
    let e = error_of(|t| {
        let a = t.output("A", &[4], DType::F32);
        t.kernel(1, 4, |k| k.serial("i", 0, |k, i| k.store(&a, [i], 1.0f32)));
    });
    assert!(matches!(e, TemplateError::Extent { .. }), "{e}");
    assert!(e.to_string().contains("loop `i`"), "{e}");

    let e = error_of(|t| {
        let a = t.output("A", &[4, 4], DType::F32);
        t.kernel(1, 16, |k| {
            let tx = k.thread_x();
            k.for_tasks("i, j", spatial(&[4, 4]) * repeat(&[1]), tx, |k, [i, j]| {
                k.store(&a, [i, j], 1.0f32)
            });
        });
    });
    assert!(matches!(e, TemplateError::Mapping { .. }), "{e}");

    let e = error_of(|t| {
        let a = t.output("A", &[4, 4], DType::F32);
        t.kernel(1, 16, |k| {
            let tx = k.thread_x();
            k.for_tasks("i", spatial(&[4, 4]), tx, |k, [i]| {
                k.store(&a, [i.clone(), i], 1.0f32)
            });
        });
    });
    assert!(
        matches!(
            e,
            TemplateError::TaskVars {
                rank: 2,
                vars: 1,
                ..
            }
        ),
        "{e}"
    );

    let e = error_of(|t| {
        let a = t.output("A", &[4, 4], DType::F32);
        t.kernel(1, 4, |k| k.store(&a, [k.thread_x()], 1.0f32));
    });
    assert!(
        matches!(
            e,
            TemplateError::IndexCount {
                want: 2,
                got: 1,
                ..
            }
        ),
        "{e}"
    );

    let e = error_of(|t| {
        let a = t.output("A", &[4], DType::F32);
        let stray = Buffer::new("stray", vec![4], DType::F32, Scope::Global);
        t.kernel(1, 4, |k| {
            k.store(&a, [k.thread_x()], stray.at(&[k.thread_x()]))
        });
    });
    assert!(matches!(e, TemplateError::UnknownBuffer { .. }), "{e}");
    assert!(e.to_string().contains("stray"), "{e}");

    let e = error_of(|t| {
        let a = t.input("A", &[4], DType::F32);
        t.kernel(1, 4, |k| k.store(&a, [k.thread_x()], 1.0f32));
    });
    assert!(matches!(e, TemplateError::StoreToInput { .. }), "{e}");

    let e = error_of(|t| {
        let a = t.output("A", &[4], DType::F32);
        t.kernel(1, 4, |k| k.store(&a, [k.thread_x()], k.thread_x()));
    });
    assert!(
        matches!(
            e,
            TemplateError::StoreType {
                value: DType::I32,
                ..
            }
        ),
        "{e}"
    );

    let e = error_of(|t| {
        let a = t.output("A", &[4], DType::F32);
        t.kernel(1, 4, |k| k.store(&a, [k.thread_x() + 1.5f32], 1.0f32));
    });
    assert!(matches!(e, TemplateError::Type { .. }), "{e}");

    let e = error_of(|t| {
        t.output("A", &[4], DType::F32);
    });
    assert!(matches!(e, TemplateError::Invalid { .. }), "{e}");

    let e = error_of(|t| {
        let a = t.output("A", &[0], DType::F32);
        t.kernel(1, 4, |k| k.store(&a, [k.thread_x()], 1.0f32));
    });
    assert!(matches!(e, TemplateError::Extent { .. }), "{e}");

    let e = error_of(|t| {
        let a = t.output("A", &[4], DType::F32);
        t.kernel(1, [4, 0], |k| k.store(&a, [k.thread_x()], 1.0f32));
    });
    assert!(e.to_string().contains("threadIdx.y"), "{e}");
}

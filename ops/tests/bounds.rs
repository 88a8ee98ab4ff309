//! Every shipped op × schedule, and a sample of every config the tuner may pick, has each
//! memory access proven in bounds by the static prover (`weft_ir::bounds`) — the proof
//! that lets wgpu create its shaders without runtime checks. Kernels that are not proven
//! are listed here with the reason, and that list is checked too.

use weft_codegen_common::TargetLimits;
use weft_ir::bounds::{prove, prove_all, prove_with_lengths};
use weft_ir::expr::ThreadAxis;
use weft_ir::interp::InterpError;
use weft_ir::kernel::KStmt;
use weft_ir::lower::LowerError;
use weft_ir::schedule::Schedule;
use weft_ops::{OPS, Shape, Workload};

/// Kernels the prover is known not to prove, as (op, schedule, reason). Empty: every
/// shipped kernel is proven.
const KNOWN_UNPROVEN: &[(&str, &str, &str)] = &[];

/// The shapes to prove at: the op's small and bench shapes and its default.
fn shapes(op: &weft_ops::OpSpec) -> Vec<Shape> {
    let mut out = vec![Shape::defaults(op)];
    for v in op.small.iter().chain(op.bench) {
        out.push(Shape::from_values(op, v).unwrap());
    }
    out
}

/// The unproven kernels of `op`/`schedule` at `shape` with `config`, one line each.
fn unproven(w: &Workload, schedule: &str, config: Option<&weft_kernels::Config>) -> Vec<String> {
    let lowered = match w.lower_with(schedule, config) {
        Ok(l) => l,
        // A config that does not fit a shape is the tuner's business, not the prover's.
        Err(weft_ops::OpError::Template { .. }) if config.is_some() => return Vec::new(),
        Err(e) => panic!("{e}"),
    };
    prove_all(&lowered)
        .into_iter()
        .filter(|r| !r.is_proven())
        .map(|r| format!("{} {schedule} at {}: {r}", w.op.name, w.shape))
        .collect()
}

#[test]
fn every_shipped_op_and_schedule_is_proven_in_bounds() {
    let mut bad = Vec::new();
    for op in OPS {
        for schedule in op.schedules {
            if KNOWN_UNPROVEN
                .iter()
                .any(|(o, s, _)| *o == op.name && s == schedule)
            {
                continue;
            }
            for shape in shapes(op) {
                let w = Workload::new(op.name, &shape).unwrap();
                bad.extend(unproven(&w, schedule, None));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn sampled_tuner_configs_are_proven_in_bounds() {
    let mut bad = Vec::new();
    for op in OPS {
        let Some(t) = op.template else { continue };
        for res in [
            TargetLimits::cuda(),
            TargetLimits::webgpu_default(),
            TargetLimits::metal(),
        ] {
            let space = (t.space)(&res);
            // Every seventh config, and the last: a spread over the space that keeps the
            // test quick.
            let picks = space
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 7 == 0 || *i + 1 == space.len())
                .map(|(_, c)| c);
            for config in picks {
                for v in op.small {
                    let shape = Shape::from_values(op, v).unwrap();
                    let w = Workload::new(op.name, &shape).unwrap();
                    bad.extend(unproven(&w, t.schedule, Some(config)));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The proof is tight: with the output one element shorter than its shape, no kernel
/// that writes it is proven (each writes the last element). A prover that proved
/// anything would pass the two tests above; this one fails it.
#[test]
fn a_shortened_output_is_never_proven() {
    for op in OPS {
        for schedule in op.schedules {
            for v in op.small {
                let shape = Shape::from_values(op, v).unwrap();
                let w = Workload::new(op.name, &shape).unwrap();
                let lowered = w.lower(schedule).unwrap();
                // By name: a template builds its Func over buffers of its own.
                let out = w.output.name();
                let writer = lowered
                    .kernels
                    .iter()
                    .rfind(|k| {
                        k.buffer_params()
                            .any(|(b, a)| b.name() == out && a.writes())
                    })
                    .unwrap_or_else(|| {
                        panic!("{} {schedule}: no kernel writes the output", op.name)
                    });
                let short = |b: &weft_ir::expr::Buffer| {
                    b.numel()
                        - (b.name() == out && b.scope() == weft_ir::expr::Scope::Global) as i64
                };
                let report = prove_with_lengths(writer, &short);
                assert!(
                    !report.is_proven(),
                    "{} {schedule} at {shape}: proven with `{}` one element short",
                    op.name,
                    w.output.name()
                );
                let bad: Vec<_> = report.unproven().collect();
                assert!(
                    bad.iter()
                        .all(|c| c.buffer == w.output.name() && c.lower_proven),
                    "{} {schedule} at {shape}: {report}",
                    op.name
                );
            }
        }
    }
}

/// Removes every `if` (keeping its `then`): the predicate of a split that does not
/// divide the extent is dropped, as a buggy schedule would.
fn drop_predicates(s: &KStmt) -> KStmt {
    s.rewrite(&mut |s| match s {
        KStmt::If { then, .. } => *then,
        s => s,
    })
}

#[test]
fn a_dropped_predicate_is_not_proven_and_the_interpreter_catches_it() {
    // vecadd at 1000 with blocks of 128: 1024 threads, the last 24 past the end.
    let shape = Shape::parse("vecadd", "n=1000").unwrap();
    let w = Workload::new("vecadd", &shape).unwrap();
    let mut lowered = w.lower("split-bind").unwrap();
    assert!(prove_all(&lowered).iter().all(|r| r.is_proven()));
    let k = &mut lowered.kernels[0];
    k.body = drop_predicates(&k.body);
    let report = prove(k);
    let names: Vec<&str> = report.unproven().map(|c| c.buffer.as_str()).collect();
    assert_eq!(names, ["A", "B", "C"], "{report}");
    for c in report.unproven() {
        assert!(c.lower_proven && !c.upper_proven, "{c}");
        assert_eq!(c.interval, Some((0, 1023)), "{c}");
    }
    let err = w
        .run_interp(&lowered, &w.random_inputs(1))
        .expect_err("the interpreter runs 24 threads past the end");
    assert!(
        matches!(&err, InterpError::OutOfBounds { index, len: 1000, .. } if *index >= 1000),
        "{err}"
    );
}

/// Seed 001's shared fetch, written as a new user coming from TVM might: `cache_read`
/// then `compute_at` at the block loop, fetch loops left unbound.
fn window_sum_fetch(bind_fetch: bool) -> Result<weft_ir::kernel::LoweredFunc, LowerError> {
    let w = Workload::new("window-sum", &Shape::parse("window-sum", "n=1000").unwrap()).unwrap();
    let mut s = Schedule::new(w.func.clone());
    let c = s.get_block("B").unwrap();
    let i = s.get_loops(c).unwrap();
    let p = s.split(i[0], &[None, Some(128)]).unwrap();
    s.bind(p[0], ThreadAxis::BlockIdxX).unwrap();
    s.bind(p[1], ThreadAxis::ThreadIdxX).unwrap();
    let sh = s.cache_read(c, 0, "shared").unwrap();
    s.compute_at(sh, p[0]).unwrap();
    if bind_fetch {
        let ax = s.get_loops(sh).unwrap();
        let q = s.split(ax[ax.len() - 1], &[None, Some(128)]).unwrap();
        s.bind(q[1], ThreadAxis::ThreadIdxX).unwrap();
    }
    weft_ir::lower::lower(s.func())
}

#[test]
fn an_unbound_shared_fetch_is_a_lowering_error_that_says_what_to_bind() {
    let err = window_sum_fetch(false).expect_err("every thread fetches the whole tile");
    assert!(
        matches!(&err, LowerError::RedundantFetch { stage, axis: ThreadAxis::ThreadIdxX, threads: 128, .. } if stage == "A_shared"),
        "{err:?}"
    );
    let text = err.to_string();
    for needle in [
        "`A_shared`",
        "threadIdx.x",
        "bind the inner part",
        "cooperative fetch",
    ] {
        assert!(text.contains(needle), "`{needle}` not in: {text}");
    }
    // Bound over threadIdx.x, the same fetch lowers, is proven and runs right.
    let lowered = window_sum_fetch(true).unwrap();
    assert!(prove_all(&lowered).iter().all(|r| r.is_proven()));
}

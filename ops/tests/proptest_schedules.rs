//! Property: random valid schedules (split, reorder, fuse, bind, unroll) of matmul and
//! depthwise conv compute the reference's output in the interpreter. A primitive the
//! schedule refuses is skipped (and must leave the Func unchanged); a schedule that
//! applied must lower and run without error.

use proptest::prelude::*;
use weft_ir::prelude::ThreadAxis;
use weft_ir::schedule::{LoopRV, Schedule};
use weft_ops::{Shape, Workload, find};

#[derive(Clone, Debug)]
enum Step {
    Split {
        at: usize,
        factor: i64,
        infer_outer: bool,
    },
    Fuse {
        at: usize,
    },
    Reorder {
        picks: Vec<usize>,
    },
    Bind {
        at: usize,
        axis: usize,
    },
    Unroll {
        at: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0usize..8, 1i64..9, any::<bool>()).prop_map(|(at, factor, infer_outer)| Step::Split { at, factor, infer_outer }),
        1 => (0usize..8).prop_map(|at| Step::Fuse { at }),
        2 => proptest::collection::vec(0usize..8, 2..5).prop_map(|picks| Step::Reorder { picks }),
        3 => (0usize..8, 0usize..6).prop_map(|(at, axis)| Step::Bind { at, axis }),
        1 => (0usize..8).prop_map(|at| Step::Unroll { at }),
    ]
}

fn apply(s: &mut Schedule, block: &str, steps: &[Step]) {
    let b = s.get_block(block).unwrap();
    for st in steps {
        let loops: Vec<LoopRV> = s.get_loops(b).unwrap();
        let n = loops.len();
        let pick = |i: usize| loops[i % n];
        let before = s.func().to_string();
        let r = match st {
            Step::Split {
                at,
                factor,
                infer_outer,
            } => {
                let f = if *infer_outer {
                    [None, Some(*factor)]
                } else {
                    [Some(*factor), None]
                };
                s.split(pick(*at), &f).map(|_| ())
            }
            Step::Fuse { at } if n >= 2 => {
                let i = at % (n - 1);
                s.fuse(&[loops[i], loops[i + 1]]).map(|_| ())
            }
            Step::Fuse { .. } => Ok(()),
            Step::Reorder { picks } => {
                let mut chosen: Vec<LoopRV> = Vec::new();
                for p in picks {
                    let l = pick(*p);
                    if !chosen.contains(&l) {
                        chosen.push(l);
                    }
                }
                s.reorder(&chosen)
            }
            Step::Bind { at, axis } => s.bind(pick(*at), ThreadAxis::ALL[*axis]),
            Step::Unroll { at } => s.unroll(pick(*at)),
        };
        if r.is_err() {
            assert_eq!(
                before,
                s.func().to_string(),
                "a refused {st:?} changed the Func"
            );
        }
    }
}

fn run(
    op: &str,
    values: &[i64],
    block: &str,
    inline_first: bool,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let shape = Shape::from_values(find(op).unwrap(), values).unwrap();
    let w = Workload::new(op, &shape).unwrap();
    let mut s = Schedule::new(w.func.clone());
    if inline_first {
        let p = s.get_block("padded").unwrap();
        s.compute_inline(p).unwrap();
    }
    apply(&mut s, block, steps);
    let lowered = weft_ir::lower::lower(s.func())
        .map_err(|e| TestCaseError::fail(format!("lowering failed: {e}\n{}", s.func())))?;
    let inputs = w.random_inputs(11);
    let out = w
        .run_interp(&lowered, &inputs)
        .map_err(|e| TestCaseError::fail(format!("interpreter: {e}\n{}\n{lowered}", s.trace())))?;
    let err = weft_ops::check::check(&w, &inputs, &out);
    prop_assert!(err.is_right(), "error {err}\n{}\n{lowered}", s.trace());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_matmul_schedules(m in 1i64..24, n in 1i64..24, k in 1i64..24,
                               steps in proptest::collection::vec(step(), 0..10)) {
        run("matmul", &[m, n, k], "C", false, &steps)?;
    }

    #[test]
    fn random_depthwise_schedules(b in 1i64..3, c in 1i64..4, h in 1i64..10, w in 1i64..10,
                                  kk in prop_oneof![Just(1i64), Just(3), Just(5)],
                                  stride in 1i64..3,
                                  inline_first in any::<bool>(),
                                  steps in proptest::collection::vec(step(), 0..10)) {
        run("depthwise-conv2d", &[b, c, h, w, kk, stride], "depthwise_conv", inline_first, &steps)?;
    }
}

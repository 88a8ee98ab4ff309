//! The interpreter reports a missing barrier as a shared-memory race.

mod common;

use common::strip_barriers;
use weft_ir::interp::InterpError;
use weft_ops::{Shape, Workload, find};

fn window_sum() -> Workload {
    let shape = Shape::from_values(find("window-sum").unwrap(), &[1000]).unwrap();
    Workload::new("window-sum", &shape).unwrap()
}

#[test]
fn window_sum_with_its_barrier_is_race_free() {
    let w = window_sum();
    let l = w.lower("shared-fetch").unwrap();
    w.run_interp(&l, &w.random_inputs(1)).unwrap();
}

#[test]
fn window_sum_without_its_barrier_is_a_race() {
    let w = window_sum();
    let mut l = w.lower("shared-fetch").unwrap();
    let before = format!("{l}");
    l.kernels[0].body = strip_barriers(&l.kernels[0].body);
    assert_ne!(before, format!("{l}"), "the kernel had a barrier to remove");
    let err = w.run_interp(&l, &w.random_inputs(1)).unwrap_err();
    assert!(
        matches!(err, InterpError::SharedRace { .. }),
        "expected a shared-memory race, got {err}"
    );
    assert!(err.to_string().contains("A_shared"), "{err}");
}

#[test]
fn matmul_without_barriers_is_a_race() {
    let shape = Shape::from_values(find("matmul").unwrap(), &[64, 64, 64]).unwrap();
    let w = Workload::new("matmul", &shape).unwrap();
    let mut l = w.lower("shared-blocking").unwrap();
    l.kernels[0].body = strip_barriers(&l.kernels[0].body);
    let err = w.run_interp(&l, &w.random_inputs(2)).unwrap_err();
    assert!(matches!(err, InterpError::SharedRace { .. }), "{err}");
}

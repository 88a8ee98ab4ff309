//! Shared overlays (`KernelBuilder::shared_over`): an array laid over the bytes of
//! others that the kernel is done with. The interpreter holds the kernel to the contract:
//! the right program runs and computes the right values; using both sides in one barrier
//! interval, or reading a side after the other wrote the shared bytes, is a typed error
//! naming both arrays.

use rand::{Rng, SeedableRng};
use weft_ir::data::{Arg, TensorData};
use weft_ir::interp::{self, InterpError};
use weft_ir::kernel::LoweredFunc;
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::template::{Template, TemplateError};

const N: i64 = 32;

/// How the program below goes wrong, if it does.
#[derive(Clone, Copy, PartialEq)]
enum Mistake {
    None,
    /// No barrier between the last read of the hosts and the first write of the overlay.
    NoBarrier,
    /// The hosts read again after the overlay wrote over them.
    ReadHostAfter,
}

/// Two stages (`a`, `b`) hold X and X²; each thread sums its neighbour's pair. Then the
/// overlay `tile` (48 floats, over both stages) holds those sums and each thread writes
/// its neighbour's: `Y[t] = s[(t + 2) % N]` with `s[t] = X[t] + X[t]²`.
fn program(mistake: Mistake) -> LoweredFunc {
    let mut t = Template::new("overlaid");
    let x = t.input("X", &[N], DType::F32);
    let y = t.output("Y", &[N], DType::F32);
    t.kernel(1, N, |k| {
        let tx = k.thread_x();
        let a = k.shared("a", &[N], DType::F32);
        let b = k.shared("b", &[N], DType::F32);
        let xt = x.at(std::slice::from_ref(&tx));
        k.store(&a, [tx.clone()], xt.clone());
        k.store(&b, [tx.clone()], xt.clone() * xt);
        k.barrier();
        let next = (tx.clone() + 1) % N;
        let sum = k.let_("sum", a.at(std::slice::from_ref(&next)) + b.at(&[next]));
        if mistake != Mistake::NoBarrier {
            k.barrier();
        }
        let tile = k.shared_over("tile", &[48], DType::F32, &[&a, &b]);
        k.store(&tile, [tx.clone()], sum);
        k.if_(tx.clone().lt(16), |k| {
            k.store(&tile, [tx.clone() + 32], 0.0f32);
        });
        k.barrier();
        let out = k.let_("out", tile.at(&[(tx.clone() + 1) % N]));
        if mistake == Mistake::ReadHostAfter {
            k.barrier();
            k.store(&y, [tx.clone()], out + a.at(&[tx]));
        } else {
            k.store(&y, [tx], out);
        }
    });
    lower(&t.finish().unwrap()).unwrap()
}

fn run(l: &LoweredFunc, xs: &[f32]) -> Result<Vec<f32>, InterpError> {
    let mut args = vec![
        Arg::Tensor(TensorData::F32(xs.to_vec())),
        Arg::Tensor(TensorData::poisoned(DType::F32, N as usize)),
    ];
    interp::run(l, &mut args)?;
    match args.pop() {
        Some(Arg::Tensor(TensorData::F32(v))) => Ok(v),
        other => panic!("unexpected output {other:?}"),
    }
}

fn inputs() -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(11);
    (0..N).map(|_| r.random_range(-2.0f32..2.0)).collect()
}

#[test]
fn an_overlay_used_by_the_contract_runs_right() {
    let l = program(Mistake::None);
    let xs = inputs();
    let out = run(&l, &xs).unwrap();
    let n = N as usize;
    for (t, o) in out.iter().enumerate() {
        let j = (t + 2) % n;
        let want = xs[j] + xs[j] * xs[j];
        assert!((o - want).abs() < 1e-5, "Y[{t}] = {o}, want {want}");
    }
    // The kernel lists the overlay after its hosts; the IR prints what it lies over.
    let k = &l.kernels[0];
    let names: Vec<&str> = k.shared.iter().map(|b| b.name()).collect();
    assert_eq!(names, ["a", "b", "tile"]);
    let hosts: Vec<&str> = k.shared[2].hosts().iter().map(|b| b.name()).collect();
    assert_eq!(hosts, ["a", "b"]);
}

#[test]
fn the_printed_func_says_what_an_overlay_lies_over() {
    let mut t = Template::new("printed");
    let y = t.output("Y", &[N], DType::F32);
    t.kernel(1, N, |k| {
        let a = k.shared("a", &[N], DType::F32);
        let tile = k.shared_over("tile", &[N], DType::F32, &[&a]);
        k.store(&tile, [k.thread_x()], 1.0f32);
        k.barrier();
        k.store(&y, [k.thread_x()], tile.at(&[k.thread_x()]));
    });
    let text = t.finish().unwrap().to_string();
    assert!(
        text.contains("tile = T.alloc_buffer((32,), scope=\"shared\", over=[a])"),
        "{text}"
    );
}

#[test]
fn both_sides_in_one_barrier_interval_are_an_error() {
    let l = program(Mistake::NoBarrier);
    let e = run(&l, &inputs()).unwrap_err();
    assert!(matches!(e, InterpError::Overlay { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("`tile`") && text.contains("a barrier must come between"),
        "{text}"
    );
}

#[test]
fn reading_a_host_after_the_overlay_wrote_is_an_error() {
    let l = program(Mistake::ReadHostAfter);
    let e = run(&l, &inputs()).unwrap_err();
    assert!(matches!(e, InterpError::Overlay { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("`a`") && text.contains("`tile`") && text.contains("wrote them"),
        "{text}"
    );
}

#[test]
fn an_overlay_over_what_the_template_did_not_declare_is_a_typed_error() {
    let mut t = Template::new("stray");
    let x = t.input("X", &[N], DType::F32);
    let y = t.output("Y", &[N], DType::F32);
    t.kernel(1, N, |k| {
        let tile = k.shared_over("tile", &[N], DType::F32, &[&x]);
        k.store(&tile, [k.thread_x()], 1.0f32);
        k.barrier();
        k.store(&y, [k.thread_x()], tile.at(&[k.thread_x()]));
    });
    match t.finish() {
        Err(TemplateError::Invalid { what, .. }) => {
            assert!(what.contains("`tile`") && what.contains("[X]"), "{what}")
        }
        other => panic!("expected a template error, got {other:?}"),
    }
}

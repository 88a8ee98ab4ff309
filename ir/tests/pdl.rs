//! Programmatic dependent launch in the IR: prefetches placed before a kernel's wait for
//! the previous kernel, and the early trigger of the next. Neither changes a result; a
//! prefetch's element is checked like a load's (interpreter and prover), and fusion drops
//! the prefetches of what it inlines.

use rand::{Rng, SeedableRng};
use weft_ir::bounds::{AccessKind, prove};
use weft_ir::data::{Arg, TensorData};
use weft_ir::func::{GridControl, Stmt};
use weft_ir::fusion::fuse;
use weft_ir::interp::{self, InterpError, MemOp};
use weft_ir::kernel::{Access, KStmt, Kernel, LoweredFunc};
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::template::Template;

const N: i64 = 1024;

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random::<f32>() - 0.5).collect()
}

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

fn count(k: &Kernel, f: impl Fn(&KStmt) -> bool) -> usize {
    let mut n = 0;
    k.body.visit(&mut |s| n += f(s) as usize);
    n
}

/// `Y[i] = W[i] · X[i]` over 4 blocks of 256 threads. `pdl`: each thread first prefetches
/// `W[i + shift]` (a weight), waits for the previous kernel, computes, and lets the next
/// kernel launch; otherwise the plain kernel.
fn scale(pdl: bool, shift: i64) -> LoweredFunc {
    let mut t = Template::new("scale");
    let w = t.input("W", &[N], DType::F32);
    let x = t.input("X", &[N], DType::F32);
    let y = t.output("Y", &[N], DType::F32);
    t.kernel(4, 256, |k| {
        let i = k.let_("i", k.block_x() * 256 + k.thread_x());
        if pdl {
            k.prefetch(&w, [i.clone() + shift]);
            k.grid_wait();
        }
        k.store(&y, [i.clone()], w.at(std::slice::from_ref(&i)) * x.at(&[i]));
        if pdl {
            k.launch_dependents();
        }
    });
    lower(&t.finish().unwrap()).unwrap()
}

#[test]
fn a_prefetch_and_a_wait_change_no_result() {
    let (plain, pdl) = (scale(false, 0), scale(true, 0));
    let k = &pdl.kernels[0];
    // Carried through lowering at a flat index, the wait at the top level.
    assert_eq!(count(k, |s| matches!(s, KStmt::Prefetch { .. })), 1);
    assert_eq!(count(k, |s| matches!(s, KStmt::Grid(GridControl::Wait))), 1);
    assert_eq!(
        count(k, |s| matches!(
            s,
            KStmt::Grid(GridControl::LaunchDependents)
        )),
        1
    );
    assert!(k.waits_explicitly() && k.uses_prefetch());
    assert!(!plain.kernels[0].waits_explicitly() && !plain.kernels[0].uses_prefetch());
    let text = pdl.to_string();
    for line in [
        "T.prefetch(W[",
        "T.grid_wait()",
        "T.grid_launch_dependents()",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    // The prefetch comes before the wait in the printed kernel.
    assert!(
        text.find("T.prefetch(W[") < text.find("T.grid_wait()"),
        "{text}"
    );
    let (w, x) = (random(N as usize, 1), random(N as usize, 2));
    let inputs = [w, x];
    let want = run(&plain, &inputs, N as usize).unwrap();
    let got = run(&pdl, &inputs, N as usize).unwrap();
    assert_eq!(got, want);
}

/// A buffer the kernel only prefetches is still one of its parameters (read).
#[test]
fn a_prefetched_buffer_is_a_read_parameter() {
    let mut t = Template::new("hint_only");
    let w = t.input("W", &[N], DType::F32);
    let y = t.output("Y", &[N], DType::F32);
    t.kernel(4, 256, |k| {
        let i = k.let_("i", k.block_x() * 256 + k.thread_x());
        k.prefetch(&w, [i.clone()]);
        k.grid_wait();
        k.store(&y, [i], 1.0f32);
    });
    let func = t.finish().unwrap();
    assert!(func.body.buffers().contains(&w));
    let l = lower(&func).unwrap();
    let params: Vec<(String, Access)> = l.kernels[0]
        .buffer_params()
        .map(|(b, a)| (b.name().to_string(), a))
        .collect();
    assert!(
        params.contains(&("W".to_string(), Access::Read)),
        "{params:?}"
    );
    let out = run(&l, &[random(N as usize, 3)], N as usize).unwrap();
    assert!(out.iter().all(|&v| v == 1.0));
}

#[test]
fn an_out_of_bounds_prefetch_is_reported() {
    let l = scale(true, 1);
    let inputs = [random(N as usize, 1), random(N as usize, 2)];
    match run(&l, &inputs, N as usize).unwrap_err() {
        InterpError::OutOfBounds {
            buffer, op, index, ..
        } => assert_eq!((buffer.as_str(), op, index), ("W", MemOp::Read, N)),
        e => panic!("expected out of bounds, got {e}"),
    }
}

#[test]
fn the_prover_checks_a_prefetch_like_a_load() {
    let ok = prove(&scale(true, 0).kernels[0]);
    assert!(ok.is_proven(), "{}", ok.summary());
    assert!(
        ok.checks
            .iter()
            .any(|c| c.buffer == "W" && c.kind == AccessKind::Prefetch),
        "{}",
        ok.summary()
    );
    let past = prove(&scale(true, 1).kernels[0]);
    let unproven: Vec<_> = past.unproven().collect();
    assert!(
        unproven.len() == 1
            && unproven[0].buffer == "W"
            && unproven[0].kind == AccessKind::Prefetch,
        "{}",
        past.summary()
    );
}

/// A prefetch of `A`, which fusion inlines as `C · 2`, goes; the one of `W`, which stays
/// a parameter, stays (and its buffer is one of the fused function's parameters).
#[test]
fn fusion_drops_the_prefetches_of_what_it_inlines() {
    let c = te::placeholder("C", &[256], DType::F32);
    let w = te::placeholder("W", &[256], DType::F32);
    let a = te::compute("A", &[("i", 256)], |i| c.at(&[&i[0]]) * 2.0f32);
    let b = te::compute("B", &[("i", 256)], |i| a.at(&[&i[0]]) + w.at(&[&i[0]]));
    let mut t = Template::new("anchor");
    t.param(&a);
    t.param(&w);
    t.param(&b);
    t.kernel(1, 256, |k| {
        let i = k.thread_x();
        k.prefetch(&a, [i.clone()]);
        k.prefetch(&w, [i.clone()]);
        k.grid_wait();
        k.store(&b, [i.clone()], a.at(std::slice::from_ref(&i)) + w.at(&[i]));
    });
    let anchor = t.finish().unwrap();
    let fused = fuse(&anchor, &b).unwrap();
    assert_eq!(fused.prologues, ["A"]);
    let mut prefetched = Vec::new();
    fused.func.body.visit(&mut |s| {
        if let Stmt::Prefetch { buffer, .. } = s {
            prefetched.push(buffer.name().to_string());
        }
    });
    assert_eq!(prefetched, ["W"], "{}", fused.func);
    let params: Vec<&str> = fused.func.params.iter().map(|p| p.name()).collect();
    // The anchor's own inputs first, then what the prologue reads.
    assert_eq!(params, ["W", "C", "B"]);
    let (cs, ws) = (random(256, 4), random(256, 5));
    let l = lower(&fused.func).unwrap();
    let out = run(&l, &[ws.clone(), cs.clone()], 256).unwrap();
    for ((o, c), w) in out.iter().zip(&cs).zip(&ws) {
        assert_eq!(*o, c * 2.0 + w);
    }
}

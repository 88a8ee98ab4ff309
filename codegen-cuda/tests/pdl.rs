//! Programmatic dependent launch placed by a kernel: prefetches into L2 before its wait
//! for the previous kernel, the wait where the kernel put it, the early trigger of the
//! next kernel; the kernels that place a wait wrong are refused; HIP writes none of it.
//! NVRTC checks are skipped with a printed reason without libnvrtc, unless
//! `WEFT_REQUIRE` names `nvrtc`.

use weft_codegen_common::EmitError;
use weft_codegen_cuda::{CudaOptions, emit, emit_lowered, hip, nvrtc};
use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis};
use weft_ir::kernel::{GridControl, KStmt, Kernel, LoweredFunc};
use weft_testkit::handmade;

const WAIT: &str = "weft_grid_dependency();";

/// The kernel's body: what follows its signature.
fn body(source: &str) -> &str {
    source
        .split("__global__")
        .nth(1)
        .and_then(|k| k.split_once("{\n"))
        .map(|(_, b)| b)
        .unwrap_or_else(|| panic!("no kernel in\n{source}"))
}

/// `k` without its prefetches and grid instructions: what a kernel that places none
/// looks like.
fn without_pdl(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    k.body = k.body.without_grid(&|_| true).rewrite(&mut |s| match s {
        KStmt::Prefetch { .. } => KStmt::Seq(Vec::new()),
        other => other,
    });
    k
}

fn tid() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxX) * 256 + Expr::Builtin(ThreadAxis::ThreadIdxX)
}

#[test]
fn the_wait_follows_the_prefetches() {
    let k = handmade::prefetch_vecadd();
    let e = emit(&k, &CudaOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let src = &e.source;
    assert!(e.entry().waits_for_previous_grid);
    let b = body(src);
    // The thread indices first, then the prefetch, then the one wait.
    let first = b.lines().next().unwrap().trim();
    assert!(first.starts_with("int blockIdx_x = "), "{b}");
    assert_eq!(b.matches(WAIT).count(), 1, "{b}");
    let prefetch = b
        .find("weft_prefetch_l2(&B[")
        .unwrap_or_else(|| panic!("{b}"));
    let wait = b.find(WAIT).unwrap();
    let load = b.find("A[").unwrap_or_else(|| panic!("{b}"));
    assert!(prefetch < wait && wait < load, "{b}");
    assert!(b.find("weft_launch_dependents();") > Some(load), "{b}");
    // The helpers are declared once, before the kernel.
    let kernel_at = src.find("__global__").unwrap();
    for helper in ["void weft_prefetch_l2(", "void weft_launch_dependents("] {
        assert_eq!(src.matches(helper).count(), 1, "{src}");
        assert!(src.find(helper) < Some(kernel_at), "{src}");
    }
    nvrtc::check(src).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = nvrtc::probe() {
        weft_codegen_common::testing::skip("nvrtc", e.to_string()).unwrap();
        return;
    }
    let hopper = nvrtc::compile_ptx(src, "sm_90").unwrap();
    for instruction in [
        "griddepcontrol.wait",
        "griddepcontrol.launch_dependents",
        "prefetch.global.L2",
    ] {
        assert!(hopper.contains(instruction), "{instruction}:\n{hopper}");
    }
    // Before the wait in the PTX too.
    assert!(hopper.find("prefetch.global.L2") < hopper.find("griddepcontrol.wait"));
    let ampere = nvrtc::compile_ptx(src, "sm_80").unwrap();
    assert!(!ampere.contains("griddepcontrol"), "{ampere}");
    assert!(ampere.contains("prefetch.global.L2"), "{ampere}");
    let cubin = nvrtc::compile_cubin(src, "sm_90");
    assert!(cubin.is_ok(), "{cubin:?}");
}

/// A kernel that places nothing is written as before: the wait first, no helpers.
#[test]
fn a_kernel_without_a_placed_wait_waits_at_its_top() {
    let pdl = handmade::prefetch_vecadd();
    let func = LoweredFunc {
        name: "two".into(),
        params: vec![],
        temps: vec![],
        kernels: vec![without_pdl(&pdl), handmade::vecadd()],
    };
    let src = emit_lowered(&func, &CudaOptions::default()).unwrap().source;
    assert!(!src.contains("weft_prefetch_l2") && !src.contains("weft_launch_dependents"));
    for b in src.split("__global__").skip(1) {
        let first = b.split_once("{\n").unwrap().1.lines().next().unwrap();
        assert_eq!(first.trim(), WAIT, "{b}");
        assert_eq!(b.matches(WAIT).count(), 1, "{b}");
    }
    // In one unit with a kernel that places its wait, each keeps its own.
    let mixed = LoweredFunc {
        kernels: vec![pdl, handmade::vecadd()],
        ..func
    };
    let src = emit_lowered(&mixed, &CudaOptions::default())
        .unwrap()
        .source;
    let bodies: Vec<&str> = src.split("__global__").skip(1).collect();
    assert!(
        !bodies[0]
            .split_once("{\n")
            .unwrap()
            .1
            .starts_with(&format!("    {WAIT}"))
    );
    assert!(
        bodies[1]
            .split_once("{\n")
            .unwrap()
            .1
            .starts_with(&format!("    {WAIT}"))
    );
    nvrtc::check(&src).unwrap_or_else(|e| panic!("{e}"));
}

/// Only prefetches may come before the wait, and the wait stands once at the top level.
#[test]
fn a_misplaced_wait_is_refused() {
    fn shared() -> Buffer {
        Buffer::new("S", vec![256], DType::F32, Scope::Shared)
    }
    fn if_(cond: Expr, then: KStmt) -> KStmt {
        KStmt::If {
            cond,
            then: Box::new(then),
            otherwise: None,
        }
    }
    type Before = fn(&[Buffer; 3]) -> Vec<KStmt>;
    let cases: Vec<(Before, &str)> = vec![
        (
            |[_, _, c]| {
                vec![KStmt::Store {
                    buffer: c.clone(),
                    index: tid(),
                    value: Expr::from(0.0f32),
                    lanes: 1,
                }]
            },
            "a store to `C`",
        ),
        // A load in a condition, even around nothing but prefetches.
        (
            |[a, _, _]| {
                vec![if_(
                    a.load(vec![tid()]).gt(Expr::from(0.0f32)),
                    KStmt::Seq(Vec::new()),
                )]
            },
            "a load of `A`",
        ),
        (
            |[a, _, c]| {
                vec![KStmt::Prefetch {
                    buffer: c.clone(),
                    index: a.load(vec![tid()]).cast(DType::I32),
                    bytes: 0,
                }]
            },
            "a load of `A`",
        ),
        (|_| vec![KStmt::Barrier], "a barrier"),
        (|_| vec![KStmt::Fence], "a device-scope fence"),
        (|_| vec![KStmt::Grid(GridControl::Wait)], "2 times"),
        (
            |_| {
                vec![if_(
                    Expr::Builtin(ThreadAxis::ThreadIdxX).lt(Expr::int(1)),
                    KStmt::Grid(GridControl::Wait),
                )]
            },
            "2 times",
        ),
        (
            |_| {
                vec![KStmt::Prefetch {
                    buffer: shared(),
                    index: Expr::Builtin(ThreadAxis::ThreadIdxX),
                    bytes: 0,
                }]
            },
            "prefetch of `S`",
        ),
    ];
    for (before, what) in cases {
        let mut bad = handmade::prefetch_vecadd_with(before);
        // `S` of the case above, once declared: a shared array of the kernel.
        bad.body.visit(&mut |s| {
            if let KStmt::Prefetch { buffer, .. } = s
                && buffer.scope() == Scope::Shared
            {
                bad.shared.push(buffer.clone());
            }
        });
        let err = emit(&bad, &CudaOptions::default()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, EmitError::Invalid { .. }), "{text}");
        assert!(
            text.contains("`prefetch_vecadd`") && text.contains(what),
            "{what}: {text}"
        );
    }
    // A wait under an `if` or in a loop, even alone.
    let mut bad = handmade::prefetch_vecadd();
    bad.body = bad.body.without_grid(&|g| g == GridControl::Wait);
    let under_if = KStmt::seq(vec![
        if_(
            Expr::Builtin(ThreadAxis::ThreadIdxX).lt(Expr::int(1)),
            KStmt::Grid(GridControl::Wait),
        ),
        bad.body.clone(),
    ]);
    let in_loop = KStmt::seq(vec![
        KStmt::For {
            var: weft_ir::expr::Var::index("w"),
            extent: 2,
            unroll: false,
            body: Box::new(KStmt::Grid(GridControl::Wait)),
        },
        bad.body.clone(),
    ]);
    for (body, what) in [(under_if, "inside an `if`"), (in_loop, "inside a loop")] {
        bad.body = body;
        let text = emit(&bad, &CudaOptions::default()).unwrap_err().to_string();
        assert!(
            text.contains("`prefetch_vecadd`") && text.contains(what),
            "{text}"
        );
    }
}

/// A load of a buffer the kernel reads as a constant of the run (`Access::Constant`: no
/// kernel writes it) may come before the wait, into the thread's registers (a local
/// array); the same load of a buffer read as `Access::Read` is refused, and so is a store
/// of the constant's value anywhere but a register.
#[test]
fn loads_of_constants_into_registers_may_come_before_the_wait() {
    use weft_ir::kernel::{Access, KernelParam};
    let r = Buffer::new("r", vec![1], DType::F32, Scope::Local);
    let early = |target: Buffer| {
        let mut k = handmade::prefetch_vecadd_with(|[a, _, _]| {
            vec![KStmt::Store {
                buffer: target,
                index: Expr::int(0),
                value: a.load(vec![tid()]),
                lanes: 1,
            }]
        });
        k.locals.push(r.clone());
        k
    };
    let constant = |mut k: Kernel| {
        for p in &mut k.params {
            if let KernelParam::Buffer { buffer, access } = p
                && buffer.name() == "A"
            {
                *access = Access::Constant;
            }
        }
        k
    };
    let ok = emit(&constant(early(r.clone())), &CudaOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let b = body(&ok.source);
    let (load, wait) = (b.find("A[").unwrap(), b.find(WAIT).unwrap());
    assert!(load < wait, "{b}");
    let text = emit(&early(r.clone()), &CudaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("a load of `A`"), "{text}");
    let shared = Buffer::new("S", vec![256], DType::F32, Scope::Shared);
    let mut to_shared = constant(early(shared.clone()));
    to_shared.shared.push(shared);
    let text = emit(&to_shared, &CudaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("a store to `S`"), "{text}");
}

/// HIP has no programmatic dependent launch: the statements leave no trace.
#[test]
fn hip_writes_nothing_for_them() {
    let k = handmade::prefetch_vecadd();
    let with = hip::emit(&k, &hip::HipOptions::default()).unwrap().source;
    let without = hip::emit(&without_pdl(&k), &hip::HipOptions::default())
        .unwrap()
        .source;
    assert_eq!(with, without);
}

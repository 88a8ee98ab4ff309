//! Task mappings: algebraic properties (proptest), the paper's examples, `check` errors,
//! and `expand` run through the interpreter against `worker_tasks`.

use std::collections::HashMap;

use proptest::prelude::*;
use weft_ir::arith::Bounds;
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::interp;
use weft_ir::kernel::{Access, KMapping, KStmt, Kernel, KernelParam};
use weft_ir::lower::mapping::expand;
use weft_ir::mapping::{MappingError, TaskMapping, repeat, spatial};

// ---- strategies -----------------------------------------------------------------------

fn leaf(rank: usize) -> impl Strategy<Value = TaskMapping> {
    (any::<bool>(), prop::collection::vec(1i64..=3, rank))
        .prop_map(|(s, d)| if s { spatial(&d) } else { repeat(&d) })
}

fn spatial_leaf(rank: usize) -> impl Strategy<Value = TaskMapping> {
    prop::collection::vec(1i64..=3, rank).prop_map(|d| spatial(&d))
}

/// A composition of 1 to 4 leaves of one rank, bracketed at random.
fn tree(leaf: BoxedStrategy<TaskMapping>) -> impl Strategy<Value = TaskMapping> {
    leaf.prop_recursive(2, 4, 2, |inner| {
        (inner.clone(), inner).prop_map(|(a, b)| a * b)
    })
}

fn any_mapping() -> impl Strategy<Value = TaskMapping> {
    (1usize..=3).prop_flat_map(|r| tree(leaf(r).boxed()))
}

// ---- helpers --------------------------------------------------------------------------

fn flat(task: &[i64], shape: &[i64]) -> i64 {
    task.iter().zip(shape).fold(0, |a, (&t, &d)| a * d + t)
}

/// How many times each task of the domain is assigned, over all workers.
fn coverage(m: &TaskMapping) -> Vec<u32> {
    let shape = m.task_shape();
    let mut count = vec![0u32; shape.iter().product::<i64>() as usize];
    for w in 0..m.num_workers() {
        for t in m.worker_tasks(w) {
            assert!(
                t.iter().zip(&shape).all(|(&x, &d)| (0..d).contains(&x)),
                "{m}: {t:?}"
            );
            count[flat(&t, &shape) as usize] += 1;
        }
    }
    count
}

fn all_tasks(m: &TaskMapping) -> Vec<Vec<Vec<i64>>> {
    (0..=m.num_workers()).map(|w| m.worker_tasks(w)).collect()
}

/// A kernel of `threads` threads in which thread `threadIdx.x` is the worker of `m`:
/// for each of its tasks, `out[flat task] = worker * 1000 + order`, `order` counted in a
/// local.
fn mapping_kernel(m: &TaskMapping, threads: u32) -> (Kernel, Buffer) {
    let shape = m.task_shape();
    let out = Buffer::new(
        "out",
        vec![shape.iter().product()],
        DType::I32,
        Scope::Global,
    );
    let count = Buffer::new("count", vec![1], DType::I32, Scope::Local);
    let vars: Vec<Var> = (0..shape.len())
        .map(|j| Var::index(format!("t{j}")))
        .collect();
    let tx = Expr::Builtin(ThreadAxis::ThreadIdxX);
    let index = vars
        .iter()
        .zip(&shape)
        .map(|(v, &d)| (v.expr(), d))
        .reduce(|(a, _), (v, d)| (a * d + v, d))
        .map_or(Expr::int(0), |(e, _)| e);
    let body = KStmt::seq(vec![
        KStmt::Store {
            buffer: out.clone(),
            index,
            value: tx.clone() * 1000 + count.load(vec![Expr::int(0)]),
            lanes: 1,
        },
        KStmt::Store {
            buffer: count.clone(),
            index: Expr::int(0),
            value: count.load(vec![Expr::int(0)]) + 1,
            lanes: 1,
        },
    ]);
    let stmt = KStmt::seq(vec![
        KStmt::Store {
            buffer: count.clone(),
            index: Expr::int(0),
            value: Expr::int(0),
            lanes: 1,
        },
        KStmt::Mapping(Box::new(KMapping {
            mapping: m.clone(),
            worker: tx,
            task_vars: vars,
            body,
        })),
    ]);
    let k = Kernel {
        name: "mapped".into(),
        params: vec![KernelParam::Buffer {
            buffer: out.clone(),
            access: Access::Write,
        }],
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        shared: vec![],
        locals: vec![count],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: stmt,
    };
    (k, out)
}

/// The table `worker_tasks` predicts for [`mapping_kernel`].
fn expected_table(m: &TaskMapping) -> Vec<i32> {
    let shape = m.task_shape();
    let mut want = vec![0x7eadbeef; shape.iter().product::<i64>() as usize];
    for w in 0..m.num_workers() {
        for (o, t) in m.worker_tasks(w).iter().enumerate() {
            want[flat(t, &shape) as usize] = (w * 1000 + o as i64) as i32;
        }
    }
    want
}

fn run_expanded(k: &Kernel, out: &Buffer, bounds: &Bounds) -> Vec<i32> {
    let mut k = k.clone();
    k.body = expand(&k.body, bounds).unwrap();
    let mut bufs = HashMap::from([(
        out.id(),
        TensorData::poisoned(DType::I32, out.numel() as usize),
    )]);
    interp::run_kernel(&k, &mut bufs, &HashMap::new()).unwrap_or_else(|e| panic!("{e}\n{k}"));
    match bufs.remove(&out.id()) {
        Some(TensorData::I32(v)) => v,
        other => panic!("unexpected output {other:?}"),
    }
}

fn no_floor_ops(s: &KStmt) -> bool {
    let mut ok = true;
    s.visit_exprs(&mut |e| {
        e.visit(&mut |e| {
            ok &= !matches!(e, Expr::Binary(BinOp::FloorDiv | BinOp::FloorMod, ..));
        })
    });
    ok
}

// ---- properties -----------------------------------------------------------------------

proptest! {
    #[test]
    fn composition_is_associative(
        (a, b, c) in (1usize..=3).prop_flat_map(|r| (leaf(r), leaf(r), leaf(r)))
    ) {
        let left = (a.clone() * b.clone()) * c.clone();
        let right = a * (b * c);
        prop_assert!(left.check().is_ok());
        prop_assert_eq!(left.num_workers(), right.num_workers());
        prop_assert_eq!(left.task_shape(), right.task_shape());
        prop_assert_eq!(all_tasks(&left), all_tasks(&right));
    }

    #[test]
    fn spatial_compositions_assign_every_task_once(
        m in (1usize..=3).prop_flat_map(|r| tree(spatial_leaf(r).boxed()))
    ) {
        prop_assert!(coverage(&m).iter().all(|&c| c == 1), "{}", m);
        // Spatial only: one task per worker, as many workers as tasks.
        prop_assert!((0..m.num_workers()).all(|w| m.worker_tasks(w).len() == 1));
    }

    #[test]
    fn mixed_compositions_assign_every_task_once(m in any_mapping()) {
        prop_assert!(coverage(&m).iter().all(|&c| c == 1), "{}", m);
    }

    /// `expand` + the interpreter agree with `worker_tasks`, with the worker bound known
    /// (no guard) and with extra threads (guarded).
    #[test]
    fn expand_agrees_with_worker_tasks(m in any_mapping(), extra in 0u32..40, known in any::<bool>()) {
        let n = m.num_workers() as u32;
        prop_assume!(n <= 512);
        let threads = n + extra;
        let (k, out) = mapping_kernel(&m, threads);
        let mut bounds = Bounds::new();
        if known {
            bounds.set_axis(ThreadAxis::ThreadIdxX, threads as i64);
        }
        let expanded = expand(&k.body, &bounds).unwrap();
        prop_assert!(no_floor_ops(&expanded));
        let mut guarded = false;
        expanded.visit(&mut |s| guarded |= matches!(s, KStmt::If { .. }));
        prop_assert_eq!(guarded, !(known && extra == 0), "{}", m);
        prop_assert_eq!(run_expanded(&k, &out, &bounds), expected_table(&m), "{}", m);
    }
}

// ---- the paper's examples -------------------------------------------------------------

/// Figure 8: `repeat(4, 1) * spatial(16, 8)` loads a 64x8 tile with 128 threads, 4 rows
/// 16 apart each.
#[test]
fn cooperative_load_of_a_64x8_tile() {
    let m = repeat(&[4, 1]) * spatial(&[16, 8]);
    assert_eq!(m.to_string(), "repeat(4, 1) * spatial(16, 8)");
    assert_eq!((m.num_workers(), m.task_shape()), (128, vec![64, 8]));
    for w in 0..128 {
        let want: Vec<Vec<i64>> = (0..4).map(|r| vec![r * 16 + w / 8, w % 8]).collect();
        assert_eq!(m.worker_tasks(w), want, "worker {w}");
    }
    assert!(m.worker_tasks(128).is_empty() && m.worker_tasks(-1).is_empty());
    assert!(coverage(&m).iter().all(|&c| c == 1));

    let (k, out) = mapping_kernel(&m, 128);
    let mut bounds = Bounds::new();
    bounds.set_axis(ThreadAxis::ThreadIdxX, 128);
    let expanded = expand(&k.body, &bounds).unwrap();
    assert!(no_floor_ops(&expanded));
    let text = weft_ir::printer::print_kernel(&Kernel {
        body: expanded,
        ..k.clone()
    });
    // Repeat loops are unrolled: their tasks index per-thread arrays.
    assert!(text.contains("for t0_r0 in T.unroll(4):"), "{text}");
    assert!(
        // The printer spells integer `/` (C's, on non-negative operands) as `//`.
        text.contains("t0: T.int32 = t0_r0 * 16 + threadIdx_x // 8"),
        "{text}"
    );
    assert!(text.contains("t1: T.int32 = threadIdx_x % 8"), "{text}");
    assert_eq!(run_expanded(&k, &out, &bounds), expected_table(&m));
}

/// Section 5.1.2: the CUDA-core matmul mapping `spatial(4, 2) * repeat(2, 2) *
/// spatial(4, 8) * repeat(4, 4)`: 8 warps of 32 threads, a 128x128 tile, 64 elements
/// per thread.
#[test]
fn matmul_thread_mapping() {
    let m = spatial(&[4, 2]) * repeat(&[2, 2]) * spatial(&[4, 8]) * repeat(&[4, 4]);
    assert!(m.check().is_ok());
    assert_eq!((m.num_workers(), m.task_shape()), (256, vec![128, 128]));
    // Thread 37: warp 1 -> warp position (0, 1); lane 5 -> lane position (0, 5).
    let tasks = m.worker_tasks(37);
    assert_eq!(tasks.len(), 64);
    let mut want = Vec::new();
    for (r0, r1) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        for (i, j) in (0..4).flat_map(|i| (0..4).map(move |j| (i, j))) {
            // row: warp row 0 * 32 + repeat r0 * 16 + lane row 0 * 4 + i
            // col: warp col 1 * 64 + repeat r1 * 32 + lane col 5 * 4 + j
            want.push(vec![r0 * 16 + i, 64 + r1 * 32 + 20 + j]);
        }
    }
    assert_eq!(tasks, want);
    assert!(coverage(&m).iter().all(|&c| c == 1));
    let (k, out) = mapping_kernel(&m, 256);
    let mut bounds = Bounds::new();
    bounds.set_axis(ThreadAxis::ThreadIdxX, 256);
    assert_eq!(run_expanded(&k, &out, &bounds), expected_table(&m));
}

/// Figure 11's basic mappings.
#[test]
fn basic_mappings() {
    let s = spatial(&[2, 3]);
    let table: Vec<Vec<Vec<i64>>> = (0..6).map(|w| s.worker_tasks(w)).collect();
    assert_eq!(
        table,
        vec![
            vec![vec![0, 0]],
            vec![vec![0, 1]],
            vec![vec![0, 2]],
            vec![vec![1, 0]],
            vec![vec![1, 1]],
            vec![vec![1, 2]],
        ]
    );
    let r = repeat(&[2, 3]);
    assert_eq!(r.num_workers(), 1);
    assert_eq!(
        r.worker_tasks(0),
        vec![
            vec![0, 0],
            vec![0, 1],
            vec![0, 2],
            vec![1, 0],
            vec![1, 1],
            vec![1, 2],
        ]
    );
    assert!(r.worker_tasks(1).is_empty());
}

// ---- check ----------------------------------------------------------------------------

#[test]
fn check_errors() {
    let err = (spatial(&[4]) * repeat(&[2, 2])).check().unwrap_err();
    assert_eq!(
        err,
        MappingError::RankMismatch {
            mapping: "spatial(4) * repeat(2, 2)".into(),
            left: 1,
            right: 2,
        }
    );
    assert!(
        err.to_string().contains("spatial(4) * repeat(2, 2)"),
        "{err}"
    );

    let err = (spatial(&[4, 0]) * repeat(&[1, 1])).check().unwrap_err();
    assert!(
        matches!(&err, MappingError::NonPositiveExtent { dim: 1, extent: 0, mapping } if mapping == "spatial(4, 0) * repeat(1, 1)"),
        "{err}"
    );
    let err = repeat(&[-3]).check().unwrap_err();
    assert!(
        matches!(
            err,
            MappingError::NonPositiveExtent {
                dim: 0,
                extent: -3,
                ..
            }
        ),
        "{err}"
    );

    let err = spatial(&[65536, 65536]).check().unwrap_err();
    assert!(
        matches!(
            err,
            MappingError::Overflow {
                what: "worker count",
                ..
            }
        ),
        "{err}"
    );
    let err = (spatial(&[1024]) * repeat(&[1 << 22])).check().unwrap_err();
    assert!(
        matches!(
            err,
            MappingError::Overflow {
                what: "task count",
                ..
            }
        ),
        "{err}"
    );
    let err = repeat(&[i64::MAX, i64::MAX]).check().unwrap_err();
    assert!(matches!(err, MappingError::Overflow { .. }), "{err}");

    // expand reports check errors and task-variable counts.
    let stmt = |m: TaskMapping, vars: usize| {
        KStmt::Mapping(Box::new(KMapping {
            mapping: m,
            worker: Expr::Builtin(ThreadAxis::ThreadIdxX),
            task_vars: (0..vars).map(|j| Var::index(format!("t{j}"))).collect(),
            body: KStmt::Seq(vec![]),
        }))
    };
    let err = expand(&stmt(spatial(&[2]) * repeat(&[2, 2]), 1), &Bounds::new()).unwrap_err();
    assert!(matches!(err, MappingError::RankMismatch { .. }), "{err}");
    let err = expand(&stmt(spatial(&[2, 2]), 1), &Bounds::new()).unwrap_err();
    assert!(
        matches!(
            err,
            MappingError::TaskVarCount {
                rank: 2,
                vars: 1,
                ..
            }
        ),
        "{err}"
    );
}

// ---- expand ---------------------------------------------------------------------------

/// Fresh loop variables avoid every name in the statement, and nested mappings expand.
#[test]
fn nested_mappings_and_fresh_names() {
    // Outer: 2 y-workers over 4 rows (strided); inner: 4 x-workers over 8 columns
    // (blocked). An unrelated loop named like the first fresh name (`t_r0`) encloses it.
    let outer = repeat(&[2]) * spatial(&[2]);
    let inner = spatial(&[4]) * repeat(&[2]);
    let (t, u) = (Var::index("t"), Var::index("u"));
    let clash = Var::index("t_r0");
    let out = Buffer::new("out", vec![4 * 8], DType::I32, Scope::Global);
    let count = Buffer::new("count", vec![1], DType::I32, Scope::Local);
    let (tx, ty) = (
        Expr::Builtin(ThreadAxis::ThreadIdxX),
        Expr::Builtin(ThreadAxis::ThreadIdxY),
    );
    let c0 = || count.load(vec![Expr::int(0)]);
    let body = KStmt::seq(vec![
        KStmt::Store {
            buffer: out.clone(),
            index: t.expr() * 8 + u.expr(),
            value: (ty.clone() * 10 + tx.clone()) * 1000 + c0(),
            lanes: 1,
        },
        KStmt::Store {
            buffer: count.clone(),
            index: Expr::int(0),
            value: c0() + 1,
            lanes: 1,
        },
    ]);
    let inner_stmt = KStmt::Mapping(Box::new(KMapping {
        mapping: inner.clone(),
        worker: tx.clone(),
        task_vars: vec![u.clone()],
        body,
    }));
    let outer_stmt = KStmt::Mapping(Box::new(KMapping {
        mapping: outer.clone(),
        worker: ty.clone(),
        task_vars: vec![t.clone()],
        body: inner_stmt,
    }));
    let stmt = KStmt::seq(vec![
        KStmt::Store {
            buffer: count.clone(),
            index: Expr::int(0),
            value: Expr::int(0),
            lanes: 1,
        },
        KStmt::For {
            var: clash.clone(),
            extent: 1,
            unroll: false,
            body: Box::new(outer_stmt),
        },
    ]);
    let mut bounds = Bounds::new();
    bounds.set_axis(ThreadAxis::ThreadIdxX, 4);
    bounds.set_axis(ThreadAxis::ThreadIdxY, 2);
    let expanded = expand(&stmt, &bounds).unwrap();
    let mut names = Vec::new();
    expanded.visit(&mut |s| {
        if let KStmt::For { var, .. } = s {
            names.push(var.name().to_string());
        }
    });
    assert_eq!(names, ["t_r0", "t_r1", "u_r0"]);
    let mut no_mapping = true;
    expanded.visit(&mut |s| no_mapping &= !matches!(s, KStmt::Mapping(_)));
    assert!(no_mapping);

    let k = Kernel {
        name: "nested".into(),
        params: vec![KernelParam::Buffer {
            buffer: out.clone(),
            access: Access::Write,
        }],
        grid: [1, 1, 1],
        block: [4, 2, 1],
        shared: vec![],
        locals: vec![count],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: stmt,
    };
    let got = run_expanded(&k, &out, &bounds);
    let mut want = vec![0; 32];
    for y in 0..2 {
        for x in 0..4 {
            let mut order = 0;
            for ti in outer.worker_tasks(y) {
                for ui in inner.worker_tasks(x) {
                    want[(ti[0] * 8 + ui[0]) as usize] = ((y * 10 + x) * 1000 + order) as i32;
                    order += 1;
                }
            }
        }
    }
    assert_eq!(got, want);
}

/// A worker beyond the mapping's workers does nothing: the guard is emitted when the
/// bounds cannot prove it unnecessary, and only then.
#[test]
fn guard_only_when_needed() {
    let m = spatial(&[8]);
    let (k, out) = mapping_kernel(&m, 8);
    let mut bounds = Bounds::new();
    bounds.set_axis(ThreadAxis::ThreadIdxX, 8);
    let proven = expand(&k.body, &bounds).unwrap();
    let unknown = expand(&k.body, &Bounds::new()).unwrap();
    let count_ifs = |s: &KStmt| {
        let mut n = 0;
        s.visit(&mut |s| n += matches!(s, KStmt::If { .. }) as usize);
        n
    };
    assert_eq!((count_ifs(&proven), count_ifs(&unknown)), (0, 1));
    let (k12, out12) = mapping_kernel(&m, 12);
    let mut wide = Bounds::new();
    wide.set_axis(ThreadAxis::ThreadIdxX, 12);
    assert_eq!(count_ifs(&expand(&k12.body, &wide).unwrap()), 1);
    assert_eq!(run_expanded(&k12, &out12, &wide), expected_table(&m));
    assert_eq!(run_expanded(&k, &out, &bounds), expected_table(&m));
}

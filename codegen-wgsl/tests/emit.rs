//! The WGSL emitter on the hand-built kernels: snapshots, naga validation of every module,
//! unrolling, guarded-select hoisting, vec4 bindings, the uniform layout, limit errors and
//! unlowered-node errors.

use weft_codegen_common::{EmitError, TargetLimits};
use weft_codegen_common::{Emitted, Uniform};
use weft_codegen_wgsl::{WgslOptions, emit, validate};
use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam};
use weft_testkit::handmade;

fn snapshot(name: &str, source: &str) {
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(format!("{name}__wgsl"), source);
    });
}

/// WebGPU's default limits with `shader-f16`, so that the f16 case emits.
fn opts_f16() -> WgslOptions {
    WgslOptions {
        limits: TargetLimits {
            f16: true,
            ..TargetLimits::webgpu_default()
        },
    }
}

/// The kernel's module, validated by naga.
fn emit_valid(kernel: &Kernel) -> Emitted {
    let out = emit(kernel, &opts_f16()).unwrap_or_else(|e| panic!("{e}"));
    validate(&out.source).unwrap_or_else(|e| panic!("{e}\n--- source ---\n{}", out.source));
    out
}

fn emit_check_snapshot(name: &str) {
    let (_, kernel) = handmade::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("the case exists in handmade::all()");
    let out = emit_valid(&kernel);
    snapshot(name, &out.source);
}

macro_rules! handmade_cases {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                emit_check_snapshot(stringify!($name));
            }
        )*
        #[test]
        fn every_handmade_case_has_a_test() {
            let tested = [$(stringify!($name)),*];
            for (name, _) in handmade::all() {
                assert!(tested.contains(&name), "{name} has no test");
            }
        }
    };
}

handmade_cases!(
    handmade_vecadd,
    handmade_window_sum,
    handmade_matmul_local,
    handmade_matmul_shared,
    handmade_copy_lanes4,
    handmade_f16,
    handmade_scalar_params,
    handmade_select_guard,
    handmade_math,
    handmade_approx_math,
);

/// Every access of the 64-element accumulator has a literal index once loops unroll.
#[test]
fn unrolled_loops_index_local_arrays_by_constants() {
    for k in [handmade::matmul_local(), handmade::matmul_shared()] {
        let src = emit_valid(&k).source;
        let mut count = 0;
        for (at, _) in src.match_indices("C_local[") {
            let rest = &src[at + "C_local[".len()..];
            let idx = &rest[..rest.find(']').unwrap()];
            assert!(
                idx.parse::<u32>().is_ok(),
                "dynamic index `{idx}` in\n{src}"
            );
            count += 1;
        }
        // Zeroing, the update (read and write) and the write-back: 64 each.
        assert_eq!(count, 4 * 64, "{src}");
        assert!(src.contains("var C_local: array<f32, 64>;"));
        assert!(!src.contains("for (var i"), "{src}");
    }
}

/// WGSL's `select()` evaluates both operands, so a load inside one must be in bounds
/// whatever the guard says: its index is clamped (`A[select(0, i, guard)]`); a nested
/// guard becomes an `if`.
#[test]
fn guarded_loads_in_select_read_clamped_indices() {
    let src = emit_valid(&handmade::select_guard()).source;
    let mut clamped = 0;
    for line in src
        .lines()
        .filter(|l| l.contains("select(") && l.contains("A["))
    {
        assert!(
            line.contains("A[select(0, "),
            "an unclamped load in select(): {line}"
        );
        clamped += 1;
    }
    assert_eq!(clamped, 1, "{src}");
    assert!(src.contains("if ((i >= 2) & (i < 1002)) {"), "{src}");
    assert!(src.contains("select(2.0f, 1.0f, i < 512)"), "{src}");
}

/// `i < 1000 && (i >= 0 ? A[i] : 0) > 0`: the guarded select sits right of `&&`; hoisting
/// keeps the short circuit, so its condition is evaluated only where `i < 1000`.
#[test]
fn hoisting_keeps_short_circuits() {
    let a = Buffer::new("A", vec![1000], DType::F32, Scope::Global);
    let b = Buffer::new("B", vec![1024], DType::I32, Scope::Global);
    let i = Expr::Builtin(ThreadAxis::ThreadIdxX) + Expr::Builtin(ThreadAxis::BlockIdxX) * 256;
    let guarded = Expr::if_then_else(i.clone().ge(0), a.load(vec![i.clone()]), Expr::f32(0.0));
    let cond = i.clone().lt(1000).and(guarded.gt(Expr::f32(0.0)));
    let k = Kernel {
        name: "short_circuit".into(),
        params: vec![
            KernelParam::Buffer {
                buffer: a,
                access: Access::Read,
            },
            KernelParam::Buffer {
                buffer: b.clone(),
                access: Access::Write,
            },
        ],
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::Store {
            buffer: b,
            index: i,
            value: Expr::select(cond, Expr::int(1), Expr::int(0)),
            lanes: 1,
        },
    };
    let src = emit_valid(&k).source;
    let expected = "    var cond: bool = threadIdx_x + blockIdx_x * 256 < 1000;\n    if (cond) {\n        let guard: bool = threadIdx_x + blockIdx_x * 256 >= 0;\n        let sel: f32 = select(0.0f, A[select(0, threadIdx_x + blockIdx_x * 256, guard)], guard);";
    assert!(src.contains(expected), "{src}");
}

#[test]
fn bindings_uniform_and_vec4() {
    let copy = emit_valid(&handmade::copy_lanes4());
    assert!(copy.entry().bindings.iter().all(|b| b.vec4));
    assert!(
        copy.source
            .contains("var<storage, read> A: array<vec4<f32>>;")
    );
    assert!(copy.source.contains("var A_local: array<vec4<f32>, 1>;"));
    let mm = emit_valid(&handmade::matmul_shared());
    let flags: Vec<(bool, bool)> = mm
        .entry()
        .bindings
        .iter()
        .map(|b| (b.read_only, b.vec4))
        .collect();
    assert_eq!(flags, [(true, true), (true, true), (false, false)]);
    assert!(
        mm.source
            .contains("var<workgroup> A_shared: array<f32, 512>;")
    );
    assert!(mm.source.contains("workgroupBarrier();"));
    assert!(mm.source.contains("@compute @workgroup_size(8, 8, 1)"));
    let sp = emit_valid(&handmade::scalar_params());
    assert_eq!(
        sp.entry().uniform,
        Some(Uniform {
            binding: 1,
            size: 16,
            fields: vec![(1, 0), (2, 4), (3, 8), (4, 12)],
        })
    );
    assert!(sp.source.contains("let flag: bool = params.flag != 0u;"));
    assert_eq!(sp.entry().name, "scalar_params");
    let f16 = emit_valid(&handmade::f16_axpy());
    assert!(f16.source.starts_with("enable f16;\n"));
    assert!(f16.source.contains("let alpha: f16 = f16(params.alpha);"));
}

#[test]
fn every_limit_is_a_typed_error() {
    let opts = WgslOptions::default();
    let cases = handmade::over_limits(&opts.limits);
    let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "zero_extent",
            "threads_per_block",
            "block_dim",
            "grid_dim",
            "shared_memory",
            "f16",
            "buffer_size"
        ]
    );
    for (limit, kernel) in cases {
        match emit(&kernel, &opts) {
            Err(EmitError::Limit(e)) => assert_eq!(e.limit_name(), limit, "{e}"),
            other => panic!("{limit}: expected a limit error, got {other:?}"),
        }
    }
    // The adapter's own limits admit what WebGPU's defaults refuse.
    let adapter = WgslOptions {
        limits: TargetLimits {
            name: "vulkan: NVIDIA H200".into(),
            max_shared_bytes: 48 * 1024,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [65535; 3],
            f16: true,
            matrix_units: Vec::new(),
            max_registers: 255,
            register_cap: false,
            max_buffer_bytes: 2 << 30,
            multiprocessors: 132,
            hoists_unrolled_loads: false,
            uniform_barriers: true,
            fragment_elements: false,
            shared_overlays: false,
            subgroup: Some(weft_codegen_common::SubgroupSize::fixed(32)),
            device_fence: false,
            grid_dependency: false,
            usage_barriers: true,
        },
    };
    let mut big = handmade::vecadd();
    big.block = [1024, 1, 1];
    big.grid = [1, 1, 1];
    assert!(emit(&big, &adapter).is_ok());
    let err = emit(&big, &opts).unwrap_err().to_string();
    assert!(
        err.contains("1024 threads per block") && err.contains("webgpu"),
        "{err}"
    );
}

#[test]
fn every_unlowered_node_is_a_typed_error() {
    for (node, kernel) in handmade::unlowered_cases() {
        match emit(&kernel, &WgslOptions::default()) {
            Err(EmitError::Unlowered { node: got, .. }) => assert_eq!(got, node),
            other => panic!("{node}: expected Unlowered, got {other:?}"),
        }
    }
}

#[test]
fn bool_storage_buffers_hold_words() {
    let flags = Buffer::new("flags", vec![256], DType::Bool, Scope::Global);
    let k = Kernel {
        name: "bools".into(),
        params: vec![KernelParam::Buffer {
            buffer: flags.clone(),
            access: Access::Write,
        }],
        grid: [1, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::Store {
            buffer: flags,
            index: Expr::Builtin(ThreadAxis::ThreadIdxX),
            value: Expr::Bool(true),
            lanes: 1,
        },
    };
    let src = emit(&k, &WgslOptions::default()).unwrap().source;
    assert!(
        src.contains("var<storage, read_write> flags: array<u32>"),
        "{src}"
    );
    assert!(src.contains("select(0u, 1u, true)"), "{src}");
    weft_codegen_wgsl::validate(&src).unwrap();
}

/// A huge unrolled loop stays a loop; a condition an unrolled copy decides keeps only the
/// branch taken.
#[test]
fn unroll_budget_and_constant_conditions() {
    let a = Buffer::new("A", vec![4096], DType::F32, Scope::Global);
    let (big, small) = (Var::index("big"), Var::index("small"));
    let tx = Expr::Builtin(ThreadAxis::ThreadIdxX);
    let guarded = KStmt::If {
        cond: small.expr().lt(2),
        then: Box::new(KStmt::Store {
            buffer: a.clone(),
            index: tx.clone() * 4 + small.expr(),
            value: Expr::f32(1.0),
            lanes: 1,
        }),
        otherwise: Some(Box::new(KStmt::Store {
            buffer: a.clone(),
            index: tx.clone() * 4 + small.expr(),
            value: Expr::f32(2.0),
            lanes: 1,
        })),
    };
    let body = KStmt::seq(vec![
        KStmt::For {
            var: big.clone(),
            extent: 4096,
            unroll: true,
            body: Box::new(KStmt::Store {
                buffer: a.clone(),
                index: big.expr(),
                value: Expr::f32(0.0),
                lanes: 1,
            }),
        },
        KStmt::For {
            var: small,
            extent: 4,
            unroll: true,
            body: Box::new(guarded),
        },
    ]);
    let k = Kernel {
        name: "unroll_budget".into(),
        params: vec![KernelParam::Buffer {
            buffer: a,
            access: Access::Write,
        }],
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    };
    let src = emit_valid(&k).source;
    assert!(
        src.contains("// not unrolled: more than 1024 copies"),
        "{src}"
    );
    assert!(
        src.contains("for (var big: i32 = 0; big < 4096; big++) {"),
        "{src}"
    );
    assert!(
        src.contains("    A[threadIdx_x * 4 + 1] = 1.0f;\n    A[threadIdx_x * 4 + 2] = 2.0f;"),
        "{src}"
    );
    assert!(!src.contains("if ("), "{src}");
}

/// WGSL orders nothing between workgroups of a dispatch: a kernel that fences and counts
/// is refused by name, never emitted without its ordering.
#[test]
fn a_device_fence_is_refused() {
    let err = emit(&handmade::last_block_sums(2, true), &WgslOptions::default()).unwrap_err();
    assert!(
        matches!(&err, EmitError::Unsupported { kernel, what, .. }
            if kernel == "last_block_sums" && what.contains("device-scope fence")),
        "{err}"
    );
}

/// `k` without its prefetches and grid instructions.
fn without_pdl(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    k.body = k.body.without_grid(&|_| true).rewrite(&mut |s| match s {
        KStmt::Prefetch { .. } => KStmt::Seq(Vec::new()),
        other => other,
    });
    k
}

/// WebGPU has no prefetch and orders its dispatches itself: a kernel that prefetches,
/// waits for the previous kernel where it says and triggers the next is written as the
/// same kernel without them, and naga takes it.
#[test]
fn prefetches_and_grid_controls_write_nothing() {
    let k = handmade::prefetch_vecadd();
    let with = emit_valid(&k);
    let without = emit_valid(&without_pdl(&k));
    assert_eq!(with.source, without.source);
    // A wait placed wrong is refused here too (the contract every emitter checks).
    let bad = handmade::prefetch_vecadd_with(|_| vec![KStmt::Barrier]);
    let err = emit(&bad, &opts_f16()).unwrap_err();
    assert!(matches!(err, EmitError::Invalid { .. }), "{err}");
}

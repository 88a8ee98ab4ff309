//! The MSL emitter on the hand-built kernels: snapshots, the host-compiler syntax check
//! against the shim (skipped with a printed reason when no C++ compiler exists, unless
//! `WEFT_REQUIRE` names `msl`), limit errors and unlowered-node errors.

use weft_codegen_common::{EmitError, TargetLimits};
use weft_codegen_metal::{MetalOptions, SyntaxCheck, emit, emit_lowered, syntax_check};
use weft_ir::kernel::LoweredFunc;
use weft_testkit::handmade;

fn snapshot(name: &str, source: &str) {
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(format!("{name}__msl"), source);
    });
}

fn emit_check_snapshot(name: &str) {
    let (_, kernel) = handmade::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("the case exists in handmade::all()");
    let source = emit(&kernel, &MetalOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .source;
    snapshot(name, &source);
    syntax_check(&source).unwrap_or_else(|e| panic!("{e}"));
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

#[test]
fn msl_specific_spellings() {
    let src = emit(&handmade::matmul_shared(), &MetalOptions::default())
        .unwrap()
        .source;
    assert!(src.starts_with("#include <metal_stdlib>\nusing namespace metal;\n"));
    assert!(src.contains("kernel void matmul_shared(\n    device const float* A [[buffer(0)]],"));
    assert!(src.contains("uint3 blockIdx [[threadgroup_position_in_grid]]"));
    assert!(src.contains("uint3 threadIdx [[thread_position_in_threadgroup]]"));
    assert!(src.contains("alignas(16) threadgroup float A_shared[512];"));
    assert!(src.contains("threadgroup_barrier(mem_flags::mem_threadgroup);"));
    assert!(src.contains("*(threadgroup float4*)(A_shared + "));
    assert!(src.contains("*(device const float4*)(A + "));
    let sp = emit(&handmade::scalar_params(), &MetalOptions::default())
        .unwrap()
        .source;
    assert!(sp.contains("constant int& n [[buffer(1)]],"), "{sp}");
    assert!(sp.contains("constant bool& flag [[buffer(4)]],"), "{sp}");
    let f16 = emit(&handmade::f16_axpy(), &MetalOptions::default())
        .unwrap()
        .source;
    assert!(f16.contains("device half* Y [[buffer(1)]]"), "{f16}");
    assert!(f16.contains("exp(X[i])"), "{f16}");
}

#[test]
fn the_check_rejects_what_the_shim_does_not_declare() {
    let bad = "#include <metal_stdlib>\nusing namespace metal;\nkernel void f(device float* a [[buffer(0)]]) { a[0] = undefined_fn(1.0f); }\n";
    match syntax_check(bad) {
        Ok(SyntaxCheck::Skipped(_)) => {}
        Ok(SyntaxCheck::Passed) => panic!("undeclared function passed the check"),
        Err(e) => assert!(e.contains("undefined_fn"), "{e}"),
    }
    // An ambiguous overload (half with float) is refused, as Metal refuses it.
    let ambiguous = "#include <metal_stdlib>\nusing namespace metal;\nkernel void f(device half* a [[buffer(0)]]) { a[0] = fmin(a[1], 1.0f); }\n";
    assert!(!matches!(syntax_check(ambiguous), Ok(SyntaxCheck::Passed)));
}

#[test]
fn every_limit_is_a_typed_error() {
    let opts = MetalOptions {
        limits: TargetLimits {
            f16: false,
            ..TargetLimits::metal()
        },
    };
    let cases = handmade::over_limits(&opts.limits);
    let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
    // Metal's per-axis block limit equals its thread limit, and its grid limit is u32's:
    // neither can be exceeded alone.
    assert_eq!(
        names,
        [
            "zero_extent",
            "threads_per_block",
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
    let mut tall = handmade::vecadd();
    tall.block = [1, 1, 8];
    let tight = MetalOptions {
        limits: TargetLimits {
            max_block_dim: [1024, 1024, 4],
            ..TargetLimits::metal()
        },
    };
    let err = emit(&tall, &tight).unwrap_err().to_string();
    assert!(err.contains("threadIdx.z extent 8"), "{err}");
}

#[test]
fn every_unlowered_node_is_a_typed_error() {
    for (node, kernel) in handmade::unlowered_cases() {
        match emit(&kernel, &MetalOptions::default()) {
            Err(EmitError::Unlowered {
                node: got, detail, ..
            }) => {
                assert_eq!(got, node, "{detail}");
            }
            other => panic!("{node}: expected Unlowered, got {other:?}"),
        }
    }
}

#[test]
fn lowered_function_is_one_library() {
    let func = LoweredFunc {
        name: "two".into(),
        params: vec![],
        temps: vec![],
        kernels: vec![handmade::vecadd(), handmade::window_sum()],
    };
    let src = emit_lowered(&func, &MetalOptions::default())
        .unwrap()
        .source;
    assert_eq!(src.matches("kernel void").count(), 2);
    assert_eq!(src.matches("#include <metal_stdlib>").count(), 1);
    syntax_check(&src).unwrap();
}

/// MSL before 3.2 has no device-scope fence weft may rely on: refused by name.
#[test]
fn a_device_fence_is_refused() {
    let err = emit(
        &handmade::last_block_sums(2, true),
        &MetalOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, EmitError::Unsupported { kernel, what, .. }
            if kernel == "last_block_sums" && what.contains("device-scope fence")),
        "{err}"
    );
}

/// Metal has no prefetch and orders its dispatches itself: a kernel that prefetches,
/// waits for the previous kernel where it says and triggers the next is written as the
/// same kernel without them.
#[test]
fn prefetches_and_grid_controls_write_nothing() {
    use weft_ir::kernel::KStmt;
    let k = handmade::prefetch_vecadd();
    let mut without = k.clone();
    without.body = k.body.without_grid(&|_| true).rewrite(&mut |s| match s {
        KStmt::Prefetch { .. } => KStmt::Seq(Vec::new()),
        other => other,
    });
    let with = emit(&k, &MetalOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let plain = emit(&without, &MetalOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(with.source, plain.source);
    syntax_check(&with.source).unwrap_or_else(|e| panic!("{e}"));
}

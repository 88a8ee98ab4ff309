//! The CUDA emitter on the hand-built kernels: snapshots, NVRTC compile checks (skipped
//! with a printed reason when libnvrtc is absent, unless `WEFT_REQUIRE` names `nvrtc`),
//! limit errors and unlowered-node errors.

use weft_codegen_common::{EmitError, TargetLimits};
use weft_codegen_cuda::{CudaOptions, emit, emit_lowered, nvrtc};
use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam, LoweredFunc};
use weft_testkit::handmade;

fn snapshot(name: &str, source: &str) {
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(format!("{name}__cuda"), source);
    });
}

fn emit_check_snapshot(name: &str) {
    let (_, kernel) = handmade::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("the case exists in handmade::all()");
    let source = emit(&kernel, &CudaOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .source;
    snapshot(name, &source);
    nvrtc::check(&source).unwrap_or_else(|e| panic!("{e}"));
}

macro_rules! handmade_cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            emit_check_snapshot(stringify!($name));
        }
    )*};
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
fn every_handmade_case_has_a_test() {
    let tested = [
        "handmade_vecadd",
        "handmade_window_sum",
        "handmade_matmul_local",
        "handmade_matmul_shared",
        "handmade_copy_lanes4",
        "handmade_f16",
        "handmade_scalar_params",
        "handmade_select_guard",
        "handmade_math",
        "handmade_approx_math",
    ];
    for (name, _) in handmade::all() {
        assert!(tested.contains(&name), "{name} has no test");
    }
}

#[test]
fn cuda_specific_spellings() {
    let src = emit(&handmade::matmul_shared(), &CudaOptions::default())
        .unwrap()
        .source;
    assert!(src.contains("extern \"C\" __global__ void __launch_bounds__(64) matmul_shared("));
    assert!(src.contains("const float* __restrict__ A"));
    assert!(src.contains("float* __restrict__ C"));
    assert!(src.contains("__shared__ __align__(16) float A_shared[512];"));
    assert!(src.contains("float C_local[64];"));
    assert!(src.contains("__syncthreads();"));
    assert!(src.contains("#pragma unroll"));
    assert!(src.contains("*(float4*)(A_shared + "));
    assert!(src.contains("int threadIdx_x = (int)threadIdx.x;"));
    let f16 = emit(&handmade::f16_axpy(), &CudaOptions::default())
        .unwrap()
        .source;
    assert!(f16.contains("*(half2*)(Z + i * 2) = *(const half2*)(X + i * 2);"));
    let select = emit(&handmade::select_guard(), &CudaOptions::default())
        .unwrap()
        .source;
    assert!(
        select.contains("i >= 2 && i < 1002 ? A[i - 2] :"),
        "{select}"
    );
}

#[test]
fn every_limit_is_a_typed_error() {
    let no_f16 = TargetLimits {
        f16: false,
        ..TargetLimits::cuda()
    };
    let opts = CudaOptions { limits: no_f16 };
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
            "f16"
        ]
    );
    for (limit, kernel) in cases {
        match emit(&kernel, &opts) {
            Err(EmitError::Limit(e)) => {
                assert_eq!(e.limit_name(), limit, "{e}");
                assert!(e.to_string().contains("vecadd") || limit == "f16", "{e}");
            }
            other => panic!("{limit}: expected a limit error, got {other:?}"),
        }
    }
}

#[test]
fn shared_memory_error_names_the_allocation() {
    let cases = handmade::over_limits(&TargetLimits::cuda());
    let (_, kernel) = cases.iter().find(|c| c.0 == "shared_memory").unwrap();
    let err = emit(kernel, &CudaOptions::default())
        .unwrap_err()
        .to_string();
    // 99 KiB: what every sm_80+ device can opt in to.
    assert!(err.contains("`big_shared`: 101380 B"), "{err}");
    assert!(err.contains("101376"), "{err}");
}

#[test]
fn every_unlowered_node_is_a_typed_error() {
    for (node, kernel) in handmade::unlowered_cases() {
        match emit(&kernel, &CudaOptions::default()) {
            Err(EmitError::Unlowered { node: got, .. }) => assert_eq!(got, node),
            other => panic!("{node}: expected Unlowered, got {other:?}"),
        }
    }
}

#[test]
fn vector_store_must_copy_a_vector_load() {
    let mut k = handmade::copy_lanes4();
    if let KStmt::Seq(items) = &mut k.body
        && let KStmt::Store { value, .. } = &mut items[0]
    {
        *value = Expr::f32(1.0);
    }
    assert!(matches!(
        emit(&k, &CudaOptions::default()),
        Err(EmitError::Invalid { .. })
    ));
}

/// Same-named variables in nested scopes, a name that is a C++ keyword, and a buffer the
/// body uses that the kernel does not declare.
#[test]
fn names_are_unique_sanitised_and_declared() {
    let a = Buffer::new("float", vec![64], DType::F32, Scope::Global);
    let (outer, inner) = (Var::index("i"), Var::index("i"));
    let tx = Expr::Builtin(ThreadAxis::ThreadIdxX);
    let body = KStmt::For {
        var: outer.clone(),
        extent: 2,
        unroll: false,
        body: Box::new(KStmt::For {
            var: inner.clone(),
            extent: 4,
            unroll: false,
            body: Box::new(KStmt::Store {
                buffer: a.clone(),
                index: outer.expr() * 32 + inner.expr() * 8 + tx.clone(),
                value: Expr::f32(1.0),
                lanes: 1,
            }),
        }),
    };
    let mut k = Kernel {
        name: "a.b".into(),
        params: vec![KernelParam::Buffer {
            buffer: a.clone(),
            access: Access::Write,
        }],
        grid: [1, 1, 1],
        block: [8, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    };
    let emitted = emit(&k, &CudaOptions::default()).unwrap();
    let src = emitted.source.clone();
    assert!(src.contains("a_b(float* __restrict__ float_)"), "{src}");
    assert!(src.contains("for (int i_1 = 0; i_1 < 4; ++i_1)"), "{src}");
    assert!(
        src.contains("float_[i * 32 + i_1 * 8 + threadIdx_x] = 1.0f;"),
        "{src}"
    );
    assert_eq!(emitted.entry().name, "a_b");
    nvrtc::check(&src).unwrap();
    k.params.clear();
    assert!(matches!(
        emit(&k, &CudaOptions::default()),
        Err(EmitError::Invalid { .. })
    ));
}

#[test]
fn lowered_function_is_one_unit() {
    let func = LoweredFunc {
        name: "two".into(),
        params: vec![],
        temps: vec![],
        kernels: vec![handmade::vecadd(), handmade::f16_axpy()],
    };
    let src = emit_lowered(&func, &CudaOptions::default()).unwrap().source;
    assert_eq!(src.matches("__global__").count(), 2);
    assert_eq!(src.matches("struct __align__(2) half").count(), 1);
    nvrtc::check(&src).unwrap();
    let dup = LoweredFunc {
        kernels: vec![handmade::vecadd(), handmade::vecadd()],
        ..func
    };
    assert!(matches!(
        emit_lowered(&dup, &CudaOptions::default()),
        Err(EmitError::Invalid { .. })
    ));
}

/// Every kernel of a unit starts by waiting for the kernel before it (programmatic
/// dependent launch: the runtime may launch it before that one has finished), says so in
/// its entry point, and the wait compiles to Hopper's `griddepcontrol.wait` and to nothing for
/// older GPUs. A hand-written source makes no such promise.
#[test]
fn every_kernel_waits_for_the_one_before_it() {
    let func = LoweredFunc {
        name: "two".into(),
        params: vec![],
        temps: vec![],
        kernels: vec![handmade::vecadd(), handmade::f16_axpy()],
    };
    let emitted = emit_lowered(&func, &CudaOptions::default()).unwrap();
    assert!(emitted.kernels.iter().all(|e| e.waits_for_previous_grid));
    let bodies: Vec<&str> = emitted.source.split("__global__").skip(1).collect();
    assert_eq!(bodies.len(), 2);
    for body in bodies {
        // The first statement of the body, before any index is read or memory touched.
        let first = body.split_once("{\n").unwrap().1.lines().next().unwrap();
        assert_eq!(first.trim(), "weft_grid_dependency();", "{body}");
    }
    let one = emit(&handmade::vecadd(), &CudaOptions::default()).unwrap();
    assert!(one.entry().waits_for_previous_grid);
    let by_hand = weft_codegen_common::Emitted::handwritten(
        &handmade::vecadd(),
        weft_codegen_common::Language::Cuda,
        one.source.clone(),
        weft_codegen_common::EntryPoint::new(&handmade::vecadd(), "vecadd".into()),
        &TargetLimits::cuda(),
    )
    .unwrap();
    assert!(!by_hand.entry().waits_for_previous_grid);
    if let Err(e) = nvrtc::probe() {
        weft_codegen_common::testing::skip("nvrtc", e.to_string()).unwrap();
        return;
    }
    let hopper = nvrtc::compile_ptx(&emitted.source, "sm_90").unwrap();
    assert!(hopper.contains("griddepcontrol.wait"), "{hopper}");
    // The dependents launch when this kernel's blocks exit, never earlier (see the
    // prelude's comment).
    assert!(!hopper.contains("griddepcontrol.launch_dependents"));
    let ampere = nvrtc::compile_ptx(&emitted.source, "sm_80").unwrap();
    assert!(!ampere.contains("griddepcontrol"));
}

#[test]
fn nvrtc_reports_compile_errors() {
    if nvrtc::probe().is_err() {
        eprintln!("skipped: libnvrtc absent");
        return;
    }
    let err = nvrtc::compile_ptx(
        "extern \"C\" __global__ void f() { undefined_x = 1; }",
        "sm_80",
    )
    .unwrap_err();
    assert!(err.to_string().contains("undefined_x"), "{err}");
    assert!(matches!(
        nvrtc::compile_ptx("a\0b", "sm_80"),
        Err(nvrtc::NvrtcError::NulByte(1))
    ));
}

/// A CUBIN for a real architecture (what the CUDA device loads, with no JIT step), and
/// the compile log on an error.
#[test]
fn nvrtc_compiles_cubins_for_real_architectures() {
    if let Err(e) = nvrtc::probe() {
        weft_codegen_common::testing::skip("nvrtc", e.to_string()).unwrap();
        return;
    }
    let cubin = nvrtc::compile_cubin(
        "extern \"C\" __global__ void f(float* x) { x[threadIdx.x] *= 2.0f; }",
        "sm_90",
    )
    .unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    let err = nvrtc::compile_cubin("extern \"C\" __global__ void f() { oops = 1; }", "sm_90")
        .unwrap_err();
    assert!(err.to_string().contains("oops"), "{err}");
}

/// A kernel whose shared arrays are `a` (32 KiB), `b` (16 KiB) and `tile` (`tile_floats`
/// floats) laid over `hosts` (names of `a`, `b`, `c`; `c` is 4 KiB and comes between
/// `a` and `b`).
fn overlaid(tile_floats: i64, hosts: &[&str]) -> weft_ir::kernel::Kernel {
    use weft_ir::te::TensorExt;
    use weft_ir::template::Template;
    let mut t = Template::new("overlaid");
    let y = t.output("Y", &[256], DType::F32);
    t.kernel(1, 256, |k| {
        let tx = k.thread_x();
        let a = k.shared("a", &[8192], DType::F32);
        let c = k.shared("c", &[1024], DType::F32);
        let b = k.shared("b", &[4096], DType::F32);
        for s in [&a, &c, &b] {
            k.store(s, [tx.clone()], tx.clone().cast(DType::F32));
        }
        k.barrier();
        let sum = k.let_("sum", {
            let at = std::slice::from_ref(&tx);
            a.at(at) + b.at(at) + c.at(at)
        });
        k.barrier();
        let over: Vec<&Buffer> = hosts
            .iter()
            .map(|h| match *h {
                "a" => &a,
                "b" => &b,
                _ => &c,
            })
            .collect();
        let tile = k.shared_over("tile", &[tile_floats], DType::F32, &over);
        k.store(&tile, [tx.clone()], sum);
        k.barrier();
        k.store(&y, [tx.clone()], tile.at(&[tx]));
    });
    weft_ir::lower::lower(&t.finish().unwrap())
        .unwrap()
        .kernels
        .remove(0)
}

/// An overlay starts where its hosts do when they lie one after another and their span
/// holds it; else it gets bytes of its own. Either way the launch passes what the layout
/// needs, and the source compiles.
#[test]
fn an_overlay_shares_its_hosts_bytes_where_it_fits() {
    let offsets = |k: &Kernel| {
        let (at, bytes) = weft_codegen_common::cfamily::shared_offsets(k);
        (at, bytes)
    };
    // Over `a` and `c` (32 + 4 KiB, adjacent): 36 KiB fit.
    let k = overlaid(9216, &["a", "c"]);
    assert_eq!(offsets(&k), (vec![0, 32768, 36864, 0], 53248));
    let e = emit(&k, &CudaOptions::default()).unwrap();
    assert!(
        e.source.contains("float* tile = (float*)(weft_smem + 0);"),
        "{}",
        e.source
    );
    assert_eq!(e.kernels[0].dynamic_shared_bytes, 53248);
    nvrtc::check(&e.source).unwrap_or_else(|e| panic!("{e}"));
    // One float more than the span: bytes of its own, after the others.
    let k = overlaid(9217, &["a", "c"]);
    assert_eq!(offsets(&k), (vec![0, 32768, 36864, 53248], 53248 + 36868));
    // `a` and `b` are not adjacent (`c` lies between): bytes of its own.
    let k = overlaid(1024, &["a", "b"]);
    assert_eq!(offsets(&k).0[3], 53248);
}

/// The last-block-combines kernel: each thread fences its part before the block counts
/// itself in (`__threadfence()` before the `atomicAdd`, and again before the last block
/// reads the parts), the old count goes to shared memory, and NVRTC compiles it.
#[test]
fn last_block_sums_fences_then_counts() {
    let src = emit(&handmade::last_block_sums(3, true), &CudaOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .source;
    snapshot("handmade_last_block_sums", &src);
    let at = |needle: &str| {
        src.find(needle)
            .unwrap_or_else(|| panic!("no `{needle}` in\n{src}"))
    };
    let fence = at("__threadfence();");
    let count = at("flag[0] = atomicAdd((counter + ");
    assert!(fence < count, "the fence comes after the count:\n{src}");
    assert_eq!(src.matches("__threadfence();").count(), 2, "{src}");
    assert!(src.contains("int* __restrict__ counter"), "{src}");
    nvrtc::check(&src).unwrap_or_else(|e| panic!("{e}"));
    // The planted bug: without the fence, the count is not preceded by one.
    let bare = emit(
        &handmade::last_block_sums(3, false),
        &CudaOptions::default(),
    )
    .unwrap()
    .source;
    let count = bare.find("atomicAdd(").unwrap();
    assert!(!bare[..count].contains("__threadfence()"), "{bare}");
}

//! Every workload × schedule × backend: the emitted source is snapshotted
//! (`snapshots/<workload>__<schedule>__<backend>.snap`, beside the IR snapshots) and
//! checked offline — WGSL validated by naga, CUDA compiled to PTX by NVRTC for sm_80 and
//! sm_90, MSL through the host C++ compiler against the shim header. A missing NVRTC or
//! C++ compiler skips its check with a printed reason unless `WEFT_REQUIRE` names it.

mod common;

use weft_codegen_common::TargetLimits;
use weft_codegen_cuda::CudaOptions;
use weft_codegen_metal::MetalOptions;
use weft_codegen_wgsl::WgslOptions;
use weft_ops::{OPS, Workload};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

/// WGSL is emitted for a real adapter's limits, as the runtime does.
fn wgsl_options() -> WgslOptions {
    WgslOptions {
        limits: common::nvidia_vulkan_limits(),
    }
}

#[test]
fn every_workload_schedule_and_backend() {
    let mut failures = Vec::new();
    for op in OPS {
        let w = Workload::default_for(op.name).unwrap();
        for schedule in op.schedules {
            let lowered = w.lower(schedule).unwrap();
            // The fp16 templates' defaults differ per backend with its matrix units:
            // m16n16k16 mma.sync pairs, 16×16 cooperative matrices, 8×8 simdgroup matrices.
            let for_backend = |r: TargetLimits| match w.template(schedule) {
                Some(t) if w.uses_f16() => w.lower_with(schedule, Some(&(t.default)(&r))).unwrap(),
                _ => lowered.clone(),
            };
            // A Vulkan adapter's cooperative matrices are opaque (as the runtime's limits
            // say): no element-wise fragment operations.
            let vulkan = TargetLimits {
                name: "vulkan".into(),
                fragment_elements: false,
                shared_overlays: false,
                device_fence: false,
                ..TargetLimits::cuda()
            };
            let name = |backend: &str| format!("{}__{}__{}", op.name, schedule, backend);
            let cuda = weft_codegen_cuda::emit_lowered(&lowered, &CudaOptions::default())
                .unwrap()
                .source;
            let msl = weft_codegen_metal::emit_lowered(
                &for_backend(TargetLimits::metal()),
                &MetalOptions::default(),
            )
            .unwrap()
            .source;
            let wgsl: Vec<String> = for_backend(vulkan)
                .kernels
                .iter()
                .map(|k| weft_codegen_wgsl::emit(k, &wgsl_options()).unwrap().source)
                .collect();
            settings().bind(|| {
                insta::assert_snapshot!(name("cuda"), cuda);
                insta::assert_snapshot!(name("wgsl"), wgsl.join("\n"));
                insta::assert_snapshot!(name("msl"), msl);
            });
            for src in &wgsl {
                if let Err(e) = weft_codegen_wgsl::validate(src) {
                    failures.push(format!("{} wgsl: {e}", name("wgsl")));
                }
            }
            if let Err(e) = weft_codegen_cuda::nvrtc::check(&cuda) {
                failures.push(format!("{} nvrtc: {e}", name("cuda")));
            }
            if let Err(e) = weft_codegen_metal::syntax_check(&msl) {
                failures.push(format!("{} msl: {e}", name("msl")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The seed's `get_source()` for matmul shared-blocking: shared tiles, a cooperative
/// vectorized fetch, barriers, 8×8 register accumulators — in CUDA and in Metal.
#[test]
fn matmul_shared_blocking_reads_like_the_seed() {
    let w = Workload::default_for("matmul").unwrap();
    let l = w.lower("shared-blocking").unwrap();
    let cuda = weft_codegen_cuda::emit_lowered(&l, &CudaOptions::default())
        .unwrap()
        .source;
    for needle in [
        "__shared__",
        "float A_shared[512]",
        "float B_shared[512]",
        "float C_local[64]",
        "*(float4*)(A_shared",
        "__syncthreads();",
        "__launch_bounds__(64)",
    ] {
        assert!(cuda.contains(needle), "CUDA lacks `{needle}`:\n{cuda}");
    }
    let msl = weft_codegen_metal::emit_lowered(&l, &MetalOptions::default())
        .unwrap()
        .source;
    for needle in [
        "threadgroup float A_shared[512]",
        "threadgroup_barrier(mem_flags::mem_threadgroup)",
        "float C_local[64]",
        "float4",
        "kernel void",
    ] {
        assert!(msl.contains(needle), "MSL lacks `{needle}`:\n{msl}");
    }
}

/// The attention template's two passes (`tp` = 1: the rows' maxima and sums, then the
/// normalised output kept in the matrix units' accumulators), the form its rule takes
/// over more than 128 keys where fragments are opaque: in WGSL (16×16 cooperative
/// matrices, a causal mask) and MSL (8×8 simdgroup matrices), snapshotted and checked as
/// every other emitted source is.
#[test]
fn attention_in_two_passes_for_opaque_fragments() {
    let cases = [
        (
            "wgsl",
            "bh=2,s=48,t=48,d=32,causal=1",
            "mma=16,bq=32,bkv=16,w=2,cs=0,rg=0,st=1,tp=1",
        ),
        (
            "msl",
            "bh=2,s=40,t=24,d=32,causal=0",
            "mma=8,bq=16,bkv=16,w=2,cs=0,rg=0,st=1,tp=1",
        ),
    ];
    for (backend, shape, config) in cases {
        let shape = weft_ops::Shape::parse("attention-f16", shape).unwrap();
        let w = Workload::new("attention-f16", &shape).unwrap();
        let config = weft_kernels::Config::parse(config).unwrap();
        let lowered = w.lower_with("template", Some(&config)).unwrap();
        let name = format!("attention-f16__two-pass__{backend}");
        let source = if backend == "wgsl" {
            let sources: Vec<String> = lowered
                .kernels
                .iter()
                .map(|k| weft_codegen_wgsl::emit(k, &wgsl_options()).unwrap().source)
                .collect();
            for src in &sources {
                weft_codegen_wgsl::validate(src).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            sources.join("\n")
        } else {
            let msl = weft_codegen_metal::emit_lowered(&lowered, &MetalOptions::default())
                .unwrap()
                .source;
            if let Err(e) = weft_codegen_metal::syntax_check(&msl) {
                panic!("{name}: {e}");
            }
            msl
        };
        // The second pass accumulates in the fragments across the key steps: no
        // accumulator is ever loaded from shared memory (the one pass reloads the
        // rescaled output every step).
        let reloads = if backend == "wgsl" {
            source.contains("coopLoadT<coop_mat16x16<f32, C>>")
        } else {
            source.contains("simdgroup_load(o_acc")
        };
        assert!(!reloads, "{name}: an accumulator is reloaded\n{source}");
        settings().bind(|| insta::assert_snapshot!(name, source));
    }
}

/// Issue 28's packed shared-stage stores, on MSL (the C-family writer CUDA shares): an
/// fp16 tile fetched 16 bytes a thread (`vec = 8`) is one `uint4` load from device
/// memory and one `uint4` store into the threadgroup stage, never eight halves; the
/// source passes the syntax check.
#[test]
fn msl_copies_f16_tiles_sixteen_bytes_a_thread() {
    let shape = weft_ops::Shape::parse("matmul-f16", "m=128,n=136,k=96").unwrap();
    let w = Workload::new("matmul-f16", &shape).unwrap();
    let config = weft_kernels::Config::parse(
        "mma=8,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0",
    )
    .unwrap();
    let lowered = w.lower_with("template", Some(&config)).unwrap();
    let msl = weft_codegen_metal::emit_lowered(&lowered, &MetalOptions::default())
        .unwrap()
        .source;
    weft_codegen_metal::syntax_check(&msl).unwrap_or_else(|e| panic!("{e}"));
    let loads = msl.matches("= *(device const uint4*)").count();
    let stores = msl.matches("*(threadgroup uint4*)").count();
    assert!(
        loads >= 2 && stores >= 2,
        "{loads} loads, {stores} stores\n{msl}"
    );
    let elementwise = msl
        .lines()
        .any(|l| l.contains("_smem[") && !l.contains("threadgroup half") && l.contains("] ="));
    assert!(!elementwise, "an element-wise stage store\n{msl}");
}

/// `emit_with(.., true)` (`WEFT_VK_CONV=1`) writes an implicit GEMM's guarded gathers
/// without a branch: at GoogLeNet's `inception4b/branch3/branch3.1` (3×3, 24 → 64 at 14²,
/// the Vulkan rule's 32×64×16 tile), every guarded `vec4` load of the default form (an
/// `if` whose `else` stores 0.0 in each of its four elements) becomes a load at a clamped
/// index and four `select`s, and naga accepts the module. The default form is unchanged
/// by the switch's code (`emit_with(.., false)` is what `emit` writes with it unset).
#[test]
fn branch_free_gathers_replace_every_guarded_vec4_load() {
    let (fills, selects) = branch_free_at("n=1,c=24,h=14,w=14,k=64,r=3,s=3,stride=1,pad=1");
    // The A tile's loads two steps ahead: at least the prologue's and the loop's.
    assert!(
        fills >= 16 && selects == fills,
        "{fills} fills, {selects} selects"
    );
}

/// The same where rows of 58 halves are copied 2 at a time (ShuffleNetV2's 1×1 layers at
/// 28²; the input is not declared as vec4s): each element's guarded load becomes a load at
/// a clamped index under a `select`.
#[test]
fn branch_free_gathers_replace_guarded_pairs_of_halves() {
    let (fills, selects) = branch_free_at("n=1,c=58,h=28,w=28,k=58,r=1,s=1,stride=1,pad=0");
    assert!(
        fills >= 4 && selects == fills,
        "{fills} fills, {selects} selects"
    );
}

/// `conv2d-f16` at `shape` with the Vulkan rule's config, emitted without and with the
/// switch: every fill of the default form a `select`, fewer `if`s, naga's approval; the
/// fills and selects counted.
fn branch_free_at(shape: &str) -> (usize, usize) {
    let limits = common::nvidia_vulkan_limits();
    let shape = weft_ops::Shape::parse("conv2d-f16", shape).unwrap();
    let w = Workload::new("conv2d-f16", &shape).unwrap();
    let spec = weft_ops::find("conv2d-f16").unwrap().template.unwrap();
    let (config, _) = spec.untuned(&limits, &shape);
    let lowered = w.lower_with("implicit-gemm", Some(&config)).unwrap();
    let opts = WgslOptions { limits };
    let (mut fills, mut selects) = (0, 0);
    for k in &lowered.kernels {
        let off = weft_codegen_wgsl::emit_with(k, &opts, false)
            .unwrap()
            .source;
        let on = weft_codegen_wgsl::emit_with(k, &opts, true).unwrap().source;
        let count = |src: &str, pat: &str| src.lines().filter(|l| l.contains(pat)).count();
        fills += count(&off, "] = 0.0h;");
        selects += count(&on, "= select(0.0h, ");
        assert_eq!(count(&on, "] = 0.0h;"), 0, "a fill left:\n{on}");
        assert_eq!(
            count(&off, "] = 0.0h;"),
            count(&on, "= select(0.0h, "),
            "{off}\n----\n{on}"
        );
        assert!(
            count(&on, "if (") < count(&off, "if ("),
            "no branch removed:\n{on}"
        );
        weft_codegen_wgsl::validate(&on).unwrap();
    }
    (fills, selects)
}

/// The switch leaves f32 kernels as they are: the fp32 product at a size that is no whole
/// number of tiles (its template's edge tiles load through guarded vec4 copies), every
/// schedule, the same WGSL with and without it (that template's predicated vec4 loads ran
/// slower without a branch, `docs/matmul-template.md`).
#[test]
fn branch_free_gathers_leave_f32_kernels_alone() {
    let opts = wgsl_options();
    let shape = weft_ops::Shape::parse("matmul", "m=100,n=72,k=136").unwrap();
    let w = Workload::new("matmul", &shape).unwrap();
    let op = weft_ops::find("matmul").unwrap();
    let (config, _) = op.template.unwrap().untuned(&opts.limits, &shape);
    let mut guarded = 0;
    let mut lowered: Vec<_> = op.schedules.iter().map(|s| w.lower(s).unwrap()).collect();
    lowered.push(w.lower_with("template", Some(&config)).unwrap());
    for (i, func) in lowered.iter().enumerate() {
        let schedule = op
            .schedules
            .get(i)
            .copied()
            .unwrap_or("template, the rule's config");
        for k in &func.kernels {
            let on = weft_codegen_wgsl::emit_with(k, &opts, true).unwrap().source;
            let off = weft_codegen_wgsl::emit_with(k, &opts, false)
                .unwrap()
                .source;
            guarded += off
                .lines()
                .filter(|l| l.contains("_ldg[0] = 0.0f;"))
                .count();
            assert!(
                on == off,
                "matmul {schedule}: the switch changed an f32 kernel"
            );
        }
    }
    // The edge tiles' fills are there: the comparison saw guarded copies.
    assert!(guarded > 0);
}

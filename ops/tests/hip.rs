//! Every workload × schedule emitted as HIP and compiled by hipcc for gfx90a, each kernel's
//! resource report parsed; snapshots of the HIP source of a few (beside their CUDA
//! snapshots, to show how little differs); and fragments refused by name. Without hipcc
//! the compile check is skipped with a printed reason, unless `WEFT_REQUIRE` names `hip`.
//!
//! Each op × schedule is one translation unit and one hipcc run; the runs go in parallel
//! (hipcc is single-threaded), so the check takes about (units × 2 s) / cores.

use std::time::Instant;

use rayon::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_codegen_cuda::hip::{HipOptions, emit_lowered};
use weft_codegen_cuda::hipcc;
use weft_ir::kernel::LoweredFunc;
use weft_ops::{OPS, Workload};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

/// `schedule` lowered as `weft emit --target rocm` lowers it: a template with its default
/// config for AMD (no matrix fragments).
fn lower_for_rocm(w: &Workload, schedule: &str) -> LoweredFunc {
    let config = w
        .template(schedule)
        .map(|t| (t.default)(&TargetLimits::rocm()));
    w.lower_with(schedule, config.as_ref())
        .unwrap_or_else(|e| panic!("{} {schedule}: {e}", w.op.name))
}

struct Unit {
    name: String,
    source: String,
    entry_points: Vec<String>,
}

fn every_unit() -> Vec<Unit> {
    let mut units = Vec::new();
    for op in OPS {
        let w = Workload::default_for(op.name).unwrap();
        for schedule in op.schedules {
            let lowered = lower_for_rocm(&w, schedule);
            let name = format!("{}__{schedule}", op.name);
            let emitted = emit_lowered(&lowered, &HipOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let entry_points = emitted.kernels.iter().map(|e| e.name.clone()).collect();
            let source = emitted.source;
            units.push(Unit {
                name,
                source,
                entry_points,
            });
        }
    }
    units
}

#[test]
fn every_workload_and_schedule_compiles_for_gfx90a() {
    let units = every_unit();
    assert!(units.len() >= OPS.len());
    if let Err(e) = hipcc::probe() {
        let skipped = hipcc::check("", &[]);
        assert!(skipped.is_ok(), "{}", skipped.unwrap_err());
        eprintln!("(hipcc: {e})");
        return;
    }
    let start = Instant::now();
    let failures: Vec<String> = units
        .par_iter()
        .filter_map(|u| {
            hipcc::check(&u.source, &u.entry_points)
                .err()
                .map(|e| format!("{}: {e}", u.name))
        })
        .collect();
    eprintln!(
        "hipcc compiled {} units ({} kernels) for {:?} in {:.1} s on {} threads",
        units.len(),
        units.iter().map(|u| u.entry_points.len()).sum::<usize>(),
        hipcc::CHECK_ARCHS,
        start.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The seed's tiled matmul, the fp32 template and the fp16 template (HIP's `half`, no
/// fragments): compare with the `__cuda` snapshots of the same names.
#[test]
fn hip_source_snapshots() {
    for (op, schedule) in [
        ("matmul", "shared-blocking"),
        ("matmul", "template"),
        ("matmul-f16", "template"),
    ] {
        let w = Workload::default_for(op).unwrap();
        let source = emit_lowered(&lower_for_rocm(&w, schedule), &HipOptions::default())
            .unwrap_or_else(|e| panic!("{op} {schedule}: {e}"));
        settings().bind(|| insta::assert_snapshot!(format!("{op}__{schedule}__hip"), source));
    }
}

/// CUDA's fp16 template uses matrix fragments; HIP refuses them with the limit error that
/// names the target, the fragment and what is missing — as WGSL without cooperative
/// matrices does.
#[test]
fn matrix_fragments_are_refused_by_name() {
    let w = Workload::default_for("matmul-f16").unwrap();
    let t = w.template("template").expect("matmul-f16 has a template");
    let config = (t.default)(&TargetLimits::cuda());
    let lowered = w.lower_with("template", Some(&config)).unwrap();
    assert!(lowered.kernels.iter().any(|k| k.uses_fragments()));
    let opts = HipOptions {
        limits: weft_codegen_common::TargetLimits {
            name: "rocm -arch=gfx90a".into(),
            ..weft_codegen_common::TargetLimits::rocm()
        },
    };
    let e = emit_lowered(&lowered, &opts).unwrap_err().to_string();
    for needle in [
        "rocm -arch=gfx90a",
        "matrix units",
        "fragment `",
        "m16n16k16",
    ] {
        assert!(e.contains(needle), "`{needle}` not in: {e}");
    }
}

/// The check fails on source hipcc rejects and on a kernel without a report: it is not a
/// check that always passes.
#[test]
fn the_check_can_fail() {
    if hipcc::probe().is_err() {
        return; // the compile test above reports the skip (or the failure under WEFT_REQUIRE)
    }
    let e = hipcc::check("this is not HIP", &[]).unwrap_err();
    assert!(e.contains("hipcc failed to compile for gfx90a"), "{e}");
    let w = Workload::default_for("vecadd").unwrap();
    let source = emit_lowered(&lower_for_rocm(&w, "split-bind"), &HipOptions::default())
        .unwrap()
        .source;
    let e = hipcc::check(&source, &["no_such_kernel".into()]).unwrap_err();
    assert!(e.contains("no resource report for `no_such_kernel`"), "{e}");
}

/// The configs a user gets on AMD without a tuning record — each template's default and
/// its rule's pick at the op's seed shape and at a long, thin product — compile without a
/// spilled register for gfx90a (256 VGPRs) and gfx1100 (128 from this hipcc): the fp16
/// and fp32 matmul templates, their implicit-GEMM convolutions and Winograd's batched
/// GEMM. (Scratch is not checked: the NCHW fp16 convolution keeps its 16-byte staging
/// array there, `docs/amd-registers.md`.)
#[test]
fn the_templates_compile_without_spills_for_gfx90a_and_gfx1100() {
    if let Err(e) = hipcc::probe() {
        let skipped = hipcc::check("", &[]);
        assert!(skipped.is_ok(), "{}", skipped.unwrap_err());
        eprintln!("(hipcc: {e})");
        return;
    }
    let ops = [
        ("matmul", "template", Some("m=197,n=768,k=3072")),
        ("matmul-f16", "template", Some("m=197,n=768,k=3072")),
        ("conv2d", "implicit-gemm", None),
        ("conv2d-f16", "implicit-gemm", None),
        ("conv2d-f16-nchw", "implicit-gemm", None),
        ("winograd-conv2d", "winograd", None),
    ];
    let mut units = Vec::new();
    for arch in ["gfx90a", "gfx1100"] {
        let limits = TargetLimits::rocm_arch(arch);
        for (op, schedule, thin) in ops {
            let seed = Workload::default_for(op).unwrap();
            let t = seed.template(schedule).expect("a template");
            let rule = t.rule.expect("a stated rule");
            let mut shapes = vec![seed.shape.clone()];
            shapes.extend(thin.map(|s| weft_ops::Shape::parse(op, s).unwrap()));
            units.push((arch, op, seed.shape.clone(), schedule, (t.default)(&limits)));
            for shape in shapes {
                let config = rule(&limits, &shape).0;
                units.push((arch, op, shape, schedule, config));
            }
        }
    }
    let failures: Vec<String> = units
        .par_iter()
        .filter_map(|(arch, op, shape, schedule, config)| {
            let name = format!("{op} {shape} {config}");
            let lowered = Workload::new(op, shape)
                .unwrap()
                .lower_with(schedule, Some(config))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let source = emit_lowered(&lowered, &HipOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .source;
            match hipcc::compile(&source, arch) {
                Err(e) => Some(format!("{arch} {name}: {e}")),
                Ok(code) => {
                    let spilled: Vec<String> = code
                        .kernels
                        .iter()
                        .filter(|k| k.vgpr_spills > 0 || k.sgpr_spills > 0)
                        .map(|k| {
                            format!("{} ({} VGPRs, {} spilled)", k.name, k.vgprs, k.vgpr_spills)
                        })
                        .collect();
                    (!spilled.is_empty()).then(|| format!("{arch} {name}: {}", spilled.join(", ")))
                }
            }
        })
        .collect();
    eprintln!("hipcc compiled {} default and rule configs", units.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

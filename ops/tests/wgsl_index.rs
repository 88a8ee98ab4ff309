//! The WGSL emitter's unsigned divisions (`weft_codegen_wgsl::unsigned_division`, on by
//! default, `WEFT_WGSL_INDEX`) compute the same indices as the `i32` ones they replace:
//! every op's kernels at its small shapes, and a convolution over views in the Vulkan
//! rule's config at an odd shape, run on the interpreter before and after the rewrite,
//! must give the same output bit for bit — and the rewrite must have changed something.

mod common;

use weft_codegen_wgsl::{IndexForms, WgslOptions, emit_forms, unsigned_division};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;
use weft_ir::kernel::{Kernel, LoweredFunc};
use weft_kernels::Config;
use weft_ops::{OPS, Shape, Workload};

/// How many `u32` casts `k` holds (what the rewrite writes).
fn unsigned_casts(k: &Kernel) -> usize {
    let mut n = 0;
    k.body.visit(&mut |s| {
        s.map_exprs(&mut |e: &Expr| {
            e.visit(&mut |x| n += matches!(x, Expr::Cast(DType::U32, _)) as usize);
            e.clone()
        });
    });
    n
}

/// Runs `w` lowered by `schedule` (with `config`) before and after the rewrite; returns
/// the number of `u32` casts the rewrite added.
fn same_output(w: &Workload, schedule: &str, config: Option<&Config>) -> usize {
    let lowered = w.lower_with(schedule, config).unwrap();
    let rewritten = LoweredFunc {
        kernels: lowered.kernels.iter().map(unsigned_division).collect(),
        ..lowered.clone()
    };
    let before: usize = lowered.kernels.iter().map(unsigned_casts).sum();
    let after: usize = rewritten.kernels.iter().map(unsigned_casts).sum();
    let inputs = w.random_inputs(11);
    let a = w.run_interp(&lowered, &inputs).unwrap();
    let b = w.run_interp(&rewritten, &inputs).unwrap();
    let same = a
        .iter()
        .zip(b.iter())
        .all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(
        same,
        "{} {schedule} at {}: outputs differ",
        w.op.name, w.shape
    );
    after - before
}

#[test]
fn every_op_computes_the_same_with_unsigned_divisions() {
    let mut rewritten = 0;
    let mut runs = 0;
    for op in OPS {
        for values in op.small {
            let shape = Shape::from_values(op, values).unwrap();
            let w = Workload::new(op.name, &shape).unwrap();
            for schedule in op.schedules {
                rewritten += same_output(&w, schedule, None);
                runs += 1;
            }
        }
    }
    assert!(runs > 50, "{runs} runs");
    assert!(
        rewritten > 100,
        "{rewritten} divisions rewritten over {runs} runs"
    );
}

/// Inception-v3's 5×5 in the Vulkan rule's config (the kernel the rewrite was measured
/// on), at an odd shape: edge tiles, padding on every side, a reduction of 25 · 13.
#[test]
fn a_convolution_over_views_in_the_vulkan_config_computes_the_same() {
    let shape = Shape::parse(
        "conv2d-f16",
        "n=2,c=13,h=11,w=9,k=40,r=5,s=5,stride=1,pad=2",
    )
    .unwrap();
    let w = Workload::new("conv2d-f16", &shape).unwrap();
    let config =
        Config::parse("mma=16,wm=4,wn=2,fm=1,fn=2,bk=32,g=8,vec=4,cp=0,st=2,fb=1,cc=0,wg=0,pf=2")
            .unwrap();
    assert!(same_output(&w, "implicit-gemm", Some(&config)) >= 10);
    // And every form of it is WGSL naga accepts.
    let lowered = w.lower_with("implicit-gemm", Some(&config)).unwrap();
    let opts = WgslOptions {
        limits: common::nvidia_vulkan_limits(),
    };
    for forms in [
        IndexForms::FAST,
        IndexForms::PLAIN,
        IndexForms {
            unsigned_division: true,
            eager_logic: false,
        },
    ] {
        for k in &lowered.kernels {
            let src = emit_forms(k, &opts, false, forms).unwrap().source;
            weft_codegen_wgsl::validate(&src).unwrap_or_else(|e| panic!("{forms:?}: {e}\n{src}"));
            let short_circuits = src.contains("&&");
            assert_eq!(short_circuits, !forms.eager_logic, "{forms:?}\n{src}");
        }
    }
}

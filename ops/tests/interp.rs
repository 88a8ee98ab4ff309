//! Every workload × schedule, lowered and run in the CPU interpreter, against the float64
//! reference on random inputs (outputs poisoned with NaN first).

use weft_ops::{OPS, Shape, Workload, find};

fn check(op: &str, values: &[i64], schedule: &str) {
    let spec = find(op).unwrap();
    let shape = Shape::from_values(spec, values).unwrap();
    let w = Workload::new(op, &shape).unwrap();
    let lowered = w
        .lower(schedule)
        .unwrap_or_else(|e| panic!("{op} {schedule} at {shape}: {e}"));
    let inputs = w.random_inputs(7);
    let out = w
        .run_interp(&lowered, &inputs)
        .unwrap_or_else(|e| panic!("{op} {schedule} at {shape}: {e}"));
    let err = weft_ops::check::check(&w, &inputs, &out);
    assert!(err.is_right(), "{op} {schedule} at {shape}: error {err}");
}

#[test]
fn vecadd_all_schedules_at_non_multiple_length() {
    for s in find("vecadd").unwrap().schedules {
        check("vecadd", &[1000], s);
    }
}

#[test]
fn window_sum_all_schedules_at_non_multiple_length() {
    for s in find("window-sum").unwrap().schedules {
        check("window-sum", &[1000], s);
    }
}

#[test]
fn matmul_all_schedules_128() {
    for s in find("matmul").unwrap().schedules {
        check("matmul", &[128, 128, 128], s);
    }
}

#[test]
fn matmul_all_schedules_at_partial_tiles() {
    for s in find("matmul").unwrap().schedules {
        check("matmul", &[100, 72, 136], s);
    }
}

#[test]
fn depthwise_all_schedules_at_seed_shape() {
    for s in find("depthwise-conv2d").unwrap().schedules {
        check("depthwise-conv2d", &[3, 4, 16, 32, 7, 1], s);
        // Stride 2, an odd image, a 3x3 kernel.
        check("depthwise-conv2d", &[2, 3, 13, 9, 3, 2], s);
    }
}

#[test]
fn depthwise_f16_all_schedules_at_its_small_shapes() {
    let spec = find("depthwise-conv2d-f16").unwrap();
    for s in spec.schedules {
        for values in spec.small {
            check("depthwise-conv2d-f16", values, s);
        }
        // ConvNeXt's first stage, cut to a 9x11 image: 96 channels, 7x7.
        check("depthwise-conv2d-f16", &[1, 96, 9, 11, 7, 1], s);
    }
}

#[test]
fn every_op_has_its_best_schedule_listed() {
    for op in OPS {
        assert!(op.schedules.contains(&op.best), "{}", op.name);
    }
}

/// The grouped convolutions at their odd small shapes (2, 3, 13 and 32 groups; a pack of
/// narrow groups, one group a product, stride 2, batch 2): every schedule, and the
/// implicit GEMM with the rule's config for CUDA and for plain WebGPU (the CUDA-core
/// fragments) and with a spread sample of the template's space.
#[test]
fn grouped_convs_all_schedules_and_configs_at_small_shapes() {
    use weft_codegen_common::TargetLimits;
    for op in ["grouped-conv2d", "grouped-conv2d-f16"] {
        let spec = find(op).unwrap();
        let template = spec.template.unwrap();
        for values in spec.small {
            for s in spec.schedules {
                check(op, values, s);
            }
            let shape = Shape::from_values(spec, values).unwrap();
            let w = Workload::new(op, &shape).unwrap();
            let mut configs = Vec::new();
            for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
                configs.push(template.untuned(&limits, &shape).0);
                let space = (template.space)(&limits);
                configs.extend(space.iter().step_by(space.len().div_ceil(4)).cloned());
                // The narrow tiles (one fragment wide: `wn` = 1 outside Hopper's `wg`,
                // which the grouped space leaves out), every one of them.
                configs.extend(space.iter().filter(|c| c.get("wn") == Some(1)).cloned());
            }
            assert!(
                op != "grouped-conv2d-f16" || configs.iter().any(|c| c.get("wn") == Some(1)),
                "{op}: no narrow tile in the CUDA space"
            );
            for config in configs {
                let lowered = w
                    .lower_with(template.schedule, Some(&config))
                    .unwrap_or_else(|e| panic!("{op} {config} at {shape}: {e}"));
                let inputs = w.random_inputs(11);
                let out = w
                    .run_interp(&lowered, &inputs)
                    .unwrap_or_else(|e| panic!("{op} {config} at {shape}: {e}"));
                let err = weft_ops::check::check(&w, &inputs, &out);
                assert!(err.is_right(), "{op} {config} at {shape}: error {err}");
            }
        }
    }
}

/// The K-major skinny products at their odd small shapes (m = 1, 3, 8; k = 7, 100, 1001
/// — not multiples of 8, element loads — n = 33, 70, 5), and at 2 rows over k = 2056
/// (16-byte loads, a ragged last step): the rule's config for CUDA and for plain WebGPU
/// (the shared-memory combine) and a spread sample of the space, in the interpreter
/// against `A · Wᵀ` in float64.
#[test]
fn gemv_kmajor_at_small_shapes_with_rule_and_space_configs() {
    use weft_codegen_common::TargetLimits;
    for op in ["gemv-kmajor", "gemv-kmajor-f16"] {
        let spec = find(op).unwrap();
        let template = spec.template.unwrap();
        let shapes: Vec<&[i64]> = spec
            .small
            .iter()
            .copied()
            .chain([&[2, 9, 2056][..]])
            .collect();
        for values in shapes {
            check(op, values, "template");
            let shape = Shape::from_values(spec, values).unwrap();
            let w = Workload::new(op, &shape).unwrap();
            let mut configs = Vec::new();
            for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
                configs.push(template.untuned(&limits, &shape).0);
                let space = (template.space)(&limits);
                configs.extend(space.iter().step_by(space.len().div_ceil(5)).cloned());
            }
            let inputs = w.random_inputs(11);
            for config in configs {
                let what = format!("{op} at {shape} with {config}");
                let lowered = w
                    .lower_with("template", Some(&config))
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let out = w
                    .run_interp(&lowered, &inputs)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let err = weft_ops::check::check(&w, &inputs, &out);
                assert!(err.is_right(), "{what}: error {err}");
            }
        }
    }
}

//! Every template's schedule space on every target this machine has: configs built,
//! compiled in parallel and checked against the float64 reference by the tuner itself, at
//! odd sizes. GPUs take the whole space; the interpreter and CPU drivers (lavapipe), a
//! spread sample of it (none on GL over llvmpipe, whose compiler takes 40 s a config).

use weft_ops::{OPS, Shape, Workload};
use weft_testkit::devices::open_or_skip;
use weft_tests::testgen;
use weft_tune::{Outcome, TuneOptions};

testgen!(every_config_of_the_space);

/// Configs checked on slow devices (the interpreter, a CPU Vulkan driver).
const CPU_SAMPLE: usize = 8;

fn every_config_of_the_space(target: &str) {
    let Some(mut device) = open_or_skip(target) else {
        return;
    };
    let slow = device.name().contains("llvmpipe") || target == "cpu";
    if slow && target == "gl" {
        // Mesa's GLSL compiler takes about 40 s per unrolled matmul config on llvmpipe;
        // the `workloads` tests run the template's default config there.
        eprintln!(
            "gl ({}): space sample skipped, 40 s a config",
            device.name()
        );
        return;
    }
    if slow && target == "wgpu" && device.name().contains("(Vulkan") {
        // `wgpu` picks the best backend: here the same Vulkan adapter, with the same limits
        // and so the same sample, as the `vulkan` test (about two minutes of CI on lavapipe).
        eprintln!(
            "wgpu ({}): the adapter `vulkan` samples the space on; skipped",
            device.name()
        );
        return;
    }
    let sample = slow.then_some(CPU_SAMPLE);
    let limits = device.limits();
    let mut failures = Vec::new();
    let mut checked = 0;
    for op in OPS {
        let Some(spec) = op.template else { continue };
        // matmul at sizes that fit no tile; other ops at their own small (odd) shapes.
        let shapes: Vec<Shape> = if op.name == "matmul" {
            ["m=17,n=33,k=65", "m=127,n=129,k=3"]
                .iter()
                .map(|t| Shape::parse(op.name, t).unwrap_or_else(|e| panic!("{e}")))
                .collect()
        } else {
            // The fp16 convs share the fp16 matmul's space and are proptested at odd
            // sizes in the interpreter (`ops/tests/template_conv2d_f16.rs`): on slow
            // devices one shape of each is enough here.
            let take = if slow && op.name.starts_with("conv2d-f16") {
                1
            } else {
                op.small.len()
            };
            op.small[..take]
                .iter()
                .map(|v| Shape::from_values(op, v).unwrap_or_else(|e| panic!("{e}")))
                .collect()
        };
        for shape in shapes {
            let w = Workload::new(op.name, &shape).unwrap_or_else(|e| panic!("{e}"));
            // An f16 op on a target without f16 (plain WebGPU) is a typed error that
            // `cli/tests` checks, not a config to tune.
            if w.uses_f16() && !device.limits().f16 {
                continue;
            }
            let opts = TuneOptions {
                sample,
                budget: std::time::Duration::from_micros(100),
                check_all: true,
                ..TuneOptions::default()
            };
            let tuned = weft_tune::tune(device.as_mut(), &w, spec, &limits, &opts, &())
                .unwrap_or_else(|e| panic!("{}/{} at {shape}: {e}", op.name, spec.schedule));
            for t in &tuned.trials {
                checked += 1;
                match &t.outcome {
                    Outcome::Timed { error: Some(_), .. } => {}
                    Outcome::Timed { error: None, .. } => failures.push(format!(
                        "{}/{} {} at {shape}: not checked",
                        op.name, spec.schedule, t.config
                    )),
                    Outcome::Wrong { error } => failures.push(format!(
                        "{}/{} {} at {shape}: error {error:e} of the tolerance",
                        op.name, spec.schedule, t.config
                    )),
                    Outcome::Failed(why) => failures.push(format!(
                        "{}/{} {} at {shape}: {why}",
                        op.name, spec.schedule, t.config
                    )),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} configs failed on `{target}` ({}):\n{}",
        failures.len(),
        device.name(),
        failures.join("\n")
    );
    eprintln!(
        "{target} ({}): {checked} template configs right",
        device.name()
    );
}

//! The depthwise template: right at odd shapes, strides 1 and 2, kernels 1 to 7, for
//! configs across its space (in the interpreter, which also checks races and bounds);
//! its space's properties; typed errors for configs outside it.

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_kernels::{Config, depthwise};
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn workload(text: &str) -> Workload {
    Workload::new(
        "depthwise-conv2d",
        &Shape::parse("depthwise-conv2d", text).unwrap(),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn tuned_is_right_for_configs_across_the_space(
        ci in any::<prop::sample::Index>(),
        b in 1i64..3,
        c in 1i64..11,
        h in 1i64..20,
        w in 1i64..20,
        k in prop_oneof![Just(1i64), Just(3), Just(5), Just(7)],
        stride in 1i64..3,
        seed in 0u64..1000,
    ) {
        let configs = depthwise::space(&TargetLimits::cuda());
        let config = &configs[ci.index(configs.len())];
        let w = workload(&format!("b={b},c={c},h={h},w={w},k={k},stride={stride}"));
        let lowered = w.lower_with("tuned", Some(config)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let inputs = w.random_inputs(seed);
        let out = w.run_interp(&lowered, &inputs).map_err(|e| TestCaseError::fail(format!("{config}: {e}")))?;
        let e = Checker::new(&w, &inputs).check(&out);
        prop_assert!(e.is_right(), "{} at {}: error {}", config, w.shape, e);
    }
}

/// Every config of every target's space is valid, within its limits, and distinct; the
/// space holds both shared-memory and register configs.
#[test]
fn the_space_fits_each_target() {
    for r in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
        let space = depthwise::space(&r);
        assert!(!space.is_empty() && space.len() <= 200, "{}", space.len());
        let mut seen = std::collections::HashSet::new();
        for c in &space {
            assert!(seen.insert(c.clone()), "{c} twice");
            let p = depthwise::DepthwiseParams::from_config(c).unwrap();
            assert!(
                p.threads() <= r.max_threads_per_block as i64 && p.threads() % 32 == 0,
                "{c}"
            );
            // Channel planes past 8 are the NHWC rule's configs, in the space wherever
            // the rule may take one (some window of 3-7 at stride 1 or 2); the others
            // run at the widest window and stride the op takes.
            let fits = |k: i64, s: i64| p.shared_bytes(k, s) <= r.max_shared_bytes as i64;
            if c.get("cb").is_some_and(|cb| cb > 8) {
                assert!(
                    [(3, 1), (3, 2), (5, 1), (5, 2), (7, 1), (7, 2)]
                        .iter()
                        .any(|&(k, s)| fits(k, s)),
                    "{c}"
                );
            } else {
                assert!(fits(7, 2), "{c}");
            }
        }
        assert!(space.iter().any(|c| c.get("smem") == Some(0)));
        assert!(space.iter().any(|c| c.get("ur") == Some(0)));
        assert!(space.contains(&depthwise::default_config(&r)));
    }
}

#[test]
fn configs_outside_the_space_are_named() {
    let bad = |text: &str| {
        let c = Config::parse(text).unwrap();
        depthwise::DepthwiseParams::from_config(&c)
            .unwrap_err()
            .to_string()
    };
    let e = bad("th=8,tw=8,vh=3,vw=1,cb=1,smem=1,ur=1");
    assert!(e.contains("multiple of a thread's outputs"), "{e}");
    let e = bad("th=8,tw=8,vh=1,vw=1,cb=1,smem=0,ur=0");
    assert!(e.contains("needs unrolled loops"), "{e}");
    let e = bad("th=8,tw=8,vh=1,vw=1,cb=1,smem=2,ur=1");
    assert!(e.contains("must be 0 or 1"), "{e}");
    let e = bad("th=8,tw=8,vh=1,vw=1,cb=1,smem=1");
    assert!(e.contains("`ur` is missing"), "{e}");
}

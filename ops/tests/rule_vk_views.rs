//! `WEFT_VK_VIEWS=model` (`matmul_f16::vk_views`): over views on Vulkan's cooperative
//! matrices, products of several waves of blocks ranked by the cost model's elementwise
//! constants instead of the rule; products of fewer keep the rule, and without the switch
//! nothing changes. Measured slower (2026-12-01, `measurements/h200-2026-12-01c/call1`),
//! so off. The rule's own picks there (since the same day four warps of 2×2 fragments,
//! `views_many_waves`) and the model's compute right and validate as WGSL.

mod common;

use weft_kernels::matmul_f16::{
    F16Params, Switches, VIEWS_MIN_PART, rule_config_switched, vk_views,
};
use weft_kernels::rule::Product;
use weft_ops::Shape;

const OFF: Switches = Switches {
    wide: true,
    vk_model: false,
    vk_min_part: VIEWS_MIN_PART,
};
const ON: Switches = Switches {
    wide: true,
    vk_model: true,
    vk_min_part: VIEWS_MIN_PART,
};

#[test]
fn several_waves_over_views_are_ranked_by_the_cost_model_where_asked() {
    let vulkan = common::nvidia_vulkan_limits();
    let mut picks = Vec::new();
    // Inception-v3's 147² and 71² 3×3s and ResNet-50's 56² 3×3 at batch 8.
    for (m, n, k) in [
        (8 * 147 * 147, 64, 288),
        (8 * 71 * 71, 192, 720),
        (8 * 56 * 56, 64, 576),
    ] {
        let p = Product::split(m, n, k);
        assert!(vk_views::by_model(p, true), "{m}x{n}x{k}");
        let (rule, _, why) = rule_config_switched(&vulkan, p, true, false, OFF);
        let r = F16Params::from_config(&rule).unwrap();
        assert_eq!((r.warps, r.frags, r.bk), ([2, 2], [2, 2], 16), "{why}");
        picks.push(rule.clone());
        let (model, splits, why) = rule_config_switched(&vulkan, p, true, false, ON);
        assert!(why.contains("cost model"), "{m}x{n}x{k}: {why}");
        assert_eq!(splits, 1, "{why}");
        let q = F16Params::from_config(&model).unwrap();
        assert_eq!(q.mma, 16, "{why}");
        eprintln!("{m}x{n}x{k}: {rule} -> {model} ({why})");
        picks.push(model);
    }
    // Each pick computes the convolution: at an odd shape (edge tiles along every axis,
    // a reduction that is no whole number of steps), on the interpreter, against float64.
    let shape = Shape::parse(
        "conv2d-f16",
        "n=2,c=20,h=13,w=11,k=70,r=3,s=3,stride=1,pad=1",
    )
    .unwrap();
    let w = weft_ops::Workload::new("conv2d-f16", &shape).unwrap();
    let inputs = w.random_inputs(11);
    picks.sort_by_key(|c| c.to_string());
    picks.dedup();
    for config in &picks {
        let lowered = w.lower_with("implicit-gemm", Some(config)).unwrap();
        let out = w.run_interp(&lowered, &inputs).unwrap();
        let e = weft_ops::check::Checker::new(&w, &inputs).check(&out);
        assert!(e.is_right(), "{config} at {shape}: error {e}");
        // And Vulkan takes it: the WGSL with its cooperative matrices validates.
        for k in &lowered.kernels {
            let opts = weft_codegen_wgsl::WgslOptions {
                limits: vulkan.clone(),
            };
            let src = weft_codegen_wgsl::emit(k, &opts)
                .unwrap_or_else(|e| panic!("{config}: {e}"))
                .source;
            assert!(src.contains("coopMultiplyAdd"), "{config}");
            weft_codegen_wgsl::validate(&src).unwrap_or_else(|e| panic!("{config}: {e}"));
        }
    }
    // A batch-1 layer (ResNet-50's 56² 3×3: 49 blocks of 64×64): the 1×2 rule either way.
    let p = Product::split(56 * 56, 64, 576);
    assert!(!vk_views::by_model(p, true));
    assert_eq!(
        rule_config_switched(&vulkan, p, true, false, ON),
        rule_config_switched(&vulkan, p, true, false, OFF)
    );
    // Stored operands and CUDA's limits: the switch changes nothing.
    let stored = Product::split(8 * 147 * 147, 64, 288);
    assert_eq!(
        rule_config_switched(&vulkan, stored, false, false, ON),
        rule_config_switched(&vulkan, stored, false, false, OFF)
    );
    let cuda = weft_codegen_common::TargetLimits::cuda();
    assert_eq!(
        rule_config_switched(&cuda, stored, true, false, ON),
        rule_config_switched(&cuda, stored, true, false, OFF)
    );
}

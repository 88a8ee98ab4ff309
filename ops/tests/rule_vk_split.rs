//! `WEFT_VK_SPLIT` (`matmul_f16::vk_split`): over views on Vulkan's cooperative matrices,
//! the shortest part a split reduction may have — the rule's, longer parts, or no split,
//! and an unsplit pick then takes the deep k steps of one wave as any unsplit pick does.

mod common;

use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_kernels::matmul_f16::{Switches, VIEWS_MIN_PART, rule_config_switched};
use weft_kernels::rule::Product;

fn switches(vk_min_part: i64) -> Switches {
    Switches {
        wide: true,
        vk_model: false,
        vk_min_part,
    }
}

/// GoogLeNet's `inception5b/branch3/branch3.0` at batch 1 (1×1, 832 → 48 at 7²: a 49 × 48
/// × 832 product, two 32×64 tiles): the rule splits it in 4 (832 / 128 = 6, the largest
/// power of two under it), parts of 256 split it in 2 (832 / 256 = 3), parts of 1024 or
/// no split leave it whole on k steps of 64.
#[test]
fn the_shortest_part_sets_the_split_over_views_on_vulkan() {
    let limits = common::nvidia_vulkan_limits();
    let p = Product::split(49, 48, 832);
    let pick = |part| rule_config_switched(&limits, p, true, false, switches(part));
    let (_, rule, why) = pick(VIEWS_MIN_PART);
    assert_eq!(rule, 4, "{why}");
    assert_eq!(pick(256).1, 2);
    for part in [0, 1024] {
        let (config, splits, why) = pick(part);
        assert_eq!(splits, 1, "{part}: {why}");
        assert_eq!(config.get("bk"), Some(64), "{part}: {why}");
    }
    // ResNet-50's 56² 3×3 at batch 1 (3136 × 64 × 576): 49 whole 64×64 tiles, under
    // half a wave, so the rule and shorter parts split it in 2 (98 blocks) and no split
    // leaves it on 32×64 tiles (98 blocks too).
    let layer = Product::split(3136, 64, 576);
    for part in [32, 64, VIEWS_MIN_PART] {
        let (_, splits, why) = rule_config_switched(&limits, layer, true, false, switches(part));
        assert_eq!(splits, 2, "{part}: {why}");
    }
    let (_, splits, why) = rule_config_switched(&limits, layer, true, false, switches(0));
    assert_eq!(splits, 1, "{why}");
    // At batch 4 its whole tiles fill the GPU: never split, whatever the part.
    let wide = Product::split(4 * 3136, 64, 576);
    for part in [0, 32, VIEWS_MIN_PART] {
        let (_, splits, why) = rule_config_switched(&limits, wide, true, false, switches(part));
        assert_eq!(splits, 1, "{part}: {why}");
    }
}

/// The switch is Vulkan's (tiles stored element by element): CUDA's pick at the same
/// product is the same whatever it says.
#[test]
fn the_split_switch_leaves_cuda_alone() {
    let cuda = TargetLimits::cuda_arch(&cuda_arch("sm_90").unwrap());
    let p = Product::split(49, 48, 832);
    let base = rule_config_switched(&cuda, p, true, false, switches(VIEWS_MIN_PART));
    for part in [0, 256] {
        assert_eq!(
            rule_config_switched(&cuda, p, true, false, switches(part)),
            base
        );
    }
}

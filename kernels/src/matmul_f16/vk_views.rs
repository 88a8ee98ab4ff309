//! Implicit GEMMs over views on targets that store their tiles element by element
//! (Vulkan's cooperative matrices) ranked by the cost model where they are several waves
//! deep — a switch for the A/B, off by default.
//!
//! Why: over views the rule there takes warps of 1×2 fragments only
//! ([`super::views_rule_elementwise`], fitted at ResNet-50's batch-1 layers, at most a wave
//! of blocks), so a warp loads three fragments from workgroup memory for every two
//! multiplies. At batch 8 the corpus's CNNs run 0.28–0.51× of CUDA on Vulkan, and grow
//! from batch 1 far more than on CUDA (Inception-v3 1.42 → 4.31 ms against 0.59 → 1.20;
//! H200, 2026-12-01, `measurements/h200-2026-12-01b`): at many waves the multiplies, not
//! the latency the 1×2 warps were picked for, should set the time, and the cost model's
//! elementwise constants ([`crate::rule::tensor::ELEMENTWISE`], fitted on Vulkan products
//! of stored operands) weigh larger warp tiles. Untimed: [`SWITCH`] = `model` asks for it
//! so that one binary can time both (`measurements/next/README.md`).

use crate::{ceil_div, rule};

/// The environment variable: `model` ranks such products by the cost model; `0` or unset
/// keeps the 1×2-fragment rule everywhere.
pub const SWITCH: &str = "WEFT_VK_VIEWS";

/// Waves of 64×64 blocks (of [`rule::ENOUGH_TILES`]) from which a product is ranked by
/// the cost model under [`SWITCH`]: two, past the single wave the 1×2 rule was fitted
/// at (ResNet-50's batch-8 56² 3×3 gives about three, Inception-v3's batch-8 147² 3×3s
/// twenty).
pub const MIN_WAVES: i64 = 2;

/// What [`SWITCH`] takes, as its refusal says.
pub const VALUES: &str = "0 (off) or model (the cost model at several waves)";

/// Whether [`SWITCH`] asks for the cost model: `Ok(true)` for `model`, `Ok(false)` for `0`
/// or unset, else `Err` with [`VALUES`].
pub fn asked() -> Result<bool, &'static str> {
    match std::env::var(SWITCH).as_deref() {
        Err(_) | Ok("0") => Ok(false),
        Ok("model") => Ok(true),
        Ok(_) => Err(VALUES),
    }
}

/// Whether product `p` over views is ranked by the cost model when `on`: at least
/// [`MIN_WAVES`] waves of 64×64 blocks.
pub fn by_model(p: rule::Product, on: bool) -> bool {
    on && ceil_div(p.m, 64) * ceil_div(p.n, 64) * p.batch >= MIN_WAVES * rule::ENOUGH_TILES
}

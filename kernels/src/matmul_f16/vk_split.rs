//! How short a part of a split reduction may be over views on targets that store their
//! tiles element by element (Vulkan's cooperative matrices) — a switch for the A/B of the
//! split rule against the dispatch it costs.
//!
//! Why: over views the Vulkan rule ([`super::views_rule_elementwise`]) splits a reduction
//! wherever its whole tiles give fewer than half a wave of blocks, in parts of at least
//! [`super::VIEWS_MIN_PART`], and prices nothing for the summing kernel, which on Vulkan is
//! a dispatch of its own behind a barrier. GoogLeNet at batch 1 has 46 split convolutions
//! on Vulkan against 15 on CUDA (119 dispatches against 88), and the batch-1 CNNs there are
//! held by what a dispatch costs (`docs/vulkan-small-convs.md`). The split rule was fitted
//! before the WGSL index forms made a gathered k step cheaper (2026-12-01), which moves the
//! balance toward fewer, longer parts. [`SWITCH`] sets the shortest part so that one binary
//! can time the rule against longer parts and against no split.

/// The environment variable: unset or `rule` keeps [`super::VIEWS_MIN_PART`]; `0` splits
/// nothing over views on such targets; a number from 32 to 65536 is the shortest part.
pub const SWITCH: &str = "WEFT_VK_SPLIT";

/// What [`SWITCH`] takes, as its refusal says.
pub const VALUES: &str = "rule, 0 (no split over views) or the shortest part, 32 to 65536";

/// The shortest part [`SWITCH`] asks for: `Ok(None)` unset or `rule`, `Ok(Some(0))` for no
/// split, `Ok(Some(n))` for parts of at least `n`, else `Err` with [`VALUES`].
pub fn asked() -> Result<Option<i64>, &'static str> {
    match std::env::var(SWITCH).as_deref() {
        Err(_) | Ok("rule") => Ok(None),
        Ok(v) => match v.parse::<i64>() {
            Ok(0) => Ok(Some(0)),
            Ok(n) if (32..=65536).contains(&n) => Ok(Some(n)),
            _ => Err(VALUES),
        },
    }
}

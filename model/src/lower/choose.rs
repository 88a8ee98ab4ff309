//! The stated rule that picks an anchor's template config when there is no tuning
//! record (`weft_kernels::rule`, which the ops' templates use too, here with
//! split-K): from the template's hardware-centric space (what the target's limits allow),
//! the largest block tile (counting only its part inside the product) that still gives
//! the GPU [`ENOUGH_TILES`] blocks of work,
//! counting the parts a long reduction is split into ([`split_k`]) — so that a 112²
//! layer gets 128×128 tiles, and a 7² one 64×64 tiles with its 4608-long reduction in 16
//! parts rather than tiny tiles that each walk it alone — else, where no tile gives that
//! many, the one that gives the most, and of those the smallest (least work wasted past
//! the edges); remaining ties go to more threads, fewer parts, then the shorter k step.

use weft_codegen_common::TargetLimits;
use weft_kernels::rule::Product;
pub(crate) use weft_kernels::rule::{ENOUGH_TILES, split_k};
use weft_kernels::{grouped_conv, matmul, matmul_f16};

use super::siblings::Beside;
use crate::anchor::{AnchorChoice, AnchorKey, AnchorTemplate, Choices, Views};
use crate::error::LowerError;

/// The config and split parts for anchor `key`: the tuning run's choice where `choices`
/// holds one, else the stated rule's; with why.
pub(crate) fn anchor(
    limits: &TargetLimits,
    choices: &Choices,
    key: &AnchorKey,
) -> (AnchorChoice, String) {
    anchor_with(limits, choices, key, false, Beside::Split)
}

/// [`anchor`] for an anchor whose `a` operand is computed at its loads where
/// `computed_a` (the rule weighs that: `matmul_f16::rule_config_with`), and which other
/// anchors run beside as `beside` says ([`super::siblings`]; the rule weighs that:
/// [`whole_beside_siblings`]).
pub(crate) fn anchor_with(
    limits: &TargetLimits,
    choices: &Choices,
    key: &AnchorKey,
    computed_a: bool,
    beside: Beside,
) -> (AnchorChoice, String) {
    // A product over stored operands takes the record of the same product read through
    // views where it has none of its own (records made before stored operands were told
    // apart): a config of the views' space is one of the whole space.
    let over_views = || {
        let views = AnchorKey {
            views: Views::GEMM,
            ..key.clone()
        };
        choices
            .get(&views)
            .map(|(c, why)| (c.clone(), format!("{why}; recorded over views")))
    };
    let found = match choices.get(key) {
        Some(c) => Some(c.clone()),
        None if key.stored_operands() => over_views(),
        None => None,
    };
    // A record naming Winograd for an anchor that cannot take it (edited by hand, or
    // made by another version) is not followed.
    found
        .filter(|(c, _)| !c.winograd || key.winograd.is_some())
        .unwrap_or_else(|| by_rule(limits, key, computed_a, beside))
}

/// The stated rule's choice for anchor `key`, with why: the whole product on the
/// anchor's template (never Winograd: only a tuning record chooses it), its tile and
/// split parts by [`pick`]; `beside` as [`anchor_with`] takes it.
pub(crate) fn by_rule(
    limits: &TargetLimits,
    key: &AnchorKey,
    computed_a: bool,
    beside: Beside,
) -> (AnchorChoice, String) {
    let whole = whole_beside_siblings(limits, key, beside);
    let product = if key.batched() || whole {
        Product::whole(key.m, key.n, key.k, key.batch)
    } else {
        Product::split(key.m, key.n, key.k)
    };
    // A grouped convolution's narrow products (at most 16 columns) take tiles one
    // fragment wide where the target has them (`grouped_conv::narrow_rule`).
    if key.grouped_conv()
        && key.template == AnchorTemplate::MatmulF16
        && let Some((config, why)) = grouped_conv::narrow_rule(limits, key.batch, key.m, key.n)
    {
        return (AnchorChoice::gemm(config, 1), format!("rule: {why}"));
    }
    let (config, splits, why) = match key.template {
        AnchorTemplate::Matmul => matmul::rule_config(limits, product),
        // Over views (an im2col, a transpose) the template's space leaves out what reads
        // placeholders only; stored operands read as they are take the whole space.
        AnchorTemplate::MatmulF16 => {
            matmul_f16::rule_config_with(limits, product, !key.stored_operands(), computed_a)
        }
    };
    let why = match whole {
        true => format!("{why}; its reduction whole ({})", super::siblings::SWITCH),
        false => why,
    };
    (AnchorChoice::gemm(config, splits), why)
}

/// Whether the rule leaves the reduction of anchor `key` whole where `beside` (what
/// [`super::siblings::SWITCH`] asks of this anchor) says so: on the fp16 template on
/// targets whose dispatches wait at barriers for what they use
/// ([`TargetLimits::usage_barriers`]), where a split's summing kernel is a dispatch
/// behind a barrier. Off unless asked: [`super::siblings`] has what it measured.
pub(crate) fn whole_beside_siblings(
    limits: &TargetLimits,
    key: &AnchorKey,
    beside: Beside,
) -> bool {
    let asked = match beside {
        Beside::Split => false,
        Beside::Views { max_k } => !key.stored_operands() && key.k <= max_k,
        Beside::Every { max_k } => key.k <= max_k,
    };
    asked && limits.usage_barriers && key.template == AnchorTemplate::MatmulF16 && !key.batched()
}

/// The environment variable that overrides [`Choices::split_last`] (`0`: a summing
/// kernel; `1`: the last part sums where the target can; unset: the choices' setting,
/// off unless a caller asks): a knob for timing the one-kernel form against the two
/// kernels on whole models.
pub const SPLIT_LAST_ENV: &str = "WEFT_SPLIT_LAST";

/// Whether a split product's last part sums on `limits` ([`TargetLimits::device_fence`]):
/// as `WEFT_SPLIT_LAST` says where it is set, else as `choices` do; any other value of
/// the variable is refused, naming it.
pub(crate) fn split_last(limits: &TargetLimits, choices: &Choices) -> Result<bool, LowerError> {
    match std::env::var(SPLIT_LAST_ENV).as_deref() {
        Err(_) => Ok(choices.split_last() && limits.device_fence),
        Ok("1") => Ok(limits.device_fence),
        Ok("0") => Ok(false),
        Ok(other) => Err(LowerError::Refused(format!(
            "{SPLIT_LAST_ENV}=`{other}`: 0 (a summing kernel) or 1 (the last part sums)"
        ))),
    }
}

/// A switch left on unless environment variable `var` says `0` (`1` or unset: on); any
/// other value is refused, naming the variable and what its two values do (`on`, `off`).
pub(crate) fn switch(var: &str, on: &str, off: &str) -> Result<bool, LowerError> {
    match std::env::var(var).as_deref() {
        Err(_) | Ok("1") => Ok(true),
        Ok("0") => Ok(false),
        Ok(other) => Err(LowerError::Refused(format!(
            "{var}=`{other}`: 0 ({off}) or 1 ({on}, the default)"
        ))),
    }
}

/// The fp32 matmul template's config for an `m × n × k` product, its split parts and
/// why: the rule of `weft_kernels::rule`, which may split.
#[cfg(test)]
fn matmul_config(
    limits: &TargetLimits,
    m: i64,
    n: i64,
    k: i64,
) -> (weft_kernels::Config, i64, String) {
    matmul::rule_config(limits, Product::split(m, n, k))
}

/// The fp16 matmul template's config for an `m × n × k` product over views (an implicit
/// GEMM's im2col, a Gemm's operands), by the same rule.
#[cfg(test)]
fn matmul_f16_config(
    limits: &TargetLimits,
    m: i64,
    n: i64,
    k: i64,
) -> (weft_kernels::Config, i64, String) {
    matmul_f16::rule_config(limits, Product::split(m, n, k), true)
}

#[cfg(test)]
mod tests {
    use weft_kernels::matmul::MatmulParams;
    use weft_kernels::matmul_f16::F16Params;
    use weft_kernels::rule::{MAX_SPLITS, MIN_SPLIT_K};

    use super::*;

    #[test]
    fn few_tiles_and_long_sums_split() {
        let cuda = TargetLimits::cuda();
        // ResNet-50's 7×7 3×3 layer: 49 × 512 × 4608.
        let (c, s, why) = matmul_config(&cuda, 49, 512, 4608);
        let p = MatmulParams::from_config(&c).unwrap();
        // The cost model splits it, in parts that can pay and that each walk a long
        // enough part of the sum.
        assert!(s > 1 && s <= MAX_SPLITS, "{s}");
        assert!(
            weft_kernels::split_k::pays(49, 512, 4608, (p.block_m(), p.block_n()), s),
            "{c} in {s}"
        );
        assert!(4608 / s >= MIN_SPLIT_K / 2, "{s}");
        assert!(why.starts_with("cost model"), "{why}");
        // A 112² layer of a short sum (ResNet-50's stem, 12544 × 64 × 147): not split.
        let (_, s, _) = matmul_config(&cuda, 112 * 112, 64, 147);
        assert_eq!(s, 1);
        // With a longer sum (12544 × 64 × 576, never timed) the refit of 2026-11-27
        // splits 98 tiles of 128×64 in 2, where the constants of before took 196 tiles of
        // 64×64 whole. What that rests on: at 3136 × 64 × 576 the splits ran fastest
        // (1.38× the best whole tile; the 128×64 tile in 4 parts at 0.90× of the best),
        // and a fit held to the whole tile here reached 56 of the 60 shapes, not 57
        // (197 × 768 × 3072 back at 0.72×). Whichever it takes, the split can pay.
        let (c, s, _) = matmul_config(&cuda, 112 * 112, 64, 576);
        let p = MatmulParams::from_config(&c).unwrap();
        assert!(
            weft_kernels::split_k::pays(112 * 112, 64, 576, (p.block_m(), p.block_n()), s),
            "{c} in {s}"
        );
    }

    #[test]
    fn big_layers_get_big_tiles_and_every_choice_is_in_the_space() {
        let cuda = TargetLimits::cuda();
        let (big, _, _) = matmul_config(&cuda, 112 * 112, 128, 576);
        let big = MatmulParams::from_config(&big).unwrap();
        let (small, _, why) = matmul_config(&cuda, 49, 512, 64);
        let small = MatmulParams::from_config(&small).unwrap();
        assert!(big.block_m() * big.block_n() > small.block_m() * small.block_n());
        assert!(why.contains("blocks"), "{why}");
        let webgpu = TargetLimits::webgpu_default();
        let (c, _, _) = matmul_config(&webgpu, 49, 512, 4608);
        assert!(matmul::space(&webgpu).contains(&c));
    }

    #[test]
    fn fp16_tiles_follow_the_same_rule() {
        for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
            let (big, _, _) = matmul_f16_config(&limits, 112 * 112, 128, 576);
            let big = F16Params::from_config(&big).unwrap();
            let (small, splits, _) = matmul_f16_config(&limits, 49, 512, 4608);
            assert!(matmul_f16::space_over_views(&limits).contains(&small));
            let small = F16Params::from_config(&small).unwrap();
            assert!(big.block_m() * big.block_n() >= small.block_m() * small.block_n());
            assert!(splits > 1 && 4608 / splits >= MIN_SPLIT_K, "{splits}");
        }
        // CUDA's tensor cores: a 16×16 matrix-unit tile.
        let (c, _, _) = matmul_f16_config(&TargetLimits::cuda(), 3136, 64, 576);
        assert_eq!(F16Params::from_config(&c).unwrap().mma, 16);
    }

    /// A product over stored operands with no record of its own takes the record of the
    /// same product over views; its own record comes first.
    #[test]
    fn stored_products_take_records_made_over_views() {
        use crate::anchor::AnchorChoice;
        let limits = TargetLimits::cuda();
        let key = |views: Views| AnchorKey {
            template: AnchorTemplate::MatmulF16,
            m: 128,
            n: 3072,
            k: 768,
            batch: 1,
            views,
            winograd: None,
        };
        let space = matmul_f16::space_over_views(&limits);
        let (a, b) = (space[0].clone(), space[1].clone());
        let mut choices = Choices::none();
        choices.insert(
            &key(Views::GEMM),
            AnchorChoice::gemm(a.clone(), 1),
            "tuned".into(),
        );
        let (c, why) = anchor(&limits, &choices, &key(Views::Stored));
        assert_eq!((c.config, why.as_str()), (a, "tuned; recorded over views"));
        choices.insert(
            &key(Views::Stored),
            AnchorChoice::gemm(b.clone(), 1),
            "own".into(),
        );
        let (c, why) = anchor(&limits, &choices, &key(Views::Stored));
        assert_eq!((c.config, why.as_str()), (b, "own"));
        // A transposed product never takes another's record.
        let transposed = Views::Gemm {
            trans_a: false,
            trans_b: true,
        };
        let (_, why) = anchor(&limits, &choices, &key(transposed));
        assert!(!why.contains("tuned"), "{why}");
    }
}

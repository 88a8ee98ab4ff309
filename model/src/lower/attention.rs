//! Attention anchors (`Op::Attention`, which `passes::recognize_attention` makes): one
//! kernel on the attention template (`weft_kernels::attention`), its `q`, `k`, `v`
//! and mask as `[heads, rows, cols]` views of whatever produces them (the projection's
//! slices, reshapes and transposes, fused into the loads) and its epilogue (the heads
//! merged back, a cast) fused into the stores. The config comes from the template's
//! stated rule: matrix units where the operands are f16 and the target has them; where
//! a decode step's few blocks read a long cache, the split-KV rule (the keys in chunks,
//! then their combination, which takes the epilogue: in the attention kernel itself, by
//! the chunk arriving last, where the target has a device-scope fence; else a second
//! kernel — the default, the one-kernel form measured slower: `WEFT_ATTN_COMBINE`).

use weft_codegen_common::TargetLimits;
use weft_graph::op::Attention;
use weft_graph::partition::Group;
use weft_graph::{Graph, Op};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_kernels::attention::{
    AttnParams, Combine, Masking, Operands, describe_split_form, template_split_form,
};

use super::Chooser;
use super::values::{Values, broadcast_index, reindex};
use crate::anchor::Choices;
use crate::error::LowerError;

/// The environment variable that overrides whether split-KV attention's chunk arriving
/// last combines in the attention kernel (`1`, where the target has a device-scope
/// fence) or a second, combining kernel does (`0`); unset, the choices say
/// ([`Choices::split_last`], off by default): a knob for timing the one-kernel form
/// against the two kernels on whole models. The two-kernel form keeps its split rule
/// ([`AttnParams::rule_split`]).
///
/// Off by default: on the H200 (seventh session, TinyLlama-shaped fp16 decode, 4 layers,
/// batch 1, prompt 128, two rounds) the one-kernel form made the step 260.6 µs against
/// 252.0 µs with the combining kernel — the arrival (fence, atomic, barrier) and one
/// block's serial combine on the critical path cost more than a launch in a CUDA graph,
/// as for split products (`weft_kernels::split_last`).
pub const ATTN_COMBINE_ENV: &str = "WEFT_ATTN_COMBINE";

/// How split-KV attention combines its chunks on `limits`: as `WEFT_ATTN_COMBINE` says
/// where it is set, else as `choices` do; any other value of the variable is refused,
/// naming it.
pub(crate) fn combine_form(
    limits: &TargetLimits,
    choices: &Choices,
) -> Result<Combine, LowerError> {
    match std::env::var(ATTN_COMBINE_ENV).as_deref() {
        Err(_) => Ok(Combine::on(limits, choices.split_last())),
        Ok("1") => Ok(Combine::on(limits, true)),
        Ok("0") => Ok(Combine::Kernel),
        Ok(other) => Err(LowerError::Refused(format!(
            "{ATTN_COMBINE_ENV}=`{other}`: 0 (a combining kernel) or 1 (the chunk arriving last combines, where the target has a device-scope fence)"
        ))),
    }
}

/// The environment variable that gives split-KV attention's chunk blocks this many warps
/// (1, 2, 4 or 8) instead of the rule's ([`weft_kernels::attention::SPLIT_WARPS`] where
/// they fit): a knob for timing the decode step's attention on whole models. A config
/// that is no config of the template or does not fit keeps the rule's, the schedule line
/// saying so; any other value is refused, naming the variable.
pub const ATTN_SPLIT_WARPS_ENV: &str = "WEFT_ATTN_SPLIT_WARPS";

/// `WEFT_ATTN_SPLIT_WARPS`, read: `None` where unset.
fn split_warps() -> Result<Option<i64>, LowerError> {
    match std::env::var(ATTN_SPLIT_WARPS_ENV) {
        Err(_) => Ok(None),
        Ok(v) => match v.parse::<i64>() {
            Ok(w @ (1 | 2 | 4 | 8)) => Ok(Some(w)),
            Ok(_) | Err(_) => Err(LowerError::Refused(format!(
                "{ATTN_SPLIT_WARPS_ENV}=`{v}`: 1, 2, 4 or 8 warps a block of split-KV attention"
            ))),
        },
    }
}

/// The attention pass's note where [`decode_unfused`] leaves an attention unfused.
pub const DECODE_UNFUSED: &str = "a decode step's attention over more heads than the split-KV form takes runs faster as two products and a softmax on CUDA";

/// Whether an attention of `(heads, s, t, d)` — a few query rows a head (`s ≤ 64`) over
/// a cache at least four times longer, a decode step — is left unfused on `limits` where
/// the split-KV form refuses it (more heads than an eighth of the multiprocessors). Its
/// fused template then runs a block of ≤ 64 rows a head down the whole cache, and on the
/// H200 in f16 that is slower than the two products and the softmax
/// (`measurements/h200-2026-12-03b`, calls 3 and 4, 4-layer decode steps: a Llama with
/// 32 query heads each its own KV head 270.2 → 246.5 µs unfused, `zoo:llama` at batch 8,
/// 32 groups of 8 rows, 477 → 440 µs). Measured on CUDA in f16 only: elsewhere the rule
/// stays the fused template's.
fn decode_unfused(limits: &TargetLimits, (_, s, t, _): (i64, i64, i64, i64), f16: bool) -> bool {
    limits.name.starts_with("cuda") && f16 && s <= 64 && t >= 4 * s
}

/// Why no attention kernel fits `limits` for the Attention node `node` of `g` with its
/// `q`, `k` and `v` stored as `dtype`, if none does (WebGPU's 16 KiB of workgroup memory
/// at a head size of 64 with f32 tiles): the attention pass then keeps it unfused
/// (through [`super::Lowering`], the pipeline's `TargetQuery`). The same rule
/// [`lower`] schedules with.
pub(crate) fn misfit(
    g: &Graph,
    node: &weft_graph::Node,
    limits: &TargetLimits,
    dtype: DType,
) -> Option<String> {
    let (q, k, v) = (
        *node.inputs.first()?,
        *node.inputs.get(1)?,
        *node.inputs.get(2)?,
    );
    let qs = &g.tensor(q).shape;
    let r = qs.len();
    if r < 2 {
        return None;
    }
    let heads = qs[..r - 2].iter().product::<usize>() as i64;
    let (s, d) = (qs[r - 2] as i64, qs[r - 1] as i64);
    let t = g.tensor(k).shape.get(r - 2).copied()? as i64;
    let dv = g.tensor(v).shape.get(r - 1).copied()? as i64;
    let f16 = dtype == DType::F16;
    let causal = matches!(node.op, Op::Attention(Attention { causal: true, .. }));
    let masking = if causal {
        Masking::Causal
    } else {
        Masking::None
    };
    let hstd = (heads, s, t, d.max(dv));
    let split = AttnParams::rule_split(limits, hstd, f16);
    if decode_unfused(limits, hstd, f16) && split.is_none() {
        return Some(DECODE_UNFUSED.to_string());
    }
    (split.is_none() && AttnParams::rule(limits, hstd, f16, masking).is_none())
        // The pass report prints it (`recognize attention: undone, …`): in words that
        // stay the same from target to target.
        .then(|| "no attention tiling fits the target's shared memory".to_string())
}

/// Lowers the Attention group `group`; the function and how it was scheduled.
pub(crate) fn lower<'g>(
    g: &'g Graph,
    group: &Group,
    attention: &Attention,
    vals: &Values<'g>,
    name: &str,
    chooser: &Chooser,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String), LowerError> {
    let node = &g.nodes[group.root.0];
    let Attention {
        scale,
        causal,
        guard,
    } = *attention;
    let (q, k, v) = (node.inputs[0], node.inputs[1], node.inputs[2]);
    let mask = node.inputs.get(3).copied();
    let qs = g.tensor(q).shape.clone();
    let r = qs.len();
    let lead: Vec<usize> = qs[..r - 2].to_vec();
    let heads = lead.iter().product::<usize>() as i64;
    let (s, d) = (qs[r - 2] as i64, qs[r - 1] as i64);
    let t = g.tensor(k).shape[r - 2] as i64;
    let dv = g.tensor(v).shape[r - 1] as i64;
    let f16 = [q, k, v].iter().all(|&x| g.tensor(x).dtype == DType::F16);
    let operand = if f16 { DType::F16 } else { DType::F32 };
    // `[heads, rows, cols]` of a tensor with `lead` leading dimensions (broadcast where
    // it has fewer: a mask).
    let view = |tag: &str, x, rows: i64, cols: i64, dtype: DType| {
        let shape = g.tensor(x).shape.clone();
        te::compute(tag, &[("z", heads), ("i", rows), ("j", cols)], |ix| {
            let mut at = reindex(&[heads as usize], &lead, &ix[..1]);
            at.extend([ix[1].clone(), ix[2].clone()]);
            vals.at_as(x, &broadcast_index(&shape, &at), dtype)
        })
    };
    let q_view = view("q_view", q, s, d, operand);
    let k_view = view("k_view", k, t, d, operand);
    let v_view = view("v_view", v, t, dv, operand);
    let mask_view = mask.map(|m| view("mask_view", m, s, t, DType::F32));
    let masking = if causal {
        Masking::Causal
    } else {
        Masking::None
    };
    // Split-KV where the rule takes it (a decode step's few blocks over a long cache),
    // else the one-kernel rule.
    let hstd = (heads, s, t, d.max(dv));
    let combine = combine_form(chooser.limits, chooser.choices)?;
    let chosen = match AttnParams::rule_split_form(chooser.limits, hstd, f16, combine) {
        Some((p, splits, why)) => Some((p, splits, why)),
        None => AttnParams::rule(chooser.limits, hstd, f16, masking).map(|(p, why)| (p, 1, why)),
    };
    let Some((mut p, splits, mut why)) = chosen else {
        return Err(LowerError::Refused(format!(
            "no attention tiling fits {}'s {} bytes of shared memory at head size {}",
            chooser.limits.name,
            chooser.limits.max_shared_bytes,
            d.max(dv)
        )));
    };
    if splits > 1
        && let Some(warps) = split_warps()?
    {
        let extra = combine.shared_bytes(p.bq, splits);
        match p.with_split_warps(warps, chooser.limits, d.max(dv), f16, extra) {
            Some(w) => {
                p = w;
                why = format!("{why}; {warps} warps a block by {ATTN_SPLIT_WARPS_ENV}");
            }
            None => why = format!("{why}; {ATTN_SPLIT_WARPS_ENV}={warps} does not fit, the rule's"),
        }
    }
    let y = te::placeholder("y_attn", &[heads, s, dv], DType::F32);
    let y_read = y.clone();
    vals.set_root(
        node.output,
        Box::new(move |ix: &[Expr]| {
            let z = reindex(&lead, &[heads as usize], &ix[..r - 2]);
            let value = y_read.at(&[z[0].clone(), ix[r - 2].clone(), ix[r - 1].clone()]);
            if guard {
                // A row whose every score was -inf sums to 0 and gives NaN: zeros.
                Expr::select(value.clone().ne_(value.clone()), Expr::f32(0.0), value)
            } else {
                value
            }
        }),
    );
    let out = output(vals);
    let ops = Operands {
        q: &q_view,
        k: &k_view,
        v: &v_view,
        mask: mask_view.as_ref(),
        y: &y,
        scale,
        masking: if causal {
            Masking::Causal
        } else {
            Masking::None
        },
    };
    let anchor = template_split_form(name, &ops, &p, splits, combine)?;
    let fused = fuse(&anchor, &out)?;
    Ok((
        fused.func,
        format!("{} ({why})", describe_split_form(&p, splits, combine)),
    ))
}

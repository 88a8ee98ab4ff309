//! How many blocks of a skinny product a multiprocessor the CUDA compiler is asked to
//! leave room for (`__launch_bounds__(threads, n)`): the gemv lowerings' (plain and
//! gated) shared rule.

use weft_kernels::gemv::GemvParams;

use crate::error::LowerError;

/// The environment variable that overrides how many blocks of each skinny product a
/// multiprocessor the CUDA compiler is asked to leave room for (`__launch_bounds__(threads,
/// n)`). By rule (unset or empty) `wave` for one-row products where the target's compiler
/// takes a register cap and does not hoist an unrolled loop's loads by itself (CUDA; not
/// HIP, whose LLVM hoists them already), nothing elsewhere. Not past one row: the cap
/// leaves a wave of gate/up's or the head's blocks 40 or 32 registers a thread, which
/// one row's sums fit and more rows' do not (sm_90, thirteenth session: the head spills
/// from 2 rows, gate/up from 3; asked at batch 8 the 22-layer step ran 12.9 ms instead
/// of 2.5). `wave` asks for the blocks one wave needs, at any row count:
/// `⌈blocks / multiprocessors⌉` up to what fits 2048 threads (1 for TinyLlama's o, q/k/v
/// and down, 3 for gate/up). Without it ptxas keeps the rule's configs at 32 registers and
/// issues one to three of a step's 16-byte loads before the products that use the first
/// (sm_90 SASS, twelfth session); asked, it issues every load of a step first (45–61
/// registers). Measured on the H200 (thirteenth session, TinyLlama-shaped fp16 decode,
/// batch 1, three alternated rounds): the 4-layer step 219.2 → 210.5 µs, the 22-layer
/// 996 → 950 µs with the head's one wave. `0` asks nothing, `N` asks for `N`; anything
/// else is refused.
pub const GEMV_RESIDENT_ENV: &str = "WEFT_GEMV_RESIDENT";

/// The blocks a multiprocessor `WEFT_GEMV_RESIDENT` asks ptxas to leave room for, for a
/// skinny product of `blocks` blocks under `p`, with the schedule line's words.
pub(super) fn gemv_resident(
    limits: &weft_codegen_common::TargetLimits,
    p: &GemvParams,
    m: i64,
    blocks: i64,
) -> Result<Option<(u32, String)>, LowerError> {
    let text = std::env::var(GEMV_RESIDENT_ENV).unwrap_or_default();
    let fit = (2048 / p.threads).max(1);
    let sms = limits.multiprocessors.max(1) as i64;
    let wave = ((blocks + sms - 1) / sms).clamp(1, fit);
    let resident = match text.as_str() {
        "" if m == 1 && limits.register_cap && !limits.hoists_unrolled_loads => {
            return Ok(Some((
                wave as u32,
                format!(
                    "the CUDA compiler asked to leave room for {wave} block(s) a multiprocessor (rule: one wave's, so that it issues a step's loads before their products)"
                ),
            )));
        }
        "" | "0" => return Ok(None),
        "wave" => wave,
        n => match n.parse::<i64>() {
            Ok(v) if (1..=32).contains(&v) => v,
            _ => {
                return Err(LowerError::Refused(format!(
                    "{GEMV_RESIDENT_ENV}=`{text}`: 0 (ask nothing), `wave` or a number of blocks from 1 to 32"
                )));
            }
        },
    };
    let why = format!(
        "the CUDA compiler asked to leave room for {resident} block(s) a multiprocessor ({GEMV_RESIDENT_ENV}={text})"
    );
    Ok(Some((resident as u32, why)))
}

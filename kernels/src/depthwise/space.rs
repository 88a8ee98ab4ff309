//! The depthwise template's schedule space: tiles of whole warps, drawn from shapes that
//! suit small and large images alike, kept where the target can run them at the largest
//! kernel and stride the op takes. Nothing depends on the image size.

use super::DepthwiseParams;
use crate::conv_views::ConvLayout;
use crate::{Config, within};
use weft_codegen_common::TargetLimits;

/// Output tiles of a block (rows × columns): square and wide, 4×8 to 16×32.
const TILES: [[i64; 2]; 6] = [[4, 8], [8, 8], [4, 16], [8, 16], [16, 16], [8, 32]];
/// Outputs per thread: one, a pair along a row, a 2×2 square, four along a row.
const PER_THREAD: [[i64; 2]; 4] = [[1, 1], [1, 2], [2, 2], [1, 4]];
/// Channel planes per block.
const CHANNELS: [i64; 4] = [1, 2, 4, 8];
/// The largest kernel and stride the space must fit in shared memory and registers.
const WORST: (i64, i64) = (7, 2);
/// Threads per block worth trying: one to eight warps.
const THREADS: std::ops::RangeInclusive<i64> = 32..=256;

fn fits(p: &DepthwiseParams, r: &TargetLimits) -> bool {
    let (k, s) = WORST;
    let t = p.threads();
    THREADS.contains(&t)
        && t % 32 == 0
        && within(t, r.max_threads_per_block)
        && within(p.shared_bytes(k, s), r.max_shared_bytes)
        && within(p.registers(k, s), r.max_registers)
}

/// Every config that `resources` can run, in a fixed order: each tile, thread tile and
/// channel count with the input in shared memory (unrolled and serial loops) and, for
/// one output per thread or a pair, in registers.
///
/// ```
/// use weft_codegen_common::TargetLimits;
/// use weft_kernels::depthwise;
///
/// let cuda = depthwise::space(&TargetLimits::cuda());
/// assert!(cuda.len() <= 200 && cuda.len() > 50);
/// assert!(depthwise::space(&TargetLimits::webgpu_default()).len() <= cuda.len());
/// ```
pub fn space(resources: &TargetLimits) -> Vec<Config> {
    let mut out = Vec::new();
    for tile in TILES {
        for per_thread in PER_THREAD {
            for channels in CHANNELS {
                for (shared, unroll) in [(true, true), (true, false), (false, true)] {
                    // A register window of more than two outputs re-reads too little to
                    // pay for its registers.
                    if !shared && per_thread[0] * per_thread[1] > 2 {
                        continue;
                    }
                    let p = DepthwiseParams {
                        tile,
                        per_thread,
                        channels,
                        shared,
                        unroll,
                    };
                    if fits(&p, resources) {
                        out.push(p.config());
                    }
                }
            }
        }
    }
    // The NHWC rule's configs (wider channel groups than the planes above) wherever the
    // rule may take one: it does only where it fits the convolution at hand (a window of
    // 3, 5 or 7 at stride 1 or 2), and a tuning run builds and times it there too.
    let windows = [(3, 1), (3, 2), (5, 1), (5, 2), (7, 1), (7, 2)];
    for (p, _) in nhwc_candidates(resources.register_cap) {
        let c = p.config();
        let runs = windows.iter().any(|&(k, s)| fits_at(&p, resources, k, s));
        if runs && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The NHWC rule's configs in the order it tries them, with why: 32 channels a block
/// (one warp across consecutive channels of a pixel: coalesced loads and stores), a 4×8
/// output tile, four outputs along a row per thread (the window re-read from shared
/// memory four times over); 16 channels where that tile does not fit; a window in
/// registers where neither does.
///
/// Where the target's compiler takes a register cap (CUDA), the window in registers comes
/// first: timed on the H200 (2026-11-30, every config of the space at ConvNeXt-tiny's
/// four 7×7 layers, batch 1 and 8, `measurements/h200-2026-11-30`), a 2×8 tile of 32
/// channels, four outputs along a row a thread, each thread's 7×10 window and 49 weights
/// in registers, ran 4.1, 5.1, 4.9, 4.2 µs at batch 1 (56² × 96 to 7² × 768) and 21.4,
/// 16.8, 10.1, 5.6 µs at batch 8, against 8.6, 8.0, 6.3, 4.7 and 36.7, 24.4, 14.2, 7.8
/// for the shared 4×8 tile: the fastest config of the space at five of the eight, within
/// 0.89 of each shape's fastest in geometric mean (the shared tile 0.60). Its neighbours'
/// windows overlap in L1 instead of being staged and read behind a barrier. Elsewhere
/// (Vulkan, Metal, HIP, WebGPU) the order is unmeasured and stays as it was.
fn nhwc_candidates(registers_first: bool) -> [(DepthwiseParams, &'static str); 3] {
    let nhwc = |channels: i64, tile: [i64; 2], shared: bool| DepthwiseParams {
        tile,
        per_thread: [1, 4],
        channels,
        shared,
        unroll: true,
    };
    let shared_32 = (
        nhwc(32, [4, 8], true),
        "NHWC rule: 32 channels a warp, tile in shared memory",
    );
    let shared_16 = (
        nhwc(16, [4, 8], true),
        "NHWC rule: 16 channels, tile in shared memory (32 do not fit)",
    );
    if registers_first {
        return [
            (
                nhwc(32, [2, 8], false),
                "NHWC rule: 32 channels a warp, window in registers (the faster on CUDA)",
            ),
            shared_32,
            shared_16,
        ];
    }
    [
        shared_32,
        shared_16,
        (
            nhwc(32, [2, 8], false),
            "NHWC rule: 32 channels a warp, window in registers (no tile fits)",
        ),
    ]
}

/// Without a tuning record: an 8×8 tile of 4 channels, 256 threads of one output each,
/// the input in shared memory, loops unrolled (the config closest to the `v4` schedule
/// that also fits a 7×7 image), or the space's first config where that does not fit.
pub fn default_config(resources: &TargetLimits) -> Config {
    let p = DepthwiseParams {
        tile: [8, 8],
        per_thread: [1, 1],
        channels: 4,
        shared: true,
        unroll: true,
    };
    if fits(&p, resources) {
        return p.config();
    }
    space(resources).into_iter().next().unwrap_or(p.config())
}

/// Whether `p` runs on `r` at kernel `k`, stride `s` (not at the space's worst case).
fn fits_at(p: &DepthwiseParams, r: &TargetLimits, k: i64, s: i64) -> bool {
    let t = p.threads();
    t % 32 == 0
        && within(t, r.max_threads_per_block)
        && within(p.shared_bytes(k, s), r.max_shared_bytes)
        && within(p.registers(k, s), r.max_registers)
}

/// The config the rule takes for a `k × k` window at `stride` over an input lying as
/// `layout`, and why. NCHW: [`default_config`]. NHWC: 32 channels a block (one warp
/// across consecutive channels of a pixel: coalesced loads and stores), a 4×8 output
/// tile, four outputs along a row per thread (the window re-read from shared memory
/// four times over), or, where the tile does not fit the target's shared memory at this
/// kernel and stride, 16 channels, then a window in registers; on CUDA the window in
/// registers first (see `nhwc_candidates`).
pub fn rule_config(
    resources: &TargetLimits,
    k: i64,
    stride: i64,
    layout: ConvLayout,
) -> (Config, &'static str) {
    if layout == ConvLayout::Nchw {
        return (default_config(resources), "default config");
    }
    for (p, why) in nhwc_candidates(resources.register_cap) {
        if fits_at(&p, resources, k, stride) {
            return (p.config(), why);
        }
    }
    (
        default_config(resources),
        "default config (no NHWC config fits)",
    )
}

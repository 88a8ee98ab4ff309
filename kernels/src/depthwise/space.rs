//! The depthwise template's schedule space: tiles of whole warps, drawn from shapes that
//! suit small and large images alike, kept where the target can run them at the largest
//! kernel and stride the op takes. Nothing depends on the image size.

use super::DepthwiseParams;
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
    out
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

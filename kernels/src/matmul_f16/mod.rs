//! The fp16 matmul template: `C[m, n] = A[m, k] @ B[k, n]` with fp16 inputs and output
//! and fp32 accumulation, any M, N, K, on the matrix units of every backend.
//!
//! A block of `wm × wn` warps computes a `BM × BN` tile of C, `BM = wm·fm·F` and
//! `BN = wn·fn·F`, where `F` is the matrix units' tile (`mma`: 16 for CUDA's
//! m16n16k16 tiles (two `mma.sync.m16n8k16`) and 16×16 cooperative matrices, 8 for
//! Metal's simdgroup matrices).
//! Each warp holds `fm × fn` accumulator fragments (a warp is the worker of the task
//! mapping `spatial(wm, wn)`, seed 002's figure 13):
//!
//! ```text
//! for ko in range(K / BK):                       # double-buffered, one barrier per step
//!     A_ldg, B_ldg = A[m0:, ko+1], B[ko+1, n0:]  # next tile, predicated, zero outside
//!     for kk in T.unroll(BK / F):
//!         a[i] = T.tvm_load_matrix_sync(A_smem[s, wrow + i·F, kk·F])   i < fm
//!         b[j] = T.tvm_load_matrix_sync(B_smem[s, kk·F, wcol + j·F])   j < fn
//!         acc[i·fn + j] = T.tvm_mma_sync(a[i], b[j], acc[i·fn + j])
//!     A_smem[s'], B_smem[s'] = A_ldg, B_ldg
//! ```
//!
//! Two variations for the tuner: `cp = 1` copies tiles global → shared with `cp.async`
//! into `st` = 3 or 4 stages (tile `ko + st - 1` is fetched while `ko` computes, and
//! read `st - 1` barriers later), and `fb = 2` keeps two sets of fragments, pipelined
//! across tiles: sub-step `kk + 1`'s fragments load while `kk`'s multiply, and the
//! tile's last sub-step multiplies after the barrier, while the next tile's first
//! fragments load (as CUTLASS's sm80 main loops do):
//!
//! ```text
//! a[0], b[0] = fragments of tile 0, sub-step 0
//! for ko in range(K / BK):
//!     fetch tile ko + st - 1 (cp = 1) or ko + 1 into registers (cp = 0)
//!     for kk in T.unroll(BK / F - 1):
//!         a[(kk+1) % 2], b[(kk+1) % 2] = fragments of tile ko, sub-step kk + 1
//!         acc += a[kk % 2] · b[kk % 2]
//!     (cp = 0: store the registers to the other stage); barrier
//!     a[0], b[0] = fragments of tile ko + 1, sub-step 0
//!     acc += a[1] · b[1]
//! ```
//!
//! (shown for an even number of sub-steps; with one, `BK` = `F`, tile `ko` uses set
//! `ko % 2` throughout and the loop is unrolled by two so that the set is a constant).
//!
//! The epilogue:
//!
//! ```text
//! for each accumulator: store it to the warp's staging tile, then 32 lanes write it to
//! C (converted to fp16, tested against the matrix's edges)
//! ```
//!
//! Edges are handled where the data enters (zero-filled loads) and leaves (predicated
//! stores): fragments only ever see full tiles in shared memory, so no size is wrong —
//! the wrong results for sizes that are not multiples of 16 of a direct `wmma` port
//! cannot happen here. Shared rows are padded by 8 halves (16 bytes) against bank
//! conflicts, which keeps every tile row 16-byte aligned as `ldmatrix` requires.
//!
//! With `mma = 0` the same tiles are multiplied on CUDA cores (each lane a `4·fm × 2·fn`
//! block of C, f32 accumulators): the configuration for targets without matrix units
//! (plain WebGPU, an adapter without cooperative matrices), so the op runs everywhere.

pub mod hopper;
mod hopper_views;
mod kernel;
mod pick;
mod space;
pub mod vk_split;
pub mod vk_views;
pub mod wide_views;

pub use kernel::{template, template_over};
pub use pick::{
    DEEP_STEP, DEEP_STEPS_SWITCH, MAX_RULE_THREADS, MAX_RULE_THREADS_ELEMENTWISE, Switches,
    VIEWS_MIN_PART, WGMMA_RULE_MAX_TILE, WGMMA_RULE_MIN_ROWS, WGMMA_RULE_STAGES,
    WGMMA_VIEWS_MIN_TILES, deep_steps_asked, op_rule, pipelines_fragments, rule_config,
    rule_config_switched, rule_config_with, runs_ahead, tiles, views_rule_elementwise,
    views_rule_elementwise_with,
};
pub use space::{GROUP, default_config, default_config_over_views, space, space_over_views};

use weft_ir::dtype::DType;
use weft_ir::func::Func;

use weft_codegen_common::TargetLimits;

use super::{BuildError, Config, split_k};

/// The template's parameters, in order, with their meaning.
pub const PARAMS: &[(&str, &str)] = &[
    (
        "mma",
        "matrix-unit tile: 16 (m16n16k16), 8 (m8n8k8), 0 (CUDA cores, no matrix units)",
    ),
    ("wm", "warps of a block along m"),
    ("wn", "warps of a block along n"),
    ("fm", "fragments of a warp along m"),
    ("fn", "fragments of a warp along n"),
    ("bk", "k extent of a block's step (16, 32 or 64)"),
    (
        "g",
        "block swizzle: tile rows per group (1 = row-major order)",
    ),
    (
        "vec",
        "halves per global load: 8 (16 bytes, CUDA's default) or 4 (8 bytes; WGSL's default, whose scalar shared stores conflict less)",
    ),
    (
        "cp",
        "global -> shared copies: 1 asynchronous (CUDA cp.async on sm_80+, no register staging), 0 staged through registers",
    ),
    (
        "st",
        "shared stages of the A and B tiles: 2 (double buffering), 3 or 4 (with cp = 1: that many minus one tiles in flight)",
    ),
    (
        "fb",
        "fragment sets in registers: 1, or 2 (the next k sub-step's fragments load while this one's multiply)",
    ),
    (
        "cc",
        "global -> shared copies through fragments: 1 where the tiles divide the matrices (each warp loads operand tiles with the matrix units' loads and stores them whole: WGSL's coopLoadT/coopStoreT instead of one f16 store at a time), 0 element-wise",
    ),
    (
        "wg",
        "Hopper's path (cuda -arch=sm_90a): 1 or 2 warpgroups multiplying with wgmma from shared tiles that TMA copies into `st` stages (then wm = 4·wg, wn = 1, fm m64 tiles per warpgroup, n = 16·fn, bk = 64); 0 off",
    ),
    (
        "ku",
        "CUDA cores (mma = 0): k sub-steps unrolled at once, a divisor of bk (absent: all bk of them); fewer keep fewer shared-memory loads in flight, which hipcc otherwise hoists into spills",
    ),
    (
        "pf",
        "k steps the global loads run ahead through registers: 1 (absent), or 2 (two sets of staging registers, the k loop unrolled by two; with cp = 0, cc = 0)",
    ),
];

/// The parameters of the ops built on the template (`matmul-f16` and the fp16
/// implicit-GEMM convolutions): the template's and split-K's `sk`.
pub const OP_PARAMS: &[(&str, &str)] = &[
    PARAMS[0],
    PARAMS[1],
    PARAMS[2],
    PARAMS[3],
    PARAMS[4],
    PARAMS[5],
    PARAMS[6],
    PARAMS[7],
    PARAMS[8],
    PARAMS[9],
    PARAMS[10],
    PARAMS[11],
    PARAMS[12],
    PARAMS[13],
    PARAMS[14],
    split_k::PARAM,
];

/// `configs` and their tiles of at least 64×64 split in 2, 4, 8 and 16 parts
/// ([`split_k`]), of each tile the variants with a k step of 32 and one set of
/// fragments; none that copies through fragments (the parts are views of the operands,
/// and those copies read placeholders only).
/// `configs` and their split forms: mma.sync tiles with k steps of 32 and one set of
/// fragments, and the wgmma tiles, whose parts are k ranges of their ring of stages
/// (filled by TMA, or over views by the threads' gathers).
fn with_splits(configs: Vec<Config>) -> Vec<Config> {
    split_k::with_splits(configs, |c| {
        F16Params::from_config(c)
            .ok()
            .filter(|p| p.warpgroups > 0 || (!p.coop_copy && p.bk == 32 && p.frag_buffers == 1))
            .map(|p| (p.block_m(), p.block_n()))
    })
}

/// The space of `matmul-f16`: [`space`] with splits.
pub fn op_space(limits: &TargetLimits) -> Vec<Config> {
    with_splits(space(limits))
}

/// The space of the fp16 implicit-GEMM convolutions: [`space_over_views`] with splits.
pub fn op_space_over_views(limits: &TargetLimits) -> Vec<Config> {
    with_splits(space_over_views(limits))
}

/// [`describe`] with the split.
pub fn op_describe(config: &Config) -> Result<String, String> {
    split_k::describe(config, describe)
}

/// How [`describe`] says a Hopper config's stages are filled (TMA copies stored
/// operands).
pub const TMA_FILLED: &str = "(TMA-filled)";

/// What replaces [`TMA_FILLED`] where the operands are views, which the threads gather.
pub const GATHERED: &str = "(thread-gathered, cp.async)";

/// [`op_describe`] of a config over views (an implicit GEMM), where Hopper's tiles are
/// gathered by the threads rather than copied by TMA.
pub fn op_describe_over_views(config: &Config) -> Result<String, String> {
    let text = op_describe(config)?;
    Ok(if config.get("wg").unwrap_or(0) > 0 {
        text.replace(TMA_FILLED, GATHERED)
    } else {
        text
    })
}

/// Whether a config can pay at the product `m × n × k` ([`split_k::pays`]); a Hopper
/// config only where TMA can copy the operands.
pub fn op_pays(m: i64, n: i64, k: i64, config: &Config) -> bool {
    let mnk = (m, n, k);
    let hopper = split_k::parts(config)
        .ok()
        .and_then(|(rest, _)| F16Params::from_config(&rest).ok())
        .is_some_and(|p| p.warpgroups > 0);
    if hopper && hopper::unfit(mnk.1, mnk.2).is_some() {
        return false;
    }
    split_k::config_pays(mnk, config, |c| {
        F16Params::from_config(c)
            .ok()
            .map(|p| (p.block_m(), p.block_n()))
    })
}

impl split_k::Anchor for F16Params {
    fn template_over(
        &self,
        name: &str,
        a: &weft_ir::expr::Buffer,
        b: &weft_ir::expr::Buffer,
        c: &weft_ir::expr::Buffer,
    ) -> Result<Func, weft_ir::template::TemplateError> {
        template_over(name, a, b, c, self)
    }

    fn bk(&self) -> i64 {
        self.bk
    }

    fn splits_in_place(&self) -> bool {
        self.warpgroups > 0
    }

    fn sums_last(&self) -> bool {
        self.warpgroups == 0
    }

    fn template_over_last(
        &self,
        name: &str,
        a: &weft_ir::expr::Buffer,
        b: &weft_ir::expr::Buffer,
        partial: &weft_ir::expr::Buffer,
        last: crate::split_last::LastPart,
    ) -> Result<Func, weft_ir::template::TemplateError> {
        kernel::template_over_last(name, a, b, partial, last, self)
    }
}

/// A config of the fp16 matmul template, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct F16Params {
    /// The matrix-unit tile `F` (0: CUDA cores).
    pub mma: i64,
    pub warps: [i64; 2],
    pub frags: [i64; 2],
    pub bk: i64,
    pub group: i64,
    /// Halves per global load where the rows allow it (8 or 4).
    pub vec: i64,
    /// Copy tiles global → shared asynchronously (`cp.async`) instead of through
    /// registers.
    pub async_copy: bool,
    /// Shared buffers of the A and B tiles (2; 3 or 4 with `async_copy`).
    pub stages: i64,
    /// Sets of A and B fragments in registers (1 or 2).
    pub frag_buffers: i64,
    /// Copy placeholder tiles global → shared through operand fragments (where the tiles
    /// divide the matrices; element-wise elsewhere).
    pub coop_copy: bool,
    /// Warpgroups multiplying with `wgmma` from TMA-filled stages (Hopper); 0 off.
    pub warpgroups: i64,
    /// On CUDA cores (`mma` = 0), the k sub-steps of a block's step unrolled at once
    /// (a divisor of `bk`; `bk`: the whole step). LLVM's AMDGPU backend hoists every
    /// shared-memory load of an unrolled loop ahead of the multiplies, so a whole k step
    /// of 32 holds 32 · (rows + columns) loaded values: a 4×4-accumulator thread
    /// compiled to 242 VGPRs for gfx90a and spilled for gfx1100, and to 47–63 with 1 to
    /// 4 sub-steps (hipcc 5.2).
    pub k_unroll: i64,
    /// K steps the register-staged global loads run ahead of the multiplies (1 or 2):
    /// with 2, tile `ko + 2` is loaded while tile `ko` multiplies and tile `ko + 1` waits
    /// in the other set of staging registers, so a load has two steps to arrive — for
    /// products with one block a multiprocessor, which no other block's work hides.
    pub prefetch: i64,
}

impl F16Params {
    /// The nominal tile: `F`, or 16 on CUDA cores (the warp tile keeps its shape).
    pub fn tile(&self) -> i64 {
        if self.mma == 0 { 16 } else { self.mma }
    }
    pub fn block_m(&self) -> i64 {
        self.warps[0] * self.frags[0] * self.tile()
    }
    pub fn block_n(&self) -> i64 {
        self.warps[1] * self.frags[1] * self.tile()
    }
    pub fn threads(&self) -> i64 {
        self.warps[0] * self.warps[1] * 32
    }

    /// Shared bytes: the stages of the A and B tiles (padded by 8 halves per row) and,
    /// with matrix units, one f32 staging tile per warp.
    pub fn shared_bytes(&self) -> i64 {
        if self.warpgroups > 0 {
            // Stages of 64-wide k tiles (no padding: swizzled), the f32 staging tiles laid
            // over them where they fit (else beside), the mbarriers and the 1024-byte
            // alignment of the tiles.
            let stage = (self.block_m() + self.block_n()) * hopper::BLOCK_K * 2;
            let ring = self.stages * stage;
            let staging = self.warpgroups * 64 * (self.block_n() + 4) * 4;
            let tiles = if staging <= ring {
                ring
            } else {
                ring + staging
            };
            return tiles + 8 * self.stages + 2048;
        }
        let stage = (self.block_m() * (self.bk + 8) + self.bk * (self.block_n() + 8)) * 2;
        let tiles = self.stages * stage;
        let f = self.tile();
        let staging = if self.mma == 0 {
            0
        } else {
            self.warps[0] * self.warps[1] * f * (f + 4) * 4
        };
        tiles + staging
    }

    /// Accumulator registers per thread (f32).
    pub fn accumulators(&self) -> i64 {
        if self.warpgroups > 0 {
            return self.frags[0] * self.block_n() / 2;
        }
        let f = self.tile();
        self.frags[0] * self.frags[1] * f * f / 32
    }

    pub fn config(&self) -> Config {
        let v = [
            self.mma,
            self.warps[0],
            self.warps[1],
            self.frags[0],
            self.frags[1],
            self.bk,
            self.group,
            self.vec,
            self.async_copy as i64,
            self.stages,
            self.frag_buffers,
            self.coop_copy as i64,
            self.warpgroups,
        ];
        let mut config = Config::of(PARAMS, v);
        // Written only where it is not the whole step, so that the configs of targets
        // with matrix units (and the records of before `ku`) read as they did.
        if self.k_unroll != self.bk {
            config.0.push(("ku".to_string(), self.k_unroll));
        }
        if self.prefetch != 1 {
            config.0.push(("pf".to_string(), self.prefetch));
        }
        config
    }

    /// The rows and columns of the warp tile each CUDA-core lane accumulates (`mma` = 0:
    /// lanes of 4 × 8 over 16 × 16 nominal fragments).
    pub fn lane_tile(&self) -> (i64, i64) {
        (self.frags[0] * 16 / 4, self.frags[1] * 16 / 8)
    }

    /// Reads and checks a config.
    pub fn from_config(config: &Config) -> Result<F16Params, BuildError> {
        let err = |reason: String| config.invalid(reason);
        config.known(PARAMS, "matmul-f16")?;
        let get = |name: &str| config.value(name);
        let p = F16Params {
            mma: get("mma")?,
            warps: [get("wm")?, get("wn")?],
            frags: [get("fm")?, get("fn")?],
            bk: get("bk")?,
            group: get("g")?,
            // Configs recorded before `vec` existed loaded 8 halves where they could.
            vec: config.get("vec").unwrap_or(8),
            // Configs recorded before `cp` existed staged through registers.
            async_copy: config.get("cp").unwrap_or(0) == 1,
            // Configs recorded before `st` existed double-buffered.
            stages: config.get("st").unwrap_or(2),
            // Configs recorded before `fb` existed loaded fragments as they used them.
            frag_buffers: config.get("fb").unwrap_or(1),
            // Configs recorded before `cc` existed copied element by element.
            coop_copy: config.get("cc").unwrap_or(0) == 1,
            // Configs recorded before `wg` existed fed mma.sync.
            warpgroups: config.get("wg").unwrap_or(0),
            k_unroll: config.get("ku").unwrap_or(get("bk")?),
            prefetch: config.get("pf").unwrap_or(1),
        };
        if p.k_unroll != p.bk && (p.mma != 0 || p.warpgroups != 0) {
            return Err(err(format!(
                "`ku` = {} applies to CUDA-core configs (`mma` = 0); matrix-unit configs \
                 unroll their whole k step",
                p.k_unroll
            )));
        }
        if p.k_unroll < 1 || p.bk % p.k_unroll != 0 {
            return Err(err(format!(
                "`ku` = {} must divide `bk` = {}",
                p.k_unroll, p.bk
            )));
        }
        if ![1, 2].contains(&p.prefetch) {
            return Err(err(format!("`pf` = {} must be 1 or 2", p.prefetch)));
        }
        if p.prefetch == 2 && (p.async_copy || p.coop_copy || p.warpgroups != 0) {
            return Err(err(
                "`pf` = 2 runs register-staged loads two steps ahead: it needs `cp` = 0, `cc` = 0 and `wg` = 0"
                    .to_string(),
            ));
        }
        if p.warpgroups != 0 {
            return p.check_hopper(config);
        }
        if let Some(cc) = config.get("cc").filter(|c| ![0, 1].contains(c)) {
            return Err(err(format!("`cc` = {cc} must be 0 or 1")));
        }
        if let Some(cp) = config.get("cp").filter(|c| ![0, 1].contains(c)) {
            return Err(err(format!("`cp` = {cp} must be 0 or 1")));
        }
        if ![1, 2].contains(&p.frag_buffers) {
            return Err(err(format!("`fb` = {} must be 1 or 2", p.frag_buffers)));
        }
        if !(2..=4).contains(&p.stages) {
            return Err(err(format!("`st` = {} must be 2, 3 or 4", p.stages)));
        }
        if p.stages > 2 && !p.async_copy {
            return Err(err(format!(
                "`st` = {} needs `cp` = 1: register staging double-buffers only",
                p.stages
            )));
        }
        if ![0, 8, 16].contains(&p.mma) {
            return Err(err(format!("`mma` = {} must be 0, 8 or 16", p.mma)));
        }
        let pow2 = |v: i64| v > 0 && v & (v - 1) == 0;
        for (name, v) in [("wm", p.warps[0]), ("wn", p.warps[1]), ("fn", p.frags[1])] {
            if !pow2(v) || v > 8 {
                return Err(err(format!("`{name}` = {v} must be 1, 2, 4 or 8")));
            }
        }
        // Three fragments along m: block tiles of 48·wm rows, so that a GEMM whose rows
        // are not a power of two fills the GPU in one wave (25088 rows of a ResNet-50
        // conv: 131 tiles of 192 for 132 SMs).
        if !(pow2(p.frags[0]) || p.frags[0] == 3) || p.frags[0] > 8 {
            return Err(err(format!(
                "`fm` = {} must be 1, 2, 3, 4 or 8",
                p.frags[0]
            )));
        }
        if ![16, 32, 64].contains(&p.bk) {
            return Err(err(format!("`bk` = {} must be 16, 32 or 64", p.bk)));
        }
        if ![4, 8].contains(&p.vec) {
            return Err(err(format!("`vec` = {} must be 4 or 8", p.vec)));
        }
        if p.group < 1 {
            return Err(err(format!("`g` = {} must be at least 1", p.group)));
        }
        if p.coop_copy {
            if p.mma == 0 || p.async_copy {
                return Err(err(
                    "`cc` = 1 copies through matrix fragments: it needs `mma` > 0 and `cp` = 0"
                        .to_string(),
                ));
            }
            // Every warp copies as many fragment tiles of each operand as the others.
            let warps = p.warps[0] * p.warps[1];
            let f = p.mma;
            for (name, rows, cols) in [("A", p.block_m(), p.bk), ("B", p.bk, p.block_n())] {
                let tiles = (rows / f) * (cols / f);
                if tiles % warps != 0 {
                    return Err(err(format!(
                        "`cc` = 1: the {rows}x{cols} {name} tile is {tiles} fragments, not a \
                         multiple of the {warps} warps"
                    )));
                }
            }
        }
        if p.threads() > 1024 {
            return Err(err(format!(
                "{} threads per block (wm * wn * 32); at most 1024",
                p.threads()
            )));
        }
        Ok(p)
    }
}

impl F16Params {
    /// The rules between parameters of a Hopper config (`wg` > 0).
    fn check_hopper(self, config: &Config) -> Result<F16Params, BuildError> {
        let p = self;
        let err = |reason: String| Err(config.invalid(reason));
        if ![1, 2].contains(&p.warpgroups) {
            return err(format!("`wg` = {} must be 0, 1 or 2", p.warpgroups));
        }
        let expect = [
            ("mma", p.mma, 16),
            ("wm", p.warps[0], 4 * p.warpgroups),
            ("wn", p.warps[1], 1),
            ("bk", p.bk, hopper::BLOCK_K),
            ("cp", p.async_copy as i64, 0),
            ("fb", p.frag_buffers, 1),
            ("cc", p.coop_copy as i64, 0),
        ];
        if let Some((name, v, want)) = expect.iter().find(|(_, v, want)| v != want) {
            return err(format!(
                "`wg` = {} (wgmma) needs `{name}` = {want}, not {v}",
                p.warpgroups
            ));
        }
        if ![1, 2].contains(&p.frags[0]) {
            return err(format!(
                "`wg` > 0: `fm` = {} m64 tiles must be 1 or 2",
                p.frags[0]
            ));
        }
        if ![4, 8, 16].contains(&p.frags[1]) {
            return err(format!(
                "`wg` > 0: `fn` = {} must be 4, 8 or 16 (wgmma n = 64, 128, 256)",
                p.frags[1]
            ));
        }
        if p.accumulators() > 128 {
            return err(format!(
                "`wg` > 0: {} accumulator registers a thread (fm · 8 · fn); at most 128",
                p.accumulators()
            ));
        }
        if !(2..=6).contains(&p.stages) {
            return err(format!("`wg` > 0: `st` = {} must be 2 to 6", p.stages));
        }
        if p.group < 1 {
            return err(format!("`g` = {} must be at least 1", p.group));
        }
        Ok(p)
    }
}

/// `128x128x32 tile, 256 threads, m16n16k16 fragments 4x2 per warp`.
pub fn describe(config: &Config) -> Result<String, String> {
    let p = F16Params::from_config(config).map_err(|e| e.to_string())?;
    if p.warpgroups > 0 {
        return Ok(format!(
            "{}x{}x{} tile, {} threads, wgmma m64n{}k16 {} per warpgroup, {} stages (TMA-filled), {} B shared",
            p.block_m(),
            p.block_n(),
            p.bk,
            p.threads(),
            p.block_n(),
            p.frags[0],
            p.stages,
            p.shared_bytes()
        ));
    }
    let unit = match p.mma {
        0 => "CUDA cores".to_string(),
        f => format!("m{f}n{f}k{f} fragments"),
    };
    Ok(format!(
        "{}x{}x{} tile, {} threads, {unit} {}x{} per warp{}, {}-byte loads{}, {} B shared",
        p.block_m(),
        p.block_n(),
        p.bk,
        p.threads(),
        p.frags[0],
        p.frags[1],
        match (p.frag_buffers, p.k_unroll) {
            (2, _) => " (two sets)".to_string(),
            (_, ku) if ku != p.bk => format!(", k unrolled by {ku}"),
            _ => String::new(),
        },
        2 * p.vec,
        match (p.async_copy, p.stages, p.coop_copy) {
            (false, _, false) => String::new(),
            (false, _, true) => " (copied through fragments)".to_string(),
            (true, 2, _) => " (cp.async)".to_string(),
            (true, st, _) => format!(" (cp.async, {st} stages)"),
        } + if p.prefetch == 2 {
            " two steps ahead"
        } else {
            ""
        },
        p.shared_bytes()
    ))
}

/// Builds the fp16 product `C[m, n] = A[m, k] @ B[k, n]` with an [`OP_PARAMS`] `config`
/// (split where it has `sk`: f32 partials, rounded to fp16 once, after the sum).
pub fn build(m: i64, n: i64, k: i64, config: &Config) -> Result<Func, BuildError> {
    let (rest, sk) = split_k::parts(config)?;
    let p = F16Params::from_config(&rest)?;
    if p.warpgroups > 0
        && let Some(why) = hopper::unfit(n, k)
    {
        return Err(config.invalid(why));
    }
    if sk == 1 {
        return Ok(template(m, n, k, &p)?);
    }
    split_k::product_op("matmul_f16", [m, n, k], DType::F16, &p, sk).map_err(|e| config.invalid(e))
}

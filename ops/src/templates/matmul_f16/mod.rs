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
mod space;

pub use kernel::{template, template_over};
pub use space::{default_config, default_config_over_views, space, space_over_views};

use weft_ir::dtype::DType;
use weft_ir::func::Func;

use weft_codegen_common::TargetLimits;

use super::{BuildError, Config, TemplateSpec, rule, split_k};
use crate::Shape;

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

/// The template registered on the `matmul-f16` op.
pub const SPEC: TemplateSpec = TemplateSpec {
    schedule: "template",
    params: OP_PARAMS,
    space: op_space,
    default: default_config,
    rule: Some(rule_op),
    pays: op_pays,
    describe: op_describe,
    build,
};

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

/// Whether a config can pay at the op's shape ([`split_k::pays`]); a Hopper config
/// only where TMA can copy the operands.
pub fn op_pays(_: &TargetLimits, shape: &Shape, config: &Config) -> bool {
    let mnk = (shape.get("m"), shape.get("n"), shape.get("k"));
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
        if p.frag_buffers == 2 && p.mma > 0 && (p.bk / p.mma) % 2 != 0 {
            return Err(err(format!(
                "`fb` = 2 needs an even number of sub-steps: `bk` = {} is {} of `mma` = {}",
                p.bk,
                p.bk / p.mma,
                p.mma
            )));
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

/// Builds the fp16 matmul Func at `shape` (`m`, `n`, `k`) with `config` (split where it
/// has `sk`: f32 partials, rounded to fp16 once, after the sum).
pub fn build(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    let (rest, sk) = split_k::parts(config)?;
    let p = F16Params::from_config(&rest)?;
    let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
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

/// The stated rule's config for product `p` on `limits` ([`super::rule`]), over
/// [`space_over_views`] where the operands are views (an implicit GEMM's im2col) and
/// over the whole [`space`] otherwise, ranked by the tensor-core cost model
/// ([`rule::tensor`]). Only the plain variant of each mma.sync tile competes (one set of
/// fragments, copies staged through registers, as the default): the pipelined ones are
/// for the tuner, which measures them. On Hopper (sm_90a) the wgmma tiles with 4 stages
/// compete too, where TMA can copy the operands and the product is not a batch.
///
/// Where tiles are stored element by element (WGSL, MSL) the model takes the constants
/// fitted on Vulkan ([`rule::tensor::ELEMENTWISE`]) and weighs 16-warp tiles too (their
/// fragments are few; on Vulkan they were the best at 3 of 24 shapes,
/// `docs/measurements/h100-2026-11-27b`), never copies through fragments (0.67× of the
/// best at most there). Over views it keeps the block-count rule: the fit saw no
/// gathered operands.
pub fn rule_config(limits: &TargetLimits, p: rule::Product, over_views: bool) -> rule::Choice {
    let configs = if over_views {
        space_over_views(limits)
    } else {
        space(limits)
    };
    let elementwise = space::elementwise_matrix_copies(limits);
    let max_threads = if elementwise {
        MAX_RULE_THREADS_ELEMENTWISE
    } else {
        MAX_RULE_THREADS
    };
    let mut candidates = tiles(limits, &configs, |t| {
        t.warpgroups == 0
            && t.frag_buffers == 1
            && !t.async_copy
            && !t.coop_copy
            && t.threads() <= max_threads
    });
    if elementwise && over_views {
        for t in &mut candidates {
            t.matrix = None;
        }
    }
    // Over views (thread-gathered wgmma tiles) the model was fitted on no measurement:
    // the tuner times those tiles, the rule does not weigh them.
    // Over views the wgmma tiles gather their operands with the threads: they compete
    // only at products of many tiles, at least 64 columns wide, unsplit (see
    // [`WGMMA_VIEWS_MIN_TILES`]).
    let gathered_pays = !over_views
        || (p.n >= 64
            && super::ceil_div(p.m, 64) * super::ceil_div(p.n, 64) >= WGMMA_VIEWS_MIN_TILES);
    if limits.warpgroup_mma()
        && p.batch == 1
        && p.m >= WGMMA_RULE_MIN_ROWS
        && hopper::unfit(p.n, p.k).is_none()
        && gathered_pays
    {
        let mut wgmma = tiles(limits, &configs, |t| {
            t.warpgroups > 0
                && WGMMA_RULE_STAGES.contains(&t.stages)
                && t.block_m() * t.block_n() <= WGMMA_RULE_MAX_TILE
        });
        if over_views {
            for t in &mut wgmma {
                if let Some(x) = &mut t.matrix {
                    x.splits = false;
                }
            }
        }
        candidates.extend(wgmma);
    }
    let (config, splits, why) = rule::pick_or(&candidates, p, limits.multiprocessors, || {
        if over_views {
            default_config_over_views(limits)
        } else {
            default_config(limits)
        }
    });
    // Where tiles are stored element by element and a warp's tile is small, the pick's
    // loads run two steps ahead (see [`runs_ahead`]); the cost model, fitted before they
    // existed, ranks the tiles.
    if elementwise && !over_views {
        let mut ahead = config.clone();
        ahead.0.retain(|(n, _)| n != "pf");
        ahead.0.push(("pf".to_string(), 2));
        if F16Params::from_config(&ahead).is_ok_and(|q| runs_ahead(&q)) {
            let why = format!("{why}; loads two k steps ahead (a small warp tile)");
            return (ahead, splits, why);
        }
    }
    (config, splits, why)
}

/// Whether the rule's tile `q`, on a target storing tiles element by element, loads two
/// k steps ahead (`pf` = 2): where a warp multiplies at most two accumulator fragments a
/// k sub-step, too little work to hide a k step's wait on its global loads. Measured on
/// an H200 through Vulkan (2026-11-28b, `docs/measurements/h100-2026-11-28b/ahead`, every
/// config of the space with and without): the rule's tiles of one by two fragments at
/// BERT's and GPT-2's batch-1 products ran 8–11% faster (128 × 768 × 768 and 1024³ 1%),
/// and both models 10% faster end to end; its tiles of 8 to 16 fragments at the
/// 1024-row products ran 0.6–7% slower, and at 4096³ 10% slower.
pub fn runs_ahead(q: &F16Params) -> bool {
    q.mma > 0 && q.frags[0] * q.frags[1] <= 2
}

/// The most threads a block of the rule's mma.sync tiles has: the 16-warp tiles (256×256
/// and the like) ran 10–30× slower than 8-warp ones where the rule took them on an H100
/// (3001³: 9.07 ms against 0.335 ms; 4095×4097×63: 470 against 33 µs; `weft sweep`,
/// 2026-11-25, `docs/measurements/h100-2026-11-25b/f16-*.json`): their accumulators do
/// not fit 64K registers at 512 threads. The tuner still times them.
pub const MAX_RULE_THREADS: i64 = 256;

/// The most threads a block of the rule's tiles has where they are stored element by
/// element (WGSL, MSL): 16 warps of 1×2 or 2×2 fragments (the space holds no larger
/// ones there) were the fastest config at 3 of the 24 Vulkan shapes of 2026-11-27, and
/// the fitted model weighs them.
pub const MAX_RULE_THREADS_ELEMENTWISE: i64 = 512;

/// The stages of the wgmma tiles the rule weighs: with 5 the same tiles ran up to 2.3×
/// slower on an H100 (1024×768×768, 64×128 tiles: 12.7 against 5.5 µs; 768³: 8.5
/// against 5.4; `docs/measurements/h100-2026-11-25c`, `-25e`), which the model does
/// not describe. 3 stages were never faster while the staging tile had bytes of its
/// own; laid over the stages (2026-11-27) a 128×128 tile in 3 stages fits two blocks a
/// multiprocessor, and ran GPT-2's batch-8 products 4–10% faster than in 4
/// (`docs/wgmma-epilogue.md`).
pub const WGMMA_RULE_STAGES: [i64; 2] = [3, 4];

/// The fewest rows of a product the rule weighs wgmma tiles for: a wgmma tile computes
/// 64, and below 32 the model misjudges its split configs. With the stages' residency
/// of 2026-11-27 it took them at m = 1 and m = 8, 0.72× and 0.65× of the tuned best on
/// an H100 (8×4096×4096: 18.0 against 11.5 µs for the mma.sync split it took before;
/// `docs/measurements/h100-2026-11-27/f16-mixed.txt`).
pub const WGMMA_RULE_MIN_ROWS: i64 = 32;

/// The fewest 64×64 tiles of a product over views (an implicit GEMM) at which the rule
/// weighs the wgmma tiles that gather their operands with the threads
/// (`hopper_views`), and then unsplit. Measured on an H100 (2026-11-27h,
/// `docs/measurements/h100-2026-11-27h/`): timed alone against the mma.sync space at
/// ResNet-50's convolutions, the best wgmma tile ran 1.13–1.34× faster at the batch-8
/// layers of 196 to 1568 such tiles but 0.4–0.96× at batch 1's layers of fewer, whose
/// four-warp blocks (three or four a multiprocessor) hide the gathers' latency worse
/// than the mma.sync tiles' six or seven; split, they won only at batch 8's deepest
/// layers (1.04–1.12×). The cost model, fitted on TMA-fed tiles, takes them at batch 1
/// too (12 of 23 layers, 0.67–0.79× of the best there). In whole models a gate at 196
/// tiles (the op figure's best: 28 of 31 layers within 0.8× of the best timed) ran
/// ResNet-50 batch 8 and Inception v3 2.5–2.7% slower although the kernels timed alone
/// summed 4% faster (the 7² and 14² 1×1 convolutions with the residual add fused, and
/// Inception's 147² and 71² convolutions of 32 and 80 channels, ran slower in place);
/// at 400, ResNet-50 batch 8 ran 1% faster and Inception v3 the same
/// (`run5.sh`, `gate.txt`).
pub const WGMMA_VIEWS_MIN_TILES: i64 = 400;

/// The largest wgmma block tile (elements) the rule weighs: 128×256 and 256×128 (two
/// warpgroups, which fit only since the staging tile lies over the stages) ran GPT-2's
/// products 5–125% slower than 128×128 on an H100 (2026-11-27,
/// `docs/measurements/h100-2026-11-27/ab.txt`), while the model, fitted before they
/// fitted, ranks them first. The tuner still times them.
pub const WGMMA_RULE_MAX_TILE: i64 = 128 * 128;

/// The configs of `configs` that `keep` accepts, with their block tiles and what their
/// warps do ([`rule::tensor::MatrixTile`]): what the stated rule and a whole-model tuning
/// run choose among.
pub fn tiles(
    limits: &TargetLimits,
    configs: &[Config],
    keep: impl Fn(&F16Params) -> bool,
) -> Vec<rule::Tile> {
    let elementwise = space::elementwise_matrix_copies(limits);
    configs
        .iter()
        .filter_map(|c| F16Params::from_config(c).ok())
        .filter(keep)
        .map(|t| rule::Tile {
            block_m: t.block_m(),
            block_n: t.block_n(),
            threads: t.threads(),
            bk: t.bk,
            pref: 0,
            per_thread: None,
            matrix: (t.mma > 0).then(|| rule::tensor::MatrixTile {
                frags: t.frags,
                frag_buffers: t.frag_buffers,
                warpgroup: t.warpgroups > 0,
                in_flight: if t.async_copy || t.warpgroups > 0 {
                    t.stages - 1
                } else {
                    1
                },
                shared_bytes: t.shared_bytes(),
                accumulators: t.accumulators(),
                // The split forms: mma.sync tiles with k steps of 32 and one set of
                // fragments; every wgmma tile (its parts are k ranges of the TMA ring).
                splits: t.warpgroups > 0 || (t.bk == 32 && t.frag_buffers == 1 && !t.coop_copy),
                elementwise,
            }),
            config: t.config(),
        })
        .collect()
}

/// `matmul-f16`'s config with no tuning record: the rule over its product, split where
/// the model finds the tiles few and the reduction long.
fn rule_op(limits: &TargetLimits, shape: &Shape) -> (Config, String) {
    let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
    let (config, splits, why) = rule_config(limits, rule::Product::split(m, n, k), false);
    let why = if config.get("wg").unwrap_or(0) > 0 {
        format!("{why}; wgmma + TMA (sm_90a)")
    } else {
        why
    };
    rule::for_op((config, splits, why))
}

//! The depthwise convolution template: `out[b, c, oh, ow] = Σ_{ry, rx} x[b, c, oh·s + ry
//! − p, ow·s + rx − p] · w[c, 0, ry, rx]`, any size, stride `s` of 1 or more, "same"
//! padding `p = (k − 1) / 2`.
//!
//! A block computes a `th × tw` tile of outputs for `cb` consecutive channel planes
//! (`b·c` planes in all); its threads are `spatial(cb, th / vh, tw / vw)`, each
//! accumulating `vh × vw` outputs in registers. The input window a thread needs is read
//!
//! - **from shared memory** (`smem = 1`): the block's input tile,
//!   `cb × ((th−1)·s + k) × ((tw−1)·s + k)`, and its `cb × k²` weights are loaded once,
//!   cooperatively, with the padding as predicated loads, then one barrier; the `ry, rx`
//!   loops are unrolled (`ur = 1`) or serial (`ur = 0`);
//! - **from registers** (`smem = 0`): each thread loads its own window,
//!   `((vh−1)·s + k) × ((vw−1)·s + k)`, and its channel's `k²` weights into registers
//!   (the loops unrolled); overlapping windows of neighbours hit in L1.
//!
//! These are the knobs of seed 000's AutoTVM space for this op (tile sizes of h and w,
//! threads per block, channels per block, the input tile in shared memory or registers,
//! unrolled reduction loops). The space ([`space`]) is hardware-centric: tiles of 32 to
//! 256 threads that fit the target's shared memory at the largest kernel and stride the
//! op takes (k = 7, s = 2), whatever the image size; every config is right at every
//! size, since every load and store outside the tensor is predicated.
//!
//! [`template_over`] builds the same kernel over given buffers (a model's views: f16
//! tensors read as f32, an NHWC tensor, an inlined prologue; an epilogue fused into the
//! stores). Over an NHWC input the channel is the threads' fastest index — a warp
//! spans consecutive channels of a pixel, so global loads and stores coalesce — and the
//! shared tile is `[rows, cols, channels]`; [`rule_config`] picks NHWC configs of 32
//! channels a block.

mod kernel;
mod space;

pub use kernel::{template, template_over};
pub use space::{default_config, rule_config, space};

use weft_ir::func::Func;

use super::{BuildError, Config};

/// The template's parameters, in order, with their meaning.
pub const PARAMS: &[(&str, &str)] = &[
    ("th", "output rows of a block's tile"),
    ("tw", "output columns of a block's tile"),
    ("vh", "output rows per thread"),
    ("vw", "output columns per thread"),
    ("cb", "channel planes per block"),
    (
        "smem",
        "1: the input tile and weights in shared memory; 0: each thread's window in registers",
    ),
    (
        "ur",
        "1: the ry, rx loops unrolled; 0: serial (shared-memory configs only)",
    ),
];

/// A config of the depthwise template, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DepthwiseParams {
    pub tile: [i64; 2],
    pub per_thread: [i64; 2],
    pub channels: i64,
    pub shared: bool,
    pub unroll: bool,
}

impl DepthwiseParams {
    /// Threads per block.
    pub fn threads(&self) -> i64 {
        self.channels * (self.tile[0] / self.per_thread[0]) * (self.tile[1] / self.per_thread[1])
    }

    /// Rows and columns of input a `rows × cols` output tile reads at kernel `k`, stride `s`.
    pub fn window(rows: i64, cols: i64, k: i64, s: i64) -> (i64, i64) {
        ((rows - 1) * s + k, (cols - 1) * s + k)
    }

    /// Bytes of shared memory at kernel `k`, stride `s` (0 for register configs).
    pub fn shared_bytes(&self, k: i64, s: i64) -> i64 {
        if !self.shared {
            return 0;
        }
        let (ih, iw) = Self::window(self.tile[0], self.tile[1], k, s);
        4 * self.channels * (ih * iw + k * k)
    }

    /// Registers a thread holds for its outputs, weights and (register configs) window.
    pub fn registers(&self, k: i64, s: i64) -> i64 {
        let [vh, vw] = self.per_thread;
        let window = if self.shared {
            0
        } else {
            let (h, w) = Self::window(vh, vw, k, s);
            h * w + k * k
        };
        vh * vw + window + 24
    }

    /// The config's parameters as a [`Config`].
    pub fn config(&self) -> Config {
        let v = [
            self.tile[0],
            self.tile[1],
            self.per_thread[0],
            self.per_thread[1],
            self.channels,
            i64::from(self.shared),
            i64::from(self.unroll),
        ];
        Config::of(PARAMS, v)
    }

    /// Reads and checks a config.
    pub fn from_config(config: &Config) -> Result<DepthwiseParams, BuildError> {
        let err = |reason: String| config.invalid(reason);
        config.known(PARAMS, "depthwise")?;
        let get = |name: &str| config.value(name);
        let flag = |name: &str| -> Result<bool, BuildError> {
            match get(name)? {
                0 => Ok(false),
                1 => Ok(true),
                v => Err(err(format!("`{name}` = {v} must be 0 or 1"))),
            }
        };
        let p = DepthwiseParams {
            tile: [get("th")?, get("tw")?],
            per_thread: [get("vh")?, get("vw")?],
            channels: get("cb")?,
            shared: flag("smem")?,
            unroll: flag("ur")?,
        };
        for (name, v) in [
            ("th", p.tile[0]),
            ("tw", p.tile[1]),
            ("vh", p.per_thread[0]),
            ("vw", p.per_thread[1]),
            ("cb", p.channels),
        ] {
            if !(1..=256).contains(&v) {
                return Err(err(format!("`{name}` = {v} must be in 1..=256")));
            }
        }
        for d in 0..2 {
            if p.tile[d] % p.per_thread[d] != 0 {
                return Err(err(format!(
                    "the tile ({}x{}) must be a multiple of a thread's outputs ({}x{})",
                    p.tile[0], p.tile[1], p.per_thread[0], p.per_thread[1]
                )));
            }
        }
        if !p.shared && !p.unroll {
            return Err(err(
                "a register window needs unrolled loops (`smem=0` takes `ur=1`)".into(),
            ));
        }
        if p.threads() > 1024 {
            return Err(err(format!(
                "{} threads per block (cb * th/vh * tw/vw); at most 1024",
                p.threads()
            )));
        }
        Ok(p)
    }
}

/// `8x8 tile x 4 channels, 256 threads, 1x1 per thread, shared, unrolled`.
pub fn describe(config: &Config) -> Result<String, String> {
    let p = DepthwiseParams::from_config(config).map_err(|e| e.to_string())?;
    Ok(format!(
        "{}x{} tile x {} channels, {} threads, {}x{} per thread, {}, {}",
        p.tile[0],
        p.tile[1],
        p.channels,
        p.threads(),
        p.per_thread[0],
        p.per_thread[1],
        if p.shared {
            "input in shared memory"
        } else {
            "window in registers"
        },
        if p.unroll {
            "unrolled"
        } else {
            "serial ry, rx"
        },
    ))
}

/// Builds the depthwise convolution of a `[b, c, h, w]` input by a `k × k` window at
/// `stride` ("same" padding) with `config`.
pub fn build(size: [i64; 4], k: i64, stride: i64, config: &Config) -> Result<Func, BuildError> {
    let p = DepthwiseParams::from_config(config)?;
    Ok(template(size, k, stride, &p)?)
}

/// Builds the `depthwise-conv2d-f16` workload with `config`: an f16 NHWC input
/// `x[b, h, w, c]`, an f16 HWIO filter `w[k, k, 1, c]` (the layout of weft's other NHWC
/// convolution workloads), an f16 NHWC output `[b, oh, ow, c]`, f32 sums — the template
/// over views of those placeholders ([`template_over`], NHWC), as the model compiler runs
/// a depthwise convolution in f16.
pub fn build_f16_nhwc(
    [b, c, h, w]: [i64; 4],
    k: i64,
    stride: i64,
    config: &Config,
) -> Result<Func, BuildError> {
    use crate::conv_views::ConvLayout;
    use weft_ir::prelude::*;
    let p = DepthwiseParams::from_config(config)?;
    let pad = (k - 1) / 2;
    let (oh, ow) = (
        (h + 2 * pad - k) / stride + 1,
        (w + 2 * pad - k) / stride + 1,
    );
    let x = te::placeholder("x", &[b, h, w, c], DType::F16);
    let wt = te::placeholder("w", &[k, k, 1, c], DType::F16);
    let x_view = te::compute("x_view", &[("n", b), ("c", c), ("h", h), ("w", w)], |i| {
        x.at(&[&i[0], &i[2], &i[3], &i[1]]).cast(DType::F32)
    });
    let w_view = te::compute("w_view", &[("c", c), ("o", 1), ("r", k), ("s", k)], |i| {
        wt.at(&[&i[2], &i[3], &i[1], &i[0]]).cast(DType::F32)
    });
    let y = te::placeholder("y_depthwise", &[b, c, oh, ow], DType::F32);
    let out = te::compute("y", &[("n", b), ("oh", oh), ("ow", ow), ("c", c)], |i| {
        y.at(&[&i[0], &i[3], &i[1], &i[2]]).cast(DType::F16)
    });
    let anchor = template_over(
        "depthwise_conv2d_f16",
        [b, c, h, w],
        k,
        stride,
        &p,
        ConvLayout::Nhwc,
        &x_view,
        &w_view,
        &y,
    )?;
    let fused = weft_ir::fusion::fuse(&anchor, &out).map_err(|e| config.invalid(e.to_string()))?;
    Ok(crate::conv::in_op_order(fused.func))
}

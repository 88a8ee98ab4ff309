//! The layers the zoo's models are made of, each adding its nodes and its seeded random
//! weights to a [`GraphBuilder`].
//!
//! Random weights alone let activations grow or vanish through fifty layers, and batch
//! normalization with made-up running statistics does not correct that. So every
//! activation carries the per-channel mean and variance it is expected to have (the input
//! taken as zero-mean unit-variance noise), computed from the weights just drawn, and
//! each BatchNormalization gets running statistics near those of its input, as a trained
//! network's are: its output is then about `scale · N(0, 1) + bias`, and fp16 runs
//! neither overflow nor lose everything to rounding.
//!
//! The estimates assume independent elements and normal inputs to each ReLU, so they
//! drift; two choices keep the drift from compounding. A mean the estimate misses passes
//! through a convolution as a per-channel offset its batch norm does not remove, and the
//! next ReLU turns the scale error into a larger mean error: so every filter is centred
//! (its weights sum to zero, as weight standardization has them), and a mean shared by
//! the input channels never reaches the output. And taps that read padding add nothing,
//! so near the border (all of a small image, for a 7-wide filter) the estimate counts
//! only the taps inside. What is left, measured against the float64 reference: the
//! actual scale of a batch norm's output stays within about 0.7 to 1.5 times the
//! estimate in Inception v3, and creeps up to about 2.5 times by the last blocks of the
//! residual networks (a ReLU after a residual `Add` sees a sum that is not normal).
//! The running statistics depend on the resolution through those border counts; the
//! learned parameters depend only on the seed and the layer's name.

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use rand::RngCore;
use rand::rngs::StdRng;
use weft_ir::dtype::DType;

use crate::builder::GraphBuilder;
use crate::graph::{Graph, GraphError, TensorId};
use crate::op::{Conv, Op, Pool, PoolKind, erf};

/// Expected per-channel statistics of an activation.
#[derive(Clone, Debug)]
struct Stats {
    mean: Vec<f64>,
    var: Vec<f64>,
}

/// A model under construction: the graph, the seed its weights are drawn from, and the
/// expected statistics of every activation so far.
pub(super) struct Net {
    b: GraphBuilder,
    seed: u64,
    stats: HashMap<TensorId, Stats>,
}

/// A convolution's shape, as torchvision's `Conv2d` arguments give it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConvSpec {
    pub out: usize,
    /// Height and width.
    pub kernel: [usize; 2],
    pub stride: usize,
    /// Along H and along W, on both sides.
    pub pad: [usize; 2],
    pub groups: usize,
}

impl ConvSpec {
    /// A dense square `k`x`k` convolution to `out` channels.
    pub fn square(out: usize, k: usize, stride: usize, pad: usize) -> ConvSpec {
        ConvSpec {
            out,
            kernel: [k, k],
            stride,
            pad: [pad, pad],
            groups: 1,
        }
    }

    /// A dense `kh`x`kw` convolution, stride 1 (inception's factorized 1x7, 7x1, ...).
    pub fn rect(out: usize, kernel: [usize; 2], pad: [usize; 2]) -> ConvSpec {
        ConvSpec {
            out,
            kernel,
            stride: 1,
            pad,
            groups: 1,
        }
    }
}

impl Net {
    /// A graph named `name` with one f32 input `input` of `[batch, 3, res, res]`.
    pub fn new(name: &str, batch: usize, res: usize, seed: u64) -> (Net, TensorId) {
        let mut b = GraphBuilder::new(name);
        let x = b.input("input", &[batch, 3, res, res], DType::F32);
        let mut net = Net {
            b,
            seed,
            stats: HashMap::new(),
        };
        net.stats.insert(
            x,
            Stats {
                mean: vec![0.0; 3],
                var: vec![1.0; 3],
            },
        );
        (net, x)
    }

    /// Channels (dimension 1) of `x`.
    pub fn channels(&self, x: TensorId) -> usize {
        self.b.graph().tensor(x).shape[1]
    }

    /// The statistics of `x`; every tensor the net made has them but the logits, which
    /// nothing reads.
    fn stats(&self, x: TensorId) -> &Stats {
        // Only `Net`'s own methods make the ids passed back in, and each records stats
        // (but `linear`, whose output only `finish` takes).
        self.stats
            .get(&x)
            .expect("every activation of a Net has stats")
    }

    /// A generator for the weight `name` ([`super::weight_rng`]).
    fn rng(&self, name: &str) -> StdRng {
        super::weight_rng(self.seed, name)
    }

    /// The values of a weight `name` of `n` elements, uniform in `[-bound, bound)`.
    fn uniform(&self, name: &str, n: usize, bound: f64) -> Vec<f32> {
        let mut rng = self.rng(name);
        (0..n).map(|_| (unit(&mut rng) * bound) as f32).collect()
    }

    /// A constant tensor from `values` in row-major order.
    fn constant(&mut self, name: &str, shape: &[usize], values: Vec<f32>) -> TensorId {
        // `values` always holds the product of `shape` elements (built just above).
        let data = ArrayD::from_shape_vec(IxDyn(shape), values).expect("values fill the shape");
        self.b.weight(name, data)
    }

    /// A convolution without bias (a batch norm follows every one in the zoo), weights
    /// `{name}.weight` uniform with variance `1/fan_in` (Kaiming's, gain 1: the batch
    /// norm after it sets the scale).
    pub fn conv(
        &mut self,
        name: &str,
        x: TensorId,
        spec: ConvSpec,
    ) -> Result<TensorId, GraphError> {
        let cin = self.channels(x);
        let g = spec.groups;
        let cg = cin / g.max(1);
        let [kh, kw] = spec.kernel;
        let per_out = cg * kh * kw;
        let wname = format!("{name}.weight");
        let bound = (3.0 / per_out.max(1) as f64).sqrt();
        let mut values = self.uniform(&wname, spec.out * per_out, bound);
        center(&mut values, per_out);
        let w = self.constant(&wname, &[spec.out, cg, kh, kw], values);
        let conv = Conv {
            strides: [spec.stride; 2],
            pads: [spec.pad[0], spec.pad[1], spec.pad[0], spec.pad[1]],
            dilations: [1, 1],
            groups: g,
        };
        // Inference has checked the groups against the channels from here on.
        let y = self.b.conv(name, x, w, None, conv)?;
        // Each output pixel is a weighted sum of its group's inputs: means add with the
        // weights, variances with their squares — over the taps that read the image,
        // not padding. Near the border fewer taps do (on a small image, most of a
        // 7-wide filter reads padding), so the mean varies over the pixels, and that
        // variation is variance too for the batch norm that follows.
        let (rows, cols) = {
            let (xs, ys) = (
                &self.b.graph().tensor(x).shape,
                &self.b.graph().tensor(y).shape,
            );
            (
                window_patterns(xs[2], ys[2], kh, spec.stride, spec.pad[0]),
                window_patterns(xs[3], ys[3], kw, spec.stride, spec.pad[1]),
            )
        };
        let values = self.b.graph().tensor(w).data.as_ref();
        // Just made from a Vec, in standard order.
        let values = values.and_then(|d| d.as_slice()).expect("a fresh weight");
        let s = self.stats(x);
        let k_per_group = spec.out / g;
        let (mut mean, mut var) = (vec![0.0; spec.out], vec![0.0; spec.out]);
        // Per tap, the filter's contribution to the mean and to the variance, summed
        // over input channels.
        let (mut tap_mean, mut tap_var) = (vec![0.0; kh * kw], vec![0.0; kh * kw]);
        for k in 0..spec.out {
            let first = (k / k_per_group) * cg;
            let ws = &values[k * per_out..(k + 1) * per_out];
            tap_mean.fill(0.0);
            tap_var.fill(0.0);
            for (c, taps) in ws.chunks(kh * kw).enumerate() {
                let (m, v) = (s.mean[first + c], s.var[first + c]);
                for (t, &w) in taps.iter().enumerate() {
                    let w = f64::from(w);
                    tap_mean[t] += w * m;
                    tap_var[t] += w * w * v;
                }
            }
            let (mut m1, mut m2) = (0.0, 0.0);
            for (row, fr) in &rows {
                for (col, fc) in &cols {
                    let (mut pm, mut pv) = (0.0, 0.0);
                    for (i, _) in row.iter().enumerate().filter(|(_, inside)| **inside) {
                        for (j, _) in col.iter().enumerate().filter(|(_, inside)| **inside) {
                            pm += tap_mean[i * kw + j];
                            pv += tap_var[i * kw + j];
                        }
                    }
                    m1 += fr * fc * pm;
                    m2 += fr * fc * (pv + pm * pm);
                }
            }
            mean[k] = m1;
            var[k] = (m2 - m1 * m1).max(0.0);
        }
        self.stats.insert(y, Stats { mean, var });
        Ok(y)
    }

    /// Inference batch normalization with `{name}.weight` (scale) uniform in `scale`,
    /// a small random `{name}.bias`, and running statistics near the expected ones of
    /// `x` (mean off by up to a tenth of a standard deviation, variance by up to 20%).
    pub fn bn(
        &mut self,
        name: &str,
        x: TensorId,
        epsilon: f64,
        scale: [f64; 2],
    ) -> Result<TensorId, GraphError> {
        let c = self.channels(x);
        let mut rng = self.rng(name);
        let s = self.stats(x).clone();
        let (mut gamma, mut beta, mut rm, mut rv) = (vec![], vec![], vec![], vec![]);
        let mut out = Stats {
            mean: vec![0.0; c],
            var: vec![0.0; c],
        };
        for ch in 0..c {
            let sd = s.var[ch].sqrt();
            let m = s.mean[ch] + 0.1 * sd * unit(&mut rng);
            // Kept positive: a variance estimate never reaches zero here, and the
            // floor guards a channel whose weights happened to cancel.
            let v = (s.var[ch] * (1.0 + 0.2 * unit(&mut rng))).max(1e-4);
            let gm = scale[0] + (scale[1] - scale[0]) * (unit(&mut rng) + 1.0) / 2.0;
            let bt = 0.1 * unit(&mut rng);
            // What the graph computes is in f32: predict from the rounded values.
            let (m, v, gm, bt) = (m as f32, v as f32, gm as f32, bt as f32);
            let k = f64::from(gm) / (f64::from(v) + epsilon).sqrt();
            out.mean[ch] = (s.mean[ch] - f64::from(m)) * k + f64::from(bt);
            out.var[ch] = s.var[ch] * k * k;
            gamma.push(gm);
            beta.push(bt);
            rm.push(m);
            rv.push(v);
        }
        let ids = [
            self.constant(&format!("{name}.weight"), &[c], gamma),
            self.constant(&format!("{name}.bias"), &[c], beta),
            self.constant(&format!("{name}.running_mean"), &[c], rm),
            self.constant(&format!("{name}.running_var"), &[c], rv),
        ];
        let y = self
            .b
            .batch_norm(name, x, ids[0], ids[1], ids[2], ids[3], epsilon)?;
        self.stats.insert(y, out);
        Ok(y)
    }

    /// `max(x, 0)`.
    pub fn relu(&mut self, name: &str, x: TensorId) -> Result<TensorId, GraphError> {
        let y = self.b.relu(name, x)?;
        let s = self.stats(x);
        let out = rectified(s);
        self.stats.insert(y, out);
        Ok(y)
    }

    /// ReLU6 as ONNX writes it: `Clip(x, 0, 6)`.
    pub fn relu6(&mut self, name: &str, x: TensorId) -> Result<TensorId, GraphError> {
        let y = self.b.clip(name, x, 0.0, 6.0)?;
        // Batch-normalized inputs reach 6 too rarely for the upper bound to matter.
        let out = rectified(self.stats(x));
        self.stats.insert(y, out);
        Ok(y)
    }

    /// `a + b` (a residual connection).
    pub fn add(&mut self, name: &str, a: TensorId, b: TensorId) -> Result<TensorId, GraphError> {
        let y = self.b.add(name, a, b)?;
        let (sa, sb) = (self.stats(a), self.stats(b));
        let out = Stats {
            mean: sa.mean.iter().zip(&sb.mean).map(|(p, q)| p + q).collect(),
            var: sa.var.iter().zip(&sb.var).map(|(p, q)| p + q).collect(),
        };
        self.stats.insert(y, out);
        Ok(y)
    }

    /// Max pooling of a square `k` window (no ceil mode: torchvision's models never
    /// set it).
    pub fn max_pool(
        &mut self,
        name: &str,
        x: TensorId,
        k: usize,
        stride: usize,
        pad: usize,
    ) -> Result<TensorId, GraphError> {
        let pool = Pool {
            kind: PoolKind::Max,
            kernel: [k, k],
            strides: [stride, stride],
            pads: [pad; 4],
            ceil_mode: false,
            count_include_pad: false,
        };
        let y = self.b.node(name, Op::Pool(pool), &[x])?;
        // The largest of 9 independent normals averages 1.5 standard deviations above
        // their mean; neighbours are correlated, so somewhat less. Its input here is
        // rectified, skewed to the right, and the variance stays about what it was
        // (measured on the zoo's models; a third for independent normals).
        let s = self.stats(x);
        let out = Stats {
            mean: s
                .mean
                .iter()
                .zip(&s.var)
                .map(|(m, v)| m + v.sqrt())
                .collect(),
            var: s.var.clone(),
        };
        self.stats.insert(y, out);
        Ok(y)
    }

    /// Average pooling of a square `k` window as PyTorch's `avg_pool2d` defaults it:
    /// padding counted in the divisor (`count_include_pad`), no ceil mode.
    pub fn avg_pool(
        &mut self,
        name: &str,
        x: TensorId,
        k: usize,
        stride: usize,
        pad: usize,
    ) -> Result<TensorId, GraphError> {
        let pool = Pool {
            kind: PoolKind::Average,
            kernel: [k, k],
            strides: [stride, stride],
            pads: [pad; 4],
            ceil_mode: false,
            count_include_pad: true,
        };
        let y = self.b.node(name, Op::Pool(pool), &[x])?;
        // Averaging k² neighbours keeps the mean; the variance falls by k² where they
        // are independent and not at all where they are equal: take the geometric
        // middle, k.
        let s = self.stats(x);
        let out = Stats {
            mean: s.mean.clone(),
            var: s.var.iter().map(|v| v / k as f64).collect(),
        };
        self.stats.insert(y, out);
        Ok(y)
    }

    /// Adaptive average pooling to 1x1, as ONNX writes it: `GlobalAveragePool`.
    pub fn global_avg_pool(&mut self, name: &str, x: TensorId) -> Result<TensorId, GraphError> {
        let y = self.b.global_pool(name, PoolKind::Average, x)?;
        let shape = &self.b.graph().tensor(x).shape;
        // As for `avg_pool`: between independent and equal elements.
        let area = (shape[2] * shape[3]).max(1) as f64;
        let s = self.stats(x);
        let out = Stats {
            mean: s.mean.clone(),
            var: s.var.iter().map(|v| v / area.sqrt()).collect(),
        };
        self.stats.insert(y, out);
        Ok(y)
    }

    /// `inputs` joined along the channels.
    pub fn concat(&mut self, name: &str, inputs: &[TensorId]) -> Result<TensorId, GraphError> {
        let y = self.b.concat(name, inputs, 1)?;
        let mut out = Stats {
            mean: vec![],
            var: vec![],
        };
        for &i in inputs {
            let s = self.stats(i);
            out.mean.extend(&s.mean);
            out.var.extend(&s.var);
        }
        self.stats.insert(y, out);
        Ok(y)
    }

    /// `[N, C, 1, 1]` → `[N, C]` (`torch.flatten(x, 1)`).
    pub fn flatten(&mut self, name: &str, x: TensorId) -> Result<TensorId, GraphError> {
        let y = self.b.flatten(name, x, 1)?;
        let out = self.stats(x).clone();
        self.stats.insert(y, out);
        Ok(y)
    }

    /// A fully connected layer with bias (`nn.Linear`), both uniform within
    /// `1/sqrt(fan_in)` as PyTorch initializes them.
    pub fn linear(&mut self, name: &str, x: TensorId, out: usize) -> Result<TensorId, GraphError> {
        let fan_in = self.b.graph().tensor(x).shape[1];
        let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
        let (wname, bname) = (format!("{name}.weight"), format!("{name}.bias"));
        let values = self.uniform(&wname, out * fan_in, bound);
        let w = self.constant(&wname, &[out, fan_in], values);
        let values = self.uniform(&bname, out, bound);
        let bias = self.constant(&bname, &[out], values);
        // Nothing reads the logits' statistics: no stats recorded.
        self.b.linear(name, x, w, bias)
    }

    /// Conv → BatchNormalization → Relu, the three nodes named `{conv}`, `{bn}`, `{relu}`.
    pub fn conv_bn_relu(
        &mut self,
        [conv, bn, relu]: [&str; 3],
        x: TensorId,
        spec: ConvSpec,
        epsilon: f64,
    ) -> Result<TensorId, GraphError> {
        let y = self.conv(conv, x, spec)?;
        let y = self.bn(bn, y, epsilon, NORMAL_SCALE)?;
        self.relu(relu, y)
    }

    /// The graph with `logits` as its output (renamed so), checked.
    pub fn finish(mut self, logits: TensorId) -> Result<Graph, GraphError> {
        self.b.rename(logits, "logits");
        self.b.output(logits);
        self.b.finish()
    }
}

/// Scales of an ordinary batch norm: about one, so its output is about unit scale.
pub(super) const NORMAL_SCALE: [f64; 2] = [0.8, 1.2];

/// Scales of the last batch norm of a residual branch: small, as torchvision's
/// `zero_init_residual` and trained networks have them, so that adding the branch to the
/// skip path block after block does not grow the sum.
pub(super) const RESIDUAL_SCALE: [f64; 2] = [0.2, 0.4];

/// The ways a window of `k` taps sliding by `stride` over `n` elements padded by `pad`
/// (giving `out` positions) overlaps the input: which taps read the input rather than
/// padding, and at what fraction of the positions.
fn window_patterns(
    n: usize,
    out: usize,
    k: usize,
    stride: usize,
    pad: usize,
) -> Vec<(Vec<bool>, f64)> {
    let mut patterns: Vec<(Vec<bool>, f64)> = Vec::new();
    let share = 1.0 / out.max(1) as f64;
    for o in 0..out {
        let taps: Vec<bool> = (0..k)
            .map(|t| (pad..pad + n).contains(&(o * stride + t)))
            .collect();
        match patterns.iter_mut().find(|(p, _)| *p == taps) {
            Some((_, f)) => *f += share,
            None => patterns.push((taps, share)),
        }
    }
    patterns
}

/// Subtracts from each filter (each run of `len` values) its mean.
fn center(values: &mut [f32], len: usize) {
    if len < 2 {
        return;
    }
    for filter in values.chunks_mut(len) {
        let mean = filter.iter().map(|&v| f64::from(v)).sum::<f64>() / len as f64;
        for v in filter {
            *v = (f64::from(*v) - mean) as f32;
        }
    }
}

/// Uniform in `[-1, 1)` from the generator's next 24 bits (exact in f32 and f64).
fn unit(rng: &mut StdRng) -> f64 {
    f64::from(rng.next_u32() >> 8) * (2.0 / 16_777_216.0) - 1.0
}

/// Statistics of `max(x, 0)` for each channel of `x` taken as normal: the rectified
/// normal's mean `μΦ(μ/σ) + σφ(μ/σ)` and second moment `(μ²+σ²)Φ(μ/σ) + μσφ(μ/σ)`.
fn rectified(s: &Stats) -> Stats {
    let mut out = Stats {
        mean: Vec::with_capacity(s.mean.len()),
        var: Vec::with_capacity(s.mean.len()),
    };
    for (&mu, &var) in s.mean.iter().zip(&s.var) {
        let sd = var.sqrt().max(1e-12);
        let a = mu / sd;
        let cdf = 0.5 * (1.0 + erf(a / std::f64::consts::SQRT_2));
        let pdf = (-0.5 * a * a).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let m1 = mu * cdf + sd * pdf;
        let m2 = (mu * mu + var) * cdf + mu * sd * pdf;
        out.mean.push(m1);
        out.var.push((m2 - m1 * m1).max(0.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rectified_normal_moments() {
        // max(N(0,1), 0): mean 1/√(2π), second moment 1/2.
        let s = rectified(&Stats {
            mean: vec![0.0, 3.0],
            var: vec![1.0, 4.0],
        });
        let m = 1.0 / (2.0 * std::f64::consts::PI).sqrt();
        assert!((s.mean[0] - m).abs() < 1e-12);
        assert!((s.var[0] - (0.5 - m * m)).abs() < 1e-12);
        // Far above zero the ReLU changes little.
        assert!((s.mean[1] - 3.0).abs() < 0.1 && (s.var[1] - 4.0).abs() < 0.5);
    }

    #[test]
    fn weights_depend_on_the_seed_and_name_only() {
        let (a, _) = Net::new("a", 1, 8, 5);
        let (b, _) = Net::new("b", 2, 16, 5);
        let (c, _) = Net::new("a", 1, 8, 6);
        let draw = |n: &Net, name: &str| -> Vec<u32> {
            let mut r = n.rng(name);
            (0..4).map(|_| r.next_u32()).collect()
        };
        assert_eq!(draw(&a, "conv1.weight"), draw(&b, "conv1.weight"));
        assert_ne!(draw(&a, "conv1.weight"), draw(&a, "conv2.weight"));
        assert_ne!(draw(&a, "conv1.weight"), draw(&c, "conv1.weight"));
    }
}

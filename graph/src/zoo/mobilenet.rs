//! MobileNetV2 (torchvision's `mobilenet_v2`, width multiplier 1).

use super::ZooOptions;
use super::net::{ConvSpec, NORMAL_SCALE, Net, RESIDUAL_SCALE};
use crate::graph::{Graph, GraphError, TensorId};

/// PyTorch's `BatchNorm2d` default.
const EPS: f64 = 1e-5;

/// The inverted residual stages: expansion `t`, output channels `c`, blocks `n`, the
/// first block's stride `s` (the paper's table 2).
const STAGES: [(usize, usize, usize, usize); 7] = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
];

/// Channels of the stem and of the last 1x1 convolution.
const STEM: usize = 32;
const LAST: usize = 1280;

/// The graph of MobileNetV2 for `opts`.
pub(super) fn mobilenet_v2(opts: &ZooOptions) -> Result<Graph, GraphError> {
    let (mut net, x) = Net::new("mobilenet_v2", opts.batch, opts.resolution, opts.seed);
    let mut x = conv_bn_relu6(&mut net, "features.0", x, ConvSpec::square(STEM, 3, 2, 1))?;
    let mut index = 1;
    for &(t, c, n, s) in &STAGES {
        for i in 0..n {
            let stride = if i == 0 { s } else { 1 };
            x = inverted_residual(&mut net, &format!("features.{index}"), x, c, stride, t)?;
            index += 1;
        }
    }
    let x = conv_bn_relu6(
        &mut net,
        &format!("features.{index}"),
        x,
        ConvSpec::square(LAST, 1, 1, 0),
    )?;
    // `nn.functional.adaptive_avg_pool2d` and `torch.flatten` in `forward`, not modules.
    let x = net.global_avg_pool("avgpool", x)?;
    let x = net.flatten("flatten", x)?;
    // `classifier` is Dropout (0) then Linear (1).
    let logits = net.linear("classifier.1", x, opts.classes)?;
    net.finish(logits)
}

/// torchvision's `Conv2dNormActivation` `p` with ReLU6: `{p}.0` conv, `{p}.1` batch
/// norm, `{p}.2` ReLU6 (`Clip`).
fn conv_bn_relu6(
    net: &mut Net,
    p: &str,
    x: TensorId,
    spec: ConvSpec,
) -> Result<TensorId, GraphError> {
    let y = net.conv(&format!("{p}.0"), x, spec)?;
    let y = net.bn(&format!("{p}.1"), y, EPS, NORMAL_SCALE)?;
    net.relu6(&format!("{p}.2"), y)
}

/// `InvertedResidual` `p`: a 1x1 expansion by `t` (left out where `t` is 1), a 3x3
/// depthwise convolution with the stride, a linear 1x1 projection to `out` and its batch
/// norm, added to the input where stride and channels allow.
fn inverted_residual(
    net: &mut Net,
    p: &str,
    x: TensorId,
    out: usize,
    stride: usize,
    t: usize,
) -> Result<TensorId, GraphError> {
    let inp = net.channels(x);
    let hidden = inp * t;
    // `conv` is a Sequential; its entries are numbered as they come.
    let mut i = 0;
    let mut y = x;
    if t != 1 {
        y = conv_bn_relu6(
            net,
            &format!("{p}.conv.{i}"),
            y,
            ConvSpec::square(hidden, 1, 1, 0),
        )?;
        i += 1;
    }
    let depthwise = ConvSpec {
        groups: hidden,
        ..ConvSpec::square(hidden, 3, stride, 1)
    };
    y = conv_bn_relu6(net, &format!("{p}.conv.{i}"), y, depthwise)?;
    let residual = stride == 1 && inp == out;
    y = net.conv(
        &format!("{p}.conv.{}", i + 1),
        y,
        ConvSpec::square(out, 1, 1, 0),
    )?;
    let scale = if residual {
        RESIDUAL_SCALE
    } else {
        NORMAL_SCALE
    };
    y = net.bn(&format!("{p}.conv.{}", i + 2), y, EPS, scale)?;
    if residual {
        y = net.add(&format!("{p}.add"), x, y)?;
    }
    Ok(y)
}

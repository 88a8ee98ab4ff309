//! ResNet-50 (torchvision's `resnet50`, the v1.5 one: a bottleneck's stride is on its
//! 3x3 convolution).

use super::ZooOptions;
use super::net::{ConvSpec, NORMAL_SCALE, Net, RESIDUAL_SCALE};
use crate::graph::{Graph, GraphError, TensorId};

/// PyTorch's `BatchNorm2d` default.
const EPS: f64 = 1e-5;

/// Bottleneck blocks per stage (`layer1` .. `layer4`).
const BLOCKS: [usize; 4] = [3, 4, 6, 3];

/// A bottleneck multiplies its width by this on the way out.
const EXPANSION: usize = 4;

/// The graph of ResNet-50 for `opts`.
pub(super) fn resnet50(opts: &ZooOptions) -> Result<Graph, GraphError> {
    let (mut net, x) = Net::new("resnet50", opts.batch, opts.resolution, opts.seed);
    let x = net.conv_bn_relu(
        ["conv1", "bn1", "relu"],
        x,
        ConvSpec::square(64, 7, 2, 3),
        EPS,
    )?;
    let mut x = net.max_pool("maxpool", x, 3, 2, 1)?;
    for (stage, &blocks) in BLOCKS.iter().enumerate() {
        let width = 64 << stage;
        for block in 0..blocks {
            // Every stage but the first halves the resolution in its first block.
            let stride = if stage > 0 && block == 0 { 2 } else { 1 };
            x = bottleneck(
                &mut net,
                &format!("layer{}.{block}", stage + 1),
                x,
                width,
                stride,
            )?;
        }
    }
    let x = net.global_avg_pool("avgpool", x)?;
    let x = net.flatten("flatten", x)?;
    let logits = net.linear("fc", x, opts.classes)?;
    net.finish(logits)
}

/// torchvision's `Bottleneck`: 1x1 to `width`, 3x3 with the stride, 1x1 to
/// `4·width`, added to the input (through a strided 1x1 conv and batch norm,
/// `downsample`, where the shape changes), then ReLU. Its one `relu` module is applied
/// three times; the exporter names the nodes `relu`, `relu_1`, `relu_2`.
fn bottleneck(
    net: &mut Net,
    p: &str,
    x: TensorId,
    width: usize,
    stride: usize,
) -> Result<TensorId, GraphError> {
    let out = width * EXPANSION;
    let n = |m: &str| format!("{p}.{m}");
    let y = net.conv_bn_relu(
        [&n("conv1"), &n("bn1"), &n("relu")],
        x,
        ConvSpec::square(width, 1, 1, 0),
        EPS,
    )?;
    let y = net.conv_bn_relu(
        [&n("conv2"), &n("bn2"), &n("relu_1")],
        y,
        ConvSpec::square(width, 3, stride, 1),
        EPS,
    )?;
    let y = net.conv(&n("conv3"), y, ConvSpec::square(out, 1, 1, 0))?;
    let y = net.bn(&n("bn3"), y, EPS, RESIDUAL_SCALE)?;
    let skip = if stride != 1 || net.channels(x) != out {
        let s = net.conv(&n("downsample.0"), x, ConvSpec::square(out, 1, stride, 0))?;
        net.bn(&n("downsample.1"), s, EPS, NORMAL_SCALE)?
    } else {
        x
    };
    let y = net.add(&n("add"), y, skip)?;
    net.relu(&n("relu_2"), y)
}

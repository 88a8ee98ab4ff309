//! Inception v3 (torchvision's `inception_v3`) in eval mode: no auxiliary classifier
//! (it runs only in training), no input transform (`transform_input=False`).

use super::ZooOptions;
use super::net::{ConvSpec, Net};
use crate::graph::{Graph, GraphError, TensorId};

/// `BasicConv2d`'s batch norm epsilon (the TensorFlow port's, not PyTorch's default).
const EPS: f64 = 1e-3;

/// The graph of Inception v3 for `opts`.
pub(super) fn inception_v3(opts: &ZooOptions) -> Result<Graph, GraphError> {
    let (mut net, x) = Net::new("inception_v3", opts.batch, opts.resolution, opts.seed);
    let x = basic(&mut net, "Conv2d_1a_3x3", x, ConvSpec::square(32, 3, 2, 0))?;
    let x = basic(&mut net, "Conv2d_2a_3x3", x, ConvSpec::square(32, 3, 1, 0))?;
    let x = basic(&mut net, "Conv2d_2b_3x3", x, ConvSpec::square(64, 3, 1, 1))?;
    let x = net.max_pool("maxpool1", x, 3, 2, 0)?;
    let x = basic(&mut net, "Conv2d_3b_1x1", x, ConvSpec::square(80, 1, 1, 0))?;
    let x = basic(&mut net, "Conv2d_4a_3x3", x, ConvSpec::square(192, 3, 1, 0))?;
    let x = net.max_pool("maxpool2", x, 3, 2, 0)?;
    let x = block_a(&mut net, "Mixed_5b", x, 32)?;
    let x = block_a(&mut net, "Mixed_5c", x, 64)?;
    let x = block_a(&mut net, "Mixed_5d", x, 64)?;
    let x = block_b(&mut net, "Mixed_6a", x)?;
    let x = block_c(&mut net, "Mixed_6b", x, 128)?;
    let x = block_c(&mut net, "Mixed_6c", x, 160)?;
    let x = block_c(&mut net, "Mixed_6d", x, 160)?;
    let x = block_c(&mut net, "Mixed_6e", x, 192)?;
    let x = block_d(&mut net, "Mixed_7a", x)?;
    let x = block_e(&mut net, "Mixed_7b", x)?;
    let x = block_e(&mut net, "Mixed_7c", x)?;
    let x = net.global_avg_pool("avgpool", x)?;
    let x = net.flatten("flatten", x)?;
    let logits = net.linear("fc", x, opts.classes)?;
    net.finish(logits)
}

/// `BasicConv2d` `p`: `{p}.conv` (no bias) → `{p}.bn` → `{p}.relu`.
fn basic(net: &mut Net, p: &str, x: TensorId, spec: ConvSpec) -> Result<TensorId, GraphError> {
    let names = [format!("{p}.conv"), format!("{p}.bn"), format!("{p}.relu")];
    net.conv_bn_relu([&names[0], &names[1], &names[2]], x, spec, EPS)
}

/// A chain of `BasicConv2d`s `{p}.{name}`, one after another from `x`.
fn chain(
    net: &mut Net,
    p: &str,
    x: TensorId,
    layers: &[(&str, ConvSpec)],
) -> Result<TensorId, GraphError> {
    layers.iter().try_fold(x, |y, (name, spec)| {
        basic(net, &format!("{p}.{name}"), y, *spec)
    })
}

/// 1x1 to `out` channels.
fn one(out: usize) -> ConvSpec {
    ConvSpec::square(out, 1, 1, 0)
}

/// 1x`k` (padded along W to keep the size) to `out` channels.
fn row(out: usize, k: usize) -> ConvSpec {
    ConvSpec::rect(out, [1, k], [0, k / 2])
}

/// `k`x1 (padded along H) to `out` channels.
fn col(out: usize, k: usize) -> ConvSpec {
    ConvSpec::rect(out, [k, 1], [k / 2, 0])
}

/// The pool branch of blocks A, C and E: `F.avg_pool2d(x, 3, stride=1, padding=1)`
/// (padding counted, PyTorch's default) then a 1x1 `BasicConv2d` `{p}.branch_pool`.
fn pool_branch(net: &mut Net, p: &str, x: TensorId, out: usize) -> Result<TensorId, GraphError> {
    let y = net.avg_pool(&format!("{p}.avg_pool"), x, 3, 1, 1)?;
    basic(net, &format!("{p}.branch_pool"), y, one(out))
}

/// `InceptionA` (35x35): 1x1, 5x5, double 3x3 and pool branches.
fn block_a(net: &mut Net, p: &str, x: TensorId, pool: usize) -> Result<TensorId, GraphError> {
    let b1 = chain(net, p, x, &[("branch1x1", one(64))])?;
    let b5 = chain(
        net,
        p,
        x,
        &[
            ("branch5x5_1", one(48)),
            ("branch5x5_2", ConvSpec::square(64, 5, 1, 2)),
        ],
    )?;
    let b3 = chain(
        net,
        p,
        x,
        &[
            ("branch3x3dbl_1", one(64)),
            ("branch3x3dbl_2", ConvSpec::square(96, 3, 1, 1)),
            ("branch3x3dbl_3", ConvSpec::square(96, 3, 1, 1)),
        ],
    )?;
    let bp = pool_branch(net, p, x, pool)?;
    net.concat(&format!("{p}.concat"), &[b1, b5, b3, bp])
}

/// `InceptionB` (35 → 17): strided 3x3, strided double 3x3 and max pool branches.
fn block_b(net: &mut Net, p: &str, x: TensorId) -> Result<TensorId, GraphError> {
    let b3 = chain(net, p, x, &[("branch3x3", ConvSpec::square(384, 3, 2, 0))])?;
    let bd = chain(
        net,
        p,
        x,
        &[
            ("branch3x3dbl_1", one(64)),
            ("branch3x3dbl_2", ConvSpec::square(96, 3, 1, 1)),
            ("branch3x3dbl_3", ConvSpec::square(96, 3, 2, 0)),
        ],
    )?;
    let bp = net.max_pool(&format!("{p}.max_pool"), x, 3, 2, 0)?;
    net.concat(&format!("{p}.concat"), &[b3, bd, bp])
}

/// `InceptionC` (17x17): 1x1, factorized 7x7, double factorized 7x7 and pool branches,
/// `c7` channels inside the 7x7 ones.
fn block_c(net: &mut Net, p: &str, x: TensorId, c7: usize) -> Result<TensorId, GraphError> {
    let b1 = chain(net, p, x, &[("branch1x1", one(192))])?;
    let b7 = chain(
        net,
        p,
        x,
        &[
            ("branch7x7_1", one(c7)),
            ("branch7x7_2", row(c7, 7)),
            ("branch7x7_3", col(192, 7)),
        ],
    )?;
    let bd = chain(
        net,
        p,
        x,
        &[
            ("branch7x7dbl_1", one(c7)),
            ("branch7x7dbl_2", col(c7, 7)),
            ("branch7x7dbl_3", row(c7, 7)),
            ("branch7x7dbl_4", col(c7, 7)),
            ("branch7x7dbl_5", row(192, 7)),
        ],
    )?;
    let bp = pool_branch(net, p, x, 192)?;
    net.concat(&format!("{p}.concat"), &[b1, b7, bd, bp])
}

/// `InceptionD` (17 → 8): strided 3x3, 7x7 then strided 3x3, and max pool branches.
fn block_d(net: &mut Net, p: &str, x: TensorId) -> Result<TensorId, GraphError> {
    let b3 = chain(
        net,
        p,
        x,
        &[
            ("branch3x3_1", one(192)),
            ("branch3x3_2", ConvSpec::square(320, 3, 2, 0)),
        ],
    )?;
    let b7 = chain(
        net,
        p,
        x,
        &[
            ("branch7x7x3_1", one(192)),
            ("branch7x7x3_2", row(192, 7)),
            ("branch7x7x3_3", col(192, 7)),
            ("branch7x7x3_4", ConvSpec::square(192, 3, 2, 0)),
        ],
    )?;
    let bp = net.max_pool(&format!("{p}.max_pool"), x, 3, 2, 0)?;
    net.concat(&format!("{p}.concat"), &[b3, b7, bp])
}

/// `InceptionE` (8x8): 1x1, a 3x3 split into 1x3 and 3x1 side by side, the same after
/// a 3x3, and pool branches. torchvision concatenates each split pair and then the
/// branches; the exporter folds the nested `torch.cat`s into one `Concat` of six.
fn block_e(net: &mut Net, p: &str, x: TensorId) -> Result<TensorId, GraphError> {
    let b1 = chain(net, p, x, &[("branch1x1", one(320))])?;
    let s = chain(net, p, x, &[("branch3x3_1", one(384))])?;
    let a = chain(net, p, s, &[("branch3x3_2a", row(384, 3))])?;
    let b = chain(net, p, s, &[("branch3x3_2b", col(384, 3))])?;
    let d = chain(
        net,
        p,
        x,
        &[
            ("branch3x3dbl_1", one(448)),
            ("branch3x3dbl_2", ConvSpec::square(384, 3, 1, 1)),
        ],
    )?;
    let c = chain(net, p, d, &[("branch3x3dbl_3a", row(384, 3))])?;
    let e = chain(net, p, d, &[("branch3x3dbl_3b", col(384, 3))])?;
    let bp = pool_branch(net, p, x, 192)?;
    net.concat(&format!("{p}.concat"), &[b1, a, b, c, e, bp])
}

//! Grouped convolutions (`1 < groups`, not depthwise): an implicit GEMM per group — or
//! per pack of narrow groups, over a block-diagonal filter — on the matmul templates'
//! batched form, one grid layer a product ([`weft_kernels::grouped_conv`]): the fp16
//! template (matrix units where the target has them, f32 sums) where the convolution
//! reads or writes f16, the fp32 one otherwise. The group's prologues are read through
//! the views, its epilogue chain (bias, a folded BatchNorm, activation, residual) is
//! fused into the product's stores.

use weft_graph::op::Conv;
use weft_graph::{Graph, Layout, TensorId};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_kernels::conv_views::{ConvGeometry, ConvLayout};
use weft_kernels::grouped_conv::{self, Packing};
use weft_kernels::product::Matmul;
use weft_kernels::split_k::Anchor;

use super::Chooser;
use super::choose;
use super::values::Values;
use crate::anchor::{AnchorKey, AnchorTemplate, ConvInput, ConvViews, Views};
use crate::error::LowerError;

/// The convolution: its attributes, its geometry (`view.c`: a group's input channels,
/// `view.k` all output channels) and its tensors (input, filter, optional bias,
/// output).
pub(super) struct Operands {
    pub conv: Conv,
    pub view: ConvGeometry,
    pub x: TensorId,
    pub w: TensorId,
    pub bias: Option<TensorId>,
    pub y: TensorId,
}

/// Lowers grouped convolution `t` over `vals`; returns the Func, what it is and the
/// anchor's key.
pub(super) fn lower<'g>(
    g: &'g Graph,
    t: Operands,
    vals: &Values<'g>,
    name: &str,
    chooser: &Chooser,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String, AnchorKey), LowerError> {
    let (c, view) = (t.conv, t.view);
    let groups = c.groups as i64;
    let (packing, packing_why) = Packing::rule(groups, view.c, view.k / groups);
    let f16 = g.tensor(t.x).dtype == DType::F16 || g.tensor(t.y).dtype == DType::F16;
    let operand = if f16 { DType::F16 } else { DType::F32 };
    let nhwc = g.tensor(t.x).layout == Layout::ChannelsLast;
    let layout = if nhwc {
        ConvLayout::Nhwc
    } else {
        ConvLayout::Nchw
    };
    let (batch, m, n, k) = packing.gemm(&view);
    let key = AnchorKey {
        template: if f16 {
            AnchorTemplate::MatmulF16
        } else {
            AnchorTemplate::Matmul
        },
        m,
        n,
        k,
        batch,
        views: Views::Conv(ConvViews {
            x: [view.n, groups * view.c, view.h, view.w],
            w: [view.k, view.c, view.r, view.s],
            strides: c.strides,
            pads: c.pads,
            dilations: c.dilations,
            input: if nhwc {
                ConvInput::Nhwc
            } else {
                ConvInput::Nchw
            },
        }),
        winograd: None,
    };
    let (mut choice, mut why) = choose::anchor(chooser.limits, chooser.choices, &key);
    // The batched product is never split: a record that splits one (made by hand or
    // by another version) is not followed.
    if choice.splits > 1 {
        (choice, why) = choose::by_rule(chooser.limits, &key, false, Default::default());
    }
    let (product, what) = Matmul::of(f16, &choice.config).map_err(LowerError::Kernels)?;
    let cols = grouped_conv::x_cols(&view, &packing, layout, operand, |at| {
        vals.at_as(t.x, &at, operand)
    });
    let weights = grouped_conv::w_cols(&view, &packing, layout, operand, |at| {
        vals.at_as(t.w, &at, operand)
    });
    let gemm = te::placeholder("y_gemm", &[batch, m, n], DType::F32);
    let gemm_read = gemm.clone();
    let bias = t.bias.map(|b| vals.stored(b));
    vals.set_root(
        t.y,
        Box::new(move |ix: &[Expr]| {
            let row = view.row([ix[0].clone(), ix[2].clone(), ix[3].clone()]);
            let [z, col] = packing.column_of(&ix[1]);
            let v = gemm_read.at(&[z, row, col]);
            match &bias {
                Some(b) => v + b.at(std::slice::from_ref(&ix[1])),
                None => v,
            }
        }),
    );
    let out = output(vals);
    let anchor = product.template_over(name, &cols, &weights, &gemm)?;
    let fused = fuse(&anchor, &out)?;
    let layout = if nhwc { "NHWC" } else { "NCHW" };
    Ok((
        fused.func,
        format!(
            "grouped implicit-gemm ({layout}), {groups} groups of {}->{} channels: \
             {packing_why}; {batch} products batched on the {what} ({why})",
            view.c,
            view.k / groups
        ),
        key,
    ))
}

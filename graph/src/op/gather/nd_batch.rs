//! GatherND's `batch_dims`, as a GatherND of batch dimension 0 whose index tuples
//! start with a constant range.

use weft_ir::dtype::DType;

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Concat, Expand, Op, Reshape};
use crate::tensor::TensorId;

/// GatherND with `batch_dims` `b` > 0: the `b` leading dimensions (equal in `data` and
/// `indices`) flattened to one of `B`, each index tuple prefixed with its batch's
/// number (a constant range, expanded), one GatherND of batch dimension 0, and the
/// batch dimensions restored.
pub(super) fn import(
    n: &mut dyn OnnxNode,
    data: TensorId,
    idx: TensorId,
    batch_dims: i64,
) -> Result<(), OnnxError> {
    let (ds, is) = (n.shape(data), n.shape(idx));
    let b = usize::try_from(batch_dims)
        .ok()
        .filter(|&b| b < ds.len().min(is.len()) && ds[..b] == is[..b])
        .ok_or_else(|| {
            n.attr_err(
                "batch_dims",
                format!(
                    "{batch_dims}: data {ds:?} and indices {is:?} must share that many leading dimensions, and have more"
                ),
            )
        })?;
    let batch: usize = ds[..b].iter().product();
    let q = is[is.len() - 1];
    if q > ds.len() - b {
        return Err(n.err(format!(
            "indices {is:?} address {q} dimensions of data {ds:?} past its {b} batch dimensions"
        )));
    }
    let mid = &is[b..is.len() - 1];
    let mut data_shape = vec![batch];
    data_shape.extend(&ds[b..]);
    let flat_data = n.step(
        "batch_data",
        Op::Reshape(Reshape { shape: data_shape }),
        vec![data],
    )?;
    let mut idx_shape = vec![batch];
    idx_shape.extend(mid);
    idx_shape.push(q);
    let flat_idx = n.step(
        "batch_indices",
        Op::Reshape(Reshape {
            shape: idx_shape.clone(),
        }),
        vec![idx],
    )?;
    let mut range_shape = vec![1; idx_shape.len()];
    range_shape[0] = batch;
    let range = n.add_constant(
        "batch_range",
        range_shape,
        (0..batch).map(|i| i as f32).collect(),
        DType::I32,
    );
    let mut wide = idx_shape.clone();
    *wide.last_mut().expect("rank 2 or more") = 1;
    let range = n.step(
        "batch_numbers",
        Op::Expand(Expand { shape: wide }),
        vec![range],
    )?;
    let last = idx_shape.len() - 1;
    let tuples = n.step(
        "tuples",
        Op::Concat(Concat { axis: last }),
        vec![range, flat_idx],
    )?;
    let gathered = n.step("gathered", Op::GatherNd, vec![flat_data, tuples])?;
    let mut out = ds[..b].to_vec();
    out.extend(mid);
    out.extend(&ds[b + q..]);
    n.emit(Op::Reshape(Reshape { shape: out }), vec![gathered])
}

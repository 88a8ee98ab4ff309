//! The definition of a computed tensor ([`ComputeOp`]): what a [`Buffer`](super::Buffer)
//! made by [`crate::te::compute`] remembers as its producer. It lives here, beside the
//! buffer that holds it; [`crate::te`] re-exports it.

use super::{Expr, IterVar};

/// What defines a computed tensor: its axes and the expression of one element.
#[derive(Debug)]
pub struct ComputeOp {
    pub name: String,
    pub axes: Vec<IterVar>,
    pub body: Expr,
}

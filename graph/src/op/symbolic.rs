//! What an op does with a symbolic dimension ([`OpDef::symbolic`]): a size known only at
//! run time (`seq ∈ 1..128`), the graph built and compiled at its maximum. Rows of a
//! tensor past the run's value `n` hold whatever the padding computes; what an op states
//! here is what lets `crate::symbolic` prove that those rows never reach the rows below
//! `n` — or bound the op so that they do not, or refuse it.
//!
//! [`OpDef::symbolic`]: super::OpDef::symbolic

use crate::tensor::Tensor;

/// Where a tensor carries the symbol: along axis `axis`, index `i` is at symbol position
/// `(i / inner) % max` (`inner` > 1 where a reshape merged static axes after it; the axis
/// may also hold static axes before it, `outer` = size / (max · inner)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SymDim {
    pub axis: usize,
    pub inner: usize,
}

impl SymDim {
    /// The symbol along the whole of `axis`.
    pub fn whole(axis: usize) -> SymDim {
        SymDim { axis, inner: 1 }
    }
}

/// What masks an input of a bounded op: the value its elements past `n` take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// 0: a sum or a product's contraction ignores them.
    Zero,
    /// The lowest finite f32: a softmax gives them no weight, a maximum never picks them.
    Lowest,
    /// The greatest finite f32: a minimum never picks them.
    Highest,
}

/// How an op carries the symbol from its inputs to its output.
#[derive(Clone, Debug, PartialEq)]
pub enum Carry {
    /// Each output element whose symbol positions are below `n` reads only input elements
    /// whose symbol positions are below `n` (elementwise, layout changes, products and
    /// normalizations along other axes): the output carries the symbol at these dims.
    Rows(Vec<SymDim>),
    /// The op mixes elements across the symbol (a softmax over it, a product contracting
    /// it, a reduction over it): bounded by masking `masks`' inputs past `n` with their
    /// fill, and, for a mean, multiplying the output by `max / n` once per reduced
    /// symbolic dim (`mean_dims`). The output carries the symbol at `output`.
    Bounded {
        masks: Vec<(usize, Fill)>,
        mean_dims: usize,
        output: Vec<SymDim>,
    },
    /// weft cannot bound how the op mixes across the symbol: why, in words.
    Refused(String),
}

/// What an op sees of a symbol's presence: each input's dims ([`SymDim`]; empty where
/// it does not carry the symbol), its range, and the tensors.
pub struct SymbolicIn<'a> {
    pub inputs: &'a [&'a Tensor],
    pub dims: &'a [Vec<SymDim>],
    pub output: &'a Tensor,
    /// The symbol's least value.
    pub min: usize,
    /// The symbol's greatest value: the size the graph is built at.
    pub max: usize,
}

impl SymbolicIn<'_> {
    /// The dims of input `i` aligned at the right to the output's rank (NumPy's
    /// broadcasting): an axis of size 1 broadcast carries nothing.
    pub fn aligned(&self, i: usize) -> Vec<SymDim> {
        let pad = self.output.shape.len() - self.inputs[i].shape.len().min(self.output.shape.len());
        self.dims[i]
            .iter()
            .map(|d| SymDim {
                axis: d.axis + pad,
                inner: d.inner,
            })
            .collect()
    }

    /// The union of every input's dims aligned to the output: what an elementwise op
    /// with broadcasting carries.
    pub fn elementwise(&self) -> Carry {
        let mut out: Vec<SymDim> = Vec::new();
        for i in 0..self.inputs.len() {
            for d in self.aligned(i) {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        out.sort_by_key(|d| (d.axis, d.inner));
        Carry::Rows(out)
    }

    /// Input 0's dims unchanged: an op of one input whose output has its shape.
    pub fn same(&self) -> Carry {
        Carry::Rows(self.dims[0].clone())
    }

    /// True where input `i` carries the symbol along `axis`.
    pub fn on(&self, i: usize, axis: usize) -> bool {
        self.dims[i].iter().any(|d| d.axis == axis)
    }

    /// The refusal of an op weft does not carry the symbol through.
    pub fn refuse(&self, op: &str) -> Carry {
        Carry::Refused(format!(
            "weft does not yet carry a symbolic dimension through {op}"
        ))
    }
}

/// Where a symbol dim of a tensor of `from` shape lies in the same elements reshaped to
/// `to`: `None` where the reshape splits the symbol's positions over several axes.
pub fn reshaped(from: &[usize], to: &[usize], d: SymDim, max: usize) -> Option<SymDim> {
    // The symbol's position, in the flat row-major index: (flat / stride) % max.
    let stride = from[d.axis + 1..].iter().product::<usize>() * d.inner;
    let span = stride * max;
    let mut after = 1usize;
    for axis in (0..to.len()).rev() {
        let whole = after * to[axis];
        // The axis holds the digit where its stride divides the symbol's and the
        // symbol's span ends within it (and divides its whole span).
        if stride.is_multiple_of(after) && span <= whole && whole.is_multiple_of(span) {
            return Some(SymDim {
                axis,
                inner: stride / after,
            });
        }
        after = whole;
    }
    None
}

/// A reshape's carry (Reshape, Flatten): each dim where the same elements lie in the
/// output's shape, refused where the symbol's positions would split over axes.
pub fn reshape_carry(x: &SymbolicIn<'_>) -> Carry {
    let mut out = Vec::new();
    for &d in &x.dims[0] {
        match reshaped(&x.inputs[0].shape, &x.output.shape, d, x.max) {
            Some(to) => out.push(to),
            None => {
                return Carry::Refused(format!(
                    "it reshapes `{}` {:?} to {:?}, splitting the symbolic dimension (axis {}) over several axes",
                    x.inputs[0].name, x.inputs[0].shape, x.output.shape, d.axis
                ));
            }
        }
    }
    Carry::Rows(out)
}

/// A matrix product's carry (MatMul, Gemm): `a` is A's `[row, contracted]` axes, `b`
/// B's `[contracted, column]`; axes before A's and B's last two are batch axes, aligned
/// at the right; a third input (Gemm's C) broadcasts to the output. A product
/// contracting the symbol is bounded by zeroing both operands past n (0 · 0: no NaN or
/// infinity of the padding's can reach the sum).
pub fn product_carry(x: &SymbolicIn<'_>, a: [usize; 2], b: [usize; 2]) -> Carry {
    let r = x.output.shape.len();
    let (ra, rb) = (x.inputs[0].shape.len(), x.inputs[1].shape.len());
    let mut out: Vec<SymDim> = Vec::new();
    let mut push = |d: SymDim| {
        if !out.contains(&d) {
            out.push(d);
        }
    };
    for d in &x.dims[0] {
        if d.axis == a[0] {
            push(SymDim {
                axis: r - 2,
                inner: d.inner,
            });
        } else if d.axis != a[1] {
            push(SymDim {
                axis: d.axis + r - ra,
                inner: d.inner,
            });
        }
    }
    for d in &x.dims[1] {
        if d.axis == b[1] {
            push(SymDim {
                axis: r - 1,
                inner: d.inner,
            });
        } else if d.axis != b[0] {
            push(SymDim {
                axis: d.axis + r - rb,
                inner: d.inner,
            });
        }
    }
    if x.inputs.len() > 2 {
        for d in x.aligned(2) {
            push(d);
        }
    }
    out.sort_by_key(|d| (d.axis, d.inner));
    let (ca, cb) = (x.on(0, a[1]), x.on(1, b[0]));
    match (ca, cb) {
        (false, false) => Carry::Rows(out),
        (true, true) => Carry::Bounded {
            masks: vec![(0, Fill::Zero), (1, Fill::Zero)],
            mean_dims: 0,
            output: out,
        },
        // One operand's contracted axis is the symbol, the other's a static size that
        // equals its maximum: a model that runs at that length only.
        (true, false) | (false, true) => Carry::Refused(
            "it contracts the symbolic dimension of one operand with a static axis of the other"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshapes_keep_or_merge_the_symbol_and_refuse_a_split() {
        let seq = SymDim::whole(1);
        // [b, s, h] → [b, s, heads, d]: the same axis.
        assert_eq!(
            reshaped(&[2, 8, 12], &[2, 8, 3, 4], seq, 8),
            Some(SymDim::whole(1))
        );
        // [b, s, h] → [b·s, h]: merged with the batch before it.
        assert_eq!(
            reshaped(&[2, 8, 12], &[16, 12], seq, 8),
            Some(SymDim::whole(0))
        );
        // [b, s, h] → [b, s·h]: merged with the hidden after it.
        assert_eq!(
            reshaped(&[2, 8, 12], &[2, 96], seq, 8),
            Some(SymDim { axis: 1, inner: 12 })
        );
        // [b, s·h] → [b, s, h]: back.
        assert_eq!(
            reshaped(&[2, 96], &[2, 8, 12], SymDim { axis: 1, inner: 12 }, 8),
            Some(SymDim::whole(1))
        );
        // [b, s, h] → [b, 4, 2·h]: the symbol's positions split over two axes.
        assert_eq!(reshaped(&[2, 8, 12], &[2, 4, 24], seq, 8), None);
    }
}

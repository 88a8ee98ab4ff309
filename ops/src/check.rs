//! Judging an output against the float64 reference: the one rule weft checks results by
//! (`weft run`, `bench` and `tune`, the tests, and the model level).
//!
//! An element is right when
//!
//! ```text
//! |weft − ref| ≤ rtol·|ref| + atol,   atol = growth · n · ε · Σ|terms| + δ
//! ```
//!
//! - `ref` is the element of the float64 reference on the same inputs (f16 inputs as
//!   the kernel reads them: rounded to f16 once);
//! - `Σ|terms|` is the magnitude of the element's computation: the reference evaluated on
//!   the inputs' absolute values (Σ|aᵢ·bᵢ| for a matmul element; Σ|x·w| + |bias| for a
//!   convolution with bias). An element near zero because its terms cancel (zero-mean
//!   data) may carry the rounding error of its terms, not a relative error of its own
//!   tiny value;
//! - `n` is the number of terms summed into an element (the reduction length: K for a
//!   matmul, C·R·S for a convolution; read off the op's te definition, see
//!   [`summed_terms`]) and ε = 2⁻²⁴ the unit roundoff of the f32 sums: n·ε·Σ|terms|
//!   bounds the rounding error of a sum in any order (Higham, *Accuracy and Stability of
//!   Numerical Algorithms*, §4.2);
//! - `growth` is how much more than a direct summation an op's fastest algorithm may
//!   round ([`crate::OpSpec::rounding_growth`]: Winograd's transforms; 1 elsewhere);
//! - `rtol` is 1e-4 for an f32 output and 2e-3 for an f16 one (one rounding to f16 is up
//!   to 2⁻¹¹ of the value);
//! - `δ` is half the spacing of the output dtype's subnormals (f16: 2⁻²⁵; f32: 0): a
//!   product of two small f16 inputs rounds to a subnormal with absolute, not relative,
//!   precision.
//!
//! The **error** of an output is its worst element's `|weft − ref| / (rtol·|ref| + atol)`:
//! at most 1 is right. NaN anywhere (an unwritten element: outputs start poisoned) or an
//! output of the wrong shape is an infinite error.
//!
//! A large matmul (4096³ would take the f64 reference tens of seconds) is compared on a
//! seeded random sample of rows computed here ([`crate::OpSpec::row_reference`]), after a
//! scan of the whole output for NaN. A [`Checker`] computes the reference once for many
//! outputs.

use ndarray::{ArrayD, Ix2};
use rand::seq::index::sample;
use rand::{SeedableRng, rngs::StdRng};
use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Expr};

use crate::Workload;

/// Unit roundoff of the f32 sums every kernel accumulates in.
pub const F32_EPSILON: f64 = 1.0 / (1u64 << 24) as f64;

/// Multiply-adds above which an op with a row reference is checked on sampled rows.
const FULL_CHECK_MACS: f64 = (1u64 << 24) as f64;

/// Rows checked in a sampled check (besides the first and the last).
const SAMPLED_ROWS: usize = 32;

/// The rule's constants for one output: see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// The relative part.
    pub rtol: f64,
    /// `growth · n · ε`: what multiplies an element's `Σ|terms|`.
    pub per_magnitude: f64,
    /// The absolute floor `δ`.
    pub delta: f64,
    /// The number of terms summed into an element (`n`), for messages.
    pub terms: f64,
}

impl Rule {
    /// The rule for an output of `dtype` whose elements each sum `terms` terms, by an
    /// algorithm that rounds up to `growth` times as much as a direct sum.
    pub fn new(dtype: DType, terms: f64, growth: f64) -> Rule {
        let (rtol, delta) = match dtype {
            DType::F16 => (2e-3, 2f64.powi(-25)),
            _ => (1e-4, 0.0),
        };
        Rule {
            rtol,
            per_magnitude: growth * terms.max(1.0) * F32_EPSILON,
            delta,
            terms,
        }
    }

    /// The rule for `w`'s output.
    pub fn of(w: &Workload) -> Rule {
        Rule::new(
            w.output.dtype(),
            summed_terms(&w.output),
            w.op.rounding_growth,
        )
    }

    /// How far an element may be from `reference` when its terms have magnitude
    /// `magnitude`.
    pub fn allowed(&self, reference: f64, magnitude: f64) -> f64 {
        self.rtol * reference.abs() + self.per_magnitude * magnitude.abs() + self.delta
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "|weft − ref| ≤ {:e}·|ref| + {:.1e}·Σ|terms|{} (n = {} terms per element)",
            self.rtol,
            self.per_magnitude,
            if self.delta > 0.0 {
                format!(" + {:.1e}", self.delta)
            } else {
                String::new()
            },
            self.terms
        )
    }
}

/// The worst element of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Worst {
    /// Its index in the output.
    pub index: Vec<usize>,
    /// What the kernel wrote.
    pub got: f64,
    /// The float64 reference.
    pub want: f64,
    /// How far from it the element may be.
    pub allowed: f64,
}

/// How far an output is from the reference, by the rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// The worst element's `|weft − ref|` over what it may be: at most 1 is right;
    /// infinite for NaN, a wrong shape or no reference.
    pub ratio: f64,
    /// The largest `|weft − ref|` of any element (infinite as `ratio` is).
    pub max_abs: f64,
    /// The element the ratio comes from (none for a wrong shape or no reference).
    pub worst: Option<Worst>,
}

impl Error {
    /// An output that cannot be right (NaN, wrong shape, no reference).
    pub fn infinite() -> Error {
        Error {
            ratio: f64::INFINITY,
            max_abs: f64::INFINITY,
            worst: None,
        }
    }

    /// True when every element is within what it may be.
    pub fn is_right(&self) -> bool {
        self.ratio <= 1.0
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.worst {
            _ if self.ratio.is_infinite() && self.max_abs.is_infinite() => {
                f.write_str("NaN or infinite (an element no thread wrote?)")
            }
            Some(w) => write!(
                f,
                "{:.2} of the tolerance (worst element {:?}: weft {:.6e}, reference {:.6e}, \
                 allowed ±{:.1e}); max |weft − ref| {:.1e}",
                self.ratio, w.index, w.got, w.want, w.allowed, self.max_abs
            ),
            None => write!(f, "{:.2} of the tolerance", self.ratio),
        }
    }
}

/// Compares `output` with `reference` element by element, each allowed what `rule` gives
/// it for its `magnitude` (the reference on the inputs' absolute values).
pub fn compare(
    output: &ArrayD<f32>,
    reference: &ArrayD<f64>,
    magnitude: &ArrayD<f64>,
    rule: &Rule,
) -> Error {
    if output.shape() != reference.shape() || reference.shape() != magnitude.shape() {
        return Error::infinite();
    }
    let mut e = Error {
        ratio: 0.0,
        max_abs: 0.0,
        worst: None,
    };
    let mut worst_at = None;
    for (i, ((&o, &r), &m)) in output
        .iter()
        .zip(reference.iter())
        .zip(magnitude.iter())
        .enumerate()
    {
        let o = f64::from(o);
        if !o.is_finite() {
            return Error::infinite();
        }
        let diff = (o - r).abs();
        let allowed = rule.allowed(r, m);
        e.max_abs = e.max_abs.max(diff);
        let ratio = if allowed > 0.0 {
            diff / allowed
        } else if diff > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        if ratio > e.ratio || worst_at.is_none() {
            e.ratio = e.ratio.max(ratio);
            worst_at = Some((i, o, r, allowed));
        }
    }
    if let Some((i, got, want, allowed)) = worst_at {
        e.worst = Some(Worst {
            index: unravel(i, output.shape()),
            got,
            want,
            allowed,
        });
    }
    e
}

/// The multi-index of flat (row-major) index `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[d] = i % n;
            i /= n;
        }
    }
    index
}

/// The number of terms summed into one element of `output`: along the chain of te
/// computes that define it, each reduction contributes the product of its axes' extents
/// and each compute without one a single term (a bias add, a cast). A matmul element
/// sums K terms; a convolution with bias C·R·S + 2.
pub fn summed_terms(output: &Buffer) -> f64 {
    fn of(buffer: &Buffer, depth: usize) -> f64 {
        let Some(op) = buffer.producer() else {
            return 0.0;
        };
        if depth > 64 {
            return 0.0;
        }
        let mut reduced = 0.0f64;
        let mut inputs = 0.0f64;
        op.body.visit(&mut |e| match e {
            Expr::Reduce(r) => {
                let n: f64 = r.axes.iter().map(|a| a.extent as f64).product();
                reduced = reduced.max(n);
            }
            Expr::Load { buffer, .. } => inputs = inputs.max(of(buffer, depth + 1)),
            _ => {}
        });
        inputs + reduced.max(1.0)
    }
    of(output, 0).max(1.0)
}

/// The reference of one workload on one set of inputs, computed once, against which many
/// outputs are checked (a tuner checks every config it times).
#[derive(Debug)]
pub struct Checker {
    expected: Expected,
    rule: Rule,
}

#[derive(Debug)]
enum Expected {
    /// The whole float64 reference and its magnitude.
    Full {
        reference: ArrayD<f64>,
        magnitude: ArrayD<f64>,
    },
    /// Sampled rows: `(row, its reference, its magnitude)`.
    Rows(Vec<(usize, Vec<f64>, Vec<f64>)>),
    /// The reference could not be computed (inputs of the wrong count or shape).
    Unavailable,
}

impl Checker {
    /// Computes the reference and its magnitude: whole, or on sampled rows for an op with
    /// a row reference above [`FULL_CHECK_MACS`].
    pub fn new(workload: &Workload, inputs: &[ArrayD<f32>]) -> Checker {
        let rule = Rule::of(workload);
        let inputs64: Vec<ArrayD<f64>> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
        let magnitudes64: Vec<ArrayD<f64>> = inputs64.iter().map(|a| a.mapv(f64::abs)).collect();
        if let Some(row) = workload.op.row_reference
            && workload.flops / 2.0 > FULL_CHECK_MACS
            && workload.output.shape().len() == 2
        {
            let m = workload.output.shape()[0].max(0) as usize;
            let rows = sample_rows(m)
                .into_iter()
                .filter_map(|i| Some((i, row(&inputs64, i)?, row(&magnitudes64, i)?)))
                .collect::<Vec<_>>();
            if !rows.is_empty() {
                return Checker {
                    expected: Expected::Rows(rows),
                    rule,
                };
            }
        }
        let expected = match (
            workload.reference(&inputs64),
            workload.reference(&magnitudes64),
        ) {
            (Ok(reference), Ok(magnitude)) => Expected::Full {
                reference,
                magnitude,
            },
            _ => Expected::Unavailable,
        };
        Checker { expected, rule }
    }

    /// The rule outputs are judged by.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// How far `output` is from the reference.
    pub fn check(&self, output: &ArrayD<f32>) -> Error {
        match &self.expected {
            Expected::Full {
                reference,
                magnitude,
            } => compare(output, reference, magnitude, &self.rule),
            Expected::Rows(rows) => {
                let Ok(c) = output.view().into_dimensionality::<Ix2>() else {
                    return Error::infinite();
                };
                if c.iter().any(|x| !x.is_finite()) {
                    return Error::infinite();
                }
                let mut worst = Error {
                    ratio: 0.0,
                    max_abs: 0.0,
                    worst: None,
                };
                for (i, want, magnitude) in rows {
                    if *i >= c.dim().0 || want.len() != c.dim().1 {
                        return Error::infinite();
                    }
                    let got = c.row(*i).to_owned().into_dyn();
                    let n = want.len();
                    let want = ArrayD::from_shape_vec(vec![n], want.clone());
                    let magnitude = ArrayD::from_shape_vec(vec![n], magnitude.clone());
                    let (Ok(want), Ok(magnitude)) = (want, magnitude) else {
                        return Error::infinite();
                    };
                    let e = compare(&got, &want, &magnitude, &self.rule);
                    worst.max_abs = worst.max_abs.max(e.max_abs);
                    if e.ratio > worst.ratio || worst.worst.is_none() {
                        worst.ratio = worst.ratio.max(e.ratio);
                        worst.worst = e.worst.map(|w| Worst {
                            index: vec![*i, w.index[0]],
                            ..w
                        });
                    }
                }
                worst
            }
            Expected::Unavailable => Error::infinite(),
        }
    }
}

/// How far `output` of `workload` on `inputs` is from the reference.
pub fn check(workload: &Workload, inputs: &[ArrayD<f32>], output: &ArrayD<f32>) -> Error {
    Checker::new(workload, inputs).check(output)
}

/// Row indices to check of an `m`-row result: the first, the last and a seeded sample.
pub fn sample_rows(m: usize) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut rows: Vec<usize> = sample(&mut rng, m, SAMPLED_ROWS.min(m)).into_vec();
    rows.extend([0, m.saturating_sub(1)]);
    rows.sort_unstable();
    rows.dedup();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    fn matmul(m: i64, n: i64, k: i64) -> (Workload, Vec<ArrayD<f32>>, ArrayD<f32>) {
        let text = format!("m={m},n={n},k={k}");
        let w = Workload::new("matmul", &Shape::parse("matmul", &text).expect("shape"))
            .expect("workload");
        let inputs = w.random_inputs(1);
        let a = inputs[0].view().into_dimensionality::<Ix2>().expect("2-D");
        let b = inputs[1].view().into_dimensionality::<Ix2>().expect("2-D");
        let c = a.dot(&b).into_dyn();
        (w, inputs, c)
    }

    #[test]
    fn sampled_check_accepts_a_right_product_and_catches_nan() {
        // 320 x 300 x 200 = 19.2M multiply-adds: above the full-check threshold.
        let (w, inputs, mut c) = matmul(320, 300, 200);
        assert!(check(&w, &inputs, &c).is_right());
        // An unwritten element in a row the sample may not cover is still caught.
        c[[317, 5]] = f32::NAN;
        assert!(check(&w, &inputs, &c).ratio.is_infinite());
    }

    #[test]
    fn sampled_check_catches_a_wrong_sampled_row() {
        let (w, inputs, mut c) = matmul(320, 300, 200);
        c[[0, 7]] += 1.0;
        let e = check(&w, &inputs, &c);
        assert!(!e.is_right(), "{e}");
        assert_eq!(e.worst.map(|w| w.index), Some(vec![0, 7]));
    }

    #[test]
    fn small_outputs_are_checked_whole() {
        let (w, inputs, mut c) = matmul(16, 8, 4);
        assert!(check(&w, &inputs, &c).is_right());
        c[[9, 3]] *= 2.0;
        assert!(!check(&w, &inputs, &c).is_right());
    }

    /// Zero-mean data: an element near zero because its terms cancel is judged by the
    /// rounding its terms carry, not by a relative error of its own small value (the
    /// issue that made weft call NumPy-agreeing results wrong), while one dropped term is
    /// still far outside the tolerance.
    #[test]
    fn cancellation_is_allowed_its_rounding_and_a_dropped_term_is_not() {
        let w =
            Workload::new("matmul", &Shape::parse("matmul", "m=37,n=53,k=29").unwrap()).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let normal = |rng: &mut StdRng| -> f32 {
            // Box–Muller, enough for a test.
            let (u, v): (f64, f64) = (rand::Rng::random(rng), rand::Rng::random(rng));
            ((-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        };
        let a = ArrayD::from_shape_simple_fn(vec![37, 29], || normal(&mut rng));
        let b = ArrayD::from_shape_simple_fn(vec![29, 53], || normal(&mut rng));
        let a2 = a.view().into_dimensionality::<Ix2>().unwrap();
        let b2 = b.view().into_dimensionality::<Ix2>().unwrap();
        // The product as an f32 GEMM rounds it: summed in f32, in k order.
        let mut c = ArrayD::<f32>::zeros(vec![37, 53]);
        for i in 0..37 {
            for j in 0..53 {
                let mut s = 0.0f32;
                for k in 0..29 {
                    s += a2[[i, k]] * b2[[k, j]];
                }
                c[[i, j]] = s;
            }
        }
        let inputs = vec![a.clone(), b.clone()];
        let e = check(&w, &inputs, &c);
        assert!(e.is_right(), "{e}");
        // One term dropped from one element.
        c[[5, 11]] -= a2[[5, 3]] * b2[[3, 11]];
        let e = check(&w, &inputs, &c);
        assert!(e.ratio > 10.0, "{e}");
    }

    #[test]
    fn terms_are_read_off_the_definition() {
        let mm = Workload::new("matmul", &Shape::parse("matmul", "m=4,n=5,k=29").unwrap()).unwrap();
        assert_eq!(summed_terms(&mm.output), 29.0);
        let conv = Workload::new(
            "conv2d-bias-relu",
            &Shape::parse("conv2d-bias-relu", "c=3,r=3,s=2").unwrap(),
        )
        .unwrap();
        // 3·3·2 products, then the bias add (one more term).
        assert_eq!(summed_terms(&conv.output), 19.0);
        let add = Workload::new("vecadd", &Shape::parse("vecadd", "n=10").unwrap()).unwrap();
        assert_eq!(summed_terms(&add.output), 1.0);
    }
}

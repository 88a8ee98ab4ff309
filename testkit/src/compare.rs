//! How far an output is from its float64 reference, as weft's model tests measure it.

use ndarray::ArrayD;

/// The largest `|got − want|` over the elements, relative to the reference's largest
/// magnitude (at least 1, so that a near-zero output is judged absolutely); a NaN
/// difference counts as infinitely far. Panics where the shapes differ (a test's failure).
pub fn normalized_error(got: &ArrayD<f32>, want: &ArrayD<f64>) -> f64 {
    assert_eq!(got.shape(), want.shape());
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = got.iter().zip(want.iter()).fold(0.0f64, |m, (a, b)| {
        let d = (f64::from(*a) - b).abs();
        if d.is_nan() { f64::INFINITY } else { m.max(d) }
    });
    err / scale.max(1.0)
}

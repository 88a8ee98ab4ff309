//! Deterministic test inputs: a 64-bit linear congruential generator (Knuth's MMIX
//! constants), so that a test's random inputs are the same on every machine and run.

use ndarray::{ArrayD, IxDyn};

/// A generator of values in [-1, 1), seeded with its state.
pub struct Values(pub u64);

impl Values {
    /// The next value in [-1, 1).
    pub fn value(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// An array of `shape` with values in [-scale, scale).
    pub fn array(&mut self, shape: &[usize], scale: f32) -> ArrayD<f32> {
        ArrayD::from_shape_fn(IxDyn(shape), |_| self.value() * scale)
    }
}

//! A symbolic model compiled once per **bucket** of its symbol's range, the bucket chosen
//! at launch by the run's length (issue 60, item 1). One compile at the maximum runs
//! every length with the configs chosen for the maximum: a product's tile for 512 rows
//! (a 128-row tile, four of them) is not the one for 12 (a skinny product streaming its
//! weight), and on targets that cannot skip blocks past the length (WGSL) every kernel
//! does the maximum's work. Compiled for `1..16`, `17..64`, `65..256`, `257..512`, a run
//! at 12 rows takes the first: its kernels are chosen, planned and launched at 16.
//!
//! Each bucket is the same model built for a narrower range (the caller builds it: an
//! ONNX file imported with that range, a zoo model built at its maximum) and compiled as
//! any symbolic model; the buckets' weights with the same name, type, layout, shape and
//! values are uploaded once and shared. TensorRT's optimization profiles and TVM
//! Relax's and Hidet's dispatch over shape ranges do the same; here the bounds are a
//! rule ([`default_bounds`]) or the caller's.

use std::collections::HashMap;

use weft_codegen_common::TargetLimits;
use weft_graph::Graph;
use weft_runtime::{BufferId, Device};

use crate::compiled::{CompileOptions, CompiledModel};
use crate::error::ModelError;
use crate::executable::Executable;

/// The first bucket's largest length, where the range starts below it: a product of up
/// to 16 rows is a skinny one (a matrix–vector form streaming its weight), above it the
/// tiled templates' (`weft_kernels`' rules change there).
pub const FIRST_BUCKET: usize = 16;

/// How much larger each bucket's maximum is than the last's: 4, so that a range of
/// 1..2048 compiles 5 times (16, 64, 256, 1024, 2048), and a run pads at most to 4× its
/// length.
pub const BUCKET_GROWTH: usize = 4;

/// The buckets of `min..=max` by the rule: maxima 16, 64, 256, … below `max`, then
/// `max`; each bucket from one past the last's maximum (the first from `min`). One
/// bucket where the range is within the first.
pub fn default_bounds(min: usize, max: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut lo = min;
    let mut hi = FIRST_BUCKET;
    while hi < max {
        if hi >= lo {
            out.push((lo, hi));
            lo = hi + 1;
        }
        hi = hi.saturating_mul(BUCKET_GROWTH);
    }
    out.push((lo, max));
    out
}

/// Buckets of `min..=max` whose maxima are `maxima` (each in the range, increasing; the
/// last bucket ends at `max` whether or not it is given): a typed error naming the
/// bound that is not.
pub fn bounds_from(
    maxima: &[usize],
    min: usize,
    max: usize,
) -> Result<Vec<(usize, usize)>, String> {
    let mut out = Vec::new();
    let mut lo = min;
    for &hi in maxima {
        if hi < lo || hi > max {
            return Err(format!(
                "a bucket ending at {hi} is not within {lo}..{max} (the range {min}..{max}, buckets increasing)"
            ));
        }
        out.push((lo, hi));
        lo = hi + 1;
    }
    if lo <= max {
        out.push((lo, max));
    }
    Ok(out)
}

/// A symbolic model compiled per bucket of its one symbol's range.
pub struct Buckets {
    /// The symbol the buckets cut.
    pub symbol: String,
    /// Each bucket's range and its compile, in increasing order.
    pub parts: Vec<(usize, usize, CompiledModel)>,
}

impl Buckets {
    /// Compiles the model `build` gives for each range of `bounds` (the model with its
    /// symbol `symbol` of that range). An error where a build fails, or gives a model
    /// whose symbol is not `symbol` over that range.
    pub fn compile<E: From<ModelError>>(
        symbol: &str,
        bounds: &[(usize, usize)],
        mut build: impl FnMut(usize, usize) -> Result<Graph, E>,
        limits: &TargetLimits,
        opts: &CompileOptions,
    ) -> Result<Buckets, E> {
        if bounds.is_empty() {
            return Err(ModelError::Symbolic {
                symbol: symbol.to_string(),
                what: "no bucket given (at least one range to compile)".into(),
            }
            .into());
        }
        let mut parts = Vec::with_capacity(bounds.len());
        for &(lo, hi) in bounds {
            let g = build(lo, hi)?;
            let fits = g
                .symbols
                .iter()
                .any(|s| s.name == symbol && (s.min, s.max) == (lo, hi));
            if !fits {
                return Err(ModelError::Symbolic {
                    symbol: symbol.to_string(),
                    what: format!(
                        "the model built for the bucket {lo}..{hi} does not have it over that range"
                    ),
                }
                .into());
            }
            parts.push((lo, hi, CompiledModel::compile(&g, limits, opts)?));
        }
        Ok(Buckets {
            symbol: symbol.to_string(),
            parts,
        })
    }

    /// Kernels over every bucket.
    pub fn kernel_count(&self) -> usize {
        self.parts.iter().map(|(_, _, m)| m.kernel_count()).sum()
    }

    /// Loads every bucket on `dev`, the weights they hold alike uploaded once (the
    /// first bucket holding them owns them). On an error, what was loaded is freed.
    pub fn load(&self, dev: &mut dyn Device) -> Result<LoadedBuckets, ModelError> {
        let mut loaded: Vec<(usize, usize, Executable)> = Vec::with_capacity(self.parts.len());
        let mut shared: HashMap<String, BufferId> = HashMap::new();
        let mut shared_bytes = 0;
        for (k, (lo, hi, m)) in self.parts.iter().enumerate() {
            let exe = match m.load_sharing(dev, &shared) {
                Ok(exe) => exe,
                Err(e) => {
                    for (_, _, exe) in loaded.iter().rev() {
                        exe.free(dev);
                    }
                    return Err(e);
                }
            };
            // What the later buckets hold alike with this one.
            for (_, _, later) in &self.parts[k + 1..] {
                for (name, id, bytes) in
                    crate::generate::same_weights(m, later, exe.weight_buffers())
                {
                    if let std::collections::hash_map::Entry::Vacant(e) = shared.entry(name) {
                        e.insert(id);
                        shared_bytes += bytes;
                    }
                }
            }
            loaded.push((*lo, *hi, exe));
        }
        Ok(LoadedBuckets {
            symbol: self.symbol.clone(),
            parts: loaded,
            shared_bytes,
        })
    }
}

/// Every bucket on a device.
pub struct LoadedBuckets {
    symbol: String,
    parts: Vec<(usize, usize, Executable)>,
    shared_bytes: u64,
}

impl LoadedBuckets {
    /// The bucket a run at `n` takes: its range and executable. An error where `n` is
    /// outside every bucket.
    pub fn pick(&self, n: usize) -> Result<(usize, usize, &Executable), ModelError> {
        self.parts
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&n))
            .map(|(lo, hi, exe)| (*lo, *hi, exe))
            .ok_or_else(|| {
                let (min, max) = (self.parts[0].0, self.parts[self.parts.len() - 1].1);
                ModelError::Symbolic {
                    symbol: self.symbol.clone(),
                    what: format!(
                        "length {n} is outside the range {min}..{max} the model was compiled for"
                    ),
                }
            })
    }

    /// [`Executable::run_at`] on the bucket the symbol's value in `values` picks.
    pub fn run_at(
        &self,
        dev: &mut dyn Device,
        values: &[(&str, usize)],
        inputs: &[ndarray::ArrayD<f32>],
    ) -> Result<Vec<ndarray::ArrayD<f32>>, ModelError> {
        let n = values
            .iter()
            .find(|(name, _)| *name == self.symbol)
            .map(|&(_, n)| n)
            .ok_or_else(|| ModelError::Symbolic {
                symbol: self.symbol.clone(),
                what: "no length given".into(),
            })?;
        let (_, _, exe) = self.pick(n)?;
        exe.run_at(dev, values, inputs)
    }

    /// Each bucket's range and executable, in increasing order.
    pub fn parts(&self) -> impl Iterator<Item = (usize, usize, &Executable)> {
        self.parts.iter().map(|(lo, hi, exe)| (*lo, *hi, exe))
    }

    /// Bytes of weights the buckets share rather than hold each.
    pub fn shared_weight_bytes(&self) -> u64 {
        self.shared_bytes
    }

    /// Frees every bucket's buffers (the sharing ones first: the owner frees the shared
    /// weights last).
    pub fn free(&self, dev: &mut dyn Device) {
        for (_, _, exe) in self.parts.iter().rev() {
            exe.free(dev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_cuts_at_powers_of_four_from_sixteen() {
        assert_eq!(
            default_bounds(1, 512),
            [(1, 16), (17, 64), (65, 256), (257, 512)]
        );
        assert_eq!(default_bounds(1, 16), [(1, 16)]);
        assert_eq!(default_bounds(1, 10), [(1, 10)]);
        assert_eq!(default_bounds(1, 17), [(1, 16), (17, 17)]);
        assert_eq!(default_bounds(20, 300), [(20, 64), (65, 256), (257, 300)]);
        assert_eq!(default_bounds(70, 80), [(70, 80)]);
    }

    #[test]
    fn given_bounds_are_checked() {
        assert_eq!(bounds_from(&[8, 24], 1, 24).unwrap(), [(1, 8), (9, 24)]);
        assert_eq!(bounds_from(&[8], 1, 24).unwrap(), [(1, 8), (9, 24)]);
        assert!(bounds_from(&[8, 4], 1, 24).is_err());
        assert!(bounds_from(&[30], 1, 24).is_err());
        assert!(bounds_from(&[0], 1, 24).is_err());
    }
}

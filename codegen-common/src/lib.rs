//! Helpers shared by weft's emitters (`weft-codegen-cuda`, `-metal`, `-wgsl`).
//!
//! - [`emitted`]: [`Emitted`], what every emitter returns (source, entry points, launch
//!   facts), and [`checked`], the one check of a kernel before emission;
//! - [`limits`]: [`TargetLimits`], what a target offers one kernel (checked before
//!   emission, and the ground the template spaces and the tuner stand on), and
//!   [`check_limits`];
//! - [`error`]: [`EmitError`], the one error type of every emitter;
//! - [`contract`]: the lowering contract checks and small analyses every writer needs;
//! - [`names`] and [`keywords`]: deterministic identifiers that avoid reserved words;
//! - [`fold`]: integer constant folding (WGSL's unrolling substitutes loop variables);
//! - [`prec`]: operator precedence, to parenthesise only where needed;
//! - [`cfamily`]: the C-family writer CUDA and MSL share through a [`cfamily::Dialect`];
//! - [`testing`]: the skip-or-fail rule of the offline compile checks (`WEFT_REQUIRE`).
//!
//! The hand-built kernels the emitters' tests use are in the dev-only `weft-testkit`.
//!
//! WGSL has its own writer and uses only the helpers, not [`cfamily`].

pub mod cfamily;
pub mod contract;
pub mod emitted;
pub mod error;
pub mod fold;
pub mod keywords;
pub mod layout;
pub mod limits;
pub mod names;
pub mod prec;
pub mod testing;

use std::fmt;

use weft_ir::dtype::DType;

pub use emitted::{Binding, Emitted, EntryPoint, Language, Uniform, checked};
pub use error::{EmitError, UnloweredNode};
pub use limits::{
    CUDA_ARCHS, CudaArch, DEFAULT_MULTIPROCESSORS, GFX_ARCHS, LimitError, MatrixUnit, SubgroupSize,
    TargetLimits, check_limits, cuda_arch,
};

/// One level of indentation.
pub const INDENT: &str = "    ";

/// An indentation depth; `Display` writes it as spaces (naga's `back::Level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level(pub usize);

impl Level {
    /// One level deeper.
    pub fn next(self) -> Level {
        Level(self.0 + 1)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for _ in 0..self.0 {
            f.write_str(INDENT)?;
        }
        Ok(())
    }
}

/// The shortest decimal text that reads back as `value` rounded to `dtype` (`0.1`,
/// `1e-8`), with no suffix; `None` for infinities and NaN, which no language spells as a
/// plain literal.
///
/// Near the end of the range the shortest text can lie beyond the largest finite value:
/// `3.4028235e38` rounds to `f32::MAX` but is larger than it, and Tint (Chrome's WGSL
/// compiler) rejects such a literal as "cannot be represented as 'f32'". There the text
/// is the value's exact decimal as a double instead (`3.4028234663852886e38`).
pub fn float_text(value: f64, dtype: DType) -> Option<String> {
    let v = match dtype {
        DType::F16 => f32::from(half::f16::from_f64(value)),
        _ => value as f32,
    };
    if !v.is_finite() {
        return None;
    }
    let short = format!("{v:?}");
    let max = match dtype {
        DType::F16 => f64::from(half::f16::MAX),
        _ => f64::from(f32::MAX),
    };
    Some(match short.parse::<f64>() {
        Ok(read) if read.abs() <= max => short,
        _ => format!("{:?}", f64::from(v)),
    })
}

/// True for a global buffer of bools: device memory holds each element as a 32-bit word
/// (0 or 1) on every backend (WGSL storage buffers cannot hold `bool`, and one layout for
/// all keeps the runtimes simple). Emitters convert on every load and store.
pub fn stored_as_word(buffer: &weft_ir::expr::Buffer) -> bool {
    buffer.dtype() == weft_ir::dtype::DType::Bool && buffer.scope() == weft_ir::expr::Scope::Global
}

/// The element type a buffer has in memory (`u32` for global bools, see
/// [`stored_as_word`]).
pub fn storage_dtype(buffer: &weft_ir::expr::Buffer) -> weft_ir::dtype::DType {
    if stored_as_word(buffer) {
        weft_ir::dtype::DType::U32
    } else {
        buffer.dtype()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_text_round_trips() {
        assert_eq!(float_text(1.0, DType::F32).as_deref(), Some("1.0"));
        assert_eq!(float_text(0.1, DType::F32).as_deref(), Some("0.1"));
        assert_eq!(float_text(1e-8, DType::F32).as_deref(), Some("1e-8"));
        // f32's extremes in a decimal that is not beyond them (Tint rejects `3.4028235e38`).
        assert_eq!(
            float_text(f32::MAX as f64, DType::F32).as_deref(),
            Some("3.4028234663852886e38")
        );
        assert_eq!(
            float_text(f32::MIN as f64, DType::F32).as_deref(),
            Some("-3.4028234663852886e38")
        );
        assert_eq!(float_text(65504.0, DType::F16).as_deref(), Some("65504.0"));
        for t in [f32::MAX, f32::MIN, 1.0e38, -3.0e38] {
            let text = float_text(t as f64, DType::F32).unwrap();
            let read: f64 = text.parse().unwrap();
            assert!(
                read.abs() <= f32::MAX as f64 && read as f32 == t,
                "{t}: {text}"
            );
        }
        assert_eq!(float_text(0.1, DType::F16).as_deref(), Some("0.099975586"));
        assert_eq!(float_text(f64::INFINITY, DType::F32), None);
        assert_eq!(float_text(1e39, DType::F32), None);
        assert_eq!(Level(2).to_string(), "        ");
    }
}

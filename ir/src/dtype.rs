//! Element types.

use std::fmt;

/// The element type of a value, buffer or expression.
///
/// Index arithmetic is always [`DType::I32`] (see DESIGN.md, "Semantics every backend must
/// agree on").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    I32,
    U32,
    Bool,
}

impl DType {
    /// True for `f32` and `f16`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }

    /// True for `i32` and `u32`.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::U32)
    }

    /// Size of one element in memory, in bytes.
    pub fn bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 => 2,
            DType::Bool => 1,
        }
    }

    /// The TVMScript spelling (`"float32"`), used by the printer.
    pub fn tvm_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::Bool => "bool",
        }
    }

    /// Parses `f32`, `float32`, `f16`, `float16`, `i32`, `int32`, `u32`, `uint32`, `bool`.
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "f32" | "float32" => DType::F32,
            "f16" | "float16" => DType::F16,
            "i32" | "int32" => DType::I32,
            "u32" | "uint32" => DType::U32,
            "bool" => DType::Bool,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::Bool => "bool",
        })
    }
}

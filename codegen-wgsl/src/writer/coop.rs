//! Matrix fragments as wgpu's cooperative matrices (`enable wgpu_cooperative_matrix;`,
//! wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`; Vulkan's `VK_KHR_cooperative_matrix`, Metal's
//! simdgroup matrices underneath).
//!
//! A fragment array is a function-scope `var name: array<coop_mat16x16<f16, A>, n>;`. Its
//! operations:
//!
//! - fill: `name[i] = coop_mat16x16<f32, C>();` — WGSL cooperative matrices can only be
//!   zero-constructed, so a fill with anything but 0 is refused;
//! - load: `name[i] = coopLoadT<coop_mat16x16<f16, A>>(&buf[origin], stride);` —
//!   `coopLoadT` reads a row-major tile, `coopLoad` a column-major one;
//! - store: `coopStoreT(name[i], &buf[origin], stride);` (row-major; `coopStore` for a
//!   column-major operand tile);
//! - multiply-accumulate: `d[i] = coopMultiplyAdd(a[j], b[k], c[i]);`.
//!
//! The role enumerants `A`, `B` and `C` are predeclared names that a declaration would
//! shadow (naga then rejects `coop_mat16x16<f16, A>`), so a module with fragments reserves
//! them and buffers named `A` become `A_1`. Tiles are `m = n = k`, 8 or 16, as the types
//! are square; which of them an adapter runs is the runtime's check.

use weft_codegen_common::EmitError;
use weft_codegen_common::names::NameKey;
use weft_ir::dtype::DType;
use weft_ir::expr::{Buffer, Expr};
use weft_ir::fragment::{FragLayout, FragOp, FragRef, FragRole, Fragment};

use super::{Writer, ty};
use weft_codegen_common::Level;

/// Names a module with cooperative matrices must not declare.
pub(crate) const ROLE_NAMES: &[&str] = &["A", "B", "C"];

/// `coop_mat16x16<f16, A>`.
pub(crate) fn coop_type(f: &Fragment) -> String {
    let n = f.shape().m;
    let role = match f.role() {
        FragRole::A => "A",
        FragRole::B => "B",
        // Refused by `unsupported` before any type is written.
        FragRole::Accumulator | FragRole::Rows => "C",
    };
    format!("coop_mat{n}x{n}<{}, {role}>", ty(f.dtype()))
}

/// Why WGSL cannot hold `f`, if it cannot.
pub(crate) fn unsupported(f: &Fragment) -> Option<String> {
    if f.role() == FragRole::Rows {
        return Some(format!(
            "`{}` holds an accumulator's rows element by element; cooperative matrices are opaque",
            f.name()
        ));
    }
    let s = f.shape();
    if s.m != s.n || s.n != s.k || !(s.m == 8 || s.m == 16) {
        return Some(format!(
            "WGSL cooperative matrices are square, 8×8 or 16×16 (m = n = k), not {s}"
        ));
    }
    if !matches!(f.dtype(), DType::F16 | DType::F32) {
        return Some(format!("no cooperative matrix of {}", f.dtype()));
    }
    None
}

impl Writer<'_> {
    fn tile(&mut self, r: &FragRef, level: Level) -> Result<String, EmitError> {
        let name = self.frag_name(&r.frag)?;
        let i = self.prepare_expr(&r.index, level)?;
        Ok(format!("{name}[{i}]"))
    }

    fn frag_name(&self, f: &Fragment) -> Result<String, EmitError> {
        self.namer
            .get(NameKey::Buffer(f.id()))
            .map(str::to_string)
            .ok_or_else(|| self.invalid(format!("fragment `{}` is not declared", f.name())))
    }

    fn tile_ptr(&mut self, b: &Buffer, origin: &[Expr], level: Level) -> Result<String, EmitError> {
        let [o] = origin else {
            return Err(self.invalid(format!("tile of `{}` without a flat origin", b.name())));
        };
        let name = self.buffer_name(b)?;
        let o = self.prepare_expr(o, level)?;
        Ok(format!("&{name}[{o}]"))
    }

    /// Writes one fragment operation.
    pub(crate) fn frag(&mut self, op: &FragOp, level: Level) -> Result<(), EmitError> {
        let line = match op {
            FragOp::Fill { dst, value } => {
                if !matches!(self.resolved(value), Expr::Float(v, _) if v == 0.0) {
                    return Err(self.unsupported(format!(
                        "a fill of `{}` with {value}: WGSL cooperative matrices can only be \
                         zero-constructed",
                        dst.frag.name()
                    )));
                }
                let t = self.tile(dst, level)?;
                format!("{t} = {}();", coop_type(&dst.frag))
            }
            FragOp::Load {
                dst,
                buffer,
                origin,
                stride,
            } => {
                let t = self.tile(dst, level)?;
                let p = self.tile_ptr(buffer, origin, level)?;
                let f = match dst.frag.layout() {
                    FragLayout::RowMajor => "coopLoadT",
                    FragLayout::ColMajor => "coopLoad",
                };
                format!("{t} = {f}<{}>({p}, {stride}u);", coop_type(&dst.frag))
            }
            FragOp::Store {
                src,
                buffer,
                origin,
                stride,
            } => {
                let t = self.tile(src, level)?;
                let p = self.tile_ptr(buffer, origin, level)?;
                let f = match src.frag.layout() {
                    FragLayout::RowMajor => "coopStoreT",
                    FragLayout::ColMajor => "coopStore",
                };
                format!("{f}({t}, {p}, {stride}u);")
            }
            FragOp::Mma { d, a, b, c } => {
                let [d, a, b, c] = [
                    self.tile(d, level)?,
                    self.tile(a, level)?,
                    self.tile(b, level)?,
                    self.tile(c, level)?,
                ];
                format!("{d} = coopMultiplyAdd({a}, {b}, {c});")
            }
            FragOp::Map { .. } | FragOp::RowReduce { .. } | FragOp::Convert { .. } => {
                return Err(self.unsupported(format!(
                    "`{}`: WGSL cooperative matrices are opaque (no element-wise work on them)",
                    weft_ir::printer::frag_op_string(op)
                )));
            }
            other => {
                return Err(self.unsupported(format!(
                    "`{}`: WGSL has no warpgroup MMA, TMA copy or mbarrier (CUDA sm_90a only)",
                    weft_ir::printer::frag_op_string(other)
                )));
            }
        };
        self.line(level, &line);
        Ok(())
    }
}

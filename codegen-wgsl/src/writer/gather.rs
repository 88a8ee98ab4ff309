//! Guarded vector copies without a branch (`WEFT_VK_CONV=1`, off by default).
//!
//! A predicated vector load of halves `if (c) { dst[..] = src[i..] } else { dst[..] = f }`
//! is written by default as an `if` around a `vec4` load or its elements' loads (see
//! [`super::Writer::hoist`]: the same form for the fp32 template's predicated `vec4` loads
//! measured slower at a 4096³ product in 2026-11-22, so f32 keeps the `if`). With the
//! switch on it becomes
//!
//! ```wgsl
//! let guard: bool = c;
//! let v: vec4<f16> = src[select(0, i / 4, guard)];
//! dst[..] = select(f, v.x, guard); ...
//! ```
//!
//! (from a source not declared as `vec4`s, each element's load at a clamped index under a
//! `select`).
//!
//! Why: an implicit GEMM's gathers (an im2col row and padding test on every load) are
//! such copies, and on an H200 through Vulkan a convolution's k step cost about 0.13 µs
//! more per 8-byte load a thread issues (an L2 round trip each: ResNet-50's 7² 3×3 layer,
//! 32×64 tiles, 0.53 / 0.91 / 1.66 µs a step at k steps of 16 / 32 / 64, i.e. 3 / 6 / 12
//! loads), where a product of stored operands (no test on its loads) cost about 0.5 µs a
//! step whatever its loads. The guess this form tests: the driver waits on each load
//! inside its branch (the moves of `v`'s components into the staging registers sit in
//! the `then` block), so the loads of a step do not overlap. Without a branch every load
//! of the step can be issued before the first is used. Where the guard fails the load
//! reads element 0, in bounds in any buffer; its value is discarded.

use weft_codegen_common::contract::contains_load;
use weft_codegen_common::fold::{div_exact, fold};
use weft_codegen_common::names::NameKey;
use weft_codegen_common::{EmitError, Level};
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Buffer, Expr, Var};
use weft_ir::kernel::KStmt;

use super::{Writer, needs_hoist, ty};

/// The environment variable that writes guarded vector copies without a branch: `1`
/// on, `2` on and the Vulkan convolutions' rule taking deeper k steps
/// (`weft_kernels::matmul_f16::DEEP_STEPS_SWITCH`, the same variable), `deep` the deeper
/// steps alone, `0` or unset no branch-free copies (unset: the deeper steps where
/// `weft_codegen_common::TargetLimits::vk_conv_by_default`); anything else refused,
/// naming it.
pub const SWITCH: &str = "WEFT_VK_CONV";

/// What [`SWITCH`] takes, as its refusal says.
const ALLOWED: &str = "0 (off), 1 (guarded gathers without a branch), 2 (1, and the \
     Vulkan convolution rule's k steps of 64 at one wave) or deep (those k steps alone)";

/// Whether [`SWITCH`] asks for branch-free guarded copies (`kernel` names the error).
/// Not by default: with the deep k steps they made four CNNs' convolutions a further
/// 1–6% faster on the H200, but they apply to every guarded f16 copy (attention,
/// products), where they were not timed but on BERT-base (+0.3–1.3%).
pub(crate) fn from_env(kernel: &str) -> Result<bool, EmitError> {
    match std::env::var(SWITCH).as_deref() {
        Err(_) | Ok("0" | "deep") => Ok(false),
        Ok("1" | "2") => Ok(true),
        Ok(other) => Err(EmitError::Switch {
            kernel: kernel.to_string(),
            variable: SWITCH,
            value: other.to_string(),
            allowed: ALLOWED,
        }),
    }
}

/// The `j`-th vec4 of a vector access starting at element index `e`.
fn quarter(e: &Expr, j: u32) -> Expr {
    let q = div_exact(e, 4).unwrap_or_else(|| Expr::binary(BinOp::Div, e.clone(), Expr::int(4)));
    fold(&(q + Expr::int(j as i64)))
}

/// A guarded copy's parts: `dst[di..] = src[si..]` of `lanes`, else `fallback` into
/// `dst[fill_index(k)]` for lane `k` (the fill loop's variable and index).
struct Guarded<'k> {
    dst: &'k Buffer,
    di: &'k Expr,
    src: &'k Buffer,
    si: &'k Expr,
    lanes: u32,
    fill_var: &'k Var,
    fill_index: &'k Expr,
    fallback: &'k Expr,
}

/// `then`/`otherwise` as a guarded vector copy, the form `vectorize` makes of a
/// predicated load (a vector copy, and an unrolled loop storing the fallback lane by lane).
fn guarded<'k>(then: &'k KStmt, otherwise: Option<&'k KStmt>) -> Option<Guarded<'k>> {
    let KStmt::Store {
        buffer: dst,
        index: di,
        value,
        lanes,
    } = then
    else {
        return None;
    };
    let Expr::Load {
        buffer: src,
        indices,
        lanes: load_lanes,
    } = value
    else {
        return None;
    };
    let Some(KStmt::For {
        var,
        extent,
        unroll: true,
        body,
    }) = otherwise
    else {
        return None;
    };
    let KStmt::Store {
        buffer: fill_dst,
        index: fill_index,
        value: fallback,
        lanes: 1,
    } = &**body
    else {
        return None;
    };
    let whole = *lanes > 1 && load_lanes == lanes && *extent == *lanes as i64;
    let plain = fill_dst.id() == dst.id()
        && indices.len() == 1
        && !contains_load(&indices[0])
        && !contains_load(fallback)
        && !fallback.uses_var(var);
    (whole && plain).then_some(Guarded {
        dst,
        di,
        src,
        si: &indices[0],
        lanes: *lanes,
        fill_var: var,
        fill_index,
        fallback,
    })
}

impl Writer<'_> {
    /// Writes `if (cond) then else otherwise` without a branch where it is a guarded
    /// vector copy of halves into a buffer not declared as `vec4`s (a gather into staging
    /// registers or a workgroup tile), and the switch is on. `false`: nothing
    /// written, the caller writes the `if`.
    pub(crate) fn branch_free_copy(
        &mut self,
        cond: &Expr,
        then: &KStmt,
        otherwise: Option<&KStmt>,
        level: Level,
    ) -> Result<bool, EmitError> {
        if !self.branch_free || needs_hoist(cond) || contains_load(cond) {
            return Ok(false);
        }
        let Some(g) = guarded(then, otherwise) else {
            return Ok(false);
        };
        // Halves only: the fp16 template's gathers, what the switch is measured on. The fp32
        // matmul template's predicated vec4 loads ran 4096³ 3.74 → 4.20 ms in this form on
        // an H100 through Vulkan (2026-11-22, `docs/matmul-template.md`).
        // A source declared as vec4s is read a vec4 at a time (whole vec4s only); another
        // (rows of 58 halves: 2 a copy) element by element, each load at a clamped index.
        let vec_src = self.vec4.contains(&g.src.id());
        if g.src.dtype() != DType::F16
            || self.vec4.contains(&g.dst.id())
            || (vec_src && g.lanes % 4 != 0)
        {
            return Ok(false);
        }
        let (di, si) = (self.resolved(g.di), self.resolved(g.si));
        if needs_hoist(&di) || needs_hoist(&si) || contains_load(&di) {
            return Ok(false);
        }
        // The fill must store lane k where the copy does: compare the written indices.
        let mut dst_index = Vec::new();
        for k in 0..g.lanes {
            let copy = self.expr(&fold(&(di.clone() + Expr::int(k as i64))))?.0;
            let mut m = std::collections::HashMap::new();
            m.insert(g.fill_var.clone(), Expr::int(k as i64));
            let fill = self.expr(&self.resolved(&g.fill_index.substitute(&m)))?.0;
            if copy != fill {
                return Ok(false);
            }
            dst_index.push(copy);
        }
        let (dn, sn) = (self.buffer_name(g.dst)?, self.buffer_name(g.src)?);
        let fallback = self.expr(&self.resolved(g.fallback))?.0;
        let guard = Var::new("guard", DType::Bool);
        let guard = self.namer.declare(NameKey::Var(guard.id()), "guard");
        let c = self.expr(cond)?.0;
        self.line(level, &format!("let {guard}: bool = {c};"));
        if !vec_src {
            for (k, d) in dst_index.iter().enumerate() {
                let s = self.expr(&fold(&(si.clone() + Expr::int(k as i64))))?.0;
                self.line(
                    level,
                    &format!(
                        "{dn}[{d}] = select({fallback}, {sn}[select(0, {s}, {guard})], {guard});"
                    ),
                );
            }
            return Ok(true);
        }
        let t = ty(g.src.dtype());
        let comps = ["x", "y", "z", "w"];
        for j in 0..g.lanes / 4 {
            let q = self.expr(&quarter(&si, j))?.0;
            let v = Var::new("v", g.src.dtype());
            let v = self.namer.declare(NameKey::Var(v.id()), "v");
            self.line(
                level,
                &format!("let {v}: vec4<{t}> = {sn}[select(0, {q}, {guard})];"),
            );
            for (k, comp) in comps.iter().enumerate() {
                let d = &dst_index[4 * j as usize + k];
                self.line(
                    level,
                    &format!("{dn}[{d}] = select({fallback}, {v}.{comp}, {guard});"),
                );
            }
        }
        Ok(true)
    }
}

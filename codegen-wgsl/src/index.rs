//! Index arithmetic written for what a Vulkan driver compiles well (`WEFT_WGSL_INDEX`).
//!
//! weft's index arithmetic is `i32`, and after lowering every division or remainder by a
//! positive constant whose dividend can be negative has been shifted to one that cannot
//! (`weft_ir`'s `floor_to_c`). CUDA's compiler sees `x / 35` on a non-negative `x` and
//! multiplies by a reciprocal; NVIDIA's Vulkan driver, given naga's SPIR-V for the same
//! WGSL, emitted a signed division through floating point — about 15 instructions of
//! absolute values, a reciprocal, a correction and sign fix-ups — for each one (SASS of
//! Inception-v3's 5×5 implicit GEMM at batch 8 on an H200, 2026-12-01: the A gather's
//! address and padding test take six divisions by 35, 60, 12 and 5 on every load, and the
//! kernel ran 99 µs against 36 µs for the same tile over stored operands). And WGSL's
//! `&&` short-circuits: naga writes each one as a branch, so every padding test became a
//! chain of nested branches around the loads, which the driver did not turn back into
//! predicates (192 branches in that kernel against 48 for the product).
//!
//! Two rewrites, both on by default:
//!
//! - **unsigned division** ([`unsigned_division`]): `x / c` and `x % c` with `c > 0` a
//!   constant and `x` proved non-negative become `u32` arithmetic; where the range of `x`
//!   allows, a multiplication by a fixed-point reciprocal and a division by a power of two
//!   (a shift) that is exact over the whole range ([`reciprocal`]), else `u32`'s `/`;
//! - **eager logic**: `a && b` and `a || b` of load-free operands are written `a & b`
//!   and `a | b` (both evaluated, no branch; the writer's `Expr::Binary` arm). Operands
//!   holding a load keep the short circuit: the proof that the load is in bounds may
//!   rely on it.
//!
//! `WEFT_WGSL_INDEX=plain` writes neither (the form before 2026-12-01), `div` or `logic`
//! one of them; anything else is refused, naming the variable.

use weft_codegen_common::EmitError;
use weft_ir::arith::{Bounds, bound};
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Expr};
use weft_ir::kernel::{KStmt, Kernel};

/// The environment variable that chooses the index forms.
pub const SWITCH: &str = "WEFT_WGSL_INDEX";

/// What [`SWITCH`] takes, as its refusal says.
const ALLOWED: &str = "fast (the default: unsigned divisions and eager logic), plain \
     (neither), div (unsigned divisions alone) or logic (eager logic alone)";

/// Which of the two rewrites a module is written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexForms {
    /// Divisions and remainders of non-negative `i32`s by constants in `u32`.
    pub unsigned_division: bool,
    /// `&&` and `||` of load-free operands as `&` and `|`.
    pub eager_logic: bool,
}

impl IndexForms {
    /// Both rewrites: the default.
    pub const FAST: IndexForms = IndexForms {
        unsigned_division: true,
        eager_logic: true,
    };
    /// Neither: the form written before 2026-12-01.
    pub const PLAIN: IndexForms = IndexForms {
        unsigned_division: false,
        eager_logic: false,
    };

    /// The forms [`SWITCH`] asks for (`kernel` names the error).
    pub fn from_env(kernel: &str) -> Result<IndexForms, EmitError> {
        match std::env::var(SWITCH).as_deref() {
            Err(_) | Ok("fast") => Ok(IndexForms::FAST),
            Ok("plain") => Ok(IndexForms::PLAIN),
            Ok("div") => Ok(IndexForms {
                unsigned_division: true,
                eager_logic: false,
            }),
            Ok("logic") => Ok(IndexForms {
                unsigned_division: false,
                eager_logic: true,
            }),
            Ok(other) => Err(EmitError::Switch {
                kernel: kernel.to_string(),
                variable: SWITCH,
                value: other.to_string(),
                allowed: ALLOWED,
            }),
        }
    }
}

/// A fixed-point reciprocal of `d` exact for every dividend in `0..=hi`: `(m, s)` such
/// that `x / d == (x * m) >> s` for all those `x`, with `x * m` below 2³² (so in `u32`).
/// `None` where no shift up to 31 gives one (or `d` is 0, 1 or a power of two, which
/// need none).
///
/// Why it is exact: with `m = ⌈2ˢ/d⌉` and `e = m·d − 2ˢ` (0 ≤ e < d), `x·m/2ˢ = x/d +
/// x·e/(d·2ˢ)`; writing `x = q·d + r`, that is `q + (r + x·e/2ˢ)/d`, whose floor is `q`
/// when `r + x·e/2ˢ < d`, which holds for every `r ≤ d − 1` when `x·e < 2ˢ`.
pub fn reciprocal(hi: i64, d: i64) -> Option<(u64, u32)> {
    if d < 2 || d & (d - 1) == 0 || !(0..1i64 << 31).contains(&hi) {
        return None;
    }
    let (hi, d) = (hi as u64, d as u64);
    (1..=31u32).find_map(|s| {
        let p = 1u64 << s;
        let m = p.div_ceil(d);
        let e = m * d - p;
        (hi * m < 1u64 << 32 && e * hi < p).then_some((m, s))
    })
}

/// `kernel` with every `i32` division and remainder by a positive constant whose
/// dividend is proved non-negative written in `u32` ([`reciprocal`] where it applies).
pub fn unsigned_division(kernel: &Kernel) -> Kernel {
    let mut bounds = Bounds::of_launch(kernel.grid, kernel.block);
    let mut k = kernel.clone();
    k.body = stmt(&kernel.body, &mut bounds);
    k
}

fn stmt(s: &KStmt, b: &mut Bounds) -> KStmt {
    match s {
        KStmt::Seq(items) => KStmt::Seq(items.iter().map(|i| stmt(i, b)).collect()),
        KStmt::For {
            var,
            extent,
            unroll,
            body,
        } => {
            b.set_extent(var, *extent);
            KStmt::For {
                var: var.clone(),
                extent: *extent,
                unroll: *unroll,
                body: Box::new(stmt(body, b)),
            }
        }
        KStmt::Let { var, value, body } => {
            let value2 = expr(value, b);
            b.set_let(var, value);
            KStmt::Let {
                var: var.clone(),
                value: value2,
                body: Box::new(stmt(body, b)),
            }
        }
        KStmt::If {
            cond,
            then,
            otherwise,
        } => KStmt::If {
            cond: expr(cond, b),
            then: Box::new(stmt(then, b)),
            otherwise: otherwise.as_ref().map(|o| Box::new(stmt(o, b))),
        },
        KStmt::Store { .. }
        | KStmt::Barrier
        | KStmt::Mapping(_)
        | KStmt::Comment(_)
        | KStmt::Frag(_)
        | KStmt::Fence
        | KStmt::AtomicAdd(_)
        | KStmt::Prefetch { .. }
        | KStmt::Grid(_) => s.map_exprs(&mut |e| expr(e, b)),
    }
}

/// `e` with its eligible divisions rewritten; bounds are taken of the original operands
/// (parents first), since [`bound`] does not follow `u32` arithmetic.
fn expr(e: &Expr, b: &Bounds) -> Expr {
    let go = |x: &Expr| Box::new(expr(x, b));
    match e {
        Expr::Binary(op @ (BinOp::Div | BinOp::Mod), a, d) => {
            match (d.as_int(), bound(a, b), e.dtype()) {
                (Some(c), Some((lo, hi)), DType::I32) if c > 0 && lo >= 0 => {
                    unsigned(*op == BinOp::Div, expr(a, b), hi, c)
                }
                _ => Expr::Binary(*op, go(a), go(d)),
            }
        }
        Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {
            e.clone()
        }
        Expr::Binary(op, x, y) => Expr::Binary(*op, go(x), go(y)),
        Expr::Unary(op, x) => Expr::Unary(*op, go(x)),
        Expr::Cast(t, x) => Expr::Cast(*t, go(x)),
        Expr::Select(c, t, f) => Expr::Select(go(c), go(t), go(f)),
        Expr::Call(f, args) => Expr::Call(*f, args.iter().map(|a| expr(a, b)).collect()),
        Expr::Load {
            buffer,
            indices,
            lanes,
        } => Expr::Load {
            buffer: buffer.clone(),
            indices: indices.iter().map(|i| expr(i, b)).collect(),
            lanes: *lanes,
        },
        // Reductions are gone before emission; `checked` refuses one.
        Expr::Reduce(_) => e.clone(),
    }
}

/// `a / c` (`div`) or `a % c` for `a` in `0..=hi`, in `u32`, as an `i32`.
fn unsigned(div: bool, a: Expr, hi: i64, c: i64) -> Expr {
    let u = |v: i64| Expr::Int(v, DType::U32);
    let au = a.clone().cast(DType::U32);
    match reciprocal(hi, c) {
        Some((m, s)) => {
            let q = Expr::binary(BinOp::Div, au * u(m as i64), u(1i64 << s)).cast(DType::I32);
            if div { q } else { a - q * Expr::int(c) }
        }
        None => {
            let op = if div { BinOp::Div } else { BinOp::Mod };
            Expr::binary(op, au, u(c)).cast(DType::I32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::reciprocal;

    /// Every dividend up to the range's end, for divisors 2..=300 and ranges from small
    /// to 2¹⁸: the reciprocal's quotient is the true one wherever one is given.
    #[test]
    fn reciprocal_is_exact_over_its_range() {
        let mut found = 0;
        for d in 2..=300i64 {
            for hi in [1, 7, 100, 1000, 9799, 65535, 172_871, 1 << 18] {
                let Some((m, s)) = reciprocal(hi, d) else {
                    continue;
                };
                found += 1;
                assert!(hi as u64 * m < 1 << 32, "d {d} hi {hi}");
                for x in 0..=hi as u64 {
                    assert_eq!((x * m) >> s, x / d as u64, "d {d} hi {hi} x {x}");
                }
            }
        }
        // Powers of two need none. Up to 46,000 every other divisor has one: the least
        // 2ˢ above (d − 1)·hi is at most 2(d − 1)·hi, so m ≤ 2·hi + 1 and hi·m < 2³².
        assert!(found > 1000, "{found}");
        for d in (3..=300).filter(|d: &i64| d & (d - 1) != 0) {
            assert!(reciprocal(46_000, d).is_some(), "d {d}");
        }
    }

    #[test]
    fn no_reciprocal_where_none_is_needed_or_possible() {
        assert_eq!(reciprocal(100, 1), None);
        assert_eq!(reciprocal(100, 64), None);
        assert_eq!(reciprocal(-1, 3), None);
        assert_eq!(reciprocal(1 << 31, 3), None);
        // 2³¹ − 1 over 3 would need 33 bits of product.
        assert_eq!(reciprocal((1 << 31) - 1, 3), None);
    }
}

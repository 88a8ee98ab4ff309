//! Aligned copies of a product's operands (`al`): where k or n is not a multiple of 4,
//! the fp32 template's global loads of A's rows (along k) and B's rows (along n) cannot
//! be 16-byte vectors (a row's start is not 16-byte aligned), and a block issues four
//! times the load instructions. Measured on an H100 (`docs/matmul-template.md`, "Odd
//! sizes"): 2039³ ran 411 µs by the rule where 2040³ ran 350 µs.
//!
//! With `al` = 1 two copy kernels first write `A` into `A_pad` (`m × k8`) and `B` into
//! `B_pad` (`k8 × n8`), `k8` and `n8` rounded up to multiples of 8 (rows 32-byte
//! aligned: on an H100 the cubes whose k is a multiple of 8 ran 342–364 µs, those of a
//! multiple of 4 only 378–389), zero past `k` and `n`; the product then runs over the
//! copies with 16-byte loads and writes the `m × n` of `C` that exist. The copies cost
//! `(m·k + k·n)` floats read (their writes stay in L2, which the product then reads)
//! and two launches. Absent or 0, nothing is copied, and no rule asks for them.
//!
//! Measured on an H200 (`docs/matmul-template.md`, "Aligned copies"): with one element
//! a copy thread the copies ran at 26% of the bandwidth (Nsight Compute: 13.6 µs each
//! at 2039³); with four (the injective rule's wide form) 12.4 and 11.7 µs, still 29%.
//! A rule taking them where an estimate said they paid (2026-11-28b, call 2) gained 2–5%
//! at the unaligned cubes 2030–2047 and 4% at 3001³, and lost 4–9% at 2049³ and 2050³
//! and 5% at 4095 × 4097 × 63: not kept.

use weft_ir::func::{Func, Param};
use weft_ir::prelude::*;

use super::MatmulParams;
use crate::rules;
use crate::split_k::join;
use crate::{BuildError, Config};

/// The parameter, with its meaning.
pub const PARAM: (&str, &str) = (
    "al",
    "1 copies A and B into buffers whose rows are 16-byte aligned first (k and n rounded up to multiples of 4, zero-filled) where k or n is not a multiple of 4; 0 or absent: never",
);

/// `n` rounded up to a multiple of 8.
pub fn up8(n: i64) -> i64 {
    (n + 7) / 8 * 8
}

/// A config's template part (without `al`) and its `al` (`None` where absent), checked.
pub fn parts(config: &Config) -> Result<(Config, Option<bool>), BuildError> {
    let rest = Config(
        config
            .0
            .iter()
            .filter(|(n, _)| n != PARAM.0)
            .cloned()
            .collect(),
    );
    match config.get(PARAM.0) {
        None => Ok((rest, None)),
        Some(v @ (0 | 1)) => Ok((rest, Some(v == 1))),
        Some(v) => Err(config.invalid(format!("`al` = {v} must be 0 or 1"))),
    }
}

/// Whether a product of `n` columns over a reduction of `k` with `al` (as [`parts`] read
/// it) copies its operands: only where `al` = 1 and a row is not 32-byte aligned.
pub fn copies(al: Option<bool>, n: i64, k: i64) -> bool {
    al == Some(true) && (k % 8 != 0 || n % 8 != 0)
}

/// The product `C = A · B` at `m × n × k` over aligned copies: the copy of `A` (where k
/// is unaligned), the copy of `B`, then the template `p` over them. Parameters `A`, `B`,
/// `C`, as the plain template's.
pub fn product(
    (m, n, k): (i64, i64, i64),
    p: &MatmulParams,
    config: &Config,
) -> Result<Func, BuildError> {
    let (k4, n4) = (up8(k), up8(n));
    let a = te::placeholder("A", &[m, k], DType::F32);
    let b = te::placeholder("B", &[k, n], DType::F32);
    let c = te::placeholder("C", &[m, n], DType::F32);
    let fail = |e: String| config.invalid(format!("the aligned copies: {e}"));
    // The copies as te computes, zero past the operands' edges; the product reads their
    // buffers, which `join` makes global temporaries.
    let b_copy = te::compute("B_pad", &[("kk", k4), ("j", n4)], |ix| {
        let inside = ix[0].clone().lt(k).and(ix[1].clone().lt(n));
        te::if_then_else(
            inside,
            b.at(&[ix[0].clone().min(k - 1), ix[1].clone().min(n - 1)]),
            Expr::f32(0.0),
        )
    });
    let copy_b =
        rules::injective("matmul_copy_b", std::slice::from_ref(&b), &b_copy).map_err(fail)?;
    if k == k4 {
        // A's rows are 32-byte aligned already: only B is copied (its rows to n4 columns).
        let main = super::kernel::template_over("matmul", &a, &b_copy, &c, p)?;
        return Ok(in_order(
            join("matmul", copy_b, main, &b_copy),
            [&a, &b, &c],
        ));
    }
    let a_copy = te::compute("A_pad", &[("i", m), ("kk", k4)], |ix| {
        te::if_then_else(
            ix[1].clone().lt(k),
            // Clamped as well as predicated: in bounds whichever the prover sees.
            a.at(&[ix[0].clone().min(m - 1), ix[1].clone().min(k - 1)]),
            Expr::f32(0.0),
        )
    });
    let copy_a =
        rules::injective("matmul_copy_a", std::slice::from_ref(&a), &a_copy).map_err(fail)?;
    let main = super::kernel::template_over("matmul", &a_copy, &b_copy, &c, p)?;
    // Parameters: B, A_pad, C; then A, B, C.
    let tail = join("matmul", copy_b, main, &b_copy);
    Ok(in_order(
        join("matmul", copy_a, tail, &a_copy),
        [&a, &b, &c],
    ))
}

/// `f` with its parameters in the order of `order` (the plain template's: A, B, C),
/// which joining the copies in front of the product does not keep.
fn in_order(mut f: Func, order: [&Buffer; 3]) -> Func {
    let rank = |p: &Param| {
        order
            .iter()
            .position(|b| matches!(p, Param::Buffer(x) if x == *b))
            .unwrap_or(order.len())
    };
    f.params.sort_by_key(rank);
    f
}

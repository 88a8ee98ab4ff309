//! Vector accesses from vectorized loops.
//!
//! A loop marked vectorized whose body is one copy `dst[f(v)] = src[g(v)]` (optionally
//! under a condition) becomes a single `lanes`-wide copy when both indices are
//! `base + v` with `base` a multiple of `lanes` (so the access is contiguous and aligned)
//! and the condition does not depend on the lane. A predicated load `dst[base + v] = c ?
//! src[base' + v] : fallback` with a lane-invariant `c` becomes the vector copy under `c`
//! and the fallback, lane by lane, otherwise. Anything else stays a loop, which the
//! emitters unroll.

use crate::arith::{Bounds, floormod_i64, modular, simplify_with};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, UnOp, Var};
use crate::kernel::KStmt;

/// The largest residue `b mod c` can have, from what is known of `b` modulo some `m`.
fn max_residue(b: &Expr, c: i64, bounds: &Bounds) -> i64 {
    let (m, r) = modular(b, bounds);
    if m == 0 {
        floormod_i64(r, c)
    } else if c % m == 0 {
        c - m + floormod_i64(r, m)
    } else {
        c - 1
    }
}

/// `e = base + stride * v` for `v` in `0..lanes`, if that holds.
fn lane_linear(e: &Expr, v: &Var, lanes: i64, b: &Bounds) -> Option<(Expr, i64)> {
    if !e.uses_var(v) {
        return Some((e.clone(), 0));
    }
    match e {
        Expr::Var(x) if x == v => Some((Expr::int(0), 1)),
        Expr::Binary(BinOp::Add, x, y) => {
            let (bx, sx) = lane_linear(x, v, lanes, b)?;
            let (by, sy) = lane_linear(y, v, lanes, b)?;
            Some((bx + by, sx + sy))
        }
        Expr::Binary(BinOp::Sub, x, y) => {
            let (bx, sx) = lane_linear(x, v, lanes, b)?;
            let (by, sy) = lane_linear(y, v, lanes, b)?;
            Some((bx - by, sx - sy))
        }
        Expr::Unary(UnOp::Neg, x) => {
            let (bx, sx) = lane_linear(x, v, lanes, b)?;
            Some((-bx, -sx))
        }
        Expr::Binary(BinOp::Mul, x, y) => {
            if let Some(c) = y.as_int() {
                let (bx, sx) = lane_linear(x, v, lanes, b)?;
                Some((bx * Expr::int(c), sx * c))
            } else if let Some(c) = x.as_int() {
                let (by, sy) = lane_linear(y, v, lanes, b)?;
                Some((by * Expr::int(c), sy * c))
            } else {
                None
            }
        }
        Expr::Binary(op @ (BinOp::FloorDiv | BinOp::FloorMod), x, y) => {
            let c = y.as_int().filter(|c| *c > 0)?;
            let (bx, sx) = lane_linear(x, v, lanes, b)?;
            let base = Expr::binary(*op, bx.clone(), Expr::int(c));
            // All lanes stay in one period of c: the division is lane-invariant and the
            // modulo keeps the stride.
            let fits = sx >= 0 && max_residue(&simplify_with(&bx, b), c, b) + sx * (lanes - 1) < c;
            match (op, sx, fits) {
                (_, 0, _) => Some((base, 0)),
                (BinOp::FloorDiv, _, true) => Some((base, 0)),
                (BinOp::FloorMod, _, true) => Some((base, sx)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn aligned(base: &Expr, lanes: i64, b: &Bounds) -> bool {
    let (m, r) = modular(base, b);
    (m == 0 || m % lanes == 0) && floormod_i64(r, lanes) == 0
}

/// A lane-invariant form of a condition, if there is one.
fn invariant_cond(c: &Expr, v: &Var, lanes: i64, b: &Bounds) -> Option<Expr> {
    if !c.uses_var(v) {
        return Some(c.clone());
    }
    match c {
        Expr::Binary(op @ (BinOp::And | BinOp::Or), x, y) => Some(Expr::binary(
            *op,
            invariant_cond(x, v, lanes, b)?,
            invariant_cond(y, v, lanes, b)?,
        )),
        Expr::Binary(op, x, y) if op.is_comparison() => {
            let (bx, sx) = lane_linear(x, v, lanes, b)?;
            let (by, sy) = lane_linear(y, v, lanes, b)?;
            if sx == sy {
                return Some(Expr::binary(*op, bx, by));
            }
            // base + v < n with base and n multiples of lanes: every lane agrees.
            let n = by.as_int()?;
            let ok =
                sx == 1 && sy == 0 && *op == BinOp::Lt && aligned(&bx, lanes, b) && n % lanes == 0;
            ok.then(|| Expr::binary(BinOp::Lt, simplify_with(&bx, b), Expr::int(n)))
        }
        _ => None,
    }
}

/// `c1 ? (c2 ? x : f) : f` as `c1 && c2 ? x : f`, repeatedly.
fn flatten_selects(e: &Expr) -> Expr {
    if let Expr::Select(c1, t, f1) = e
        && let Expr::Select(c2, x, f2) = &**t
        && f1 == f2
    {
        let inner = Expr::Select(
            Box::new((**c1).clone().and((**c2).clone())),
            x.clone(),
            f1.clone(),
        );
        return flatten_selects(&inner);
    }
    e.clone()
}

/// Turns a vectorized loop over `var` with `body` into one vector copy, if possible.
pub(crate) fn vectorize(var: &Var, lanes: i64, body: &KStmt, b: &Bounds) -> Option<KStmt> {
    // Block comments ride along in front of the copy.
    if let KStmt::Seq(items) = body {
        let (notes, rest): (Vec<&KStmt>, Vec<&KStmt>) =
            items.iter().partition(|s| matches!(s, KStmt::Comment(_)));
        if rest.len() != 1 {
            return None;
        }
        let v = vectorize(var, lanes, rest[0], b)?;
        return Some(KStmt::seq(notes.into_iter().cloned().chain([v]).collect()));
    }
    let (cond, store) = match body {
        KStmt::If {
            cond,
            then,
            otherwise: None,
        } => (Some(cond), &**then),
        s => (None, s),
    };
    let KStmt::Store {
        buffer: dst,
        index: di,
        value,
        lanes: 1,
    } = store
    else {
        return None;
    };
    // `c1 ? (c2 ? x : f) : f` is `c1 && c2 ? x : f`: a predicated load of a fused
    // prologue that is itself predicated (an im2col view's padding inside a tile edge).
    let value = &flatten_selects(value);
    // `dst[i] = c ? src[j] : fallback` (a predicated load): a vector copy under `c`,
    // the fallback stored lane by lane otherwise, when `c` and the fallback are the same
    // for every lane.
    if cond.is_none()
        && let Expr::Select(c, t, f) = value
        && matches!(**t, Expr::Load { lanes: 1, .. })
        && !f.uses_var(var)
        && f.loads().is_empty()
    {
        let copy = KStmt::Store {
            buffer: dst.clone(),
            index: di.clone(),
            value: (**t).clone(),
            lanes: 1,
        };
        let KStmt::If { cond, then, .. } = vectorize(
            var,
            lanes,
            &KStmt::If {
                cond: (**c).clone(),
                then: Box::new(copy),
                otherwise: None,
            },
            b,
        )?
        else {
            return None;
        };
        let fill = KStmt::For {
            var: var.clone(),
            extent: lanes,
            unroll: true,
            body: Box::new(KStmt::Store {
                buffer: dst.clone(),
                index: di.clone(),
                value: (**f).clone(),
                lanes: 1,
            }),
        };
        return Some(KStmt::If {
            cond,
            then,
            otherwise: Some(Box::new(fill)),
        });
    }
    let Expr::Load {
        buffer: src,
        indices,
        lanes: 1,
    } = value
    else {
        return None;
    };
    let ok_width = match dst.dtype() {
        DType::F32 | DType::I32 | DType::U32 => lanes == 2 || lanes == 4,
        // Halves move 4 (8 bytes) or 8 (16 bytes, one `uint4` / `LDG.128`) at a time.
        DType::F16 => lanes == 2 || lanes == 4 || lanes == 8,
        DType::Bool => false,
    };
    if !ok_width || src.dtype() != dst.dtype() || indices.len() != 1 {
        return None;
    }
    let (db, ds) = lane_linear(di, var, lanes, b)?;
    let (sb, ss) = lane_linear(&indices[0], var, lanes, b)?;
    if ds != 1 || ss != 1 {
        return None;
    }
    let (db, sb) = (simplify_with(&db, b), simplify_with(&sb, b));
    if !aligned(&db, lanes, b) || !aligned(&sb, lanes, b) {
        return None;
    }
    let copy = KStmt::Store {
        buffer: dst.clone(),
        index: db,
        value: Expr::Load {
            buffer: src.clone(),
            indices: vec![sb],
            lanes: lanes as u32,
        },
        lanes: lanes as u32,
    };
    match cond {
        None => Some(copy),
        Some(c) => Some(KStmt::If {
            cond: simplify_with(&invariant_cond(c, var, lanes, b)?, b),
            then: Box::new(copy),
            otherwise: None,
        }),
    }
}

//! Several lowered kernels written as one ([`join`]): blocks `[0, n0)` run the first
//! body, `[n0, n0 + n1)` the second with its block index rebased, and so on. Written on
//! the lowered IR ([`Kernel`]), so every emitter and the interpreter take the result as
//! any other kernel.

use std::collections::HashMap;

use weft_codegen_common::TargetLimits;
use weft_graph::TensorId;
use weft_ir::expr::BinOp;
use weft_ir::func::Param;
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam, LoweredFunc};
use weft_ir::prelude::*;

/// One kernel to join: a group's only kernel with the tensor each parameter of its
/// function holds.
pub(crate) struct Part<'a> {
    pub func: &'a LoweredFunc,
    pub tensors: &'a [TensorId],
}

/// Blocks of a launch: the product of its grid.
pub(crate) fn blocks(k: &Kernel) -> u64 {
    k.grid.iter().map(|&g| g as u64).product()
}

/// Whether `k` holds a block-wide barrier or a subgroup-collective operation: what a
/// part whose threads are guarded may not hold (the guarded-off threads would not reach
/// the barrier, nor take part in the shuffle).
fn collective(k: &Kernel) -> bool {
    let mut any = false;
    k.body.visit(&mut |s| any |= matches!(s, KStmt::Barrier));
    k.body.visit_exprs(&mut |e| {
        e.visit(&mut |e| any |= matches!(e, Expr::Call(f, _) if f.is_collective()))
    });
    any
}

/// The parts' functions as one function of one kernel (named after the first part's),
/// with the tensor each of its parameters holds; or why they cannot be one on a target
/// offering `limits`. Parameters holding the same tensor become one (the parts only read
/// it: [`super`] never joins a part that writes what another touches).
pub(crate) fn join(
    parts: &[Part<'_>],
    limits: &TargetLimits,
) -> Result<(LoweredFunc, Vec<TensorId>), String> {
    let first = &parts[0];
    let mut params: Vec<Param> = Vec::new();
    let mut tensors: Vec<TensorId> = Vec::new();
    // Per part: its buffers that another part's parameter holds already (by buffer id).
    let mut same: Vec<HashMap<u64, Buffer>> = Vec::new();
    for p in parts {
        let mut map = HashMap::new();
        for (param, &t) in p.func.params.iter().zip(p.tensors) {
            let Param::Buffer(b) = param else {
                return Err(format!("`{}` takes a scalar", p.func.name));
            };
            match tensors.iter().position(|&u| u == t) {
                Some(i) => {
                    if let Param::Buffer(held) = &params[i] {
                        map.insert(b.id(), held.clone());
                    }
                }
                None => {
                    params.push(param.clone());
                    tensors.push(t);
                }
            }
        }
        same.push(map);
    }
    let kernels: Vec<&Kernel> = parts.iter().map(|p| &p.func.kernels[0]).collect();
    let same_block = kernels.iter().all(|k| k.block == kernels[0].block);
    let threads = kernels
        .iter()
        .map(|k| k.threads_per_block())
        .max()
        .unwrap_or(1);
    let block = if same_block {
        kernels[0].block
    } else {
        [threads as u32, 1, 1]
    };
    if threads > limits.max_block_dim[0] {
        return Err(format!(
            "{threads} threads in one dimension exceed the target's {}",
            limits.max_block_dim[0]
        ));
    }
    let shared: u64 = kernels.iter().map(|k| k.shared_bytes()).sum();
    if shared > limits.max_shared_bytes {
        return Err(format!(
            "{shared} bytes of shared memory together exceed the target's {}",
            limits.max_shared_bytes
        ));
    }
    let total: u64 = kernels.iter().map(|k| blocks(k)).sum();
    if total > limits.max_grid_dim[0] {
        return Err(format!("{total} blocks exceed the target's grid"));
    }
    let mut kparams: Vec<KernelParam> = Vec::new();
    let mut branches: Vec<(u64, KStmt)> = Vec::new();
    let mut base = 0u64;
    for ((k, map), p) in kernels.iter().zip(&same).zip(parts) {
        let guarded = !same_block && k.threads_per_block() < threads;
        if guarded && collective(k) {
            return Err(format!(
                "`{}` has {} threads and a barrier or shuffle: guarding its threads would leave \
                 some out of it",
                k.name,
                k.threads_per_block()
            ));
        }
        for param in &k.params {
            let KernelParam::Buffer { buffer, access } = param else {
                return Err(format!("`{}` takes a scalar", p.func.name));
            };
            let buffer = map.get(&buffer.id()).unwrap_or(buffer).clone();
            match kparams.iter_mut().find_map(|q| match q {
                KernelParam::Buffer { buffer: b, access } if *b == buffer => Some(access),
                KernelParam::Buffer { .. } | KernelParam::Scalar(_) => None,
            }) {
                Some(a) if *a == *access => {}
                Some(a) => *a = Access::ReadWrite,
                None => kparams.push(KernelParam::Buffer {
                    buffer,
                    access: *access,
                }),
            }
        }
        let body = rebased(k, map, base, !same_block);
        let body = if guarded {
            KStmt::If {
                cond: Expr::Builtin(ThreadAxis::ThreadIdxX)
                    .lt(Expr::int(k.threads_per_block() as i64)),
                then: Box::new(body),
                otherwise: None,
            }
        } else {
            body
        };
        let body = KStmt::seq(vec![
            KStmt::Comment(format!("horizontal part: {}", k.name)),
            body,
        ]);
        base += blocks(k);
        branches.push((base, body));
    }
    // `if (b < n0) { part 0 } else if (b < n0 + n1) { part 1 } ... else { last }`: the
    // condition is the same for every thread of a block, so barriers inside stay
    // uniform (WGSL's workgroup_id is a uniform value).
    let mut body = branches
        .pop()
        .map(|(_, b)| b)
        .unwrap_or(KStmt::Seq(Vec::new()));
    while let Some((end, b)) = branches.pop() {
        body = KStmt::If {
            cond: Expr::Builtin(ThreadAxis::BlockIdxX).lt(Expr::int(end as i64)),
            then: Box::new(b),
            otherwise: Some(Box::new(body)),
        };
    }
    let k0 = kernels[0];
    let kernel = Kernel {
        name: k0.name.clone(),
        params: kparams,
        grid: [total as u32, 1, 1],
        block,
        shared: kernels
            .iter()
            .flat_map(|k| k.shared.iter().cloned())
            .collect(),
        locals: kernels
            .iter()
            .flat_map(|k| k.locals.iter().cloned())
            .collect(),
        body,
        min_blocks_per_sm: kernels
            .iter()
            .map(|k| k.min_blocks_per_sm)
            .max()
            .unwrap_or(0),
        async_copies: false,
        async_pending: 0,
        fragments: Vec::new(),
    };
    let func = LoweredFunc {
        name: first.func.name.clone(),
        params,
        temps: Vec::new(),
        kernels: vec![kernel],
    };
    Ok((func, tensors))
}

/// `k`'s body as a part of a joined kernel whose blocks `[base, base + blocks(k))` are
/// its: every block index taken from the joined kernel's one-dimensional block index
/// less `base` (a grid of several dimensions linearized x first, as CUDA numbers
/// blocks); with `linear_threads`, every thread index taken from the joined block's
/// one-dimensional thread index (x first, as CUDA numbers threads into warps, so that a
/// warp holds the same threads as before); buffers `same` names replaced.
fn rebased(k: &Kernel, same: &HashMap<u64, Buffer>, base: u64, linear_threads: bool) -> KStmt {
    let bin = |op, a: Expr, b: i64| Expr::binary(op, a, Expr::int(b));
    let local = bin(
        BinOp::Sub,
        Expr::Builtin(ThreadAxis::BlockIdxX),
        base as i64,
    );
    let local = if base == 0 {
        Expr::Builtin(ThreadAxis::BlockIdxX)
    } else {
        local
    };
    let [gx, gy, _] = k.grid.map(|g| g as i64);
    let [bx, by, _] = k.block.map(|b| b as i64);
    let split = |linear: Expr, x: i64, y: i64, axis: usize| -> Expr {
        match axis {
            0 if x == 1 => Expr::int(0),
            0 => bin(BinOp::Mod, linear, x),
            1 if y == 1 => Expr::int(0),
            1 => bin(BinOp::Mod, bin(BinOp::Div, linear, x), y),
            _ => bin(BinOp::Div, linear, x * y),
        }
    };
    let one_dim_grid = k.grid[1] == 1 && k.grid[2] == 1;
    let one_dim_block = k.block[1] == 1 && k.block[2] == 1;
    let axis = |a: ThreadAxis| -> Expr {
        if a.is_block() {
            if one_dim_grid {
                match a.dim() {
                    0 => local.clone(),
                    _ => Expr::int(0),
                }
            } else {
                split(local.clone(), gx, gy, a.dim())
            }
        } else if !linear_threads || one_dim_block {
            match (a.dim(), linear_threads) {
                (0, _) | (_, false) => Expr::Builtin(a),
                (_, true) => Expr::int(0),
            }
        } else {
            split(Expr::Builtin(ThreadAxis::ThreadIdxX), bx, by, a.dim())
        }
    };
    let body = k.body.map_exprs(&mut |e| {
        e.rewrite(&mut |x| match x {
            Expr::Builtin(a) => axis(a),
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => Expr::Load {
                buffer: same.get(&buffer.id()).cloned().unwrap_or(buffer),
                indices,
                lanes,
            },
            other => other,
        })
    });
    body.rewrite(&mut |s| match s {
        KStmt::Store {
            buffer,
            index,
            value,
            lanes,
        } => KStmt::Store {
            buffer: same.get(&buffer.id()).cloned().unwrap_or(buffer),
            index,
            value,
            lanes,
        },
        other => other,
    })
}

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
    // Index `axis` (0, 1, 2: x, y, z) of a linear index over extents `x`, `y`, ... .
    let split = |linear: Expr, x: i64, y: i64, axis: usize| -> Expr {
        if (axis == 0 && x == 1) || (axis == 1 && y == 1) {
            Expr::int(0)
        } else if axis == 0 {
            bin(BinOp::Mod, linear, x)
        } else if axis == 1 {
            bin(BinOp::Mod, bin(BinOp::Div, linear, x), y)
        } else {
            bin(BinOp::Div, linear, x * y)
        }
    };
    let one_dim_grid = k.grid[1] == 1 && k.grid[2] == 1;
    let one_dim_block = k.block[1] == 1 && k.block[2] == 1;
    let axis = |a: ThreadAxis| -> Expr {
        if a.is_block() {
            if one_dim_grid && a.dim() == 0 {
                local.clone()
            } else if one_dim_grid {
                Expr::int(0)
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
    // A part's wait would stand under the branch that picks the part, and its early
    // trigger would speak for the part's blocks only: the joined kernel waits at its top
    // and triggers nothing (a prefetch placed before a wait then runs after the wait).
    let body = body.without_grid(&|_| true);
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
        KStmt::Prefetch {
            buffer,
            index,
            bytes,
        } => KStmt::Prefetch {
            buffer: same.get(&buffer.id()).cloned().unwrap_or(buffer),
            index,
            bytes,
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::data::{Arg, TensorData};
    use weft_ir::expr::Scope;

    /// A kernel storing, for each thread of each block, a value naming its block and
    /// thread indices: `bx + 10·by + 100·tx + 1000·ty`.
    fn naming(name: &str, grid: [u32; 3], block: [u32; 3]) -> (LoweredFunc, usize) {
        let n = (grid.iter().product::<u32>() * block.iter().product::<u32>()) as usize;
        let out = Buffer::new(
            format!("{name}_out"),
            vec![n as i64],
            DType::F32,
            Scope::Global,
        );
        let ax = |a| Expr::Builtin(a);
        let [gx, _, _] = grid.map(|g| g as i64);
        let [bx, by, _] = block.map(|b| b as i64);
        let b = |op, x: Expr, y: Expr| Expr::binary(op, x, y);
        let blk = b(
            BinOp::Add,
            ax(ThreadAxis::BlockIdxX),
            b(BinOp::Mul, ax(ThreadAxis::BlockIdxY), Expr::int(gx)),
        );
        let thr = b(
            BinOp::Add,
            ax(ThreadAxis::ThreadIdxX),
            b(BinOp::Mul, ax(ThreadAxis::ThreadIdxY), Expr::int(bx)),
        );
        let index = b(BinOp::Add, b(BinOp::Mul, blk, Expr::int(bx * by)), thr);
        let value = [
            (ThreadAxis::BlockIdxX, 1),
            (ThreadAxis::BlockIdxY, 10),
            (ThreadAxis::ThreadIdxX, 100),
            (ThreadAxis::ThreadIdxY, 1000),
        ]
        .into_iter()
        .map(|(a, s)| b(BinOp::Mul, ax(a), Expr::int(s)))
        .reduce(|x, y| b(BinOp::Add, x, y))
        .unwrap_or(Expr::int(0));
        let kernel = Kernel {
            name: format!("{name}_kernel"),
            params: vec![KernelParam::Buffer {
                buffer: out.clone(),
                access: Access::Write,
            }],
            grid,
            block,
            shared: Vec::new(),
            locals: Vec::new(),
            body: KStmt::Store {
                buffer: out.clone(),
                index,
                value: value.cast(DType::F32),
                lanes: 1,
            },
            min_blocks_per_sm: 0,
            async_copies: false,
            async_pending: 0,
            fragments: Vec::new(),
        };
        let func = LoweredFunc {
            name: name.to_string(),
            params: vec![Param::Buffer(out)],
            temps: Vec::new(),
            kernels: vec![kernel],
        };
        (func, n)
    }

    fn run(func: &LoweredFunc, lens: &[usize]) -> Vec<Vec<f64>> {
        let mut args: Vec<Arg> = lens
            .iter()
            .map(|&n| Arg::Tensor(TensorData::poisoned(DType::F32, n)))
            .collect();
        weft_ir::interp::run(func, &mut args).unwrap();
        args.iter()
            .map(|a| match a {
                Arg::Tensor(t) => t.to_f64_vec(),
                Arg::Scalar(_) => Vec::new(),
            })
            .collect()
    }

    /// Parts of two-dimensional grids and blocks and of different thread counts, joined:
    /// every part sees the block and thread indices it saw alone (rebased, linearized x
    /// first, the part with fewer threads guarded), every element written once.
    #[test]
    fn joined_parts_see_their_own_block_and_thread_indices() {
        let (a, na) = naming("a", [2, 3, 1], [4, 2, 1]);
        let (b, nb) = naming("b", [5, 1, 1], [3, 1, 1]);
        let (c, nc) = naming("c", [1, 2, 1], [2, 4, 1]);
        let tensors = [TensorId(0), TensorId(1), TensorId(2)];
        let parts: Vec<Part<'_>> = [&a, &b, &c]
            .iter()
            .zip(&tensors)
            .map(|(f, t)| Part {
                func: f,
                tensors: std::slice::from_ref(t),
            })
            .collect();
        let limits = weft_runtime::Target::parse("cuda").unwrap().limits();
        let (joined, held) = join(&parts, &limits).unwrap();
        assert_eq!(held, tensors);
        let k = &joined.kernels[0];
        assert_eq!((k.grid, k.block), ([6 + 5 + 2, 1, 1], [8, 1, 1]));
        let alone: Vec<Vec<f64>> = [(&a, na), (&b, nb), (&c, nc)]
            .iter()
            .flat_map(|(f, n)| run(f, &[*n]))
            .collect();
        let together = run(&joined, &[na, nb, nc]);
        assert!(alone.iter().flatten().all(|v| v.is_finite()));
        assert_eq!(together, alone);
    }
    /// A part that prefetches, waits for the previous kernel where it says and triggers
    /// the next: joined, its wait and trigger go (a wait may not stand under the branch
    /// that picks the part; the joined kernel waits at its top), its prefetch stays, and
    /// every part computes what it computed alone.
    #[test]
    fn joined_parts_drop_their_grid_controls() {
        use weft_ir::func::GridControl;
        let (mut a, na) = naming("a", [2, 1, 1], [4, 1, 1]);
        let (b, nb) = naming("b", [3, 1, 1], [4, 1, 1]);
        let k = &mut a.kernels[0];
        let KStmt::Store { buffer, index, .. } = &k.body else {
            panic!("naming stores once");
        };
        let prefetch = KStmt::Prefetch {
            buffer: buffer.clone(),
            index: index.clone(),
            bytes: 0,
        };
        let store = k.body.clone();
        // A prefetch reads (what lowering would have said of the parameter).
        k.params = vec![KernelParam::Buffer {
            buffer: buffer.clone(),
            access: Access::ReadWrite,
        }];
        k.body = KStmt::seq(vec![
            prefetch,
            KStmt::Grid(GridControl::Wait),
            store,
            KStmt::Grid(GridControl::LaunchDependents),
        ]);
        weft_codegen_common::contract::check_lowered(k, "test").unwrap();
        let tensors = [TensorId(0), TensorId(1)];
        let parts: Vec<Part<'_>> = [&a, &b]
            .iter()
            .zip(&tensors)
            .map(|(f, t)| Part {
                func: f,
                tensors: std::slice::from_ref(t),
            })
            .collect();
        let limits = weft_runtime::Target::parse("cuda").unwrap().limits();
        let (joined, _) = join(&parts, &limits).unwrap();
        let k = &joined.kernels[0];
        let (mut grids, mut prefetches) = (0, 0);
        k.body.visit(&mut |s| {
            grids += matches!(s, KStmt::Grid(_)) as usize;
            prefetches += matches!(s, KStmt::Prefetch { .. }) as usize;
        });
        assert_eq!((grids, prefetches), (0, 1), "{k}");
        weft_codegen_common::contract::check_lowered(k, "test").unwrap();
        let alone: Vec<Vec<f64>> = [(&a, na), (&b, nb)]
            .iter()
            .flat_map(|(f, n)| run(f, &[*n]))
            .collect();
        assert_eq!(run(&joined, &[na, nb]), alone);
    }
}

//! Builders for hand-written kernels, shared by the interpreter tests.

pub use std::collections::HashMap;
pub use std::time::Instant;

pub use half::f16;
pub use rand::{Rng, SeedableRng, rngs::StdRng};
pub use weft_ir::data::{Arg, Scalar, TensorData};
pub use weft_ir::dtype::DType;
pub use weft_ir::expr::{BinOp, Buffer, Expr, Scope, ThreadAxis, Var};
pub use weft_ir::func::Param;
pub use weft_ir::interp::{self, InterpError, MemOp, ThreadId};
pub use weft_ir::kernel::{Access, KMapping, KStmt, Kernel, KernelParam, LoweredFunc};
pub use weft_ir::mapping::spatial;

pub fn tx() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxX)
}
pub fn ty() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxY)
}
pub fn bx() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxX)
}
pub fn by() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxY)
}
pub fn int(v: i64) -> Expr {
    Expr::int(v)
}
pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}
pub fn global(name: &str, n: i64, dtype: DType) -> Buffer {
    Buffer::new(name, vec![n], dtype, Scope::Global)
}
pub fn load(b: &Buffer, i: Expr) -> Expr {
    b.load(vec![i])
}
pub fn vload(b: &Buffer, i: Expr, lanes: u32) -> Expr {
    Expr::Load {
        buffer: b.clone(),
        indices: vec![i],
        lanes,
    }
}
pub fn store(b: &Buffer, i: Expr, v: Expr) -> KStmt {
    KStmt::Store {
        buffer: b.clone(),
        index: i,
        value: v,
        lanes: 1,
    }
}
pub fn let_(v: &Var, value: Expr, body: KStmt) -> KStmt {
    KStmt::Let {
        var: v.clone(),
        value,
        body: Box::new(body),
    }
}
pub fn for_(v: &Var, extent: i64, body: KStmt) -> KStmt {
    KStmt::For {
        var: v.clone(),
        extent,
        unroll: false,
        body: Box::new(body),
    }
}
pub fn if_(cond: Expr, then: KStmt) -> KStmt {
    KStmt::If {
        cond,
        then: Box::new(then),
        otherwise: None,
    }
}
pub fn param(b: &Buffer, access: Access) -> KernelParam {
    KernelParam::Buffer {
        buffer: b.clone(),
        access,
    }
}
pub fn kernel(
    name: &str,
    params: Vec<KernelParam>,
    grid: [u32; 3],
    block: [u32; 3],
    body: KStmt,
) -> Kernel {
    Kernel {
        name: name.into(),
        params,
        grid,
        block,
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    }
}
pub fn func(name: &str, params: Vec<Param>, kernels: Vec<Kernel>) -> LoweredFunc {
    LoweredFunc {
        name: name.into(),
        params,
        temps: vec![],
        kernels,
    }
}
pub fn rand_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}
pub fn f32s(a: &Arg) -> &[f32] {
    match a {
        Arg::Tensor(TensorData::F32(v)) => v,
        other => panic!("expected f32 data, got {other:?}"),
    }
}
pub fn i32s(a: &Arg) -> &[i32] {
    match a {
        Arg::Tensor(TensorData::I32(v)) => v,
        other => panic!("expected i32 data, got {other:?}"),
    }
}
pub fn tid(block: [u32; 3], thread: [u32; 3]) -> ThreadId {
    ThreadId { block, thread }
}

/// Runs a single kernel with the given buffers (by buffer) and returns them.
pub fn run_one(
    k: &Kernel,
    data: Vec<(&Buffer, TensorData)>,
) -> Result<Vec<TensorData>, InterpError> {
    let ids: Vec<u64> = data.iter().map(|(b, _)| b.id()).collect();
    let mut map: HashMap<u64, TensorData> = data.into_iter().map(|(b, d)| (b.id(), d)).collect();
    interp::run_kernel(k, &mut map, &HashMap::new())?;
    Ok(ids
        .iter()
        .map(|id| map.remove(id).expect("buffer kept"))
        .collect())
}

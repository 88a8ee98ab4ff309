//! The CPU interpreter of lowered programs: runs a [`LoweredFunc`] (or one [`Kernel`])
//! with GPU semantics and checks what a GPU would not.
//!
//! Blocks run one after another (small ones a few at a time, side by side, which no
//! race-free kernel can tell apart); the threads of a block run in lockstep (every
//! statement completes for all active threads before the next starts). `if`, `select`,
//! `&&` and `||` split the active threads, so a guarded load never runs unguarded. Values
//! follow the device: `i32`/`u32` wrap, floats are rounded to their dtype after every
//! operation, integer `/` and `%` truncate like C.
//!
//! It reports, as typed [`InterpError`]s naming the buffer, the flat index, the block and
//! the thread:
//! - out-of-bounds loads and stores, and misaligned vector accesses;
//! - shared-memory races: two threads of a block touch one element with no barrier
//!   between, at least one of them writing;
//! - global-memory races: within one launch, an element written by one thread and read or
//!   written by another thread of another block, or of the same block with no barrier
//!   between (blocks synchronise only through a counter: a block's writes before a
//!   device-scope fence and its atomic on the counter are ordered before the accesses
//!   of a block whose later atomic on it observed them, `sync`);
//! - barriers reached by only part of a block, unexpanded task mappings, unbound variables,
//!   type mismatches, integer division by zero.
//!
//! A kernel is first compiled to a compact form (variables to slots, buffers to indices,
//! operations resolved by type) and then evaluated one expression node at a time over all
//! active threads, so a 128³ one-thread-per-element matmul takes a fraction of a second.
//!
//! ```
//! use std::collections::HashMap;
//! use weft_ir::data::{Arg, TensorData};
//! use weft_ir::dtype::DType;
//! use weft_ir::expr::{Buffer, Expr, Scope, ThreadAxis};
//! use weft_ir::func::Param;
//! use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam, LoweredFunc};
//!
//! // out[t] = 2 * t for 4 threads of one block.
//! let out = Buffer::new("out", vec![4], DType::I32, Scope::Global);
//! let t = Expr::Builtin(ThreadAxis::ThreadIdxX);
//! let kernel = Kernel {
//!     name: "double".into(),
//!     params: vec![KernelParam::Buffer { buffer: out.clone(), access: Access::Write }],
//!     grid: [1, 1, 1],
//!     block: [4, 1, 1],
//!     shared: vec![],
//!     locals: vec![],
//!     body: KStmt::Store { buffer: out.clone(), index: t.clone(), value: t * 2, lanes: 1 },
//!     min_blocks_per_sm: 0,
//!     async_copies: false,
//!     async_pending: 0,
//!     fragments: vec![],
//! };
//! let func = LoweredFunc {
//!     name: "double".into(),
//!     params: vec![Param::Buffer(out)],
//!     temps: vec![],
//!     kernels: vec![kernel],
//! };
//! let mut args = [Arg::Tensor(TensorData::poisoned(DType::I32, 4))];
//! weft_ir::interp::run(&func, &mut args).unwrap();
//! assert_eq!(args[0], Arg::Tensor(TensorData::I32(vec![0, 2, 4, 6])));
//! ```

mod compile;
mod error;
mod exec;
mod fragment;
mod memory;
mod node;
mod race;
mod sync;
mod value;

use std::collections::HashMap;

pub use error::{InterpError, MemOp, ThreadId};

use crate::data::{Arg, Scalar, TensorData};
use crate::func::Param;
use crate::kernel::{Kernel, LoweredFunc};
use compile::BufKind;

/// Runs `func` on `args`, given in the order of `func.params`: an [`Arg::Tensor`] for
/// each buffer parameter (its dtype and length must match the buffer; a `bool` buffer
/// takes `u32` data), an [`Arg::Scalar`] for each scalar parameter. Temporaries are
/// allocated poisoned. Output tensors are updated in place; on an error they hold what
/// the kernels before the failing one wrote.
pub fn run(func: &LoweredFunc, args: &mut [Arg]) -> Result<(), InterpError> {
    if args.len() != func.params.len() {
        return Err(InterpError::ArgCount {
            func: func.name.clone(),
            expected: func.params.len(),
            got: args.len(),
        });
    }
    let mut buffers: HashMap<u64, TensorData> = HashMap::new();
    let mut scalars: HashMap<u64, Scalar> = HashMap::new();
    for (param, arg) in func.params.iter().zip(args.iter()) {
        check_arg(param, arg)?;
    }
    for t in &func.temps {
        let len = usize::try_from(t.numel())
            .ok()
            .filter(|_| t.shape().iter().all(|&d| d > 0))
            .ok_or_else(|| InterpError::BadShape {
                kernel: func.name.clone(),
                buffer: t.name().to_string(),
                shape: t.shape().to_vec(),
            })?;
        buffers.insert(t.id(), TensorData::poisoned(t.dtype(), len));
    }
    // Counters start at zero, as the runtime allocates them.
    for t in func.counters() {
        let len = t.numel().max(0) as usize;
        buffers.insert(t.id(), TensorData::zeros(t.dtype(), len));
    }
    // Move the tensors into the map (no copy) and back out whatever happens.
    for (param, arg) in func.params.iter().zip(args.iter_mut()) {
        match (param, arg) {
            (Param::Buffer(b), Arg::Tensor(data)) => {
                let data = std::mem::replace(data, TensorData::F32(Vec::new()));
                buffers.insert(b.id(), data);
            }
            (Param::Scalar(v), Arg::Scalar(s)) => {
                scalars.insert(v.id(), *s);
            }
            // check_arg refused every other pairing.
            _ => {}
        }
    }
    let result = func
        .kernels
        .iter()
        .try_for_each(|k| run_kernel(k, &mut buffers, &scalars));
    for (param, arg) in func.params.iter().zip(args.iter_mut()) {
        if let (Param::Buffer(b), Arg::Tensor(data)) = (param, arg)
            && let Some(d) = buffers.remove(&b.id())
        {
            *data = d;
        }
    }
    result
}

fn check_arg(param: &Param, arg: &Arg) -> Result<(), InterpError> {
    let kind = |a: &Arg| match a {
        Arg::Tensor(_) => "tensor",
        Arg::Scalar(_) => "scalar",
    };
    match (param, arg) {
        (Param::Buffer(b), Arg::Tensor(data)) => {
            let want = value::storage_dtype(b.dtype());
            if data.dtype() != want {
                return Err(InterpError::ArgDType {
                    param: b.name().to_string(),
                    expected: want,
                    got: data.dtype(),
                });
            }
            if b.numel() < 0 || data.len() as u64 != b.numel() as u64 {
                return Err(InterpError::ArgLen {
                    param: b.name().to_string(),
                    expected: b.numel(),
                    got: data.len(),
                });
            }
            Ok(())
        }
        (Param::Scalar(v), Arg::Scalar(s)) => {
            if s.dtype() != v.dtype() {
                return Err(InterpError::ArgDType {
                    param: v.name().to_string(),
                    expected: v.dtype(),
                    got: s.dtype(),
                });
            }
            Ok(())
        }
        (Param::Buffer(b), a) => Err(InterpError::ArgKind {
            param: b.name().to_string(),
            expected: "tensor",
            got: kind(a),
        }),
        (Param::Scalar(v), a) => Err(InterpError::ArgKind {
            param: v.name().to_string(),
            expected: "scalar",
            got: kind(a),
        }),
    }
}

/// Runs one kernel launch over `buffers` (by [`crate::expr::Buffer::id`]; every buffer
/// parameter must be there, with the buffer's dtype and length) with the scalar
/// parameters' values in `scalars` (by [`crate::expr::Var::id`]). The buffers are updated
/// only if the kernel completes.
pub fn run_kernel(
    kernel: &Kernel,
    buffers: &mut HashMap<u64, TensorData>,
    scalars: &HashMap<u64, Scalar>,
) -> Result<(), InterpError> {
    let prog = compile::compile(kernel)?;
    let mut globals = Vec::with_capacity(prog.bufs.len());
    for slot in &prog.bufs {
        if slot.kind != BufKind::Global {
            globals.push(Vec::new());
            continue;
        }
        let b = &slot.buffer;
        let Some(data) = buffers.get(&b.id()) else {
            return Err(InterpError::MissingBuffer {
                kernel: kernel.name.clone(),
                buffer: b.name().to_string(),
            });
        };
        let want = value::storage_dtype(b.dtype());
        if data.dtype() != want {
            return Err(InterpError::ArgDType {
                param: b.name().to_string(),
                expected: want,
                got: data.dtype(),
            });
        }
        if data.len() != slot.numel {
            return Err(InterpError::ArgLen {
                param: b.name().to_string(),
                expected: b.numel(),
                got: data.len(),
            });
        }
        globals.push(value::to_raw(data));
    }
    let mut scalar_raw = Vec::with_capacity(prog.scalars.len());
    for (_, v) in &prog.scalars {
        let Some(s) = scalars.get(&v.id()) else {
            return Err(InterpError::MissingScalar {
                kernel: kernel.name.clone(),
                var: v.name().to_string(),
            });
        };
        if s.dtype() != v.dtype() {
            return Err(InterpError::ArgDType {
                param: v.name().to_string(),
                expected: v.dtype(),
                got: s.dtype(),
            });
        }
        scalar_raw.push(scalar_bits(*s));
    }
    let data = exec::Machine::new(&prog, kernel.grid, kernel.block, globals, &scalar_raw)?.run()?;
    for (slot, raw) in prog.bufs.iter().zip(&data) {
        if slot.kind == BufKind::Global
            && let Some(d) = buffers.get_mut(&slot.buffer.id())
        {
            value::from_raw(raw, d);
        }
    }
    Ok(())
}

fn scalar_bits(s: Scalar) -> value::Raw {
    match s {
        Scalar::F32(x) => x.to_bits(),
        Scalar::F16(x) => x.to_bits() as value::Raw,
        Scalar::I32(x) => x as value::Raw,
        Scalar::U32(x) => x,
    }
}

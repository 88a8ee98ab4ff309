//! The C-family writer shared by the CUDA and MSL emitters.
//!
//! A backend is a [`Dialect`]: a handful of constants and `match` functions (type names,
//! literals, casts, intrinsics, address spaces, barrier, thread-index spelling, the kernel
//! signature). Everything else — statements, precedence, naming, vector copies — is
//! [`writer::write_kernel`], so the two languages differ only where the tables differ
//! (tinygrad's `CStyleLanguage` and TVM's `codegen_c.cc` hooks are the models).

mod writer;

pub use writer::{KernelNames, kernel_names, write_kernel};

use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Intrinsic, Scope, ThreadAxis};

pub(crate) use crate::prec::{Prec, binop_prec, needs_parens};
use weft_ir::fragment::Fragment;
use weft_ir::kernel::{Kernel, LoweredFunc};

use crate::emitted::{Emitted, EntryPoint, Language, checked};
use crate::error::EmitError;
use crate::limits::TargetLimits;

/// What differs between C-family languages. Strings returned are pieces of source.
pub trait Dialect {
    /// The backend's name in errors (`CUDA`, `MSL`).
    const NAME: &'static str;
    /// The statement that synchronises a block on shared memory.
    const BARRIER: &'static str;
    /// The line written before a `for` the schedule unrolls.
    const UNROLL_PRAGMA: &'static str;
    /// The line written before a serial `for` whose body has loops the schedule
    /// unrolled and no barrier, where the compiler would otherwise unroll it too and
    /// issue the loads of every copy first (`None`: nothing). A barrier fences the
    /// scheduler: copies of a loop with one cannot pull each other's loads ahead.
    const KEEP_LOOP_PRAGMA: Option<&'static str> = None;

    /// Reserved-word tables (see [`crate::keywords`]).
    fn reserved(&self) -> &[&'static [&'static str]];
    /// The scalar type name (`float`, `half`, `int`, ...).
    fn scalar_type(&self, dtype: DType) -> &'static str;
    /// The type a `lanes`-wide copy of `dtype` moves (`float4`, `half2`, ...).
    fn vector_type(&self, dtype: DType, lanes: u32) -> &'static str;
    /// The cast that turns a pointer into `buffer` (of `scope`) into a pointer to
    /// `vector_type` (`(const float4*)`, `(threadgroup float4*)`).
    fn vector_pointer(&self, scope: Scope, is_const: bool, vector_type: &str) -> String;
    /// A literal of a float type. `text` is the shortest decimal that round-trips in
    /// `dtype`, without suffix; `None` for an infinity or NaN (`value` tells which).
    fn float_literal(&self, dtype: DType, text: Option<&str>, value: f64) -> String;
    /// `inner` converted from `from` to `to`; `inner` is already parenthesised if needed.
    fn cast(&self, to: DType, from: DType, inner: &str) -> String;
    /// A call of `f` on `args` of type `dtype`; `None` if the dialect has no spelling.
    fn intrinsic(&self, f: Intrinsic, dtype: DType, args: &[String]) -> Option<String>;
    /// `min`/`max` (`op` is `BinOp::Min` or `BinOp::Max`) of two values of type `dtype`.
    fn min_max(&self, op: BinOp, dtype: DType, a: &str, b: &str) -> String;
    /// The floating-point remainder (C's `fmod`) of two values of type `dtype`.
    fn float_mod(&self, dtype: DType, a: &str, b: &str) -> String;
    /// The expression a thread or block index is read from (`threadIdx.x`).
    fn builtin(&self, axis: ThreadAxis) -> String;
    /// A shared-memory array declaration, without the trailing `;`.
    fn shared_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String;
    /// A per-thread array declaration, without the trailing `;`.
    fn local_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String;
    /// The kernel's signature up to (not including) the opening `{`.
    fn signature(&self, kernel: &Kernel, names: &KernelNames) -> String;

    /// Lines that copy `bytes` from `src` (a global pointer) to `dst` (a shared pointer)
    /// asynchronously, given `sync`, the synchronous copy, for where the hardware has
    /// none; `None` where the dialect has no asynchronous copy (the caller writes `sync`).
    /// Used in kernels with [`Kernel::async_copies`].
    fn async_copy(&self, _dst: &str, _src: &str, _bytes: u32, _sync: &str) -> Option<Vec<String>> {
        None
    }
    /// Lines that wait for the thread's asynchronous copies, written before each barrier
    /// of a kernel with [`Kernel::async_copies`]: all of them, or with `pending > 0` all
    /// but those of the newest `pending` groups, after closing the group of the copies
    /// issued since the last barrier ([`Kernel::async_pending`]).
    fn async_wait(&self, _pending: u32) -> Vec<String> {
        Vec::new()
    }
    /// The line that orders the thread's earlier shared-memory writes (generic proxy,
    /// `cp.async` included) before later reads by the async proxy (`wgmma`), written
    /// after [`Dialect::async_wait`] at each barrier of a kernel whose asynchronous
    /// copies fill tiles a `wgmma` reads; `None` where the dialect has no such proxies.
    fn proxy_fence(&self) -> Option<&'static str> {
        None
    }
    /// The statement that fences the thread's memory accesses at device scope
    /// ([`weft_ir::kernel::KStmt::Fence`]); `None` where the language orders nothing
    /// between blocks (a kernel with a fence is then refused).
    fn device_fence(&self) -> Option<&'static str> {
        None
    }
    /// An atomic fetch-add of `value` to the global 32-bit integer `ptr` points at,
    /// returning the old value (source text; [`weft_ir::kernel::KStmt::AtomicAdd`]);
    /// `None` where the dialect does not write one (the kernel is then refused).
    fn atomic_add(&self, _ptr: &str, _value: &str) -> Option<String> {
        None
    }
    /// The index expression of element `index` (source text) of a shared tile in
    /// Hopper's 128-byte swizzled layout ([`weft_ir::tma`]) where threads, not TMA,
    /// read or write it; `None` where the dialect has no such tiles.
    fn swizzled_index(&self, _index: &str) -> Option<String> {
        None
    }

    /// Where `bytes` of shared memory are more than the dialect declares statically, the
    /// declaration (without `;`) of one dynamically sized byte array named
    /// [`DYNAMIC_SHARED`] that the kernel's shared arrays are carved from (at
    /// [`shared_offsets`]); the launch then passes its size. `None`: static arrays.
    fn dynamic_shared(&self, _bytes: u64) -> Option<String> {
        None
    }

    /// The statement a kernel starts with to wait for the kernel launched before it
    /// ([`crate::EntryPoint::waits_for_previous_grid`]), or writes at its
    /// [`weft_ir::func::GridControl::Wait`] where it places one; `None` where the dialect
    /// launches kernels one after the other anyway.
    fn grid_dependency(&self) -> Option<&'static str> {
        None
    }

    /// The statement that lets the next kernel launch before this one ends
    /// ([`weft_ir::func::GridControl::LaunchDependents`]); `None` where the dialect has
    /// no such control (the statement is then left out: launches stay ordered).
    fn launch_dependents(&self) -> Option<&'static str> {
        None
    }

    /// The statement that prefetches the global element at `address` (source text such
    /// as `&B[i]`; [`weft_ir::kernel::KStmt::Prefetch`]); `None` where the dialect has
    /// no prefetch (the hint is then left out: it changes no value).
    fn prefetch(&self, _address: &str) -> Option<String> {
        None
    }

    /// The statement that prefetches `bytes` (a multiple of 16) of global memory from
    /// `address` (16-byte aligned) on; by default the line holding the first
    /// ([`Self::prefetch`]).
    fn prefetch_bulk(&self, address: &str, _bytes: u32) -> Option<String> {
        self.prefetch(address)
    }

    /// Matrix fragments, if the dialect has them ([`FragmentDialect`]).
    fn fragments(&self) -> Option<&dyn FragmentDialect> {
        None
    }
}

/// The byte array dynamic shared memory is carved from ([`Dialect::dynamic_shared`]).
pub const DYNAMIC_SHARED: &str = "weft_smem";

use crate::layout::apart_bytes;
pub use crate::layout::shared_offsets;

/// The dynamic shared memory a launch of `kernel` emitted in `dialect` must pass: its
/// shared arrays' bytes where the dialect carves them from one dynamic array
/// ([`Dialect::dynamic_shared`]), else 0.
pub fn dynamic_shared_bytes<D: Dialect>(dialect: &D, kernel: &Kernel) -> u32 {
    let (_, bytes) = shared_offsets(kernel);
    if dialect.dynamic_shared(apart_bytes(kernel)).is_some() {
        bytes.min(u32::MAX as u64) as u32
    } else {
        0
    }
}

/// The entry point of `kernel` written in `dialect`: its function name and launch facts.
pub fn entry_point<D: Dialect>(dialect: &D, kernel: &Kernel) -> EntryPoint {
    let mut entry = EntryPoint::new(kernel, kernel_names(dialect, kernel).kernel);
    entry.dynamic_shared_bytes = dynamic_shared_bytes(dialect, kernel);
    entry.waits_for_previous_grid = dialect.grid_dependency().is_some();
    entry
}

/// `func`'s kernels in one translation unit of `dialect`: each checked once against
/// `limits`, entry points unique, `prelude(f16, fragments)` first. A function without
/// kernels is refused, so every [`Emitted`] has an entry point.
pub fn emit_unit<D: Dialect>(
    dialect: &D,
    language: Language,
    func: &LoweredFunc,
    limits: &TargetLimits,
    prelude: impl Fn(bool, bool) -> String,
) -> Result<Emitted, EmitError> {
    if func.kernels.is_empty() {
        return Err(EmitError::Invalid {
            kernel: func.name.clone(),
            what: "the function has no kernels to emit".to_string(),
        });
    }
    let mut seen = std::collections::HashSet::new();
    for k in &func.kernels {
        checked(k, language, limits)?;
        let entry = kernel_names(dialect, k).kernel;
        if !seen.insert(entry.clone()) {
            return Err(EmitError::Invalid {
                kernel: k.name.clone(),
                what: format!(
                    "its entry point `{entry}` repeats in function `{}`",
                    func.name
                ),
            });
        }
    }
    let f16 = func.kernels.iter().any(|k| k.uses_dtype(DType::F16));
    let fragments = func.kernels.iter().any(|k| k.uses_fragments());
    let mut source = prelude(f16, fragments);
    for (i, k) in func.kernels.iter().enumerate() {
        if i > 0 {
            source.push('\n');
        }
        source.push_str(&write_kernel(dialect, k)?);
    }
    Ok(Emitted {
        language,
        source,
        kernels: func
            .kernels
            .iter()
            .map(|k| entry_point(dialect, k))
            .collect(),
    })
}

/// How a C-family language spells matrix fragments (CUDA's `mma.sync`, Metal's
/// `simdgroup_matrix`). Tiles are `name[index]`; pointers are `base + offset`.
/// A [`weft_ir::fragment::FragOp::Map`] with its names written: the tile it writes, the
/// element's coordinates (where the value reads them), each argument (its name, fragment
/// and tile), and the value.
pub struct ElementMap<'a> {
    pub dst: &'a Fragment,
    pub tile: String,
    pub row: Option<String>,
    pub col: Option<String>,
    pub args: Vec<(String, &'a Fragment, String)>,
    pub value: String,
}

pub trait FragmentDialect {
    /// Why the dialect cannot hold `f` (an unsupported shape or type), if it cannot.
    fn unsupported(&self, f: &Fragment) -> Option<String>;
    /// The declaration of an array of `f.count()` tiles, without the trailing `;`.
    fn decl(&self, f: &Fragment, name: &str) -> String;
    /// `tile` ← `value` everywhere (`value` is of the fragment's type).
    fn fill(&self, f: &Fragment, tile: &str, value: &str) -> String;
    /// `tile` ← the tile at `ptr` (into memory of `scope`), rows `stride` elements apart.
    fn load(&self, f: &Fragment, tile: &str, ptr: &str, stride: i64, scope: Scope) -> String;
    /// The tile at `ptr` ← `tile` (an accumulator row-major, an operand in its layout);
    /// `Err(why)` where the dialect cannot store such a fragment.
    fn store(&self, f: &Fragment, tile: &str, ptr: &str, stride: i64) -> Result<String, String>;
    /// `d = a·b + c`, where `acc` is the fragment `d` and `c` belong to.
    fn mma(&self, acc: &Fragment, d: &str, a: &str, b: &str, c: &str) -> String;
    /// The alignment, in bytes, a tile's first element must have.
    fn tile_align(&self) -> u32;

    /// A [`weft_ir::fragment::FragOp::Map`] as one statement; `Err(why)` where the
    /// dialect's fragments do not expose their elements.
    fn map(&self, _m: &ElementMap) -> Result<String, String> {
        Err("no element-wise fragment operations (its fragments are opaque)".to_string())
    }
    /// Rows tile `dst` ← the row maxima (`max`) or sums of `tiles` accumulator tiles of
    /// `src` from tile `first`.
    fn row_reduce(
        &self,
        _dst: &str,
        _src: &Fragment,
        _first: &str,
        _tiles: u32,
        _max: bool,
    ) -> Result<String, String> {
        Err("no row reductions of fragments (its fragments are opaque)".to_string())
    }
    /// `A` tile `tile` of `dst` ← accumulator tile `from` of `src`, converted.
    fn convert(
        &self,
        _dst: &Fragment,
        _tile: &str,
        _src: &Fragment,
        _from: &str,
    ) -> Result<String, String> {
        Err("no conversions of accumulators to operands (its fragments are opaque)".to_string())
    }

    /// The declaration (without `;`) of `count` mbarriers named `name` in shared
    /// memory; `None` where the dialect has none ([`weft_ir::tma`]).
    fn mbarrier_decl(&self, _name: &str, _count: u32) -> Option<String> {
        None
    }
    /// `tile += a · b`, a warpgroup MMA of accumulator `acc` from shared pointers `a`
    /// (k-major) and `b` (m/n-major, boxes of 64 columns `b_box_bytes` apart).
    fn wgmma(
        &self,
        _acc: &Fragment,
        _tile: &str,
        _a: &str,
        _b: &str,
        _b_box_bytes: i64,
    ) -> Result<String, String> {
        Err("no warpgroup MMA (wgmma: CUDA sm_90a only)".to_string())
    }
    /// `wgmma.fence`, `commit_group` or `wait_group pending` (`what`: `fence`, `commit`,
    /// `wait`).
    fn wgmma_sync(&self, _what: &str, _pending: u32) -> Result<String, String> {
        Err("no warpgroup MMA (wgmma: CUDA sm_90a only)".to_string())
    }
    /// A TMA copy into shared `dst` through tensor map parameter `map` at `coords`
    /// (innermost first), completing on the mbarrier at `bar`.
    fn tma_load(
        &self,
        _dst: &str,
        _map: &str,
        _coords: &[String],
        _bar: &str,
    ) -> Result<String, String> {
        Err("no TMA copies (CUDA sm_90a only)".to_string())
    }
    /// An mbarrier operation on the barrier at `bar`: `init` (`arg` arrivals), `expect`
    /// (arrive, `arg` bytes of transactions), `wait` (for parity `arg`).
    fn mbarrier_op(&self, _what: &str, _bar: &str, _arg: &str) -> Result<String, String> {
        Err("no mbarriers (CUDA sm_90a only)".to_string())
    }
}

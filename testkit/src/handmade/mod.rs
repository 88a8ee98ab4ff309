//! Hand-built lowered kernels: what the emitters' tests (snapshots, compile checks) run on,
//! independent of the schedule primitives and lowering. The runtime may use them as smoke
//! tests too. Each follows the `weft_ir::kernel` contract; [`all`] lists them by case name.
//! [`unlowered_cases`] and [`over_limits`] are kernels every emitter must refuse.

use weft_ir::dtype::DType;
use weft_ir::expr::{
    BinOp, Buffer, Expr, Intrinsic, IterVar, Reduce, ReduceOp, Scope, ThreadAxis, Var,
};
use weft_ir::kernel::{Access, KMapping, KStmt, Kernel, KernelParam};
use weft_ir::mapping::spatial;

use weft_codegen_common::{TargetLimits, UnloweredNode};

mod pdl;
pub use pdl::{prefetch_vecadd, prefetch_vecadd_with};

/// Every hand-built kernel with its case name (`<case>__<backend>` names its snapshots).
pub fn all() -> Vec<(&'static str, Kernel)> {
    vec![
        ("handmade_vecadd", vecadd()),
        ("handmade_window_sum", window_sum()),
        ("handmade_matmul_local", matmul_local()),
        ("handmade_matmul_shared", matmul_shared()),
        ("handmade_copy_lanes4", copy_lanes4()),
        ("handmade_f16", f16_axpy()),
        ("handmade_scalar_params", scalar_params()),
        ("handmade_select_guard", select_guard()),
        ("handmade_math", math()),
        ("handmade_approx_math", approx_math()),
    ]
}

fn bx() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxX)
}
fn by() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxY)
}
fn tx() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxX)
}
fn ty() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxY)
}
fn global(name: &str, n: i64, dtype: DType) -> Buffer {
    Buffer::new(name, vec![n], dtype, Scope::Global)
}
fn param(b: &Buffer, access: Access) -> KernelParam {
    KernelParam::Buffer {
        buffer: b.clone(),
        access,
    }
}
fn load(b: &Buffer, index: Expr) -> Expr {
    b.load(vec![index])
}
fn vload(b: &Buffer, index: Expr, lanes: u32) -> Expr {
    Expr::Load {
        buffer: b.clone(),
        indices: vec![index],
        lanes,
    }
}
fn store(b: &Buffer, index: Expr, value: Expr) -> KStmt {
    KStmt::Store {
        buffer: b.clone(),
        index,
        value,
        lanes: 1,
    }
}
fn vcopy(dst: &Buffer, di: Expr, src: &Buffer, si: Expr, lanes: u32) -> KStmt {
    KStmt::Store {
        buffer: dst.clone(),
        index: di,
        value: vload(src, si, lanes),
        lanes,
    }
}
fn for_(var: &Var, extent: i64, unroll: bool, body: KStmt) -> KStmt {
    KStmt::For {
        var: var.clone(),
        extent,
        unroll,
        body: Box::new(body),
    }
}
fn let_(var: &Var, value: Expr, body: KStmt) -> KStmt {
    KStmt::Let {
        var: var.clone(),
        value,
        body: Box::new(body),
    }
}
fn if_(cond: Expr, then: KStmt) -> KStmt {
    KStmt::If {
        cond,
        then: Box::new(then),
        otherwise: None,
    }
}
fn div(a: Expr, b: i64) -> Expr {
    Expr::binary(BinOp::Div, a, Expr::int(b))
}
fn rem(a: Expr, b: i64) -> Expr {
    Expr::binary(BinOp::Mod, a, Expr::int(b))
}

/// A split sum whose last block combines: part `blockIdx.z` of tile `blockIdx.x` writes
/// `x[z, i]²` for its 32 elements, fences (where `fence`), and counts itself in on the
/// tile's counter; the block that sees `sk - 1` sums the `sk` parts in order into `out`
/// and zeroes the counter. Not in [`all`]: only targets with a device-scope fence take it.
pub fn last_block_sums(sk: i64, fence: bool) -> Kernel {
    let (tiles, threads) = (4, 32);
    let n = tiles * threads;
    let x = global("x", sk * n, DType::F32);
    let partial = global("partial", sk * n, DType::F32);
    let counter = global("counter", tiles, DType::I32);
    let out = global("out", n, DType::F32);
    let flag = Buffer::new("flag", vec![1], DType::I32, Scope::Shared);
    let bz = Expr::Builtin(ThreadAxis::BlockIdxZ);
    let i = bx() * threads + tx();
    let v = load(&x, bz.clone() * n + i.clone());
    let mut items = vec![store(&partial, bz * n + i.clone(), v.clone() * v)];
    if fence {
        items.push(KStmt::Fence);
    }
    let arrive = KStmt::AtomicAdd(Box::new(weft_ir::func::AtomicAdd {
        buffer: counter.clone(),
        indices: vec![bx()],
        value: Expr::int(1),
        old: Some((flag.clone(), vec![Expr::int(0)])),
    }));
    let sum = (1..sk).fold(load(&partial, i.clone()), |acc, z| {
        acc + load(&partial, Expr::int(z * n) + i.clone())
    });
    let last = KStmt::seq(vec![
        KStmt::Fence,
        store(&out, i.clone(), sum),
        if_(tx().eq_(0), store(&counter, bx(), Expr::int(0))),
    ]);
    items.extend([
        KStmt::Barrier,
        if_(tx().eq_(0), arrive),
        KStmt::Barrier,
        if_(load(&flag, Expr::int(0)).eq_(sk - 1), last),
    ]);
    Kernel {
        name: "last_block_sums".into(),
        params: vec![
            param(&x, Access::Read),
            param(&partial, Access::ReadWrite),
            param(&counter, Access::ReadWrite),
            param(&out, Access::Write),
        ],
        grid: [tiles as u32, 1, sk as u32],
        block: [threads as u32, 1, 1],
        shared: vec![flag],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::seq(items),
    }
}

/// `C[i] = A[i] + B[i]` over 1024 elements: a 1-D grid of 4 blocks of 256 threads.
pub fn vecadd() -> Kernel {
    vecadd_of(1024)
}

/// [`vecadd`]'s kernel over buffers of `len` elements (it still adds the first 1024).
pub fn vecadd_of(len: i64) -> Kernel {
    let (a, b, c) = (
        global("A", len, DType::F32),
        global("B", len, DType::F32),
        global("C", len, DType::F32),
    );
    let i = Var::index("i");
    Kernel {
        name: "vecadd".into(),
        params: vec![
            param(&a, Access::Read),
            param(&b, Access::Read),
            param(&c, Access::Write),
        ],
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: let_(
            &i,
            bx() * 256 + tx(),
            store(&c, i.expr(), load(&a, i.expr()) + load(&b, i.expr())),
        ),
    }
}

/// Seed 001's window sum `B[i] = A[i] + A[i+1] + A[i+2]`: each block fetches its window of
/// `A` into shared memory cooperatively (guarded), waits at a barrier, then sums.
pub fn window_sum() -> Kernel {
    let a = global("A", 1026, DType::F32);
    let b = global("B", 1024, DType::F32);
    let a_shared = Buffer::new("A_shared", vec![258], DType::F32, Scope::Shared);
    let ax0 = Var::index("ax0");
    let idx = Var::index("idx");
    let fetch = for_(
        &ax0,
        2,
        false,
        let_(
            &idx,
            ax0.expr() * 256 + tx(),
            if_(
                idx.expr().lt(258),
                store(&a_shared, idx.expr(), load(&a, bx() * 256 + idx.expr())),
            ),
        ),
    );
    let sum = load(&a_shared, tx()) + load(&a_shared, tx() + 1) + load(&a_shared, tx() + 2);
    Kernel {
        name: "window_sum".into(),
        params: vec![param(&a, Access::Read), param(&b, Access::Write)],
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared: vec![a_shared.clone()],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::seq(vec![
            fetch,
            KStmt::Barrier,
            store(&b, bx() * 256 + tx(), sum),
        ]),
    }
}

/// 128x128x128 matmul, each thread of an 8x8 block computing an 8x8 tile in a 64-element
/// local accumulator with unrolled loops (seed 001's "local blocking").
pub fn matmul_local() -> Kernel {
    let (a, b, c) = (
        global("A", 128 * 128, DType::F32),
        global("B", 128 * 128, DType::F32),
        global("C", 128 * 128, DType::F32),
    );
    let acc = Buffer::new("C_local", vec![64], DType::F32, Scope::Local);
    let (i, j, k) = (Var::index("i"), Var::index("j"), Var::index("k"));
    let (i2, j2) = (Var::index("i"), Var::index("j"));
    let (i3, j3) = (Var::index("i"), Var::index("j"));
    let row = |i: &Var| by() * 64 + ty() * 8 + i.expr();
    let col = |j: &Var| bx() * 64 + tx() * 8 + j.expr();
    let init = for_(
        &i,
        8,
        true,
        for_(
            &j,
            8,
            true,
            store(&acc, i.expr() * 8 + j.expr(), Expr::f32(0.0)),
        ),
    );
    let update = store(
        &acc,
        i2.expr() * 8 + j2.expr(),
        load(&acc, i2.expr() * 8 + j2.expr())
            + load(&a, row(&i2) * 128 + k.expr()) * load(&b, k.expr() * 128 + col(&j2)),
    );
    let main = for_(
        &k,
        128,
        false,
        for_(&i2, 8, true, for_(&j2, 8, true, update)),
    );
    let write = for_(
        &i3,
        8,
        true,
        for_(
            &j3,
            8,
            true,
            store(
                &c,
                row(&i3) * 128 + col(&j3),
                load(&acc, i3.expr() * 8 + j3.expr()),
            ),
        ),
    );
    Kernel {
        name: "matmul_local".into(),
        params: vec![
            param(&a, Access::Read),
            param(&b, Access::Read),
            param(&c, Access::Write),
        ],
        grid: [2, 2, 1],
        block: [8, 8, 1],
        shared: vec![],
        locals: vec![acc],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::seq(vec![init, main, write]),
    }
}

/// 128x128x128 matmul with shared tiles (64x8 of A, 8x64 of B) fetched cooperatively with
/// 4-wide copies, barriers around the compute, and 8x8 register accumulators (seed 001's
/// "shared-memory blocking").
pub fn matmul_shared() -> Kernel {
    let (a, b, c) = (
        global("A", 128 * 128, DType::F32),
        global("B", 128 * 128, DType::F32),
        global("C", 128 * 128, DType::F32),
    );
    let a_sh = Buffer::new("A_shared", vec![512], DType::F32, Scope::Shared);
    let b_sh = Buffer::new("B_shared", vec![512], DType::F32, Scope::Shared);
    let acc = Buffer::new("C_local", vec![64], DType::F32, Scope::Local);
    let (i, j) = (Var::index("i"), Var::index("j"));
    let (ko, f, t, kk) = (
        Var::index("k_outer"),
        Var::index("ax0"),
        Var::index("t"),
        Var::index("k_inner"),
    );
    let (i2, j2, i3, j3) = (
        Var::index("i"),
        Var::index("j"),
        Var::index("i"),
        Var::index("j"),
    );
    let zero = for_(
        &i,
        8,
        true,
        for_(
            &j,
            8,
            true,
            store(&acc, i.expr() * 8 + j.expr(), Expr::f32(0.0)),
        ),
    );
    let fetch = for_(
        &f,
        2,
        true,
        let_(
            &t,
            f.expr() * 64 + ty() * 8 + tx(),
            KStmt::seq(vec![
                vcopy(
                    &a_sh,
                    div(t.expr(), 2) * 8 + rem(t.expr(), 2) * 4,
                    &a,
                    (by() * 64 + div(t.expr(), 2)) * 128 + ko.expr() * 8 + rem(t.expr(), 2) * 4,
                    4,
                ),
                vcopy(
                    &b_sh,
                    div(t.expr(), 16) * 64 + rem(t.expr(), 16) * 4,
                    &b,
                    (ko.expr() * 8 + div(t.expr(), 16)) * 128 + bx() * 64 + rem(t.expr(), 16) * 4,
                    4,
                ),
            ]),
        ),
    );
    let update = store(
        &acc,
        i2.expr() * 8 + j2.expr(),
        load(&acc, i2.expr() * 8 + j2.expr())
            + load(&a_sh, (ty() * 8 + i2.expr()) * 8 + kk.expr())
                * load(&b_sh, kk.expr() * 64 + tx() * 8 + j2.expr()),
    );
    let compute = for_(
        &kk,
        8,
        false,
        for_(&i2, 8, true, for_(&j2, 8, true, update)),
    );
    let main = for_(
        &ko,
        16,
        false,
        KStmt::seq(vec![fetch, KStmt::Barrier, compute, KStmt::Barrier]),
    );
    let write = for_(
        &i3,
        8,
        true,
        for_(
            &j3,
            8,
            true,
            store(
                &c,
                (by() * 64 + ty() * 8 + i3.expr()) * 128 + bx() * 64 + tx() * 8 + j3.expr(),
                load(&acc, i3.expr() * 8 + j3.expr()),
            ),
        ),
    );
    Kernel {
        name: "matmul_shared".into(),
        params: vec![
            param(&a, Access::Read),
            param(&b, Access::Read),
            param(&c, Access::Write),
        ],
        grid: [2, 2, 1],
        block: [8, 8, 1],
        shared: vec![a_sh, b_sh],
        locals: vec![acc],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::seq(vec![zero, main, write]),
    }
}

/// `B = A`, 4096 floats, four per thread, staged through a 4-element register array by
/// 4-wide copies: every access of all three buffers is 4-wide (WGSL declares them
/// `array<vec4<f32>>`).
pub fn copy_lanes4() -> Kernel {
    let a = global("A", 4096, DType::F32);
    let b = global("B", 4096, DType::F32);
    let tmp = Buffer::new("A_local", vec![4], DType::F32, Scope::Local);
    let base = || (bx() * 256 + tx()) * 4;
    Kernel {
        name: "copy_lanes4".into(),
        params: vec![param(&a, Access::Read), param(&b, Access::Write)],
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![tmp.clone()],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::seq(vec![
            vcopy(&tmp, Expr::int(0), &a, base(), 4),
            vcopy(&b, base(), &tmp, Expr::int(0), 4),
        ]),
    }
}

/// f16 throughout: `Y[i] = alpha * X[i] + exp(X[i])` with an f16 scalar, a computation
/// through f32 (`max`, casts), and a 2-wide f16 copy `Z[2i..2i+2] = X[2i..2i+2]`.
pub fn f16_axpy() -> Kernel {
    let x = global("X", 1024, DType::F16);
    let y = global("Y", 1024, DType::F16);
    let z = global("Z", 1024, DType::F16);
    let alpha = Var::new("alpha", DType::F16);
    let i = Var::index("i");
    let xi = load(&x, i.expr());
    let relu = Expr::binary(
        BinOp::Max,
        xi.clone().cast(DType::F32) * Expr::f32(0.5),
        Expr::f32(0.0),
    )
    .cast(DType::F16);
    let value = alpha.expr() * xi.clone() + Expr::call(Intrinsic::Exp, vec![xi]) + relu;
    Kernel {
        name: "f16_axpy".into(),
        params: vec![
            param(&x, Access::Read),
            param(&y, Access::Write),
            param(&z, Access::Write),
            KernelParam::Scalar(alpha.clone()),
        ],
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: let_(
            &i,
            bx() * 256 + tx(),
            KStmt::seq(vec![
                store(&y, i.expr(), value),
                if_(
                    i.expr().lt(512),
                    vcopy(&z, i.expr() * 2, &x, i.expr() * 2, 2),
                ),
            ]),
        ),
    }
}

/// Scalars of every type (`i32`, `f32`, `u32`, `bool`) guarding and scaling an in-place
/// update: `if i < n { A[i] = (flag ? A[i] * alpha : A[i]) + f32(offset) }`.
pub fn scalar_params() -> Kernel {
    let a = global("A", 1024, DType::F32);
    let n = Var::new("n", DType::I32);
    let alpha = Var::new("alpha", DType::F32);
    let offset = Var::new("offset", DType::U32);
    let flag = Var::new("flag", DType::Bool);
    let i = Var::index("i");
    let ai = load(&a, i.expr());
    let scaled = Expr::select(flag.expr(), ai.clone() * alpha.expr(), ai);
    Kernel {
        name: "scalar_params".into(),
        params: vec![
            param(&a, Access::ReadWrite),
            KernelParam::Scalar(n.clone()),
            KernelParam::Scalar(alpha),
            KernelParam::Scalar(offset.clone()),
            KernelParam::Scalar(flag),
        ],
        grid: [16, 1, 1],
        block: [64, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: let_(
            &i,
            bx() * 64 + tx(),
            if_(
                i.expr().lt(n.expr()),
                store(&a, i.expr(), scaled + offset.expr().cast(DType::F32)),
            ),
        ),
    }
}

/// Zero padding by guarded loads: `B[i] = 2 <= i < 1002 ? A[i - 2] : 0`, nested with a
/// second guard, plus a select with no load (`select` in WGSL).
pub fn select_guard() -> Kernel {
    let a = global("A", 1000, DType::F32);
    let b = global("B", 1024, DType::F32);
    let i = Var::index("i");
    let inner = Expr::if_then_else(i.expr().lt(1001), load(&a, i.expr() - 1), Expr::f32(-1.0));
    let guarded = Expr::if_then_else(
        i.expr().ge(2).and(i.expr().lt(1002)),
        load(&a, i.expr() - 2),
        Expr::if_then_else(i.expr().ge(1), inner, Expr::f32(0.0)),
    );
    let plain = Expr::select(i.expr().lt(512), Expr::f32(1.0), Expr::f32(2.0));
    Kernel {
        name: "select_guard".into(),
        params: vec![param(&a, Access::Read), param(&b, Access::Write)],
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: let_(&i, bx() * 256 + tx(), store(&b, i.expr(), guarded * plain)),
    }
}

/// Every intrinsic, float modulo, min/max, negation and casts between i32, u32 and f32.
pub fn math() -> Kernel {
    let x = global("X", 256, DType::F32);
    let y = global("Y", 256, DType::F32);
    let k = global("K", 256, DType::I32);
    let i = Var::index("i");
    let v = Var::new("v", DType::F32);
    let call = |f: Intrinsic, args: Vec<Expr>| Expr::call(f, args);
    let xv = || v.expr();
    let terms = [
        call(Intrinsic::Exp, vec![xv()]),
        call(
            Intrinsic::Log,
            vec![call(Intrinsic::Abs, vec![xv()]) + 1.0f32],
        ),
        call(Intrinsic::Sqrt, vec![call(Intrinsic::Abs, vec![xv()])]),
        call(Intrinsic::Rsqrt, vec![xv() * xv() + 1.0f32]),
        call(Intrinsic::Tanh, vec![xv()]),
        call(Intrinsic::Sigmoid, vec![-xv()]),
        call(Intrinsic::Sin, vec![xv()]) * call(Intrinsic::Cos, vec![xv()]),
        call(Intrinsic::Floor, vec![xv()]) - call(Intrinsic::Ceil, vec![xv()]),
        call(
            Intrinsic::Pow,
            vec![call(Intrinsic::Abs, vec![xv()]), Expr::f32(1.5)],
        ),
        call(Intrinsic::Fma, vec![xv(), Expr::f32(2.0), Expr::f32(-0.25)]),
        Expr::binary(BinOp::Mod, xv(), Expr::f32(3.0)),
        Expr::binary(BinOp::Min, xv(), Expr::f32(1e-8)).max(Expr::f32(-3.4028235e38)),
    ];
    let sum = terms
        .into_iter()
        .reduce(|a, b| a + b)
        .unwrap_or(Expr::f32(0.0));
    let ki = load(&k, i.expr());
    let int_part = (call(Intrinsic::Abs, vec![ki.clone()]).min(7) - -3)
        .cast(DType::U32)
        .cast(DType::F32);
    let body = let_(
        &i,
        tx(),
        let_(
            &v,
            load(&x, i.expr()),
            KStmt::seq(vec![
                store(&y, i.expr(), sum + int_part),
                store(
                    &k,
                    i.expr(),
                    rem(ki, 5) + (xv().cast(DType::I32) - i.expr()),
                ),
            ]),
        ),
    );
    Kernel {
        name: "math".into(),
        params: vec![
            param(&x, Access::Read),
            param(&y, Access::Write),
            param(&k, Access::ReadWrite),
        ],
        grid: [1, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    }
}

/// The approximate intrinsics, into the f16 result they are meant for:
/// `Y[i] = f16(tanh_approx(3·X[i]) + exp2(X[i]))`.
pub fn approx_math() -> Kernel {
    let x = global("X", 256, DType::F32);
    let y = global("Y", 256, DType::F16);
    let i = Var::index("i");
    let xi = load(&x, i.expr());
    let value = (Expr::call(Intrinsic::TanhApprox, vec![xi.clone() * Expr::f32(3.0)])
        + Expr::call(Intrinsic::Exp2, vec![xi]))
    .cast(DType::F16);
    Kernel {
        name: "approx_math".into(),
        params: vec![param(&x, Access::Read), param(&y, Access::Write)],
        grid: [1, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: let_(&i, tx(), store(&y, i.expr(), value)),
    }
}

/// Kernels every emitter must refuse as unlowered, one per [`UnloweredNode`] kind: a
/// task-mapping loop, a reduction, a floor division, a floor modulo, a 2-D load.
pub fn unlowered_cases() -> Vec<(UnloweredNode, Kernel)> {
    let a = global("A", 256, DType::F32);
    let a2 = Buffer::new("A2", vec![16, 16], DType::F32, Scope::Global);
    let b = global("B", 256, DType::F32);
    let (ti, tj) = (Var::index("i"), Var::index("j"));
    let kernel = |params: Vec<KernelParam>, body: KStmt| Kernel {
        name: "unlowered".into(),
        params,
        grid: [1, 1, 1],
        block: [256, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    };
    let ab = || vec![param(&a, Access::Read), param(&b, Access::Write)];
    let mapping = KStmt::Mapping(Box::new(KMapping {
        mapping: spatial(&[16, 16]),
        worker: tx(),
        task_vars: vec![ti.clone(), tj.clone()],
        body: store(
            &b,
            ti.expr() * 16 + tj.expr(),
            load(&a, ti.expr() * 16 + tj.expr()),
        ),
    }));
    let reduce = Expr::Reduce(Box::new(Reduce {
        op: ReduceOp::Sum,
        source: load(&a, tx()),
        axes: vec![IterVar::new("k", 4)],
    }));
    vec![
        (UnloweredNode::TaskMapping, kernel(ab(), mapping)),
        (UnloweredNode::Reduce, kernel(ab(), store(&b, tx(), reduce))),
        (
            UnloweredNode::FloorDiv,
            kernel(ab(), store(&b, tx(), load(&a, tx().floordiv(2)))),
        ),
        (
            UnloweredNode::FloorMod,
            kernel(ab(), store(&b, tx().floormod(16), load(&a, tx()))),
        ),
        (
            UnloweredNode::MultiIndexLoad,
            kernel(
                vec![param(&a2, Access::Read), param(&b, Access::Write)],
                store(&b, tx(), a2.load(vec![div(tx(), 16), rem(tx(), 16)])),
            ),
        ),
    ]
}

/// Kernels over each limit of `limits` that can be exceeded without exceeding an earlier
/// one, named by the [`weft_codegen_common::LimitError::limit_name`] of the error they
/// must get. `f16` appears only when `limits.f16` is false.
pub fn over_limits(limits: &TargetLimits) -> Vec<(&'static str, Kernel)> {
    let fits = |v: u64| u32::try_from(v).ok();
    let with = |grid: [u32; 3], block: [u32; 3], shared: Vec<Buffer>| {
        let mut k = vecadd();
        k.grid = grid;
        k.block = block;
        k.shared = shared;
        k
    };
    let mut out = vec![("zero_extent", with([4, 0, 1], [256, 1, 1], vec![]))];
    if let Some(t) = fits(limits.max_threads_per_block + 1) {
        out.push(("threads_per_block", with([1, 1, 1], [t, 1, 1], vec![])));
    }
    for d in 0..3 {
        let over = limits.max_block_dim[d] + 1;
        if over <= limits.max_threads_per_block
            && let Some(v) = fits(over)
        {
            let mut block = [1; 3];
            block[d] = v;
            out.push(("block_dim", with([1, 1, 1], block, vec![])));
            break;
        }
    }
    for d in 0..3 {
        if let Some(v) = fits(limits.max_grid_dim[d] + 1) {
            let mut grid = [1; 3];
            grid[d] = v;
            out.push(("grid_dim", with(grid, [256, 1, 1], vec![])));
            break;
        }
    }
    let floats = (limits.max_shared_bytes / 4 + 1) as i64;
    let big = Buffer::new("big_shared", vec![floats], DType::F32, Scope::Shared);
    out.push(("shared_memory", with([4, 1, 1], [256, 1, 1], vec![big])));
    if !limits.f16 {
        out.push(("f16", f16_axpy()));
    }
    // A buffer one element past the binding limit, where the target has one.
    if let Ok(floats) = i64::try_from(limits.max_buffer_bytes / 4 + 1)
        && limits.max_buffer_bytes < u64::MAX / 2
    {
        out.push(("buffer_size", vecadd_of(floats)));
    }
    out
}

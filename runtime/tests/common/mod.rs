//! Small hand-built lowered functions, their CPU references, hand-written WGSL and CUDA
//! for them, and helpers to run a compiled kernel by hand on any device.

#![allow(dead_code)]

use rand::{Rng, SeedableRng, rngs::StdRng};
use weft_codegen_common::{
    Binding, EmitError, Emitted, EntryPoint, Language, TargetLimits, Uniform,
};
use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::func::Param;
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam, LoweredFunc};
use weft_runtime::{Device, KernelArg, KernelId};

/// Elements of the vector workloads: not a multiple of the block, so guards matter.
pub const N: i64 = 1000;
pub const BLOCK: u32 = 64;

pub fn grid_for(n: i64) -> u32 {
    (n as u32).div_ceil(BLOCK)
}

fn bx() -> Expr {
    Expr::Builtin(ThreadAxis::BlockIdxX)
}
fn tx() -> Expr {
    Expr::Builtin(ThreadAxis::ThreadIdxX)
}
fn load(b: &Buffer, i: Expr) -> Expr {
    Expr::Load {
        buffer: b.clone(),
        indices: vec![i],
        lanes: 1,
    }
}
fn store(b: &Buffer, i: Expr, v: Expr) -> KStmt {
    KStmt::Store {
        buffer: b.clone(),
        index: i,
        value: v,
        lanes: 1,
    }
}
fn guard(cond: Expr, then: KStmt) -> KStmt {
    KStmt::If {
        cond,
        then: Box::new(then),
        otherwise: None,
    }
}
fn global(name: &str, n: i64) -> Buffer {
    Buffer::new(name, vec![n], DType::F32, Scope::Global)
}
fn buf(buffer: &Buffer, access: Access) -> KernelParam {
    KernelParam::Buffer {
        buffer: buffer.clone(),
        access,
    }
}

/// `i = blockIdx.x * 64 + threadIdx.x` bound around `body(i)`.
fn with_index(body: impl FnOnce(Expr) -> KStmt) -> KStmt {
    let i = Var::index("i");
    KStmt::Let {
        var: i.clone(),
        value: bx() * BLOCK as i64 + tx(),
        body: Box::new(body(i.expr())),
    }
}

/// `C[i] = A[i] + B[i]`.
pub fn vecadd() -> LoweredFunc {
    let (a, b, c) = (global("A", N), global("B", N), global("C", N));
    let body = with_index(|i| {
        guard(
            i.clone().lt(N),
            store(&c, i.clone(), load(&a, i.clone()) + load(&b, i)),
        )
    });
    let kernel = Kernel {
        name: "vecadd".into(),
        params: vec![
            buf(&a, Access::Read),
            buf(&b, Access::Read),
            buf(&c, Access::Write),
        ],
        grid: [grid_for(N), 1, 1],
        block: [BLOCK, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    };
    LoweredFunc {
        name: "vecadd".into(),
        params: vec![Param::Buffer(a), Param::Buffer(b), Param::Buffer(c)],
        temps: vec![],
        kernels: vec![kernel],
    }
}

/// `Y[i] = X[i] + X[i+1] + X[i+2]`, each block fetching its window of X into shared
/// memory cooperatively (64 + 2 elements), then a barrier.
pub fn window_sum() -> LoweredFunc {
    let (x, y) = (global("X", N + 2), global("Y", N));
    let s = Buffer::new("S", vec![BLOCK as i64 + 2], DType::F32, Scope::Shared);
    let base = bx() * BLOCK as i64;
    let fetch = guard(
        (base.clone() + tx()).lt(N + 2),
        store(&s, tx(), load(&x, base.clone() + tx())),
    );
    let halo = guard(
        tx().lt(2)
            .and((base.clone() + tx() + BLOCK as i64).lt(N + 2)),
        store(
            &s,
            tx() + BLOCK as i64,
            load(&x, base.clone() + tx() + BLOCK as i64),
        ),
    );
    let sum = guard(
        (base.clone() + tx()).lt(N),
        store(
            &y,
            base + tx(),
            load(&s, tx()) + load(&s, tx() + 1) + load(&s, tx() + 2),
        ),
    );
    let kernel = Kernel {
        name: "window_sum".into(),
        params: vec![buf(&x, Access::Read), buf(&y, Access::Write)],
        grid: [grid_for(N), 1, 1],
        block: [BLOCK, 1, 1],
        shared: vec![s],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: KStmt::seq(vec![fetch, halo, KStmt::Barrier, sum]),
    };
    LoweredFunc {
        name: "window_sum".into(),
        params: vec![Param::Buffer(x), Param::Buffer(y)],
        temps: vec![],
        kernels: vec![kernel],
    }
}

/// `Z[i] = alpha * X[i] + Y[i]` with a scalar parameter `alpha`.
pub fn axpy() -> LoweredFunc {
    let (x, y, z) = (global("X", N), global("Y", N), global("Z", N));
    let alpha = Var::new("alpha", DType::F32);
    let body = with_index(|i| {
        guard(
            i.clone().lt(N),
            store(
                &z,
                i.clone(),
                alpha.expr() * load(&x, i.clone()) + load(&y, i),
            ),
        )
    });
    let kernel = Kernel {
        name: "axpy".into(),
        params: vec![
            buf(&x, Access::Read),
            buf(&y, Access::Read),
            buf(&z, Access::Write),
            KernelParam::Scalar(alpha.clone()),
        ],
        grid: [grid_for(N), 1, 1],
        block: [BLOCK, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body,
    };
    LoweredFunc {
        name: "axpy".into(),
        params: vec![
            Param::Buffer(x),
            Param::Scalar(alpha),
            Param::Buffer(y),
            Param::Buffer(z),
        ],
        temps: vec![],
        kernels: vec![kernel],
    }
}

/// Two kernels through a temporary: `T[i] = A[i] * 2`, then `C[i] = T[i] + B[i]`.
pub fn two_kernels() -> LoweredFunc {
    let (a, b, c) = (global("A", N), global("B", N), global("C", N));
    let t = global("T", N);
    let k = |name: &str, params, value: &dyn Fn(Expr) -> Expr, out: &Buffer| Kernel {
        name: name.into(),
        params,
        grid: [grid_for(N), 1, 1],
        block: [BLOCK, 1, 1],
        shared: vec![],
        locals: vec![],
        min_blocks_per_sm: 0,
        async_copies: false,
        async_pending: 0,
        fragments: vec![],
        body: with_index(|i| guard(i.clone().lt(N), store(out, i.clone(), value(i)))),
    };
    let k1 = k(
        "scale",
        vec![buf(&a, Access::Read), buf(&t, Access::Write)],
        &|i| Expr::binary(BinOp::Mul, load(&a, i), Expr::f32(2.0)),
        &t,
    );
    let k2 = k(
        "add",
        vec![
            buf(&t, Access::Read),
            buf(&b, Access::Read),
            buf(&c, Access::Write),
        ],
        &|i| load(&t, i.clone()) + load(&b, i),
        &c,
    );
    LoweredFunc {
        name: "two_kernels".into(),
        params: vec![Param::Buffer(a), Param::Buffer(b), Param::Buffer(c)],
        temps: vec![t],
        kernels: vec![k1, k2],
    }
}

pub fn random_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

pub fn rng() -> StdRng {
    StdRng::seed_from_u64(0x5eed)
}

/// Arguments for `func` (random f32 inputs, poisoned outputs) and the reference outputs,
/// by parameter position.
pub fn inputs_and_reference(func: &LoweredFunc) -> (Vec<Arg>, Vec<(usize, Vec<f32>)>) {
    let mut rng = rng();
    let n = N as usize;
    match func.name.as_str() {
        "vecadd" | "two_kernels" => {
            let (a, b) = (random_f32(&mut rng, n), random_f32(&mut rng, n));
            let scale = if func.name == "vecadd" { 1.0 } else { 2.0 };
            let c: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a * scale + b).collect();
            (
                vec![
                    Arg::Tensor(TensorData::F32(a)),
                    Arg::Tensor(TensorData::F32(b)),
                    Arg::Tensor(TensorData::poisoned(DType::F32, n)),
                ],
                vec![(2, c)],
            )
        }
        "window_sum" => {
            let x = random_f32(&mut rng, n + 2);
            let y: Vec<f32> = (0..n).map(|i| x[i] + x[i + 1] + x[i + 2]).collect();
            (
                vec![
                    Arg::Tensor(TensorData::F32(x)),
                    Arg::Tensor(TensorData::poisoned(DType::F32, n)),
                ],
                vec![(1, y)],
            )
        }
        "axpy" => {
            let (x, y) = (random_f32(&mut rng, n), random_f32(&mut rng, n));
            let alpha = 0.75f32;
            let z: Vec<f32> = x.iter().zip(&y).map(|(x, y)| alpha * x + y).collect();
            (
                vec![
                    Arg::Tensor(TensorData::F32(x)),
                    Arg::Scalar(Scalar::F32(alpha)),
                    Arg::Tensor(TensorData::F32(y)),
                    Arg::Tensor(TensorData::poisoned(DType::F32, n)),
                ],
                vec![(3, z)],
            )
        }
        other => panic!("no reference for {other}"),
    }
}

/// Asserts that `args` hold the reference outputs (within float rounding), naming the
/// target, function and the first element that differs.
pub fn check_outputs(target: &str, func: &LoweredFunc, args: &[Arg], want: &[(usize, Vec<f32>)]) {
    for (pos, expected) in want {
        let Arg::Tensor(TensorData::F32(got)) = &args[*pos] else {
            panic!(
                "{target} {}: output {pos} is not f32: {:?}",
                func.name, args[*pos]
            );
        };
        assert_eq!(got.len(), expected.len());
        for (i, (g, e)) in got.iter().zip(expected).enumerate() {
            assert!(
                (g - e).abs() <= 1e-5 * (1.0 + e.abs()),
                "{target} {}: element {i} is {g}, expected {e}",
                func.name
            );
        }
    }
}

/// Runs a one-kernel function by hand: allocate, upload, launch `kernel`, download, in
/// the order of `func.params` (the kernel must take them in that order, scalars included).
pub fn run_by_hand(dev: &mut dyn Device, kernel: KernelId, func: &LoweredFunc, args: &mut [Arg]) {
    let k = &func.kernels[0];
    let mut launch_args = Vec::new();
    let mut ids = Vec::new();
    for p in &k.params {
        let pos = func
            .params
            .iter()
            .position(|fp| fp.name() == p.name())
            .expect("kernel param is a function param");
        match &args[pos] {
            Arg::Tensor(data) => {
                let Param::Buffer(b) = &func.params[pos] else {
                    panic!("tensor for a scalar")
                };
                let id = dev.alloc(b.dtype(), data.len()).expect("alloc");
                dev.upload(id, data).expect("upload");
                launch_args.push(KernelArg::Buffer(id));
                ids.push((pos, id));
            }
            Arg::Scalar(s) => launch_args.push(KernelArg::Scalar(*s)),
        }
    }
    dev.launch(kernel, &launch_args).expect("launch");
    dev.synchronize().expect("synchronize");
    for (pos, id) in ids {
        args[pos] = Arg::Tensor(dev.download(id).expect("download"));
        dev.free(id).expect("free");
    }
}

/// Hand-written WGSL for the functions above, with the binding description the emitter
/// would give, checked as the emitter checks (against WebGPU's default limits).
pub fn wgsl_for(func: &LoweredFunc) -> Emitted {
    wgsl_within(func, &TargetLimits::webgpu_default())
        .expect("hand-written kernels fit WebGPU's limits")
}

/// [`wgsl_for`], checked against `limits`: a kernel over them is refused where its source
/// is wrapped, as the emitter refuses it.
pub fn wgsl_within(func: &LoweredFunc, limits: &TargetLimits) -> Result<Emitted, EmitError> {
    let (source, bindings, uniform) = wgsl_parts(func);
    let mut entry = EntryPoint::new(&func.kernels[0], func.name.clone());
    entry.bindings = bindings;
    entry.uniform = uniform;
    Emitted::handwritten(&func.kernels[0], Language::Wgsl, source, entry, limits)
}

/// Hand-written CUDA C for the functions above, checked as the emitter checks.
pub fn cuda_emitted(func: &LoweredFunc) -> Emitted {
    let entry = EntryPoint::new(&func.kernels[0], func.name.clone());
    Emitted::handwritten(
        &func.kernels[0],
        Language::Cuda,
        cuda_for(func),
        entry,
        &TargetLimits::cuda(),
    )
    .expect("hand-written kernels fit CUDA's limits")
}

/// The WGSL source, storage bindings and uniform of [`wgsl_for`].
fn wgsl_parts(func: &LoweredFunc) -> (String, Vec<Binding>, Option<Uniform>) {
    let storage = |binding, param, read_only| Binding {
        binding,
        param,
        read_only,
        vec4: false,
    };
    let head = "@compute @workgroup_size(64, 1, 1)\n";
    let ids = "@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>";
    match func.name.as_str() {
        "vecadd" => (
            format!(
                "@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
{head}fn vecadd({ids}) {{
    let i = i32(wg.x) * 64 + i32(lid.x);
    if (i < {N}) {{ C[i] = A[i] + B[i]; }}
}}
"
            ),
            vec![
                storage(0, 0, true),
                storage(1, 1, true),
                storage(2, 2, false),
            ],
            None,
        ),
        "window_sum" => (
            format!(
                "@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
var<workgroup> S: array<f32, 66>;
{head}fn window_sum({ids}) {{
    let t = i32(lid.x);
    let base = i32(wg.x) * 64;
    if (base + t < {N} + 2) {{ S[t] = X[base + t]; }}
    if (t < 2 && base + t + 64 < {N} + 2) {{ S[t + 64] = X[base + t + 64]; }}
    workgroupBarrier();
    if (base + t < {N}) {{ Y[base + t] = S[t] + S[t + 1] + S[t + 2]; }}
}}
"
            ),
            vec![storage(0, 0, true), storage(1, 1, false)],
            None,
        ),
        // Kernel params: X, Y, Z, alpha (the kernel's order, not the function's).
        "axpy" => (
            format!(
                "struct Scalars {{ alpha: f32 }}
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Y: array<f32>;
@group(0) @binding(2) var<storage, read_write> Z: array<f32>;
@group(0) @binding(3) var<uniform> scalars: Scalars;
{head}fn axpy({ids}) {{
    let i = i32(wg.x) * 64 + i32(lid.x);
    if (i < {N}) {{ Z[i] = scalars.alpha * X[i] + Y[i]; }}
}}
"
            ),
            vec![
                storage(0, 0, true),
                storage(1, 1, true),
                storage(2, 2, false),
            ],
            Some(Uniform {
                binding: 3,
                size: 4,
                fields: vec![(3, 0)],
            }),
        ),
        other => panic!("no WGSL for {other}"),
    }
}

/// Hand-written CUDA C for the functions above.
pub fn cuda_for(func: &LoweredFunc) -> String {
    let index = "int i = blockIdx.x * 64 + threadIdx.x;";
    match func.name.as_str() {
        "vecadd" => format!(
            "extern \"C\" __global__ void __launch_bounds__(64) vecadd(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {{
    {index}
    if (i < {N}) C[i] = A[i] + B[i];
}}
"
        ),
        "window_sum" => format!(
            "extern \"C\" __global__ void __launch_bounds__(64) window_sum(
    const float* __restrict__ X, float* __restrict__ Y) {{
    __shared__ float S[66];
    int t = threadIdx.x;
    int base = blockIdx.x * 64;
    if (base + t < {N} + 2) S[t] = X[base + t];
    if (t < 2 && base + t + 64 < {N} + 2) S[t + 64] = X[base + t + 64];
    __syncthreads();
    if (base + t < {N}) Y[base + t] = S[t] + S[t + 1] + S[t + 2];
}}
"
        ),
        "axpy" => format!(
            "extern \"C\" __global__ void __launch_bounds__(64) axpy(
    const float* __restrict__ X, const float* __restrict__ Y, float* __restrict__ Z,
    float alpha) {{
    {index}
    if (i < {N}) Z[i] = alpha * X[i] + Y[i];
}}
"
        ),
        other => panic!("no CUDA for {other}"),
    }
}

/// The functions with hand-written sources.
pub fn hand_written() -> Vec<LoweredFunc> {
    vec![vecadd(), window_sum(), axpy()]
}

/// Every function of this module.
pub fn all() -> Vec<LoweredFunc> {
    vec![vecadd(), window_sum(), axpy(), two_kernels()]
}

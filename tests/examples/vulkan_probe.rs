//! Two questions about wgpu on a GPU's Vulkan driver, answered in one process each:
//!
//! - `dispatch TARGET...`: what a launch costs beyond its work. A kernel that adds 1 to
//!   `n` floats runs `N` times in one run, each launch either independent (every launch
//!   reads the same input and writes its own output: no barrier is needed between them)
//!   or chained (launch `i` reads what launch `i − 1` wrote: a barrier between each).
//!   The slope of the run's time over `N` is a launch's cost. On wgpu targets the run is
//!   also timed with a compute pass per launch and with the wall clock instead of
//!   timestamp queries; on CUDA, runs are replayed as CUDA graphs.
//! - `slow [--cuda-first] [--parallel] OP SHAPE`: where the state comes from in which a whole process
//!   runs a Vulkan kernel about 4× slower (`docs/timing.md`). The op's kernels (the rule's
//!   config for the adapter) are compiled as 8 distinct pipelines (renamed entry
//!   points, so the driver cannot hand back one binary for another), each bound to 2
//!   separate allocations of its buffers, all kept alive; every pipeline × allocation is
//!   timed. If the slow state is the process's, every cell of a slow process is slow; if
//!   it is a pipeline's or an allocation's, rows or columns differ within a process.
//!   `--cuda-first` opens CUDA and runs a kernel before Vulkan is opened; `--parallel`
//!   builds every pipeline at once on every core, as a whole model's are built.
//!
//! ```sh
//! cargo run --release -p weft-tests --example vulkan_probe -- dispatch cuda vulkan
//! cargo run --release -p weft-tests --example vulkan_probe -- slow conv2d-f16 \
//!     n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1
//! ```
//!
//! Every result is checked: a chain of `N` launches adds exactly `N`; every pipeline and
//! allocation of `slow` gives the same bits as the first.

use std::time::Duration;

use weft_ir::data::{Arg, TensorData};
use weft_ir::kernel::{Kernel, LoweredFunc};
use weft_ir::lower::lower;
use weft_ir::prelude::*;
use weft_ir::template::Template;
use weft_runtime::wgpu_device::WgpuDevice;
use weft_runtime::{Bound, Device, KernelArg, Launch, Params, Target, WgpuOptions};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Launches per run.
const COUNTS: [usize; 5] = [1, 2, 8, 32, 128];
/// Elements per launch: one block of 256 threads (no work), and 4 MiB read and written.
const SIZES: [i64; 2] = [256, 1 << 20];
/// `WEFT_PROBE_QUICK`: only the first size (lavapipe).
fn sizes() -> &'static [i64] {
    if std::env::var_os("WEFT_PROBE_QUICK").is_some() {
        &SIZES[..1]
    } else {
        &SIZES
    }
}
const THREADS: i64 = 256;

/// `y[i] = x[i] + 1` over `n` floats.
fn step(n: i64) -> Res<LoweredFunc> {
    let mut t = Template::new("step");
    let x = t.input("x", &[n], DType::F32);
    let y = t.output("y", &[n], DType::F32);
    t.kernel((n + THREADS - 1) / THREADS, THREADS, |kb| {
        let i = kb.let_("i", kb.block_x() * THREADS + kb.thread_x());
        kb.if_(i.clone().lt(n), |kb| {
            let v = x.at(std::slice::from_ref(&i)) + Expr::f32(1.0);
            kb.store(&y, [i], v);
        });
    });
    Ok(lower(&t.finish()?)?)
}

fn median_us(t: &weft_runtime::Timing) -> f64 {
    t.median.as_secs_f64() * 1e6
}

/// Times chains and independent launches of `step` on `dev`; one line per case.
fn dispatch_on(dev: &mut dyn Device, label: &str) -> Res<()> {
    for &n in sizes() {
        let func = step(n)?;
        let kernel = dev.compile(&func.kernels[0])?;
        let max = *COUNTS.last().unwrap_or(&1);
        let first: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let mut bufs = Vec::with_capacity(max + 1);
        for i in 0..=max {
            let b = dev.alloc(DType::F32, n as usize)?;
            let data = if i == 0 {
                TensorData::F32(first.clone())
            } else {
                TensorData::poisoned(DType::F32, n as usize)
            };
            dev.upload(b, &data)?;
            bufs.push(b);
        }
        for chained in [false, true] {
            let mut base = None;
            for count in COUNTS {
                let launches: Vec<Launch> = (0..count)
                    .map(|i| Launch {
                        kernel,
                        args: vec![
                            KernelArg::Buffer(bufs[if chained { i } else { 0 }]),
                            KernelArg::Buffer(bufs[i + 1]),
                        ],
                    })
                    .collect();
                let t = dev.time_launches(&launches, 3, 30)?;
                let us = median_us(&t);
                let per = match base {
                    Some(b) if count > 1 => format!("{:7.2}", (us - b) / (count - 1) as f64),
                    _ => "      -".to_string(),
                };
                base.get_or_insert(us);
                println!(
                    "{label:<28} n={n:<8} {:<11} launches={count:<4} run {us:9.2} us   per launch {per} us",
                    if chained { "chained" } else { "independent" },
                );
                let want = if chained { count as f32 } else { 1.0 };
                let TensorData::F32(got) = dev.download(bufs[count])? else {
                    return Err("the output is not f32".into());
                };
                if let Some(i) = (0..got.len()).find(|&i| got[i] != first[i] + want) {
                    return Err(format!(
                        "{label}: element {i} is {}, not {}",
                        got[i],
                        first[i] + want
                    )
                    .into());
                }
            }
        }
        for b in bufs {
            dev.free(b)?;
        }
    }
    Ok(())
}

fn dispatch(targets: &[String]) -> Res<()> {
    for name in targets {
        let target = Target::parse(name)?;
        if matches!(target, Target::Wgpu { .. }) {
            for (what, options) in [
                ("one pass, timestamps", WgpuOptions::default()),
                (
                    "a pass per launch",
                    WgpuOptions {
                        pass_per_launch: true,
                        ..Default::default()
                    },
                ),
                (
                    "one pass, wall clock",
                    WgpuOptions {
                        wall_clock: true,
                        ..Default::default()
                    },
                ),
            ] {
                let mut dev = WgpuDevice::open(&target, options)?;
                println!("# {name}: {} ({what})", dev.name());
                dispatch_on(&mut dev, &format!("{name}, {what}"))?;
            }
        } else {
            let mut dev = weft_runtime::open(&target)?;
            println!("# {name}: {}", dev.name());
            dispatch_on(dev.as_mut(), name)?;
        }
    }
    Ok(())
}

/// `func` with every kernel renamed by `variant`: the same code under another entry point,
/// a distinct SPIR-V module, so the driver cannot hand back an earlier pipeline's binary.
fn variant_of(func: &LoweredFunc, variant: usize) -> LoweredFunc {
    let mut f = func.clone();
    for k in &mut f.kernels {
        k.name = format!("{}_v{variant}", k.name);
    }
    f
}

fn slow(args: &[String]) -> Res<()> {
    let cuda_first = args.iter().any(|a| a == "--cuda-first");
    let parallel = args.iter().any(|a| a == "--parallel");
    let (pipelines, allocations) = (8, 2);
    let rest: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [op, shape] = rest[..] else {
        return Err("usage: slow [--cuda-first] [--parallel] OP SHAPE".into());
    };
    // Kept alive until the end, as a process that ran CUDA rows first would.
    let mut cuda = None;
    if cuda_first {
        let mut c = weft_runtime::open(&Target::parse("cuda")?)?;
        let func = step(1 << 20)?;
        let mut a = vec![
            Arg::Tensor(TensorData::F32(vec![0.0; 1 << 20])),
            Arg::Tensor(TensorData::poisoned(DType::F32, 1 << 20)),
        ];
        c.run(&func, &mut a)?;
        cuda = Some(c);
    }
    let target = Target::parse("vulkan")?;
    let mut dev = WgpuDevice::open(&target, WgpuOptions::default())?;
    let w = weft_ops::Workload::new(op, &weft_ops::Shape::parse(op, shape)?)?;
    let spec = w
        .template(w.op.best)
        .ok_or("the op's best schedule is not a template")?;
    let (config, why) = match spec.rule {
        Some(rule) => rule(&dev.limits(), &w.shape),
        None => (
            (spec.default)(&dev.limits()),
            "the template's default".to_string(),
        ),
    };
    let func = w.lower_with(w.op.best, Some(&config))?;
    println!(
        "# slow: {op} {shape} on {} ({} kernels, {why}){}",
        dev.name(),
        func.kernels.len(),
        if cuda.is_some() {
            ", CUDA opened first"
        } else {
            ""
        }
    );
    let inputs = w.random_inputs(1);
    let args = w.args(&inputs);
    let out = func.params.len() - 1;
    let variants: Vec<LoweredFunc> = (0..pipelines).map(|p| variant_of(&func, p)).collect();
    // `--parallel`: every variant's pipelines built at once on every core (as a whole
    // model's are); else each variant's just before it is timed.
    let mut compiled: Vec<Vec<weft_runtime::KernelId>> = Vec::new();
    if parallel {
        let all: Vec<&Kernel> = variants.iter().flat_map(|f| &f.kernels).collect();
        let ids = dev
            .compile_many(&all)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        compiled.extend(ids.chunks(func.kernels.len()).map(<[_]>::to_vec));
    }
    let mut reference: Option<Vec<u8>> = None;
    let mut kept = Vec::new();
    for (p, variant) in variants.iter().enumerate() {
        let ids = match compiled.get(p) {
            Some(ids) => ids.clone(),
            None => variant
                .kernels
                .iter()
                .map(|k| dev.compile(k))
                .collect::<Result<Vec<_>, _>>()?,
        };
        for a in 0..allocations {
            let params = Params::upload(&mut dev, &func, &args)?;
            let bound = Bound::with_kernels(&mut dev, variant, &params, &ids)?;
            bound.run_checked(&mut dev, &params)?;
            let got = params
                .download(&mut dev, out)?
                .ok_or("no output")?
                .to_bytes();
            match &reference {
                None => reference = Some(got),
                Some(r) if *r != got => {
                    return Err(
                        format!("pipeline {p}, allocation {a}: other bits than the first").into(),
                    );
                }
                Some(_) => {}
            }
            let t = dev.time_launches(&bound.launches, 3, 20)?;
            println!(
                "slow pipeline={p} allocation={a} median {:8.2} us  min {:8.2} us  host {:8.2} us",
                median_us(&t),
                t.min.as_secs_f64() * 1e6,
                t.host.unwrap_or(Duration::ZERO).as_secs_f64() * 1e6
            );
            kept.push((params, bound));
        }
    }
    // The first cell again, last: a state that came with time makes it slow too; one
    // that belongs to the later pipelines leaves it as it was.
    if let Some((_, bound)) = kept.first() {
        let t = dev.time_launches(&bound.launches, 3, 20)?;
        println!(
            "again pipeline=0 allocation=0 median {:8.2} us  min {:8.2} us",
            median_us(&t),
            t.min.as_secs_f64() * 1e6
        );
    }
    for (params, bound) in kept {
        bound.free(&mut dev);
        params.free(&mut dev);
    }
    drop(cuda);
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dispatch") => dispatch(&args[1..]),
        Some("slow") => slow(&args[1..]),
        _ => Err(
            "usage: vulkan_probe dispatch TARGET... | vulkan_probe slow [--cuda-first] [--parallel] OP SHAPE"
                .into(),
        ),
    };
    if let Err(e) = result {
        eprintln!("vulkan_probe: {e}");
        std::process::exit(1);
    }
}

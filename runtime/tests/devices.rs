//! End-to-end runs of small hand-built kernels on every device this machine has, against
//! CPU references, with random inputs and poisoned outputs. Absent devices are skipped
//! with a printed reason unless `WEFT_REQUIRE` names them.
//!
//! Two paths: hand-written WGSL / CUDA compiled through the device's low-level entry
//! (`compile_wgsl`, `compile_cuda`), and the whole pipeline — emitter, compile, run — via
//! `Device::run`.

mod common;

use weft_ir::data::{Arg, TensorData};
use weft_ir::dtype::DType;
use weft_runtime::cuda::{CudaDevice, compile_ptx, probe_driver};
use weft_runtime::wgpu_device::{WgpuDevice, WgpuOptions};
use weft_runtime::{Device, Target};
use weft_testkit::devices::{nvrtc_or_skip, open_or_skip, or_skip};

/// The targets every emitted-kernel test runs on (lavapipe stands in for a GPU here).
const TARGETS: [&str; 5] = ["cpu", "vulkan", "wgpu", "webgpu", "cuda"];

fn wgpu_targets() -> [&'static str; 2] {
    ["vulkan", "webgpu"]
}

fn open_wgpu(target: &str, options: WgpuOptions) -> Option<WgpuDevice> {
    let t = Target::parse(target).expect("valid target");
    or_skip(&t, WgpuDevice::open(&t, options))
}

#[test]
fn cpu_runs_every_function() {
    let mut dev = weft_runtime::cpu::CpuDevice::new();
    for func in common::all() {
        let (mut args, want) = common::inputs_and_reference(&func);
        dev.run(&func, &mut args)
            .unwrap_or_else(|e| panic!("cpu {}: {e}", func.name));
        common::check_outputs("cpu", &func, &args, &want);
    }
}

#[test]
fn hand_written_wgsl_runs() {
    for target in wgpu_targets() {
        let Some(mut dev) = open_wgpu(target, WgpuOptions::default()) else {
            continue;
        };
        println!("{target}: {}", dev.name());
        for func in common::hand_written() {
            let wgsl = common::wgsl_for(&func);
            let kernel = dev
                .compile_wgsl(&func.kernels[0], wgsl)
                .unwrap_or_else(|e| panic!("{target} {}: {e}", func.name));
            let (mut args, want) = common::inputs_and_reference(&func);
            common::run_by_hand(&mut dev, kernel, &func, &mut args);
            common::check_outputs(target, &func, &args, &want);
        }
    }
}

#[test]
fn unchecked_shaders_run() {
    let Some(mut dev) = open_wgpu(
        "vulkan",
        WgpuOptions {
            shader_checks: weft_runtime::ShaderChecks::Unchecked,
            ..Default::default()
        },
    ) else {
        return;
    };
    let func = common::window_sum();
    let kernel = dev
        .compile_wgsl(&func.kernels[0], common::wgsl_for(&func))
        .expect("compiles");
    let (mut args, want) = common::inputs_and_reference(&func);
    common::run_by_hand(&mut dev, kernel, &func, &mut args);
    common::check_outputs("vulkan (unchecked)", &func, &args, &want);
}

#[test]
fn pipelines_are_cached_by_source() {
    let Some(mut dev) = open_wgpu("vulkan", WgpuOptions::default()) else {
        return;
    };
    let func = common::vecadd();
    let a = dev
        .compile_wgsl(&func.kernels[0], common::wgsl_for(&func))
        .expect("compiles");
    let b = dev
        .compile_wgsl(&func.kernels[0], common::wgsl_for(&func))
        .expect("compiles");
    assert_eq!(a, b);
    assert!(dev.source(a).is_some_and(|s| s.contains("fn vecadd")));
}

#[test]
fn wgsl_errors_are_typed() {
    let Some(mut dev) = open_wgpu("vulkan", WgpuOptions::default()) else {
        return;
    };
    let func = common::vecadd();
    let mut wgsl = common::wgsl_for(&func);
    wgsl.source = wgsl
        .source
        .replace("C[i] = A[i] + B[i];", "C[i] = A[i] + undefined;");
    let e = dev
        .compile_wgsl(&func.kernels[0], wgsl)
        .expect_err("bad WGSL");
    let msg = e.to_string();
    assert!(msg.contains("vecadd"), "{msg}");
    // The device stays usable after a failed compile.
    let kernel = dev
        .compile_wgsl(&func.kernels[0], common::wgsl_for(&func))
        .expect("good WGSL compiles");
    let (mut args, want) = common::inputs_and_reference(&func);
    common::run_by_hand(&mut dev, kernel, &func, &mut args);
    common::check_outputs("vulkan", &func, &args, &want);
}

#[test]
fn buffers_round_trip_every_dtype() {
    // Odd lengths: f16 buffers of 3 and 5 elements are not whole 4-byte words.
    let data = [
        TensorData::F32(vec![1.5, -2.0, 3.25]),
        TensorData::F16(
            (0..5)
                .map(|i| half::f16::from_f32(i as f32 * 0.5))
                .collect(),
        ),
        TensorData::F16(vec![half::f16::from_f32(-1.0); 3]),
        TensorData::I32(vec![-7, 0, 7, i32::MAX]),
        TensorData::U32(vec![u32::MAX, 1]),
        TensorData::F32(vec![]),
    ];
    for target in ["cpu", "vulkan", "cuda"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for d in &data {
            let id = dev.alloc(d.dtype(), d.len()).expect("alloc");
            dev.upload(id, d).expect("upload");
            assert_eq!(&dev.download(id).expect("download"), d, "{target}");
            dev.free(id).expect("free");
            assert!(
                dev.download(id).is_err(),
                "{target}: freed handle still works"
            );
        }
        let id = dev.alloc(DType::F32, 4).expect("alloc");
        let e = dev
            .upload(id, &TensorData::F32(vec![0.0; 3]))
            .expect_err("wrong length");
        assert!(e.to_string().contains("4 x f32"), "{e}");
    }
}

#[test]
fn kernels_are_checked_against_the_targets_limits() {
    // 512 threads: over WebGPU's default 256, within lavapipe's and CUDA's limits.
    let mut func = common::vecadd();
    func.kernels[0].block = [512, 1, 1];
    let Some(mut webgpu) = open_wgpu("webgpu", WgpuOptions::default()) else {
        return;
    };
    // Emitted by weft: refused by the emitter, against the device's limits.
    let e = webgpu
        .compile(&func.kernels[0])
        .expect_err("over the default limits");
    assert!(e.to_string().contains("256"), "{e}");
    // Written by hand: refused where the source is wrapped, against the same limits.
    let e = common::wgsl_within(&func, &webgpu.limits()).expect_err("over the default limits");
    assert!(e.to_string().contains("256"), "{e}");
    if let Some(vulkan) = open_wgpu("vulkan", WgpuOptions::default()) {
        // The device asked for the adapter's limits, not WebGPU's defaults.
        assert!(
            vulkan.limits().max_threads_per_block >= 512,
            "{:?}",
            vulkan.limits()
        );
        assert!(vulkan.limits().max_shared_bytes > 16 * 1024);
    }
}

#[test]
fn timing_reports_positive_times() {
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let func = common::vecadd();
        // The cpu device runs the emitted-kernel path's interpreter; wgpu needs WGSL.
        let kernel = if target == "cpu" {
            dev.compile(&func.kernels[0]).expect("compiles")
        } else {
            let Some(mut w) = open_wgpu(target, WgpuOptions::default()) else {
                continue;
            };
            let k = w
                .compile_wgsl(&func.kernels[0], common::wgsl_for(&func))
                .expect("compiles");
            println!("{target}: timestamp queries: {}", w.has_timestamps());
            dev = Box::new(w);
            k
        };
        let (args, _) = common::inputs_and_reference(&func);
        let mut launch_args = Vec::new();
        for a in &args {
            let Arg::Tensor(t) = a else { unreachable!() };
            let id = dev.alloc(t.dtype(), t.len()).expect("alloc");
            dev.upload(id, t).expect("upload");
            launch_args.push(weft_runtime::KernelArg::Buffer(id));
        }
        let launches = [weft_runtime::Launch {
            kernel,
            args: launch_args,
        }];
        let t = dev.time_launches(&launches, 2, 5).expect("timing");
        println!("{target}: median {:?}, min {:?}", t.median, t.min);
        assert_eq!(t.all.len(), 5);
        assert!(
            t.min <= t.median && t.min > std::time::Duration::ZERO,
            "{t:?}"
        );
    }
}

#[test]
fn wall_clock_timing_works_too() {
    for wall_clock in [false, true] {
        let options = WgpuOptions {
            wall_clock,
            ..Default::default()
        };
        let Some(dev) = open_wgpu("vulkan", options) else {
            return;
        };
        assert!(!wall_clock || !dev.has_timestamps());
        let mut dev: Box<dyn Device> = Box::new(dev);
        let func = common::window_sum();
        let (args, _) = common::inputs_and_reference(&func);
        let t = dev.time(&func, &args, 1, 4).expect("timing");
        println!("vulkan, wall clock {wall_clock}: median {:?}", t.median);
        assert_eq!(t.all.len(), 4);
        assert!(
            t.min > std::time::Duration::ZERO && t.min <= t.median,
            "{t:?}"
        );
    }
}

#[test]
fn a_pass_per_launch_times_a_run_of_several_launches() {
    // Three launches of one kernel, each in a pass of its own: the first pass writes the
    // beginning timestamp, the last the end one, the middle one none (wgpu refuses a
    // timestamp write with neither index); the outputs stay right.
    for pass_per_launch in [false, true] {
        let options = WgpuOptions {
            pass_per_launch,
            ..Default::default()
        };
        let Some(mut dev) = open_wgpu("vulkan", options) else {
            return;
        };
        let func = common::window_sum();
        let (mut args, want) = common::inputs_and_reference(&func);
        let params = weft_runtime::Params::upload(&mut dev, &func, &args).expect("upload");
        let bound = weft_runtime::Bound::new(&mut dev, &func, &params).expect("bind");
        let launches: Vec<_> = (0..3).flat_map(|_| bound.launches.clone()).collect();
        let t = dev.time_launches(&launches, 1, 4).expect("timing");
        assert_eq!(t.all.len(), 4);
        assert!(t.min > std::time::Duration::ZERO, "{t:?}");
        for &(i, _) in &want {
            let got = params
                .download(&mut dev, i)
                .expect("download")
                .expect("a tensor");
            args[i] = Arg::Tensor(got);
        }
        common::check_outputs("vulkan", &func, &args, &want);
        bound.free(&mut dev);
        params.free(&mut dev);
    }
}

#[test]
fn cuda_without_the_driver_is_a_typed_error() {
    if probe_driver().is_ok() {
        println!("libcuda is present: nothing to check here");
        return;
    }
    let target = Target::parse("cuda").expect("valid");
    let e = CudaDevice::open(&target).expect_err("no libcuda");
    assert!(e.is_unavailable(), "{e}");
    assert!(e.to_string().contains("libcuda"), "{e}");
    let e = weft_runtime::open(&target).err().expect("no libcuda");
    assert!(e.to_string().contains("libcuda.so.1"), "{e}");
}

#[test]
fn nvrtc_compiles_hand_written_cuda() {
    if !nvrtc_or_skip() {
        return;
    }
    for func in common::hand_written() {
        let ptx = compile_ptx(&common::cuda_for(&func), "sm_90", &func.name)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.contains(&format!(".entry {}", func.name)), "{ptx}");
    }
    let e = compile_ptx("this is not CUDA", "sm_90", "broken").expect_err("bad source");
    let msg = e.to_string();
    assert!(msg.contains("broken") && msg.contains("sm_90"), "{msg}");
}

#[test]
fn nvrtc_compiles_emitted_cuda() {
    if !nvrtc_or_skip() {
        return;
    }
    let target = Target::parse("cuda -arch=sm_90").expect("valid");
    for func in common::all() {
        for k in &func.kernels {
            let src = target
                .emit_source(k)
                .unwrap_or_else(|e| panic!("{}: {e}", k.name))
                .source;
            let ptx = compile_ptx(&src, "sm_90", &k.name).unwrap_or_else(|e| panic!("{e}"));
            assert!(ptx.contains(".entry"), "{ptx}");
        }
    }
}

#[test]
fn hand_written_cuda_runs() {
    let target = Target::parse("cuda").expect("valid");
    let Some(mut dev) = or_skip(&target, CudaDevice::open(&target)) else {
        return;
    };
    println!("cuda: {} ({})", dev.name(), dev.arch());
    for func in common::hand_written() {
        let kernel = dev
            .compile_cuda(&func.kernels[0], common::cuda_emitted(&func))
            .unwrap_or_else(|e| panic!("cuda {}: {e}", func.name));
        let (mut args, want) = common::inputs_and_reference(&func);
        common::run_by_hand(&mut dev, kernel, &func, &mut args);
        common::check_outputs("cuda", &func, &args, &want);
    }
}

/// The whole pipeline: each device emits its own source for the hand-built kernels.
#[test]
fn emitted_kernels_run_on_every_target() {
    for target in TARGETS {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for func in common::all() {
            let (mut args, want) = common::inputs_and_reference(&func);
            dev.run(&func, &mut args)
                .unwrap_or_else(|e| panic!("{target} {}: {e}", func.name));
            common::check_outputs(target, &func, &args, &want);
            let t = dev.time(&func, &args, 1, 3).expect("timing");
            assert_eq!(t.all.len(), 3);
        }
    }
}

/// `Device::barriers` on wgpu: a dispatch waits where it reads a buffer an earlier one of
/// the pass wrote, or writes one an earlier one used; a buffer's first use and reads
/// after reads cost none. With a pass per launch every launch but the first waits. The
/// launches also run (wgpu accepts the list as one pass). The interpreter orders nothing
/// by buffers.
#[test]
fn wgpu_says_which_dispatches_wait_behind_a_barrier() {
    let func = common::window_sum();
    for pass_per_launch in [false, true] {
        let options = WgpuOptions {
            pass_per_launch,
            ..Default::default()
        };
        let Some(mut dev) = open_wgpu("vulkan", options) else {
            return;
        };
        let kernel = dev
            .compile_wgsl(&func.kernels[0], common::wgsl_for(&func))
            .expect("compiles");
        let mut dev: Box<dyn Device> = Box::new(dev);
        let len = (common::N + 2) as usize;
        let [input, a, b, c, d] = [(); 5].map(|_| dev.alloc(DType::F32, len).expect("alloc"));
        dev.upload(input, &TensorData::F32(vec![1.0; len]))
            .expect("upload");
        let launch = |x, y| weft_runtime::Launch {
            kernel,
            args: vec![
                weft_runtime::KernelArg::Buffer(x),
                weft_runtime::KernelArg::Buffer(y),
            ],
        };
        let launches = [
            launch(input, a), // first uses: no barrier
            launch(a, b),     // reads what the one before wrote
            launch(a, c),     // reads what was read, writes a buffer unused: none
            launch(input, a), // writes what was read
            launch(input, d), // reads what was only read, writes a buffer unused: none
        ];
        let waits = dev
            .barriers(&launches)
            .expect("wgpu orders dispatches by buffers")
            .expect("every kernel is this device's");
        let want = if pass_per_launch {
            vec![false, true, true, true, true]
        } else {
            vec![false, true, false, true, false]
        };
        assert_eq!(waits, want, "pass per launch: {pass_per_launch}");
        dev.replay(&launches).expect("replays");
        dev.synchronize().expect("runs");
        let TensorData::F32(out) = dev.download(d).expect("download") else {
            panic!("an f32 buffer");
        };
        assert!(
            out[..common::N as usize].iter().all(|&v| v == 3.0),
            "{out:?}"
        );
    }
    let cpu = weft_runtime::cpu::CpuDevice::new();
    assert!(cpu.barriers(&[]).is_none());
}

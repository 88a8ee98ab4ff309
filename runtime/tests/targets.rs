//! Target strings: parsing, errors that list the valid choices, round trips, and probing
//! that never panics.

use weft_runtime::target::TARGET_NAMES;
use weft_runtime::{SourceLanguage, Target, TargetError, WgpuBackend, available_targets};

#[test]
fn every_target_name_parses() {
    for name in TARGET_NAMES {
        let t = Target::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.name(), name);
        assert_eq!(t.to_string(), name);
    }
    assert_eq!(Target::parse("cpu"), Ok(Target::Cpu));
    assert_eq!(
        Target::parse("vulkan"),
        Ok(Target::Wgpu {
            backend: WgpuBackend::Vulkan,
            device: 0,
            checks: None,
        })
    );
}

#[test]
fn cuda_options() {
    assert_eq!(
        Target::parse("cuda -arch=sm_90"),
        Ok(Target::Cuda {
            arch: Some("sm_90".into()),
            device: 0
        })
    );
    assert_eq!(
        Target::parse("  cuda   -device=1 -arch=sm_90a "),
        Ok(Target::Cuda {
            arch: Some("sm_90a".into()),
            device: 1
        })
    );
    assert_eq!(
        Target::parse("vulkan -device=2"),
        Ok(Target::Wgpu {
            backend: WgpuBackend::Vulkan,
            device: 2,
            checks: None,
        })
    );
    assert_eq!(
        Target::parse("vulkan -checks=checked"),
        Ok(Target::Wgpu {
            backend: WgpuBackend::Vulkan,
            device: 0,
            checks: Some(weft_runtime::ShaderChecks::Checked),
        })
    );
    assert_eq!(
        Target::parse("vulkan -checks=checked").unwrap().to_string(),
        "vulkan -checks=checked"
    );
    let err = Target::parse("vulkan -checks=maybe")
        .unwrap_err()
        .to_string();
    assert!(err.contains("proven, checked or unchecked"), "{err}");
    let err = Target::parse("cuda -checks=checked")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown option"), "{err}");
}

#[test]
fn round_trip() {
    for s in [
        "cpu",
        "cuda",
        "cuda -arch=sm_90",
        "cuda -arch=sm_100a -device=3",
        "cuda -device=1",
        "rocm",
        "rocm -arch=gfx90a",
        "rocm -arch=gfx1100",
        "vulkan",
        "vulkan -device=1",
        "metal",
        "dx12",
        "gl",
        "wgpu",
        "webgpu",
    ] {
        let t = Target::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(t.to_string(), s);
        assert_eq!(Target::parse(&t.to_string()), Ok(t.clone()));
        assert_eq!(s.parse::<Target>(), Ok(t));
    }
    // Defaults are not printed, and the value still round-trips.
    let t = Target::parse("cuda -device=0").expect("parses");
    assert_eq!(t.to_string(), "cuda");
    assert_eq!(Target::parse(&t.to_string()), Ok(t));
}

#[test]
fn rocm_options() {
    assert_eq!(Target::parse("rocm"), Ok(Target::Rocm { arch: None }));
    assert_eq!(
        Target::parse(" rocm  -arch=gfx1100"),
        Ok(Target::Rocm {
            arch: Some("gfx1100".into())
        })
    );
    let rocm = Target::parse("rocm").expect("parses");
    assert_eq!(weft_runtime::rocm::arch(&rocm), Some("gfx90a"));
    assert_eq!(rocm.emit_language(), Some(SourceLanguage::Hip));
    assert_eq!(rocm.require_key(), "hip");
    assert!(rocm.limits().matrix_units.is_empty());
    for bad in [
        "rocm -arch=sm_90",
        "rocm -arch=gfx",
        "rocm -arch=",
        "rocm -arch=gfx90z",
    ] {
        let e = Target::parse(bad).expect_err(bad);
        assert!(
            matches!(e, TargetError::UnknownArch { .. })
                && e.to_string().contains("gfx90a, gfx90c")
                && e.to_string().contains("gfx1100"),
            "{e}"
        );
    }
    // A well-formed name no GPU has is refused here, not by hipcc later.
    let e = Target::parse("rocm -arch=gfx9999").expect_err("no such GPU");
    assert!(e.to_string().contains("not an AMD architecture"), "{e}");
    let e = Target::parse("rocm -device=1").expect_err("no devices");
    assert!(e.to_string().contains("-arch=gfxNNN"), "{e}");
    // No ROCm runtime: opening is the typed "unavailable" error that names the way out.
    let e = match weft_runtime::open(&rocm) {
        Ok(_) => panic!("rocm opened a device"),
        Err(e) => e,
    };
    assert!(e.is_unavailable(), "{e}");
    assert!(e.to_string().contains("weft compile"), "{e}");
}

#[test]
fn unknown_target_lists_valid_ones() {
    let e = Target::parse("opencl -arch=gfx90a").expect_err("opencl is not a target");
    assert!(matches!(e, TargetError::UnknownTarget { ref name, .. } if name == "opencl"));
    let msg = e.to_string();
    assert!(msg.contains("`opencl`"), "{msg}");
    for name in TARGET_NAMES {
        assert!(msg.contains(name), "{msg} should list {name}");
    }
    let e = Target::parse("   ").expect_err("empty");
    assert_eq!(e, TargetError::Empty);
    assert!(e.to_string().contains("cuda, rocm, vulkan"), "{e}");
    // Names are exact.
    assert!(Target::parse("CUDA").is_err());
}

#[test]
fn unknown_option_lists_valid_ones() {
    let e = Target::parse("cuda -arc=sm_90").expect_err("typo");
    let msg = e.to_string();
    assert!(
        msg.contains("-arc=sm_90") && msg.contains("-arch=sm_XX") && msg.contains("-device=N"),
        "{msg}"
    );
    let e = Target::parse("cpu -device=1").expect_err("cpu has no options");
    assert!(e.to_string().contains("valid options are none"), "{e}");
    let e = Target::parse("vulkan -arch=sm_90").expect_err("no arch for vulkan");
    assert!(e.to_string().contains("-device=N"), "{e}");
}

#[test]
fn bad_option_values() {
    for bad in [
        "cuda -arch=90",
        "cuda -arch=sm_9",
        "cuda -arch=sm_90ab",
        "cuda -arch=sm_86a",
        "cuda -arch=",
        "cuda -arch=sm_60",
        "cuda -arch=sm_999",
    ] {
        let e = Target::parse(bad).expect_err(bad);
        // Every refusal names the architectures NVRTC 13 compiles for.
        assert!(
            matches!(e, TargetError::UnknownArch { .. })
                && e.to_string().contains("sm_75, sm_80, sm_86")
                && e.to_string().contains("sm_90a"),
            "{bad}: {e}"
        );
    }
    let e = Target::parse("cuda -arch=sm_60").expect_err("Pascal");
    assert!(
        e.to_string().contains("dropped Maxwell, Pascal and Volta"),
        "{e}"
    );
    let e = Target::parse("cuda -device=x").expect_err("not a number");
    assert!(e.to_string().contains("device index"), "{e}");
    let e = Target::parse("cuda -device").expect_err("no value");
    assert!(matches!(e, TargetError::BadValue { .. }), "{e}");
    let e = Target::parse("cuda -device=1 -device=2").expect_err("twice");
    assert!(matches!(e, TargetError::Duplicate { .. }), "{e}");
}

#[test]
fn languages_and_limits() {
    let lang = |s: &str| Target::parse(s).expect("parses").emit_language();
    assert_eq!(lang("cpu"), None);
    assert_eq!(lang("cuda"), Some(SourceLanguage::Cuda));
    assert_eq!(lang("vulkan"), Some(SourceLanguage::Wgsl));
    assert_eq!(lang("webgpu"), Some(SourceLanguage::Wgsl));
    assert_eq!(lang("metal"), Some(SourceLanguage::Msl));
    assert_eq!(lang("rocm -arch=gfx1100"), Some(SourceLanguage::Hip));
    let limits = |s: &str| Target::parse(s).expect("parses").limits();
    assert_eq!(limits("webgpu").max_shared_bytes, 16 * 1024);
    assert_eq!(limits("webgpu").max_threads_per_block, 256);
    assert_eq!(limits("cuda").max_threads_per_block, 1024);
    // `-arch` picks that architecture's opt-in shared memory, and matrix units need
    // sm_80.
    assert_eq!(limits("cuda").max_shared_bytes, 99 * 1024);
    assert_eq!(limits("cuda -arch=sm_90").max_shared_bytes, 227 * 1024);
    assert_eq!(limits("cuda -arch=sm_90a").max_shared_bytes, 227 * 1024);
    assert_eq!(limits("cuda -arch=sm_80").max_shared_bytes, 163 * 1024);
    assert_eq!(limits("cuda -arch=sm_89").max_shared_bytes, 99 * 1024);
    assert_eq!(limits("cuda -arch=sm_120").max_shared_bytes, 99 * 1024);
    assert_eq!(limits("cuda -arch=sm_75").max_shared_bytes, 64 * 1024);
    assert!(limits("cuda -arch=sm_75").matrix_units.is_empty());
    assert!(!limits("cuda -arch=sm_90").matrix_units.is_empty());
    assert!(limits("cpu").max_shared_bytes >= limits("webgpu").max_shared_bytes);
}

#[test]
fn require_keys() {
    let key = |s: &str| Target::parse(s).expect("parses").require_key();
    assert_eq!(key("cuda -arch=sm_90"), "cuda");
    assert_eq!(key("vulkan"), "vulkan");
    assert_eq!(key("wgpu"), "wgpu");
    assert_eq!(key("webgpu"), "wgpu");
}

/// Probing must not panic on a machine without libcuda, libnvrtc or a Vulkan driver; it
/// lists every target, with a reason for each one that is unavailable.
#[test]
fn available_targets_never_panics() {
    let infos = available_targets();
    for info in &infos {
        println!("{info}");
    }
    for name in TARGET_NAMES {
        assert!(
            infos.iter().any(|i| i.target.name() == name),
            "{name} missing from {infos:?}"
        );
    }
    let cpu = infos.iter().find(|i| i.target == Target::Cpu).expect("cpu");
    assert!(cpu.is_available());
    for info in &infos {
        if let Some(why) = &info.unavailable {
            assert!(!why.is_empty());
        } else {
            assert!(info.device.is_some(), "{info:?}");
        }
    }
}

#[test]
fn emit_source_in_each_language() {
    let kernel = weft_testkit::handmade::window_sum();
    for (target, marker) in [
        ("cuda", "__global__"),
        ("vulkan", "@compute"),
        ("webgpu", "@compute"),
        ("metal", "kernel void"),
        ("rocm -arch=gfx1100", "#include <hip/hip_runtime.h>"),
    ] {
        let t = Target::parse(target).expect("valid");
        let src = t
            .emit_source(&kernel)
            .unwrap_or_else(|e| panic!("{target}: {e}"))
            .source;
        assert!(src.contains(marker), "{target}:\n{src}");
    }
    let e = Target::Cpu.emit_source(&kernel).expect_err("no source");
    assert!(e.to_string().contains("interpreter"), "{e}");
    // Over WebGPU's 256 invocations: a typed limit error naming the kernel.
    let mut big = kernel.clone();
    big.block = [512, 1, 1];
    let e = Target::parse("webgpu")
        .expect("valid")
        .emit_source(&big)
        .expect_err("over the limit");
    assert!(
        e.to_string().contains("window_sum") && e.to_string().contains("256"),
        "{e}"
    );
}

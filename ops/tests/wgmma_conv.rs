//! Hopper's `wgmma` over an implicit GEMM's views (`wg` > 0 for `conv2d-f16`): the
//! block's threads gather the im2col and filter tiles with `cp.async` into the swizzled
//! stages, each barrier fences them against the async proxy, and `wgmma` multiplies.
//! Every config of the `cuda -arch=sm_90a` space over views is right at an odd
//! convolution in the interpreter; the interpreter names a kernel without the proxy
//! fence and one whose copy overwrites a stage a `wgmma` in flight reads; the emitted
//! CUDA writes the swizzle and the fence and compiles with NVRTC for sm_90a.

use weft_codegen_common::TargetLimits;
use weft_ir::fragment::FragOp;
use weft_ir::kernel::KStmt;
use weft_kernels::{Config, matmul_f16};
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn sm90a() -> TargetLimits {
    TargetLimits::cuda_arch(&weft_codegen_common::cuda_arch("sm_90a").unwrap()).with_warpgroup_mma()
}

/// The unsplit wgmma configs over views.
fn hopper_configs() -> Vec<Config> {
    matmul_f16::op_space_over_views(&sm90a())
        .into_iter()
        .filter(|c| c.get("wg").unwrap_or(0) > 0 && c.get("sk").unwrap_or(1) == 1)
        .collect()
}

/// `[n, c, h, w, k, r, s, stride, pad]`
fn workload(op: &str, d: [i64; 9]) -> Workload {
    let names = ["n", "c", "h", "w", "k", "r", "s", "stride", "pad"];
    let text: Vec<String> = names
        .iter()
        .zip(d)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    Workload::new(op, &Shape::parse(op, &text.join(",")).unwrap()).unwrap()
}

fn check(w: &Workload, config: &Config, seed: u64) -> Result<(), String> {
    let what = format!("{} {config} at {}", w.op.name, w.shape);
    let lowered = w
        .lower_with("implicit-gemm", Some(config))
        .map_err(|e| format!("{what}: {e}"))?;
    let inputs = w.random_inputs(seed);
    let out = w
        .run_interp(&lowered, &inputs)
        .map_err(|e| format!("{what}: {e}"))?;
    let e = Checker::new(w, &inputs).check(&out);
    if e.is_right() {
        Ok(())
    } else {
        Err(format!("{what}: error {e}"))
    }
}

#[test]
fn the_space_over_views_has_wgmma_configs_on_sm90a_only() {
    let configs = hopper_configs();
    assert!(
        configs.len() >= 12,
        "{} wgmma configs over views",
        configs.len()
    );
    let split = matmul_f16::op_space_over_views(&sm90a())
        .into_iter()
        .filter(|c| c.get("wg").unwrap_or(0) > 0 && c.get("sk").unwrap_or(1) > 1)
        .count();
    assert!(split > 0, "no split wgmma configs over views");
    let plain = matmul_f16::op_space_over_views(&TargetLimits::cuda());
    assert!(plain.iter().all(|c| c.get("wg").unwrap_or(0) == 0));
}

/// Split-K through the gathers: each grid layer walks its own k tiles of the im2col
/// and stores its partial product, which a second kernel sums (bias and ReLU applied
/// once, after). k = 3·3·40 = 360 is five full 64-wide tiles and a sixth of 40: in 2
/// parts (3 and 3 tiles), 4 (2, 2, 2, 0) and 8 (one each, the last two wholly past k).
#[test]
fn split_wgmma_configs_over_views_are_right() {
    let w = workload("conv2d-f16-bias-relu", [2, 40, 7, 9, 24, 3, 3, 1, 1]);
    for (i, c) in hopper_configs()
        .into_iter()
        .filter(|c| c.get("st") == Some(3) && c.get("fn") == Some(4))
        .enumerate()
    {
        for sk in [2, 4, 8] {
            let split = weft_kernels::split_k::split(c.clone(), sk);
            let lowered = w.lower_with("implicit-gemm", Some(&split)).unwrap();
            assert_eq!(lowered.kernels.len(), 2, "{split}: the parts and their sum");
            if let Err(e) = check(&w, &split, 60 + i as u64) {
                panic!("{e}");
            }
        }
    }
}

/// Every config, at a convolution whose GEMM is ragged along all three dimensions
/// (m = 2·9·11 = 198, n = 72, k = 3·3·40 = 360: five full 64-wide k tiles and a sixth
/// of 40), so that the ring wraps at every stage count (3 to 5).
#[test]
fn every_wgmma_config_over_views_is_right_at_an_odd_convolution() {
    let w = workload("conv2d-f16", [2, 40, 9, 11, 72, 3, 3, 1, 1]);
    for (i, c) in hopper_configs().iter().enumerate() {
        if let Err(e) = check(&w, c, 5 + i as u64) {
            panic!("{e}");
        }
    }
}

/// Strides, a 1×1 window, channels that allow only 8-byte copies, bias and ReLU fused,
/// NCHW (scalar gathers).
#[test]
fn other_convolutions_are_right() {
    let c = hopper_configs()
        .into_iter()
        .find(|c| c.get("wg") == Some(2) && c.get("fm") == Some(1) && c.get("fn") == Some(8))
        .unwrap();
    let cases = [
        ("conv2d-f16", [1, 16, 13, 13, 40, 3, 3, 2, 1]),
        ("conv2d-f16", [3, 64, 5, 6, 24, 1, 1, 1, 0]),
        ("conv2d-f16", [1, 12, 7, 7, 20, 3, 3, 1, 1]),
        ("conv2d-f16-bias-relu", [2, 32, 7, 5, 48, 3, 3, 1, 1]),
        ("conv2d-f16-nchw", [1, 8, 6, 7, 16, 3, 3, 1, 1]),
    ];
    for (i, (op, d)) in cases.into_iter().enumerate() {
        if let Err(e) = check(&workload(op, d), &c, 20 + i as u64) {
            panic!("{e}");
        }
    }
}

fn lowered_small(stages: i64) -> (Workload, weft_ir::kernel::LoweredFunc) {
    let c = hopper_configs()
        .into_iter()
        .find(|c| c.get("st") == Some(stages) && c.get("wg") == Some(1) && c.get("fn") == Some(4))
        .unwrap();
    let w = workload("conv2d-f16", [1, 64, 8, 8, 64, 3, 3, 1, 1]);
    let lowered = w.lower_with("implicit-gemm", Some(&c)).unwrap();
    (w, lowered)
}

/// Without the fence at the barriers (a kernel whose copies are not asynchronous has
/// none) the threads' writes are not ordered before `wgmma`'s reads.
#[test]
fn a_missing_proxy_fence_is_reported() {
    let (w, mut lowered) = lowered_small(4);
    lowered.kernels[0].async_copies = false;
    let e = w
        .run_interp(&lowered, &w.random_inputs(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("fence.proxy.async"), "{e}");
}

/// Keeping two batches of `wgmma`s in flight instead of one: the copy of the step then
/// writes the stage tile ko − 2's multiplies still read.
#[test]
fn a_copy_into_a_stage_in_flight_is_reported() {
    let (w, mut lowered) = lowered_small(3);
    let k = &mut lowered.kernels[0];
    k.body = k.body.rewrite(&mut |s| match s {
        KStmt::Frag(op) if matches!(*op, FragOp::WgWait { pending: 1 }) => {
            KStmt::Frag(Box::new(FragOp::WgWait { pending: 2 }))
        }
        s => s,
    });
    let e = w
        .run_interp(&lowered, &w.random_inputs(1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("while a wgmma that reads it is in flight"),
        "{e}"
    );
}

#[test]
fn the_emitted_cuda_swizzles_fences_and_compiles_for_sm90a() {
    let w = workload("conv2d-f16-bias-relu", [8, 256, 14, 14, 256, 3, 3, 1, 1]);
    for c in hopper_configs()
        .into_iter()
        .filter(|c| c.get("st") == Some(4))
    {
        let lowered = w.lower_with("implicit-gemm", Some(&c)).unwrap();
        let emitted = weft_codegen_cuda::emit_lowered(
            &lowered,
            &weft_codegen_cuda::CudaOptions { limits: sm90a() },
        )
        .unwrap();
        for needle in [
            "wgmma.mma_async",
            "weft_swz128(",
            "fence.proxy.async.shared::cta",
            "cp.async.cg.shared.global",
        ] {
            assert!(emitted.source.contains(needle), "{c}: no {needle}");
        }
        // No tensor map: TMA copies stored tensors, not views.
        assert!(
            !emitted.source.contains("__grid_constant__"),
            "{c}: TMA over a view"
        );
        match weft_codegen_cuda::nvrtc::check_arch(&emitted.source, "sm_90a") {
            Ok(weft_codegen_common::testing::Checked::Passed) => {}
            Ok(_) => return, // skipped, with the reason printed
            Err(e) => panic!("{c}: {e}"),
        }
    }
}

/// The bounds prover proves every access of the gathered kernels in bounds (the
/// swizzled stages in logical order, the im2col's padding guards, the ragged tiles'
/// tests), whole and split.
#[test]
fn every_wgmma_config_over_views_is_proven_in_bounds() {
    let w = workload("conv2d-f16-bias-relu", [2, 24, 9, 11, 72, 3, 3, 1, 1]);
    let mut bad = Vec::new();
    for c in hopper_configs() {
        for config in [c.clone(), weft_kernels::split_k::split(c, 2)] {
            let lowered = w.lower_with("implicit-gemm", Some(&config)).unwrap();
            bad.extend(
                weft_ir::bounds::prove_all(&lowered)
                    .into_iter()
                    .filter(|r| !r.is_proven())
                    .map(|r| format!("{config}: {r}")),
            );
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

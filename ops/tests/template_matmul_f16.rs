//! The fp16 matmul template: right at odd shapes (not multiples of 16 or 8, primes, 1)
//! against the float64 reference with an fp16-aware tolerance, for tensor-core (16),
//! simdgroup (8) and CUDA-core (0) configs, in the interpreter (which also checks races,
//! bounds and the warp-uniformity of every fragment operation); its space; its emitted
//! source on every backend.

mod common;

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_kernels::{Config, matmul_f16};
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn workload(m: i64, n: i64, k: i64) -> Workload {
    let shape = Shape::parse("matmul-f16", &format!("m={m},n={n},k={k}")).unwrap();
    Workload::new("matmul-f16", &shape).unwrap()
}

/// CUDA's limits with matrix units of the square sizes `mma` (f16 in, f32 out).
fn resources(mma: &[i64]) -> TargetLimits {
    use weft_codegen_common::MatrixUnit;
    use weft_ir::dtype::DType;
    TargetLimits {
        matrix_units: mma
            .iter()
            .map(|&s| MatrixUnit::new(s as u32, s as u32, s as u32, DType::F16, DType::F32))
            .collect(),
        ..TargetLimits::cuda()
    }
}

/// Every config of the spaces for 16, 8 and no matrix units, small enough to interpret.
fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for mma in [&[16][..], &[8], &[]] {
        out.extend(matmul_f16::space(&resources(mma)));
    }
    out
}

fn check(w: &Workload, config: &Config, seed: u64) -> Result<(), String> {
    let lowered = w
        .lower_with("template", Some(config))
        .map_err(|e| e.to_string())?;
    let inputs = w.random_inputs(seed);
    let out = w
        .run_interp(&lowered, &inputs)
        .map_err(|e| format!("{config} at {}: {e}", w.shape))?;
    let e = Checker::new(w, &inputs).check(&out);
    if e.is_right() {
        Ok(())
    } else {
        Err(format!("{config} at {}: error {e}", w.shape))
    }
}

/// Every config of `texts` right at every `(m, n, k)` of `shapes`.
fn check_each(texts: &[&str], shapes: &[(i64, i64, i64)], seed: u64) {
    for text in texts {
        let config = Config::parse(text).unwrap();
        for &(m, n, k) in shapes {
            check(&workload(m, n, k), &config, seed).unwrap();
        }
    }
}

#[test]
fn the_defaults_are_right_at_odd_shapes() {
    for mma in [&[16][..], &[8], &[]] {
        let config = matmul_f16::default_config(&resources(mma));
        for (m, n, k) in [
            (1, 1, 1),
            (37, 29, 53),
            (17, 130, 33),
            (128, 64, 96),
            (3, 7, 200),
        ] {
            check(&workload(m, n, k), &config, 7).unwrap();
        }
    }
}

/// A product of two small fp16 inputs rounds to a subnormal fp16, whose precision is
/// absolute (2^-24), not relative: the check measures errors relative to at least 2^-14
/// (found by the proptest below: k = 1, seed 584).
#[test]
fn subnormal_outputs_are_judged_by_their_absolute_precision() {
    let config = Config::parse("mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8").unwrap();
    check(&workload(1, 58, 1), &config, 584).unwrap();
}

/// `fb = 2` pipelines fragments across tiles: the last sub-step multiplies after the
/// barrier while the next tile's first fragments load. Right with register staging and
/// with 3 and 4 `cp.async` stages, over more tiles than stages and a ragged last tile
/// (k = 161: six tiles of 32, three of 64), and where the tiles divide every dimension
/// (no bounds tests on the loads), on 16×16 and 8×8 fragments.
#[test]
fn fragments_pipelined_across_tiles_are_right() {
    for (mma, bk) in [(16, 32), (16, 64), (8, 32)] {
        for (cp, st) in [(0, 2), (1, 3), (1, 4)] {
            let text =
                format!("mma={mma},wm=2,wn=2,fm=2,fn=1,bk={bk},g=8,vec=8,cp={cp},st={st},fb=2");
            let config = Config::parse(&text).unwrap();
            check(&workload(37, 45, 161), &config, 11).unwrap();
            // One tile: the next tile's fragments load from a stage never written.
            check(&workload(17, 9, 5), &config, 13).unwrap();
            // Tiles that divide every dimension: the loads go untested.
            check(&workload(128, 32 * 16 / mma, 256), &config, 12).unwrap();
        }
    }
}

/// Three fragments along m make block tiles of 48·wm rows, which the threads' loads need
/// not cover in whole passes: 96 rows at 64 a pass, or 48 rows at 32 a pass once `k` is
/// not a multiple of 8 and the loads narrow to 4 halves (found by the proptest below at
/// m = 33, n = 1, k = 36, where the last 16 rows of the tile were never loaded). The last
/// pass loads the rest, with register staging and with `cp.async`.
#[test]
fn tiles_loaded_in_a_partial_last_pass_are_right() {
    check_each(
        &[
            "mma=8,wm=2,wn=4,fm=3,fn=4,bk=32,g=8,vec=8",
            "mma=16,wm=2,wn=4,fm=3,fn=2,bk=32,g=8,vec=8",
            "mma=16,wm=2,wn=4,fm=3,fn=2,bk=64,g=8,vec=8,cp=1,st=3,fb=2",
            "mma=0,wm=2,wn=4,fm=3,fn=2,bk=32,g=8,vec=8",
        ],
        &[(33, 1, 36), (97, 40, 70), (191, 17, 9)],
        5,
    );
}

/// WGSL and MSL targets also get k steps of 16 (larger block tiles in the same shared
/// memory): one sub-step of 16×16 fragments, two of 8×8 ones (`fb = 2` pipelines them),
/// and CUDA cores; right over several tiles and a ragged last one.
#[test]
fn k_steps_of_16_are_right() {
    check_each(
        &[
            "mma=16,wm=4,wn=2,fm=4,fn=4,bk=16,g=8,vec=4",
            "mma=8,wm=2,wn=2,fm=2,fn=4,bk=16,g=8,vec=4,fb=2",
            "mma=0,wm=2,wn=2,fm=2,fn=2,bk=16,g=8,vec=4",
        ],
        &[(70, 45, 53), (3, 130, 16)],
        9,
    );
}

/// `fb = 2` over one 16×16 sub-step a tile: tile `ko`'s fragments are loaded after the
/// previous tile's barrier into set `ko % 2` while that tile multiplies from the other
/// (the k loop unrolled by two so the set is a constant). Right over one, two, an odd and
/// an even number of tiles, a ragged last tile, with loads one and two steps ahead and
/// with `cp.async` stages.
/// Starting every tile on set 0 (the rule for an even number of sub-steps) multiplies
/// the wrong tile's fragments and fails it.
#[test]
fn fragment_sets_over_one_sub_step_are_right() {
    check_each(
        &[
            "mma=16,wm=2,wn=2,fm=2,fn=2,bk=16,g=8,vec=4,fb=2",
            "mma=16,wm=2,wn=4,fm=4,fn=2,bk=16,g=8,vec=4,fb=2,pf=2",
            "mma=16,wm=2,wn=2,fm=1,fn=2,bk=16,g=8,vec=8,fb=2,pf=2",
            "mma=16,wm=2,wn=2,fm=2,fn=1,bk=16,g=8,vec=8,cp=1,st=3,fb=2",
        ],
        &[
            (17, 9, 5),
            (37, 45, 32),
            (37, 45, 161),
            (70, 33, 48),
            (128, 64, 256),
        ],
        23,
    );
}

/// `pf = 2` runs the register-staged loads two k steps ahead (two staging sets, the k
/// loop unrolled by two): right over one, two, an odd and an even number of tiles, a
/// ragged last tile, tiles that divide everything, one and two fragment sets, 16×16 and
/// 8×8 fragments and CUDA cores (the interpreter reports a store racing a read of its
/// stage). Loading tile ko + 2 into tile ko + 1's set instead fails it.
#[test]
fn loads_two_steps_ahead_are_right() {
    check_each(
        &[
            "mma=16,wm=2,wn=2,fm=1,fn=2,bk=32,g=8,vec=4,pf=2",
            "mma=16,wm=2,wn=2,fm=2,fn=1,bk=32,g=8,vec=8,fb=2,pf=2",
            "mma=16,wm=4,wn=2,fm=1,fn=2,bk=64,g=8,vec=4,pf=2",
            "mma=8,wm=2,wn=2,fm=2,fn=4,bk=16,g=8,vec=4,fb=2,pf=2",
            "mma=0,wm=2,wn=2,fm=2,fn=2,bk=16,g=8,vec=4,pf=2",
        ],
        &[
            (17, 9, 5),
            (37, 45, 64),
            (37, 45, 161),
            (70, 33, 128),
            (128, 64, 256),
        ],
        21,
    );
    // Refused with asynchronous copies or copies through fragments, and past 2.
    let w = workload(32, 32, 64);
    for text in [
        "mma=16,wm=2,wn=2,fm=1,fn=1,bk=32,g=8,vec=8,cp=1,st=3,pf=2",
        "mma=16,wm=2,wn=2,fm=1,fn=1,bk=32,g=8,vec=4,cc=1,pf=2",
        "mma=16,wm=2,wn=2,fm=1,fn=1,bk=32,g=8,vec=4,pf=3",
    ] {
        let config = Config::parse(text).unwrap();
        let err = w.lower_with("template", Some(&config)).unwrap_err();
        assert!(err.to_string().contains("`pf`"), "{text}: {err}");
    }
}

/// `cc = 1` copies tiles global → shared through operand fragments where the tiles divide
/// the matrices (whole fragment loads never read past an edge), and element by element
/// elsewhere: right both ways, with one and two fragment sets, on 16×16 and 8×8 fragments
/// (the interpreter also checks that every fragment operation is warp-uniform and that
/// the stores into a stage race with no read).
#[test]
fn tiles_copied_through_fragments_are_right() {
    for text in [
        "mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=4,cc=1",
        "mma=16,wm=2,wn=4,fm=2,fn=2,bk=32,g=8,vec=4,fb=2,cc=1",
        "mma=16,wm=4,wn=2,fm=4,fn=4,bk=16,g=8,vec=4,cc=1",
        "mma=8,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=4,fb=2,cc=1",
    ] {
        let config = Config::parse(text).unwrap();
        let p = matmul_f16::F16Params::from_config(&config).unwrap();
        let (bm, bn) = (p.block_m(), p.block_n());
        // Whole tiles (one and several k steps), then ragged ones.
        for (m, n, k) in [(bm, bn, p.bk), (2 * bm, 3 * bn, 4 * p.bk), (37, 29, 53)] {
            check(&workload(m, n, k), &config, 3).unwrap();
        }
    }
}

/// CUDA copies operand tiles with 16-byte vector copies and never stores an operand
/// fragment: a `cc = 1` config there is a typed error, not wrong code.
#[test]
fn operand_fragment_stores_are_refused_on_cuda() {
    let config = Config::parse("mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cc=1").unwrap();
    let lowered = workload(64, 64, 64)
        .lower_with("template", Some(&config))
        .unwrap();
    let err = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("CUDA stores accumulator fragments only, not a matrix_a tile"),
        "{err}"
    );
}

/// Every config of the space for a WGSL target with 16×16 cooperative matrices (an H100's
/// Vulkan: 48 KiB of workgroup memory, 1024 invocations) emits WGSL that naga validates:
/// cooperative-matrix operations need uniform control flow, which naga checks.
#[test]
fn every_wgsl_config_of_the_space_validates() {
    let limits = common::nvidia_vulkan_limits();
    let r = TargetLimits {
        name: "vulkan".into(),
        max_threads_per_block: limits.max_threads_per_block,
        max_shared_bytes: limits.max_shared_bytes,
        register_cap: false,
        ..resources(&[16])
    };
    let space = matmul_f16::space(&r);
    assert!(space.iter().any(|c| c.get("fb") == Some(2)), "{space:?}");
    assert!(space.iter().any(|c| c.get("cc") == Some(1)), "{space:?}");
    // Ragged (element-wise copies), and a shape every block tile of the space divides
    // (copies through fragments where `cc = 1`).
    let (ragged, whole) = (workload(100, 70, 90), workload(768, 256, 64));
    for (w, config) in space.iter().flat_map(|c| [(&ragged, c), (&whole, c)]) {
        let lowered = w.lower_with("template", Some(config)).unwrap();
        for k in &lowered.kernels {
            let opts = weft_codegen_wgsl::WgslOptions {
                limits: limits.clone(),
            };
            let src = weft_codegen_wgsl::emit(k, &opts)
                .unwrap_or_else(|e| panic!("{config}: {e}"))
                .source;
            assert!(src.contains("coopMultiplyAdd"), "{config}");
            let through_fragments = config.get("cc") == Some(1) && std::ptr::eq(w, &whole);
            assert_eq!(
                src.contains("coopStoreT(a_copy"),
                through_fragments,
                "{config}"
            );
            if let Err(e) = weft_codegen_wgsl::validate(&src) {
                panic!("{config}: {e}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn configs_across_the_spaces_are_right(
        ci in any::<prop::sample::Index>(),
        m in 1i64..150,
        n in 1i64..150,
        k in 1i64..100,
        seed in 0u64..1000,
    ) {
        let all = configs();
        let config = &all[ci.index(all.len())];
        check(&workload(m, n, k), config, seed).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn the_space_follows_the_matrix_units() {
    for (mma, want) in [(&[16][..], 16), (&[8], 8), (&[], 0)] {
        let r = resources(mma);
        let space = matmul_f16::space(&r);
        // Small enough to tune in under a minute a shape on a GPU.
        assert!(!space.is_empty() && space.len() <= 300, "{}", space.len());
        for c in &space {
            let p = matmul_f16::F16Params::from_config(c).unwrap();
            assert_eq!(p.mma, want, "{c}");
            assert!(p.threads() <= r.max_threads_per_block as i64, "{c}");
            assert!(p.shared_bytes() <= r.max_shared_bytes as i64, "{c}");
        }
        assert!(space.contains(&matmul_f16::default_config(&r)));
    }
    // WebGPU's 16 KiB still get a config.
    let web = matmul_f16::default_config(&TargetLimits::webgpu_default());
    let p = matmul_f16::F16Params::from_config(&web).unwrap();
    assert!(p.shared_bytes() <= 16 * 1024 && p.mma == 0, "{web}");
}

#[test]
fn configs_outside_the_space_are_typed_errors() {
    let w = workload(64, 64, 64);
    for (text, want) in [
        (
            "mma=12,wm=2,wn=2,fm=2,fn=2,bk=32,g=8",
            "`mma` = 12 must be 0, 8 or 16",
        ),
        (
            "mma=16,wm=3,wn=2,fm=2,fn=2,bk=32,g=8",
            "`wm` = 3 must be 1, 2, 4 or 8",
        ),
        (
            "mma=16,wm=2,wn=2,fm=5,fn=2,bk=32,g=8",
            "`fm` = 5 must be 1, 2, 3, 4 or 8",
        ),
        (
            "mma=16,wm=2,wn=2,fm=2,fn=2,bk=8,g=8",
            "`bk` = 8 must be 16, 32 or 64",
        ),
        (
            "mma=16,wm=2,wn=2,fm=2,fn=2,bk=32",
            "parameter `g` is missing",
        ),
        (
            "mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,x=1",
            "unknown parameter `x`",
        ),
    ] {
        let e = w
            .lower_with("template", Some(&Config::parse(text).unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
}

/// `cp=1`: tiles go global -> shared as `cp.async` on CUDA (16 bytes, L1 bypassed, zero
/// fill at the edges by the plain stores beside), waited for before every barrier, with
/// the synchronous copy for GPUs before sm_80; NVRTC compiles it; HIP and the other
/// languages copy synchronously; the interpreter's result is right at an odd shape.
#[test]
fn async_copies_are_cp_async_on_cuda_and_plain_copies_elsewhere() {
    let config = Config::parse("mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=1").unwrap();
    let w = workload(37, 29, 56);
    check(&w, &config, 7).unwrap();
    let lowered = w.lower_with("template", Some(&config)).unwrap();
    assert!(lowered.kernels.iter().all(|k| k.async_copies));
    let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default())
        .unwrap()
        .source;
    for needle in [
        "#if __CUDA_ARCH__ >= 800",
        "cp.async.cg.shared.global [s], [%1], 16;",
        "asm volatile(\"cp.async.wait_all;\" ::: \"memory\");",
        "#else",
    ] {
        assert!(cuda.contains(needle), "`{needle}` not in:\n{cuda}");
    }
    assert!(!cuda.contains("A_ldg[16]"), "no register staging:\n{cuda}");
    if let Err(e) = weft_codegen_cuda::nvrtc::check(&cuda) {
        panic!("{e}");
    }
    let hip = weft_codegen_cuda::hip::emit_lowered(
        &w.lower_with(
            "template",
            Some(&Config::parse("mma=0,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=1").unwrap()),
        )
        .unwrap(),
        &Default::default(),
    )
    .unwrap()
    .source;
    assert!(!hip.contains("cp.async"), "{hip}");
    let config = Config::parse("mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=2").unwrap();
    let err = w
        .lower_with("template", Some(&config))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`cp` = 2 must be 0 or 1"), "{err}");
}

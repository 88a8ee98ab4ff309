//! The CUDA reference rows of `weft bench`: cuBLAS SGEMM and HGEMM give the row-major
//! product (a non-square shape catches a transposed call), cuDNN's convolution matches a
//! float64 convolution in every layout, precision and grouping weft benchmarks against,
//! and a device-to-device copy times. Skipped without CUDA (or cuBLAS, cuDNN) unless
//! `WEFT_REQUIRE` names `cuda` (or `cublas`, `cudnn`).

use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng, rngs::StdRng};
use weft_runtime::Target;
use weft_runtime::reference::{ConvLayout, ConvProblem, CudaReference, ReferenceError};
use weft_testkit::devices::require_or_skip;

fn open() -> Option<CudaReference> {
    let target = Target::parse("cuda").unwrap_or_else(|e| panic!("{e}"));
    match CudaReference::open(&target) {
        Ok(r) => Some(r),
        Err(e) if e.is_unavailable() => {
            require_or_skip("cuda", &e.to_string());
            None
        }
        Err(e) => panic!("CUDA is present but the reference failed to open: {e}"),
    }
}

#[test]
fn cublas_sgemm_is_row_major_a_times_b() {
    let Some(mut r) = open() else { return };
    let (m, n, k) = (100, 72, 136);
    let mut rng = StdRng::seed_from_u64(1);
    let a: Vec<f32> = (0..m * k).map(|_| rng.random()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.random()).collect();
    let (c, timing) = match r.sgemm(&a, &b, [m, n, k], 1, 3) {
        Ok(x) => x,
        Err(e @ ReferenceError::LibraryMissing { .. }) => {
            require_or_skip("cublas", &e.to_string());
            return;
        }
        Err(e) => panic!("SGEMM failed: {e}"),
    };
    assert_eq!(timing.all.len(), 3);
    let view = |v: &[f32], r, c| -> Array2<f64> {
        ArrayView2::from_shape((r, c), v)
            .unwrap_or_else(|e| panic!("{e}"))
            .mapv(f64::from)
    };
    let want = view(&a, m, k).dot(&view(&b, k, n));
    let got = view(&c, m, n);
    let worst = want
        .iter()
        .zip(got.iter())
        .map(|(w, g)| (w - g).abs() / w.abs().max(1e-6))
        .fold(0.0f64, f64::max);
    assert!(worst <= 1e-4, "cuBLAS result off by {worst:e}");
}

#[test]
fn sgemm_rejects_mismatched_inputs() {
    let Some(mut r) = open() else { return };
    let err = r.sgemm(&[1.0; 6], &[1.0; 6], [2, 2, 2], 0, 1);
    assert!(
        matches!(err, Err(ReferenceError::BadGemm { .. })),
        "{err:?}"
    );
}

#[test]
fn device_to_device_copy_times() {
    let Some(mut r) = open() else { return };
    let t = r
        .copy(1 << 24, 1, 5)
        .unwrap_or_else(|e| panic!("copy failed: {e}"));
    assert_eq!(t.all.len(), 5);
    assert!(!t.median.is_zero());
}

#[test]
fn reference_on_a_non_cuda_target_is_an_unavailable_error() {
    let err = CudaReference::open(&Target::Cpu);
    assert!(matches!(&err, Err(e) if e.is_unavailable()), "{err:?}");
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    // Values that fp16 holds exactly, so both precisions see the same inputs.
    (0..n)
        .map(|_| (rng.random_range(-64i32..64) as f32) / 64.0)
        .collect()
}

fn worst_error(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - w).abs() / w.abs().max(1.0))
        .fold(0.0, f64::max)
}

#[test]
fn cublas_hgemm_is_row_major_a_times_b() {
    let Some(mut r) = open() else { return };
    let (m, n, k) = (37, 29, 53);
    let (a, b) = (random(m * k, 2), random(k * n, 3));
    let (c, _) = match r.hgemm(&a, &b, [m, n, k], 0, 2) {
        Ok(x) => x,
        Err(e @ ReferenceError::LibraryMissing { .. }) => {
            require_or_skip("cublas", &e.to_string());
            return;
        }
        Err(e) => panic!("HGEMM failed: {e}"),
    };
    let mut want = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k)
                .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                .sum();
        }
    }
    // fp16 output: one rounding of a value below 64 is at most 2^-5 absolute.
    let worst = worst_error(&c, &want);
    assert!(worst <= 0.04, "HGEMM off by {worst:e}");
}

/// The float64 convolution of `p` (layout, groups, bias and ReLU as `p` says).
fn conv_reference(p: &ConvProblem, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<f64> {
    let (oh, ow) = p.out_hw();
    let cg = p.c / p.groups;
    let kg = p.k / p.groups;
    let xi = |n: usize, c: usize, h: usize, wi: usize| match p.layout {
        ConvLayout::Nchw => ((n * p.c + c) * p.h + h) * p.w + wi,
        ConvLayout::Nhwc => ((n * p.h + h) * p.w + wi) * p.c + c,
    };
    let wi = |k: usize, c: usize, r: usize, s: usize| match p.layout {
        ConvLayout::Nchw => ((k * cg + c) * p.r + r) * p.s + s,
        ConvLayout::Nhwc => ((k * p.r + r) * p.s + s) * cg + c,
    };
    let yi = |n: usize, k: usize, h: usize, w: usize| match p.layout {
        ConvLayout::Nchw => ((n * p.k + k) * oh + h) * ow + w,
        ConvLayout::Nhwc => ((n * oh + h) * ow + w) * p.k + k,
    };
    let mut y = vec![0.0f64; p.n * p.k * oh * ow];
    for n in 0..p.n {
        for k in 0..p.k {
            let g = k / kg;
            for h in 0..oh {
                for wo in 0..ow {
                    let mut acc = 0.0f64;
                    for c in 0..cg {
                        for r in 0..p.r {
                            for s in 0..p.s {
                                let ih = (h * p.stride + r) as i64 - p.pad as i64;
                                let iw = (wo * p.stride + s) as i64 - p.pad as i64;
                                if ih < 0 || iw < 0 || ih >= p.h as i64 || iw >= p.w as i64 {
                                    continue;
                                }
                                let xv = x[xi(n, g * cg + c, ih as usize, iw as usize)];
                                acc += f64::from(xv) * f64::from(w[wi(k, c, r, s)]);
                            }
                        }
                    }
                    if p.bias_relu {
                        acc = (acc + f64::from(bias[k])).max(0.0);
                    }
                    y[yi(n, k, h, wo)] = acc;
                }
            }
        }
    }
    y
}

#[test]
fn cudnn_convolution_matches_float64_in_every_variant() {
    let Some(mut r) = open() else { return };
    let base = ConvProblem {
        n: 2,
        c: 6,
        h: 11,
        w: 13,
        k: 10,
        r: 3,
        s: 3,
        stride: 2,
        pad: 1,
        groups: 1,
        layout: ConvLayout::Nchw,
        half: false,
        bias_relu: false,
    };
    let variants = [
        base.clone(),
        ConvProblem {
            layout: ConvLayout::Nhwc,
            half: true,
            stride: 1,
            ..base.clone()
        },
        ConvProblem {
            half: true,
            bias_relu: true,
            ..base.clone()
        },
        ConvProblem {
            layout: ConvLayout::Nhwc,
            half: true,
            bias_relu: true,
            ..base.clone()
        },
        ConvProblem {
            bias_relu: true,
            ..base.clone()
        },
        // Depthwise: one group per channel.
        ConvProblem {
            k: 6,
            groups: 6,
            r: 5,
            s: 5,
            pad: 2,
            stride: 1,
            ..base.clone()
        },
    ];
    for p in variants {
        let [xl, wl, _] = p.lens();
        let (x, w, bias) = (random(xl, 4), random(wl, 5), random(p.k, 6));
        let got = match r.conv(&p, &x, &w, p.bias_relu.then_some(&bias[..]), 1, 3) {
            Ok(g) => g,
            Err(e @ ReferenceError::LibraryMissing { .. }) => {
                require_or_skip("cudnn", &e.to_string());
                return;
            }
            Err(e) => panic!("cuDNN failed on {p}: {e}"),
        };
        assert_eq!(got.timing.all.len(), 3);
        let want = conv_reference(&p, &x, &w, &bias);
        let worst = worst_error(&got.output, &want);
        let limit = if p.half { 0.04 } else { 1e-4 };
        assert!(
            worst <= limit,
            "{p} with {}: off by {worst:e}",
            got.algorithm
        );
    }
}

#[test]
fn conv_rejects_mismatched_inputs() {
    let Some(mut r) = open() else { return };
    let p = ConvProblem {
        n: 1,
        c: 3,
        h: 5,
        w: 5,
        k: 4,
        r: 3,
        s: 3,
        stride: 1,
        pad: 0,
        groups: 2,
        layout: ConvLayout::Nchw,
        half: false,
        bias_relu: false,
    };
    // 2 groups do not divide 3 channels: refused before any library call.
    let err = r.conv(&p, &[0.0; 75], &[0.0; 36], None, 0, 1);
    assert!(
        matches!(err, Err(ReferenceError::BadConv { .. })),
        "{err:?}"
    );
}

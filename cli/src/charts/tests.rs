//! The charts are written as SVG, at the right size, and carry their labels.

use super::bars::plan_op;
use super::*;

/// A fresh directory per test; with `CHARTS_KEEP=dir` it is made there and kept, so
/// the charts can be looked at.
fn out_dir(name: &str) -> PathBuf {
    let keep = std::env::var_os("CHARTS_KEEP").map(PathBuf::from);
    let dir = keep
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("weft-charts-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn done(dir: PathBuf) {
    if std::env::var_os("CHARTS_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// A row; `series` is "schedule/target", with a "ref:" prefix for reference rows.
fn pt(op: &str, series: &str, shape: &str, seconds: f64, flops: f64, bytes: f64) -> Point {
    let (schedule, target) = series.split_once('/').unwrap();
    let reference = schedule.starts_with("ref:");
    let schedule = schedule.trim_start_matches("ref:").into();
    let (op, shape, target) = (op.into(), shape.into(), target.into());
    Point {
        op,
        schedule,
        shape,
        target,
        reference,
        seconds,
        flops,
        bytes,
    }
}

/// A realistic run: matmul against cuBLAS, conv2d against cuDNN (one series missing a
/// shape), a reduction, and device copies (no flops: not on the roofline).
fn sample() -> Vec<Point> {
    let mut v = Vec::new();
    for (n, t) in [(256.0, 9e-6), (1024.0, 1.1e-4), (4096.0, 6.5e-3)] {
        let (shape, f, b) = (format!("m={n},n={n},k={n}"), 2.0 * n * n * n, 12.0 * n * n);
        for (series, k) in [
            ("template/cuda", 1.0),
            ("tiled/cuda", 0.6),
            ("template/vulkan", 1.4),
            ("ref:cublas-sgemm/cuda", 0.5),
        ] {
            v.push(pt("matmul", series, &shape, t * k, f, b));
        }
    }
    for (c, hw, t) in [
        (64.0, 224.0, 9.0e-4),
        (128.0, 56.0, 3.1e-4),
        (512.0, 7.0, 4.0e-5),
    ] {
        let shape = format!("n=1,c={c},h={hw},w={hw},k={c},r=3,s=3,stride=1,pad=1");
        let (f, b) = (
            18.0 * c * c * hw * hw,
            4.0 * (2.0 * c * hw * hw + 9.0 * c * c),
        );
        v.push(pt("conv2d", "template/cuda", &shape, t, f, b));
        v.push(pt("conv2d", "ref:cudnn/cuda", &shape, t * 0.3, f, b));
        if c < 500.0 {
            v.push(pt("conv2d", "template/wgpu", &shape, t * 2.0, f, b));
        }
    }
    for n in [1e6, 1.6e7] {
        let (shape, t) = (format!("n={n}"), n * 4.0 / 1.9e12 + 3e-6);
        v.push(pt("sum", "template/cuda", &shape, t * 1.5, n, n * 4.0));
        v.push(pt(
            "copy",
            "ref:d2d-copy/cuda",
            &shape,
            t * 2.0,
            0.0,
            n * 8.0,
        ));
    }
    v
}

fn roofs() -> Roofs {
    Roofs {
        peak_flops: Some(51e12),
        bandwidth: Some(1.9e12),
        label: "NVIDIA H100 80GB HBM3".into(),
    }
}

/// The size an SVG declares on its root element (`<svg width="W" height="H" ...`).
fn svg_size(path: &Path) -> (u32, u32) {
    let s = std::fs::read_to_string(path).unwrap();
    let root = s.lines().next().unwrap();
    let attr = |name: &str| -> u32 {
        let at = root.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        root[at..].split('"').next().unwrap().parse().unwrap()
    };
    (attr("width"), attr("height"))
}

/// Reads an SVG and returns the strings of its `<text>` elements (plotters writes each
/// one's text on a line of its own).
fn svg_texts(path: &Path) -> Vec<String> {
    let s = std::fs::read_to_string(path).unwrap();
    assert!(
        s.starts_with("<svg") && s.trim_end().ends_with("</svg>"),
        "{} is not an SVG",
        path.display()
    );
    let mut lines = s.lines();
    let mut texts = Vec::new();
    while let Some(l) = lines.next() {
        if l.starts_with("<text") {
            texts.push(lines.next().unwrap().to_string());
        }
    }
    texts
}

const NONE: Vec<PathBuf> = Vec::new();

fn assert_texts(texts: &[String], want: &[&str]) {
    for w in want {
        assert!(texts.iter().any(|t| t == w), "no text {w:?} in {texts:?}");
    }
}

#[test]
fn op_chart_writes_svg_with_labels() {
    let dir = out_dir("op");
    let pts = sample();
    let suffix = " (H100, cuda + vulkan)";
    let files = op_chart("matmul", &pts, suffix, &dir.join("matmul")).unwrap();
    assert_eq!(files, vec![dir.join("matmul.svg")]);
    let plan = plan_op("matmul", &pts, "").unwrap();
    assert_eq!((plan.series.len(), plan.groups.len()), (4, 3));
    assert_eq!(svg_size(&files[0]), plan.size());
    let texts = svg_texts(&files[0]);
    let title = "matmul: median kernel time (H100, cuda + vulkan)";
    assert_texts(
        &texts,
        &[title, "m=1024,n=1024,k=1024", "110 µs", "6.5 ms", "1 ms"],
    );
    assert_texts(&texts, &["series", "template on cuda", "tiled on cuda"]);
    assert_texts(&texts, &["template on vulkan", "cublas-sgemm"]);
    // Weft series come first in the legend, then references.
    let pos = |s: &str| texts.iter().position(|t| t == s).unwrap();
    assert!(pos("template on vulkan") < pos("cublas-sgemm"));
    // Other ops' rows stay out of this op's chart.
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("cudnn") || t.contains("copy"))
    );
    // Long conv shapes are wrapped at a comma, nothing dropped; a missing value is no bar.
    let files = op_chart("conv2d", &pts, "", &dir.join("conv2d")).unwrap();
    let texts = svg_texts(&files[0]);
    assert_texts(
        &texts,
        &["n=1,c=64,h=224,w=224,k=64,r=3,s=3,", "stride=1,pad=1"],
    );
    assert_texts(&texts, &["template on wgpu", "cudnn"]);
    assert_eq!(plan_op("conv2d", &pts, "").unwrap().groups[2].1.len(), 2);
    done(dir);
}

#[test]
fn op_chart_many_rows_and_one_row() {
    let dir = out_dir("many");
    // 9 shapes × 8 series (5 weft, 3 references) with one hole, spanning 1 µs .. 1 s.
    let weft = ["template", "tiled", "split-k", "wmma", "naive"];
    let names = weft
        .iter()
        .chain(&["ref:cublas-sgemm", "ref:cublaslt", "ref:cutlass"]);
    let mut pts = Vec::new();
    for s in 0..9 {
        let shape = format!("m={},n=4096,k=4096", 1 << s);
        for (k, name) in names.clone().enumerate().filter(|&(k, _)| (s, k) != (4, 2)) {
            let t = 1e-6 * 10f64.powf(s as f64 * 0.7) * (1.0 + k as f64 * 0.3);
            pts.push(pt("matmul", &format!("{name}/cuda"), &shape, t, 1e9, 1e7));
        }
    }
    let files = op_chart("matmul", &pts, "", &dir.join("many")).unwrap();
    let plan = plan_op("matmul", &pts, "").unwrap();
    let counts = (plan.series.len(), plan.groups.len(), plan.groups[4].1.len());
    assert_eq!(counts, (8, 9, 7));
    assert_eq!(svg_size(&files[0]), plan.size());
    let texts = svg_texts(&files[0]);
    assert_texts(
        &texts,
        &[
            "cutlass",
            "wmma on cuda",
            "m=256,n=4096,k=4096",
            "1.23 s",
            "1 µs",
        ],
    );
    let one = [pt("softmax", "template/wgpu", "n=4096", 2.5e-5, 1e5, 3e4)];
    let files = op_chart("softmax", &one, "", &dir.join("one.f32")).unwrap();
    assert_eq!(files, [dir.join("one.f32.svg")]);
    assert_eq!(svg_size(&files[0]).0, WIDTH);
    let texts = svg_texts(&files[0]);
    assert_texts(&texts, &["25 µs", "n=4096", "template on wgpu"]);
    done(dir);
}

#[test]
fn roofline_writes_roofs_points_and_legend() {
    let dir = out_dir("roof");
    let files = roofline(&sample(), &roofs(), &dir.join("roofline")).unwrap();
    assert_eq!(svg_size(&files[0]), (WIDTH, ROOFLINE_HEIGHT));
    let texts = svg_texts(&files[0]);
    assert_texts(
        &texts,
        &["Roofline: NVIDIA H100 80GB HBM3", "10 TFLOP/s", "100"],
    );
    assert_texts(&texts, &["1.9 TB/s memory", "51 TFLOP/s peak"]);
    assert_texts(
        &texts,
        &["matmul", "conv2d", "sum", "cuda", "vulkan", "wgpu"],
    );
    assert_texts(&texts, &["weft schedule", "reference"]);
    // Copies have no flops: they are no point and no legend entry.
    assert!(!texts.iter().any(|t| t == "copy"));
    // With one roof, or none, only what is known is drawn.
    for (peak, bandwidth, has, lacks) in [
        (Some(51e12), None, "51 TFLOP/s peak", "memory"),
        (None, Some(1.9e12), "1.9 TB/s memory", "peak"),
        (None, None, "matmul", "memory"),
    ] {
        let (peak_flops, label) = (peak, String::new());
        let r = Roofs {
            peak_flops,
            bandwidth,
            label,
        };
        let texts = svg_texts(&roofline(&sample(), &r, &dir.join("partial")).unwrap()[0]);
        assert_texts(&texts, &[has, "Roofline"]);
        assert!(!texts.iter().any(|t| t.contains(lacks)), "{lacks} drawn");
    }
    done(dir);
}

#[test]
fn empty_input_writes_nothing() {
    let dir = out_dir("empty");
    assert_eq!(op_chart("matmul", &[], "", &dir.join("a")).unwrap(), NONE);
    assert_eq!(
        op_chart("no-such-op", &sample(), "", &dir.join("b")).unwrap(),
        NONE
    );
    assert_eq!(roofline(&[], &roofs(), &dir.join("c")).unwrap(), NONE);
    let copies: Vec<Point> = sample().into_iter().filter(|p| p.op == "copy").collect();
    assert_eq!(roofline(&copies, &roofs(), &dir.join("d")).unwrap(), NONE);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    done(dir);
}

#[test]
fn bad_values_are_skipped() {
    let dir = out_dir("bad");
    let bad = |s: f64, f: f64, b: f64| pt("matmul", "template/cuda", "m=1", s, f, b);
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let all_bad = [nan, 0.0, inf, -1.0].map(|s| bad(s, 1.0, 1.0));
    assert_eq!(
        op_chart("matmul", &all_bad, "", &dir.join("x")).unwrap(),
        NONE
    );
    assert_eq!(roofline(&all_bad, &roofs(), &dir.join("y")).unwrap(), NONE);
    let roof_bad = [(nan, 1.0), (1.0, 0.0), (inf, 1.0), (-1.0, -1.0)].map(|(f, b)| bad(1e-3, f, b));
    assert_eq!(roofline(&roof_bad, &roofs(), &dir.join("z")).unwrap(), NONE);
    let mut mixed = all_bad.to_vec();
    mixed.push(pt("matmul", "template/cuda", "m=2", 3e-4, 1e9, 1e6));
    let texts = svg_texts(&op_chart("matmul", &mixed, "", &dir.join("mixed")).unwrap()[0]);
    assert_texts(&texts, &["m=2", "300 µs"]);
    assert!(
        !texts
            .iter()
            .any(|t| t == "m=1" || t.contains("NaN") || t.contains("inf"))
    );
    let files = roofline(&mixed, &roofs(), &dir.join("mixed-roof")).unwrap();
    assert_eq!(files, [dir.join("mixed-roof.svg")]);
    done(dir);
}

#[test]
fn unwritable_path_is_a_typed_error() {
    let dir = out_dir("unwritable");
    std::fs::write(dir.join("a-file"), "not a directory").unwrap();
    let stem = dir.join("a-file").join("sub").join("chart");
    match op_chart("matmul", &sample(), "", &stem) {
        Err(ChartError::Io { path, .. }) => assert_eq!(path, stem.with_extension("svg")),
        other => panic!("expected an io error, got {other:?}"),
    }
    let err = roofline(&sample(), &roofs(), &stem).unwrap_err();
    assert!(err.to_string().contains("chart.svg"), "{err}");
    // The directory exists but the SVG's name is taken by a directory.
    std::fs::create_dir(dir.join("taken.svg")).unwrap();
    match op_chart("matmul", &sample(), "", &dir.join("taken")) {
        Err(ChartError::Io { path, .. }) => assert_eq!(path, dir.join("taken.svg")),
        other => panic!("expected an io error, got {other:?}"),
    }
    done(dir);
}

#[test]
fn number_formats() {
    let sig: Vec<_> = [1.9, 51.0, 988.7, 0.012345].map(sig3).into();
    assert_eq!(sig, ["1.9", "51", "989", "0.0123"]);
    let times: Vec<_> = [2.5e-5, 1.234e-3, 2.0, 5e-7].map(fmt_time).into();
    assert_eq!(times, ["25 µs", "1.23 ms", "2 s", "500 ns"]);
    assert_eq!(fmt_si(1.9e12, "B/s"), "1.9 TB/s");
    assert_eq!(fmt_si(5.1e13, "FLOP/s"), "51 TFLOP/s");
    assert_eq!(fmt_si(0.5, "FLOP/byte"), "0.5 FLOP/byte");
    assert_eq!(wrap_shape("m=1,n=2"), ["m=1,n=2"]);
    let conv = "n=1,c=64,h=224,w=224,k=64,r=3,s=3,stride=1,pad=1";
    assert_eq!(
        wrap_shape(conv),
        ["n=1,c=64,h=224,w=224,k=64,r=3,s=3,", "stride=1,pad=1"]
    );
    let label = log_labels(5.0, sig3);
    let ticks = [1e-6 * (1.0 - 1e-12), 2e-6, 1e-5, 1e-5, 1e-4];
    let got: Vec<_> = ticks.iter().map(label).collect();
    assert_eq!(got, ["0.000001", "", "0.00001", "", "0.0001"]);
}

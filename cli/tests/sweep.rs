//! `weft sweep` beyond the products: any op with a template over a list of shapes (the
//! data of issue 28's Vulkan ÷ CUDA figure), here on the CPU interpreter; the named sets
//! stay the products'.

mod common;

use common::{bad_input, ok};

#[test]
fn a_convolution_sweeps_its_rule_against_tuning() {
    let json = std::env::temp_dir().join(format!("weft-sweep-conv-{}.json", std::process::id()));
    let json_s = json.to_string_lossy().into_owned();
    let shapes =
        "n=1,c=4,h=5,w=5,k=8,r=3,s=3,stride=1,pad=1;n=1,c=3,h=7,w=6,k=5,r=1,s=1,stride=2,pad=0";
    let printed = ok(&[
        "sweep",
        "--op",
        "conv2d-f16",
        "--target",
        "cpu",
        "--shapes",
        shapes,
        "--sample",
        "2",
        "--json",
        &json_s,
    ]);
    assert!(printed.contains("conv2d-f16/implicit-gemm"), "{printed}");
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}"));
    let sweep: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let rows = sweep["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{text}");
    for row in rows {
        // The rule and the tuned best both ran (and were checked) at every shape; no
        // vendor call beside a convolution here.
        assert!(
            row["rule"]["ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "{row}"
        );
        assert!(
            row["tuned"]["ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "{row}"
        );
        assert!(row["reference_ms"].is_null(), "{row}");
    }
    assert!(sweep["reference"].is_null(), "{text}");
    let _ = std::fs::remove_file(&json);
}

#[test]
fn the_named_sets_belong_to_their_ops() {
    let sweep = |op: &str, set: &str| {
        ["sweep", "--op", op, "--target", "cpu", "--shapes", set].map(String::from)
    };
    let args = sweep("conv2d-f16", "mixed");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    bad_input(&args, &["`mixed` is a set of matmul shapes", "conv2d-f16"]);
    let args = sweep("matmul", "resnet50");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    bad_input(&args, &["`resnet50` is a set of convolutions", "matmul"]);
}

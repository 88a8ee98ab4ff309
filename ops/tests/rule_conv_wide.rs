//! The 128×64 mma.sync tile the fp16 convolutions' rule takes over views on Hopper
//! (`matmul_f16::wide_views`; `WEFT_CONV_WIDE_MMA=0` turns it off): where it applies, and
//! that it was the fastest config timed (or within 2%) at Inception-v3's three large 3×3
//! convolutions at batch 8 on an H200, where the cost model's pick was at least 1.2×
//! slower (`measurements/h200-2026-12-01/call4`), and faster than the cost model's pick
//! at every convolution of the corpus it reaches, slower at those it leaves
//! (`measurements/h200-2026-12-01b/call5`).

mod common;

use common::sweeps::measured;
use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_kernels::matmul_f16::{space_over_views, wide_views};
use weft_kernels::rule::Product;
use weft_ops::Shape;

fn h200() -> TargetLimits {
    TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda_arch(&cuda_arch("sm_90a").unwrap()).with_warpgroup_mma()
    }
}

/// Inception-v3's 3×3 convolutions as implicit GEMMs (`m` output pixels, `n` output
/// channels, `k` = 9 · input channels) at batch 8, and the same at batch 1.
const INCEPTION_B8: [(i64, i64, i64); 3] = [
    (8 * 147 * 147, 32, 288),
    (8 * 147 * 147, 64, 288),
    (8 * 71 * 71, 192, 720),
];

#[test]
fn the_wide_tile_is_taken_over_views_on_hopper_at_many_blocks_only() {
    let limits = h200();
    let configs = space_over_views(&limits);
    let tile = wide_views::tile().config();
    assert_eq!(
        tile.to_string(),
        "mma=16,wm=2,wn=2,fm=4,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
    );
    for (m, n, k) in INCEPTION_B8 {
        let p = Product::split(m, n, k);
        let (config, splits, why) = wide_views::choose(&limits, &configs, p, false, true)
            .unwrap_or_else(|| panic!("{m}x{n}x{k}: not taken"));
        assert_eq!((config, splits), (tile.clone(), 1), "{m}x{n}x{k}");
        assert!(why.contains("WEFT_CONV_WIDE_MMA=0"), "{why}");
        // Off, with the input computed at the loads, or over a batch of products: the
        // cost model's pick.
        assert!(wide_views::choose(&limits, &configs, p, false, false).is_none());
        assert!(wide_views::choose(&limits, &configs, p, true, true).is_none());
        let batched = Product { batch: 2, ..p };
        assert!(wide_views::choose(&limits, &configs, batched, false, true).is_none());
    }
    // One image: Inception-v3's 147² convolution gives 338 blocks, fewer than the bound.
    let one = Product::split(147 * 147, 64, 288);
    assert!(wide_views::choose(&limits, &configs, one, false, true).is_none());
    // GoogLeNet's 3×3 over 64 channels (576 long: whole wgmma k steps) and the 3×3 stems
    // over 3 channels (27 long: one k step), at batch 8: the cost model's pick.
    for (m, n, k) in [(8 * 56 * 56, 192, 576), (8 * 112 * 112, 32, 27)] {
        let p = Product::split(m, n, k);
        assert!(
            wide_views::choose(&limits, &configs, p, false, true).is_none(),
            "{k}"
        );
    }
    // The 7×7 stems over 3 channels (147 long) take it.
    let stem = Product::split(8 * 112 * 112, 64, 147);
    assert!(wide_views::choose(&limits, &configs, stem, false, true).is_some());
    // Without warpgroup products (an sm_80 part, Vulkan): never.
    let ampere = TargetLimits::cuda_arch(&cuda_arch("sm_80").unwrap());
    let p = Product::split(INCEPTION_B8[1].0, 64, 288);
    assert!(wide_views::choose(&ampere, &space_over_views(&ampere), p, false, true).is_none());
}

#[test]
fn the_wide_tile_was_the_fastest_timed_at_inceptions_large_convolutions() {
    let limits = h200();
    let spec = weft_ops::find("conv2d-f16").unwrap().template.unwrap();
    let data = measured(&["h200-2026-12-01/call4/inception-b8-3x3.json"]);
    assert_eq!(data.len(), 3);
    let tile = wide_views::tile().config().to_string();
    for (shape_text, m) in &data {
        let best = m.times.values().copied().fold(f64::INFINITY, f64::min);
        let wide = m.times[&tile];
        assert!(
            wide <= best * 1.02,
            "{shape_text}: the tile {wide:.1} us, the best timed {best:.1}"
        );
        // The rule (this test's environment leaves the switch unset) takes the tile;
        // the cost model's pick, timed too, was at least 1.2x slower.
        let shape = Shape::parse("conv2d-f16", shape_text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        assert_eq!(config.to_string(), tile, "{shape_text}: {why}");
        let model = &m.old;
        assert!(
            model.1 >= wide * 1.2,
            "{shape_text}: the cost model's {} {:.1} us against {wide:.1}",
            model.0,
            model.1
        );
    }
}

/// Each convolution of the corpus the tile could reach at batch 8, timed with the cost
/// model's pick (`rule`) and the tile (`fixed`): faster at the four the rule gives it;
/// slower at the reduction of whole wgmma steps it leaves; at the two of one k step it
/// leaves, one faster and one slower, together no faster.
#[test]
fn the_tile_is_taken_where_it_was_faster_and_left_where_it_was_not() {
    let limits = h200();
    let configs = space_over_views(&limits);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../measurements");
    let text = std::fs::read_to_string(dir.join("h200-2026-12-01b/call5/wide-b8.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    let (mut taken, mut whole_steps) = (0, 0);
    let (mut short_rule, mut short_tile, mut short) = (0.0, 0.0, 0);
    for row in rows {
        let text = row["shape"].as_str().unwrap();
        let shape = Shape::parse("conv2d-f16", text).unwrap();
        let get = |k: &str| shape.get(k);
        let (ho, wo) = (
            (get("h") + 2 * get("pad") - get("r")) / get("stride") + 1,
            (get("w") + 2 * get("pad") - get("s")) / get("stride") + 1,
        );
        let p = Product::split(get("n") * ho * wo, get("k"), get("c") * get("r") * get("s"));
        let rule = row["rule"]["ms"].as_f64().unwrap();
        let fixed = row["fixed"][0]["ms"].as_f64().unwrap();
        if wide_views::choose(&limits, &configs, p, false, true).is_some() {
            taken += 1;
            assert!(fixed < rule, "{text}: the tile {fixed} ms against {rule}");
        } else if p.k % wide_views::WGMMA_STEP == 0 {
            whole_steps += 1;
            assert!(
                fixed > rule,
                "{text}: left, the tile {fixed} ms against {rule}"
            );
        } else {
            assert!(p.k < wide_views::MIN_K, "{text}");
            (short_rule, short_tile, short) = (short_rule + rule, short_tile + fixed, short + 1);
        }
    }
    assert_eq!((taken, whole_steps, short), (4, 1, 2));
    assert!(
        short_tile >= short_rule,
        "{short_tile} ms against {short_rule}"
    );
}

/// The tile computes a convolution over views right: at an odd shape (edge tiles along
/// every axis, a reduction of 9 · 21 = 189, no whole number of its k steps), on the
/// interpreter, against float64.
#[test]
fn the_wide_tile_computes_a_convolution_right() {
    let shape = Shape::parse(
        "conv2d-f16",
        "n=2,c=21,h=13,w=11,k=70,r=3,s=3,stride=1,pad=1",
    )
    .unwrap();
    let w = weft_ops::Workload::new("conv2d-f16", &shape).unwrap();
    let inputs = w.random_inputs(5);
    let config = wide_views::tile().config();
    let lowered = w.lower_with("implicit-gemm", Some(&config)).unwrap();
    let out = w.run_interp(&lowered, &inputs).unwrap();
    let e = weft_ops::check::Checker::new(&w, &inputs).check(&out);
    assert!(e.is_right(), "{config} at {shape}: error {e}");
}

//! The fp32 matmul's stated rule on Vulkan, where tiles are limited to 20 staged elements
//! a thread (`matmul::MAX_STAGED_UNCAPPED`), against the kernel times an H100 measured
//! through Vulkan at five shapes (2026-11-27c: 48 configs of the space with every time
//! kept at 3001³, 1021³, 1000³; then the rule before and after the limit in one call, a
//! tuning of 8 configs beside each; and 24 configs at 1024³, 3001³, 4096³).

mod common;

use common::sweeps::{figure, measured};
use weft_kernels::{matmul, split_k};
use weft_ops::Shape;

const SWEEPS: [&str; 4] = [
    "h100-2026-11-27c/C-fp32-vk.json",
    "h100-2026-11-27c/b-fp32-vk-old.json",
    "h100-2026-11-27c/b-fp32-vk-new.json",
    "h100-2026-11-27c/fp32-vulkan.json",
];

#[test]
fn the_fp32_rule_on_vulkan_stages_little_and_is_near_the_fastest_config_measured() {
    let limits = common::nvidia_vulkan_limits();
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let data = measured(&SWEEPS);
    assert_eq!(data.len(), 5);
    let (mut new, mut old, mut report) = (vec![], vec![], vec![]);
    for (shape_text, m) in &data {
        let shape = Shape::parse("matmul", shape_text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        let (tile, _) = split_k::parts(&config).unwrap();
        let p = matmul::MatmulParams::from_config(&tile).unwrap();
        assert!(
            p.staged_per_thread() <= matmul::MAX_STAGED_UNCAPPED,
            "{shape_text}: {config} stages {}",
            p.staged_per_thread()
        );
        let best = m.times.values().copied().fold(f64::INFINITY, f64::min);
        let us = *m
            .times
            .get(&config.to_string())
            .unwrap_or_else(|| panic!("{shape_text}: the rule's {config} ({why}) was not timed"));
        new.push(best / us);
        old.push(best / m.old.1);
        report.push(format!(
            "{shape_text}: {:.2} (was {:.2}, {}) {config} {us:.1} us, best {best:.1} us",
            best / us,
            best / m.old.1,
            m.old.0
        ));
    }
    let (near, geo, worst) = figure(&new);
    let (near_old, geo_old, worst_old) = figure(&old);
    let summary = format!(
        "of the best timed: ≥ 0.8x at {near} of 5, geometric mean {geo:.2}x, worst \
         {worst:.2}x; the rule without the limit: {near_old}, {geo_old:.2}x, \
         {worst_old:.2}x\n{}",
        report.join("\n")
    );
    eprintln!("{summary}");
    // What the limit reached on the GPU (docs/matmul-template.md, "On Vulkan: what a
    // thread stages"): a change that moves a pick back to a heavily staging tile fails.
    assert!(
        geo >= geo_old + 0.15 && worst >= 0.5 && near >= 4,
        "{summary}"
    );
}

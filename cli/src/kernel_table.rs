//! The per-kernel table `weft model bench` and `weft model generate --kernels` print: one
//! row per kernel of a compiled model (a partition group's, or several groups' joined by
//! the horizontal fusion), slowest first.

use weft_model::CompiledModel;
use weft_model::horizontal::Horizontal;

use crate::format::{Table, fmt_time};

/// One row per group: its nodes, schedule, time and share, slowest first.
pub(crate) fn kernel_table(model: &CompiledModel, each: &[weft_runtime::Timing]) -> String {
    let g = &model.graph;
    let total: f64 = each.iter().map(|t| t.median.as_secs_f64()).sum();
    // A group whose kernel runs inside another's has no row: its nodes are in that
    // kernel's row (`weft_model::horizontal`).
    let mut order: Vec<usize> = (0..each.len())
        .filter(|&i| !matches!(model.groups[i].horizontal, Horizontal::CarriedBy(_)))
        .collect();
    order.sort_by(|&x, &y| each[y].median.cmp(&each[x].median));
    let mut t =
        Table::new(&["#", "nodes", "output", "schedule", "time", "share"]).align_right(&[0, 4, 5]);
    for i in order {
        let group = &model.partition.groups[i];
        let carried: &[usize] = match &model.groups[i].horizontal {
            Horizontal::Carries(rest) => rest,
            Horizontal::Alone | Horizontal::CarriedBy(_) => &[],
        };
        let nodes: Vec<String> = std::iter::once(i)
            .chain(carried.iter().copied())
            .flat_map(|j| model.partition.groups[j].nodes())
            .map(|n| format!("{}:{}", g.nodes[n.0].name, g.nodes[n.0].op.name()))
            .collect();
        let out = g.tensor(group.output);
        let time = each[i].median.as_secs_f64();
        t.row(vec![
            i.to_string(),
            nodes.join(" "),
            format!("{:?}", out.shape),
            model.groups[i].schedule.clone(),
            fmt_time(each[i].median),
            format!("{:.1}%", 100.0 * time / total.max(f64::MIN_POSITIVE)),
        ]);
    }
    t.render()
}

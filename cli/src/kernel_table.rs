//! The per-kernel table `weft model bench` and `weft model generate --kernels` print: one
//! row per partition group of a compiled model, slowest first.

use weft_model::CompiledModel;

use crate::format::{Table, fmt_time};

/// One row per group: its nodes, schedule, time and share, slowest first.
pub(crate) fn kernel_table(model: &CompiledModel, each: &[weft_runtime::Timing]) -> String {
    let g = &model.graph;
    let total: f64 = each.iter().map(|t| t.median.as_secs_f64()).sum();
    let mut order: Vec<usize> = (0..each.len()).collect();
    order.sort_by(|&x, &y| each[y].median.cmp(&each[x].median));
    let mut t =
        Table::new(&["#", "nodes", "output", "schedule", "time", "share"]).align_right(&[0, 4, 5]);
    for i in order {
        let group = &model.partition.groups[i];
        let nodes: Vec<String> = group
            .nodes()
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

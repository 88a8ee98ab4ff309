//! The per-kernel table `weft model bench` and `weft model generate --kernels` print: one
//! row per kernel of a compiled model (a partition group's, or several groups' joined by
//! the horizontal fusion), slowest first; on a device that orders kernels by the buffers
//! they bind (wgpu), whether each waits behind a barrier for the kernels before it.

use weft_model::CompiledModel;
use weft_model::horizontal::Horizontal;

use crate::format::{Table, fmt_time};

/// One row per group: its nodes, schedule, time and share, slowest first; with
/// `barriers` (per kernel of a run, in run order: `weft_runtime::Device::barriers`), how
/// many of its kernels wait behind one.
pub(crate) fn kernel_table(
    model: &CompiledModel,
    each: &[weft_runtime::Timing],
    barriers: Option<&[bool]>,
) -> String {
    let g = &model.graph;
    let total: f64 = each.iter().map(|t| t.median.as_secs_f64()).sum();
    // A group whose kernel runs inside another's has no row: its nodes are in that
    // kernel's row (`weft_model::horizontal`).
    let mut order: Vec<usize> = (0..each.len())
        .filter(|&i| !matches!(model.groups[i].horizontal, Horizontal::CarriedBy(_)))
        .collect();
    order.sort_by(|&x, &y| each[y].median.cmp(&each[x].median));
    // Each group's kernels' barriers: the run's, cut at the groups' kernel counts.
    let mut waits: Vec<&[bool]> = Vec::new();
    if let Some(all) = barriers {
        let mut rest = all;
        for group in &model.groups {
            let (mine, after) = rest.split_at(group.kernels.kernels.len().min(rest.len()));
            waits.push(mine);
            rest = after;
        }
    }
    let mut head = vec!["#", "nodes", "output", "schedule", "time", "share"];
    if barriers.is_some() {
        head.push("waits");
    }
    let mut t = Table::new(&head).align_right(&[0, 4, 5]);
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
        let mut row = vec![
            i.to_string(),
            nodes.join(" "),
            format!("{:?}", out.shape),
            model.groups[i].schedule.clone(),
            fmt_time(each[i].median),
            format!("{:.1}%", 100.0 * time / total.max(f64::MIN_POSITIVE)),
        ];
        if let Some(mine) = waits.get(i) {
            let n = mine.iter().filter(|&&w| w).count();
            row.push(match mine.len() {
                1 => if n == 1 { "yes" } else { "no" }.to_string(),
                all => format!("{n} of {all}"),
            });
        }
        t.row(row);
    }
    t.render()
}

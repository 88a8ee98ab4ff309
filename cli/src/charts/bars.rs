//! The per-op chart: median kernel time per shape and series, as horizontal bars.

use super::*;

/// The op chart's data, laid out: shape groups of (series index, seconds) bars.
pub(super) struct OpPlan {
    pub(super) title: String,
    pub(super) series: Vec<String>,
    pub(super) groups: Vec<(String, Vec<(usize, f64)>)>,
    pub(super) lo: f64,
    pub(super) hi: f64,
}

impl OpPlan {
    /// Plot height in slots: one per bar plus the gaps between and around groups.
    fn slots(&self) -> f64 {
        let bars: usize = self.groups.iter().map(|(_, b)| b.len()).sum();
        bars as f64 + GROUP_GAP * (self.groups.len() as f64 + 1.0)
    }
}

pub(super) fn plan_op(op: &str, points: &[Point], title_suffix: &str) -> Option<OpPlan> {
    let rows: Vec<&Point> = points
        .iter()
        .filter(|p| p.op == op && p.seconds.is_finite() && p.seconds > 0.0)
        .collect();
    if rows.is_empty() {
        return None;
    }
    // A reference's series is its name alone, unless it ran on several targets: then it
    // would merge them, so it gets "on target" like weft's schedules.
    let multi = |p: &Point| {
        rows.iter()
            .any(|q| q.reference && q.schedule == p.schedule && q.target != p.target)
    };
    let name = |p: &Point| match p.reference && !multi(p) {
        true => p.schedule.clone(),
        false => format!("{} on {}", p.schedule, p.target),
    };
    // Weft series first, then references, each alphabetical: colours stay stable across
    // ops that share series, and the baselines sit together at the bottom of each group.
    let mut series: Vec<(bool, String)> = rows.iter().map(|p| (p.reference, name(p))).collect();
    series.sort();
    series.dedup();
    let series: Vec<String> = series.into_iter().map(|(_, s)| s).collect();
    // Shapes keep the order the benchmark ran them in (usually small to large).
    let mut groups: Vec<(String, Vec<(usize, f64)>)> = Vec::new();
    for p in &rows {
        let si = series.iter().position(|s| *s == name(p)).unwrap_or(0);
        if !groups.iter().any(|(s, _)| *s == p.shape) {
            groups.push((p.shape.clone(), Vec::new()));
        }
        let bars = &mut groups.iter_mut().find(|(s, _)| *s == p.shape)?.1;
        // A repeated (shape, series) row keeps its fastest time: one bar per pair.
        match bars.iter_mut().find(|(s, _)| *s == si) {
            Some(b) => b.1 = b.1.min(p.seconds),
            None => bars.push((si, p.seconds)),
        }
    }
    groups
        .iter_mut()
        .for_each(|(_, bars)| bars.sort_by_key(|b| b.0));
    let lo = rows.iter().map(|p| p.seconds).fold(f64::INFINITY, f64::min);
    let hi = rows.iter().map(|p| p.seconds).fold(0.0, f64::max);
    // ÷3 keeps the shortest bar visibly long; ×6 leaves room for the value printed after
    // the longest.
    let (lo, hi) = log_range(lo / 3.0, hi * 6.0, 2.0);
    let title = format!("{op}: median kernel time{title_suffix}");
    Some(OpPlan {
        title,
        series,
        groups,
        lo,
        hi,
    })
}

/// Per-op bar chart of median time per (shape, series) on a log time axis: shapes are the
/// category labels down the left, each with one bar per series that measured it, the
/// value printed after the bar; the legend sits to the right, outside the plot. A series
/// is "schedule on target" for weft rows and the reference's name for reference rows.
/// Rows of other ops and rows whose time is zero, negative, NaN or infinite are skipped.
/// Writes `stem.svg` and returns its path, or writes nothing and returns `Ok(vec![])` if no
/// row is left.
pub fn op_chart(
    op: &str,
    points: &[Point],
    title_suffix: &str,
    stem: &Path,
) -> Result<Vec<PathBuf>, ChartError> {
    match plan_op(op, points, title_suffix) {
        Some(plan) => render(stem, &plan),
        None => Ok(vec![]),
    }
}

impl Chart for OpPlan {
    fn size(&self) -> (u32, u32) {
        let plot = (self.slots() * SLOT_PX as f64).ceil() as u32 + TOP_PX + BOTTOM_PX;
        // The legend sits beside the plot and must fit too.
        let legend = self.series.len() as u32 * 22 + TOP_PX + 40;
        (WIDTH, plot.max(legend).max(260))
    }

    fn draw<DB: DrawingBackend>(&self, root: Area<DB>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        // The legend and the shape labels take the width their longest text needs.
        let legend_w = widest(&root, self.series.iter().cloned(), 14.0).clamp(90, 400) + 50;
        let label_w = widest(
            &root,
            self.groups.iter().flat_map(|(s, _)| wrap_shape(s)),
            14.0,
        ) + 20;
        let (left, right) = root.split_horizontally(WIDTH as i32 - legend_w);
        let (lo, hi, slots) = (self.lo, self.hi, self.slots());
        let tick = log_labels((hi / lo).log10(), fmt_time);
        let mut chart = ChartBuilder::on(&left)
            .caption(&self.title, text(22.0, BLACK, HPos::Left))
            .margin_top(10)
            .margin_left(10)
            .margin_right(10)
            .x_label_area_size(BOTTOM_PX - 20)
            .y_label_area_size(label_w)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..slots)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(log_ticks(lo, hi))
            .x_label_formatter(&tick)
            .x_desc("median kernel time (log scale)")
            .label_style(text(14.0, BLACK, HPos::Left))
            .axis_desc_style(text(14.0, BLACK, HPos::Left))
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()?;
        // Slots count down from the top; plotters' y grows upward, hence `slots - y`.
        let mut y = GROUP_GAP;
        for (gi, (shape, bars)) in self.groups.iter().enumerate() {
            let (y0, y1) = (y - GROUP_GAP / 2.0, y + bars.len() as f64 + GROUP_GAP / 2.0);
            // A faint band behind every other group, so each shape's bars read as a block.
            if gi % 2 == 0 {
                let band = [(lo, slots - y0), (hi, slots - y1)];
                chart.draw_series([Rectangle::new(band, RGBColor(244, 246, 250).filled())])?;
            }
            for (k, &(si, secs)) in bars.iter().enumerate() {
                let (x0, yc) = chart.backend_coord(&(lo, slots - (y + k as f64 + 0.5)));
                let x1 = chart.backend_coord(&(secs, 0.0)).0;
                // In pixels, so every bar is equally thick whatever the rounding.
                let rect = [(x0 + 1, yc - BAR_PX / 2), (x1.max(x0 + 2), yc + BAR_PX / 2)];
                left.draw(&Rectangle::new(rect, colour(si).filled()))?;
                put(
                    &left,
                    &fmt_time(secs),
                    (x1 + 4, yc),
                    text(12.0, GREY, HPos::Left),
                )?;
            }
            // The shape's label, wrapped, centred on its group left of the axis.
            let lines = wrap_shape(shape);
            let (ax, yc) = chart.backend_coord(&(lo, slots - (y + bars.len() as f64 / 2.0)));
            let first = yc - (lines.len() as i32 - 1) * 16 / 2;
            for (i, l) in lines.iter().enumerate() {
                let style = text(14.0, BLACK, HPos::Right);
                put(&left, l, (ax - 8, first + 16 * i as i32), style)?;
            }
            y = y1 + GROUP_GAP / 2.0;
        }
        let entries: Vec<_> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), SQUARE, colour(i), false))
            .collect();
        legend(&right, "series", &entries, TOP_PX as i32)?;
        root.present()
    }
}

//! The roofline: achieved FLOP/s against arithmetic intensity under the machine's roofs.

use super::*;

/// Roofline: log-log arithmetic intensity (FLOP/byte) against achieved FLOP/s, under the
/// roof `min(peak, bandwidth × intensity)` where both roofs are known (just the known one
/// otherwise), each labelled with its value. Points are coloured by op, shaped by target,
/// and hollow for reference rows; the legend is to the right of the plot. Rows with zero
/// flops (copies) or bytes, or a non-finite intensity or rate, are skipped. Writes
/// `stem.svg`, or nothing (`Ok(vec![])`) if no row is left.
pub fn roofline(points: &[Point], roofs: &Roofs, stem: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let rows: Vec<(&Point, f64, f64)> = points
        .iter()
        .filter(|p| p.flops > 0.0 && p.bytes > 0.0 && p.seconds > 0.0)
        .map(|p| (p, p.flops / p.bytes, p.flops / p.seconds))
        // Both must be positive and finite to sit on a log-log plot (the comparisons above
        // are false for NaN; an infinite time gives 0 FLOP/s).
        .filter(|(_, x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .collect();
    if rows.is_empty() {
        return Ok(vec![]);
    }
    render(stem, &RoofPlan { rows, roofs })
}

/// The roofline's surviving rows as (row, intensity, FLOP/s), with the roofs.
struct RoofPlan<'a> {
    rows: Vec<(&'a Point, f64, f64)>,
    roofs: &'a Roofs,
}

impl RoofPlan<'_> {
    /// The distinct values of a field, in order of first appearance (colour / marker order).
    fn distinct(&self, f: fn(&Point) -> &str) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (p, _, _) in &self.rows {
            if !v.iter().any(|s| s == f(p)) {
                v.push(f(p).to_string());
            }
        }
        v
    }
}

impl Chart for RoofPlan<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH, ROOFLINE_HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: Area<DB>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let (ops, targets) = (self.distinct(|p| &p.op), self.distinct(|p| &p.target));
        let peak = self.roofs.peak_flops.filter(|v| v.is_finite() && *v > 0.0);
        let bw = self.roofs.bandwidth.filter(|v| v.is_finite() && *v > 0.0);
        // Axes cover the points, the peak, and the ridge point with room either side.
        let (mut xlo, mut xhi, mut ylo, mut yhi) = (f64::INFINITY, 0f64, f64::INFINITY, 0f64);
        for &(_, x, y) in &self.rows {
            (xlo, xhi, ylo, yhi) = (xlo.min(x), xhi.max(x), ylo.min(y), yhi.max(y));
        }
        yhi = yhi.max(peak.unwrap_or(0.0));
        if let (Some(p), Some(b)) = (peak, bw) {
            (xlo, xhi) = (xlo.min(p / b / 4.0), xhi.max(p / b * 4.0));
        }
        let (xlo, xhi) = log_range(xlo / 2.0, xhi * 2.0, 2.0);
        // ×2.5 over the top point or the peak leaves room for the peak's label.
        let (ylo, yhi) = log_range(ylo / 2.0, yhi * 2.5, 2.0);
        let names = ops
            .iter()
            .chain(&targets)
            .cloned()
            .chain(["weft schedule".to_string()]);
        let legend_w = widest(&root, names, 14.0) + 50;
        let (left, right) = root.split_horizontally(WIDTH as i32 - legend_w);
        let title = match self.roofs.label.as_str() {
            "" => "Roofline".to_string(),
            label => format!("Roofline: {label}"),
        };
        let xtick = log_labels((xhi / xlo).log10(), sig3);
        let ytick = log_labels((yhi / ylo).log10(), |v| fmt_si(v, "FLOP/s"));
        let mut chart = ChartBuilder::on(&left)
            .caption(title, text(22.0, BLACK, HPos::Left))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(100)
            .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())?;
        chart
            .configure_mesh()
            .x_labels(log_ticks(xlo, xhi))
            .y_labels(log_ticks(ylo, yhi))
            .x_label_formatter(&xtick)
            .y_label_formatter(&ytick)
            .x_desc("arithmetic intensity (FLOP/byte, log scale)")
            .y_desc("achieved FLOP/s (log scale)")
            .label_style(text(14.0, BLACK, HPos::Left))
            .axis_desc_style(text(14.0, BLACK, HPos::Left))
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()?;
        // The roof: the slanted part up to the ridge (or the axis edge), then the flat part.
        let ridge = match (peak, bw) {
            (Some(p), Some(b)) => p / b,
            (None, Some(_)) => xhi,
            _ => xlo,
        };
        if let Some(b) = bw {
            // Clip y = b·x to the plot box by hand: plotters does not clip paths.
            let (x0, x1) = (xlo.max(ylo / b), ridge.min(xhi).min(yhi / b));
            if x0 < x1 {
                let line = vec![(x0, b * x0), (x1, b * x1)];
                chart.draw_series([PathElement::new(line, DARK.stroke_width(2))])?;
                // The label goes above-left of a point on the slope, in the empty region
                // over the roof where the rising line can't cross it: the first of these
                // (log) fractions up the slope that leaves room for the text.
                let plot_left = chart.backend_coord(&(xlo, ylo)).0;
                let at = |f: f64| {
                    chart.backend_coord(&(x0 * (x1 / x0).powf(f), b * x0 * (x1 / x0).powf(f)))
                };
                let fractions = [0.4, 0.55, 0.7, 0.85];
                let (px, py) = fractions
                    .map(at)
                    .into_iter()
                    .find(|p| p.0 - plot_left > 150)
                    .unwrap_or(at(0.85));
                let label = format!("{} memory", fmt_si(b, "B/s"));
                put(
                    &left,
                    &label,
                    (px - 6, py - 12),
                    text(14.0, DARK, HPos::Right),
                )?;
            }
        }
        if let Some(p) = peak {
            let line = vec![(ridge.max(xlo), p), (xhi, p)];
            chart.draw_series([PathElement::new(line, DARK.stroke_width(2))])?;
            let (px, py) = chart.backend_coord(&(xhi, p));
            let label = format!("{} peak", fmt_si(p, "FLOP/s"));
            put(
                &left,
                &label,
                (px - 6, py - 12),
                text(14.0, DARK, HPos::Right),
            )?;
        }
        // Filled weft points first, hollow references over them, so neither hides the other.
        for reference in [false, true] {
            for (p, x, y) in self.rows.iter().filter(|r| r.0.reference == reference) {
                let c = colour(ops.iter().position(|o| *o == p.op).unwrap_or(0));
                let kind = targets.iter().position(|t| *t == p.target).unwrap_or(0);
                marker(&left, kind, chart.backend_coord(&(*x, *y)), c, reference)?;
            }
        }
        // Legend: ops by colour, targets by shape, then what hollow means.
        let ops: Vec<_> = ops
            .into_iter()
            .enumerate()
            .map(|(i, o)| (o, CIRCLE, colour(i), false))
            .collect();
        let targets: Vec<_> = targets
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i, GREY, false))
            .collect();
        let kinds = [
            ("weft schedule".into(), CIRCLE, GREY, false),
            ("reference".into(), CIRCLE, GREY, true),
        ];
        let y = legend(&right, "op", &ops, 60)?;
        let y = legend(&right, "target", &targets, y)?;
        legend(&right, "kind", &kinds, y)?;
        root.present()
    }
}

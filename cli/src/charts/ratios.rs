//! A speed-ratio chart: per item (a model) one horizontal bar per series (a batch), on a
//! log ratio axis with vertical marks at the targets (1×, the mean's bar), so a bar that
//! stops short of a mark is a target missed.

use super::*;

/// One ratio chart's data.
#[derive(Clone, Debug)]
pub struct Ratios {
    pub title: String,
    /// The x axis' name (`speed = torch.compile's time ÷ weft's (log scale)`).
    pub axis: String,
    /// Series names, indexed by the bars' first field.
    pub series: Vec<String>,
    /// Items top to bottom, each with its bars `(series, ratio)`.
    pub items: Vec<(String, Vec<(usize, f64)>)>,
    /// Vertical marks: a ratio and its label (`1×`, `1.3× (the mean's target)`).
    pub marks: Vec<(f64, String)>,
}

/// Writes `stem.svg` from `r`, or nothing (`Ok(vec![])`) when no bar has a finite,
/// positive ratio.
pub fn ratios(r: &Ratios, stem: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let items: Vec<(String, Vec<(usize, f64)>)> = r
        .items
        .iter()
        .map(|(name, bars)| {
            let kept = bars
                .iter()
                .copied()
                .filter(|(_, v)| v.is_finite() && *v > 0.0);
            (name.clone(), kept.collect::<Vec<_>>())
        })
        .filter(|(_, bars)| !bars.is_empty())
        .collect();
    if items.is_empty() {
        return Ok(vec![]);
    }
    let all = items.iter().flat_map(|(_, b)| b.iter().map(|b| b.1));
    let marks = r.marks.iter().map(|m| m.0);
    let lo = all
        .clone()
        .chain(marks.clone())
        .fold(f64::INFINITY, f64::min);
    let hi = all.chain(marks).fold(0.0, f64::max);
    // Room for the value printed after the longest bar.
    let (lo, hi) = log_range(lo / 1.5, hi * 2.0, 1.0);
    render(
        stem,
        &RatioPlan {
            r: Ratios { items, ..r.clone() },
            lo,
            hi,
        },
    )
}

struct RatioPlan {
    r: Ratios,
    lo: f64,
    hi: f64,
}

impl RatioPlan {
    fn slots(&self) -> f64 {
        let bars: usize = self.r.items.iter().map(|(_, b)| b.len()).sum();
        bars as f64 + GROUP_GAP * (self.r.items.len() as f64 + 1.0)
    }
}

impl Chart for RatioPlan {
    fn size(&self) -> (u32, u32) {
        let plot = (self.slots() * SLOT_PX as f64).ceil() as u32 + TOP_PX + BOTTOM_PX;
        let legend = (self.r.series.len() + self.r.marks.len()) as u32 * 22 + TOP_PX + 60;
        (WIDTH, plot.max(legend).max(260))
    }

    fn draw<DB: DrawingBackend>(&self, root: Area<DB>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let legend_texts = self
            .r
            .series
            .iter()
            .chain(self.r.marks.iter().map(|m| &m.1));
        let legend_w = widest(&root, legend_texts.cloned(), 14.0).clamp(90, 400) + 50;
        let label_w = widest(&root, self.r.items.iter().map(|i| i.0.clone()), 14.0) + 20;
        let (left, right) = root.split_horizontally(WIDTH as i32 - legend_w);
        let (lo, hi, slots) = (self.lo, self.hi, self.slots());
        let tick = log_labels((hi / lo).log10(), |v| format!("{}×", sig3(v)));
        let mut chart = ChartBuilder::on(&left)
            .caption(&self.r.title, text(22.0, BLACK, HPos::Left))
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
            .x_desc(self.r.axis.as_str())
            .label_style(text(14.0, BLACK, HPos::Left))
            .axis_desc_style(text(14.0, BLACK, HPos::Left))
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()?;
        // Slots count down from the top; plotters' y grows upward, hence `slots - y`.
        let mut y = GROUP_GAP;
        for (gi, (name, bars)) in self.r.items.iter().enumerate() {
            let (y0, y1) = (y - GROUP_GAP / 2.0, y + bars.len() as f64 + GROUP_GAP / 2.0);
            if gi % 2 == 0 {
                let band = [(lo, slots - y0), (hi, slots - y1)];
                chart.draw_series([Rectangle::new(band, RGBColor(244, 246, 250).filled())])?;
            }
            for (k, &(si, v)) in bars.iter().enumerate() {
                let (x0, yc) = chart.backend_coord(&(lo, slots - (y + k as f64 + 0.5)));
                let x1 = chart.backend_coord(&(v, 0.0)).0;
                let rect = [(x0 + 1, yc - BAR_PX / 2), (x1.max(x0 + 2), yc + BAR_PX / 2)];
                left.draw(&Rectangle::new(rect, colour(si).filled()))?;
                let label = format!("{v:.2}×");
                put(&left, &label, (x1 + 4, yc), text(12.0, GREY, HPos::Left))?;
            }
            let (ax, yc) = chart.backend_coord(&(lo, slots - (y + bars.len() as f64 / 2.0)));
            put(&left, name, (ax - 8, yc), text(14.0, BLACK, HPos::Right))?;
            y = y1 + GROUP_GAP / 2.0;
        }
        // The marks over the bars, each its own dark shade, named in the legend.
        let mut entries: Vec<_> = self
            .r
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), SQUARE, colour(i), false))
            .collect();
        for (i, (v, label)) in self.r.marks.iter().enumerate() {
            let shade = if i == 0 { DARK } else { colour(3) };
            let line = [(*v, 0.0), (*v, slots)];
            chart.draw_series([PathElement::new(line, shade.stroke_width(2))])?;
            entries.push((label.clone(), 2, shade, true));
        }
        legend(&right, "series", &entries, TOP_PX as i32)?;
        root.present()
    }
}

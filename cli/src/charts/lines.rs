//! Line charts: a throughput against a size or a shape's place in a list, one line per
//! series (the vendor library, tuned configs, the rule's config, fixed configs).

use super::*;

/// One line: its name, its points `(x, y)` in x order, and whether it is a reference (a
/// vendor library: hollow markers). Points whose y is not finite and positive are gaps.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub reference: bool,
}

/// Height of a line chart.
const LINES_HEIGHT: u32 = 640;
/// Up to this many points a series gets a marker at each point as well as its line.
const MARKED_POINTS: usize = 80;

/// `title` over a plot of `series` against x (`x_desc`; integers), y (`y_desc`, scaled
/// to the unit `y_unit` with SI prefixes) linear from zero, the legend to the right.
/// Writes `stem.svg`, or nothing (`Ok(vec![])`) if no point is left.
pub fn lines(
    title: &str,
    (x_desc, y_desc, y_unit): (&str, &str, &str),
    series: &[Series],
    stem: &Path,
) -> Result<Vec<PathBuf>, ChartError> {
    let kept: Vec<Series> = series
        .iter()
        .map(|s| Series {
            points: s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && *y > 0.0)
                .collect(),
            ..s.clone()
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if kept.is_empty() {
        return Ok(vec![]);
    }
    render(
        stem,
        &LinePlan {
            title,
            descs: (x_desc, y_desc, y_unit),
            series: kept,
        },
    )
}

struct LinePlan<'a> {
    title: &'a str,
    descs: (&'a str, &'a str, &'a str),
    series: Vec<Series>,
}

impl Chart for LinePlan<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH, LINES_HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: Area<DB>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let all = || self.series.iter().flat_map(|s| s.points.iter());
        let xlo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let xhi = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        let yhi = all().map(|p| p.1).fold(0.0, f64::max) * 1.1;
        let (xlo, xhi) = if xhi > xlo {
            (xlo, xhi)
        } else {
            (xlo - 1.0, xhi + 1.0)
        };
        let pad = (xhi - xlo) * 0.02;
        let names = self.series.iter().map(|s| s.name.clone());
        let legend_w = widest(&root, names, 14.0) + 50;
        let (left, right) = root.split_horizontally(WIDTH as i32 - legend_w);
        let (x_desc, y_desc, unit) = self.descs;
        let ytick = |v: &f64| {
            if *v == 0.0 {
                "0".to_string()
            } else {
                fmt_si(*v, unit)
            }
        };
        let xtick = |v: &f64| format!("{}", v.round() as i64);
        let mut chart = ChartBuilder::on(&left)
            .caption(self.title, text(22.0, BLACK, HPos::Left))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(100)
            .build_cartesian_2d((xlo - pad)..(xhi + pad), 0.0..yhi)?;
        chart
            .configure_mesh()
            .x_labels(((xhi - xlo) as usize + 1).min(12))
            .y_labels(8)
            .x_label_formatter(&xtick)
            .y_label_formatter(&ytick)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style(text(14.0, BLACK, HPos::Left))
            .axis_desc_style(text(14.0, BLACK, HPos::Left))
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()?;
        let mut entries = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let c = colour(i);
            chart.draw_series([PathElement::new(s.points.clone(), c.stroke_width(2))])?;
            if s.points.len() <= MARKED_POINTS {
                for p in &s.points {
                    marker(&left, i, chart.backend_coord(p), c, s.reference)?;
                }
            }
            entries.push((s.name.clone(), i, c, s.reference));
        }
        legend(&right, "series", &entries, 60)?;
        root.present()
    }
}

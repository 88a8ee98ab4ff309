//! Benchmark charts: per-op time bars, a roofline, line charts (shape sweeps) and speed
//! ratios (the corpus against torch.compile), each written as SVG.
//!
//! Drawn with `plotters` without its `ttf` feature, so nothing here touches fontconfig or
//! system fonts: Noto Sans Regular (Apache-2.0, from the `ttf-noto-sans` crate) is compiled
//! in and registered with plotters' `ab_glyph` text renderer as the family `sans-serif`,
//! whose metrics place the labels. The SVG just names `sans-serif`, so a viewer uses its
//! own sans font and the file stays small.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, RGBColor};

/// One bar / point: a measured row of a benchmark.
#[derive(Clone, Debug)]
pub struct Point {
    /// The op, e.g. "matmul".
    pub op: String,
    /// "template", or a reference name like "cublas-sgemm", "cudnn", "d2d-copy".
    pub schedule: String,
    /// The shape, e.g. "m=1024,n=1024,k=1024".
    pub shape: String,
    /// "cuda", "vulkan", "wgpu" ...
    pub target: String,
    /// A vendor-library / copy row rather than a weft schedule.
    pub reference: bool,
    /// Median kernel time.
    pub seconds: f64,
    /// Floating-point ops of one run.
    pub flops: f64,
    /// Bytes read + written by one run (minimum traffic).
    pub bytes: f64,
}

/// The machine's roofs for the roofline.
pub struct Roofs {
    /// Peak FLOP/s (the flat roof), if known.
    pub peak_flops: Option<f64>,
    /// Memory bandwidth in bytes/s (the slanted roof), if known.
    pub bandwidth: Option<f64>,
    /// The device's name, shown in the title, e.g. "NVIDIA H100 80GB HBM3".
    pub label: String,
}

/// Why a chart could not be written. Every variant names the file it was writing.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// Creating the output directory or writing the file failed.
    #[error("cannot write chart {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// plotters failed while drawing or encoding (its error types are generic over the
    /// backend, so the message is kept as text).
    #[error("cannot draw chart {}: {message}", path.display())]
    Render { path: PathBuf, message: String },
    /// The embedded font was rejected by the text renderer (would be a build defect).
    #[error("cannot draw chart {}: the embedded font did not load", path.display())]
    Font { path: PathBuf },
}

/// What the drawing routines return: plotters' error for the backend at hand.
type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;
type Area<DB> = DrawingArea<DB, Shift>;

/// The family name every text style here uses; the SVG writes it as `font-family`.
const FONT: &str = "sans-serif";
/// Width of every chart in SVG user units (pixels at 100%).
const WIDTH: u32 = 1280;
const ROOFLINE_HEIGHT: u32 = 800;
/// Vertical pixels per bar slot in the op chart; bars are `BAR_PX` thick inside it.
const SLOT_PX: u32 = 18;
const BAR_PX: i32 = 13;
/// Empty slots between two shape groups.
const GROUP_GAP: f64 = 0.8;
/// Pixels above the op chart's plot (title) and below it (tick labels and axis name).
const TOP_PX: u32 = 60;
const BOTTOM_PX: u32 = 70;
/// A shape label is wrapped at commas to lines of at most this many characters.
const LABEL_CHARS: usize = 34;
const GREY: RGBColor = RGBColor(90, 90, 90);
const DARK: RGBColor = RGBColor(40, 40, 40);
const GRID: RGBColor = RGBColor(226, 226, 226);

/// Register the embedded font once per process: plotters keeps fonts in a global table,
/// and without the `ttf` feature it has no system-font fallback at all.
fn ensure_font(path: &Path) -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let font = ttf_noto_sans::REGULAR;
    if *REGISTERED
        .get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, font).is_ok())
    {
        Ok(())
    } else {
        Err(ChartError::Font {
            path: path.to_path_buf(),
        })
    }
}

/// Categorical colours (Tableau 10, then two more); past these, hues are spread by the
/// golden ratio so even 20 series stay tellable apart.
fn colour(i: usize) -> RGBColor {
    const P: [u32; 12] = [
        0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22,
        0x17becf, 0x000080, 0x804000,
    ];
    match P.get(i) {
        Some(&c) => RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8),
        None => {
            let (r, g, b) = HSLColor((i as f64 * 0.618_034).fract(), 0.65, 0.45).rgb();
            RGBColor(r, g, b)
        }
    }
}

/// `v` to three significant digits with trailing zeros dropped: 1.9, 51, 989, 0.0123.
fn sig3(v: f64) -> String {
    let s = crate::format::fmt_sig(v);
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    }
}

/// A duration in seconds as "12.3 µs" / "4.5 ms" / "1.2 s".
fn fmt_time(s: f64) -> String {
    match s {
        s if s < 1e-6 => format!("{} ns", sig3(s * 1e9)),
        s if s < 1e-3 => format!("{} µs", sig3(s * 1e6)),
        s if s < 1.0 => format!("{} ms", sig3(s * 1e3)),
        s => format!("{} s", sig3(s)),
    }
}

/// A quantity with an SI prefix: `fmt_si(1.9e12, "B/s")` is "1.9 TB/s".
fn fmt_si(v: f64, unit: &str) -> String {
    let k = if v >= 1.0 {
        (v.log10() / 3.0).floor().min(6.0) as i32
    } else {
        0
    };
    let prefix = ["", "k", "M", "G", "T", "P", "E"][k as usize];
    format!("{} {prefix}{unit}", sig3(v / 1e3f64.powi(k)))
}

/// Tick labels for a log axis spanning `decades`: every decade is labelled, and 2× and 5×
/// too when the axis spans few decades, so a narrow axis still has more than two numbers.
/// plotters hands each decade in twice (as 10× the decade below, then as itself) and would
/// print it twice, overstruck, so a label equal to the last one given is blanked.
fn log_labels(decades: f64, fmt: impl Fn(f64) -> String) -> impl Fn(&f64) -> String {
    let last = RefCell::new(String::new());
    move |&v| {
        // Ticks are computed products, e.g. 0.999999999e-6 for 1e-6: round before splitting.
        let mantissa = v / 10f64.powf((v.log10() + 1e-6).floor());
        let near = |m: f64| (mantissa - m).abs() < 1e-6 * m;
        let label = fmt(v);
        if !(near(1.0) || (decades <= 3.0 && (near(2.0) || near(5.0)))) || *last.borrow() == label {
            return String::new();
        }
        last.replace(label.clone());
        label
    }
}

/// A log axis range `lo..hi`, widened evenly (in log space) to at least `min_decades`, so
/// one lone value still gets ticks around it. The ends are not rounded out to decades:
/// that can waste most of a decade on either side.
fn log_range(lo: f64, hi: f64, min_decades: f64) -> (f64, f64) {
    let short = min_decades - (hi / lo).log10();
    let pad = if short > 0.0 {
        10f64.powf(short / 2.0)
    } else {
        1.0
    };
    (lo / pad, hi * pad)
}

/// How many ticks to ask plotters for on a log axis `lo..hi` so that it makes one per 1..9
/// multiple of each decade: it subdivides by `max_points / decades`, and asking for more
/// (say 200 on a 2-decade axis) yields 99 grid lines per decade.
fn log_ticks(lo: f64, hi: f64) -> usize {
    (hi / lo).log10().floor().max(1.0) as usize * 10
}

/// A shape split at commas into lines of at most `LABEL_CHARS` characters, so long conv
/// shapes stay whole (no field dropped) but don't eat the plot's width.
fn wrap_shape(shape: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in shape.split(',') {
        match lines.last_mut() {
            Some(l) if l.len() + 1 + part.len() <= LABEL_CHARS => *l += &format!(",{part}"),
            Some(l) => {
                l.push(',');
                lines.push(part.to_string());
            }
            None => lines.push(part.to_string()),
        }
    }
    lines
}

/// The embedded family at `size` px in `colour`, anchored at `h` and the text's top.
/// Sizes are even: plotters' ab_glyph renderer truncates `size / 2 + glyph top` to whole
/// pixels, which at odd sizes moves some glyphs a pixel off the baseline.
fn text(size: f64, colour: RGBColor, h: HPos) -> TextStyle<'static> {
    // Built field by field: `TextStyle::color` would borrow `colour` for the style's life.
    let font = (FONT, size).into_font();
    TextStyle {
        font,
        color: colour.to_backend_color(),
        pos: Pos::new(h, VPos::Top),
    }
}

/// Draw `s` with its capitals vertically centred on `y`. Top anchoring is the one plotters'
/// backends agree on (ab_glyph puts the cap line near the anchor in a bitmap, the SVG says
/// `dy=0.76em`) while their centre anchors differ by a few pixels, so `text` styles are
/// top-anchored and `put` raises the text by half a cap height.
fn put<DB: DrawingBackend>(
    area: &Area<DB>,
    s: &str,
    (x, y): (i32, i32),
    style: TextStyle,
) -> Drawn<DB> {
    let y0 = y - (0.28 * style.font.get_size()).round() as i32;
    area.draw(&Text::new(s.to_string(), (x, y0), style))
}

/// Width in pixels of the widest of `texts` at `size`, with slack for the SVG: plotters
/// writes its font-size 10% larger than the em it measures, and the viewer's sans font (often
/// DejaVu Sans) runs ~20% wider than the Noto Sans measured here.
fn widest<DB: DrawingBackend>(
    area: &Area<DB>,
    texts: impl Iterator<Item = String>,
    size: f64,
) -> i32 {
    let style = text(size, BLACK, HPos::Left);
    let w = texts
        .map(|s| area.estimate_text_size(&s, &style).map_or(200, |(w, _)| w))
        .max();
    (w.unwrap_or(80) as f64 * 1.35) as i32
}

/// A legend block in its own panel: a heading, then per entry a marker (kind, colour,
/// hollow) and its label. Returns the y just below it, for whatever is stacked under it.
fn legend<DB: DrawingBackend>(
    area: &Area<DB>,
    heading: &str,
    entries: &[(String, usize, RGBColor, bool)],
    top: i32,
) -> Result<i32, DrawingAreaErrorKind<DB::ErrorType>> {
    put(area, heading, (10, top + 8), text(16.0, BLACK, HPos::Left))?;
    let mut y = top + 24;
    for (name, kind, c, hollow) in entries {
        marker(area, *kind, (17, y + 7), *c, *hollow)?;
        put(area, name, (32, y + 7), text(14.0, BLACK, HPos::Left))?;
        y += 22;
    }
    Ok(y + 14)
}

/// Marker kinds: the square doubles as the op chart's bar swatch.
const CIRCLE: usize = 0;
const SQUARE: usize = 1;

/// Draw a marker for target number `kind` (circle, square, triangle, diamond, repeating).
/// Hollow means a reference row: an outline round a white centre, so it reads as "not
/// weft's" even where it overlaps a filled point.
fn marker<DB: DrawingBackend>(
    area: &Area<DB>,
    kind: usize,
    (x, y): (i32, i32),
    c: RGBColor,
    hollow: bool,
) -> Drawn<DB> {
    let style = if hollow {
        c.stroke_width(2)
    } else {
        c.filled()
    };
    let offsets: &[(i32, i32)] = match kind % 4 {
        CIRCLE => {
            if hollow {
                area.draw(&Circle::new((x, y), 6, WHITE.filled()))?;
            }
            return area.draw(&Circle::new((x, y), 6, style));
        }
        SQUARE => &[(-6, -6), (6, -6), (6, 6), (-6, 6)],
        2 => &[(0, -7), (7, 6), (-7, 6)],
        _ => &[(0, -8), (8, 0), (0, 8), (-8, 0)],
    };
    let pts: Vec<(i32, i32)> = offsets.iter().map(|(dx, dy)| (x + dx, y + dy)).collect();
    if !hollow {
        return area.draw(&Polygon::new(pts, style));
    }
    area.draw(&Polygon::new(pts.clone(), WHITE.filled()))?;
    area.draw(&PathElement::new([&pts[..], &pts[..1]].concat(), style))
}

/// A chart that can draw itself on any plotters backend (a closure can't be generic over
/// the backend type); `render` draws it as SVG.
trait Chart {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: Area<DB>) -> Drawn<DB>;
}

/// Write `stem.svg` from one chart, mapping failures to `ChartError`s that name the file.
/// SVG only: the results page shows the SVG, sharp at any size and less than half the
/// bytes of the same chart as a PNG (weft wrote a PNG beside each until 2026-11-28).
fn render(stem: &Path, chart: &impl Chart) -> Result<Vec<PathBuf>, ChartError> {
    // Appended, not `with_extension`: a stem like "conv2d.nchw" keeps its dotted part.
    let mut svg = stem.as_os_str().to_owned();
    svg.push(".svg");
    let svg = PathBuf::from(svg);
    // The text is laid out with the font's metrics, so it must be registered first.
    ensure_font(&svg)?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ChartError::Io { path, source }
    };
    if let Some(dir) = svg.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io(&svg))?;
    }
    fn render<E: std::error::Error + Send + Sync>(
        path: &Path,
    ) -> impl FnOnce(DrawingAreaErrorKind<E>) -> ChartError {
        let path = path.to_path_buf();
        move |e| ChartError::Render {
            path,
            message: e.to_string(),
        }
    }
    // The SVG is drawn into memory and written here, so a failed write is a plain io
    // error (the file backend would only report it, as text, from `present`).
    let mut text = String::new();
    let area = SVGBackend::with_string(&mut text, chart.size()).into_drawing_area();
    chart.draw(area).map_err(render(&svg))?;
    std::fs::write(&svg, text).map_err(io(&svg))?;
    Ok(vec![svg])
}

mod bars;
mod lines;
mod ratios;
mod roofline;
#[cfg(test)]
mod tests;

pub use bars::op_chart;
pub use lines::{Series, lines};
pub use ratios::{Ratios, ratios};
pub use roofline::roofline;

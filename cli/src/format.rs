//! Text tables and number formats shared by the commands.

use std::time::Duration;

/// A plain-text table: a header, rows, columns padded to their widest cell.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns aligned right (numbers).
    right: Vec<bool>,
}

impl Table {
    /// A table with these column names, every column aligned left.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            right: vec![false; header.len()],
        }
    }

    /// Aligns the columns at `indices` right.
    pub fn align_right(mut self, indices: &[usize]) -> Table {
        for &i in indices {
            if let Some(r) = self.right.get_mut(i) {
                *r = true;
            }
        }
        self
    }

    /// Adds a row (missing cells are empty, extra ones dropped).
    pub fn row(&mut self, mut cells: Vec<String>) {
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    /// The table with two spaces between columns, no trailing spaces, one line per row.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths[i] - cell.chars().count();
                if self.right[i] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A duration with a unit that keeps 3–4 significant digits: `812 ns`, `12.3 us`,
/// `4.56 ms`, `1.234 s`.
pub fn fmt_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-6 {
        format!("{:.0} ns", s * 1e9)
    } else if s < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// A relative error: `1.2e-7`; `NaN/inf` for an unwritten or non-finite element.
/// An error as a fraction of the tolerance (`weft_ops::check`): `0.012`, `3.4` (wrong),
/// `NaN/inf`.
pub fn fmt_ratio_of_tolerance(e: f64) -> String {
    if !e.is_finite() {
        "NaN/inf".to_string()
    } else if e >= 0.01 {
        format!("{e:.3}")
    } else {
        format!("{e:.1e}")
    }
}

pub fn fmt_error(e: f64) -> String {
    if e.is_finite() {
        format!("{e:.1e}")
    } else {
        "NaN/inf".to_string()
    }
}

/// A positive number with three significant digits and no exponent: `51400`, `812`,
/// `12.3`, `0.00421`.
pub fn fmt_sig(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return format!("{x}");
    }
    let decimals = (2 - x.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{x:.decimals$}")
}

/// A ratio of times: `1.00x`.
pub fn fmt_ratio(r: f64) -> String {
    format!("{r:.2}x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_pads_and_aligns() {
        let mut t = Table::new(&["name", "time"]).align_right(&[1]);
        t.row(vec!["a".into(), "1.0 ms".into()]);
        t.row(vec!["longer".into(), "12.0 ms".into()]);
        assert_eq!(
            t.render(),
            "name       time\na        1.0 ms\nlonger  12.0 ms\n"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_time(Duration::from_nanos(812)), "812 ns");
        assert_eq!(fmt_time(Duration::from_micros(12)), "12.0 us");
        assert_eq!(fmt_time(Duration::from_micros(4560)), "4.560 ms");
        assert_eq!(fmt_time(Duration::from_millis(1234)), "1.234 s");
        assert_eq!(fmt_error(1.31e-7), "1.3e-7");
        assert_eq!(fmt_error(f64::INFINITY), "NaN/inf");
        assert_eq!(fmt_ratio(2.345), "2.35x");
        assert_eq!(fmt_sig(51412.0), "51412");
        assert_eq!(fmt_sig(812.34), "812");
        assert_eq!(fmt_sig(12.345), "12.3");
        assert_eq!(fmt_sig(0.0042123), "0.00421");
    }
}

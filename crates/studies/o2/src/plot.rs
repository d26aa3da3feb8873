//! Line plots of the O² experiment curves (PNG through plotters). Behind the `plot`
//! feature, off by default, so the C static library does not pull in freetype; the
//! CLI turns it on. Drawn into a buffer and written through the output directory
//! (`hetsched_util::png`).

use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use hetsched_util::plot::{legend, png};
use plotters::prelude::*;

/// The size of a plot, pixels.
const SIZE: (u32, u32) = (900, 560);

/// One named curve: (x, y) points.
pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

impl<'a> Series<'a> {
    /// The curve `y(p)` against each point's `x(p)`.
    pub fn of<P>(
        name: &'a str,
        points: &[P],
        x: impl Fn(&P) -> f64,
        y: impl Fn(&P) -> f64,
    ) -> Self {
        Series {
            name,
            points: points.iter().map(|p| (x(p), y(p))).collect(),
        }
    }
}

const COLORS: [RGBColor; 5] = [
    BLUE,
    RED,
    RGBColor(0, 140, 0),
    RGBColor(160, 0, 160),
    RGBColor(230, 130, 0),
];

/// Draws `series` against a log2 x axis (data sizes) into the PNG file `name` of `out`.
pub fn log2_x_lines(
    out: &OutDir,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series<'_>],
) -> Result<()> {
    let path = out.join(name);
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let y1 = ys.fold(0.0f64, f64::max);
    if x0 <= 0.0 || x1 < x0 {
        return Err(Error::runtime(format!(
            "plotting {}: no positive x values",
            path.display()
        )));
    }
    png(out, name, SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(
                (x0.log2() - 0.2)..(x1.log2() + 0.2),
                0.0..(y1 * 1.1).max(1e-9),
            )?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(&|v| human_bytes(2f64.powf(*v)))
            .y_label_formatter(&|v| human_count(*v))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x.log2(), y)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(s.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        }
        legend(&mut chart).draw()?;
        Ok(())
    })
}

/// 65536 → "64K", 3 MiB → "3M".
pub fn human_bytes(b: f64) -> String {
    if b >= (1u64 << 20) as f64 {
        format!("{:.0}M", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.0}K", b / 1024.0)
    } else {
        format!("{b:.0}")
    }
}

/// 30_000_000 → "30M", 2500 → "2.5K".
pub fn human_count(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{}M", (v / 1e5).round() / 10.0)
    } else if v.abs() >= 1e3 {
        format!("{}K", (v / 1e2).round() / 10.0)
    } else {
        format!("{v}")
    }
}

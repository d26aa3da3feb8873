//! PNG line charts (plotters): one or more named series of (x, y) points, drawn into a
//! buffer and written through the output directory (`hetsched_util::png`).

use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use plotters::prelude::*;
use std::path::Path;

/// A named series of points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> Error + '_ {
    move |e| Error::runtime(format!("{}: plot: {e}", path.display()))
}

/// The size of a chart, pixels.
const SIZE: (u32, u32) = (1000, 620);

/// Draws `series` as lines with points (`points_only`: markers only) into the PNG file
/// `name` of `out`.
pub fn lines(
    out: &OutDir,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    points_only: bool,
) -> Result<()> {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 > 0.0 { y1 * 1.05 } else { 1.0 };
    let path = &out.join(name);
    let mut rgb = vec![0; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err(path))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0.0..y1)
            .map_err(err(path))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(err(path))?;
        let legend = series.len() <= 12;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            if points_only {
                let drawn = chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(err(path))?;
                if legend {
                    drawn
                        .label(s.name.clone())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
                }
            } else {
                let drawn = chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(err(path))?;
                if legend {
                    drawn.label(s.name.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                }
            }
        }
        if legend {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(err(path))?;
        }
        root.present().map_err(err(path))?;
    }
    out.write_png(name, SIZE.0, SIZE.1, &rgb)?;
    Ok(())
}

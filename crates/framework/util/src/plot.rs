//! Plotting primitives every study's figures share (plotters): a chart drawn into a
//! buffer and written as a PNG through the output directory ([`png`]), the one legend
//! style, and the line chart of named series ([`lines`]).
//!
//! Why here: each study drew its figures with its own copy of the buffer, error and
//! legend code, and one study borrowed another's line chart (a crate dependency for a
//! helper). The figures themselves (which bars, which axes) stay with their study.

use crate::error::{Error, Result};
use crate::files::OutDir;
use plotters::chart::SeriesLabelStyle;
use plotters::coord::Shift;
use plotters::prelude::*;

/// What a drawing closure returns: plotters' errors, boxed.
pub type Drawn = std::result::Result<(), Box<dyn std::error::Error>>;

/// The drawing area of a `size` chart, filled white: `draw` draws on it, and the image
/// is written as the PNG file `name` of `out` (encoded by `crate::png`, never by
/// plotters opening the path itself). An error names the file.
pub fn png(
    out: &OutDir,
    name: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Drawn,
) -> Result<()> {
    let fail = |e: &dyn std::fmt::Display| {
        Error::runtime(format!("{}: plot: {e}", out.join(name).display()))
    };
    let mut rgb = vec![0; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        draw(&root).map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    out.write_png(name, size.0, size.1, &rgb)?;
    Ok(())
}

/// The legend every figure uses: on white at 80 %, a black border; the caller may
/// place it, then draws it.
pub fn legend<'a, 'b, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &'b mut ChartContext<'a, DB, CT>,
) -> SeriesLabelStyle<'a, 'b, DB, CT> {
    let mut style = chart.configure_series_labels();
    style.background_style(WHITE.mix(0.8)).border_style(BLACK);
    style
}

/// A legend as one row of (colour, name) entries across `area`, left to right: for a chart
/// whose series fill the plot, so that no legend box hides them (`area` is a strip split
/// off the top of the drawing).
pub fn legend_row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(&str, RGBAColor)],
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let (_, h) = area.dim_in_pixel();
    let y = h as i32 / 2;
    let font: TextStyle = ("sans-serif", 15).into();
    let mut x = 70;
    for (name, color) in entries {
        area.draw(&Rectangle::new(
            [(x, y - 6), (x + 14, y + 6)],
            color.filled(),
        ))?;
        area.draw(&Text::new(name.to_string(), (x + 20, y - 8), font.clone()))?;
        let (w, _) = area.estimate_text_size(name, &font)?;
        x += 20 + w as i32 + 30;
    }
    Ok(())
}

/// A named series of points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// The size of a [`lines`] chart, pixels.
const LINES_SIZE: (u32, u32) = (1000, 620);

/// Draws `series` as lines with points (`points_only`: markers only) into the PNG file
/// `name` of `out`, the legend at the upper left (left out beyond 12 series).
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
    png(out, name, LINES_SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0.0..y1)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()?;
        let legended = series.len() <= 12;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            if points_only {
                let drawn = chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                if legended {
                    drawn
                        .label(s.name.clone())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
                }
            } else {
                let drawn = chart.draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))?;
                if legended {
                    drawn.label(s.name.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                }
            }
        }
        if legended {
            legend(&mut chart)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
        }
        Ok(())
    })
}

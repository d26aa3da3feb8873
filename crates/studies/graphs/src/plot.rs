//! Side-by-side line charts (plotters, through `hetsched_util::plot`): one panel per
//! algorithm, a line per policy with its points, and the bound as a dashed black line.

use hetsched_core::Result;
use hetsched_util::files::OutDir;
use hetsched_util::plot::{legend, png};
use plotters::prelude::*;

/// One panel's width and the chart's height, pixels.
const PANEL: (u32, u32) = (760, 620);

/// A named series of (x, y) points.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One panel: its title, its series and the bound's points.
pub struct Panel {
    pub title: String,
    pub series: Vec<Line>,
    pub bound: Vec<(f64, f64)>,
}

/// Draws `panels` side by side into the PNG file `name` of `out`: x the matrix side, y
/// GFlop/s, both from 0.
pub fn panels(out: &OutDir, name: &str, title: &str, panels: &[Panel]) -> Result<()> {
    let size = (PANEL.0 * panels.len().max(1) as u32, PANEL.1);
    png(out, name, size, |root| {
        let root = root.titled(title, ("sans-serif", 22))?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (panel, area) in panels.iter().zip(&areas) {
            let points = || {
                panel
                    .series
                    .iter()
                    .flat_map(|s| s.points.iter())
                    .chain(&panel.bound)
            };
            let x1 = points().map(|p| p.0).fold(1.0, f64::max) * 1.03;
            let y1 = points().map(|p| p.1).fold(1.0, f64::max) * 1.05;
            let mut chart = ChartBuilder::on(area)
                .caption(&panel.title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(70)
                .build_cartesian_2d(0.0..x1, 0.0..y1)?;
            chart
                .configure_mesh()
                .x_desc("matrix side n (elements)")
                .y_desc("GFlop/s")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .draw()?;
            for (i, s) in panel.series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
            chart
                .draw_series(DashedLineSeries::new(
                    panel.bound.iter().copied(),
                    8,
                    5,
                    BLACK.stroke_width(2),
                ))?
                .label("bound")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2))
                });
            legend(&mut chart)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
        }
        Ok(())
    })
}

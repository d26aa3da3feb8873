//! A grouped bar chart (plotters): one group per program, one bar per policy, the line
//! y = 1 (as fast as cfs) and the paper's mean speed-up as a dashed reference line, the
//! legend in a row above the plot; drawn into a buffer and written through the output
//! directory (`hetsched_util::png`).

use hetsched_core::Result;
use hetsched_util::files::OutDir;
use hetsched_util::plot::{legend_row, png};
use plotters::prelude::*;

/// The size of the chart, pixels.
const SIZE: (u32, u32) = (1100, 620);

/// Draws `series` (name, one value per category) as grouped bars into the PNG file
/// `name` of `out`, with `reference` (its label, its value) as a dashed line.
pub fn bars(
    out: &OutDir,
    name: &str,
    title: &str,
    categories: &[&str],
    series: &[(&str, Vec<f64>)],
    reference: (&str, f64),
) -> Result<()> {
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(reference.1.max(1.0), f64::max)
        * 1.1;
    let n = categories.len().max(1) as f64;
    png(out, name, SIZE, |root| {
        let root = root.titled(title, ("sans-serif", 22))?;
        let (top_strip, root) = root.split_vertically(34);
        let color = |k: usize| Palette99::pick(k).to_rgba();
        let mut entries: Vec<(&str, RGBAColor)> = series
            .iter()
            .enumerate()
            .map(|(k, (name, _))| (*name, color(k)))
            .collect();
        entries.push((reference.0, BLACK.to_rgba()));
        legend_row(&top_strip, &entries)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(60)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..n, 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(categories.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 1e-6 {
                    categories.get(i).map_or(String::new(), |c| c.to_string())
                } else {
                    String::new()
                }
            })
            .y_desc("speed-up over cfs")
            .draw()?;
        let width = 0.8 / series.len().max(1) as f64;
        for (k, (_, values)) in series.iter().enumerate() {
            let x0 = 0.1 + k as f64 * width;
            chart.draw_series(values.iter().enumerate().map(|(i, &v)| {
                let x = i as f64 + x0;
                Rectangle::new([(x, 0.0), (x + width * 0.9, v)], color(k).filled())
            }))?;
        }
        chart.draw_series(LineSeries::new(
            [(0.0, 1.0), (n, 1.0)],
            BLACK.stroke_width(1),
        ))?;
        // The reference, dashed: 40 segments across the plot.
        chart.draw_series((0..40).map(|i| {
            let x = n * i as f64 / 40.0;
            PathElement::new(
                [(x, reference.1), (x + n / 80.0, reference.1)],
                BLACK.stroke_width(2),
            )
        }))?;
        Ok(())
    })
}

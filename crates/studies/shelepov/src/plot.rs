//! The bar chart: per configuration, each program's change in completion time under
//! `signature` (ours against the default scheduler, ours against `eevdf` beside it, and
//! the paper's where its text gives it) and the aggregate; drawn into a buffer and
//! written through the output directory (`hetsched_util::plot`).

use crate::experiments::Outcome;
use hetsched_core::Result;
use hetsched_util::files::OutDir;
use hetsched_util::plot::{legend_row, png};
use plotters::prelude::*;

/// The size of the chart, pixels.
const SIZE: (u32, u32) = (1400, 760);

/// Bars per group: ours against the default scheduler, ours against `eevdf`, the paper's.
const BARS: i32 = 3;

/// Draws one bar group per program and one for the aggregate of each configuration,
/// ours beside the paper's, into the PNG file `name` of `out`.
pub fn bars(out: &OutDir, name: &str, outcomes: &[Outcome]) -> Result<()> {
    // (label, ours, ours vs eevdf, paper)
    let mut groups: Vec<(String, f64, f64, Option<f64>)> = Vec::new();
    for o in outcomes {
        // (Plotters clips a rotated `j`: the projections' labels name their cores.)
        let setup = o.setup.name.replace("projection ", "cores ");
        for p in &o.programs {
            groups.push((
                format!("{setup}: {}", p.name),
                p.change_pct,
                p.change_vs_eevdf_pct,
                p.paper_pct,
            ));
        }
        groups.push((
            format!("{setup} aggregate"),
            o.aggregate_pct,
            o.aggregate_vs_eevdf_pct,
            o.setup.paper.aggregate_pct,
        ));
    }
    let lo = groups
        .iter()
        .flat_map(|g| [g.1, g.2, g.3.unwrap_or(0.0)])
        .fold(0.0f64, f64::min);
    let hi = groups
        .iter()
        .flat_map(|g| [g.1, g.2, g.3.unwrap_or(0.0)])
        .fold(0.0f64, f64::max);
    let pad = (hi - lo).max(1.0) * 0.08;
    // One segment per bar; a group's label sits at its middle bar.
    let n = groups.len() as i32 * BARS;
    let ours = BLUE.mix(0.8);
    let vs_eevdf = RGBColor(230, 140, 30).mix(0.9);
    let paper = RGBColor(150, 150, 150).to_rgba();
    png(out, name, SIZE, |root| {
        let root = root.titled(
            "signature vs default scheduler: change in mean completion time",
            ("sans-serif", 22),
        )?;
        let (top_strip, root) = root.split_vertically(34);
        legend_row(
            &top_strip,
            &[
                (
                    "ours vs the default scheduler (cfs, for Linux 2.6.18)",
                    ours,
                ),
                ("ours vs eevdf (Linux 6.6+, beside it)", vs_eevdf),
                ("paper (text of section 4)", paper),
            ],
        )?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(230)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n).into_segmented(), (lo - pad)..(hi + pad))?;
        let labels: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
        chart
            .configure_mesh()
            .x_labels(n as usize)
            .x_label_formatter(&|x| match x {
                // Rotated labels are centred on the axis: trailing spaces (on the plot side)
                // move the text below it.
                SegmentValue::CenterOf(i) if i % BARS == 1 => labels
                    .get((i / BARS) as usize)
                    .map_or(String::new(), |l| format!("{l}{}", " ".repeat(2 * l.len()))),
                _ => String::new(),
            })
            .x_label_style(
                ("sans-serif", 13)
                    .into_font()
                    .transform(FontTransform::Rotate270),
            )
            .y_desc("change, % (negative: faster)")
            .disable_x_mesh()
            .draw()?;
        // The bar `k` of group `i`, filling its segment.
        let bar = |i: usize, k: i32, v: f64, c: RGBAColor| {
            let at = i as i32 * BARS + k;
            Rectangle::new(
                [
                    (SegmentValue::Exact(at), 0.0),
                    (SegmentValue::Exact(at + 1), v),
                ],
                c.filled(),
            )
        };
        chart.draw_series(groups.iter().enumerate().map(|(i, g)| bar(i, 0, g.1, ours)))?;
        chart.draw_series(
            groups
                .iter()
                .enumerate()
                .map(|(i, g)| bar(i, 1, g.2, vs_eevdf)),
        )?;
        chart.draw_series(
            groups
                .iter()
                .enumerate()
                .filter_map(|(i, g)| g.3.map(|v| bar(i, 2, v, paper))),
        )?;
        Ok(())
    })
}

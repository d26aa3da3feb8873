//! PNG figures in the style of the paper's Figures 4–8 (bar charts), drawn into a buffer
//! and written through the output directory (`hetsched_util::plot`).

use crate::experiment::{summarise, BenchResult};
use crate::Scheme;
use hetsched_core::Result;
use hetsched_util::files::OutDir;
use hetsched_util::plot::{legend, png};
use plotters::prelude::*;

const COLOURS: [RGBColor; 4] = [
    RGBColor(70, 110, 180),
    RGBColor(220, 120, 40),
    RGBColor(90, 160, 90),
    RGBColor(170, 70, 160),
];

/// One bar chart: `groups` along x, one bar per series in each group, or the series
/// stacked into one bar when `stacked`.
struct Bars<'a> {
    title: &'a str,
    y_label: &'a str,
    groups: Vec<String>,
    series: Vec<(String, Vec<f64>)>,
    stacked: bool,
}

impl Bars<'_> {
    /// Draws the chart into the PNG file `name` of `dir`.
    fn draw(&self, dir: &OutDir, name: &str) -> Result<()> {
        let width = (160 + 60 * self.groups.len() as u32).max(640);
        let size = (width, 520);
        png(dir, name, size, |root| {
            let top = if self.stacked {
                (0..self.groups.len())
                    .map(|g| self.series.iter().map(|s| s.1[g]).sum::<f64>())
                    .fold(0.0, f64::max)
            } else {
                self.series
                    .iter()
                    .flat_map(|s| s.1.iter().copied())
                    .fold(0.0, f64::max)
            };
            let n = self.groups.len();
            let mut chart = ChartBuilder::on(root)
                .caption(self.title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(150)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..n as f64, 0.0..(top * 1.15).max(1e-9))?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_desc(self.y_label)
                .draw()?;
            let k = self.series.len() as f64;
            for (si, (name, values)) in self.series.iter().enumerate() {
                let colour = COLOURS[si % COLOURS.len()];
                let rects = values.iter().enumerate().map(|(g, &v)| {
                    let (x0, x1, y0) = if self.stacked {
                        let below: f64 = self.series[..si].iter().map(|s| s.1[g]).sum();
                        (g as f64 + 0.2, g as f64 + 0.8, below)
                    } else {
                        let w = 0.8 / k;
                        (
                            g as f64 + 0.1 + w * si as f64,
                            g as f64 + 0.1 + w * (si as f64 + 1.0),
                            0.0,
                        )
                    };
                    Rectangle::new([(x0, y0), (x1, y0 + v)], colour.filled())
                });
                chart
                    .draw_series(rects)?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled())
                    });
            }
            // Group names under the bars, rotated, at each group's centre.
            let style = ("sans-serif", 13)
                .into_font()
                .transform(FontTransform::Rotate90)
                .color(&BLACK);
            for (g, name) in self.groups.iter().enumerate() {
                let (px, py) = chart.backend_coord(&(g as f64 + 0.5, 0.0));
                root.draw(&Text::new(name.clone(), (px - 6, py + 6), style.clone()))?;
            }
            legend(&mut chart)
                .position(SeriesLabelPosition::UpperRight)
                .draw()?;
            Ok(())
        })
    }
}

const HYBRID3: Scheme = Scheme::Hybrid { theta: 3 };
const THETAS: [u32; 3] = [2, 3, 5];

/// Writes fig4 … fig8 PNGs into `dir`.
pub fn figures(results: &[BenchResult], dir: &OutDir) -> Result<()> {
    let names: Vec<String> = results.iter().map(|r| r.name.clone()).collect();
    let per = |f: &dyn Fn(&BenchResult) -> f64| results.iter().map(f).collect::<Vec<f64>>();
    Bars {
        title: "Fig. 4: core-miss rate (accesses homed at another core)",
        y_label: "core-miss rate (%)",
        groups: names.clone(),
        series: vec![
            (
                "remote-only NUCA".into(),
                per(&|r| 100.0 * r.of(Scheme::RemoteOnly).core_miss_rate()),
            ),
            (
                "hybrid θ=3".into(),
                per(&|r| 100.0 * r.of(HYBRID3).core_miss_rate()),
            ),
        ],
        stacked: false,
    }
    .draw(dir, "fig4_core_miss.png")?;
    Bars {
        title: "Fig. 5: average memory latency, normalised to remote-only",
        y_label: "latency / remote-only",
        groups: names.clone(),
        series: vec![
            ("hybrid θ=3".into(), per(&|r| r.normalised_latency(HYBRID3))),
            (
                "always migrate".into(),
                per(&|r| r.normalised_latency(Scheme::AlwaysMigrate)),
            ),
        ],
        stacked: false,
    }
    .draw(dir, "fig5_latency.png")?;
    Bars {
        title: "Fig. 6: core misses by mechanism, hybrid θ=3",
        y_label: "fraction of accesses (%)",
        groups: names,
        series: vec![
            (
                "remote accesses".into(),
                per(&|r| 100.0 * r.of(HYBRID3).remote_rate()),
            ),
            (
                "migrations".into(),
                per(&|r| 100.0 * r.of(HYBRID3).migration_rate()),
            ),
        ],
        stacked: true,
    }
    .draw(dir, "fig6_breakdown.png")?;
    let sums = summarise(results);
    let pick = |s: Scheme| *sums.iter().find(|m| m.scheme == s).expect("listed scheme");
    let schemes: Vec<Scheme> = std::iter::once(Scheme::RemoteOnly)
        .chain(THETAS.map(|theta| Scheme::Hybrid { theta }))
        .collect();
    Bars {
        title: "Fig. 7: remote accesses and migrations vs depth threshold (mean)",
        y_label: "fraction of accesses (%)",
        groups: schemes.iter().map(|s| s.name()).collect(),
        series: vec![
            (
                "remote accesses".into(),
                schemes.iter().map(|&s| 100.0 * pick(s).remote).collect(),
            ),
            (
                "migrations".into(),
                schemes.iter().map(|&s| 100.0 * pick(s).migration).collect(),
            ),
        ],
        stacked: true,
    }
    .draw(dir, "fig7_theta_breakdown.png")?;
    Bars {
        title: "Fig. 8: memory latency vs depth threshold (geomean, / remote-only)",
        y_label: "latency / remote-only",
        groups: THETAS.iter().map(|t| format!("θ={t}")).collect(),
        series: vec![(
            "hybrid".into(),
            THETAS
                .iter()
                .map(|&theta| pick(Scheme::Hybrid { theta }).latency_ratio)
                .collect(),
        )],
        stacked: false,
    }
    .draw(dir, "fig8_theta_latency.png")
}

//! Shim et al.'s evaluation as a [`Reproduction`]: the paper's figures beside ours, each
//! claim judged once from our results, and the assumptions the chip makes.
//!
//! Why here: the claims are judged from [`BenchResult`]s by [`claims`], which the claim
//! tests (`tests/claims.rs`) call at test scale and `hetsched reproduce` calls through
//! [`reproduce`]; both therefore read the same verdicts.

use crate::experiment::{self, summarise, BenchResult, Options, Summary};
use crate::kernels::Benchmark;
use crate::{Chip, Scheme};
use hetsched_core::Result;
use hetsched_study::{Baseline, Check, Claim, Figure, Measure, Paper, Reproduction, Table};
use hetsched_util::files::OutDir;
use std::path::PathBuf;

const PAPER: &str = "shim";
const HYBRID3: Scheme = Scheme::Hybrid { theta: 3 };

/// The paper's numbers (Section IV-C/D), as transcribed.
pub mod paper {
    pub use crate::experiment::paper::*;
    /// Radix: remote-only core-miss rate, hybrid θ = 3 core-miss rate, and its migration
    /// rate ("less than 0.01 %").
    pub const RADIX: (f64, f64, f64) = (0.43, 0.079, 0.0001);
    /// Best benchmark's speed-up over remote-only at θ = 3 ("up to 2.3X").
    pub const BEST_SPEEDUP: f64 = 2.3;
    /// Relative reduction of the core-miss rate at θ = 3 ("38 % improvement").
    pub const CORE_MISS_REDUCTION: f64 = 0.38;
}

/// A rate in per cent: one decimal, or under 0.1 % its first significant digit (the
/// paper's "< 0.01 %" must not print as "< 0.0 %").
fn pct(x: f64) -> String {
    let v = 100.0 * x;
    let decimals = if v > 0.0 && v < 0.1 {
        (-v.log10().floor()) as usize
    } else {
        1
    };
    format!("{v:.decimals$} %")
}

#[cfg(test)]
#[test]
fn small_rates_keep_a_significant_digit() {
    assert_eq!(pct(0.0001), "0.01 %");
    assert_eq!(pct(0.000032), "0.003 %");
    assert_eq!(pct(0.079), "7.9 %");
    assert_eq!(pct(0.0), "0.0 %");
    assert_eq!(pct(0.001), "0.1 %");
}

fn get(sums: &[Summary], scheme: Scheme) -> Summary {
    *sums
        .iter()
        .find(|m| m.scheme == scheme)
        .expect("every scheme is summarised")
}

/// A claim with its fields, graded by the one rule ([`hetsched_study::grade`]) on
/// `checks`; `explanation` is kept only where the verdict is not Holds.
fn claim(
    id: &'static str,
    source: &'static str,
    statement: &str,
    paper_value: String,
    ours: String,
    checks: Vec<Check>,
    explanation: &str,
) -> Claim {
    Claim::new(PAPER, id, source, statement)
        .measured(paper_value, ours)
        .graded(checks, explanation)
}

/// A rate against the paper's, both fractions, compared in per cent.
fn rate(what: &str, paper: f64, ours: f64) -> Check {
    Check::number(
        what,
        Paper::Value(100.0 * paper),
        Measure::Quantity,
        100.0 * ours,
    )
}

/// Why raytrace and ocean_contiguous are slower under the hybrid, where they are.
const NEVER_WORSE_MECHANISMS: &str =
    "Raytrace: every ray starts at the BVH root, homed on one core, so all threads \
             migrate there and evict each other from its single guest context (90 % of the \
             migrations are single-access); ocean_contiguous: the global error word (a run of 3 \
             on core 0) makes all threads migrate to core 0 once per iteration. The predictor is \
             the paper's; its text gives no mechanism (guest-context contention, destination \
             awareness) that would avoid this. See docs/nuca.md, \"Where the hybrid loses\".";

const WHY_BASELINE: &str =
    "Our kernels trace only their data (no stack or spill traffic, which Pin records) at \
     sizes where each of 64 threads owns a few 4 KB pages, and several kernels mostly read \
     other threads' data. Controlled variants (docs/nuca.md): caches and placement are \
     not the cause; radix at SPLASH-2's 1 M keys misses 42.8 % (paper 43 %); one stack \
     access per traced access in bursts of 16 gives 25.9 % → 17.5 % and gains of \
     13 / 17 / 16 % at θ = 2 / 3 / 5, the paper's means, but its two knobs (the stack \
     rate and the burst length) were swept to get there, not measured from SPLASH-2 \
     binaries: evidence for the cause, not a calibrated fix.";

/// Grades every claim of the paper from results of the 16 benchmarks (any scale).
pub fn claims(results: &[BenchResult]) -> Vec<Claim> {
    let sums = summarise(results);
    let remote = get(&sums, Scheme::RemoteOnly);
    let [h2, h3, h5] = [2, 3, 5].map(|theta| get(&sums, Scheme::Hybrid { theta }));
    let reduction = 1.0 - h3.core_miss / remote.core_miss;
    let (best_name, best) = results
        .iter()
        .map(|r| (r.name.as_str(), 1.0 / r.normalised_latency(HYBRID3)))
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    let (worst_name, worst) = results
        .iter()
        .map(|r| (r.name.as_str(), r.normalised_latency(HYBRID3)))
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    let slower = results
        .iter()
        .filter(|r| r.normalised_latency(HYBRID3) > 1.0)
        .count();
    // The slower benchmarks by name, for the explanation beside the numbers.
    let slower_names: Vec<String> = results
        .iter()
        .filter(|r| r.normalised_latency(HYBRID3) > 1.0)
        .map(|r| format!("{} ({:.3}×)", r.name, r.normalised_latency(HYBRID3)))
        .collect();
    let never_worse_why = format!(
        "Slower here: {}. {NEVER_WORSE_MECHANISMS}",
        if slower_names.is_empty() {
            "none".to_string()
        } else {
            slower_names.join(", ")
        }
    );
    let mut out = vec![
        claim(
            "core-miss-remote-only",
            "§IV-C, Fig. 4",
            "29 % of memory accesses are core misses under remote-access-only NUCA (mean)",
            pct(paper::CORE_MISS_REMOTE),
            pct(remote.core_miss),
            vec![rate("core misses, %", paper::CORE_MISS_REMOTE, remote.core_miss)],
            WHY_BASELINE,
        ),
        claim(
            "core-miss-reduction",
            "§IV-C, Fig. 4",
            "the migration predictor (θ = 3) lowers the core-miss rate to 18 %, a 38 % improvement in data locality",
            format!("{} → {} (−38 %)", pct(paper::CORE_MISS_REMOTE), pct(paper::CORE_MISS_HYBRID3)),
            format!("{} → {} (−{:.0} %)", pct(remote.core_miss), pct(h3.core_miss), 100.0 * reduction),
            vec![Check::number(
                "change of the core-miss rate, %",
                Paper::Value(-100.0 * paper::CORE_MISS_REDUCTION),
                Measure::Percent,
                -100.0 * reduction,
            )],
            &format!(
                "Ours falls by {:.0} % of its remote-only rate against the paper's 38 %, from a baseline of {} (claim core-miss-remote-only).",
                100.0 * reduction,
                pct(remote.core_miss)
            ),
        ),
        claim(
            "migration-rate",
            "§IV-C, Fig. 6",
            "the average migration rate is only 3 %, far fewer migrations than the core misses they remove",
            pct(paper::MIGRATION_RATE_HYBRID3),
            format!(
                "{} (core misses removed: {:.1} points)",
                pct(h3.migration),
                100.0 * (remote.core_miss - h3.core_miss)
            ),
            vec![
                rate("migrations, %", paper::MIGRATION_RATE_HYBRID3, h3.migration),
                Check::statement(
                    "fewer migrations than core misses removed",
                    h3.migration < remote.core_miss - h3.core_miss,
                ),
            ],
            "A few kernels (raytrace, dht, ocean_non_contiguous) have many runs of ≥ 3 accesses \
             to one remote core and migrate on 10–50 % of their accesses; with a higher \
             baseline core-miss rate (claim core-miss-remote-only) there are more runs to migrate for.",
        ),
        claim(
            "mean-gain-theta3",
            "§IV-C, Fig. 5",
            "the hybrid (θ = 3) performs 18 % better than remote-only on average (geometric mean of memory latency)",
            pct(0.18),
            pct(h3.gain),
            vec![Check::number("gain, %", Paper::Value(18.0), Measure::Percent, 100.0 * h3.gain)],
            // Which way ours differs decides the explanation.
            if h3.gain > 0.18 {
                "Our gain is larger because our baseline misses more (claim core-miss-remote-only): \
                 more long runs of remote accesses for a migration to replace. With bursty stack \
                 traffic added (docs/nuca.md, controlled variants) the gain is 17.3 %."
            } else {
                "Our gain is smaller at this scale: the tiny inputs of the claim tests (16 cores) \
                 leave fewer long runs of remote accesses for a migration to replace; at the \
                 paper's sizes on 64 cores it is larger than the paper's (docs/reproduce.md)."
            },
        ),
        claim(
            "best-speedup",
            "§IV-C, Fig. 5",
            "the best benchmark is 2.3× faster than remote-only",
            format!("{:.1}×", paper::BEST_SPEEDUP),
            format!("{best:.2}× ({best_name})"),
            vec![Check::number(
                "best speed-up, ×",
                Paper::Value(paper::BEST_SPEEDUP),
                Measure::Ratio,
                best,
            )],
            "At the default sizes water gains 4.7×: it reads every molecule's position from its owner (98 % core misses \
             remote-only) in long runs, which migration turns into local accesses.",
        ),
        claim(
            "never-worse",
            "§IV-C, Fig. 5",
            "thread migration performance is no worse than the baseline NUCA on any benchmark",
            "worst ≤ 1.000× of remote-only latency".into(),
            format!("worst {worst:.3}× ({worst_name}); {slower} of {} slower", results.len()),
            vec![Check::number(
                "worst latency ratio, ×",
                Paper::AtMost(1.0),
                Measure::Ratio,
                worst,
            )],
&never_worse_why,
        ),
        claim(
            "theta3-best",
            "§IV-D, Fig. 8",
            "θ = 3 performs best of θ = 2, 3, 5 (13 %, 18 %, 15 % better than remote-only)",
            "13 % / 18 % / 15 %".into(),
            format!("{} / {} / {}", pct(h2.gain), pct(h3.gain), pct(h5.gain)),
            vec![
                Check::statement("θ = 3 gains more than θ = 2", h3.gain > h2.gain),
                Check::statement("θ = 3 gains more than θ = 5", h3.gain > h5.gain),
            ],
            "At this scale another threshold wins: the runs of accesses to one core are \
             shorter or longer than in the full-size kernels.",
        ),
        claim(
            "theta2-more-migrations",
            "§IV-D, Fig. 7",
            "θ = 2 has almost the same core-miss rate as θ = 3 but more migrations, hence performs worse",
            "same core-miss rate, more migrations".into(),
            format!(
                "core misses {} vs {}; migrations {} vs {}",
                pct(h2.core_miss),
                pct(h3.core_miss),
                pct(h2.migration),
                pct(h3.migration)
            ),
            vec![
                // "Almost the same": the paper's value for θ = 2 is θ = 3's rate.
                rate("θ = 2's core misses against θ = 3's, %", h3.core_miss, h2.core_miss),
                Check::statement("θ = 2 migrates more", h2.migration > h3.migration),
            ],
            "θ = 2 migrates more, as in the paper, but also removes visibly more core misses.",
        ),
    ];
    if let Some(radix) = results.iter().find(|r| r.name == Benchmark::Radix.name()) {
        let (base, hyb) = (radix.of(Scheme::RemoteOnly), radix.of(HYBRID3));
        let (p_base, p_hyb, p_mig) = paper::RADIX;
        out.push(claim(
            "radix-few-migrations",
            "§IV-C, Fig. 6",
            "radix: core misses fall from 43 % to 7.9 % with less than 0.01 % migrations (5.4× fewer core misses)",
            format!("{} → {}, < {}", pct(p_base), pct(p_hyb), pct(p_mig)),
            format!(
                "{} → {}, {} migrations",
                pct(base.core_miss_rate()),
                pct(hyb.core_miss_rate()),
                pct(hyb.migration_rate())
            ),
            vec![
                rate("core misses remote-only, %", p_base, base.core_miss_rate()),
                rate("core misses θ = 3, %", p_hyb, hyb.core_miss_rate()),
                Check::number(
                    "migrations, %",
                    Paper::AtMost(100.0 * p_mig),
                    Measure::Quantity,
                    100.0 * hyb.migration_rate(),
                ),
            ],
            "At the default size our radix (2^17 keys, 64 threads: 2 048 keys and a 1024-bucket histogram per \
             thread) reads the histograms of all lower-numbered threads and scatters into \
             every other partition, in runs shorter than SPLASH-2's at its 2^18-key input.",
        ));
    }
    out
}

/// The paper's Figures 4–8 beside ours (images relative to the output folder).
pub fn figures(results: &[BenchResult]) -> Vec<Figure> {
    let images = PathBuf::from;
    let sums = summarise(results);
    let per_bench = |f: &dyn Fn(&BenchResult) -> Vec<String>| -> Vec<Vec<String>> {
        results
            .iter()
            .map(|r| {
                let mut row = vec![r.name.clone()];
                row.extend(f(r));
                row
            })
            .collect()
    };
    let mean_row = |name: &str, f: &dyn Fn(Scheme) -> String, schemes: &[Scheme]| {
        let mut row = vec![name.to_string()];
        row.extend(schemes.iter().map(|&s| f(s)));
        row
    };
    let both = [Scheme::RemoteOnly, HYBRID3];
    let mut fig4 = per_bench(&|r| both.map(|s| pct(r.of(s).core_miss_rate())).to_vec());
    fig4.push(mean_row("mean", &|s| pct(get(&sums, s).core_miss), &both));
    let mut fig5 = per_bench(&|r| vec![format!("{:.3}", r.normalised_latency(HYBRID3))]);
    fig5.push(vec![
        "geometric mean".into(),
        format!("{:.3}", get(&sums, HYBRID3).latency_ratio),
    ]);
    let mut fig6 = per_bench(&|r| {
        let h = r.of(HYBRID3);
        vec![pct(h.remote_rate()), pct(h.migration_rate())]
    });
    fig6.push(vec![
        "mean".into(),
        pct(get(&sums, HYBRID3).remote),
        pct(get(&sums, HYBRID3).migration),
    ]);
    let thetas = [2, 3, 5].map(|theta| get(&sums, Scheme::Hybrid { theta }));
    let theta_rows = |f: &dyn Fn(&Summary) -> Vec<String>| -> Vec<Vec<String>> {
        thetas
            .iter()
            .map(|m| {
                let mut row = vec![m.scheme.name()];
                row.extend(f(m));
                row
            })
            .collect()
    };
    vec![
        Figure {
            paper: PAPER,
            id: "fig4",
            title: "Core-miss rate, remote-only vs hybrid θ = 3".into(),
            images: vec![images("fig4_core_miss.png")],
            paper_numbers: Table::new(
                &["benchmark", "remote-only", "hybrid θ=3"],
                vec![
                    vec!["radix".into(), "43 %".into(), "7.9 %".into()],
                    vec!["mean".into(), "29 %".into(), "18 %".into()],
                ],
            ),
            ours: Table::new(&["benchmark", "remote-only", "hybrid θ=3"], fig4),
            note: "The paper gives per-benchmark values only as bars (radix in the text).".into(),
        },
        Figure {
            paper: PAPER,
            id: "fig5",
            title: "Average memory latency of the hybrid (θ = 3) normalised to remote-only".into(),
            images: vec![images("fig5_latency.png")],
            paper_numbers: Table::new(
                &["benchmark", "hybrid / remote-only"],
                vec![
                    vec!["best".into(), "1 / 2.3 = 0.435".into()],
                    vec!["worst".into(), "≤ 1.000".into()],
                    vec![
                        "geometric mean (18 % better)".into(),
                        "1 / 1.18 = 0.847".into(),
                    ],
                ],
            ),
            ours: Table::new(&["benchmark", "hybrid / remote-only"], fig5),
            note: "The paper names neither its best nor its worst benchmark.".into(),
        },
        Figure {
            paper: PAPER,
            id: "fig6",
            title: "Core misses handled by remote accesses and by migrations (θ = 3)".into(),
            images: vec![images("fig6_breakdown.png")],
            paper_numbers: Table::new(
                &["benchmark", "remote accesses", "migrations"],
                vec![
                    vec!["radix".into(), "≈ 7.9 %".into(), "< 0.01 %".into()],
                    vec!["mean".into(), "≈ 15 %".into(), "3 %".into()],
                ],
            ),
            ours: Table::new(&["benchmark", "remote accesses", "migrations"], fig6),
            note:
                "The paper's mean remote-access rate is its 18 % core misses less 3 % migrations."
                    .into(),
        },
        Figure {
            paper: PAPER,
            id: "fig7-8",
            title: "Depth threshold θ = 2, 3, 5: core misses, migrations and gain".into(),
            images: vec![
                images("fig7_theta_breakdown.png"),
                images("fig8_theta_latency.png"),
            ],
            paper_numbers: Table::new(
                &["θ", "core-miss rate", "migration rate", "gain"],
                vec![
                    vec![
                        "2".into(),
                        "≈ θ = 3's".into(),
                        "> θ = 3's".into(),
                        "13 %".into(),
                    ],
                    vec!["3".into(), "18 %".into(), "3 %".into(), "18 %".into()],
                    vec!["5".into(), "".into(), "< θ = 3's".into(), "15 %".into()],
                ],
            ),
            ours: Table::new(
                &["θ", "core-miss rate", "migration rate", "gain"],
                theta_rows(&|m| vec![pct(m.core_miss), pct(m.migration), pct(m.gain)]),
            ),
            note: "Gain = 1 / (geometric mean of latency ratios) − 1, the paper's \"x % better\"."
                .into(),
        },
    ]
}

/// Runs the evaluation (the paper's Table I chip, 64 threads, the default sizes; with
/// `quick`, the tiny test sizes on 16 cores), writes the five PNGs and the text/CSV
/// tables under `out`, and returns the paper's figures beside ours, the judged claims
/// and the chip's assumptions.
pub fn reproduce(out: &OutDir, quick: bool) -> Result<Reproduction> {
    let base = Chip::shim_64();
    let chip = if quick { base.with_cores(16)? } else { base };
    let threads = chip.cores as usize;
    let results = Benchmark::ALL
        .iter()
        .map(|&b| {
            let size = if quick {
                b.tiny_size()
            } else {
                b.default_size()
            };
            experiment::run_benchmark(&chip, b, threads, size, Options::default(), None)
        })
        .collect::<Result<Vec<_>>>()?;
    crate::plot::figures(&results, out)?;
    experiment::write(out, "shim-theta.txt", &experiment::report(&results))?;
    experiment::write(out, "shim-theta.csv", &experiment::csv(&results))?;
    Ok(Reproduction {
        paper: PAPER,
        reference: "Shim, Lis, Khan, Devadas: Judicious Thread Migration When Accessing \
                    Distributed Shared Caches (CAOS 2012)"
            .into(),
        commands: vec!["hetsched experiment shim-theta".into()],
        baseline: Baseline {
            paper: "standard NUCA, every core miss served by a remote access (no thread migration), on the same chip".into(),
            ours: "the simulator's `remote-only` scheme on the paper's Table I chip; no operating-system scheduler takes part, so no Linux version applies".into(),
        },
        figures: figures(&results),
        claims: claims(&results),
        assumptions: assumptions(),
    })
}

/// The reproduction's assumptions: the chip's, the schemes' and the benchmarks' default
/// sizes.
pub fn assumptions() -> Vec<hetsched_study::Assumption> {
    let mut all = crate::chip::assumptions();
    all.extend(experiment::assumptions());
    all.extend(crate::kernels::default_sizes::assumptions());
    all
}

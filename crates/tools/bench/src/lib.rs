//! hetsched's benchmark programs (`hetsched bench KEY`): each is a program that prints its
//! figures beside the load average and, where one exists, beside the peer a user would
//! pick instead (SimGrid, SimPy, StarPU), never a timed test.
//!
//! Why a crate of its own: benchmarks are logic (workloads, alternation, the peers'
//! harnesses in `peers/`), which the CLI must not hold; the CLI builds `hetsched bench`
//! from [`BENCHMARKS`] and runs the one named. Adding a benchmark is its module here
//! (its options as a `clap::Args` struct and its run) plus one line in [`BENCHMARKS`].
//! The benchmarks print as they go: their runs take seconds to minutes.

mod apps;
mod daemon;
mod graph;
mod nuca;
mod o2;
mod peers;
mod profile;
mod reuse;
mod sim;
mod topology;

use hetsched_core::{Error, Result};
use hetsched_util::host::{thread_cpu_seconds, LoadAverage};
use std::time::Instant;

/// One benchmark: `hetsched bench KEY [OPTIONS]`.
#[derive(Clone, Copy)]
pub struct Benchmark {
    /// Its command name.
    pub key: &'static str,
    /// One line for `hetsched bench --help`.
    pub about: &'static str,
    /// Adds its options to its command: `<Options as clap::Args>::augment_args`.
    pub args: fn(clap::Command) -> clap::Command,
    /// Runs it with the parsed options, printing its figures as it goes.
    pub run: fn(&clap::ArgMatches) -> Result<()>,
}

/// Every benchmark, in `hetsched bench --help`'s order.
pub const BENCHMARKS: &[Benchmark] = &[
    daemon::DAEMON,
    topology::BENCHMARK,
    apps::BENCHMARK,
    daemon::HOSTILE,
    sim::SIM,
    sim::SIMULATE,
    nuca::BENCHMARK,
    o2::BENCHMARK,
    reuse::BENCHMARK,
    peers::BENCHMARK,
    graph::BENCHMARK,
    profile::BENCHMARK,
];

/// A benchmark's options from its parsed arguments.
fn options<A: clap::FromArgMatches>(matches: &clap::ArgMatches) -> Result<A> {
    A::from_arg_matches(matches).map_err(|e| Error::input(e.to_string().trim_end()))
}

/// Peak resident memory of this process in KiB (Linux `VmHWM`), if readable.
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds (this thread's) and wall seconds `f` takes, and its result.
pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> (f64, f64, T) {
    let start = Instant::now();
    let cpu0 = thread_cpu_seconds();
    let out = f();
    let wall = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds() - cpu0;
    (cpu, wall, out)
}

/// The 1-minute load average, if readable.
pub(crate) fn load_average() -> Option<f64> {
    LoadAverage::now().map(|l| l.0[0])
}

/// The best CPU time of a figure's runs and the range of the load average over them.
#[derive(Default)]
pub(crate) struct Figure {
    cpu: Option<f64>,
    load: Option<(f64, f64)>,
    /// Every run's CPU time, in order (for ratios round by round).
    runs: Vec<f64>,
}

impl Figure {
    /// Times one run of `f` (this thread's CPU), noting the load average after it.
    pub(crate) fn run<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (cpu, _, out) = timed(f);
        self.add(cpu);
        out
    }

    /// A run that took `cpu` seconds (measured elsewhere: a child's own report), noting
    /// the load average now.
    pub(crate) fn add(&mut self, cpu: f64) {
        self.runs.push(cpu);
        self.cpu = Some(self.cpu.map_or(cpu, |c| c.min(cpu)));
        if let Some(l) = load_average() {
            self.load = Some(self.load.map_or((l, l), |(lo, hi)| (lo.min(l), hi.max(l))));
        }
    }

    pub(crate) fn cpu(&self) -> f64 {
        self.cpu.unwrap_or(f64::NAN)
    }

    /// The ratios of this figure's runs to `base`'s, run by run: median, least and
    /// largest. Why beside the ratio of the best runs: the host's speed drifts by 10 %
    /// and more over minutes here, and runs of one round are seconds apart.
    pub(crate) fn ratios_to(&self, base: &Figure) -> (f64, f64, f64) {
        let mut r: Vec<f64> = (self.runs.iter().zip(&base.runs))
            .map(|(a, b)| a / b)
            .collect();
        r.sort_by(f64::total_cmp);
        let n = r.len();
        match (r.first(), r.last()) {
            (Some(&lo), Some(&hi)) => ((r[(n - 1) / 2] + r[n / 2]) / 2.0, lo, hi),
            _ => (f64::NAN, f64::NAN, f64::NAN),
        }
    }

    pub(crate) fn load(&self) -> String {
        match self.load {
            Some((lo, hi)) if lo == hi => format!("load {lo:.2}"),
            Some((lo, hi)) => format!("load {lo:.2}-{hi:.2}"),
            None => "load ?".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Figure, BENCHMARKS};

    #[test]
    fn every_benchmark_has_its_own_key_and_options_clap_accepts() {
        let mut keys: Vec<&str> = BENCHMARKS.iter().map(|b| b.key).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "a key registered twice");
        for b in BENCHMARKS {
            (b.args)(clap::Command::new(b.key)).debug_assert();
            assert!(!b.about.is_empty(), "{}", b.key);
        }
    }

    fn figure(runs: &[f64]) -> Figure {
        let mut f = Figure::default();
        for &cpu in runs {
            f.add(cpu);
        }
        f
    }

    /// Ratios round by round: the median (of the two middle ones for an even count),
    /// the least and the largest, each run against the same round's base run.
    #[test]
    fn ratios_round_by_round_are_the_median_and_range() {
        let base = figure(&[1.0, 2.0, 1.0, 1.0]);
        let (median, lo, hi) = figure(&[1.5, 2.0, 1.2, 1.1]).ratios_to(&base);
        assert_eq!((lo, hi), (1.0, 1.5));
        assert!((median - 1.15).abs() < 1e-12, "{median}");
        let (median, lo, hi) = figure(&[3.0, 1.0, 2.0]).ratios_to(&figure(&[1.0; 3]));
        assert_eq!((median, lo, hi), (2.0, 1.0, 3.0));
        assert!(figure(&[]).ratios_to(&base).0.is_nan());
    }
}

//! Linux's fair class against queueing theory, through the real engine: `cfs` (to 6.5)
//! and `eevdf` (6.6 on) each on one core. Under Poisson arrivals a fair scheduler with
//! slices much shorter than the tasks is processor sharing, whose M/G/1 mean turnaround
//! is m / (1 − ρ) whatever the distribution of the work (the insensitivity of PS); over a
//! long run, tasks that are always runnable share the core in proportion to their
//! weights.

use hetsched_core::machine::Machine;
use hetsched_core::record::{Event, EventKind, Recorder};
use hetsched_policies::fair::weight_of_nice;
use hetsched_sim::{machine_from_toml, Config, SimTask, Simulation};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const POLICIES: [&str; 2] = ["cfs", "eevdf"];

fn one_core() -> Machine {
    machine_from_toml("name = \"one\"\n[[package]]\ncores = 1\n", "one.toml").unwrap()
}

/// Per task: arrival, end and the time it held the core, from the engine's events
/// (nothing else is kept: a run of 10^5 tasks makes millions of slices).
#[derive(Default)]
struct Tally {
    arrival: Vec<u64>,
    end: Vec<Option<u64>>,
    ran: Vec<u64>,
    since: Vec<Option<u64>>,
}

impl Tally {
    /// Closes the segments still running at `t` (a run stopped at its time limit).
    fn close(&mut self, t: u64) {
        for (ran, since) in self.ran.iter_mut().zip(&mut self.since) {
            if let Some(s) = since.take() {
                *ran += t - s;
            }
        }
    }
}

impl Recorder for Tally {
    fn record(&mut self, e: Event) {
        let i = e.task as usize;
        if i >= self.arrival.len() {
            self.arrival.resize(i + 1, 0);
            self.end.resize(i + 1, None);
            self.ran.resize(i + 1, 0);
            self.since.resize(i + 1, None);
        }
        match e.kind {
            EventKind::Submit { .. } => self.arrival[i] = e.t_ns,
            EventKind::Start { .. } => self.since[i] = Some(e.t_ns),
            EventKind::Stop { .. } | EventKind::Complete { .. } => {
                self.ran[i] += e.t_ns - self.since[i].take().expect("a segment ends once");
                if matches!(e.kind, EventKind::Complete { .. }) {
                    self.end[i] = Some(e.t_ns);
                }
            }
            _ => {}
        }
    }
}

/// `n` tasks arriving as a Poisson process of rate `rate` per second, each of work
/// uniform on [0, 2m] seconds (mean m; squared coefficient of variation 1/3).
fn poisson_uniform(n: u64, rate: f64, m: f64, seed: u64) -> impl Iterator<Item = SimTask> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    (0..n).map(move |id| {
        t += -(1.0 - rng.random::<f64>()).ln() / rate;
        let work = 2.0 * m * rng.random::<f64>();
        SimTask::cpu(id, work.max(1e-6), (t * 1e9) as u64)
    })
}

/// M/G/1: one core, Poisson arrivals, work uniform on [0, 2m] (m = 20 ms, 27 of eevdf's
/// 0.75 ms requests, 3–7 of cfs's slices of a 6 ms latency), at ρ = 0.5 and 0.8, 200,000
/// tasks each. Processor sharing's mean turnaround is m / (1 − ρ) = 40 and 100 ms;
/// measured: cfs +0.8 % and −0.2 %, eevdf −0.3 % and −1.2 % (the sample's own error is of
/// that order at ρ = 0.8, where busy periods are long).
#[test]
fn one_core_under_poisson_arrivals_is_processor_sharing() {
    let m = 0.020;
    for policy in POLICIES {
        for rho in [0.5, 0.8] {
            let mut tally = Tally::default();
            let tasks = poisson_uniform(200_000, rho / m, m, 7);
            let config = Config {
                max_events: Some(u64::MAX),
                ..Config::default()
            };
            let summary = Simulation::new(&one_core(), tasks, &config)
                .run_spec(policy, 1, &mut tally)
                .unwrap();
            assert_eq!(summary.unfinished, 0);
            let turnaround: f64 = (tally.end.iter().zip(&tally.arrival))
                .map(|(end, arrival)| (end.unwrap() - arrival) as f64 / 1e9)
                .sum::<f64>()
                / tally.arrival.len() as f64;
            let ps = m / (1.0 - rho);
            let error = turnaround / ps - 1.0;
            eprintln!(
                "{policy} ρ = {rho}: mean turnaround {:.2} ms, PS {:.2} ms, error {:+.2} %",
                turnaround * 1e3,
                ps * 1e3,
                error * 100.0
            );
            assert!(error.abs() < 0.04, "{policy} at ρ = {rho}: {error:+.4}");
        }
    }
}

/// Three tasks always runnable on one core for 60 s, of nice −5, 0 and 5 (weights 3121,
/// 1024 and 335: 69.7 %, 22.9 % and 7.5 % of the core): each one's share is within 1 %
/// of its weight's.
#[test]
fn weights_give_proportional_shares() {
    let horizon = 60_000_000_000;
    let weights: Vec<u32> = [-5, 0, 5]
        .iter()
        .map(|&n| weight_of_nice(n).unwrap())
        .collect();
    let total: u32 = weights.iter().sum();
    for policy in POLICIES {
        let tasks = weights.iter().enumerate().map(|(i, &w)| {
            let mut t = SimTask::cpu(i as u64, 1e6, 0);
            t.weight = w;
            t
        });
        let config = Config {
            max_time_ns: Some(horizon),
            max_events: Some(u64::MAX),
            ..Config::default()
        };
        let mut tally = Tally::default();
        Simulation::new(&one_core(), tasks, &config)
            .run_spec(policy, 1, &mut tally)
            .unwrap();
        tally.close(horizon);
        assert_eq!(
            tally.ran.iter().sum::<u64>(),
            horizon,
            "{policy}: the core never idles"
        );
        for (i, &w) in weights.iter().enumerate() {
            let share = tally.ran[i] as f64 / horizon as f64;
            let fair = w as f64 / total as f64;
            let error = share / fair - 1.0;
            eprintln!(
                "{policy} weight {w}: share {:.4} %, weight's {:.4} %, error {:+.3} %",
                share * 100.0,
                fair * 100.0,
                error * 100.0
            );
            assert!(error.abs() < 0.01, "{policy}, weight {w}: {error:+.5}");
        }
    }
}

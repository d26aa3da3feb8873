//! `hetsched validate`: a workload run live under each policy, simulated on the
//! calibrated machine, and the two compared.
//!
//! The live runs alternate between policies (policy A's first run, B's first, ..., A's
//! second, ...) so that a change in the machine's load falls on every policy alike. The
//! prediction is one simulation per policy: the simulated run is deterministic, its
//! inputs being the calibration and the jobs' item counts. A policy's error is the
//! prediction over the live median, minus 1, for the makespan and for the mean
//! turnaround of the jobs (each from the moment the first process was spawned).

use crate::calibration::{Calibration, Kernel};
use crate::workload::{JobSpec, Workload};
use hetsched_core::record::Record;
use hetsched_core::{Error, Result};
use hetsched_live::session;
use hetsched_sim::{Config, Simulation};
use hetsched_util::files::OutDir;
use hetsched_util::stats::Spread;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The bounds a prediction must meet, relative to the live median.
pub const MAKESPAN_BOUND: f64 = 0.10;
pub const TURNAROUND_BOUND: f64 = 0.15;

/// What to validate.
pub struct Options {
    pub workload: &'static Workload,
    pub policies: Vec<String>,
    pub runs: usize,
    /// Multiplies every job's size.
    pub scale: f64,
    /// The `hetsched` binary (its `app` subcommands are the jobs).
    pub apps: PathBuf,
}

/// One policy's figures.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyResult {
    pub policy: String,
    /// Live, over the runs.
    pub makespan_s: Spread,
    pub mean_turnaround_s: Spread,
    /// Simulated.
    pub predicted_makespan_s: f64,
    pub predicted_mean_turnaround_s: f64,
    /// Predicted over the live median, minus 1.
    pub makespan_error: f64,
    pub turnaround_error: f64,
}

/// A validation's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    pub workload: String,
    pub jobs: usize,
    pub runs: usize,
    pub load_before: String,
    pub load_after: String,
    pub policies: Vec<PolicyResult>,
    /// The policies from best to worst, live (by median) and simulated.
    pub live_order_makespan: Vec<String>,
    pub predicted_order_makespan: Vec<String>,
    pub live_order_turnaround: Vec<String>,
    pub predicted_order_turnaround: Vec<String>,
    /// Whether the simulator orders every pair of policies as the live runs do, by
    /// makespan and by mean turnaround: a pair whose live medians differ by less than
    /// the larger of their two sds is a tie the live runs do not decide, and either
    /// order agrees with it.
    pub same_order_makespan: bool,
    pub same_order_turnaround: bool,
    /// Every error within its bound and both orders the same.
    pub holds: bool,
    /// What the simulator leaves out ([`left_out`]).
    pub left_out: Vec<String>,
}

/// What the simulator leaves out or approximates that a live run of `workload` pays,
/// each with its calibrated size where there is one.
pub fn left_out(cal: &Calibration, workload: &Workload) -> Vec<String> {
    let per_decision = |k: Kernel| {
        cal.kernel(k, "cpu").map_or(0.0, |f| {
            let d = f.under_daemon.as_ref().unwrap_or(&f.rate).median;
            f.interval as f64 * (1.0 / d - 1.0 / f.rate.median) * 1e6
        })
    };
    let mut v = vec![
        format!(
            "a decision's cost (md5 {:.1} µs a checkpoint, prime {:.1} µs) is folded into each task's work as measured with every CPU busy; while a CPU idles the daemon runs there for free, so a run's tail is predicted a little long",
            per_decision(Kernel::Md5),
            per_decision(Kernel::Prime)
        ),
        format!(
            "the simulated processes all arrive after the calibrated start-up ({:.1} ms); live they are spawned one after another",
            cal.startup_s.median * 1e3
        ),
        "the machine's other load (the load average before and after is in the header): the simulator has the CPUs to itself".into(),
    ];
    if let (true, Some(cl)) = (workload.accelerators, &cal.opencl) {
        v.push(format!(
            "a process's first grant of the OpenCL device costs {:.1} ms more than later ones (its platform starting); the simulator charges every grant the set-up alone ({:.1} ms)",
            cl.first_grant_s.median * 1e3,
            cl.setup_s_all() * 1e3
        ));
        v.push(format!(
            "the device and the CPUs slow each other by the shares measured with md5 on both sides (CPU {:.2}, device {:.2}); prime's may differ",
            cl.cpu_share.median, cl.device_share.median
        ));
    }
    v
}

pub(crate) fn load_now() -> String {
    hetsched_util::host::LoadAverage::now().map_or_else(|| "unknown".into(), |l| l.to_string())
}

/// Runs the validation; `say` receives a line as each run ends.
pub fn validate(cal: &Calibration, o: &Options, say: &mut dyn FnMut(&str)) -> Result<Validation> {
    if !(1..=100).contains(&o.runs) {
        return Err(Error::input(format!(
            "--runs: {}, accepted 1..=100",
            o.runs
        )));
    }
    if !(o.scale.is_finite() && (0.001..=1000.0).contains(&o.scale)) {
        return Err(Error::input(format!(
            "--scale: {}, accepted [0.001, 1000]",
            o.scale
        )));
    }
    for p in &o.policies {
        hetsched_policies::check(p)?;
    }
    let jobs = o.workload.jobs(cal, o.scale)?;
    let live_jobs: Vec<_> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| j.live(i, &o.apps))
        .collect();
    let load_before = load_now();
    say(&format!(
        "{}: {} jobs, {} policies x {} runs live; load average {load_before}",
        o.workload.key,
        jobs.len(),
        o.policies.len(),
        o.runs
    ));
    let mut live: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); o.policies.len()];
    for run in 0..o.runs {
        for (p, policy) in o.policies.iter().enumerate() {
            let (machine, index) = cal.machine(o.workload.accelerators)?;
            let out = session::run(machine, index, policy, &live_jobs)?;
            let t: Vec<f64> = out.jobs.iter().map(|j| j.turnaround_s).collect();
            let makespan = t.iter().copied().fold(0.0, f64::max);
            let mean = t.iter().sum::<f64>() / t.len() as f64;
            say(&format!(
                "  run {}/{} {policy}: makespan {makespan:.2} s, mean turnaround {mean:.2} s",
                run + 1,
                o.runs
            ));
            live[p].0.push(makespan);
            live[p].1.push(mean);
        }
    }
    let mut policies = Vec::new();
    for (p, policy) in o.policies.iter().enumerate() {
        let (makespan, mean) = predict(cal, o.workload, &jobs, policy)?;
        let (ms, ta) = (Spread::of(&live[p].0), Spread::of(&live[p].1));
        policies.push(PolicyResult {
            policy: policy.clone(),
            makespan_error: makespan / ms.median - 1.0,
            turnaround_error: mean / ta.median - 1.0,
            makespan_s: ms,
            mean_turnaround_s: ta,
            predicted_makespan_s: makespan,
            predicted_mean_turnaround_s: mean,
        });
    }
    Ok(Validation::judged(
        o.workload.key,
        jobs.len(),
        o.runs,
        (load_before, load_now()),
        policies,
        left_out(cal, o.workload),
    ))
}

impl Validation {
    /// The validation of `policies`' results: the orders, and whether every error is
    /// within its bound and the orders are the same.
    pub fn judged(
        workload: &str,
        jobs: usize,
        runs: usize,
        (load_before, load_after): (String, String),
        policies: Vec<PolicyResult>,
        left_out: Vec<String>,
    ) -> Validation {
        let order = |key: &dyn Fn(&PolicyResult) -> f64| -> Vec<String> {
            let mut v: Vec<&PolicyResult> = policies.iter().collect();
            v.sort_by(|a, b| key(a).total_cmp(&key(b)));
            v.into_iter().map(|r| r.policy.clone()).collect()
        };
        let live_order_makespan = order(&|r| r.makespan_s.median);
        let predicted_order_makespan = order(&|r| r.predicted_makespan_s);
        let live_order_turnaround = order(&|r| r.mean_turnaround_s.median);
        let predicted_order_turnaround = order(&|r| r.predicted_mean_turnaround_s);
        let same_order_makespan = agree(&policies, |r| (r.makespan_s, r.predicted_makespan_s));
        let same_order_turnaround = agree(&policies, |r| {
            (r.mean_turnaround_s, r.predicted_mean_turnaround_s)
        });
        let holds = policies.iter().all(|r| {
            r.makespan_error.abs() <= MAKESPAN_BOUND && r.turnaround_error.abs() <= TURNAROUND_BOUND
        }) && same_order_makespan
            && same_order_turnaround;
        Validation {
            workload: workload.into(),
            jobs,
            runs,
            load_before,
            load_after,
            policies,
            live_order_makespan,
            predicted_order_makespan,
            live_order_turnaround,
            predicted_order_turnaround,
            same_order_makespan,
            same_order_turnaround,
            holds,
            left_out,
        }
    }
}

/// Whether the prediction orders every pair the live runs separate as they do (see
/// [`Validation::same_order_makespan`]); `measure` gives a policy's live spread and its
/// prediction.
fn agree(policies: &[PolicyResult], measure: impl Fn(&PolicyResult) -> (Spread, f64)) -> bool {
    policies.iter().enumerate().all(|(i, a)| {
        policies[i + 1..].iter().all(|b| {
            let ((la, pa), (lb, pb)) = (measure(a), measure(b));
            let tie = (la.median - lb.median).abs() < la.sd.max(lb.sd);
            tie || (la.median < lb.median) == (pa < pb)
        })
    })
}

/// The simulated makespan and mean turnaround (s, from 0 as the live ones are from the
/// first spawn) of `jobs` under `policy` on the calibrated machine.
pub fn predict(
    cal: &Calibration,
    workload: &Workload,
    jobs: &[JobSpec],
    policy: &str,
) -> Result<(f64, f64)> {
    let (machine, _) = cal.machine(workload.accelerators)?;
    let tasks = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| j.task(i as u64, cal))
        .collect::<Result<Vec<_>>>()?;
    let mut built = hetsched_policies::build(policy, 1)?;
    let mut record = Record::new(
        policy,
        machine.units.iter().map(|u| u.kind).collect(),
        machine.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary =
        Simulation::new(&machine, tasks, &Config::default()).run(built.as_mut(), &mut record)?;
    if summary.unfinished > 0 {
        return Err(Error::runtime(format!(
            "{policy}: {} simulated tasks did not finish",
            summary.unfinished
        )));
    }
    let ends: Vec<f64> = record
        .outcomes()
        .iter()
        .filter_map(|o| o.end_ns)
        .map(|e| e as f64 * 1e-9)
        .collect();
    if ends.len() != jobs.len() {
        return Err(Error::runtime(format!(
            "{policy}: {} of {} simulated tasks ended",
            ends.len(),
            jobs.len()
        )));
    }
    let makespan = ends.iter().copied().fold(0.0, f64::max);
    Ok((makespan, ends.iter().sum::<f64>() / ends.len() as f64))
}

impl Validation {
    /// The table a user reads.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{}: {} jobs, {} live runs a policy (load average before {}, after {})",
            self.workload, self.jobs, self.runs, self.load_before, self.load_after
        );
        let _ = writeln!(
            s,
            "{:<24} {:>17} {:>10} {:>8} {:>17} {:>10} {:>8}",
            "policy",
            "makespan live s",
            "predicted",
            "error",
            "turnaround live s",
            "predicted",
            "error"
        );
        for r in &self.policies {
            let _ = writeln!(
                s,
                "{:<24} {:>17} {:>10.2} {:>+7.1}% {:>17} {:>10.2} {:>+7.1}%",
                r.policy,
                format!("{:.2} ± {:.2}", r.makespan_s.median, r.makespan_s.sd),
                r.predicted_makespan_s,
                r.makespan_error * 100.0,
                format!(
                    "{:.2} ± {:.2}",
                    r.mean_turnaround_s.median, r.mean_turnaround_s.sd
                ),
                r.predicted_mean_turnaround_s,
                r.turnaround_error * 100.0
            );
        }
        let _ = writeln!(
            s,
            "(live: median ± sd over the runs; error: predicted over the live median, minus 1; bounds ±{:.0} % makespan, ±{:.0} % mean turnaround)",
            MAKESPAN_BOUND * 100.0,
            TURNAROUND_BOUND * 100.0
        );
        if self.policies.len() > 1 {
            let same = |agree: bool| {
                if agree {
                    "the same (pairs within the live sd count either way)"
                } else {
                    "DIFFERENT"
                }
            };
            let _ = writeln!(
                s,
                "order by makespan: live {} / predicted {}: {}",
                self.live_order_makespan.join(" < "),
                self.predicted_order_makespan.join(" < "),
                same(self.same_order_makespan)
            );
            let _ = writeln!(
                s,
                "order by mean turnaround: live {} / predicted {}: {}",
                self.live_order_turnaround.join(" < "),
                self.predicted_order_turnaround.join(" < "),
                same(self.same_order_turnaround)
            );
        }
        let _ = writeln!(s, "what the simulator leaves out:");
        for l in &self.left_out {
            let _ = writeln!(s, "  - {l}");
        }
        let _ = writeln!(
            s,
            "verdict: {}",
            if self.holds {
                "every prediction within its bound, the same order of policies"
            } else {
                "does NOT hold (an error beyond its bound, or another order of a pair the live runs separate)"
            }
        );
        s
    }

    /// Writes `table.txt`, `validation.json` and `predicted.png` (measured against
    /// predicted, one point per policy and measure) into `out`.
    pub fn write(&self, out: &OutDir) -> Result<()> {
        out.write("table.txt", self.table())?;
        out.write(
            "validation.json",
            serde_json::to_vec_pretty(self).map_err(Error::runtime)?,
        )?;
        let mut series = vec![
            hetsched_util::plot::Series {
                name: "makespan".into(),
                points: self
                    .policies
                    .iter()
                    .map(|r| (r.makespan_s.median, r.predicted_makespan_s))
                    .collect(),
            },
            hetsched_util::plot::Series {
                name: "mean turnaround".into(),
                points: self
                    .policies
                    .iter()
                    .map(|r| (r.mean_turnaround_s.median, r.predicted_mean_turnaround_s))
                    .collect(),
            },
        ];
        let top = self
            .policies
            .iter()
            .map(|r| r.makespan_s.median.max(r.predicted_makespan_s))
            .fold(0.0, f64::max);
        series.push(hetsched_util::plot::Series {
            name: "predicted = measured".into(),
            points: (0..=50)
                .map(|i| top * i as f64 / 50.0)
                .map(|x| (x, x))
                .collect(),
        });
        hetsched_util::plot::lines(
            out,
            "predicted.png",
            &format!("{}: simulated against live (s)", self.workload),
            "measured (live median), s",
            "predicted (simulated), s",
            &series,
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(policy: &str, live: &[f64], predicted: f64) -> PolicyResult {
        let s = Spread::of(live);
        PolicyResult {
            policy: policy.into(),
            makespan_s: s,
            mean_turnaround_s: s,
            predicted_makespan_s: predicted,
            predicted_mean_turnaround_s: predicted,
            makespan_error: predicted / s.median - 1.0,
            turnaround_error: predicted / s.median - 1.0,
        }
    }

    fn judge(results: Vec<PolicyResult>) -> Validation {
        Validation::judged("t", 1, 3, ("0".into(), "0".into()), results, Vec::new())
    }

    #[test]
    fn a_validation_holds_only_within_both_bounds_and_the_same_order() {
        // a beats b clearly live; predicted in order, within 10 %.
        let v = judge(vec![
            result("a", &[10.0, 10.1, 9.9], 10.5),
            result("b", &[20.0, 20.2, 19.8], 19.0),
        ]);
        assert!(v.same_order_makespan && v.holds);
        // The prediction swaps a pair the live runs separate.
        let v = judge(vec![
            result("a", &[10.0, 10.1, 9.9], 10.5),
            result("b", &[11.0, 11.1, 10.9], 10.4),
        ]);
        assert!(!v.same_order_makespan && !v.holds);
        // The same swap of a pair within the live sd is a tie: either order agrees.
        let v = judge(vec![
            result("a", &[10.0, 11.0, 9.0], 10.5),
            result("b", &[10.5, 11.5, 9.5], 10.4),
        ]);
        assert!(v.same_order_makespan && v.holds);
        // An error of 12 % on the makespan fails its 10 % bound.
        let v = judge(vec![result("a", &[10.0], 11.2)]);
        assert!(!v.holds);
    }
}

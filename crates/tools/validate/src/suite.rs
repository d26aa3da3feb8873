//! `hetsched validate --suite`: every validation this machine can run, one after the
//! other, and one table of them all.
//!
//! 1. **Beisel et al.'s mix** on the CPUs and the OpenCL device (`apps`; on the CPUs
//!    alone, `apps-cpu`, where the calibration has no device) under `fcfs`, `affinity`
//!    without time-sharing and with it, and `dmda`: the simulator must predict, sign
//!    included, what time-sharing does to the mean turnaround live.
//! 2. **StarPU's own Cholesky** run by StarPU under `eager` and `dmda`, against
//!    hetsched's simulation of the same graph on the models StarPU wrote ([`crate::starpu`]).
//!
//! Not in it yet: real programs (compressors, interpreters) through `hetsched run` on a
//! fast and a slowed CPU; the suite's table says so.

use crate::calibration::Calibration;
use crate::validate::{self, Validation};
use hetsched_core::Result;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The policies of the suite's application mix.
pub const POLICIES: [&str; 4] = ["fcfs", "affinity:fcfs=1", "affinity:gran_ms=250", "dmda"];

/// What the suite does not cover yet, printed with its table.
pub const NOT_YET: &str = "real programs through `hetsched run` on a fast and a slowed CPU (cfs, eevdf, cfs-cap, signature): not in the suite yet";

/// One part of the suite: its validation, or why it was skipped.
#[derive(Clone, Debug, Serialize)]
pub struct Part {
    pub name: String,
    pub validation: Option<Validation>,
    pub skipped: Option<String>,
}

/// The suite's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Suite {
    pub parts: Vec<Part>,
    pub not_yet: String,
}

/// Runs the suite: each part `runs` times a policy.
pub fn suite(
    cal: &Calibration,
    runs: usize,
    apps: PathBuf,
    say: &mut dyn FnMut(&str),
) -> Result<Suite> {
    let mut parts = Vec::new();
    let key = if cal.opencl.is_some() {
        "apps"
    } else {
        "apps-cpu"
    };
    let options = validate::Options {
        workload: crate::workload(key)?,
        policies: POLICIES.iter().map(|p| p.to_string()).collect(),
        runs,
        scale: 1.0,
        apps,
    };
    parts.push(Part {
        name: format!("Beisel et al.'s mix ({key})"),
        validation: Some(validate::validate(cal, &options, say)?),
        skipped: None,
    });
    let load_before = validate::load_now();
    let starpu = crate::starpu::cholesky(runs, say)?;
    parts.push(match starpu {
        Some(policies) => Part {
            name: "StarPU's cholesky_implicit".into(),
            validation: Some(Validation::judged(
                "starpu-cholesky",
                (crate::starpu::TILES * (crate::starpu::TILES + 1) * (crate::starpu::TILES + 2) / 6)
                    as usize,
                runs,
                (load_before, validate::load_now()),
                policies,
                vec![
                    "StarPU reports the makespan only: its turnaround columns repeat it".into(),
                    "the kernels' durations are their models' means (StarPU's own variance is not drawn)".into(),
                ],
            )),
            skipped: None,
        },
        None => Part {
            name: "StarPU's cholesky_implicit".into(),
            validation: None,
            skipped: Some("not installed (Debian package starpu-examples)".into()),
        },
    });
    Ok(Suite {
        parts,
        not_yet: NOT_YET.into(),
    })
}

impl Suite {
    /// Every part's table, then one Markdown table of them all.
    pub fn table(&self) -> String {
        let mut s = String::new();
        for p in &self.parts {
            let _ = writeln!(s, "== {}", p.name);
            match (&p.validation, &p.skipped) {
                (Some(v), _) => s += &v.table(),
                (None, Some(why)) => {
                    let _ = writeln!(s, "skipped: {why}");
                }
                (None, None) => {}
            }
            s.push('\n');
        }
        s += &self.markdown();
        s
    }

    /// The summary as a Markdown table (docs/validation.md has this machine's).
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| part | policy | makespan live (s) | predicted | error | mean turnaround live (s) | predicted | error |\n|---|---|---|---|---|---|---|---|\n",
        );
        for p in &self.parts {
            let Some(v) = &p.validation else {
                let _ = writeln!(
                    s,
                    "| {} | skipped: {} | | | | | | |",
                    p.name,
                    p.skipped.as_deref().unwrap_or("")
                );
                continue;
            };
            for r in &v.policies {
                let _ = writeln!(
                    s,
                    "| {} | `{}` | {:.2} ± {:.2} | {:.2} | {:+.1} % | {:.2} ± {:.2} | {:.2} | {:+.1} % |",
                    p.name,
                    r.policy,
                    r.makespan_s.median,
                    r.makespan_s.sd,
                    r.predicted_makespan_s,
                    r.makespan_error * 100.0,
                    r.mean_turnaround_s.median,
                    r.mean_turnaround_s.sd,
                    r.predicted_mean_turnaround_s,
                    r.turnaround_error * 100.0
                );
            }
        }
        s.push('\n');
        for p in self.parts.iter().filter(|p| p.validation.is_some()) {
            let v = p.validation.as_ref().expect("filtered");
            let same = |agree: bool| if agree { "the same" } else { "different" };
            let _ = writeln!(
                s,
                "{}: order by makespan {}, by mean turnaround {}; {}.",
                p.name,
                same(v.same_order_makespan),
                same(v.same_order_turnaround),
                if v.holds { "holds" } else { "does not hold" }
            );
        }
        let _ = writeln!(s, "\nNot yet: {}", self.not_yet);
        s
    }
}

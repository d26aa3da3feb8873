//! Outputs of a comparison: the table, per-task CSV, JSON.

use hetsched_core::record::{Metrics, Record};
use std::fmt::Write;

/// The comparison table, one row per policy.
pub fn table(metrics: &[Metrics]) -> String {
    let mut out = String::new();
    let kinds: Vec<_> = {
        let mut k: Vec<_> = metrics
            .iter()
            .flat_map(|m| m.utilisation.iter().map(|u| u.0))
            .collect();
        k.sort();
        k.dedup();
        k
    };
    let _ = write!(
        out,
        "{:<24} {:>6} {:>5} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "policy",
        "done",
        "rej",
        "makespan_s",
        "turn_mean",
        "turn_med",
        "turn_p95",
        "wait_mean",
        "wait_med",
        "wait_p95",
        "tasks/s"
    );
    for k in &kinds {
        let _ = write!(out, " {:>8}", format!("util_{k}"));
    }
    let _ = writeln!(out, " {:>6} {:>6} {:>8}", "migr", "steals", "fairness");
    for m in metrics {
        let _ = write!(
            out,
            "{:<24} {:>6} {:>5} {:>10.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>10.3}",
            m.policy,
            m.completed,
            m.rejected,
            m.makespan_s,
            m.turnaround_s.mean,
            m.turnaround_s.median,
            m.turnaround_s.p95,
            m.wait_s.mean,
            m.wait_s.median,
            m.wait_s.p95,
            m.throughput_per_s
        );
        for k in &kinds {
            match m.utilisation.iter().find(|u| u.0 == *k) {
                Some(u) => write!(out, " {:>8.3}", u.1),
                None => write!(out, " {:>8}", "-"),
            }
            .unwrap();
        }
        let _ = writeln!(
            out,
            " {:>6} {:>6} {:>8.4}",
            m.migrations, m.steals, m.fairness
        );
    }
    out
}

/// One line per task: what happened to it under one policy.
pub fn tasks_csv(record: &Record) -> String {
    let mut out = String::from(
        "task,type,arrival_s,first_start_s,end_s,turnaround_s,wait_s,run_s,ideal_s,runs,migrations,unit,rejected\n",
    );
    let s = |ns: u64| format!("{:.9}", ns as f64 * 1e-9);
    let opt = |v: Option<u64>| v.map(s).unwrap_or_default();
    for o in record.outcomes() {
        let unit = o
            .unit
            .map(|u| record.unit_names[u as usize].clone())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            o.task,
            o.kind,
            s(o.arrival_ns),
            opt(o.first_start_ns),
            opt(o.end_ns),
            opt(o.turnaround_ns()),
            opt(o.wait_ns()),
            s(o.run_ns),
            s(o.ideal_ns),
            o.runs,
            o.migrations,
            unit,
            o.rejected
        );
    }
    out
}

/// A policy name usable in a file name.
pub fn file_safe(policy: &str) -> String {
    policy
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

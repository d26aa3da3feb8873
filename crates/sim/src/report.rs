//! Outputs of a comparison: the table, per-task CSV, JSON.

use hetsched_core::record::{Metrics, Record, TaskOutcome};
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

/// The header line of the per-task CSV.
pub const TASKS_CSV_HEADER: &str =
    "task,type,arrival_s,first_start_s,end_s,turnaround_s,wait_s,run_s,ideal_s,runs,migrations,unit,rejected\n";

/// One line per task: what happened to it under one policy.
pub fn tasks_csv(record: &Record) -> String {
    let mut out = TASKS_CSV_HEADER.as_bytes().to_vec();
    for o in record.outcomes() {
        write_csv_row(&mut out, &o, &record.unit_names);
    }
    String::from_utf8(out).expect("the CSV is UTF-8")
}

/// Appends one task's line of the per-task CSV (`unit_names` by unit id). Integers go
/// through `itoa`, not the formatting machinery: on a 1M-task run the CSV cost more
/// than the simulation when each field was a `write!`.
pub fn write_csv_row(out: &mut Vec<u8>, o: &TaskOutcome, unit_names: &[String]) {
    let mut int = itoa::Buffer::new();
    out.extend_from_slice(int.format(o.task).as_bytes());
    out.push(b',');
    out.extend_from_slice(o.kind.as_bytes());
    out.push(b',');
    seconds(out, Some(o.arrival_ns));
    for v in [
        o.first_start_ns,
        o.end_ns,
        o.turnaround_ns(),
        o.wait_ns(),
        Some(o.run_ns),
        Some(o.ideal_ns),
    ] {
        out.push(b',');
        seconds(out, v);
    }
    for n in [o.runs, o.migrations] {
        out.push(b',');
        out.extend_from_slice(int.format(n).as_bytes());
    }
    out.push(b',');
    if let Some(u) = o.unit {
        out.extend_from_slice(unit_names[u as usize].as_bytes());
    }
    out.extend_from_slice(if o.rejected { b",true\n" } else { b",false\n" });
}

/// Nanoseconds as seconds with nine decimals, as `{:.9}` prints `ns as f64 * 1e-9`
/// (nothing for `None`). Below 10^15 ns the float's error (at most 2.3e-16 relative,
/// from `1e-9` and the product) is under 0.23 ns, so it rounds back to `ns` and the
/// integer digits are the same text without a float formatter (a tenth of the CSV's
/// cost); above, the float is printed. Seven values a line made this the CSV's main
/// cost, so the digits (decimals two at a time) are written in place at the end of the
/// buffer: made in a stack array and copied in whole, they were read back 16 bytes at
/// once just after their one- and two-byte stores (a store-forwarding stall that took
/// half of this function's samples).
fn seconds(out: &mut Vec<u8>, ns: Option<u64>) {
    const NS_PER_S: u64 = 1_000_000_000;
    match ns {
        None => {}
        Some(ns) if ns < 1_000_000_000_000_000 => {
            // At most six integer digits, the point and nine decimals.
            let (mut int, mut frac) = ((ns / NS_PER_S) as u32, (ns % NS_PER_S) as u32);
            let digits = int.checked_ilog10().map_or(1, |l| l as usize + 1);
            let start = out.len();
            out.resize(start + digits + 10, b'.');
            let text = &mut out[start..];
            for d in text[..digits].iter_mut().rev() {
                *d = b'0' + (int % 10) as u8;
                int /= 10;
            }
            let decimals = &mut text[digits + 1..];
            for pair in decimals[1..].rchunks_exact_mut(2) {
                let i = 2 * (frac % 100) as usize;
                pair.copy_from_slice(&DIGIT_PAIRS[i..i + 2]);
                frac /= 100;
            }
            decimals[0] = b'0' + frac as u8;
        }
        Some(ns) => out.extend_from_slice(format!("{:.9}", ns as f64 * 1e-9).as_bytes()),
    }
}

/// "00", "01", ..., "99".
const DIGIT_PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The integer path prints what the float formatter printed, across magnitudes.
    #[test]
    fn seconds_match_the_float_format() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut values: Vec<u64> = vec![0, 1, 999_999_999, 1_000_000_000, 999_999_999_999_999];
        for bits in 1..64 {
            for _ in 0..2_000 {
                values.push(rng.random::<u64>() >> (64 - bits));
            }
        }
        for ns in values {
            let mut out = Vec::new();
            seconds(&mut out, Some(ns));
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{:.9}", ns as f64 * 1e-9),
                "{ns} ns"
            );
        }
    }
}

//! Run records as a user reads them: the comparison table (one row per run) and the
//! per-task CSV. Beside [`crate::record`] because both engines make records: the
//! simulator's `simulate` and the live daemon's `--trace` print the same table.

use crate::record::{Metrics, Record, TaskOutcome};
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
    // Tasks left (a run stopped at its time limit): a column only when a run left some,
    // so that the table of runs that completed stays as it was.
    let left = metrics.iter().any(|m| m.unfinished > 0);
    let _ = write!(out, "{:<24} {:>6} {:>5}", "policy", "done", "rej");
    if left {
        let _ = write!(out, " {:>6}", "left");
    }
    let _ = write!(
        out,
        " {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
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
        let _ = write!(out, "{:<24} {:>6} {:>5}", m.policy, m.completed, m.rejected);
        if left {
            let _ = write!(out, " {:>6}", m.unfinished);
        }
        let _ = write!(
            out,
            " {:>10.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>10.3}",
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
/// cost: a one-digit integer part (most values) goes with the point and the first
/// decimal in one append (longer ones digit by digit: the single append took 5.7 % off
/// `simulate`'s instructions with the CSV), the other eight decimals at once
/// ([`eight_digits`]), each appended whole from a register (text built in a stack array
/// with byte stores and copied in whole was read back just after its stores: a
/// store-forwarding stall that took half of this function's samples).
fn seconds(out: &mut Vec<u8>, ns: Option<u64>) {
    const NS_PER_S: u64 = 1_000_000_000;
    match ns {
        None => {}
        Some(ns) if ns < 1_000_000_000_000_000 => {
            // At most six integer digits, the point and nine decimals.
            let (mut int, frac) = ((ns / NS_PER_S) as u32, (ns % NS_PER_S) as u32);
            let first = b'0' + (frac / 100_000_000) as u8;
            if int < 10 {
                // One integer digit (most values): with the point and the first decimal.
                out.extend_from_slice(&[b'0' + int as u8, b'.', first]);
            } else {
                let digits = int.ilog10() as usize + 1;
                let start = out.len();
                out.resize(start + digits, b'0');
                for d in out[start..].iter_mut().rev() {
                    *d = b'0' + (int % 10) as u8;
                    int /= 10;
                }
                out.extend_from_slice(&[b'.', first]);
            }
            out.extend_from_slice(&eight_digits(frac % 100_000_000));
        }
        Some(ns) => out.extend_from_slice(format!("{:.9}", ns as f64 * 1e-9).as_bytes()),
    }
}

/// The eight decimal digits of `n` (below 10^8, zero-padded), most significant first,
/// computed in one register: the two four-digit halves in 32-bit lanes, split into
/// two-digit 16-bit lanes, then into one-digit bytes, each split a multiply by a
/// reciprocal that no lane's product carries out of (10486 / 2^20 is 1/100 below
/// 43,699; 103 / 2^10 is 1/10 below 179). Hand-written: the `itoa` crate prints
/// integers without padding, one digit pair at a time.
fn eight_digits(n: u32) -> [u8; 8] {
    debug_assert!(n < 100_000_000);
    let n = n as u64;
    // Lanes of 32 bits: [n / 10^4, n % 10^4] (the first lane is the low one, first in
    // memory).
    let x = (n / 10_000) | ((n % 10_000) << 32);
    let hundreds = ((x * 10486) >> 20) & 0x0000_007F_0000_007F;
    // Lanes of 16 bits: [v / 100, v % 100] for each four-digit v.
    let x = hundreds | ((x - hundreds * 100) << 16);
    let tens = ((x * 103) >> 10) & 0x000F_000F_000F_000F;
    // Bytes: [w / 10, w % 10] for each two-digit w.
    let x = tens | ((x - tens * 10) << 8);
    (x | 0x3030_3030_3030_3030).to_le_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Eight digits at once are `{:08}`, at the halves' and pairs' edges and at random.
    #[test]
    fn eight_digits_are_the_padded_number() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let mut values = vec![0, 1, 9, 10, 99, 100, 9_999, 10_000, 10_001, 99_999_999];
        values.extend((0..100_000).map(|_| rng.random_range(0..100_000_000)));
        for n in values {
            assert_eq!(
                String::from_utf8(eight_digits(n).to_vec()).unwrap(),
                format!("{n:08}")
            );
        }
    }

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

//! Radix: SPLASH-2 parallel radix sort of 32-bit keys, radix 1024 (10 bits per pass). Per pass each
//! thread histograms its keys, threads combine the histograms into global digit ranks
//! (each reads other threads' histograms whole, as SPLASH's prefix tree does), then each
//! thread scatters its keys to their ranks. Checks the output is the sorted input.
//!
//! `_rep`: after the digit totals are computed, every thread copies them (read-only for
//! the rest of the pass) into its own array before computing its ranks.

use super::{chunk, mix, run_threads, verify, Space};
use crate::trace::Trace;
use hetsched_core::Result;
use std::sync::Barrier;

const RADIX: usize = 1024;
const PASSES: usize = 4;

pub fn run(p: usize, n: usize, rep: bool) -> Result<Vec<Trace>> {
    let input: Vec<u64> = (0..n as u64).map(|i| mix(i) & 0xffff_ffff).collect();
    let space = Space::default();
    let keys = [space.array(n), space.array(n)];
    let hist = space.array(p * RADIX); // hist[q][d]
    let totals = space.array(RADIX);
    let ranks = space.array(p * RADIX); // rank[q][d]
    let copies: Vec<_> = (0..if rep { p } else { 0 })
        .map(|_| space.array(RADIX))
        .collect();
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let mine = chunk(id, n, p);
        if rep {
            copies[id].touch(t, line!()); // private: first touched at home
        }
        for i in mine.clone() {
            keys[0].set_u(t, line!(), i, input[i]);
        }
        for pass in 0..PASSES {
            let (src, dst) = (&keys[pass % 2], &keys[1 - pass % 2]);
            let shift = 10 * pass;
            for d in 0..RADIX {
                hist.set_u(t, line!(), id * RADIX + d, 0);
            }
            for i in mine.clone() {
                let d = (src.get_u(t, line!(), i) >> shift) as usize & (RADIX - 1);
                let c = hist.get_u(t, line!(), id * RADIX + d);
                t.ops(4);
                hist.set_u(t, line!(), id * RADIX + d, c + 1);
            }
            barrier.wait();
            // Totals of this thread's digits: a run over each thread's histogram.
            let digits = chunk(id, RADIX, p);
            let mut sum = vec![0u64; digits.len()];
            for q in 0..p {
                for (k, d) in digits.clone().enumerate() {
                    sum[k] += hist.get_u(t, line!(), q * RADIX + d);
                    t.ops(1);
                }
            }
            for (k, d) in digits.enumerate() {
                totals.set_u(t, line!(), d, sum[k]);
            }
            barrier.wait();
            let tot = if rep {
                for d in 0..RADIX {
                    let v = totals.get_u(t, line!(), d);
                    copies[id].set_u(t, line!(), d, v);
                }
                &copies[id]
            } else {
                &totals
            };
            // rank[d] = keys with smaller digits + keys with digit d of earlier threads.
            let mut rank = vec![0u64; RADIX];
            let mut base = 0;
            for d in 0..RADIX {
                rank[d] = base;
                base += tot.get_u(t, line!(), d);
                t.ops(1);
            }
            for q in 0..id {
                for d in 0..RADIX {
                    rank[d] += hist.get_u(t, line!(), q * RADIX + d);
                    t.ops(1);
                }
            }
            for d in 0..RADIX {
                ranks.set_u(t, line!(), id * RADIX + d, rank[d]);
            }
            for i in mine.clone() {
                let k = src.get_u(t, line!(), i);
                let d = (k >> shift) as usize & (RADIX - 1);
                let r = ranks.get_u(t, line!(), id * RADIX + d);
                t.ops(4);
                ranks.set_u(t, line!(), id * RADIX + d, r + 1);
                dst.set_u(t, line!(), r as usize, k);
            }
            barrier.wait();
        }
    });
    let mut expect = input;
    expect.sort_unstable();
    let out = &keys[PASSES % 2];
    let bad = (0..n).find(|&i| out.peek_u(i) != expect[i]);
    verify(bad.is_none(), || {
        format!("radix: output differs from the sorted input at {bad:?}")
    })?;
    Ok(traces)
}

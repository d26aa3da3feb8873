//! Water-n²: the O(n²) molecular-dynamics pattern of SPLASH-2 water-nsquared, with one
//! Lennard-Jones site per molecule. Each step every thread computes the force on its
//! molecules from all others (reading every position), then integrates its own. Checks
//! the final state bit-for-bit against a sequential run.
//!
//! `_rep`: at the start of each step a thread copies all positions (read-only during the
//! force phase) into its own array.

use super::{chunk, run_threads, unit, verify, Space};
use crate::trace::Trace;
use hetsched_core::Result;
use std::sync::Barrier;

const STEPS: usize = 3;
const DT: f64 = 1e-3;

/// Softened Lennard-Jones force factor for squared distance r2 (force = factor · d).
fn lj(r2: f64) -> f64 {
    let r2 = r2 + 0.1;
    let inv6 = 1.0 / (r2 * r2 * r2);
    24.0 * inv6 * (2.0 * inv6 - 1.0) / r2
}

fn initial(n: usize) -> Vec<f64> {
    let side = (n as f64).cbrt().ceil() as usize;
    (0..n)
        .flat_map(|m| {
            let c = [m % side, (m / side) % side, m / (side * side)];
            (0..3).map(move |d| c[d] as f64 * 1.1 + 0.05 * unit((3 * m + d) as u64))
        })
        .collect()
}

pub fn run(p: usize, n: usize, rep: bool) -> Result<Vec<Trace>> {
    let start = initial(n);
    let space = Space::default();
    let (pos, vel, force) = (space.array(3 * n), space.array(3 * n), space.array(3 * n));
    let copies: Vec<_> = (0..if rep { p } else { 0 })
        .map(|_| space.array(3 * n))
        .collect();
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let mine = chunk(id, n, p);
        for i in 3 * mine.start..3 * mine.end {
            pos.set(t, line!(), i, start[i]);
            vel.set(t, line!(), i, 0.0);
        }
        barrier.wait();
        for _ in 0..STEPS {
            let src = if rep {
                for i in 0..3 * n {
                    let v = pos.get(t, line!(), i);
                    copies[id].set(t, line!(), i, v);
                }
                &copies[id]
            } else {
                &pos
            };
            for i in mine.clone() {
                let xi = [0, 1, 2].map(|d| src.get(t, line!(), 3 * i + d));
                let mut f = [0.0; 3];
                for j in (0..n).filter(|&j| j != i) {
                    let xj = [0, 1, 2].map(|d| src.get(t, line!(), 3 * j + d));
                    let dv = [xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]];
                    let k = lj(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]);
                    t.ops(25);
                    for d in 0..3 {
                        f[d] += k * dv[d];
                    }
                }
                for (d, fd) in f.into_iter().enumerate() {
                    force.set(t, line!(), 3 * i + d, fd);
                }
            }
            barrier.wait();
            for i in 3 * mine.start..3 * mine.end {
                let v = vel.get(t, line!(), i) + DT * force.get(t, line!(), i);
                vel.set(t, line!(), i, v);
                let x = pos.get(t, line!(), i) + DT * v;
                t.ops(4);
                pos.set(t, line!(), i, x);
            }
            barrier.wait();
        }
    });
    let (mut x, mut v) = (start, vec![0.0; 3 * n]);
    for _ in 0..STEPS {
        let mut f = vec![0.0; 3 * n];
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let dv = [
                    x[3 * i] - x[3 * j],
                    x[3 * i + 1] - x[3 * j + 1],
                    x[3 * i + 2] - x[3 * j + 2],
                ];
                let k = lj(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]);
                for d in 0..3 {
                    f[3 * i + d] += k * dv[d];
                }
            }
        }
        for i in 0..3 * n {
            v[i] += DT * f[i];
            x[i] += DT * v[i];
        }
    }
    let same = (0..3 * n).all(|i| pos.peek(i).to_bits() == x[i].to_bits());
    verify(same, || {
        "water: parallel run differs from the sequential one".into()
    })?;
    Ok(traces)
}

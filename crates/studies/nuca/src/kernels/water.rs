//! Water-n²: the O(n²) molecular-dynamics pattern of SPLASH-2 water-nsquared. A molecule
//! is a record of three sites (O, H, H) with positions, velocities and forces; sites
//! interact through a softened Lennard-Jones force. Each step every thread computes the
//! force on its molecules from all others (reading every position), then integrates its
//! own. Checks the final state bit-for-bit against a sequential run. (SPLASH also adds
//! each pair's force to both molecules under locks; we compute each side separately so
//! the run is deterministic.)
//!
//! `_rep`: at the start of each step a thread copies all positions (read-only during the
//! force phase) into its own array.

use super::{chunk, run_threads, unit, verify, Space};
use crate::trace::Trace;
use hetsched_core::Result;
use std::sync::Barrier;

const STEPS: usize = 2;
const SITES: usize = 3;
/// Words per molecule record: positions, velocities, forces of 3 sites, padding.
const REC: usize = 32;
const POS: usize = 0;
const VEL: usize = 9;
const FORCE: usize = 18;
const DT: f64 = 1e-3;

/// Softened Lennard-Jones force factor for squared distance r2 (force = factor · d).
fn lj(r2: f64) -> f64 {
    let r2 = r2 + 0.1;
    let inv6 = 1.0 / (r2 * r2 * r2);
    24.0 * inv6 * (2.0 * inv6 - 1.0) / r2
}

/// Initial site positions, 9 per molecule: molecules on a lattice, sites around them.
fn initial(n: usize) -> Vec<f64> {
    let side = (n as f64).cbrt().ceil() as usize;
    (0..n)
        .flat_map(|m| {
            let c = [m % side, (m / side) % side, m / (side * side)];
            (0..SITES * 3).map(move |k| {
                let (site, d) = (k / 3, k % 3);
                c[d] as f64 * 2.0
                    + 0.6 * site as f64 * (d == site % 3) as u8 as f64
                    + 0.05 * unit((9 * m + k) as u64)
            })
        })
        .collect()
}

/// Force on the sites of molecule `xi` from molecule `xj` (9 site pairs), added to `f`.
fn pair_force(xi: &[f64; 9], xj: &[f64; 9], f: &mut [f64; 9]) {
    for a in 0..SITES {
        for b in 0..SITES {
            let dv = [0, 1, 2].map(|d| xi[3 * a + d] - xj[3 * b + d]);
            let k = lj(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]);
            for d in 0..3 {
                f[3 * a + d] += k * dv[d];
            }
        }
    }
}

pub fn run(p: usize, n: usize, rep: bool) -> Result<Vec<Trace>> {
    let start = initial(n);
    let space = Space::default();
    let mol = space.array(REC * n);
    let copies: Vec<_> = (0..if rep { p } else { 0 })
        .map(|_| space.array(9 * n))
        .collect();
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let mine = chunk(id, n, p);
        if rep {
            copies[id].touch(t, line!()); // private: first touched at home
        }
        for i in mine.clone() {
            for k in 0..9 {
                mol.set(t, line!(), REC * i + POS + k, start[9 * i + k]);
                mol.set(t, line!(), REC * i + VEL + k, 0.0);
            }
        }
        barrier.wait();
        for _ in 0..STEPS {
            // Where molecule j's positions are read from: the shared records or a copy.
            let at = |j: usize| if rep { 9 * j } else { REC * j + POS };
            let src = if rep {
                for j in 0..n {
                    let mut x = [0.0; 9];
                    for (k, v) in x.iter_mut().enumerate() {
                        *v = mol.get(t, line!(), REC * j + POS + k);
                    }
                    for (k, v) in x.into_iter().enumerate() {
                        copies[id].set(t, line!(), 9 * j + k, v);
                    }
                }
                &copies[id]
            } else {
                &mol
            };
            for i in mine.clone() {
                let xi: [f64; 9] = std::array::from_fn(|k| src.get(t, line!(), at(i) + k));
                let mut f = [0.0; 9];
                for j in (0..n).filter(|&j| j != i) {
                    let xj: [f64; 9] = std::array::from_fn(|k| src.get(t, line!(), at(j) + k));
                    t.ops(9 * 25);
                    pair_force(&xi, &xj, &mut f);
                }
                for (k, fk) in f.into_iter().enumerate() {
                    mol.set(t, line!(), REC * i + FORCE + k, fk);
                }
            }
            barrier.wait();
            for i in mine.clone() {
                for k in 0..9 {
                    let v = mol.get(t, line!(), REC * i + VEL + k)
                        + DT * mol.get(t, line!(), REC * i + FORCE + k);
                    mol.set(t, line!(), REC * i + VEL + k, v);
                    let x = mol.get(t, line!(), REC * i + POS + k) + DT * v;
                    t.ops(4);
                    mol.set(t, line!(), REC * i + POS + k, x);
                }
            }
            barrier.wait();
        }
    });
    let (mut x, mut v) = (start, vec![0.0; 9 * n]);
    for _ in 0..STEPS {
        let mut f = vec![0.0; 9 * n];
        for i in 0..n {
            let xi: [f64; 9] = std::array::from_fn(|k| x[9 * i + k]);
            let mut fi = [0.0; 9];
            for j in (0..n).filter(|&j| j != i) {
                let xj: [f64; 9] = std::array::from_fn(|k| x[9 * j + k]);
                pair_force(&xi, &xj, &mut fi);
            }
            f[9 * i..9 * i + 9].copy_from_slice(&fi);
        }
        for i in 0..9 * n {
            v[i] += DT * f[i];
            x[i] += DT * v[i];
        }
    }
    let same = (0..n)
        .all(|i| (0..9).all(|k| mol.peek(REC * i + POS + k).to_bits() == x[9 * i + k].to_bits()));
    verify(same, || {
        "water: parallel run differs from the sequential one".into()
    })?;
    Ok(traces)
}

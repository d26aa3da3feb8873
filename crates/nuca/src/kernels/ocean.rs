//! Ocean: the red-black SOR relaxation of SPLASH-2 ocean's elliptic solver, on an
//! n × n interior grid split into square-ish subgrids, one per thread, with a global
//! residual reduction every iteration. Solves ∇²u = f for a known smooth solution and
//! checks the result bit-for-bit against a sequential run (red-black order makes the
//! parallel sweep deterministic).
//!
//! Layouts: contiguous (each subgrid stored contiguously, ocean_contiguous) or row major
//! (ocean_non_contiguous). `_rep`: before each half sweep a thread copies its neighbours'
//! boundary cells into private ghost rows/columns (temporary replication).

use super::{grid, run_threads, verify, Array, Space, Tracer};
use crate::trace::Trace;
use hetsched_core::{Error, Result};
use std::f64::consts::PI;
use std::sync::{Barrier, Mutex};

#[derive(Clone, Copy)]
pub enum Layout {
    Contiguous,
    RowMajor,
}

const ITERS: usize = 6;
const OMEGA: f64 = 1.5;

/// Maps (i, j) of the (n+2)² grid (with boundary) to a word index.
struct Index {
    n: usize,
    layout: Layout,
    pr: usize,
    pc: usize,
}

impl Index {
    fn at(&self, i: usize, j: usize) -> usize {
        let n = self.n;
        match self.layout {
            Layout::RowMajor => i * (n + 2) + j,
            Layout::Contiguous => {
                if i == 0 || j == 0 || i == n + 1 || j == n + 1 {
                    return n * n + i * (n + 2) + j; // boundary after all subgrids
                }
                let (bi, bj) = (self.block(i - 1, self.pr), self.block(j - 1, self.pc));
                let (r0, r1) = (bi * n / self.pr, (bi + 1) * n / self.pr);
                let (c0, c1) = (bj * n / self.pc, (bj + 1) * n / self.pc);
                let before = r0 * n + (r1 - r0) * c0; // cells of earlier subgrids
                before + (i - 1 - r0) * (c1 - c0) + (j - 1 - c0)
            }
        }
    }
    /// Which of `parts` balanced blocks index x (0-based) falls in.
    fn block(&self, x: usize, parts: usize) -> usize {
        ((x + 1) * parts - 1) / self.n
    }
}

fn rhs(i: usize, j: usize, n: usize) -> f64 {
    let h = 1.0 / (n + 1) as f64;
    let (x, y) = (i as f64 * h, j as f64 * h);
    -2.0 * PI * PI * (PI * x).sin() * (PI * y).sin()
}

/// The SOR update of one cell from its neighbours.
fn relax(u: f64, nb: [f64; 4], f: f64, h2: f64) -> f64 {
    (1.0 - OMEGA) * u + OMEGA * 0.25 * (nb[0] + nb[1] + nb[2] + nb[3] - h2 * f)
}

pub fn run(p: usize, n: usize, layout: Layout, rep: bool) -> Result<Vec<Trace>> {
    let (pr, pc) = grid(p);
    if n < pc.max(pr) {
        return Err(Error::input(format!(
            "ocean: grid side {n} is smaller than the {pr} × {pc} thread grid"
        )));
    }
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    let ix = Index { n, layout, pr, pc };
    let space = Space::default();
    let (u, f) = (
        space.array(n * n + (n + 2) * (n + 2)),
        space.array(n * n + (n + 2) * (n + 2)),
    );
    let partial = space.array(p);
    let total = space.array(1);
    // Ghost cells per thread: north, south rows and west, east columns.
    let ghosts: Vec<Array> = (0..if rep { p } else { 0 })
        .map(|_| space.array(2 * n + 2 * n))
        .collect();
    let residuals = Mutex::new(Vec::new());
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let (bi, bj) = (id / pc, id % pc);
        let rows = (bi * n / pr + 1)..((bi + 1) * n / pr + 1);
        let cols = (bj * n / pc + 1)..((bj + 1) * n / pc + 1);
        for i in rows.clone() {
            for j in cols.clone() {
                u.set(t, line!(), ix.at(i, j), 0.0);
                f.set(t, line!(), ix.at(i, j), rhs(i, j, n));
            }
        }
        if rep {
            ghosts[id].touch(t, line!()); // private: first touched at home
        }
        barrier.wait();
        let (w_r, w_c) = (cols.len(), rows.len());
        for _ in 0..ITERS {
            for color in 0..2 {
                if rep {
                    let g = &ghosts[id];
                    for (k, j) in cols.clone().enumerate() {
                        let v = u.get(t, line!(), ix.at(rows.start - 1, j));
                        g.set(t, line!(), k, v);
                        let v = u.get(t, line!(), ix.at(rows.end, j));
                        g.set(t, line!(), w_r + k, v);
                    }
                    for (k, i) in rows.clone().enumerate() {
                        let v = u.get(t, line!(), ix.at(i, cols.start - 1));
                        g.set(t, line!(), 2 * w_r + k, v);
                        let v = u.get(t, line!(), ix.at(i, cols.end));
                        g.set(t, line!(), 2 * w_r + w_c + k, v);
                    }
                }
                // Each neighbour load is its own access site (`pc`), as in the compiled stencil.
                let read = |t: &mut Tracer, pc: u32, i: usize, j: usize| -> f64 {
                    if rep {
                        let g = &ghosts[id];
                        if i < rows.start {
                            return g.get(t, pc, j - cols.start);
                        } else if i >= rows.end {
                            return g.get(t, pc, w_r + j - cols.start);
                        } else if j < cols.start {
                            return g.get(t, pc, 2 * w_r + i - rows.start);
                        } else if j >= cols.end {
                            return g.get(t, pc, 2 * w_r + w_c + i - rows.start);
                        }
                    }
                    u.get(t, pc, ix.at(i, j))
                };
                for i in rows.clone() {
                    for j in cols.clone().filter(|j| (i + j) % 2 == color) {
                        let c = u.get(t, line!(), ix.at(i, j));
                        let nb = [
                            read(t, line!(), i - 1, j),
                            read(t, line!(), i + 1, j),
                            read(t, line!(), i, j - 1),
                            read(t, line!(), i, j + 1),
                        ];
                        let fv = f.get(t, line!(), ix.at(i, j));
                        t.ops(10);
                        u.set(t, line!(), ix.at(i, j), relax(c, nb, fv, h2));
                    }
                }
                barrier.wait();
            }
            // Residual ‖f - ∇²u‖² reduced through per-thread partial sums.
            let mut r2 = 0.0;
            for i in rows.clone() {
                for j in cols.clone() {
                    let c = u.get(t, line!(), ix.at(i, j));
                    let s = u.get(t, line!(), ix.at(i - 1, j))
                        + u.get(t, line!(), ix.at(i + 1, j))
                        + u.get(t, line!(), ix.at(i, j - 1))
                        + u.get(t, line!(), ix.at(i, j + 1));
                    let fv = f.get(t, line!(), ix.at(i, j));
                    t.ops(8);
                    let res = fv - (s - 4.0 * c) / h2;
                    r2 += res * res;
                }
            }
            partial.set(t, line!(), id, r2);
            barrier.wait();
            if id == 0 {
                let mut s = 0.0;
                for q in 0..p {
                    s += partial.get(t, line!(), q);
                }
                total.set(t, line!(), 0, s);
                residuals.lock().unwrap().push(s.sqrt());
            }
            barrier.wait();
        }
    });
    // Sequential reference with the same order of updates.
    let mut r = vec![0.0; (n + 2) * (n + 2)];
    let at = |i: usize, j: usize| i * (n + 2) + j;
    for _ in 0..ITERS {
        for color in 0..2 {
            for i in 1..=n {
                for j in (1..=n).filter(|j| (i + j) % 2 == color) {
                    let nb = [
                        r[at(i - 1, j)],
                        r[at(i + 1, j)],
                        r[at(i, j - 1)],
                        r[at(i, j + 1)],
                    ];
                    r[at(i, j)] = relax(r[at(i, j)], nb, rhs(i, j, n), h2);
                }
            }
        }
    }
    let same =
        (1..=n).all(|i| (1..=n).all(|j| u.peek(ix.at(i, j)).to_bits() == r[at(i, j)].to_bits()));
    verify(same, || {
        "ocean: parallel sweep differs from the sequential one".into()
    })?;
    let res = residuals.into_inner().unwrap();
    // Few SOR sweeps need not shrink the residual norm; it must be a finite number.
    verify(
        res.len() == ITERS && res.iter().all(|r| r.is_finite()),
        || format!("ocean: residuals {res:?}"),
    )?;
    Ok(traces)
}

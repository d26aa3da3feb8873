//! Ocean: the red-black relaxation of SPLASH-2 ocean's multigrid solver (`relax` in its
//! `multi.C`), on an n × n interior grid split into square-ish subgrids, one per thread,
//! with the solver's global error (largest change of a cell in an iteration) reduced
//! every iteration. Solves ∇²u = f by SOR for a known smooth solution and checks the
//! grid and every iteration's error bit-for-bit against a sequential run (red-black
//! order makes the parallel sweep deterministic).
//!
//! The layouts follow SPLASH-2's two ocean versions:
//!
//! - **contiguous** (ocean_contiguous, ocean_rep): each thread's subgrid is its own
//!   array of (rows + 2) × (cols + 2) cells — the subgrid with a one-cell border. Where
//!   the subgrid touches the edge of the domain the border holds the boundary values;
//!   elsewhere it holds ghost copies of the neighbours' edge cells. Before each half
//!   sweep a thread copies into its border the neighbours' cells of the colour the
//!   previous half sweep updated (SPLASH-2's `copy_black` before the red sweep and
//!   `copy_red` before the black one: one loop per side, each a remote read followed by
//!   a local write), so the relaxation itself touches only the thread's own array. The
//!   owner first touches its whole array, border included.
//! - **row major** (ocean_non_contiguous): one (n + 2) × (n + 2) array with the
//!   boundary, as SPLASH-2's non-contiguous version's global 2-D arrays: the relaxation
//!   reads the neighbours' cells in place and there is no copy phase. Each thread first
//!   touches its cells and the boundary cells next to them.
//!
//! The error: SPLASH-2 lets every thread fold its local error into one global word under
//! a lock and everyone read it after a barrier. ocean_contiguous and ocean_non_contiguous
//! do that (the master resets the word each iteration); ocean_rep replicates it instead
//! — each thread writes its local error into its own array, the master reduces them and
//! writes the result back into every thread's copy, which the thread then reads locally.
//! With SPLASH-2's ghost cells the borders are replicated already, so that is the only
//! shared read-write datum left for `_rep` to replicate.

use super::{grid, run_threads, verify, Array, Space, Tracer};
use crate::trace::Trace;
use hetsched_core::{Error, Result};
use std::f64::consts::PI;
use std::ops::Range;
use std::sync::{Barrier, Mutex};

#[derive(Clone, Copy)]
pub enum Layout {
    Contiguous,
    RowMajor,
}

const ITERS: usize = 6;
const OMEGA: f64 = 1.5;

/// One thread's subgrid: interior rows and columns of the (n+2)² grid (1-based).
struct Block {
    rows: Range<usize>,
    cols: Range<usize>,
}

impl Block {
    fn new(id: usize, n: usize, (pr, pc): (usize, usize)) -> Block {
        let (bi, bj) = (id / pc, id % pc);
        Block {
            rows: (bi * n / pr + 1)..((bi + 1) * n / pr + 1),
            cols: (bj * n / pc + 1)..((bj + 1) * n / pc + 1),
        }
    }
    /// Word index of global cell (i, j) in this block's bordered array.
    fn local(&self, i: usize, j: usize) -> usize {
        (i + 1 - self.rows.start) * (self.cols.len() + 2) + (j + 1 - self.cols.start)
    }
    /// Cells of the bordered array.
    fn bordered_len(&self) -> usize {
        (self.rows.len() + 2) * (self.cols.len() + 2)
    }
}

/// One copy loop of the border exchange.
struct Side {
    nb: usize,
    cells: Vec<(usize, usize)>,
    read: u32,
    write: u32,
}

/// Where the grids live.
enum Store {
    /// Per thread: u and f, each its own bordered array.
    Contiguous(Vec<(Array, Array)>),
    /// u and f over the whole (n+2)² grid, row major.
    RowMajor { u: Array, f: Array, n: usize },
}

impl Store {
    /// u's cell (i, j) as thread `id` (owner of `blk`) addresses it: in the contiguous
    /// layout, in its own bordered array (ghost cell if (i, j) is outside the block).
    fn u(&self, id: usize, blk: &Block, i: usize, j: usize) -> (&Array, usize) {
        match self {
            Store::Contiguous(parts) => (&parts[id].0, blk.local(i, j)),
            Store::RowMajor { u, n, .. } => (u, i * (n + 2) + j),
        }
    }
    fn f(&self, id: usize, blk: &Block, i: usize, j: usize) -> (&Array, usize) {
        match self {
            Store::Contiguous(parts) => (&parts[id].1, blk.local(i, j)),
            Store::RowMajor { f, n, .. } => (f, i * (n + 2) + j),
        }
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
    let shape = grid(p);
    let (pr, pc) = shape;
    if n < pc.max(pr) {
        return Err(Error::input(format!(
            "ocean: grid side {n} is smaller than the {pr} × {pc} thread grid"
        )));
    }
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    let blocks: Vec<Block> = (0..p).map(|id| Block::new(id, n, shape)).collect();
    let space = Space::default();
    let store = match layout {
        Layout::Contiguous => Store::Contiguous(
            blocks
                .iter()
                .map(|b| (space.array(b.bordered_len()), space.array(b.bordered_len())))
                .collect(),
        ),
        Layout::RowMajor => Store::RowMajor {
            u: space.array((n + 2) * (n + 2)),
            f: space.array((n + 2) * (n + 2)),
            n,
        },
    };
    // SPLASH-2's global error word, or (`_rep`) per thread: [local error, global error].
    let err = space.array(1);
    let err_lock = Mutex::new(());
    let err_copies: Vec<Array> = (0..if rep { p } else { 0 })
        .map(|_| space.array(2))
        .collect();
    let errors = Mutex::new(Vec::new());
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let me = &blocks[id];
        let (bi, bj) = (id / pc, id % pc);
        // Initialisation by the owner: u = 0 on its cells and the boundary or ghost
        // cells around them (row major: only boundary cells, which no thread owns
        // otherwise), f on its cells.
        let grow = |r: &Range<usize>, contiguous: bool| -> Range<usize> {
            let lo = if contiguous || r.start == 1 {
                r.start - 1
            } else {
                r.start
            };
            let hi = if contiguous || r.end == n + 1 {
                r.end + 1
            } else {
                r.end
            };
            lo..hi
        };
        let contiguous = matches!(layout, Layout::Contiguous);
        for i in grow(&me.rows, contiguous) {
            for j in grow(&me.cols, contiguous) {
                let (a, k) = store.u(id, me, i, j);
                a.set(t, line!(), k, 0.0);
                if me.rows.contains(&i) && me.cols.contains(&j) {
                    let (a, k) = store.f(id, me, i, j);
                    a.set(t, line!(), k, rhs(i, j, n));
                }
            }
        }
        if rep {
            err_copies[id].touch(t, line!()); // private: first touched at home
        }
        // SPLASH-2's copy loops, one per side with a neighbour: the neighbour, the border
        // cells, and the loop's read and write sites.
        let (r, c) = (me.rows.clone(), me.cols.clone());
        let mut sides: Vec<Side> = Vec::new();
        if bi > 0 {
            sides.push(Side {
                nb: id - pc,
                cells: c.clone().map(|j| (r.start - 1, j)).collect(),
                read: line!(),
                write: line!(),
            });
        }
        if bi + 1 < pr {
            sides.push(Side {
                nb: id + pc,
                cells: c.clone().map(|j| (r.end, j)).collect(),
                read: line!(),
                write: line!(),
            });
        }
        if bj > 0 {
            sides.push(Side {
                nb: id - 1,
                cells: r.clone().map(|i| (i, c.start - 1)).collect(),
                read: line!(),
                write: line!(),
            });
        }
        if bj + 1 < pc {
            sides.push(Side {
                nb: id + 1,
                cells: r.clone().map(|i| (i, c.end)).collect(),
                read: line!(),
                write: line!(),
            });
        }
        for _ in 0..ITERS {
            if id == 0 && !rep {
                err.set(t, line!(), 0, 0.0);
            }
            let mut local_err = 0.0f64;
            for color in 0..2 {
                barrier.wait();
                if contiguous {
                    // Refresh the ghost cells of the colour the last half sweep updated.
                    for side in &sides {
                        for &(i, j) in side.cells.iter().filter(|(i, j)| (i + j) % 2 != color) {
                            let (src, k) = store.u(side.nb, &blocks[side.nb], i, j);
                            let v = src.get(t, side.read, k);
                            let (dst, k) = store.u(id, me, i, j);
                            dst.set(t, side.write, k, v);
                        }
                    }
                }
                // Each neighbour load is its own access site (`pc`), as in the compiled
                // stencil.
                let u = |t: &mut Tracer, pc: u32, i: usize, j: usize| -> f64 {
                    let (a, k) = store.u(id, me, i, j);
                    a.get(t, pc, k)
                };
                for i in me.rows.clone() {
                    let first = me.cols.start + (me.cols.start + i + color) % 2;
                    for j in (first..me.cols.end).step_by(2) {
                        let c = u(t, line!(), i, j);
                        let nb = [
                            u(t, line!(), i - 1, j),
                            u(t, line!(), i + 1, j),
                            u(t, line!(), i, j - 1),
                            u(t, line!(), i, j + 1),
                        ];
                        let (fa, fk) = store.f(id, me, i, j);
                        let fv = fa.get(t, line!(), fk);
                        t.ops(12);
                        let new = relax(c, nb, fv, h2);
                        local_err = local_err.max((c - new).abs());
                        let (a, k) = store.u(id, me, i, j);
                        a.set(t, line!(), k, new);
                    }
                }
            }
            let global = if rep {
                err_copies[id].set(t, line!(), 0, local_err);
                barrier.wait();
                if id == 0 {
                    let mut g = 0.0f64;
                    for q in 0..p {
                        g = g.max(err_copies[q].get(t, line!(), 0));
                    }
                    for q in 0..p {
                        err_copies[q].set(t, line!(), 1, g);
                    }
                }
                barrier.wait();
                err_copies[id].get(t, line!(), 1)
            } else {
                {
                    // The word's value depends on the order threads take the lock; the
                    // trace does not (it always reads and writes), so traces stay
                    // deterministic where SPLASH-2 writes only a larger error.
                    let _held = err_lock.lock().unwrap();
                    let g = err.get(t, line!(), 0);
                    err.set(t, line!(), 0, g.max(local_err));
                }
                barrier.wait();
                err.get(t, line!(), 0)
            };
            if id == 0 {
                errors.lock().unwrap().push(global);
            }
            barrier.wait();
        }
    });
    // Sequential reference with the same order of updates.
    let mut r = vec![0.0; (n + 2) * (n + 2)];
    let at = |i: usize, j: usize| i * (n + 2) + j;
    let mut expected = Vec::new();
    for _ in 0..ITERS {
        let mut e = 0.0f64;
        for color in 0..2 {
            for i in 1..=n {
                for j in (1..=n).filter(|j| (i + j) % 2 == color) {
                    let nb = [
                        r[at(i - 1, j)],
                        r[at(i + 1, j)],
                        r[at(i, j - 1)],
                        r[at(i, j + 1)],
                    ];
                    let new = relax(r[at(i, j)], nb, rhs(i, j, n), h2);
                    e = e.max((r[at(i, j)] - new).abs());
                    r[at(i, j)] = new;
                }
            }
        }
        expected.push(e);
    }
    let owner = |i: usize, j: usize| -> usize {
        let part = |x: usize, parts: usize| (x * parts - 1) / n; // x is 1-based
        part(i, pr) * pc + part(j, pc)
    };
    let same = (1..=n).all(|i| {
        (1..=n).all(|j| {
            let id = owner(i, j);
            let (a, k) = store.u(id, &blocks[id], i, j);
            a.peek(k).to_bits() == r[at(i, j)].to_bits()
        })
    });
    verify(same, || {
        "ocean: parallel sweep differs from the sequential one".into()
    })?;
    let errors = errors.into_inner().unwrap();
    verify(
        errors.len() == ITERS
            && errors
                .iter()
                .zip(&expected)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
        || format!("ocean: errors {errors:?}, sequential {expected:?}"),
    )?;
    Ok(traces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Contiguous layout: the relaxation is purely local. The only accesses to pages a
    /// thread never writes are the border-copy reads — every border cell that faces a
    /// neighbour once per iteration (half of them before each half sweep). A stencil
    /// that read the neighbours' cells in place would add its edge loads.
    #[test]
    fn contiguous_relaxation_reads_only_its_own_pages() {
        let (p, n) = (6, 24);
        let foreign = |layout| -> Vec<usize> {
            run(p, n, layout, false)
                .unwrap()
                .iter()
                .map(|tr| {
                    let own: HashSet<u64> = tr
                        .iter()
                        .filter(|a| a.write)
                        .map(|a| a.addr >> 12)
                        .collect();
                    tr.iter().filter(|a| !own.contains(&(a.addr >> 12))).count()
                })
                .collect()
        };
        let (pr, pc) = grid(p);
        let expected: Vec<usize> = (0..p)
            .map(|id| {
                let b = Block::new(id, n, (pr, pc));
                let (bi, bj) = (id / pc, id % pc);
                let rows = b.rows.len() * (usize::from(bj > 0) + usize::from(bj + 1 < pc));
                let cols = b.cols.len() * (usize::from(bi > 0) + usize::from(bi + 1 < pr));
                (rows + cols) * ITERS
            })
            .collect();
        assert_eq!(foreign(Layout::Contiguous), expected);
    }
}

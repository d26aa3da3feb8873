//! LU: SPLASH-2 blocked LU factorisation without pivoting of a diagonally dominant
//! n × n matrix; B × B blocks are owned 2-D-scatter by a thread grid. Per step k: the
//! owner factors the diagonal block, owners update the perimeter blocks, owners update
//! the interior. Checks that L·U reconstructs A.
//!
//! Layouts: contiguous (each block stored contiguously, as SPLASH lu_contiguous) or row
//! major (lu_non_contiguous). `_rep`: before using the diagonal and perimeter blocks of
//! step k, a thread copies them into its own buffers (temporary read-only replication).

use super::{grid, run_threads, unit, verify, Array, Space, Tracer};
use crate::trace::Trace;
use hetsched_core::{Error, Result};
use std::sync::Barrier;

const B: usize = 16; // SPLASH-2 lu default block size

#[derive(Clone, Copy)]
pub enum Layout {
    Contiguous,
    RowMajor,
}

struct Matrix {
    a: Array,
    n: usize,
    layout: Layout,
}

impl Matrix {
    /// Word index of element (i, j).
    fn idx(&self, i: usize, j: usize) -> usize {
        match self.layout {
            Layout::RowMajor => i * self.n + j,
            Layout::Contiguous => {
                let nb = self.n / B;
                ((i / B) * nb + j / B) * B * B + (i % B) * B + j % B
            }
        }
    }
}

/// A B × B block view: either a block of the matrix or a private copy.
enum Block<'a> {
    Of(&'a Matrix, usize, usize),
    Copy(&'a Array, usize),
}

impl Block<'_> {
    fn get(&self, t: &mut Tracer, pc: u32, i: usize, j: usize) -> f64 {
        match *self {
            Block::Of(m, bi, bj) => m.a.get(t, pc, m.idx(bi * B + i, bj * B + j)),
            Block::Copy(a, off) => a.get(t, pc, off + i * B + j),
        }
    }
}

fn element(i: usize, j: usize, n: usize) -> f64 {
    unit((i * n + j) as u64) + if i == j { n as f64 } else { 0.0 }
}

pub fn run(p: usize, n: usize, layout: Layout, rep: bool) -> Result<Vec<Trace>> {
    if n == 0 || !n.is_multiple_of(B) {
        return Err(Error::input(format!(
            "lu: order {n} is not a positive multiple of {B}"
        )));
    }
    let nb = n / B;
    let (pr, pc) = grid(p);
    let owner = |bi: usize, bj: usize| (bi % pr) * pc + bj % pc;
    let space = Space::default();
    let m = Matrix {
        a: space.array(n * n),
        n,
        layout,
    };
    // Per thread: a diagonal-block copy and copies of the perimeter row and column.
    let bufs: Vec<Array> = (0..if rep { p } else { 0 })
        .map(|_| space.array((2 * nb + 1) * B * B))
        .collect();
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let mine = |bi: usize, bj: usize| owner(bi, bj) == id;
        if rep {
            bufs[id].touch(t, line!()); // private: first touched at home
        }
        for bi in 0..nb {
            for bj in (0..nb).filter(|&bj| mine(bi, bj)) {
                for i in 0..B {
                    for j in 0..B {
                        let (gi, gj) = (bi * B + i, bj * B + j);
                        m.a.set(t, line!(), m.idx(gi, gj), element(gi, gj, n));
                    }
                }
            }
        }
        barrier.wait();
        let copy = |t: &mut Tracer, bi: usize, bj: usize, slot: usize| -> usize {
            let buf = &bufs[id];
            // Row by row, as a wide memcpy: B loads, then B stores.
            let mut row = [0.0; B];
            for i in 0..B {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = m.a.get(t, line!(), m.idx(bi * B + i, bj * B + j));
                }
                for (j, &v) in row.iter().enumerate() {
                    buf.set(t, line!(), slot * B * B + i * B + j, v);
                }
            }
            slot * B * B
        };
        for k in 0..nb {
            if mine(k, k) {
                for c in 0..B {
                    let piv = m.a.get(t, line!(), m.idx(k * B + c, k * B + c));
                    for i in c + 1..B {
                        let ii = m.idx(k * B + i, k * B + c);
                        let l = m.a.get(t, line!(), ii) / piv;
                        t.ops(3);
                        m.a.set(t, line!(), ii, l);
                        for j in c + 1..B {
                            let u = m.a.get(t, line!(), m.idx(k * B + c, k * B + j));
                            let ij = m.idx(k * B + i, k * B + j);
                            let v = m.a.get(t, line!(), ij);
                            t.ops(3);
                            m.a.set(t, line!(), ij, v - l * u);
                        }
                    }
                }
            }
            barrier.wait();
            let needs_diag = (k + 1..nb).any(|x| mine(k, x) || mine(x, k));
            let diag = if rep && needs_diag {
                Block::Copy(&bufs[id], copy(t, k, k, 0))
            } else {
                Block::Of(&m, k, k)
            };
            for x in k + 1..nb {
                if mine(k, x) {
                    // U_kx = L_kk⁻¹ A_kx (forward substitution, unit lower L).
                    for j in 0..B {
                        for i in 1..B {
                            let ij = m.idx(k * B + i, x * B + j);
                            let mut v = m.a.get(t, line!(), ij);
                            for c in 0..i {
                                let l = diag.get(t, line!(), i, c);
                                let u = m.a.get(t, line!(), m.idx(k * B + c, x * B + j));
                                t.ops(3);
                                v -= l * u;
                            }
                            m.a.set(t, line!(), ij, v);
                        }
                    }
                }
                if mine(x, k) {
                    // L_xk = A_xk U_kk⁻¹.
                    for i in 0..B {
                        for j in 0..B {
                            let ij = m.idx(x * B + i, k * B + j);
                            let mut v = m.a.get(t, line!(), ij);
                            for c in 0..j {
                                let l = m.a.get(t, line!(), m.idx(x * B + i, k * B + c));
                                let u = diag.get(t, line!(), c, j);
                                t.ops(3);
                                v -= l * u;
                            }
                            let d = diag.get(t, line!(), j, j);
                            t.ops(3);
                            m.a.set(t, line!(), ij, v / d);
                        }
                    }
                }
            }
            barrier.wait();
            // Interior: A_ij -= L_ik U_kj.
            let mut row_copy = vec![usize::MAX; nb];
            let mut col_copy = vec![usize::MAX; nb];
            for bi in k + 1..nb {
                for bj in (k + 1..nb).filter(|&bj| mine(bi, bj)) {
                    let (l, u) = if rep {
                        if col_copy[bi] == usize::MAX {
                            col_copy[bi] = copy(t, bi, k, 1 + bi);
                        }
                        if row_copy[bj] == usize::MAX {
                            row_copy[bj] = copy(t, k, bj, 1 + nb + bj);
                        }
                        (
                            Block::Copy(&bufs[id], col_copy[bi]),
                            Block::Copy(&bufs[id], row_copy[bj]),
                        )
                    } else {
                        (Block::Of(&m, bi, k), Block::Of(&m, k, bj))
                    };
                    for i in 0..B {
                        for j in 0..B {
                            let ij = m.idx(bi * B + i, bj * B + j);
                            let mut v = m.a.get(t, line!(), ij);
                            for c in 0..B {
                                let x = l.get(t, line!(), i, c);
                                let y = u.get(t, line!(), c, j);
                                t.ops(3);
                                v -= x * y;
                            }
                            m.a.set(t, line!(), ij, v);
                        }
                    }
                }
            }
            barrier.wait();
        }
    });
    // L·U must reconstruct A.
    let at = |i: usize, j: usize| m.a.peek(m.idx(i, j));
    let mut err: f64 = 0.0;
    for i in 0..n {
        for j in 0..n {
            let mut s = if i <= j { at(i, j) } else { 0.0 };
            for c in 0..i.min(j + 1) {
                s += at(i, c) * if c <= j { at(c, j) } else { 0.0 };
            }
            err = err.max((s - element(i, j, n)).abs());
        }
    }
    verify(err < 1e-9 * n as f64, || {
        format!("lu: L·U differs from A by {err}")
    })?;
    Ok(traces)
}

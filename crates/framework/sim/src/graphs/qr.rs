//! Tiled QR factorization (flat tree), as Chameleon, the StarPU-based dense linear
//! algebra library, submits it (`compute/pzgeqrf.c`; the algorithm of Buttari, Langou,
//! Kurzak and Dongarra, "A class of parallel tiled linear algebra algorithms for
//! multicore architectures", Parallel Computing 2009):
//!
//! ```text
//! for k in 0..N:
//!     GEQRT  RW A[k][k], W T[k][k]
//!     for n in k+1..N:
//!         UNMQR  R A[k][k], R T[k][k], RW A[k][n]
//!     for m in k+1..N:
//!         TSQRT  RW A[k][k], RW A[m][k], W T[m][k]
//!         for n in k+1..N:
//!             TSMQR  RW A[k][n], RW A[m][n], R A[m][k], R T[m][k]
//! ```
//!
//! StarPU's own examples have no QR, so neither do Debian's calibrations: a QR graph is
//! timed by models a user brings (a StarPU sampling directory where Chameleon ran,
//! `models = "starpu:DIR:HOST"`), found by the kernel names Chameleon gives its codelets'
//! models (`sgeqrt`, `sunmqr`, `stsqrt`, `stsmqr`; `d...` in double precision) and the
//! footprints StarPU computes for these buffers (b × b tiles, T of ib × b).
//!
//! Assumptions, where Chameleon has settings: the inner block ib is 48 (its default,
//! `CHAMELEON_IB`); the whole tile A[k][k] is one handle, as in Chameleon without its
//! `D` workspace copy, so the UNMQRs of step k run before its first TSQRT (write after
//! read); no priorities (Chameleon sets none in this routine). The flops are LAWN 223's
//! (real arithmetic): GEQRT 4b³/3, UNMQR 2b³, TSQRT 2b³, TSMQR 4b³; in all, 4n³/3 + O(n²b)
//! for n = N·b, the flops of a Householder QR of a square matrix.

use super::Tiled;
use hetsched_core::footprint::{self, Shape};
use hetsched_core::graph::{Data, GraphTask, Mode, TaskGraph};
use hetsched_core::Result;
use std::sync::Arc;

/// Chameleon's default inner block size (`CHAMELEON_IB`): T tiles are ib × b.
pub const INNER_BLOCK: u32 = 48;

/// The number of tasks for `n` tiles a side: N GEQRT, N(N−1)/2 UNMQR and TSQRT each,
/// (N−1)N(2N−1)/6 TSMQR: as many as LU's (one kernel a tile per step and side, one
/// update per trailing tile).
pub fn task_count(n: u128) -> u128 {
    super::lu::task_count(n)
}

/// The kernel `name` in the graph's precision (`sgeqrt`, `dtsmqr`...).
pub fn kernel(p: &Tiled, name: &str) -> String {
    format!("{}{name}", p.precision.letter())
}

/// The graph of a tiled QR factorization: handles `A[x][y]` (`x·N + y`), then the T
/// tiles (`N² + x·N + y`), the tasks in Chameleon's submission order.
pub fn qr(p: &Tiled) -> Result<TaskGraph> {
    p.check("qr", task_count)?;
    let (n, b) = (p.tiles, p.tile);
    let ib = INNER_BLOCK.min(b);
    let a = Shape::Matrix { nx: b, ny: b };
    let t = Shape::Matrix { nx: ib, ny: b };
    let kernel = |name: &str, shapes: &[Shape]| {
        (
            Arc::<str>::from(kernel(p, name)),
            footprint::task(shapes.iter().copied()),
        )
    };
    let geqrt = kernel("geqrt", &[a, t]);
    let unmqr = kernel("unmqr", &[a, t, a]);
    let tsqrt = kernel("tsqrt", &[a, a, t]);
    let tsmqr = kernel("tsmqr", &[a, a, a, t]);
    let b3 = f64::from(b).powi(3);
    let task = |(name, footprint): &(Arc<str>, u64), acc: &[(u32, Mode)], flops: f64| GraphTask {
        flops,
        ..GraphTask::new(name.clone(), *footprint, acc)
    };
    let tile = |x: u32, y: u32| x * n + y;
    let tau = |x: u32, y: u32| n * n + x * n + y;
    let t_bytes = u64::from(ib) * u64::from(b) * p.precision.bytes();
    let mut data = vec![
        Data {
            bytes: p.tile_bytes()
        };
        (n as usize) * (n as usize)
    ];
    data.extend(std::iter::repeat_n(
        Data { bytes: t_bytes },
        (n as usize) * (n as usize),
    ));
    let mut g = TaskGraph {
        data,
        tasks: Vec::with_capacity(task_count(u128::from(n)) as usize),
    };
    use Mode::{R, RW, W};
    for k in 0..n {
        g.tasks.push(task(
            &geqrt,
            &[(tile(k, k), RW), (tau(k, k), W)],
            4.0 * b3 / 3.0,
        ));
        for c in k + 1..n {
            g.tasks.push(task(
                &unmqr,
                &[(tile(k, k), R), (tau(k, k), R), (tile(k, c), RW)],
                2.0 * b3,
            ));
        }
        for m in k + 1..n {
            g.tasks.push(task(
                &tsqrt,
                &[(tile(k, k), RW), (tile(m, k), RW), (tau(m, k), W)],
                2.0 * b3,
            ));
            for c in k + 1..n {
                g.tasks.push(task(
                    &tsmqr,
                    &[
                        (tile(k, c), RW),
                        (tile(m, c), RW),
                        (tile(m, k), R),
                        (tau(m, k), R),
                    ],
                    4.0 * b3,
                ));
            }
        }
    }
    Ok(g)
}

//! Tiled Cholesky factorization (A = L·Lᵀ, lower), as StarPU 1.3's
//! `examples/cholesky/cholesky_implicit.c` (`_cholesky`) submits it:
//!
//! ```text
//! for k in 0..N:
//!     POTRF  chol_model_11  RW A[k][k]
//!     for m in k+1..N:
//!         TRSM  chol_model_21  R A[k][k], RW A[m][k]
//!     for n in k+1..N:
//!         for m in n..N:
//!             GEMM  chol_model_22  R A[m][k], R A[n][k], RW A[m][n]
//! ```
//!
//! (`A[x][y]` is StarPU's `starpu_data_get_sub_data(dataA, 2, x, y)`.) The diagonal
//! update (`m == n`, a SYRK in LAPACK's terms) is the same `cl22` codelet as the others
//! in StarPU's example, so it is a `chol_model_22` task here too, on three buffers (two
//! of them the same tile, read twice). The flops are the example's `STARPU_FLOPS`
//! (`FLOPS_SPOTRF`, `FLOPS_STRSM`, `FLOPS_SGEMM` of its `cholesky.h`), which are what
//! Debian's model files record in their `flops` column.
//!
//! Priorities are the example's where priorities are unbounded (its `unbound_prio`, as
//! under `dmdas`): POTRF 2N − 2k, TRSM 2N − 2k − m, GEMM 2N − 2k − m − n.
//!
//! StarPU's example is single precision only: its models time `float` tiles. A
//! [`Precision::Double`](super::Precision::Double) graph has the same footprints (the
//! footprint does not see the element size) and twice the bytes.

use super::{Kernel, Tiled};
use hetsched_core::graph::{Data, Mode, TaskGraph};
use hetsched_core::Result;

/// The kernels' names (the model symbols `initialize_chol_model` gives them).
pub const POTRF: &str = "chol_model_11";
pub const TRSM: &str = "chol_model_21";
pub const GEMM: &str = "chol_model_22";

/// The number of tasks for `n` tiles a side: N POTRF, N(N−1)/2 TRSM, N(N−1)/2 diagonal
/// and N(N−1)(N−2)/6 other updates.
pub fn task_count(n: u128) -> u128 {
    n + n * (n - 1) / 2 + n * (n - 1) / 2 + n * (n - 1) * n.saturating_sub(2) / 6
}

/// The handle of tile `A[x][y]`, `x >= y` (only the lower triangle is a handle).
fn tile(x: u32, y: u32) -> u32 {
    debug_assert!(x >= y);
    x * (x + 1) / 2 + y
}

/// The graph of a tiled Cholesky factorization: one handle per tile of the lower
/// triangle (`A[x][y]`, `x >= y`, numbered row by row), the tasks in StarPU's
/// submission order.
pub fn cholesky(p: &Tiled) -> Result<TaskGraph> {
    p.check("cholesky", task_count)?;
    let (n, b) = (p.tiles, p.tile);
    let bf = f64::from(b);
    let potrf = Kernel::new(POTRF, b, 1);
    let trsm = Kernel::new(TRSM, b, 2);
    let gemm = Kernel::new(GEMM, b, 3);
    // cholesky.h: FLOPS_SPOTRF(b) = b³/3 + b²/2 + b/6; FLOPS_STRSM(b, b) = b²(b + 1)
    // (the example counts the additions as FMULS_TRMM); FLOPS_SGEMM(b, b, b) = 2b³.
    let potrf_flops = bf * ((bf / 6.0 + 0.5) * bf + 1.0 / 3.0) + bf * (bf / 6.0 * bf - 1.0 / 6.0);
    let trsm_flops = bf * bf * (bf + 1.0);
    let gemm_flops = 2.0 * bf * bf * bf;
    let handles = (n as usize) * (n as usize + 1) / 2;
    let mut g = TaskGraph {
        data: vec![
            Data {
                bytes: p.tile_bytes()
            };
            handles
        ],
        tasks: Vec::with_capacity(task_count(u128::from(n)) as usize),
    };
    for k in 0..n {
        // The example's priorities where they are unbounded (`unbound_prio`, as under
        // dmdas): 2N − 2k, less the tile's row and column.
        let prio = |less: u32| (2 * i64::from(n) - 2 * i64::from(k) - i64::from(less)) as i32;
        g.tasks
            .push(potrf.task(&[(tile(k, k), Mode::RW)], potrf_flops, prio(0)));
        for m in k + 1..n {
            g.tasks.push(trsm.task(
                &[(tile(k, k), Mode::R), (tile(m, k), Mode::RW)],
                trsm_flops,
                prio(m),
            ));
        }
        for nn in k + 1..n {
            for m in nn..n {
                g.tasks.push(gemm.task(
                    &[
                        (tile(m, k), Mode::R),
                        (tile(nn, k), Mode::R),
                        (tile(m, nn), Mode::RW),
                    ],
                    gemm_flops,
                    prio(m + nn),
                ));
            }
        }
    }
    Ok(g)
}

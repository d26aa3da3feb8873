//! Tiled LU factorization without pivoting, as StarPU 1.3's
//! `examples/lu/xlu_implicit.c` (`dw_codelet_facto_v3`, built as `lu_implicit_example_float`
//! and `_double`) submits it:
//!
//! ```text
//! for k in 0..N:
//!     GETRF  lu_model_11  RW A[k][k]
//!     for i in k+1..N:
//!         TRSM  lu_model_12  R A[k][k], RW A[i][k]
//!         TRSM  lu_model_21  R A[k][k], RW A[k][i]
//!     for i in k+1..N:
//!         for j in k+1..N:
//!             GEMM  lu_model_22  R A[k][i], R A[j][k], RW A[j][i]
//! ```
//!
//! (`A[x][y]` is `starpu_data_get_sub_data(dataA, 2, x, y)`.) The kernels are named by
//! the models' symbols, `STARPU_LU_STR(lu_model_11)`: `starpu_slu_lu_model_11` in single
//! precision, `starpu_dlu_lu_model_11` in double. (StarPU's files `..._atlas`, `_goto`
//! and `_openblas` are the same codelets built against another BLAS.) The example gives
//! its tasks no flops; nor does this. Its priorities: `STARPU_MAX_PRIO` (`INT_MAX`
//! under `dmdas`) for GETRF and for the TRSMs and the GEMM next to the diagonal
//! (`i == k + 1`, and `j == k + 1`), the default 0 for the others.

use super::{Kernel, Tiled, MAX_PRIO};
use hetsched_core::graph::{Data, Mode, TaskGraph};
use hetsched_core::Result;

/// The number of tasks for `n` tiles a side: N GETRF, N(N−1) TRSM and
/// (N−1)N(2N−1)/6 GEMM.
pub fn task_count(n: u128) -> u128 {
    n + n * (n - 1) + (n - 1) * n * (2 * n - 1) / 6
}

/// The kernel named `lu_model_<which>` in the graph's precision.
pub fn kernel(p: &Tiled, which: &str) -> String {
    format!("starpu_{}lu_lu_model_{which}", p.precision.letter())
}

/// The graph of a tiled LU factorization: one handle per tile (`A[x][y]` is `x·N + y`),
/// the tasks in StarPU's submission order.
pub fn lu(p: &Tiled) -> Result<TaskGraph> {
    p.check("lu", task_count)?;
    let (n, b) = (p.tiles, p.tile);
    let getrf = Kernel::new(&kernel(p, "11"), b, 1);
    let trsm12 = Kernel::new(&kernel(p, "12"), b, 2);
    let trsm21 = Kernel::new(&kernel(p, "21"), b, 2);
    let gemm = Kernel::new(&kernel(p, "22"), b, 3);
    let tile = |x: u32, y: u32| x * n + y;
    let mut g = TaskGraph {
        data: vec![
            Data {
                bytes: p.tile_bytes()
            };
            (n as usize) * (n as usize)
        ],
        tasks: Vec::with_capacity(task_count(u128::from(n)) as usize),
    };
    // The example's priorities: the maximum for GETRF and for the tasks next to the
    // diagonal, StarPU's default (0) for the others.
    let prio = |max: bool| if max { MAX_PRIO } else { 0 };
    for k in 0..n {
        g.tasks
            .push(getrf.task(&[(tile(k, k), Mode::RW)], 0.0, MAX_PRIO));
        for i in k + 1..n {
            g.tasks.push(trsm12.task(
                &[(tile(k, k), Mode::R), (tile(i, k), Mode::RW)],
                0.0,
                prio(i == k + 1),
            ));
            g.tasks.push(trsm21.task(
                &[(tile(k, k), Mode::R), (tile(k, i), Mode::RW)],
                0.0,
                prio(i == k + 1),
            ));
        }
        for i in k + 1..n {
            for j in k + 1..n {
                g.tasks.push(gemm.task(
                    &[
                        (tile(k, i), Mode::R),
                        (tile(j, k), Mode::R),
                        (tile(j, i), Mode::RW),
                    ],
                    0.0,
                    prio(i == k + 1 && j == k + 1),
                ));
            }
        }
    }
    Ok(g)
}

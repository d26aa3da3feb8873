//! Task graphs with data, in StarPU's terms: a task runs a kernel on data handles, each
//! accessed in a mode (read, write, or both), and the order in which tasks are
//! submitted makes the dependencies (StarPU's sequential consistency, its implicit
//! data dependencies), to which a task may add explicit predecessors.
//!
//! Only the graph and its dependencies are here; a run of one is [`crate::dataflow`].
//!
//! A graph is input (a generator's parameters, later a file), so [`TaskGraph::check`]
//! bounds it: at most [`MAX_TASKS`] tasks and [`MAX_DATA`] handles, at most
//! [`MAX_ACCESSES`] accesses a task, handles of at most [`MAX_BYTES`], at most
//! [`MAX_REFERENCES`] accesses and explicit
//! predecessors in all; every handle an access names exists, and an explicit
//! predecessor is an earlier task (so a graph is acyclic by construction, and task
//! order is a topological order). Nothing here recurses: a graph as deep as it is long
//! costs no stack.

use crate::{Error, Result};
use std::sync::Arc;

/// The most tasks a graph may have (indices are u32).
pub const MAX_TASKS: usize = 1 << 24;

/// The most data handles a graph may have.
pub const MAX_DATA: usize = 1 << 24;

/// The most data accesses one task may make (StarPU's static limit, `STARPU_NMAXBUFS`,
/// is 8 by default; its dynamic handles allow more).
pub const MAX_ACCESSES: usize = 256;

/// The most accesses and explicit predecessors of all tasks together: the derived
/// dependencies are at most twice the accesses plus the explicit ones, so this bounds
/// their memory too (at most 2^28 u32: 1 GiB).
pub const MAX_REFERENCES: usize = 1 << 27;

/// The largest data handle, bytes (a pebibyte: sums of a run's copies stay far from
/// `u64::MAX`).
pub const MAX_BYTES: u64 = 1 << 50;

/// How a task accesses a handle (StarPU's `STARPU_R`, `STARPU_W`, `STARPU_RW`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    R,
    W,
    RW,
}

impl Mode {
    pub fn reads(self) -> bool {
        matches!(self, Mode::R | Mode::RW)
    }

    pub fn writes(self) -> bool {
        matches!(self, Mode::W | Mode::RW)
    }
}

/// One access of a task: a handle (an index into [`TaskGraph::data`]) and its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub handle: u32,
    pub mode: Mode,
}

/// A data handle: what moves between memory nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data {
    pub bytes: u64,
}

/// A task of a graph.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphTask {
    /// The kernel (a StarPU codelet's model symbol, for the generators' tasks).
    pub kernel: Arc<str>,
    /// The performance-model footprint ([`crate::perf_model::Arch::footprint`]; for the
    /// generators' tasks StarPU's, [`crate::footprint`]).
    pub footprint: u64,
    /// The data accesses, in the kernel's buffer order.
    pub accesses: Vec<Access>,
    /// Predecessors besides the implicit ones (StarPU's `starpu_task_declare_deps`):
    /// indices of earlier tasks.
    pub after: Vec<u32>,
    /// The floating-point operations the task does (as StarPU's `STARPU_FLOPS`), 0 if
    /// unknown.
    pub flops: f64,
    /// The application's priority (StarPU's `STARPU_PRIORITY`): higher runs first under
    /// the policies that sort by it (`dmdas`); 0 is StarPU's default.
    pub priority: i32,
}

impl GraphTask {
    /// A task of `kernel` and `footprint` making `accesses` (handle, mode), in buffer
    /// order; no explicit predecessor, no flops, the default priority.
    pub fn new(kernel: Arc<str>, footprint: u64, accesses: &[(u32, Mode)]) -> GraphTask {
        GraphTask {
            kernel,
            footprint,
            accesses: accesses
                .iter()
                .map(|&(handle, mode)| Access { handle, mode })
                .collect(),
            after: Vec::new(),
            flops: 0.0,
            priority: 0,
        }
    }
}

/// Tasks in submission order and the data they access.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskGraph {
    pub data: Vec<Data>,
    pub tasks: Vec<GraphTask>,
}

/// Every task's predecessors, each list ascending and without repeats (compressed
/// rows: task `t`'s are `preds[start[t]..start[t + 1]]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependencies {
    start: Vec<usize>,
    preds: Vec<u32>,
}

impl Dependencies {
    /// Task `task`'s predecessors (panics if there is no such task).
    pub fn of(&self, task: usize) -> &[u32] {
        &self.preds[self.start[task]..self.start[task + 1]]
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of edges.
    pub fn edges(&self) -> usize {
        self.preds.len()
    }

    /// The longest chain of tasks (the critical path counted in tasks; 0 for no task).
    /// Predecessors are earlier tasks, so one pass in task order computes it.
    pub fn critical_path(&self) -> usize {
        let mut depth = vec![0usize; self.len()];
        for t in 0..self.len() {
            depth[t] = 1 + self
                .of(t)
                .iter()
                .map(|&p| depth[p as usize])
                .max()
                .unwrap_or(0);
        }
        depth.into_iter().max().unwrap_or(0)
    }
}

/// Per handle, what later accesses depend on: its last writer and the readers since.
#[derive(Clone, Default)]
struct HandleState {
    last_writer: Option<u32>,
    readers: Vec<u32>,
}

impl TaskGraph {
    /// Checks the bounds and references the module's documentation lists.
    pub fn check(&self) -> Result<()> {
        if self.tasks.len() > MAX_TASKS {
            return Err(Error::input(format!(
                "a task graph has {} tasks; at most {MAX_TASKS}",
                self.tasks.len()
            )));
        }
        if self.data.len() > MAX_DATA {
            return Err(Error::input(format!(
                "a task graph has {} data handles; at most {MAX_DATA}",
                self.data.len()
            )));
        }
        if let Some((h, d)) = self
            .data
            .iter()
            .enumerate()
            .find(|(_, d)| d.bytes > MAX_BYTES)
        {
            return Err(Error::input(format!(
                "data handle {h} has {} bytes; at most 2^50",
                d.bytes
            )));
        }
        let mut references = 0usize;
        for (t, task) in self.tasks.iter().enumerate() {
            if task.accesses.len() > MAX_ACCESSES {
                return Err(Error::input(format!(
                    "task {t} ({}) makes {} data accesses; at most {MAX_ACCESSES}",
                    task.kernel,
                    task.accesses.len()
                )));
            }
            if let Some(a) = task
                .accesses
                .iter()
                .find(|a| a.handle as usize >= self.data.len())
            {
                return Err(Error::input(format!(
                    "task {t} ({}) accesses handle {}; the graph has {} handles",
                    task.kernel,
                    a.handle,
                    self.data.len()
                )));
            }
            if let Some(p) = task.after.iter().find(|&&p| p as usize >= t) {
                return Err(Error::input(format!(
                    "task {t} ({}) comes after task {p}; an explicit predecessor must be \
                     an earlier task",
                    task.kernel
                )));
            }
            if !task.flops.is_finite() || task.flops < 0.0 {
                return Err(Error::input(format!(
                    "task {t} ({}) has {} flops; expected a finite number ≥ 0",
                    task.kernel, task.flops
                )));
            }
            references += task.accesses.len() + task.after.len();
            if references > MAX_REFERENCES {
                return Err(Error::input(format!(
                    "a task graph makes more than {MAX_REFERENCES} data accesses and \
                     explicit dependencies in all"
                )));
            }
        }
        Ok(())
    }

    /// Every task's predecessors: its explicit ones and those its accesses imply in
    /// submission order, as StarPU's sequential consistency: an access that reads
    /// depends on the handle's last writer (read after write); one that writes on the
    /// last writer (write after write) and on every task that read the handle since
    /// (write after read). Two readers of a handle do not depend on each other. A task
    /// that names a handle twice accesses it once, in the union of the modes.
    /// Checks the graph first ([`TaskGraph::check`]).
    pub fn dependencies(&self) -> Result<Dependencies> {
        self.check()?;
        let mut state = vec![HandleState::default(); self.data.len()];
        let mut start = Vec::with_capacity(self.tasks.len() + 1);
        let mut preds = Vec::new();
        start.push(0);
        let mut merged: Vec<(u32, bool)> = Vec::with_capacity(MAX_ACCESSES);
        for (t, task) in self.tasks.iter().enumerate() {
            let t32 = t as u32; // < MAX_TASKS (checked)
                                // The task's handles, each once, writing if any access writes.
            merged.clear();
            merged.extend(task.accesses.iter().map(|a| (a.handle, a.mode.writes())));
            merged.sort_unstable_by_key(|&(h, w)| (h, !w));
            merged.dedup_by_key(|&mut (h, _)| h);
            let first = preds.len();
            preds.extend_from_slice(&task.after);
            for &(h, writes) in &merged {
                let s = &mut state[h as usize];
                preds.extend(s.last_writer);
                if writes {
                    preds.append(&mut s.readers);
                    s.last_writer = Some(t32);
                } else {
                    s.readers.push(t32);
                }
            }
            let mine = &mut preds[first..];
            mine.sort_unstable();
            let kept = dedup_sorted(mine);
            preds.truncate(first + kept);
            start.push(preds.len());
        }
        Ok(Dependencies { start, preds })
    }
}

/// Moves a sorted slice's distinct values to its front; returns how many there are.
fn dedup_sorted(values: &mut [u32]) -> usize {
    let mut kept = 0;
    for i in 0..values.len() {
        if kept == 0 || values[i] != values[kept - 1] {
            values[kept] = values[i];
            kept += 1;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(accesses: &[(u32, Mode)]) -> GraphTask {
        GraphTask::new(Arc::from("k"), 0, accesses)
    }

    fn graph(handles: usize, tasks: Vec<GraphTask>) -> TaskGraph {
        TaskGraph {
            data: vec![Data { bytes: 8 }; handles],
            tasks,
        }
    }

    fn preds(g: &TaskGraph) -> Vec<Vec<u32>> {
        let d = g.dependencies().unwrap();
        (0..d.len()).map(|t| d.of(t).to_vec()).collect()
    }

    use Mode::{R, RW, W};

    #[test]
    fn read_after_write_write_after_read_write_after_write() {
        // 0 writes A; 1 and 2 read A (each after 0, not after each other); 3 writes A
        // (after 0, 1 and 2); 4 writes A (after 3 only); 5 reads A (after 4).
        let g = graph(
            1,
            vec![
                task(&[(0, W)]),
                task(&[(0, R)]),
                task(&[(0, R)]),
                task(&[(0, RW)]),
                task(&[(0, W)]),
                task(&[(0, R)]),
            ],
        );
        assert_eq!(
            preds(&g),
            vec![vec![], vec![0], vec![0], vec![0, 1, 2], vec![3], vec![4]]
        );
    }

    #[test]
    fn readers_of_unwritten_data_share_it_freely() {
        let g = graph(
            2,
            vec![task(&[(0, R)]), task(&[(0, R), (1, R)]), task(&[(1, R)])],
        );
        assert_eq!(preds(&g), vec![Vec::<u32>::new(); 3]);
        // A writer then waits for all of them.
        let mut g = g;
        g.tasks.push(task(&[(0, W), (1, W)]));
        assert_eq!(preds(&g)[3], vec![0, 1, 2]);
    }

    #[test]
    fn handles_are_independent_and_lists_are_deduplicated() {
        // 2 reads A (written by 0) and B (written by 1); 3 writes both: after 0 and 1
        // (the writers) and 2 (the reader), 2 once although reached through two
        // handles.
        let g = graph(
            2,
            vec![
                task(&[(0, W)]),
                task(&[(1, W)]),
                task(&[(0, R), (1, R)]),
                task(&[(0, RW), (1, RW)]),
            ],
        );
        assert_eq!(preds(&g), vec![vec![], vec![], vec![0, 1], vec![0, 1, 2]]);
    }

    #[test]
    fn a_handle_named_twice_is_one_access_in_the_union_of_modes() {
        // Task 1 reads and writes A: after 0; task 2 reads A: after 1 (not after 0).
        let g = graph(
            1,
            vec![task(&[(0, W)]), task(&[(0, R), (0, W)]), task(&[(0, R)])],
        );
        assert_eq!(preds(&g), vec![vec![], vec![0], vec![1]]);
    }

    #[test]
    fn explicit_predecessors_join_the_implicit_ones() {
        let mut g = graph(1, vec![task(&[]), task(&[(0, W)]), task(&[(0, R)])]);
        g.tasks[2].after = vec![0, 1, 0];
        assert_eq!(preds(&g), vec![vec![], vec![], vec![0, 1]]);
    }

    #[test]
    fn critical_path_counts_tasks() {
        let g = graph(
            2,
            vec![
                task(&[(0, W)]),
                task(&[(1, W)]),
                task(&[(0, R), (1, RW)]),
                task(&[(0, R), (1, RW)]),
            ],
        );
        // 2 after 0 and 1; 3 after 0 (A) and 2 (B): the chain 0 (or 1), 2, 3.
        let d = g.dependencies().unwrap();
        assert_eq!(d.critical_path(), 3);
        assert_eq!(d.edges(), 4);
        assert_eq!(Dependencies::default().critical_path(), 0);
    }

    #[test]
    fn a_long_chain_costs_no_stack() {
        let g = graph(1, (0..200_000).map(|_| task(&[(0, RW)])).collect());
        assert_eq!(g.dependencies().unwrap().critical_path(), 200_000);
    }

    #[test]
    fn bad_graphs_are_refused() {
        let msg = |g: &TaskGraph| g.dependencies().unwrap_err().to_string();
        assert!(msg(&graph(1, vec![task(&[(1, R)])])).contains("accesses handle 1"));
        let mut g = graph(1, vec![task(&[]), task(&[])]);
        g.tasks[0].after = vec![1];
        assert!(msg(&g).contains("earlier task"));
        g.tasks[0].after = vec![0];
        assert!(msg(&g).contains("earlier task"));
        let mut g = graph(1, vec![task(&vec![(0, R); MAX_ACCESSES + 1])]);
        assert!(msg(&g).contains("at most 256"));
        g.tasks[0] = task(&[]);
        g.tasks[0].flops = f64::NAN;
        assert!(msg(&g).contains("flops"));
    }
}

//! A task graph declared to the daemon (the `graph` request): its declaration, in parts
//! and bounded, and the state of each of its tasks while it runs. The arbiter owns one
//! ([`crate::arbiter::Arbiter::graph_part`]) and hands the graph to the engine core,
//! which keeps its dependencies and data as the simulator's does
//! ([`hetsched_core::dataflow`]).
//!
//! Why a graph is declared whole rather than each task naming its predecessors: the
//! policies that plan a graph (`heft`) read it whole at its first task, and those that
//! weigh transfers (`dmda`) need to know which task writes what; both engines then run
//! the same [`hetsched_core::dataflow::GraphRun`]. A task of the graph is an ordinary
//! client's `alloc` naming its index: it waits until the task is ready.
//!
//! A declaration is input from a client that may be hostile: its size is bounded
//! ([`MAX_TASKS`], [`MAX_DATA`], [`MAX_REFERENCES`], kernel names of at most
//! [`MAX_KIND`] bytes), each part is checked as it comes, and the graph is checked
//! whole (handles, predecessors, sizes) before it runs.

use crate::arbiter::ClientId;
use crate::client_process::ClientProcess;
use crate::protocol::{GraphTaskInfo, MetaInfo, MAX_KIND};
use hetsched_core::graph::{Access, Data, GraphTask, TaskGraph, MAX_ACCESSES, MAX_BYTES};
use hetsched_core::task::TaskId;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The most tasks of a declared graph (a running graph costs the daemon about 100
/// bytes a task).
pub const MAX_TASKS: usize = 1 << 17;

/// The most data handles of a declared graph.
pub const MAX_DATA: usize = 1 << 18;

/// The most data accesses and explicit predecessors of a declared graph's tasks, all
/// together.
pub const MAX_REFERENCES: usize = 1 << 21;

/// A graph being declared, part by part.
pub struct Declaring {
    pub owner: ClientId,
    pub uid: u32,
    pub graph: TaskGraph,
    references: usize,
    /// Kernel names, each held once.
    kernels: FxHashMap<Box<str>, Arc<str>>,
}

impl Declaring {
    pub fn new(owner: ClientId, uid: u32) -> Declaring {
        Declaring {
            owner,
            uid,
            graph: TaskGraph::default(),
            references: 0,
            kernels: FxHashMap::default(),
        }
    }

    /// Appends a part's handles and tasks; the error names the field and the accepted
    /// range (the part is then not taken).
    pub fn append(&mut self, data: &[u64], tasks: &[GraphTaskInfo]) -> Result<(), String> {
        let handles = self.graph.data.len() + data.len();
        if handles > MAX_DATA {
            return Err(format!("graph data: {handles} handles, at most {MAX_DATA}"));
        }
        let count = self.graph.tasks.len() + tasks.len();
        if count > MAX_TASKS {
            return Err(format!("graph tasks: {count} tasks, at most {MAX_TASKS}"));
        }
        let first = self.graph.tasks.len();
        if let Some((i, b)) = data.iter().enumerate().find(|(_, &b)| b > MAX_BYTES) {
            let h = self.graph.data.len() + i;
            return Err(format!("graph data[{h}]: {b} bytes, accepted 0..=2^50"));
        }
        let mut references = self.references;
        for (i, t) in tasks.iter().enumerate() {
            let index = first + i;
            if t.kernel.is_empty() || t.kernel.len() > MAX_KIND {
                return Err(format!(
                    "graph tasks[{index}].kernel: {} bytes, accepted 1..={MAX_KIND}",
                    t.kernel.len()
                ));
            }
            if t.access.len() > MAX_ACCESSES {
                return Err(format!(
                    "graph tasks[{index}].access: {} accesses, at most {MAX_ACCESSES}",
                    t.access.len()
                ));
            }
            if let Some(&(h, _)) = t.access.iter().find(|(h, _)| *h as usize >= handles) {
                return Err(format!(
                    "graph tasks[{index}].access: handle {h}, accepted 0..{handles} (the handles declared so far)"
                ));
            }
            if let Some(&p) = t.after.iter().find(|&&p| p as usize >= index) {
                return Err(format!(
                    "graph tasks[{index}].after: task {p}, accepted 0..{index} (earlier tasks)"
                ));
            }
            if !(t.flops.is_finite() && t.flops >= 0.0) {
                return Err(format!(
                    "graph tasks[{index}].flops: {}, accepted a finite number ≥ 0",
                    t.flops
                ));
            }
            references += t.access.len() + t.after.len();
            if references > MAX_REFERENCES {
                return Err(format!(
                    "graph tasks[{index}]: more than {MAX_REFERENCES} accesses and predecessors in all"
                ));
            }
        }
        self.references = references;
        self.graph
            .data
            .extend(data.iter().map(|&bytes| Data { bytes }));
        for t in tasks {
            let kernel = match self.kernels.get(t.kernel.as_str()) {
                Some(k) => k.clone(),
                None => {
                    let k: Arc<str> = t.kernel.as_str().into();
                    self.kernels.insert(t.kernel.as_str().into(), k.clone());
                    k
                }
            };
            self.graph.tasks.push(GraphTask {
                kernel,
                footprint: t.footprint,
                accesses: t
                    .access
                    .iter()
                    .map(|&(handle, mode)| Access {
                        handle,
                        mode: mode.into(),
                    })
                    .collect(),
                after: t.after.clone(),
                flops: t.flops,
                priority: t.priority,
            });
        }
        Ok(())
    }
}

/// An `alloc` of a graph task whose predecessors have not all finished: answered when
/// they have.
pub struct Parked {
    pub client: ClientId,
    pub meta: MetaInfo,
    pub uid: u32,
    pub process: Option<ClientProcess>,
}

/// Where a task of a running graph is.
pub enum Slot {
    /// Predecessors to finish; no client asked for it.
    Waiting,
    /// Its predecessors finished; no client asked for it yet.
    Ready,
    /// A client asked for it; its predecessors have not all finished.
    Parked(Box<Parked>),
    /// It reached the engine (queued, running or ended).
    Arrived,
}

/// A graph the daemon runs.
pub struct Running {
    pub owner: ClientId,
    pub uid: u32,
    /// The id of its task of index 0.
    pub first: TaskId,
    pub slots: Vec<Slot>,
    /// Tasks not finished yet.
    pub left: usize,
    /// The client parked on each task index it asked for.
    pub parked: FxHashMap<ClientId, u32>,
}

/// The daemon's graph: being declared, or running.
pub enum LiveGraph {
    Declaring(Declaring),
    Running(Running),
}

impl LiveGraph {
    pub fn owner(&self) -> ClientId {
        match self {
            LiveGraph::Declaring(d) => d.owner,
            LiveGraph::Running(r) => r.owner,
        }
    }

    /// What the daemon is doing with it, for a client that cannot declare one now.
    pub fn describe(&self) -> String {
        match self {
            LiveGraph::Declaring(d) => format!(
                "client {} (uid {}) is declaring a task graph",
                d.owner, d.uid
            ),
            LiveGraph::Running(r) => format!(
                "client {}'s task graph (uid {}) runs, {} of {} tasks left",
                r.owner,
                r.uid,
                r.left,
                r.slots.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AccessMode;

    fn task(kernel: &str, access: &[(u32, AccessMode)], after: &[u32]) -> GraphTaskInfo {
        GraphTaskInfo {
            kernel: kernel.into(),
            footprint: 0,
            access: access.to_vec(),
            after: after.to_vec(),
            priority: 0,
            flops: 0.0,
        }
    }

    #[test]
    fn parts_append_and_bad_ones_are_refused_by_field() {
        let mut d = Declaring::new(7, 1000);
        d.append(&[10, 20], &[task("a", &[(0, AccessMode::W)], &[])])
            .unwrap();
        d.append(
            &[],
            &[task("a", &[(1, AccessMode::Rw), (0, AccessMode::R)], &[0])],
        )
        .unwrap();
        assert_eq!(d.graph.tasks.len(), 2);
        assert!(Arc::ptr_eq(
            &d.graph.tasks[0].kernel,
            &d.graph.tasks[1].kernel
        ));
        assert_eq!(d.graph.dependencies().unwrap().of(1), &[0]);
        let refused = |d: &mut Declaring, data: &[u64], t: GraphTaskInfo| {
            let n = d.graph.tasks.len();
            let e = d.append(data, &[t]).unwrap_err();
            assert_eq!(d.graph.tasks.len(), n, "a refused part is not taken");
            e
        };
        let e = refused(&mut d, &[], task("b", &[(2, AccessMode::R)], &[]));
        assert_eq!(
            e,
            "graph tasks[2].access: handle 2, accepted 0..2 (the handles declared so far)"
        );
        let e = refused(&mut d, &[], task("b", &[], &[2]));
        assert_eq!(
            e,
            "graph tasks[2].after: task 2, accepted 0..2 (earlier tasks)"
        );
        let e = refused(&mut d, &[], task(&"k".repeat(MAX_KIND + 1), &[], &[]));
        assert!(e.starts_with("graph tasks[2].kernel: 257 bytes"), "{e}");
        let e = refused(&mut d, &[1 << 51], task("b", &[], &[]));
        assert!(e.starts_with("graph data[2]:"), "{e}");
        let mut nan = task("b", &[], &[]);
        nan.flops = f64::NAN;
        assert!(refused(&mut d, &[], nan).contains("flops"));
        let many = vec![task("c", &[], &[]); MAX_TASKS - 1];
        assert!(d.append(&[], &many).unwrap_err().contains("at most 131072"));
    }
}

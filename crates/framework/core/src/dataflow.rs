//! A task graph being run: which tasks wait for predecessors, where each data handle has
//! a valid copy, and the transfers that bring copies over the machine's links. The
//! engine core keeps one ([`crate::engine_core::EngineCore::set_graph`]) for a run of a
//! [`TaskGraph`]; runs of independent tasks have none and pay one `Option` test per
//! completion.
//!
//! The task of graph index `i` has the id `first + i` ([`GraphRun::first_id`]: 0 in the
//! simulator; live, the daemon reserves a range of ids when a client declares a graph,
//! beside the ids of independent tasks). It reaches the engine (`arrive`) once its
//! predecessors have completed ([`GraphRun::pop_ready`], in the order tasks become
//! ready, and in task order among those freed by one completion). A task that never
//! completes (rejected by the policy, withdrawn) releases no successor: they are left
//! unfinished, as the run's summary reports.
//!
//! Data, in StarPU's terms (its MSI protocol without the shared-dirty cases):
//! - memory nodes: node 0 is host memory (every NUMA node: a CPU reads host data in
//!   place, and what remote memory costs is the NUMA model's business), then one node
//!   per accelerator, in the machine's order;
//! - every handle starts valid on node 0 alone; a task's reads need a valid copy on its
//!   unit's node, and a completed task's writes leave the unit's node the only valid
//!   one (a write-only access fetches nothing, as StarPU allocates without copying);
//! - a copy between host and device uses the accelerator's link (`latency + bytes /
//!   bandwidth`; a link the machine does not give costs nothing), device to device
//!   goes through the host (two copies, the host's becoming valid too), as StarPU does
//!   without peer links;
//! - each link carries one copy at a time in each direction, first come first served
//!   (a DMA engine per direction, as on PCIe): concurrent copies on one link share its
//!   bandwidth by taking turns, the last of them ending when a fair share would end it;
//!   each copy's end is known when it is issued, so no event re-plans them;
//! - copies are issued when a task is queued on a unit (prefetch, StarPU's default for
//!   its `dm` schedulers) if [`GraphRun::prefetch`] is on, and in any case when it
//!   starts: it computes once its inputs are valid there.
//!
//! Accelerator memory is unbounded here (StarPU evicts least-recently-used copies when
//! a device fills): an assumption every run on a graph states.

use crate::graph::{Dependencies, Mode, TaskGraph};
use crate::machine::Machine;
use crate::policy::UnitId;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// A copy never made (or made invalid by a write elsewhere).
const INVALID: u64 = u64::MAX;

/// The most handle × memory-node entries a run keeps (8 bytes each: 1 GiB).
pub const MAX_COPY_ENTRIES: usize = 1 << 27;

/// The most copies a run logs when asked to ([`GraphRun::keep_copies`]; 40 bytes each:
/// 160 MiB); later ones are counted in [`GraphRun::traffic`] only.
pub const MAX_COPIES_KEPT: usize = 1 << 22;

/// One direction of an accelerator's host link.
#[derive(Clone, Copy, Debug)]
struct Lane {
    /// When the copy last issued on it ends.
    free_ns: u64,
}

/// An accelerator's host link.
#[derive(Clone, Copy, Debug)]
struct Link {
    bytes_per_ns: Option<f64>,
    latency_ns: u64,
    /// Host to device, device to host.
    lanes: [Lane; 2],
}

impl Link {
    fn copy_ns(&self, bytes: u64) -> u64 {
        match self.bytes_per_ns {
            Some(bw) => self
                .latency_ns
                .saturating_add(crate::ns::ceil_u64(bytes as f64 / bw)),
            None => 0,
        }
    }
}

/// What a run moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub copies: u64,
    pub bytes: u64,
}

/// One copy over a link, as issued (kept when [`GraphRun::keep_copies`] is on: for a
/// trace, and for tests that check a schedule's transfers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Transfer {
    pub handle: u32,
    /// Memory nodes (0 host memory, `a + 1` accelerator `a`); one of them is the host.
    pub from: u32,
    pub to: u32,
    pub bytes: u64,
    /// When it occupies its link's lane, ns.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A graph under way (see the module documentation).
pub struct GraphRun {
    graph: Arc<TaskGraph>,
    /// The id of the task of index 0.
    first: u64,
    deps: Dependencies,
    /// Successors, compressed rows: task `t`'s are `succ[succ_start[t]..succ_start[t+1]]`.
    succ_start: Vec<usize>,
    succ: Vec<u32>,
    /// Predecessors not completed yet, per task.
    waiting: Vec<u32>,
    ready: VecDeque<u32>,
    /// Tasks handed out by `pop_ready`.
    released: usize,
    /// Per handle and memory node, from when a copy is valid there (in the future while
    /// it travels), or `INVALID`.
    valid_from: Vec<u64>,
    nodes: usize,
    links: Vec<Link>,
    /// Each unit's memory node.
    unit_node: Vec<u32>,
    /// Per task, the time its last start waited for its inputs (what the engine takes
    /// off its run time before its models learn from it).
    waited_ns: Vec<u64>,
    /// Copies are issued when a task is queued on a unit, not only when it starts.
    pub prefetch: bool,
    pub traffic: Traffic,
    /// Every copy issued, in order, when kept ([`GraphRun::keep_copies`]).
    copies: Option<Vec<Transfer>>,
}

impl GraphRun {
    /// `graph` (checked, its dependencies derived) on `machine`, nothing run yet: the
    /// tasks without predecessors are ready, every handle valid on host memory alone.
    pub fn new(graph: Arc<TaskGraph>, machine: &Machine, prefetch: bool) -> Result<GraphRun> {
        let deps = graph.dependencies()?;
        let n = graph.tasks.len();
        let nodes = 1 + machine.accelerators.len();
        let entries = graph.data.len().saturating_mul(nodes);
        if entries > MAX_COPY_ENTRIES {
            return Err(Error::input(format!(
                "a task graph of {} data handles on a machine of {nodes} memory nodes: at most {MAX_COPY_ENTRIES} handle × node pairs",
                graph.data.len()
            )));
        }
        let mut succ_start = vec![0usize; n + 1];
        let waiting: Vec<u32> = (0..n).map(|t| deps.of(t).len() as u32).collect();
        for t in 0..n {
            for &p in deps.of(t) {
                succ_start[p as usize + 1] += 1;
            }
        }
        for t in 0..n {
            succ_start[t + 1] += succ_start[t];
        }
        let mut fill = succ_start.clone();
        let mut succ = vec![0u32; deps.edges()];
        // In task order, so that each task's successors are ascending.
        for t in 0..n {
            for &p in deps.of(t) {
                succ[fill[p as usize]] = t as u32;
                fill[p as usize] += 1;
            }
        }
        let ready = (0..n as u32)
            .filter(|&t| waiting[t as usize] == 0)
            .collect();
        let mut valid_from = vec![INVALID; entries];
        valid_from.iter_mut().step_by(nodes).for_each(|v| *v = 0);
        let links = machine
            .accelerators
            .iter()
            .map(|a| Link {
                bytes_per_ns: a
                    .link_bandwidth_bytes_per_s
                    .filter(|&b| b > 0.0 && b.is_finite())
                    .map(|b| b * 1e-9),
                latency_ns: crate::ns::ceil_u64(a.link_latency_s.unwrap_or(0.0).max(0.0) * 1e9),
                lanes: [Lane { free_ns: 0 }; 2],
            })
            .collect();
        let unit_node = machine
            .units
            .iter()
            .map(|u| u.accelerator.map_or(0, |a| a + 1))
            .collect();
        Ok(GraphRun {
            graph,
            first: 0,
            deps,
            succ_start,
            succ,
            waiting,
            ready,
            released: 0,
            valid_from,
            nodes,
            links,
            unit_node,
            waited_ns: vec![0; n],
            prefetch,
            traffic: Traffic::default(),
            copies: None,
        })
    }

    /// The same run with the task of index `i` having the id `first + i`.
    pub fn starting_at(mut self, first: u64) -> GraphRun {
        self.first = first;
        self
    }

    /// The id of the task of index 0.
    pub fn first_id(&self) -> u64 {
        self.first
    }

    /// The graph index of task `task`, if it is one of this graph's.
    #[inline]
    pub fn index(&self, task: u64) -> Option<usize> {
        let i = usize::try_from(task.checked_sub(self.first)?).ok()?;
        (i < self.graph.tasks.len()).then_some(i)
    }

    /// The id of the task of graph index `index`.
    #[inline]
    pub fn id(&self, index: u32) -> u64 {
        self.first + u64::from(index)
    }

    /// Keeps every copy issued from now on ([`GraphRun::copies`]), the first
    /// [`MAX_COPIES_KEPT`] of them.
    pub fn keep_copies(&mut self) {
        self.copies.get_or_insert_with(Vec::new);
    }

    /// The copies issued since [`GraphRun::keep_copies`], in the order they were.
    pub fn copies(&self) -> &[Transfer] {
        self.copies.as_deref().unwrap_or(&[])
    }

    pub fn graph(&self) -> &TaskGraph {
        &self.graph
    }

    pub fn dependencies(&self) -> &Dependencies {
        &self.deps
    }

    /// Task `t`'s successors, ascending.
    pub fn successors(&self, t: usize) -> &[u32] {
        &self.succ[self.succ_start[t]..self.succ_start[t + 1]]
    }

    /// The graph index of the next task whose predecessors have all completed, not
    /// handed out before.
    #[inline]
    pub fn pop_ready(&mut self) -> Option<u32> {
        let t = self.ready.pop_front()?;
        self.released += 1;
        Some(t)
    }

    /// Tasks never handed out (their predecessors did not all complete).
    pub fn unreleased(&self) -> usize {
        self.graph.tasks.len() - self.released
    }

    /// The memory node of `unit` (host memory for a unit the machine did not list).
    #[inline]
    pub fn node_of(&self, unit: UnitId) -> usize {
        self.unit_node.get(unit as usize).map_or(0, |&n| n as usize)
    }

    /// The number of memory nodes (host memory, then each accelerator's).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// What copying `bytes` from memory node `from` to `to` takes on idle links, ns (0
    /// on one node; device to device through host memory).
    pub fn copy_ns(&self, bytes: u64, from: usize, to: usize) -> u64 {
        if from == to {
            return 0;
        }
        let hop = |node: usize| match node {
            0 => 0,
            d => self.links[d - 1].copy_ns(bytes),
        };
        hop(from).saturating_add(hop(to))
    }

    /// Whether `handle` has a copy on `node` valid at `now_ns`.
    pub fn valid_on(&self, handle: u32, node: usize, now_ns: u64) -> bool {
        self.valid_from[handle as usize * self.nodes + node] <= now_ns
    }

    fn graph_task(&self, task: u64) -> Option<&crate::graph::GraphTask> {
        self.graph.tasks.get(self.index(task)?)
    }

    /// The handles `task` reads (write-only accesses fetch nothing).
    fn reads(&self, task: u64) -> impl Iterator<Item = u32> + '_ {
        self.graph_task(task)
            .into_iter()
            .flat_map(|t| t.accesses.iter())
            .filter(|a| a.mode.reads())
            .map(|a| a.handle)
    }

    /// What copying `handle`'s missing copy to `node` would take if started now, with the
    /// links idle, ns (0 if valid or under way: then what is left of the way).
    fn estimate_one(&self, handle: u32, node: usize, now_ns: u64) -> u64 {
        let row = handle as usize * self.nodes;
        let here = self.valid_from[row + node];
        if here != INVALID {
            return here.saturating_sub(now_ns);
        }
        let bytes = self.graph.data[handle as usize].bytes;
        let host = self.valid_from[row];
        // To the host first, from the device holding the copy, unless the host has one.
        let up = if host != INVALID {
            host.saturating_sub(now_ns)
        } else {
            (1..self.nodes)
                .filter(|&d| self.valid_from[row + d] != INVALID)
                .map(|d| {
                    self.valid_from[row + d]
                        .saturating_sub(now_ns)
                        .saturating_add(self.links[d - 1].copy_ns(bytes))
                })
                .min()
                .unwrap_or(0)
        };
        match node {
            0 => up,
            d => up.saturating_add(self.links[d - 1].copy_ns(bytes)),
        }
    }

    /// StarPU's `starpu_task_expected_data_transfer_time`: the copies `task` would need on
    /// `unit` if issued now on idle links, summed, ns (0 for a task of no graph).
    pub fn transfer_estimate_ns(&self, task: u64, unit: UnitId, now_ns: u64) -> u64 {
        let node = self.node_of(unit);
        self.reads(task)
            .map(|h| self.estimate_one(h, node, now_ns))
            .fold(0u64, u64::saturating_add)
    }

    /// Issues one copy of `handle` from `from` to `to` (one of them the host), starting
    /// once the source copy is valid and the link's lane is free; returns its end.
    fn copy(&mut self, handle: u32, from: usize, to: usize, now_ns: u64) -> u64 {
        let row = handle as usize * self.nodes;
        let bytes = self.graph.data[handle as usize].bytes;
        let (device, lane) = if to == 0 { (from, 1) } else { (to, 0) };
        let link = &mut self.links[device - 1];
        let start = now_ns
            .max(self.valid_from[row + from])
            .max(link.lanes[lane].free_ns);
        let end = start.saturating_add(link.copy_ns(bytes));
        link.lanes[lane].free_ns = end;
        self.valid_from[row + to] = end;
        self.traffic.copies += 1;
        self.traffic.bytes = self.traffic.bytes.saturating_add(bytes);
        if let Some(log) = self.copies.as_mut().filter(|l| l.len() < MAX_COPIES_KEPT) {
            log.push(Transfer {
                handle,
                from: from as u32,
                to: to as u32,
                bytes,
                start_ns: start,
                end_ns: end,
            });
        }
        end
    }

    /// Makes `handle` valid on `node`, issuing what copies it lacks; returns when it is.
    fn fetch_one(&mut self, handle: u32, node: usize, now_ns: u64) -> u64 {
        let row = handle as usize * self.nodes;
        if self.valid_from[row + node] != INVALID {
            return self.valid_from[row + node];
        }
        if self.valid_from[row] == INVALID {
            // Up from the device whose copy is valid first.
            let from = (1..self.nodes)
                .filter(|&d| self.valid_from[row + d] != INVALID)
                .min_by_key(|&d| self.valid_from[row + d])
                .expect("a handle has a valid copy somewhere");
            self.copy(handle, from, 0, now_ns);
        }
        if node == 0 {
            return self.valid_from[row];
        }
        self.copy(handle, 0, node, now_ns)
    }

    /// Issues the copies `task`'s reads lack on `unit`'s node (a prefetch); returns when
    /// all its inputs are valid there.
    pub fn fetch(&mut self, task: u64, unit: UnitId, now_ns: u64) -> u64 {
        let node = self.node_of(unit);
        let Some(t) = self.graph_task(task) else {
            return now_ns;
        };
        let reads: Vec<u32> = t
            .accesses
            .iter()
            .filter(|a| a.mode.reads())
            .map(|a| a.handle)
            .collect();
        reads
            .into_iter()
            .map(|h| self.fetch_one(h, node, now_ns))
            .fold(now_ns, u64::max)
    }

    /// `task` starts on `unit` now: its inputs are fetched; returns how long it waits for
    /// them (kept for [`GraphRun::waited_ns`]).
    pub fn start(&mut self, task: u64, unit: UnitId, now_ns: u64) -> u64 {
        let wait = self.fetch(task, unit, now_ns) - now_ns;
        if let Some(w) = self.index(task).and_then(|t| self.waited_ns.get_mut(t)) {
            *w = wait;
        }
        wait
    }

    /// How long `task`'s last start waited for its inputs, ns.
    pub fn waited_ns(&self, task: u64) -> u64 {
        self.index(task)
            .and_then(|t| self.waited_ns.get(t))
            .copied()
            .unwrap_or(0)
    }

    /// `task` completed on `unit` now: its writes leave the unit's node the only valid
    /// copy, and its successors whose predecessors have all completed become ready.
    pub fn completed(&mut self, task: u64, unit: UnitId, now_ns: u64) {
        let Some(t) = self.index(task) else {
            return;
        };
        let node = self.node_of(unit);
        let nodes = self.nodes;
        for a in &self.graph.tasks[t].accesses {
            if a.mode == Mode::R {
                continue;
            }
            let row = a.handle as usize * nodes;
            self.valid_from[row..row + nodes].fill(INVALID);
            self.valid_from[row + node] = now_ns;
        }
        for i in self.succ_start[t]..self.succ_start[t + 1] {
            let s = self.succ[i] as usize;
            self.waiting[s] -= 1;
            if self.waiting[s] == 0 {
                self.ready.push_back(s as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Data, GraphTask};
    use crate::machine::{Accelerator, UnitGranularity, UnitType};

    /// One CPU and `gpus` GPUs, each link 1 byte/ns with 1,000 ns of latency.
    fn machine(gpus: usize) -> Machine {
        let mut m = Machine {
            cores: vec![crate::machine::Core {
                os_index: 0,
                package: 0,
                cpus: vec![0],
                cpu_kind: None,
            }],
            pus: vec![crate::machine::Pu {
                os_index: 0,
                core: Some(0),
                package: 0,
                numa_node: Some(0),
                cpu_kind: None,
                capacity: 0,
            }],
            ..Machine::default()
        };
        for i in 0..gpus {
            m.accelerators.push(Accelerator {
                kind: UnitType::Gpu,
                name: format!("cuda{i}"),
                model: None,
                memory_bytes: None,
                link_bandwidth_bytes_per_s: Some(1e9),
                link_latency_s: Some(1e-6),
                relative_speed: None,
                numa_node: Some(0),
                pci_bus_id: None,
                setup_s: None,
                on_host: None,
            });
        }
        m.assign_capacities();
        m.derive_units(UnitGranularity::Pu);
        m
    }

    fn task(accesses: &[(u32, Mode)]) -> GraphTask {
        GraphTask::new(Arc::from("k"), 0, accesses)
    }

    fn run(tasks: Vec<GraphTask>, bytes: &[u64], gpus: usize) -> GraphRun {
        let g = TaskGraph {
            data: bytes.iter().map(|&bytes| Data { bytes }).collect(),
            tasks,
        };
        GraphRun::new(Arc::new(g), &machine(gpus), true).unwrap()
    }

    use Mode::{R, RW, W};

    #[test]
    fn tasks_become_ready_as_their_predecessors_complete() {
        // 0 writes A; 1 and 2 read it; 3 writes it after both.
        let mut g = run(
            vec![
                task(&[(0, W)]),
                task(&[(0, R)]),
                task(&[(0, R)]),
                task(&[(0, RW)]),
            ],
            &[8],
            0,
        );
        assert_eq!(g.pop_ready(), Some(0));
        assert_eq!(g.pop_ready(), None);
        g.completed(0, 0, 10);
        assert_eq!(
            (g.pop_ready(), g.pop_ready(), g.pop_ready()),
            (Some(1), Some(2), None)
        );
        g.completed(2, 0, 20);
        assert_eq!(g.pop_ready(), None);
        assert_eq!(g.unreleased(), 1);
        g.completed(1, 0, 30);
        assert_eq!(g.pop_ready(), Some(3));
        assert_eq!(g.unreleased(), 0);
        assert_eq!(g.successors(0), &[1, 2, 3]);
    }

    #[test]
    fn copies_follow_reads_and_writes_over_the_links() {
        // Units: 0 the CPU, 1 and 2 the GPUs (memory nodes 1 and 2).
        let mut g = run(vec![task(&[(0, RW)]), task(&[(0, R)])], &[4000], 2);
        assert_eq!(g.node_of(0), 0);
        assert_eq!(g.node_of(2), 2);
        // To GPU 0: 1,000 ns latency + 4,000 bytes at 1 byte/ns.
        assert_eq!(g.transfer_estimate_ns(0, 1, 0), 5000);
        assert_eq!(g.transfer_estimate_ns(0, 0, 0), 0);
        assert_eq!(g.start(0, 1, 100), 5000);
        assert!(g.valid_on(0, 1, 5100) && !g.valid_on(0, 1, 5099));
        g.completed(0, 1, 9000);
        // Written on GPU 0: the host copy is gone; GPU 1 needs two copies.
        assert!(!g.valid_on(0, 0, 9000));
        assert_eq!(g.transfer_estimate_ns(1, 2, 9000), 10_000);
        assert_eq!(g.transfer_estimate_ns(1, 0, 9000), 5000);
        assert_eq!(g.start(1, 2, 9000), 10_000);
        // The host copy came back on the way.
        assert!(g.valid_on(0, 0, 14_000));
        assert_eq!(
            g.traffic,
            Traffic {
                copies: 3,
                bytes: 12_000
            }
        );
    }

    #[test]
    fn a_lane_carries_one_copy_at_a_time() {
        // Two tasks read two handles; both go to GPU 0 at time 0: the second copy waits
        // for the first, so its task waits twice as long. The other direction is free.
        let mut g = run(vec![task(&[(0, R)]), task(&[(1, R)])], &[4000, 4000], 1);
        assert_eq!(g.fetch(0, 1, 0), 5000);
        assert_eq!(g.fetch(1, 1, 0), 10_000);
        // Already under way: the estimate is what is left, the fetch its end.
        assert_eq!(g.transfer_estimate_ns(1, 1, 4000), 6000);
        assert_eq!(g.start(1, 1, 4000), 6000);
        assert_eq!(g.waited_ns(1), 6000);
        assert_eq!(g.traffic.copies, 2);
    }

    #[test]
    fn a_graph_starts_at_any_id_and_keeps_its_copies_when_asked() {
        let mut g = run(vec![task(&[(0, RW)]), task(&[(0, R)])], &[4000], 1).starting_at(100);
        g.keep_copies();
        assert_eq!(
            (g.index(99), g.index(100), g.index(101), g.index(102)),
            (None, Some(0), Some(1), None)
        );
        assert_eq!(g.pop_ready().map(|i| g.id(i)), Some(100));
        assert_eq!(g.start(100, 1, 0), 5000);
        // Ids outside the range are no task of this graph.
        g.completed(1, 1, 6000);
        assert_eq!(g.pop_ready(), None);
        g.completed(100, 1, 6000);
        assert_eq!(g.pop_ready(), Some(1));
        assert_eq!(g.start(101, 0, 7000), 5000);
        let copy = |from, to, start_ns| Transfer {
            handle: 0,
            from,
            to,
            bytes: 4000,
            start_ns,
            end_ns: start_ns + 5000,
        };
        assert_eq!(g.copies(), &[copy(0, 1, 0), copy(1, 0, 7000)]);
    }

    #[test]
    fn write_only_access_fetches_nothing() {
        let mut g = run(vec![task(&[(0, W)])], &[4000], 1);
        assert_eq!(g.transfer_estimate_ns(0, 1, 0), 0);
        assert_eq!(g.start(0, 1, 0), 0);
        assert_eq!(g.traffic.copies, 0);
    }
}

//! The I/O model: storage streams between devices behind NUMA nodes and buffers in
//! memory (Akram et al., CAOS 2012), solved for steady-state throughput and cycles per
//! I/O (CPIO).
//!
//! Why a model of its own: the paper's losses do not follow from bandwidths alone.
//! Its server moves at most 4 × 1.6 GB/s of storage traffic over 24 GB/s QPI links and
//! 22 GB/s of memory, so a capacity (fluid) model predicts no loss for remote
//! transfers, yet the paper measures 8 % to 40 %. What a capacity model misses is
//! latency: a device's DMA engine keeps a bounded window of bytes in flight, so its
//! rate is at most `window / latency` of the path to the buffer (Little's law), and
//! that latency grows with distance (crossing the interconnect) and with the load on
//! the memory and the interconnect it crosses (queueing). A stream here is:
//!
//! 1. the **transfer** (DMA) between the device and the *DMA buffer* (the user buffer
//!    with direct I/O, the kernel's buffer otherwise), bounded by the device's share of
//!    bandwidth and by `dma_window / L(device node → buffer node)`;
//! 2. the **copy** kernel buffer → user buffer (buffered I/O only) and the user's
//!    **touch** of the data: CPU work on the thread's node, `cycles/byte ×
//!    L(cpu node → buffer node) / L_local`, i.e. slowed by distance and contention;
//!    one thread per stream overlaps it with the I/O (zmIO does), so the stream's rate
//!    is also at most `clock / cycles-per-byte`;
//! 3. kernel work per request (submission and completion), system time.
//!
//! `L(a → b) = L_local × (distance ratio a→b) / (1 − ρ_mem(b))`, plus, when `a ≠ b`,
//! `(ratio − 1) × L_local / (1 − ρ_link)`: M/M/1 residence-time stretch of the memory
//! of node `b` and of the link, with utilisations ρ from all streams' traffic and any
//! memory-stress threads (each draws `stress_bytes_per_s` from its node), capped at
//! [`MAX_UTILISATION`]. Traffic past a link's bandwidth is scaled down to fit. The
//! solution is a damped fixed point (rates → traffic → latencies → rates).
//!
//! CPIO per 512-byte sector: `user` (touch), `system` (per-request kernel work plus the
//! copy), and `iowait`: the stream's thread waits for the device whenever it is not
//! computing, `(1/rate − cpu s/byte) × clock × 512`.

use hetsched_core::machine::Machine;
use serde::Serialize;

const SECTOR: f64 = 512.0;

/// The model's parameters, each an assumption documented in `docs/akram.md`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IoParams {
    /// Local memory latency seen by DMA and by CPU copies, ns.
    pub mem_latency_ns: f64,
    /// Remote / local latency when the machine has no distance matrix.
    pub remote_ratio: f64,
    /// Bytes a device's DMA engine keeps in flight, shared by its streams.
    pub dma_window_bytes: f64,
    /// Kernel cycles per request (submission, completion, page pinning).
    pub sys_cycles_per_request: f64,
    /// Cycles per byte of the kernel → user copy, local and uncontended.
    pub copy_cycles_per_byte: f64,
    /// Cycles per byte of the user's pass over the data (zmIO's summation).
    pub touch_cycles_per_byte: f64,
    /// Memory bandwidth one stress thread draws from its node, bytes/s.
    pub stress_bytes_per_s: f64,
    pub clock_hz: f64,
}

hetsched_study::assumptions! { "akram";
    /// Local memory latency seen by DMA and by CPU copies, ns: our choice, the Nehalem-EP
    /// order of magnitude; Akram et al. give none.
    pub const MEM_LATENCY_NS: f64 = 100.0;
    /// Remote / local memory latency when the machine has no distance matrix: the paper
    /// gives none.
    pub const REMOTE_RATIO: f64 = 1.5;
    /// Bytes a device's DMA engine keeps in flight, shared by its streams: chosen so a
    /// local lone stream reaches its 1.6 GB/s with a 1.5x margin (250 B / 100 ns =
    /// 2.5 GB/s); the paper gives none. It sets the size of the remote-transfer loss.
    pub const DMA_WINDOW_BYTES: f64 = 250.0;
    /// Kernel cycles per request (submission, completion, page pinning): assumed.
    pub const SYS_CYCLES_PER_REQUEST: f64 = 100_000.0;
    /// Cycles per byte of the kernel-to-user copy, local and uncontended: assumed.
    pub const COPY_CYCLES_PER_BYTE: f64 = 0.5;
    /// Cycles per byte of the user's pass over the data (zmIO's summation): assumed.
    pub const TOUCH_CYCLES_PER_BYTE: f64 = 0.25;
    /// Memory bandwidth one stress thread draws from its node, bytes/s: the paper does
    /// not give mstress's draw.
    pub const STRESS_BYTES_PER_S: f64 = 2.5e9;
    /// CPU clock, Hz: our choice, a Xeon 5520-class nominal clock (the paper names the
    /// server, not its clock).
    pub const CLOCK_HZ: f64 = 2.27e9;
    /// Utilisation at which the model's queueing delay (M/M/1 stretch `1 / (1 − ρ)`) is
    /// capped, a saturated resource: our choice (at most a 10× stretch); the paper gives
    /// no queueing model.
    pub const MAX_UTILISATION: f64 = 0.9;
}

impl Default for IoParams {
    fn default() -> Self {
        IoParams {
            mem_latency_ns: MEM_LATENCY_NS,
            remote_ratio: REMOTE_RATIO,
            dma_window_bytes: DMA_WINDOW_BYTES,
            sys_cycles_per_request: SYS_CYCLES_PER_REQUEST,
            copy_cycles_per_byte: COPY_CYCLES_PER_BYTE,
            touch_cycles_per_byte: TOUCH_CYCLES_PER_BYTE,
            stress_bytes_per_s: STRESS_BYTES_PER_S,
            clock_hz: CLOCK_HZ,
        }
    }
}

/// One I/O stream (a zmIO instance): a thread, its buffers and its device.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stream {
    /// Index in `Machine::io_devices`.
    pub device: usize,
    /// Node of the DMA target: the user buffer (direct I/O) or the kernel's buffer.
    pub dma_node: u32,
    /// Node of the user buffer (equal to `dma_node` with direct I/O).
    pub user_node: u32,
    /// Node of the thread.
    pub cpu_node: u32,
    /// Direct I/O: no kernel → user copy.
    pub direct: bool,
    /// The thread passes over the data after each request.
    pub touch: bool,
    pub request_bytes: f64,
}

/// A stream's steady state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StreamResult {
    pub bytes_per_s: f64,
    pub cpio_user: f64,
    pub cpio_sys: f64,
    pub cpio_iowait: f64,
}

/// The solved system.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Solution {
    pub streams: Vec<StreamResult>,
    /// Memory utilisation per node (index = node OS index).
    pub memory_utilisation: Vec<f64>,
    /// Utilisation of the busiest inter-node link.
    pub link_utilisation: f64,
}

impl Solution {
    pub fn total_bytes_per_s(&self) -> f64 {
        self.streams.iter().map(|s| s.bytes_per_s).sum()
    }
}

/// The machine as the I/O model sees it.
#[derive(Clone, Debug)]
pub struct IoModel {
    pub params: IoParams,
    /// Device bandwidth (bytes/s; infinite if unknown) and NUMA node.
    devices: Vec<(f64, u32)>,
    /// Memory bandwidth per node by OS index (infinite if unknown).
    memory: Vec<f64>,
    /// Distance ratio `[from][to]` by node OS index.
    ratio: Vec<Vec<f64>>,
    /// Link bandwidth between two nodes (infinite if none is given).
    link: Vec<Vec<f64>>,
}

impl IoModel {
    pub fn new(machine: &Machine, params: IoParams) -> IoModel {
        let n = machine
            .numa_nodes
            .iter()
            .map(|x| x.os_index as usize + 1)
            .max()
            .unwrap_or(1);
        let mut memory = vec![f64::INFINITY; n];
        for node in &machine.numa_nodes {
            if let Some(b) = node.bandwidth_bytes_per_s.filter(|&b| b > 0.0) {
                memory[node.os_index as usize] = b;
            }
        }
        // Each node's package, found once (a 64-node machine has 4,096 node pairs).
        let packages: Vec<Option<u32>> = machine
            .numa_nodes
            .iter()
            .map(|node| {
                let cpu = node.cpus.first().copied()?;
                machine
                    .packages
                    .iter()
                    .find(|p| p.cpus.contains(&cpu))
                    .map(|p| p.os_index)
            })
            .collect();
        let mut ratio = vec![vec![1.0; n]; n];
        let mut link = vec![vec![f64::INFINITY; n]; n];
        for (a, &pa) in machine.numa_nodes.iter().zip(&packages) {
            for (b, &pb) in machine.numa_nodes.iter().zip(&packages) {
                let (i, j) = (a.os_index as usize, b.os_index as usize);
                if i == j {
                    continue;
                }
                ratio[i][j] = machine
                    .distances
                    .as_ref()
                    .and_then(|d| d.between(a.os_index, b.os_index))
                    .map_or(params.remote_ratio, |d| d as f64 / 10.0);
                if let Some(l) = machine.links.iter().find(|l| {
                    Some(l.between.0) == pa && Some(l.between.1) == pb
                        || Some(l.between.0) == pb && Some(l.between.1) == pa
                }) {
                    link[i][j] = l.bandwidth_bytes_per_s;
                }
            }
        }
        let devices = machine
            .io_devices
            .iter()
            .map(|d| {
                (
                    d.bandwidth_bytes_per_s
                        .filter(|&b| b > 0.0)
                        .unwrap_or(f64::INFINITY),
                    d.numa_node.unwrap_or(0).min(n as u32 - 1),
                )
            })
            .collect();
        IoModel {
            params,
            devices,
            memory,
            ratio,
            link,
        }
    }

    /// The NUMA node of device `d`.
    pub fn device_node(&self, d: usize) -> u32 {
        self.devices[d].1
    }

    fn node(&self, n: u32) -> usize {
        (n as usize).min(self.memory.len() - 1)
    }

    /// Latency from `a` to memory on `b` under utilisations `mem` and `link`, in units
    /// of the local uncontended latency.
    fn latency(&self, a: u32, b: u32, mem: &[f64], link: &[Vec<f64>]) -> f64 {
        let (i, j) = (self.node(a), self.node(b));
        let queue = |rho: f64| 1.0 / (1.0 - rho.min(MAX_UTILISATION));
        let mut l = queue(mem[j]);
        if i != j {
            l += (self.ratio[i][j] - 1.0) * queue(link[i][j]);
        }
        l
    }

    /// Solves `streams` co-running with one memory-stress thread on each node of
    /// `stress_nodes`.
    pub fn solve(&self, streams: &[Stream], stress_nodes: &[u32]) -> Solution {
        let p = &self.params;
        let n = self.memory.len();
        let mut per_device = vec![0usize; self.devices.len()];
        for s in streams {
            per_device[s.device] += 1;
        }
        let share = |s: &Stream| self.devices[s.device].0 / per_device[s.device] as f64;
        let mut rate: Vec<f64> = streams.iter().map(|s| share(s).min(1e12)).collect();
        let (mut mem, mut link) = (vec![0.0; n], vec![vec![0.0; n]; n]);
        let cpu_cycles_per_byte = |s: &Stream, mem: &[f64], link: &[Vec<f64>]| {
            let copy = if s.direct {
                0.0
            } else {
                p.copy_cycles_per_byte * self.latency(s.cpu_node, s.dma_node, mem, link)
            };
            let touch = if s.touch {
                p.touch_cycles_per_byte * self.latency(s.cpu_node, s.user_node, mem, link)
            } else {
                0.0
            };
            (copy, touch)
        };
        for _ in 0..200 {
            // Traffic of the current rates.
            let mut traffic = vec![0.0; n];
            let mut crossing = vec![vec![0.0; n]; n];
            let mut flow = |from: u32, to: u32, bytes: f64| {
                let (i, j) = (self.node(from), self.node(to));
                traffic[j] += bytes;
                if i != j {
                    crossing[i][j] += bytes;
                    crossing[j][i] += bytes;
                }
            };
            for (s, &r) in streams.iter().zip(&rate) {
                flow(self.device_node(s.device), s.dma_node, r);
                if !s.direct {
                    flow(s.cpu_node, s.dma_node, r);
                    flow(s.cpu_node, s.user_node, r);
                }
                if s.touch {
                    flow(s.cpu_node, s.user_node, r);
                }
            }
            for &node in stress_nodes {
                traffic[self.node(node)] += p.stress_bytes_per_s;
            }
            for i in 0..n {
                mem[i] = traffic[i] / self.memory[i];
                for j in 0..n {
                    link[i][j] = crossing[i][j] / self.link[i][j];
                }
            }
            // Rates the latencies allow.
            for (k, s) in streams.iter().enumerate() {
                let dev = self.device_node(s.device);
                let l_ns = p.mem_latency_ns * self.latency(dev, s.dma_node, &mem, &link);
                let window = p.dma_window_bytes / per_device[s.device] as f64;
                let dma = window / (l_ns * 1e-9);
                let (copy, touch) = cpu_cycles_per_byte(s, &mem, &link);
                let cpu = p.clock_hz / (copy + touch).max(1e-12);
                let mut target = share(s).min(dma).min(cpu);
                // Traffic past a link's bandwidth is scaled down to fit.
                let (i, j) = (self.node(dev), self.node(s.dma_node));
                if i != j && link[i][j] > 1.0 {
                    target = target.min(rate[k] / link[i][j]);
                }
                rate[k] = 0.5 * rate[k] + 0.5 * target;
            }
        }
        let results = streams
            .iter()
            .zip(&rate)
            .map(|(s, &r)| {
                let (copy, touch) = cpu_cycles_per_byte(s, &mem, &link);
                let sys_per_byte = p.sys_cycles_per_request / s.request_bytes + copy;
                let cpu_s_per_byte = (sys_per_byte + touch) / p.clock_hz;
                let wait_s_per_byte = (1.0 / r - cpu_s_per_byte).max(0.0);
                StreamResult {
                    bytes_per_s: r,
                    cpio_user: touch * SECTOR,
                    cpio_sys: sys_per_byte * SECTOR,
                    cpio_iowait: wait_s_per_byte * p.clock_hz * SECTOR,
                }
            })
            .collect();
        Solution {
            streams: results,
            memory_utilisation: mem,
            link_utilisation: link.iter().flatten().copied().fold(0.0, f64::max),
        }
    }

    /// A lone stream's rate on `device` with its thread and buffer on its own node:
    /// the rate at which the engine's I/O factor is 1.
    pub fn local_rate(&self, device: usize) -> f64 {
        let local = Stream::of_task(device, self.device_node(device));
        self.solve(&[local], &[]).total_bytes_per_s()
    }

    /// How much slower a lone stream on `device` runs with its thread and buffer on
    /// `node` than on the device's own node (≥ 1): what the simulator's speed model
    /// charges the I/O part of a task that runs alone.
    pub fn remote_factor(&self, device: usize, node: u32) -> f64 {
        let there = self.solve(&[Stream::of_task(device, node)], &[]);
        (self.local_rate(device) / there.total_bytes_per_s()).max(1.0)
    }
}

impl Stream {
    /// The stream of an engine task's I/O path: direct I/O of 1 MiB requests into a
    /// buffer on its thread's node, the data used by the thread (zmIO with the sum).
    pub fn of_task(device: usize, node: u32) -> Stream {
        Stream {
            device,
            dma_node: node,
            user_node: node,
            cpu_node: node,
            direct: true,
            touch: true,
            request_bytes: 1_048_576.0,
        }
    }
}

/// The I/O tasks running in the simulator's engine, as streams of the model: each
/// unit's I/O task is a stream ([`Stream::of_task`]) on its device with thread and
/// buffer on the unit's node, and whenever the set changes the model is solved again
/// for all of them, so they share the devices' bandwidth, DMA windows, links and
/// memory as the experiment's sweeps do (one model, not two). A task's I/O factor is
/// its device's lone local rate over its stream's rate now.
#[derive(Clone, Debug)]
pub struct IoStreams {
    model: IoModel,
    /// [`IoModel::local_rate`] per device.
    local: Vec<f64>,
    /// The stream of each unit's running I/O task, by unit.
    streams: Vec<Option<Stream>>,
    /// Its I/O factor, by unit (meaningful where `streams` has one).
    factors: Vec<f64>,
    /// Streams running: while none does (a workload without I/O tasks), a unit's
    /// questions are answered without reading its entries, one cache miss less on every
    /// run end and slice.
    running: usize,
}

impl IoStreams {
    pub fn new(machine: &Machine) -> IoStreams {
        let model = IoModel::new(machine, IoParams::default());
        let local = (0..machine.io_devices.len())
            .map(|d| model.local_rate(d))
            .collect();
        let units = machine.units.len();
        IoStreams {
            model,
            local,
            streams: vec![None; units],
            factors: vec![1.0; units],
            running: 0,
        }
    }

    /// The lone-stream factor of `device` on `node` (no other stream running).
    pub fn alone(&self, device: usize, node: u32) -> f64 {
        self.model.remote_factor(device, node)
    }

    /// The I/O factor of the task running on `unit`, if it is a stream.
    #[inline]
    pub fn factor(&self, unit: u32) -> Option<f64> {
        let u = unit as usize;
        if self.running == 0 {
            return None;
        }
        self.streams[u].map(|_| self.factors[u])
    }

    /// The I/O task on `unit` starts a stream on `device` from `node`.
    pub fn start(&mut self, unit: u32, device: usize, node: u32) {
        let stream = &mut self.streams[unit as usize];
        self.running += stream.is_none() as usize;
        *stream = Some(Stream::of_task(device, node));
        self.solve();
    }

    /// The task on `unit` stops; returns whether it was a stream (the others' factors
    /// changed).
    #[inline]
    pub fn stop(&mut self, unit: u32) -> bool {
        if self.running == 0 {
            return false;
        }
        let was = self.streams[unit as usize].take().is_some();
        if was {
            self.running -= 1;
            self.solve();
        }
        was
    }

    fn solve(&mut self) {
        let (units, streams): (Vec<usize>, Vec<Stream>) = self
            .streams
            .iter()
            .enumerate()
            .filter_map(|(u, s)| Some((u, (*s)?)))
            .unzip();
        let solution = self.model.solve(&streams, &[]);
        for ((u, s), r) in units.into_iter().zip(&streams).zip(&solution.streams) {
            self.factors[u] = self.local[s.device] / r.bytes_per_s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::machine::{IoDevice, IoKind, Link, NumaNode, Package};

    /// Two nodes of 11 GB/s, a 24 GB/s link, two 1.6 GB/s devices per node.
    fn server() -> Machine {
        let node = |i: u32| NumaNode {
            os_index: i,
            memory_bytes: 0,
            cpus: vec![i],
            bandwidth_bytes_per_s: Some(11e9),
        };
        let dev = |i: u32| IoDevice {
            kind: IoKind::Block,
            name: format!("d{i}"),
            numa_node: Some(i / 2),
            bandwidth_bytes_per_s: Some(1.6e9),
            pci_bus_id: None,
        };
        Machine {
            packages: (0..2)
                .map(|i| Package {
                    os_index: i,
                    cpus: vec![i],
                    model: None,
                })
                .collect(),
            numa_nodes: vec![node(0), node(1)],
            io_devices: (0..4).map(dev).collect(),
            links: vec![Link {
                between: (0, 1),
                bandwidth_bytes_per_s: 24e9,
                name: None,
            }],
            ..Machine::default()
        }
    }

    fn streams(m: &IoModel, count: usize, remote: bool) -> Vec<Stream> {
        (0..count)
            .map(|i| {
                let device = i % 4;
                let home = m.device_node(device);
                let node = if remote { 1 - home } else { home };
                Stream {
                    device,
                    dma_node: node,
                    user_node: node,
                    cpu_node: node,
                    direct: true,
                    touch: false,
                    request_bytes: 1_048_576.0,
                }
            })
            .collect()
    }

    #[test]
    fn remote_transfers_lose_more_with_more_streams() {
        let m = IoModel::new(&server(), IoParams::default());
        let loss = |k: usize| {
            let local = m.solve(&streams(&m, k, false), &[]);
            let remote = m.solve(&streams(&m, k, true), &[]);
            1.0 - remote.total_bytes_per_s() / local.total_bytes_per_s()
        };
        let (one, eight) = (loss(1), loss(8));
        assert!(one > 0.0, "a remote stream loses nothing: {one}");
        assert!(eight > one, "loss does not grow: {one} -> {eight}");
        // Bounded by the devices: never more than 4 × 1.6 GB/s.
        let local = m.solve(&streams(&m, 8, false), &[]);
        assert!(local.total_bytes_per_s() <= 6.4e9 * (1.0 + 1e-9));
    }

    #[test]
    fn remote_costs_more_cycles_per_sector() {
        let m = IoModel::new(&server(), IoParams::default());
        let local = m.solve(&streams(&m, 4, false), &[]).streams[0];
        let remote = m.solve(&streams(&m, 4, true), &[]).streams[0];
        assert!(remote.cpio_iowait > local.cpio_iowait);
        assert!(remote.cpio_sys >= local.cpio_sys);
    }

    #[test]
    fn memory_stress_slows_local_transfers() {
        let m = IoModel::new(&server(), IoParams::default());
        let s = streams(&m, 8, false);
        let calm = m.solve(&s, &[]).total_bytes_per_s();
        let stressed = m.solve(&s, &[0, 1]).total_bytes_per_s();
        assert!(stressed < calm, "{stressed} vs {calm}");
    }

    #[test]
    fn one_node_has_no_remote_factor() {
        let mut machine = server();
        machine.numa_nodes.truncate(1);
        for d in &mut machine.io_devices {
            d.numa_node = Some(0);
        }
        let m = IoModel::new(&machine, IoParams::default());
        assert_eq!(m.remote_factor(0, 0), 1.0);
        let two = IoModel::new(&server(), IoParams::default());
        assert!(two.remote_factor(0, 1) > 1.0);
        assert_eq!(two.remote_factor(0, 0), 1.0);
    }

    #[test]
    fn a_narrow_link_caps_remote_traffic() {
        let mut machine = server();
        machine.links[0].bandwidth_bytes_per_s = 1e9;
        let m = IoModel::new(&machine, IoParams::default());
        let remote = m.solve(&streams(&m, 4, true), &[]);
        // Two streams cross each way: at most about the link's 1 GB/s in each direction.
        assert!(
            remote.total_bytes_per_s() < 2.6e9,
            "{}",
            remote.total_bytes_per_s()
        );
    }
}

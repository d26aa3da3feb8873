//! The machine model: what a policy can know about the hardware it places work on.
//!
//! One `Machine` describes packages, NUMA nodes (memory, distances), caches, cores and
//! PUs with their CPU kind and capacity, accelerators and I/O devices, whatever source it
//! came from (hwloc live / XML / sysfs dump, a TOML machine file, a preset). The
//! `units` are what a policy places work on: CPU PUs (or cores) and accelerators, each
//! with a stable id (CPUs first in OS-index order, then accelerators in discovery order).
//!
//! CPU sets are lists of PU OS indexes (what `sched_setaffinity` takes).

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Linux's capacity scale: the fastest CPU of a machine has capacity 1024.
pub const CAPACITY_SCALE: u32 = 1024;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Human name (preset name, file name, or the host name of a live machine).
    pub name: String,
    /// Where the description came from, e.g. `hwloc:live`, `hwloc-xml:PATH`, `toml:PATH`.
    pub source: String,
    pub packages: Vec<Package>,
    pub numa_nodes: Vec<NumaNode>,
    /// NUMA distance matrix (relative latency, 10 = local), if the source has one.
    pub distances: Option<Distances>,
    pub caches: Vec<Cache>,
    pub cpu_kinds: Vec<CpuKind>,
    pub cores: Vec<Core>,
    pub pus: Vec<Pu>,
    pub accelerators: Vec<Accelerator>,
    pub io_devices: Vec<IoDevice>,
    /// Links between packages (e.g. QPI), where known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// A 2-D mesh of tiles (tiled NUCA chips), where the machine is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<Mesh>,
    /// What a policy places work on. Derived by [`Machine::derive_units`].
    pub units: Vec<Unit>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Package {
    pub os_index: u32,
    pub cpus: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    pub os_index: u32,
    pub memory_bytes: u64,
    /// PUs local to this node (empty for memory-only nodes, e.g. GPU memory).
    pub cpus: Vec<u32>,
    /// Memory bandwidth of the node in bytes/s, where known (TOML, presets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bytes_per_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distances {
    /// OS indexes of the NUMA nodes, in matrix order.
    pub nodes: Vec<u32>,
    /// `matrix[i][j]`: relative distance from `nodes[i]` to `nodes[j]`.
    pub matrix: Vec<Vec<u64>>,
}

impl Distances {
    /// The distance between two NUMA nodes given by OS index.
    pub fn between(&self, from: u32, to: u32) -> Option<u64> {
        let i = self.nodes.iter().position(|&n| n == from)?;
        let j = self.nodes.iter().position(|&n| n == to)?;
        Some(self.matrix[i][j])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    pub level: u8,
    pub kind: CacheKind,
    pub size_bytes: u64,
    /// Associativity; `None` when unknown, 0 when fully associative.
    pub ways: Option<u32>,
    pub line_bytes: u32,
    /// PUs sharing this cache.
    pub cpus: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuKind {
    /// Index in `cpu_kinds`, ordered from most power-efficient (weakest) to most powerful.
    pub id: u32,
    /// hwloc's efficiency rank (higher = more performant), where known.
    pub efficiency: Option<i32>,
    pub max_mhz: Option<u32>,
    pub base_mhz: Option<u32>,
    /// Available DVFS operating points in MHz (TOML machine files and presets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frequencies_mhz: Vec<u32>,
    /// Vendor core type (`IntelCore`, `IntelAtom`, ...), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_type: Option<String>,
    /// The kernel's own capacity for this kind (`LinuxCapacity`), where the source had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux_capacity: Option<u32>,
    /// Capacity given explicitly by a machine file; wins over every derivation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_override: Option<u32>,
    pub cpus: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Core {
    pub os_index: u32,
    pub package: u32,
    pub cpus: Vec<u32>,
    pub cpu_kind: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pu {
    pub os_index: u32,
    /// Index in `Machine::cores` of this PU's core (core OS indexes repeat across
    /// packages, so they do not identify a core); `None` when the source has no cores.
    pub core: Option<u32>,
    pub package: u32,
    pub numa_node: Option<u32>,
    pub cpu_kind: Option<u32>,
    /// Relative capacity, [`CAPACITY_SCALE`] = the fastest CPU of the machine.
    pub capacity: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitType {
    Cpu,
    /// A CUDA (or other native-API) GPU.
    Gpu,
    OpenCl,
    /// Any other accelerator (co-processor, FPGA).
    CoProcessor,
}

impl UnitType {
    pub const ALL: [UnitType; 4] = [
        UnitType::Cpu,
        UnitType::Gpu,
        UnitType::OpenCl,
        UnitType::CoProcessor,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnitType::Cpu => "cpu",
            UnitType::Gpu => "gpu",
            UnitType::OpenCl => "opencl",
            UnitType::CoProcessor => "coprocessor",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
}

impl std::fmt::Display for UnitType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accelerator {
    #[serde(rename = "type")]
    pub kind: UnitType,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub memory_bytes: Option<u64>,
    /// Host link bandwidth in bytes/s (PCIe), where known.
    pub link_bandwidth_bytes_per_s: Option<f64>,
    /// Host link latency in seconds, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_latency_s: Option<f64>,
    /// Speed relative to one capacity-1024 CPU core for work with no better figure
    /// (a scenario's per-task affinity or rate wins), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_speed: Option<f64>,
    /// NUMA node the device is attached to.
    pub numa_node: Option<u32>,
    /// PCI bus id (`dddd:bb:dd.f`), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// Seconds to set the device up for a task at each grant, before it computes (an
    /// OpenCL runtime that builds its kernel at every `init`, a context created), where
    /// known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_s: Option<f64>,
    /// The device computes on the host's CPUs (PoCL's CPU device): while it computes
    /// the CPUs' tasks slow down, and the busier the CPUs the slower it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_host: Option<OnHost>,
}

/// How a device that computes on the host's CPUs and the CPUs' own tasks slow each other.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OnHost {
    /// A CPU task's speed while the device computes, over its speed alone, in (0, 1].
    pub cpu_share: f64,
    /// The device's speed while every CPU runs a task, over its speed with the CPUs
    /// idle, in (0, 1]; with some of the CPUs busy it is in between, in proportion.
    pub device_share: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoKind {
    Block,
    Network,
    /// InfiniBand / OpenFabrics HCA.
    Fabric,
    /// A storage controller (HBA, RAID, NVMe controller).
    StorageController,
    Dma,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoDevice {
    pub kind: IoKind,
    pub name: String,
    pub numa_node: Option<u32>,
    /// Sustained bandwidth in bytes/s, where known.
    pub bandwidth_bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Package OS indexes at both ends.
    pub between: (u32, u32),
    pub bandwidth_bytes_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A tiled chip: `width × height` tiles, tile `i` at (i % width, i / width), XY routing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mesh {
    pub width: u32,
    pub height: u32,
    pub cycles_per_hop: u32,
    pub flit_bits: u32,
}

/// Whether CPU units are PUs (hardware threads) or whole cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitGranularity {
    #[default]
    Pu,
    Core,
}

/// Something a policy can place work on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Stable id: index in `Machine::units`.
    pub id: u32,
    #[serde(rename = "type")]
    pub kind: UnitType,
    /// PU OS index for CPU units (for core units: the core's first PU); `None` for
    /// accelerators.
    pub os_index: Option<u32>,
    /// PUs to pin to for a CPU unit.
    pub cpus: Vec<u32>,
    pub cpu_kind: Option<u32>,
    /// CPU capacity on the 1024 scale; for accelerators, `relative_speed × 1024` where
    /// known, else 1024.
    pub capacity: u32,
    pub numa_node: Option<u32>,
    /// Index into `Machine::accelerators` for accelerator units.
    pub accelerator: Option<u32>,
    pub name: String,
}

impl Machine {
    /// Seconds to copy `bytes_in` to unit `unit` and `bytes_out` back over its host
    /// link (bytes / bandwidth + latency each way); 0 for a unit without a link (a CPU)
    /// or with an unknown bandwidth.
    pub fn copy_s(&self, unit: u32, bytes_in: u64, bytes_out: u64) -> f64 {
        let Some(acc) = self.units[unit as usize]
            .accelerator
            .and_then(|i| self.accelerators.get(i as usize))
        else {
            return 0.0;
        };
        match acc.link_bandwidth_bytes_per_s {
            Some(bw) if bw > 0.0 => {
                let lat = acc.link_latency_s.unwrap_or(0.0);
                (bytes_in as f64 / bw + lat) + (bytes_out as f64 / bw + lat)
            }
            _ => 0.0,
        }
    }

    /// The accelerator entry of accelerator unit `unit`, made with every figure unknown
    /// where the unit has none (the live machine's device units, found by the daemon
    /// rather than described), so that figures learned later have a place.
    pub fn accelerator_entry(&mut self, unit: usize) -> &mut Accelerator {
        let u = &mut self.units[unit];
        let index = match u.accelerator {
            Some(a) => a as usize,
            None => {
                u.accelerator = Some(self.accelerators.len() as u32);
                self.accelerators.push(Accelerator {
                    kind: u.kind,
                    name: u.name.clone(),
                    model: None,
                    memory_bytes: None,
                    link_bandwidth_bytes_per_s: None,
                    link_latency_s: None,
                    relative_speed: None,
                    numa_node: None,
                    pci_bus_id: None,
                    setup_s: None,
                    on_host: None,
                });
                self.accelerators.len() - 1
            }
        };
        &mut self.accelerators[index]
    }

    pub fn pu(&self, os_index: u32) -> Option<&Pu> {
        self.pus.iter().find(|p| p.os_index == os_index)
    }

    /// Sets the capacity of the CPU `os_index` and of every CPU unit made of it alone: what
    /// a machine's CPU is when something the source cannot see slows it (a real-time load
    /// of `hetsched slow-cpu`, a frequency cap). Refuses a CPU the machine lacks or a
    /// capacity outside 1..=[`CAPACITY_SCALE`], naming the value and the range.
    pub fn set_cpu_capacity(&mut self, os_index: u32, capacity: u32) -> Result<()> {
        if !(1..=CAPACITY_SCALE).contains(&capacity) {
            return Err(Error::input(format!(
                "capacity {capacity} of CPU {os_index}: must be in [1, {CAPACITY_SCALE}]"
            )));
        }
        let pu = self
            .pus
            .iter_mut()
            .find(|p| p.os_index == os_index)
            .ok_or_else(|| Error::input(format!("CPU {os_index}: the machine has no such CPU")))?;
        pu.capacity = capacity;
        for u in &mut self.units {
            if u.kind == UnitType::Cpu && u.cpus == [os_index] {
                u.capacity = capacity;
            }
        }
        Ok(())
    }

    pub fn numa_node(&self, os_index: u32) -> Option<&NumaNode> {
        self.numa_nodes.iter().find(|n| n.os_index == os_index)
    }

    /// Caches of one level (data and unified ones; instruction caches excluded).
    pub fn data_caches(&self, level: u8) -> impl Iterator<Item = &Cache> {
        self.caches
            .iter()
            .filter(move |c| c.level == level && c.kind != CacheKind::Instruction)
    }

    /// The capacity of each CPU kind, by kind id (see `docs/machine-model.md`):
    /// an explicit override, else the kernel's `LinuxCapacity`, else max (or base)
    /// frequency, else the efficiency rank; scaled so that the fastest kind is 1024.
    pub fn kind_capacities(&self) -> Vec<u32> {
        let n = self.cpu_kinds.len();
        if n == 0 {
            return Vec::new();
        }
        let scaled = |raw: &[f64]| -> Vec<u32> {
            let top = raw.iter().cloned().fold(f64::MIN, f64::max);
            raw.iter()
                .map(|r| ((r / top) * CAPACITY_SCALE as f64).round().max(1.0) as u32)
                .collect()
        };
        let raw: Vec<f64> = if self.cpu_kinds.iter().all(|k| k.linux_capacity.is_some()) {
            self.cpu_kinds
                .iter()
                .map(|k| k.linux_capacity.unwrap() as f64)
                .collect()
        } else if self
            .cpu_kinds
            .iter()
            .all(|k| k.max_mhz.or(k.base_mhz).is_some())
        {
            self.cpu_kinds
                .iter()
                .map(|k| k.max_mhz.or(k.base_mhz).unwrap() as f64)
                .collect()
        } else {
            // Kinds are ordered by efficiency rank: space them evenly.
            (0..n).map(|i| (i + 1) as f64).collect()
        };
        let mut caps = scaled(&raw);
        for (cap, kind) in caps.iter_mut().zip(&self.cpu_kinds) {
            if let Some(c) = kind.capacity_override {
                *cap = c;
            }
        }
        caps
    }

    /// Fills in each PU's capacity from its CPU kind (1024 without kinds).
    pub fn assign_capacities(&mut self) {
        let caps = self.kind_capacities();
        for pu in &mut self.pus {
            pu.capacity = pu
                .cpu_kind
                .and_then(|k| caps.get(k as usize).copied())
                .unwrap_or(CAPACITY_SCALE);
        }
    }

    /// Rebuilds `units`: CPU units (PUs or cores) in OS-index order, then accelerators.
    pub fn derive_units(&mut self, granularity: UnitGranularity) {
        let mut units = Vec::new();
        match granularity {
            UnitGranularity::Pu => {
                let mut pus: Vec<&Pu> = self.pus.iter().collect();
                pus.sort_by_key(|p| p.os_index);
                for pu in pus {
                    units.push(Unit {
                        id: units.len() as u32,
                        kind: UnitType::Cpu,
                        os_index: Some(pu.os_index),
                        cpus: vec![pu.os_index],
                        cpu_kind: pu.cpu_kind,
                        capacity: pu.capacity,
                        numa_node: pu.numa_node,
                        accelerator: None,
                        name: format!("cpu{}", pu.os_index),
                    });
                }
            }
            UnitGranularity::Core => {
                let mut cores: Vec<&Core> = self.cores.iter().collect();
                cores.sort_by_key(|c| c.cpus.first().copied().unwrap_or(u32::MAX));
                for (i, core) in cores.into_iter().enumerate() {
                    let first = core.cpus.first().and_then(|&c| self.pu(c));
                    units.push(Unit {
                        id: units.len() as u32,
                        kind: UnitType::Cpu,
                        os_index: core.cpus.first().copied(),
                        cpus: core.cpus.clone(),
                        cpu_kind: core.cpu_kind,
                        capacity: first.map_or(CAPACITY_SCALE, |p| p.capacity),
                        numa_node: first.and_then(|p| p.numa_node),
                        accelerator: None,
                        name: format!("core{i}"),
                    });
                }
            }
        }
        for (i, acc) in self.accelerators.iter().enumerate() {
            units.push(Unit {
                id: units.len() as u32,
                kind: acc.kind,
                os_index: None,
                cpus: Vec::new(),
                cpu_kind: None,
                capacity: acc.relative_speed.map_or(CAPACITY_SCALE, |s| {
                    (s * CAPACITY_SCALE as f64).round() as u32
                }),
                numa_node: acc.numa_node,
                accelerator: Some(i as u32),
                name: acc.name.clone(),
            });
        }
        self.units = units;
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)] // tests build machines field by field
mod tests {
    use super::*;

    fn kind(id: u32, max: Option<u32>, linux: Option<u32>) -> CpuKind {
        CpuKind {
            id,
            efficiency: Some(id as i32),
            max_mhz: max,
            base_mhz: None,
            frequencies_mhz: vec![],
            core_type: None,
            linux_capacity: linux,
            capacity_override: None,
            cpus: vec![id],
        }
    }

    #[test]
    fn capacity_prefers_linux_capacity_then_frequency_then_rank() {
        let mut m = Machine::default();
        m.cpu_kinds = vec![
            kind(0, Some(3900), Some(234)),
            kind(1, Some(5000), Some(1025)),
        ];
        assert_eq!(m.kind_capacities(), vec![234, 1024]);
        m.cpu_kinds = vec![kind(0, Some(3900), None), kind(1, Some(5000), None)];
        assert_eq!(m.kind_capacities(), vec![799, 1024]);
        m.cpu_kinds = vec![kind(0, None, None), kind(1, Some(5000), None)];
        assert_eq!(m.kind_capacities(), vec![512, 1024]);
        m.cpu_kinds[0].capacity_override = Some(300);
        assert_eq!(m.kind_capacities(), vec![300, 1024]);
    }

    #[test]
    fn a_cpus_capacity_is_set_on_it_and_on_its_unit_only() {
        let mut m = Machine::default();
        m.pus = (0..2)
            .map(|i| Pu {
                os_index: i,
                core: None,
                package: 0,
                numa_node: Some(0),
                cpu_kind: None,
                capacity: 0,
            })
            .collect();
        m.assign_capacities();
        m.derive_units(UnitGranularity::Pu);
        m.set_cpu_capacity(1, 512).unwrap();
        let caps: Vec<_> = m.units.iter().map(|u| u.capacity).collect();
        assert_eq!(caps, [1024, 512]);
        assert_eq!(m.pu(1).unwrap().capacity, 512);
        let e = m.set_cpu_capacity(2, 512).unwrap_err().to_string();
        assert!(e.contains("CPU 2: the machine has no such CPU"), "{e}");
        let e = m.set_cpu_capacity(0, 0).unwrap_err().to_string();
        assert!(
            e.contains("capacity 0 of CPU 0: must be in [1, 1024]"),
            "{e}"
        );
        assert!(m.set_cpu_capacity(0, 1025).is_err());
        assert_eq!(m.units[0].capacity, 1024);
    }

    #[test]
    fn units_are_cpus_then_accelerators_with_stable_ids() {
        let mut m = Machine::default();
        m.cores = vec![Core {
            os_index: 0,
            package: 0,
            cpus: vec![0, 1],
            cpu_kind: None,
        }];
        m.pus = [1, 0]
            .iter()
            .map(|&i| Pu {
                os_index: i,
                core: Some(0),
                package: 0,
                numa_node: Some(0),
                cpu_kind: None,
                capacity: 0,
            })
            .collect();
        m.accelerators = vec![Accelerator {
            kind: UnitType::Gpu,
            name: "cuda0".into(),
            model: None,
            memory_bytes: None,
            link_bandwidth_bytes_per_s: None,
            link_latency_s: None,
            relative_speed: Some(2.0),
            numa_node: Some(0),
            pci_bus_id: None,
            setup_s: None,
            on_host: None,
        }];
        m.assign_capacities();
        m.derive_units(UnitGranularity::Pu);
        let ids: Vec<_> = m
            .units
            .iter()
            .map(|u| (u.id, u.kind, u.os_index, u.capacity))
            .collect();
        assert_eq!(
            ids,
            vec![
                (0, UnitType::Cpu, Some(0), 1024),
                (1, UnitType::Cpu, Some(1), 1024),
                (2, UnitType::Gpu, None, 2048)
            ]
        );
        m.derive_units(UnitGranularity::Core);
        assert_eq!(m.units.len(), 2);
        assert_eq!(m.units[0].cpus, vec![0, 1]);
    }
}

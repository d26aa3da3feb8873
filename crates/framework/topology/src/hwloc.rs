//! Machine discovery through hwloc: the live system, an XML export, or a dumped sysfs
//! tree (`HWLOC_FSROOT`). Everything hwloc can answer comes from hwloc.
//!
//! A file reaches libhwloc only in a forked child (the `isolate` module says how):
//! hwloc 2.9 crashes or hangs on some malformed inputs, and that must not take the
//! command, the daemon or Python down. The live machine is loaded in-process.

use crate::isolate::Forked;
pub use crate::isolate::Limits;
use hetsched_core::machine::{
    Accelerator, Cache, CacheKind, Core, CpuKind, Distances, IoDevice, IoKind, Machine, NumaNode,
    Package, Pu, UnitType,
};
use hetsched_core::{Error, Result};
use hwlocality::object::attributes::{CacheAssociativity, ObjectAttributes};
use hwlocality::object::types::{CacheType, OSDeviceType, ObjectType};
use hwlocality::object::TopologyObject;
use hwlocality::topology::builder::{TopologyBuilder, TypeFilter};
use hwlocality::Topology;
use std::path::Path;
use std::sync::Mutex;

/// Held by every hwloc load of this crate, and across the fork of a child that loads.
/// hwloc reads `HWLOC_FSROOT` and a few debug variables from the environment while it
/// loads; there is no API for them. Loads that set them do so under this lock and
/// restore the previous values afterwards (a child inherits them at the fork). And a
/// child forked while another thread is inside hwloc could find hwloc's own locks held.
static HWLOC_LOCK: Mutex<()> = Mutex::new(());

/// Where hwloc reads the machine from.
pub enum HwlocInput<'a> {
    Live,
    Xml(&'a Path),
    /// A directory holding an extracted sysfs/procfs dump, with extra environment.
    SysfsRoot {
        root: &'a Path,
        env: &'a [(String, String)],
    },
}

/// Loads a topology through hwloc and converts it into a [`Machine`] (units not derived).
/// `origin` names the input in errors (a path, or "live"). A file is loaded in a child
/// process within [`Limits::DEFAULT`].
pub fn load(input: HwlocInput<'_>, name: &str, origin: &str) -> Result<Machine> {
    match input {
        HwlocInput::Live => load_in_process(input, name, origin),
        _ => load_isolated(input, name, origin, &Limits::DEFAULT),
    }
}

/// [`load`] in a forked child within `limits`: a crash, a hang or an oversized result
/// of hwloc's is an input error naming `origin`.
pub fn load_isolated(
    input: HwlocInput<'_>,
    name: &str,
    origin: &str,
    limits: &Limits,
) -> Result<Machine> {
    let child = {
        let _guard = HWLOC_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // The environment is set in the child, where no other thread reads it: setting
        // it here would race with `getenv` in the parent's other threads (Python's).
        Forked::spawn(limits, || {
            for (k, v) in env_for(&input) {
                std::env::set_var(k, v);
            }
            load_here(&input, name, origin)
        })?
    };
    child.reply(origin)
}

/// [`load`] in this process. A malformed file can crash it: for the live machine, and
/// to compare with [`load_isolated`].
pub fn load_in_process(input: HwlocInput<'_>, name: &str, origin: &str) -> Result<Machine> {
    let _guard = HWLOC_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    with_env(&input, || load_here(&input, name, origin))
}

/// Loads and converts; the caller holds [`HWLOC_LOCK`] and has set the environment.
fn load_here(input: &HwlocInput<'_>, name: &str, origin: &str) -> Result<Machine> {
    let topology = build(input, origin)?;
    let source = match input {
        HwlocInput::Live => "hwloc:live".to_string(),
        HwlocInput::Xml(_) => format!("hwloc-xml:{origin}"),
        HwlocInput::SysfsRoot { .. } => format!("hwloc-sysfs:{origin}"),
    };
    Ok(convert(&topology, name, &source))
}

/// Runs `f` with the environment hwloc needs for `input` (the caller holds
/// [`HWLOC_LOCK`]), then restores the previous values.
fn with_env<T>(input: &HwlocInput<'_>, f: impl FnOnce() -> T) -> T {
    let vars = env_for(input);
    let saved: Vec<(String, Option<std::ffi::OsString>)> = vars
        .iter()
        .map(|(k, _)| (k.clone(), std::env::var_os(k)))
        .collect();
    for (k, v) in &vars {
        std::env::set_var(k, v);
    }
    let result = f();
    for (k, v) in saved {
        match v {
            Some(v) => std::env::set_var(&k, v),
            None => std::env::remove_var(&k),
        }
    }
    result
}

/// The environment hwloc reads for `input`: none for a live machine or an XML file.
fn env_for(input: &HwlocInput<'_>) -> Vec<(String, String)> {
    let HwlocInput::SysfsRoot { root, env } = input else {
        return Vec::new();
    };
    // The x86 backend would mix in the CPUID of the machine we run on. Blacklisting it
    // through the API alone was seen not to take effect with libhwloc 2.9, so the
    // environment says it too.
    let mut vars: Vec<(String, String)> = vec![
        ("HWLOC_FSROOT".into(), root.display().to_string()),
        ("HWLOC_COMPONENTS".into(), "-x86".into()),
    ];
    vars.extend(env.iter().cloned());
    vars
}

fn hwloc_err(source: &str, what: impl std::fmt::Display) -> Error {
    Error::runtime(format!(
        "{source}: hwloc could not load the topology: {what}"
    ))
}

fn builder(source: &str) -> Result<TopologyBuilder> {
    let b = Topology::builder();
    // hwloc drops instruction caches and most I/O objects by default; keep them.
    b.with_io_type_filter(TypeFilter::KeepImportant)
        .map_err(|e| hwloc_err(source, e))?
        .with_cpu_icache_type_filter(TypeFilter::KeepAll)
        .map_err(|e| hwloc_err(source, e))
}

fn build(input: &HwlocInput<'_>, source: &str) -> Result<Topology> {
    match input {
        HwlocInput::Live => builder(source)?.build().map_err(|e| hwloc_err(source, e)),
        HwlocInput::Xml(path) => builder(source)?
            .from_xml_file(path)
            .map_err(|e| Error::input(format!("{source}: not a loadable hwloc XML file: {e}")))?
            .build()
            .map_err(|e| Error::input(format!("{source}: hwloc rejected the XML: {e}"))),
        HwlocInput::SysfsRoot { .. } => builder(source)?
            .without_component("x86")
            .map_err(|e| hwloc_err(source, e))?
            .build()
            .map_err(|e| hwloc_err(source, e)),
    }
}

fn cpus_of(obj: &TopologyObject) -> Vec<u32> {
    obj.cpuset()
        .map(|s| s.iter_set().map(|i| usize::from(i) as u32).collect())
        .unwrap_or_default()
}

fn info(obj: &TopologyObject, key: &str) -> Option<String> {
    obj.info(key).map(|v| v.to_string_lossy().into_owned())
}

/// The NUMA node (OS index) local to an object: the lowest OS index of its nodeset,
/// looking through I/O ancestors to the first normal one.
fn numa_of(obj: &TopologyObject) -> Option<u32> {
    let obj = if obj.object_type().is_io() {
        obj.first_non_io_ancestor()?
    } else {
        obj
    };
    obj.nodeset()
        .and_then(|s| s.iter_set().next())
        .map(|i| usize::from(i) as u32)
}

fn pci_bus_id(obj: &TopologyObject) -> Option<String> {
    let pci = std::iter::once(obj)
        .chain(obj.ancestors())
        .find(|o| o.object_type() == ObjectType::PCIDevice)?;
    match pci.attributes()? {
        ObjectAttributes::PCIDevice(a) => Some(format!(
            "{:04x}:{:02x}:{:02x}.{:x}",
            a.domain(),
            a.bus_id(),
            a.bus_device(),
            a.function()
        )),
        _ => None,
    }
}

/// PCIe link bandwidth in bytes/s of the PCI device above `obj`, where hwloc knows it.
fn pci_link_bandwidth(obj: &TopologyObject) -> Option<f64> {
    let pci = std::iter::once(obj)
        .chain(obj.ancestors())
        .find(|o| o.object_type() == ObjectType::PCIDevice)?;
    match pci.attributes()? {
        // hwloc reports GB/s, parsed from an XML with strtof: "inf" or "nan" is unknown.
        ObjectAttributes::PCIDevice(a) if a.link_speed().is_finite() && a.link_speed() > 0.0 => {
            Some(a.link_speed() as f64 * 1e9)
        }
        _ => None,
    }
}

fn convert(topo: &Topology, name: &str, source: &str) -> Machine {
    let mut m = Machine {
        name: name.to_string(),
        source: source.to_string(),
        ..Machine::default()
    };

    for pkg in topo.objects_with_type(ObjectType::Package) {
        m.packages.push(Package {
            os_index: pkg.os_index().unwrap_or(pkg.logical_index()) as u32,
            cpus: cpus_of(pkg),
            model: info(pkg, "CPUModel"),
        });
    }

    for node in topo.objects_with_type(ObjectType::NUMANode) {
        let memory_bytes = match node.attributes() {
            Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |v| v.get()),
            _ => 0,
        };
        m.numa_nodes.push(NumaNode {
            os_index: node.os_index().unwrap_or(node.logical_index()) as u32,
            memory_bytes,
            cpus: cpus_of(node),
            bandwidth_bytes_per_s: None,
        });
    }

    m.distances = numa_distances(topo);

    for obj in topo
        .objects_with_type(ObjectType::L1Cache)
        .chain(topo.objects_with_type(ObjectType::L2Cache))
        .chain(topo.objects_with_type(ObjectType::L3Cache))
        .chain(topo.objects_with_type(ObjectType::L4Cache))
        .chain(topo.objects_with_type(ObjectType::L5Cache))
        .chain(topo.objects_with_type(ObjectType::L1ICache))
        .chain(topo.objects_with_type(ObjectType::L2ICache))
        .chain(topo.objects_with_type(ObjectType::L3ICache))
    {
        if let Some(ObjectAttributes::Cache(a)) = obj.attributes() {
            m.caches.push(Cache {
                level: a.depth() as u8,
                kind: match a.cache_type() {
                    CacheType::Data => CacheKind::Data,
                    CacheType::Instruction => CacheKind::Instruction,
                    _ => CacheKind::Unified,
                },
                size_bytes: a.size().map_or(0, |s| s.get()),
                ways: match a.associativity() {
                    CacheAssociativity::Ways(n) => Some(n.get() as u32),
                    CacheAssociativity::Full => Some(0),
                    CacheAssociativity::Unknown => None,
                },
                line_bytes: a.line_size().map_or(0, |l| l.get() as u32),
                cpus: cpus_of(obj),
            });
        }
    }

    if let Ok(kinds) = topo.cpu_kinds() {
        for (id, k) in kinds.enumerate() {
            let get = |key: &str| {
                k.infos
                    .iter()
                    .find(|i| i.name().to_bytes() == key.as_bytes())
                    .map(|i| i.value().to_string_lossy().into_owned())
            };
            let num = |key: &str| get(key).and_then(|v| v.trim().parse::<u32>().ok());
            m.cpu_kinds.push(CpuKind {
                id: id as u32,
                efficiency: k.efficiency.map(|e| e as i32),
                max_mhz: num("FrequencyMaxMHz"),
                base_mhz: num("FrequencyBaseMHz"),
                frequencies_mhz: Vec::new(),
                core_type: get("CoreType"),
                linux_capacity: num("LinuxCapacity"),
                capacity_override: None,
                cpus: k.cpuset.iter_set().map(|i| usize::from(i) as u32).collect(),
            });
        }
    }
    let kind_of = |pu: u32| {
        m.cpu_kinds
            .iter()
            .find(|k| k.cpus.contains(&pu))
            .map(|k| k.id)
    };

    let mut cores = Vec::new();
    for core in topo.objects_with_type(ObjectType::Core) {
        let cpus = cpus_of(core);
        let package = core.first_ancestor_with_type(ObjectType::Package);
        cores.push(Core {
            os_index: core.os_index().unwrap_or(core.logical_index()) as u32,
            package: package.and_then(|p| p.os_index()).unwrap_or(0) as u32,
            cpu_kind: cpus.first().and_then(|&c| kind_of(c)),
            cpus,
        });
    }
    let mut pus = Vec::new();
    for pu in topo.objects_with_type(ObjectType::PU) {
        let os_index = pu.os_index().unwrap_or(pu.logical_index()) as u32;
        let core = pu.first_ancestor_with_type(ObjectType::Core);
        let package = pu.first_ancestor_with_type(ObjectType::Package);
        pus.push(Pu {
            os_index,
            core: core.map(|c| c.logical_index() as u32),
            package: package.and_then(|p| p.os_index()).unwrap_or(0) as u32,
            numa_node: numa_of(pu),
            cpu_kind: kind_of(os_index),
            capacity: 0,
        });
    }
    m.cores = cores;
    m.pus = pus;

    collect_devices(topo, &mut m);
    m.assign_capacities();
    m
}

/// The NUMA latency matrix, preferring one measured as latency over other kinds.
fn numa_distances(topo: &Topology) -> Option<Distances> {
    let all = topo.distances(None).ok()?;
    let numa: Vec<_> = all
        .iter()
        .filter(|d| {
            d.objects()
                .all(|o| o.is_some_and(|o| o.object_type() == ObjectType::NUMANode))
        })
        .collect();
    let pick = numa
        .iter()
        .find(|d| {
            d.kind()
                .contains(hwlocality::object::distance::DistancesKind::MEANS_LATENCY)
        })
        .or(numa.first())?;
    let nodes: Vec<u32> = pick
        .objects()
        .map(|o| o.and_then(|o| o.os_index()).unwrap_or(0) as u32)
        .collect();
    let n = nodes.len();
    let flat = pick.distances();
    let matrix = (0..n).map(|i| flat[i * n..(i + 1) * n].to_vec()).collect();
    Some(Distances { nodes, matrix })
}

/// Accelerators (one per PCI device carrying a GPU / co-processor OS device) and I/O
/// devices (block, network, fabric, DMA).
fn collect_devices(topo: &Topology, m: &mut Machine) {
    // The same board shows up as cuda0, nvml0, opencl0d0, card0...: keep one per PCI
    // device, preferring compute APIs (CUDA, then OpenCL) over display/management ones.
    let mut boards: Vec<(String, u8, Accelerator)> = Vec::new();
    for dev in topo.objects_with_type(ObjectType::OSDevice) {
        let Some(ObjectAttributes::OSDevice(attr)) = dev.attributes() else {
            continue;
        };
        let name = dev
            .name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let subtype = dev
            .subtype()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let numa_node = numa_of(dev);
        let pci = pci_bus_id(dev);
        let device_type = attr.device_type();
        if matches!(device_type, OSDeviceType::GPU | OSDeviceType::CoProcessor) {
            let (preference, kind) = match (subtype.as_str(), device_type) {
                ("CUDA", _) => (0, UnitType::Gpu),
                ("OpenCL", _) => (1, UnitType::OpenCl),
                (_, OSDeviceType::GPU) => (2, UnitType::Gpu),
                _ => (3, UnitType::CoProcessor),
            };
            let memory_bytes = info(dev, "CUDAGlobalMemorySize")
                .or_else(|| info(dev, "OpenCLGlobalMemorySize"))
                .and_then(|kib| kib.parse::<u64>().ok())
                .and_then(|kib| kib.checked_mul(1024));
            let acc = Accelerator {
                kind,
                name: name.clone(),
                model: info(dev, "GPUModel"),
                memory_bytes,
                link_bandwidth_bytes_per_s: pci_link_bandwidth(dev),
                link_latency_s: None,
                relative_speed: None,
                numa_node,
                pci_bus_id: pci.clone(),
                setup_s: None,
                on_host: None,
            };
            let key = pci.unwrap_or_else(|| format!("nopci:{name}"));
            match boards.iter_mut().find(|(k, _, _)| *k == key) {
                Some(board) if preference < board.1 => *board = (key, preference, acc),
                Some(_) => {}
                None => boards.push((key, preference, acc)),
            }
        } else {
            let kind = match device_type {
                OSDeviceType::Network => IoKind::Network,
                OSDeviceType::OpenFabrics => IoKind::Fabric,
                OSDeviceType::DMA => IoKind::Dma,
                _ => IoKind::Block,
            };
            m.io_devices.push(IoDevice {
                kind,
                name,
                numa_node,
                bandwidth_bytes_per_s: None,
                pci_bus_id: pci,
            });
        }
    }
    m.accelerators = boards.into_iter().map(|(_, _, acc)| acc).collect();
}

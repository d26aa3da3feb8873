//! The machine as the indented tree `hetsched topology` prints: packages, their NUMA
//! nodes, shared and private caches, cores with their kind and capacity, CPU kinds,
//! distances, links, accelerators, I/O devices and the units a policy sees. Beside the
//! machine sources rather than in the CLI: rendering a machine is no command's logic.

use hetsched_core::cpu_list;
use hetsched_core::machine::{CacheKind, Machine, UnitType};

/// `n` bytes in binary units, rounded for reading (`32 KiB`, `1.5 GiB`); for exact
/// sizes in messages see `hetsched_util::files::bytes`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn rate(bytes_per_s: Option<f64>) -> String {
    bytes_per_s.map_or_else(String::new, |b| format!(", {:.1} GB/s", b / 1e9))
}

fn cache_name(level: u8, kind: CacheKind) -> String {
    match kind {
        CacheKind::Data => format!("L{level}d"),
        CacheKind::Instruction => format!("L{level}i"),
        CacheKind::Unified => format!("L{level}"),
    }
}

/// The tree of `m`, one line per object, ending with a newline.
pub fn render(m: &Machine) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "Machine {} ({})", m.name, m.source);
    let _ = writeln!(
        out,
        "  {} packages, {} cores, {} PUs, {} CPU kinds, {} NUMA nodes, {} accelerators, {} I/O devices",
        m.packages.len(),
        m.cores.len(),
        m.pus.len(),
        m.cpu_kinds.len(),
        m.numa_nodes.len(),
        m.accelerators.len(),
        m.io_devices.len()
    );
    for pkg in &m.packages {
        let model = pkg
            .model
            .as_deref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  Package {}{model}: PUs {}",
            pkg.os_index,
            cpu_list::format(&pkg.cpus)
        );
        for node in m
            .numa_nodes
            .iter()
            .filter(|n| !n.cpus.is_empty() && n.cpus.iter().all(|c| pkg.cpus.contains(c)))
        {
            let _ = writeln!(
                out,
                "    NUMA node {}: {}{}",
                node.os_index,
                bytes(node.memory_bytes),
                rate(node.bandwidth_bytes_per_s)
            );
        }
        // Caches shared by more than one core are shown at package level.
        for c in m
            .caches
            .iter()
            .filter(|c| c.cpus.iter().all(|x| pkg.cpus.contains(x)) && !c.cpus.is_empty())
        {
            let cores_under = m
                .cores
                .iter()
                .filter(|core| core.cpus.iter().all(|x| c.cpus.contains(x)))
                .count();
            if cores_under > 1 {
                let _ = writeln!(
                    out,
                    "    {} {} {}: PUs {}",
                    cache_name(c.level, c.kind),
                    bytes(c.size_bytes),
                    ways(c.ways),
                    cpu_list::format(&c.cpus)
                );
            }
        }
        for core in m
            .cores
            .iter()
            .filter(|c| c.package == pkg.os_index && c.cpus.iter().all(|x| pkg.cpus.contains(x)))
        {
            let kind = core.cpu_kind.and_then(|k| m.cpu_kinds.get(k as usize));
            let kind_name = kind.map(|k| format!(" kind {}", k.id)).unwrap_or_default();
            let cap = core
                .cpus
                .first()
                .and_then(|&c| m.pu(c))
                .map_or(0, |p| p.capacity);
            let private: Vec<String> = m
                .caches
                .iter()
                .filter(|c| !c.cpus.is_empty() && c.cpus.iter().all(|x| core.cpus.contains(x)))
                .map(|c| format!("{} {}", cache_name(c.level, c.kind), bytes(c.size_bytes)))
                .collect();
            let _ = writeln!(
                out,
                "    Core {}{kind_name} capacity {cap}: PUs {}{}",
                core.os_index,
                cpu_list::format(&core.cpus),
                if private.is_empty() {
                    String::new()
                } else {
                    format!("  [{}]", private.join(", "))
                }
            );
        }
    }
    for c in m.caches.iter().filter(|c| {
        m.packages
            .iter()
            .all(|p| !c.cpus.iter().all(|x| p.cpus.contains(x)))
    }) {
        let _ = writeln!(
            out,
            "  {} {} {} shared across packages: PUs {}",
            cache_name(c.level, c.kind),
            bytes(c.size_bytes),
            ways(c.ways),
            cpu_list::format(&c.cpus)
        );
    }
    for node in m.numa_nodes.iter().filter(|n| {
        n.cpus.is_empty()
            || !m
                .packages
                .iter()
                .any(|p| n.cpus.iter().all(|c| p.cpus.contains(c)))
    }) {
        let _ = writeln!(
            out,
            "  NUMA node {}: {}{} PUs {}",
            node.os_index,
            bytes(node.memory_bytes),
            rate(node.bandwidth_bytes_per_s),
            if node.cpus.is_empty() {
                "(memory only)".to_string()
            } else {
                cpu_list::format(&node.cpus)
            }
        );
    }
    if !m.cpu_kinds.is_empty() {
        let _ = writeln!(out, "  CPU kinds (least to most performant):");
        let caps = m.kind_capacities();
        for (k, cap) in m.cpu_kinds.iter().zip(caps) {
            let freq = match (k.max_mhz, k.base_mhz) {
                (Some(max), Some(base)) => format!(" {base}-{max} MHz"),
                (Some(max), None) => format!(" max {max} MHz"),
                (None, Some(base)) => format!(" base {base} MHz"),
                (None, None) => String::new(),
            };
            let dvfs = if k.frequencies_mhz.is_empty() {
                String::new()
            } else {
                format!(" DVFS {:?} MHz", k.frequencies_mhz)
            };
            let name = k
                .core_type
                .as_deref()
                .map(|t| format!(" {t}"))
                .unwrap_or_default();
            let eff = k
                .efficiency
                .map(|e| format!(" efficiency {e}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    #{}{name}{eff}{freq}{dvfs} capacity {cap}: PUs {}",
                k.id,
                cpu_list::format(&k.cpus)
            );
        }
    }
    if let Some(d) = &m.distances {
        let _ = writeln!(out, "  NUMA distances (nodes {:?}):", d.nodes);
        for row in &d.matrix {
            let _ = writeln!(
                out,
                "    {}",
                row.iter().map(|v| format!("{v:>4}")).collect::<String>()
            );
        }
    }
    for l in &m.links {
        let _ = writeln!(
            out,
            "  Link {} package {} <-> {}: {:.1} GB/s",
            l.name.as_deref().unwrap_or(""),
            l.between.0,
            l.between.1,
            l.bandwidth_bytes_per_s / 1e9
        );
    }
    if let Some(mesh) = &m.mesh {
        let _ = writeln!(
            out,
            "  Mesh {}x{}, {} cycles/hop, {}-bit flits",
            mesh.width, mesh.height, mesh.cycles_per_hop, mesh.flit_bits
        );
    }
    for a in &m.accelerators {
        let _ = writeln!(
            out,
            "  Accelerator {} ({}){}{}{} NUMA node {}",
            a.name,
            a.kind,
            a.model
                .as_deref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default(),
            a.memory_bytes
                .map(|b| format!(", {}", bytes(b)))
                .unwrap_or_default(),
            rate(a.link_bandwidth_bytes_per_s),
            a.numa_node.map_or("?".to_string(), |n| n.to_string())
        );
    }
    for d in &m.io_devices {
        let _ = writeln!(
            out,
            "  I/O {:?} {}{} NUMA node {}",
            d.kind,
            d.name,
            rate(d.bandwidth_bytes_per_s),
            d.numa_node.map_or("?".to_string(), |n| n.to_string())
        );
    }
    let count = |t: UnitType| m.units.iter().filter(|u| u.kind == t).count();
    let _ = writeln!(
        out,
        "  Units: {} ({} cpu, {} gpu, {} opencl, {} coprocessor)",
        m.units.len(),
        count(UnitType::Cpu),
        count(UnitType::Gpu),
        count(UnitType::OpenCl),
        count(UnitType::CoProcessor)
    );
    out
}

fn ways(w: Option<u32>) -> String {
    match w {
        Some(0) => "fully-assoc".into(),
        Some(n) => format!("{n}-way"),
        None => "?-way".into(),
    }
}

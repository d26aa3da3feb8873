//! hetsched's own TOML machine file: for what hwloc cannot describe (per-core DVFS
//! frequency sets, accelerator throughput and links, a 2-D mesh NUCA chip, I/O
//! controller and memory bandwidths) and for the papers' machines. The schema is
//! documented in `docs/machines.md`; presets are such files compiled in.
//!
//! A file describes packages of cores by count, not one object per core: the
//! builder expands them into cores and PUs with OS indexes numbered package by package.
//! Counts are checked against [`limits`] before anything is expanded (a count of 10^9
//! would otherwise exhaust memory), and every number against its range.

use bytesize::ByteSize;
use hetsched_core::error::in_range;
use hetsched_core::machine::{
    Accelerator, Cache, CacheKind, Core, CpuKind, Distances, IoDevice, IoKind, Link, Machine, Mesh,
    NumaNode, OnHost, Package, Pu, UnitType,
};
use hetsched_core::{Error, Result};
use serde::Deserialize;

/// The accepted ranges of machine file fields (`docs/machines.md` lists them).
pub mod limits {
    /// A machine file (TOML) or an hwloc XML export, bytes: the presets take 2 KiB, an
    /// XML export of 192 PUs 320 KiB.
    pub const MAX_FILE_BYTES: u64 = 64 << 20;
    /// PUs (cores × smt, over all packages): twice Linux's largest `NR_CPUS`.
    pub const MAX_PUS: u64 = 16_384;
    /// Packages, NUMA nodes, accelerators (counts included), I/O devices, links.
    pub const MAX_PACKAGES: usize = 1024;
    pub const MAX_NUMA_NODES: usize = 1024;
    pub const MAX_ACCELERATORS: u64 = 1024;
    pub const MAX_IO_DEVICES: u64 = 1024;
    pub const MAX_LINKS: usize = 4096;
    /// `[[cache]]` entries, each expanded into one cache per sharing group.
    pub const MAX_CACHES: usize = 16;
    /// Capacity on Linux's scale.
    pub const CAPACITY: (u32, u32) = (1, 1024);
    /// Frequencies in MHz, and operating points per kind.
    pub const MHZ: (u32, u32) = (1, 100_000);
    pub const MAX_FREQUENCIES: usize = 256;
    /// Cache levels, associativity (0 = fully associative), line size (a power of two).
    pub const CACHE_LEVEL: (u8, u8) = (1, 4);
    pub const MAX_WAYS: u32 = 1 << 16;
    pub const LINE: (u32, u32) = (8, 4096);
    /// Bandwidths in bytes/s: 1 kB/s to 1 PB/s.
    pub const BANDWIDTH: (f64, f64) = (1e3, 1e15);
    /// `link_latency_us` (up to a second).
    pub const MAX_LATENCY_US: f64 = 1e6;
    /// `relative_speed` (the unit's capacity is 1024 × it).
    pub const RELATIVE_SPEED: (f64, f64) = (1e-3, 1e6);
    /// `setup_ms` (up to a minute).
    pub const MAX_SETUP_MS: f64 = 60_000.0;
    /// The least `on_host` share (a device or CPU slowed a thousandfold).
    pub const MIN_SHARE: f64 = 1e-3;
    /// NUMA distances (ACPI SLIT: 10 = local).
    pub const DISTANCE: (u64, u64) = (1, 255);
    /// Mesh hop latency in cycles and flit width in bits.
    pub const MAX_CYCLES_PER_HOP: u32 = 1_000_000;
    pub const FLIT_BITS: (u32, u32) = (1, 1 << 20);
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    /// For the file's readers: where its figures come from.
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default, rename = "cpu_kind")]
    cpu_kinds: Vec<KindSpec>,
    #[serde(rename = "package")]
    packages: Vec<PackageSpec>,
    #[serde(default, rename = "numa_node")]
    numa_nodes: Vec<NodeSpec>,
    #[serde(default, rename = "cache")]
    caches: Vec<CacheSpec>,
    #[serde(default)]
    distances: Option<Vec<Vec<u64>>>,
    #[serde(default, rename = "accelerator")]
    accelerators: Vec<AcceleratorSpec>,
    #[serde(default, rename = "io_device")]
    io_devices: Vec<IoSpec>,
    #[serde(default, rename = "link")]
    links: Vec<LinkSpec>,
    #[serde(default)]
    mesh: Option<Mesh>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KindSpec {
    name: String,
    #[serde(default)]
    max_mhz: Option<u32>,
    #[serde(default)]
    base_mhz: Option<u32>,
    #[serde(default)]
    frequencies_mhz: Vec<u32>,
    #[serde(default)]
    capacity: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PackageSpec {
    /// Number of cores.
    cores: u32,
    /// Hardware threads per core (default 1).
    #[serde(default = "one")]
    smt: u32,
    /// CPU kind name for every core, or one name per core.
    #[serde(default)]
    kind: Option<KindRef>,
    /// NUMA node (index in `numa_node`); default: the package's index.
    #[serde(default)]
    numa_node: Option<u32>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum KindRef {
    All(String),
    PerCore(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSpec {
    memory: Size,
    #[serde(default)]
    bandwidth: Option<Bandwidth>,
}

/// A byte size: an integer, or a string such as `"1.5 GiB"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

/// A bandwidth in bytes/s: a number, or a string such as `"24 GB/s"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Bandwidth {
    BytesPerSecond(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheSpec {
    level: u8,
    #[serde(default = "unified")]
    kind: CacheKind,
    size: Size,
    #[serde(default)]
    ways: Option<u32>,
    #[serde(default = "line64")]
    line: u32,
    /// Which CPUs share one instance: "core", "package", "machine", or a number of
    /// consecutive cores.
    shared_by: SharedBy,
    /// Only the cores of this CPU kind have this cache (big.LITTLE clusters whose
    /// caches differ); absent: every core.
    #[serde(default)]
    cpu_kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SharedBy {
    Cores(u32),
    Scope(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AcceleratorSpec {
    #[serde(rename = "type")]
    kind: String,
    name: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    memory: Option<Size>,
    #[serde(default)]
    link_bandwidth: Option<Bandwidth>,
    #[serde(default)]
    link_latency_us: Option<f64>,
    #[serde(default)]
    relative_speed: Option<f64>,
    #[serde(default)]
    setup_ms: Option<f64>,
    #[serde(default)]
    on_host: Option<OnHostSpec>,
    #[serde(default)]
    numa_node: Option<u32>,
    /// How many identical devices (names get a 0-based suffix when > 1).
    #[serde(default = "one")]
    count: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OnHostSpec {
    cpu_share: f64,
    device_share: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IoSpec {
    kind: IoKind,
    name: String,
    #[serde(default)]
    numa_node: Option<u32>,
    #[serde(default)]
    bandwidth: Option<Bandwidth>,
    #[serde(default = "one")]
    count: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkSpec {
    between: (u32, u32),
    bandwidth: Bandwidth,
    #[serde(default)]
    name: Option<String>,
}

fn one() -> u32 {
    1
}
fn line64() -> u32 {
    64
}
fn unified() -> CacheKind {
    CacheKind::Unified
}

fn size(origin: &str, field: &str, s: &Size) -> Result<u64> {
    match s {
        Size::Bytes(b) => Ok(*b),
        Size::Text(t) => t.parse::<ByteSize>().map(|b| b.as_u64()).map_err(|e| {
            Error::input(format!(
                "{origin}: field `{field}`: expected a size like \"12 MiB\", got {t:?}: {e}"
            ))
        }),
    }
}

fn bandwidth(origin: &str, field: &str, b: &Bandwidth) -> Result<f64> {
    let value = match b {
        Bandwidth::BytesPerSecond(v) => *v,
        Bandwidth::Text(t) => {
            let bytes = t
                .trim()
                .strip_suffix("/s")
                .and_then(|s| s.trim().parse::<ByteSize>().ok());
            bytes.map(|b| b.as_u64() as f64).ok_or_else(|| {
                Error::input(format!(
                    "{origin}: field `{field}`: expected a bandwidth like \"24 GB/s\", got {t:?}"
                ))
            })?
        }
    };
    let (lo, hi) = limits::BANDWIDTH;
    in_range(
        format!("{origin}: field `{field}` (bytes/s)"),
        value,
        lo,
        hi,
    )
}

/// An integer field in `[lo, hi]`.
fn int_in<T: PartialOrd + std::fmt::Display>(
    origin: &str,
    field: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<T> {
    if v >= lo && v <= hi {
        Ok(v)
    } else {
        Err(Error::input(format!(
            "{origin}: field `{field}`: expected an integer in [{lo}, {hi}], got {v}"
        )))
    }
}

/// Checks counts and ranges before anything is expanded.
fn check(file: &File, origin: &str) -> Result<()> {
    let int = |field: &str, v: u64, lo: u64, hi: u64| int_in(origin, field, v, lo, hi);
    let many = |field: &str, n: usize, max: usize| {
        int_in(origin, field, n as u64, 0, max as u64).map(|_| ())
    };
    many(
        "package (entries)",
        file.packages.len(),
        limits::MAX_PACKAGES,
    )?;
    many(
        "numa_node (entries)",
        file.numa_nodes.len(),
        limits::MAX_NUMA_NODES,
    )?;
    many("cache (entries)", file.caches.len(), limits::MAX_CACHES)?;
    many("link (entries)", file.links.len(), limits::MAX_LINKS)?;
    let mut pus = 0u64;
    for (p, spec) in file.packages.iter().enumerate() {
        let cores = int(
            &format!("package[{p}].cores"),
            spec.cores.into(),
            1,
            limits::MAX_PUS,
        )?;
        let smt = int(
            &format!("package[{p}].smt"),
            spec.smt.into(),
            1,
            limits::MAX_PUS,
        )?;
        pus += cores * smt; // both ≤ 2^14: no overflow
        if pus > limits::MAX_PUS {
            return Err(Error::input(format!(
                "{origin}: field `package[{p}]`: {pus} PUs so far (cores × smt over the packages), expected at most {}",
                limits::MAX_PUS
            )));
        }
    }
    for (i, k) in file.cpu_kinds.iter().enumerate() {
        let field = format!("cpu_kind[{i}]");
        let (lo, hi) = limits::CAPACITY;
        if let Some(c) = k.capacity {
            int_in(origin, &format!("{field}.capacity"), c, lo, hi)?;
        }
        let (lo, hi) = limits::MHZ;
        for (name, v) in [("max_mhz", k.max_mhz), ("base_mhz", k.base_mhz)] {
            if let Some(v) = v {
                int_in(origin, &format!("{field}.{name}"), v, lo, hi)?;
            }
        }
        many(
            &format!("{field}.frequencies_mhz (entries)"),
            k.frequencies_mhz.len(),
            limits::MAX_FREQUENCIES,
        )?;
        for (j, &f) in k.frequencies_mhz.iter().enumerate() {
            int_in(origin, &format!("{field}.frequencies_mhz[{j}]"), f, lo, hi)?;
        }
    }
    for (i, c) in file.caches.iter().enumerate() {
        let field = format!("cache[{i}]");
        let (lo, hi) = limits::CACHE_LEVEL;
        int_in(origin, &format!("{field}.level"), c.level, lo, hi)?;
        if let Some(w) = c.ways {
            int_in(origin, &format!("{field}.ways"), w, 0, limits::MAX_WAYS)?;
        }
        let (lo, hi) = limits::LINE;
        if !c.line.is_power_of_two() || c.line < lo || c.line > hi {
            return Err(Error::input(format!(
                "{origin}: field `{field}.line`: expected a power of two in [{lo}, {hi}], got {}",
                c.line
            )));
        }
    }
    if let Some(d) = &file.distances {
        let (lo, hi) = limits::DISTANCE;
        for (i, row) in d.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                int(&format!("distances[{i}][{j}]"), v, lo, hi)?;
            }
        }
    }
    let mut accelerators = 0u64;
    for (i, a) in file.accelerators.iter().enumerate() {
        let field = format!("accelerator[{i}]");
        accelerators += u64::from(a.count);
        int(&format!("{field}.count"), accelerators, 0, limits::MAX_ACCELERATORS).map_err(
            |_| {
                Error::input(format!(
                    "{origin}: field `{field}.count`: {accelerators} accelerators so far, expected at most {}",
                    limits::MAX_ACCELERATORS
                ))
            },
        )?;
        if let Some(us) = a.link_latency_us {
            in_range(
                format!("{origin}: field `{field}.link_latency_us`"),
                us,
                0.0,
                limits::MAX_LATENCY_US,
            )?;
        }
        if let Some(s) = a.relative_speed {
            let (lo, hi) = limits::RELATIVE_SPEED;
            in_range(
                format!("{origin}: field `{field}.relative_speed`"),
                s,
                lo,
                hi,
            )?;
        }
        if let Some(ms) = a.setup_ms {
            in_range(
                format!("{origin}: field `{field}.setup_ms`"),
                ms,
                0.0,
                limits::MAX_SETUP_MS,
            )?;
        }
        if let Some(h) = &a.on_host {
            for (key, v) in [("cpu_share", h.cpu_share), ("device_share", h.device_share)] {
                in_range(
                    format!("{origin}: field `{field}.on_host.{key}`"),
                    v,
                    limits::MIN_SHARE,
                    1.0,
                )?;
            }
        }
    }
    let mut devices = 0u64;
    for (i, d) in file.io_devices.iter().enumerate() {
        devices += u64::from(d.count);
        if devices > limits::MAX_IO_DEVICES {
            return Err(Error::input(format!(
                "{origin}: field `io_device[{i}].count`: {devices} I/O devices so far, expected at most {}",
                limits::MAX_IO_DEVICES
            )));
        }
    }
    if let Some(m) = &file.mesh {
        int("mesh.width", m.width.into(), 1, limits::MAX_PUS)?;
        int("mesh.height", m.height.into(), 1, limits::MAX_PUS)?;
        int(
            "mesh.cycles_per_hop",
            m.cycles_per_hop.into(),
            0,
            limits::MAX_CYCLES_PER_HOP.into(),
        )?;
        let (lo, hi) = limits::FLIT_BITS;
        int("mesh.flit_bits", m.flit_bits.into(), lo.into(), hi.into())?;
    }
    Ok(())
}

/// Parses and expands a TOML machine file. `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Machine> {
    let file: File = toml::from_str(text)
        .map_err(|e| Error::input(format!("{origin}: {}", one_line(&e.to_string()))))?;
    build(file, origin)
}

/// toml's messages span several lines (with a source excerpt); keep them to one.
fn one_line(msg: &str) -> String {
    let mut lines = msg.lines().map(str::trim).filter(|l| {
        !l.is_empty() && !l.starts_with('|') && !l.chars().all(|c| c == '^' || c == ' ')
    });
    let head = lines.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = lines
        .filter(|l| !l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    if rest.is_empty() {
        head
    } else {
        format!("{head} {}", rest.join(" "))
    }
}

fn build(file: File, origin: &str) -> Result<Machine> {
    check(&file, origin)?;
    let mut m = Machine {
        name: file.name.clone(),
        source: format!("toml:{origin}"),
        ..Machine::default()
    };
    if file.packages.is_empty() {
        return Err(Error::input(format!(
            "{origin}: at least one [[package]] is required"
        )));
    }

    for (i, k) in file.cpu_kinds.iter().enumerate() {
        m.cpu_kinds.push(CpuKind {
            id: i as u32,
            efficiency: None,
            max_mhz: k
                .max_mhz
                .or_else(|| k.frequencies_mhz.iter().copied().max()),
            base_mhz: k.base_mhz,
            frequencies_mhz: k.frequencies_mhz.clone(),
            core_type: Some(k.name.clone()),
            linux_capacity: None,
            capacity_override: k.capacity,
            cpus: Vec::new(),
        });
    }
    let kind_id = |field: &str, name: &str| -> Result<u32> {
        file.cpu_kinds
            .iter()
            .position(|k| k.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| {
                let known: Vec<&str> = file.cpu_kinds.iter().map(|k| k.name.as_str()).collect();
                Error::input(format!(
                    "{origin}: field `{field}`: unknown cpu kind {name:?} (defined: {known:?})"
                ))
            })
    };

    let node_count = if file.numa_nodes.is_empty() {
        file.packages.len()
    } else {
        file.numa_nodes.len()
    };
    let mut next_pu = 0u32;
    let mut next_core = 0u32;
    for (p, spec) in file.packages.iter().enumerate() {
        let field = format!("package[{p}]");
        if spec.cores == 0 || spec.smt == 0 {
            return Err(Error::input(format!(
                "{origin}: field `{field}`: cores and smt must be at least 1"
            )));
        }
        let node = spec.numa_node.unwrap_or(p as u32);
        if node as usize >= node_count {
            return Err(Error::input(format!(
                "{origin}: field `{field}.numa_node`: node {node} does not exist ({node_count} defined)"
            )));
        }
        let kinds: Vec<Option<u32>> = match &spec.kind {
            None => vec![None; spec.cores as usize],
            Some(KindRef::All(name)) => {
                vec![Some(kind_id(&format!("{field}.kind"), name)?); spec.cores as usize]
            }
            Some(KindRef::PerCore(names)) => {
                if names.len() != spec.cores as usize {
                    return Err(Error::input(format!(
                        "{origin}: field `{field}.kind`: {} names for {} cores",
                        names.len(),
                        spec.cores
                    )));
                }
                names
                    .iter()
                    .map(|n| kind_id(&format!("{field}.kind"), n).map(Some))
                    .collect::<Result<_>>()?
            }
        };
        let mut package_cpus = Vec::new();
        for kind in kinds {
            let cpus: Vec<u32> = (next_pu..next_pu + spec.smt).collect();
            next_pu += spec.smt;
            for &cpu in &cpus {
                m.pus.push(Pu {
                    os_index: cpu,
                    core: Some(next_core),
                    package: p as u32,
                    numa_node: Some(node),
                    cpu_kind: kind,
                    capacity: 0,
                });
                if let Some(k) = kind {
                    m.cpu_kinds[k as usize].cpus.push(cpu);
                }
            }
            package_cpus.extend(&cpus);
            m.cores.push(Core {
                os_index: next_core,
                package: p as u32,
                cpus,
                cpu_kind: kind,
            });
            next_core += 1;
        }
        m.packages.push(Package {
            os_index: p as u32,
            cpus: package_cpus,
            model: spec.model.clone(),
        });
    }

    // NUMA nodes: explicit ones, or one per package with the memory unknown (0).
    for n in 0..node_count {
        let cpus: Vec<u32> = m
            .pus
            .iter()
            .filter(|pu| pu.numa_node == Some(n as u32))
            .map(|pu| pu.os_index)
            .collect();
        let (memory_bytes, bw) = match file.numa_nodes.get(n) {
            Some(spec) => (
                size(origin, &format!("numa_node[{n}].memory"), &spec.memory)?,
                spec.bandwidth
                    .as_ref()
                    .map(|b| bandwidth(origin, &format!("numa_node[{n}].bandwidth"), b))
                    .transpose()?,
            ),
            None => (0, None),
        };
        m.numa_nodes.push(NumaNode {
            os_index: n as u32,
            memory_bytes,
            cpus,
            bandwidth_bytes_per_s: bw,
        });
    }

    if let Some(matrix) = file.distances {
        if matrix.len() != node_count || matrix.iter().any(|row| row.len() != node_count) {
            return Err(Error::input(format!(
                "{origin}: field `distances`: expected a {node_count}×{node_count} matrix (one row per NUMA node)"
            )));
        }
        m.distances = Some(Distances {
            nodes: (0..node_count as u32).collect(),
            matrix,
        });
    }

    for (i, c) in file.caches.iter().enumerate() {
        let field = format!("cache[{i}]");
        let size_bytes = size(origin, &format!("{field}.size"), &c.size)?;
        if size_bytes == 0 {
            return Err(Error::input(format!(
                "{origin}: field `{field}.size`: expected at least 1 byte, got 0"
            )));
        }
        let kind = match &c.cpu_kind {
            Some(name) => Some(kind_id(&format!("{field}.cpu_kind"), name)?),
            None => None,
        };
        let has = |core: &&Core| kind.is_none() || core.cpu_kind == kind;
        let cpus_of = |pred: &dyn Fn(&Core) -> bool| -> Vec<u32> {
            m.cores
                .iter()
                .filter(has)
                .filter(|c| pred(c))
                .flat_map(|c| c.cpus.iter().copied())
                .collect()
        };
        let groups: Vec<Vec<u32>> = match &c.shared_by {
            SharedBy::Scope(s) if s == "core" => m.cores.iter().filter(has).map(|c| c.cpus.clone()).collect(),
            SharedBy::Scope(s) if s == "package" => m.packages.iter().map(|p| cpus_of(&|c| c.package == p.os_index)).collect(),
            SharedBy::Scope(s) if s == "machine" => vec![cpus_of(&|_| true)],
            SharedBy::Cores(n) if *n > 0 && *n as usize <= m.cores.len() => {
                // Groups of n consecutive cores, never spanning two packages.
                let mut groups = Vec::new();
                for pkg in &m.packages {
                    let cores: Vec<&Core> = m.cores.iter().filter(has).filter(|c| c.package == pkg.os_index).collect();
                    for chunk in cores.chunks(*n as usize) {
                        groups.push(chunk.iter().flat_map(|c| c.cpus.iter().copied()).collect());
                    }
                }
                groups
            }
            _ => {
                return Err(Error::input(format!(
                    "{origin}: field `{field}.shared_by`: expected \"core\", \"package\", \"machine\" or a number of cores in [1, {}]", m.cores.len()
                )))
            }
        };
        for cpus in groups.into_iter().filter(|g| !g.is_empty()) {
            m.caches.push(Cache {
                level: c.level,
                kind: c.kind,
                size_bytes,
                ways: c.ways,
                line_bytes: c.line,
                cpus,
            });
        }
    }

    for (i, a) in file.accelerators.iter().enumerate() {
        let field = format!("accelerator[{i}]");
        let kind = UnitType::parse(&a.kind).filter(|k| *k != UnitType::Cpu).ok_or_else(|| {
            Error::input(format!("{origin}: field `{field}.type`: expected \"gpu\", \"opencl\" or \"coprocessor\", got {:?}", a.kind))
        })?;
        if let Some(node) = a.numa_node.filter(|&n| n as usize >= node_count) {
            return Err(Error::input(format!(
                "{origin}: field `{field}.numa_node`: node {node} does not exist"
            )));
        }
        let memory_bytes = a
            .memory
            .as_ref()
            .map(|s| size(origin, &format!("{field}.memory"), s))
            .transpose()?;
        let link = a
            .link_bandwidth
            .as_ref()
            .map(|b| bandwidth(origin, &format!("{field}.link_bandwidth"), b))
            .transpose()?;
        for n in 0..a.count {
            m.accelerators.push(Accelerator {
                kind,
                name: if a.count > 1 {
                    format!("{}{n}", a.name)
                } else {
                    a.name.clone()
                },
                model: a.model.clone(),
                memory_bytes,
                link_bandwidth_bytes_per_s: link,
                link_latency_s: a.link_latency_us.map(|us| us * 1e-6),
                relative_speed: a.relative_speed,
                numa_node: a.numa_node,
                pci_bus_id: None,
                setup_s: a.setup_ms.map(|ms| ms * 1e-3),
                on_host: a.on_host.as_ref().map(|h| OnHost {
                    cpu_share: h.cpu_share,
                    device_share: h.device_share,
                }),
            });
        }
    }

    for (i, d) in file.io_devices.iter().enumerate() {
        let field = format!("io_device[{i}]");
        if let Some(node) = d.numa_node.filter(|&n| n as usize >= node_count) {
            return Err(Error::input(format!(
                "{origin}: field `{field}.numa_node`: node {node} does not exist"
            )));
        }
        let bw = d
            .bandwidth
            .as_ref()
            .map(|b| bandwidth(origin, &format!("{field}.bandwidth"), b))
            .transpose()?;
        for n in 0..d.count {
            m.io_devices.push(IoDevice {
                kind: d.kind,
                name: if d.count > 1 {
                    format!("{}{n}", d.name)
                } else {
                    d.name.clone()
                },
                numa_node: d.numa_node,
                bandwidth_bytes_per_s: bw,
                pci_bus_id: None,
            });
        }
    }

    for (i, l) in file.links.iter().enumerate() {
        let field = format!("link[{i}]");
        let n = m.packages.len() as u32;
        if l.between.0 >= n || l.between.1 >= n {
            return Err(Error::input(format!(
                "{origin}: field `{field}.between`: packages are 0..{n}"
            )));
        }
        m.links.push(Link {
            between: l.between,
            bandwidth_bytes_per_s: bandwidth(origin, &format!("{field}.bandwidth"), &l.bandwidth)?,
            name: l.name.clone(),
        });
    }

    if let Some(mesh) = file.mesh {
        if u64::from(mesh.width) * u64::from(mesh.height) != m.cores.len() as u64 {
            return Err(Error::input(format!(
                "{origin}: field `mesh`: {}×{} tiles but {} cores",
                mesh.width,
                mesh.height,
                m.cores.len()
            )));
        }
        m.mesh = Some(mesh);
    }

    m.assign_capacities();
    Ok(m)
}

//! Discovery against real machines: hwloc's regression dumps and XML exports in
//! `tests/data/topologies/` (copied from hwloc's test suite), compared with the expected lstopo output that ships with
//! each (their meaning: counts and sizes, not their text — they come from a newer lstopo).

use hetsched_core::machine::{CacheKind, Machine, UnitGranularity, UnitType};
use hetsched_core::Error;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn topologies() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/data/topologies")
}

/// What an expected file says: counts of PUs, cores, NUMA nodes, CPU kinds, and the
/// multiset of (cache level, instruction?, size in bytes).
#[derive(Debug, PartialEq)]
struct Expected {
    pus: usize,
    cores: usize,
    numa_nodes: usize,
    cpu_kinds: usize,
    caches: BTreeMap<(u8, bool, u64), usize>,
}

fn size_of(text: &str) -> u64 {
    let (num, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = num.parse().unwrap();
    match unit {
        "KiB" | "KB" => n << 10,
        "MiB" | "MB" => n << 20,
        "GiB" | "GB" => n << 30,
        "" => n,
        other => panic!("unknown unit {other}"),
    }
}

/// Parses `lstopo -v -` text.
fn from_console(text: &str) -> Expected {
    let mut e = Expected {
        pus: 0,
        cores: 0,
        numa_nodes: 0,
        cpu_kinds: 0,
        caches: BTreeMap::new(),
    };
    let mut kinds = std::collections::BTreeSet::new();
    for line in text.lines().map(str::trim) {
        let word = line.split_whitespace().next().unwrap_or("");
        match word {
            "PU" => e.pus += 1,
            "Core" => {
                e.cores += 1;
                if let Some(k) = line.split("cpukind=").nth(1) {
                    kinds.insert(
                        k.split(|c: char| !c.is_ascii_digit())
                            .next()
                            .unwrap()
                            .to_string(),
                    );
                }
            }
            "NUMANode" => e.numa_nodes += 1,
            w if w.starts_with('L') && w.ends_with("Cache") => {
                let level: u8 = w[1..2].parse().unwrap();
                let size = size_of(
                    line.split("size=")
                        .nth(1)
                        .unwrap()
                        .split_whitespace()
                        .next()
                        .unwrap(),
                );
                *e.caches
                    .entry((level, w.contains("iCache"), size))
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    e.cpu_kinds = kinds.len();
    e
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    tag.split(&format!(" {name}=\""))
        .nth(1)
        .and_then(|v| v.split('"').next())
}

/// Parses an hwloc 2.x XML export.
fn from_xml(text: &str) -> Expected {
    let mut e = Expected {
        pus: 0,
        cores: 0,
        numa_nodes: 0,
        cpu_kinds: 0,
        caches: BTreeMap::new(),
    };
    for tag in text.split('<').skip(1) {
        if tag.starts_with("cpukind ") {
            e.cpu_kinds += 1;
        }
        if !tag.starts_with("object ") {
            continue;
        }
        match attr(tag, "type").unwrap() {
            "PU" => e.pus += 1,
            "Core" => e.cores += 1,
            "NUMANode" => e.numa_nodes += 1,
            t if t.starts_with('L') && t.ends_with("Cache") => {
                let level: u8 = attr(tag, "depth").unwrap().parse().unwrap();
                let size: u64 = attr(tag, "cache_size").unwrap().parse().unwrap();
                *e.caches
                    .entry((level, t.contains("iCache"), size))
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    e
}

fn observed(m: &Machine) -> Expected {
    let mut caches = BTreeMap::new();
    for c in &m.caches {
        *caches
            .entry((c.level, c.kind == CacheKind::Instruction, c.size_bytes))
            .or_default() += 1;
    }
    Expected {
        pus: m.pus.len(),
        cores: m.cores.len(),
        numa_nodes: m.numa_nodes.len(),
        cpu_kinds: m.cpu_kinds.len(),
        caches,
    }
}

/// The expected file named by the dump's `.test` file (`target:` line).
fn expected_for(archive: &std::path::Path) -> Expected {
    let test =
        std::fs::read_to_string(archive.to_str().unwrap().replace(".tar.bz2", ".test")).unwrap();
    let target = test
        .lines()
        .find_map(|l| l.strip_prefix("target:"))
        .unwrap()
        .trim();
    let text = std::fs::read_to_string(archive.with_file_name(target)).unwrap();
    if target.ends_with(".xml") {
        from_xml(&text)
    } else {
        from_console(&text)
    }
}

fn dumps() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(topologies().join("sysfs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".tar.bz2"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_sysfs_dump_matches_its_expected_output() {
    let all = dumps();
    assert!(
        all.len() >= 6,
        "expected the six dumps of tests/data/topologies/sysfs, found {all:?}"
    );
    for archive in all {
        let m = hetsched_topology::load(archive.to_str().unwrap(), UnitGranularity::Pu)
            .unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
        let want = expected_for(&archive);
        let mut got = observed(&m);
        // A console only shows cpukind= attributes when there is more than one kind;
        // hwloc reports one (uninformative) kind on some homogeneous machines.
        if want.cpu_kinds == 0 && got.cpu_kinds == 1 {
            got.cpu_kinds = 0;
        }
        assert_eq!(got, want, "{}", archive.display());
        assert_eq!(
            m.units.iter().filter(|u| u.kind == UnitType::Cpu).count(),
            m.pus.len()
        );
    }
}

#[test]
fn raptor_lake_has_two_kinds_with_p_cores_faster() {
    let archive = topologies().join("sysfs/20em64t-hybrid-1p6c2t+2ca4co1t.tar.bz2");
    let m = hetsched_topology::load(archive.to_str().unwrap(), UnitGranularity::Pu).unwrap();
    assert_eq!(m.cpu_kinds.len(), 2);
    let cores_of = |kind: u32| {
        m.cores
            .iter()
            .filter(|c| c.cpu_kind == Some(kind))
            .collect::<Vec<_>>()
    };
    // Kinds are ordered least to most performant: 0 = E-cores, 1 = P-cores.
    let (e, p) = (cores_of(0), cores_of(1));
    assert_eq!((p.len(), e.len()), (6, 8));
    assert!(p.iter().all(|c| c.cpus.len() == 2) && e.iter().all(|c| c.cpus.len() == 1));
    let cap = |core: &hetsched_core::machine::Core| m.pu(core.cpus[0]).unwrap().capacity;
    assert!(p.iter().all(|c| cap(c) == 1024));
    assert!(
        e.iter().all(|c| cap(c) < 1024),
        "E-core capacity {}",
        cap(e[0])
    );
    assert_eq!(cap(e[0]), (1024.0 * 3900.0 / 5000.0_f64).round() as u32);
    let l3: Vec<_> = m.data_caches(3).collect();
    assert_eq!(l3.len(), 1);
    assert_eq!(l3[0].size_bytes, 24 << 20);
}

#[test]
fn pci_locality_env_from_test_file_is_honoured() {
    // The .test file places PCI buses 00-09 near the 1st package and 40-46 near the 2nd.
    let archive = topologies().join("sysfs/40intel64-2g2n4c+pcilocality.tar.bz2");
    let m = hetsched_topology::load(archive.to_str().unwrap(), UnitGranularity::Pu).unwrap();
    let eth0 = m
        .io_devices
        .iter()
        .find(|d| d.name == "eth0")
        .expect("eth0 discovered");
    let first_node = m.numa_nodes.iter().map(|n| n.os_index).min();
    assert_eq!(eth0.numa_node, first_node);
    let nodes: std::collections::BTreeSet<_> =
        m.io_devices.iter().filter_map(|d| d.numa_node).collect();
    assert!(
        nodes.len() >= 2,
        "devices near both packages, got {nodes:?}"
    );
}

#[test]
fn every_v2_xml_loads_with_its_pu_count() {
    let mut seen = 0;
    for entry in std::fs::read_dir(topologies().join("xml")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let result = hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu);
        if text.contains("<topology version=\"3.0\"") {
            match result {
                Err(Error::Input(msg)) => {
                    assert!(
                        msg.contains(path.file_name().unwrap().to_str().unwrap())
                            && msg.contains("version 3.0"),
                        "{msg}"
                    )
                }
                other => panic!(
                    "{}: expected a version error, got {other:?}",
                    path.display()
                ),
            }
        } else {
            let m = result.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(m.pus.len(), from_xml(&text).pus, "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 10);
}

#[test]
fn gpus_and_numa_distances_come_through() {
    let m = hetsched_topology::load(
        topologies()
            .join("xml/power8gpudistances.xml")
            .to_str()
            .unwrap(),
        UnitGranularity::Pu,
    )
    .unwrap();
    let gpus: Vec<_> = m
        .accelerators
        .iter()
        .filter(|a| a.kind == UnitType::Gpu)
        .collect();
    assert_eq!(
        gpus.len(),
        4,
        "one accelerator per board, not per OS device"
    );
    assert!(gpus.iter().all(|g| g.memory_bytes.unwrap() > 15 << 30));
    assert_eq!(gpus.iter().filter(|g| g.numa_node == Some(0)).count(), 2);
    let d = m.distances.as_ref().unwrap();
    assert_eq!(d.matrix.len(), 2);
    assert!(d.matrix[0][0] < d.matrix[0][1]);
    assert_eq!(
        m.units.iter().filter(|u| u.kind == UnitType::Gpu).count(),
        4
    );
}

#[test]
fn live_machine_is_discovered() {
    let m = hetsched_topology::load("live", UnitGranularity::Pu).unwrap();
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as usize;
    assert_eq!(m.pus.len(), online);
    assert!(!m.numa_nodes.is_empty());
    assert!(m.numa_nodes.iter().map(|n| n.memory_bytes).sum::<u64>() > 0);
    assert!(m
        .units
        .iter()
        .all(|u| u.capacity == 1024 || m.cpu_kinds.len() > 1));
}

#[test]
fn every_preset_loads() {
    for p in hetsched_topology::presets::PRESETS {
        let m = hetsched_topology::load(p.name, UnitGranularity::Pu)
            .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert!(!m.units.is_empty(), "{}", p.name);
    }
    let beisel = hetsched_topology::load("beisel", UnitGranularity::Pu).unwrap();
    assert_eq!(beisel.pus.len(), 16);
    assert_eq!(
        beisel
            .numa_nodes
            .iter()
            .map(|n| n.memory_bytes)
            .sum::<u64>(),
        12 << 30
    );
    assert_eq!(beisel.accelerators[0].memory_bytes, Some(1536 << 20));
    let shelepov = hetsched_topology::load("shelepov", UnitGranularity::Core).unwrap();
    assert_eq!(shelepov.data_caches(2).count(), 4);
    assert_eq!(
        shelepov.cpu_kinds[0].frequencies_mhz,
        vec![2000, 2333, 2667, 3000]
    );
    let shim = hetsched_topology::load("shim", UnitGranularity::Core).unwrap();
    assert_eq!(shim.units.len(), 64);
    assert_eq!(shim.mesh.as_ref().unwrap().width, 8);
    let ding = hetsched_topology::load("ding", UnitGranularity::Core).unwrap();
    let caps: Vec<u32> = ding.units.iter().map(|u| u.capacity).collect();
    assert_eq!(caps.iter().filter(|&&c| c == 512).count(), 4);
    let akram = hetsched_topology::load("akram", UnitGranularity::Pu).unwrap();
    assert_eq!(akram.links[0].bandwidth_bytes_per_s, 24e9);
    assert_eq!(
        akram
            .io_devices
            .iter()
            .filter(|d| d.numa_node == Some(1))
            .count(),
        4
    );
}

#[test]
fn an_extracted_dump_directory_loads_like_its_archive() {
    let archive = topologies().join("sysfs/16amd64-8n2c.tar.bz2");
    let dump = hetsched_topology::sysfs_dump::extract(&archive).unwrap();
    // The archive's single top-level directory, and the directory holding it, both work.
    for dir in [dump.root.clone(), dump.root.parent().unwrap().to_path_buf()] {
        let m = hetsched_topology::load(dir.to_str().unwrap(), UnitGranularity::Pu).unwrap();
        assert_eq!(observed(&m), expected_for(&archive), "{}", dir.display());
    }
    let empty = tempfile::tempdir().unwrap();
    match hetsched_topology::load(empty.path().to_str().unwrap(), UnitGranularity::Pu) {
        Err(Error::Input(msg)) => assert!(msg.contains("not a sysfs dump"), "{msg}"),
        other => panic!("expected an input error, got {other:?}"),
    }
}

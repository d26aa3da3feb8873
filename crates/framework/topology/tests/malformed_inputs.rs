//! Inputs that crash or hang libhwloc 2.9 (issue #38): each must come back as a one-line
//! input error (exit code 2) in bounded time, with this process alive. The XMLs are the
//! smallest found for each crash (see `hwloc_xml`'s module doc); all crash `lstopo` 2.9.

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::Error;
use hetsched_topology::hwloc::{self, HwlocInput, Limits};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn topologies() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/data/topologies")
}

/// Issue #38's crash: a Machine with a cpuset and a nodeset, no NUMANode (and no
/// complete sets). SIGSEGV in hwloc_bitmap_set.
const NO_NUMA_NODE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
 <object type="Machine" os_index="0" cpuset="0x1" nodeset="0x1">
  <object type="Package" os_index="0" cpuset="0x1" nodeset="0x1">
   <object type="Core" os_index="0" cpuset="0x1" nodeset="0x1">
    <object type="PU" os_index="0" cpuset="0x1" nodeset="0x1"/>
   </object>
  </object>
 </object>
</topology>
"#;

/// Each crash class with a NUMANode, and the object and set the error names.
const CRASHES: [(&str, &str); 5] = [
    // hwloc_bitmap_set: the root's complete_cpuset is NULL when the PU is inserted.
    (
        r#"<topology version="2.0">
<object type="Machine" cpuset="0x1" nodeset="0x1" complete_nodeset="0x1">
<object type="NUMANode" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1"/>
<object type="PU" os_index="0" cpuset="0x1" complete_cpuset="0x1"/>
</object>
</topology>"#,
        ":2: object Machine has a cpuset but no complete_cpuset",
    ),
    // hwloc_bitmap_set: the root's complete_nodeset is NULL when the NUMANode is inserted.
    (
        r#"<topology version="2.0">
<object type="Machine" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1">
<object type="NUMANode" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1"/>
<object type="PU" os_index="0" cpuset="0x1" complete_cpuset="0x1"/>
</object>
</topology>"#,
        ":2: object Machine has a nodeset but no complete_nodeset",
    ),
    // hwloc_bitmap_or: a NUMANode's complete_nodeset.
    (
        r#"<topology version="2.0">
<object type="Machine" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1">
<object type="NUMANode" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1"/>
<object type="PU" os_index="0" cpuset="0x1" complete_cpuset="0x1"/>
</object>
</topology>"#,
        ":3: object NUMANode P#0 has a nodeset but no complete_nodeset",
    ),
    // hwloc_bitmap_compare_first: sorting PUs whose complete_cpuset is NULL.
    (
        r#"<topology version="2.0">
<object type="Machine" cpuset="0x3" complete_cpuset="0x3" nodeset="0x1" complete_nodeset="0x1">
<object type="NUMANode" os_index="0" cpuset="0x3" complete_cpuset="0x3" nodeset="0x1" complete_nodeset="0x1"/>
<object type="PU" os_index="0" cpuset="0x1"/>
<object type="PU" os_index="1" cpuset="0x2"/>
</object>
</topology>"#,
        ":4: object PU P#0 has a cpuset but no complete_cpuset",
    ),
    // hwloc_bitmap_isequal: a 1.x NUMA node without cpusets.
    (
        r#"<topology>
<object type="Machine" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1">
<object type="NUMANode" os_index="0" nodeset="0x1" complete_nodeset="0x1"/>
</object>
</topology>"#,
        ":3: object NUMANode P#0 has no cpuset",
    ),
];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The input error of `result`, checked to be one line naming `path`.
fn input_error(result: hetsched_core::Result<Machine>, path: &Path) -> String {
    match result {
        Err(e @ Error::Input(_)) => {
            let msg = e.to_string();
            assert_eq!(e.exit_code(), 2);
            assert!(!msg.contains('\n'), "{msg}");
            assert!(msg.starts_with(&path.display().to_string()), "{msg}");
            msg
        }
        Err(e) => panic!("{}: expected an input error, got {e:?}", path.display()),
        Ok(_) => panic!("{}: loaded", path.display()),
    }
}

/// Runs `f` on a thread and fails if it takes longer than `limit` (a hang would leave
/// the thread blocked, and the test would fail rather than wait forever).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}"))
}

#[test]
fn the_issue_38_xml_is_refused_before_hwloc() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "crash.xml", NO_NUMA_NODE);
    let msg = input_error(
        hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu),
        &path,
    );
    assert!(
        msg.ends_with("crash.xml: no NUMANode object: hwloc 2.9 crashes on or refuses such a file; an hwloc 2.x export always has one"),
        "{msg}"
    );
}

#[test]
fn every_crash_class_is_refused_naming_its_object() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (xml, want)) in CRASHES.iter().enumerate() {
        let path = write(dir.path(), &format!("crash{i}.xml"), xml);
        let msg = input_error(
            hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu),
            &path,
        );
        assert!(msg.contains(&format!("crash{i}.xml{want}")), "{msg}");
    }
}

#[test]
fn hwloc_crashing_in_its_child_is_an_input_error() {
    // hwloc::load has no structural check: these files reach libhwloc and crash it, in
    // the child, and this process goes on.
    let dir = tempfile::tempdir().unwrap();
    let xmls = std::iter::once(NO_NUMA_NODE).chain(CRASHES.iter().map(|(x, _)| *x));
    for (i, xml) in xmls.enumerate() {
        let path = write(dir.path(), &format!("crash{i}.xml"), xml);
        let origin = path.display().to_string();
        let msg = input_error(hwloc::load(HwlocInput::Xml(&path), "crash", &origin), &path);
        assert!(
            msg.starts_with(&format!("{origin}: hwloc crashed (SIGSEGV) loading it:")),
            "{msg}"
        );
    }
    // Still alive, and hwloc still loads.
    let good = topologies().join("xml/fakecpukinds.xml");
    hwloc::load(HwlocInput::Xml(&good), "good", "good.xml").unwrap();
}

#[test]
fn a_file_over_the_cap_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["big.xml", "big.toml"] {
        let path = dir.path().join(name);
        // Sparse: no 64 MiB written.
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(hetsched_topology::machine_file::limits::MAX_FILE_BYTES + 1)
            .unwrap();
        let msg = input_error(
            hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu),
            &path,
        );
        assert!(
            msg.ends_with("a machine file may have at most 64 MiB"),
            "{msg}"
        );
    }
}

#[test]
fn malformed_or_foreign_xml_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "<topology version=\"2.0\"><object",
            "not an hwloc XML file: malformed XML: ",
        ),
        (
            "<root/>",
            "not an hwloc XML file (the root element is <root>, not <topology>)",
        ),
        ("", "not an hwloc XML file: malformed XML: "),
    ] {
        let path = write(dir.path(), "bad.xml", text);
        let msg = input_error(
            hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu),
            &path,
        );
        assert!(msg.contains(want), "{msg}");
    }
}

#[test]
fn non_finite_or_overflowing_numbers_from_an_xml_are_unknown() {
    // strtof reads "inf"; the CUDA memory size (KiB) overflows u64 once in bytes.
    let text = std::fs::read_to_string(topologies().join("xml/power8gpudistances.xml")).unwrap();
    let text = text
        .replacen("pci_link_speed=\"15.753846\"", "pci_link_speed=\"inf\"", 1)
        .replacen(
            "\"CUDAGlobalMemorySize\" value=\"16671616\"",
            "\"CUDAGlobalMemorySize\" value=\"18446744073709551615\"",
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "odd.xml", &text);
    let m = hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu).unwrap();
    let gpu = |bus: &str| {
        m.accelerators
            .iter()
            .find(|a| a.pci_bus_id.as_deref() == Some(bus))
            .unwrap()
    };
    let (odd, even) = (gpu("0002:01:00.0"), gpu("0003:01:00.0"));
    assert_eq!(
        (odd.link_bandwidth_bytes_per_s, odd.memory_bytes),
        (None, None)
    );
    assert!(even.link_bandwidth_bytes_per_s.unwrap() > 15e9);
    assert_eq!(even.memory_bytes, Some(16671616 << 10));
}

#[test]
fn a_fifo_in_a_sysfs_dump_stops_at_the_deadline() {
    // hwloc opens the dump's files blocking: a FIFO among them would hang it forever.
    let archive = topologies().join("sysfs/16amd64-8n2c.tar.bz2");
    let dump = hetsched_topology::sysfs_dump::extract(&archive).unwrap();
    let online = dump.root.join("sys/devices/system/cpu/online");
    std::fs::remove_file(&online).unwrap();
    let c = std::ffi::CString::new(online.to_str().unwrap()).unwrap();
    // SAFETY: a valid C path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let origin = dump.root.display().to_string();
    let root = dump.root.clone();
    let start = Instant::now();
    let result = within(Duration::from_secs(20), move || {
        let limits = Limits {
            timeout: Duration::from_secs(2),
            ..Limits::DEFAULT
        };
        let input = HwlocInput::SysfsRoot {
            root: &dump.root,
            env: &[],
        };
        hwloc::load_isolated(input, "fifo", &origin, &limits)
    });
    let msg = input_error(result, &root);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        msg.contains("hwloc did not finish loading it within 2 s"),
        "{msg}"
    );
}

#[test]
fn a_machine_loaded_in_a_child_equals_one_loaded_here() {
    let mut xmls: Vec<PathBuf> = std::fs::read_dir(topologies().join("xml"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            !std::fs::read_to_string(p)
                .unwrap()
                .contains("version=\"3.0\"")
        })
        .collect();
    xmls.sort();
    assert!(xmls.len() >= 10, "{xmls:?}");
    for path in &xmls {
        let origin = path.display().to_string();
        let here = hwloc::load_in_process(HwlocInput::Xml(path), "m", &origin).unwrap();
        let child = hwloc::load(HwlocInput::Xml(path), "m", &origin).unwrap();
        assert!(!here.pus.is_empty(), "{origin}");
        assert_eq!(child, here, "{origin}");
    }
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(topologies().join("sysfs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".tar.bz2"))
        .collect();
    dumps.sort();
    assert!(dumps.len() >= 6, "{dumps:?}");
    for archive in &dumps {
        let env = hetsched_topology::sysfs_dump::test_env(archive).unwrap();
        let dump = hetsched_topology::sysfs_dump::extract(archive).unwrap();
        let origin = archive.display().to_string();
        let input = || HwlocInput::SysfsRoot {
            root: &dump.root,
            env: &env,
        };
        let here = hwloc::load_in_process(input(), "m", &origin).unwrap();
        let child = hwloc::load(input(), "m", &origin).unwrap();
        assert!(!here.pus.is_empty(), "{origin}");
        assert_eq!(child, here, "{origin}");
    }
}

//! StarPU calibrations: the ones Debian's `starpu-examples` installs (skipped, saying
//! so, where it is not installed; CI installs it, `scripts/deps.sh`), and hostile
//! copies of them, each refused at once with a one-line input error naming the file and
//! the line.

use hetsched_core::machine::{Machine, UnitGranularity, UnitType};
use hetsched_core::perf_model::{Arch, PerfModels};
use hetsched_core::Error;
use hetsched_topology::starpu::{self, Sampling, DEBIAN_DIR};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn installed() -> bool {
    let there = Path::new(DEBIAN_DIR).join("bus/idgraf.config").exists();
    if !there {
        println!("skipped: {DEBIAN_DIR} is not installed (Debian package starpu-examples)");
    }
    there
}

fn load(rest: &str) -> hetsched_core::Result<(Machine, PerfModels)> {
    let m = hetsched_topology::load(&format!("starpu:{rest}"), UnitGranularity::Pu)?;
    Ok((m, Sampling::parse(rest)?.models()?))
}

fn arch(unit_type: UnitType, footprint: u64) -> Arch {
    Arch {
        unit_type,
        capacity: 1024,
        footprint,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

#[test]
fn idgraf_is_12_cpus_and_8_cuda_gpus_with_their_host_links() {
    if !installed() {
        return;
    }
    let (m, _) = load(&format!("{DEBIAN_DIR}:idgraf")).unwrap();
    assert_eq!(m.name, "starpu:idgraf");
    let count = |t| m.units.iter().filter(|u| u.kind == t).count();
    assert_eq!((count(UnitType::Cpu), count(UnitType::Gpu)), (12, 8));
    assert!(m.units.iter().all(|u| u.capacity == 1024));
    let cuda0 = &m.accelerators[0];
    assert_eq!(cuda0.name, "cuda0");
    // All of RAM is the machine's one NUMA node, and every device is attached to it.
    assert_eq!(m.numa_nodes.len(), 1);
    assert!(m.accelerators.iter().all(|a| a.numa_node == Some(0)));
    // idgraf.bandwidth: row 0 (RAM) column 1 (CUDA0) 5985.150529 MB/s, row 1 column 0
    // 6518.853316 MB/s; idgraf.latency: 11.018609 and 11.927148 µs.
    let (h2d, d2h) = (5985.150529e6, 6518.853316e6);
    let bw = cuda0.link_bandwidth_bytes_per_s.unwrap();
    assert!(close(bw, 2.0 / (1.0 / h2d + 1.0 / d2h)), "{bw}");
    assert!(h2d < bw && bw < d2h);
    let lat = cuda0.link_latency_s.unwrap();
    assert!(close(lat, (11.018609 + 11.927148) / 2.0 * 1e-6), "{lat}");
    // The last device: row 0 column 8, row 8 column 0.
    let cuda7 = &m.accelerators[7];
    assert_eq!(cuda7.name, "cuda7");
    let (h2d, d2h) = (6025.792854e6, 6518.969813e6);
    let bw = cuda7.link_bandwidth_bytes_per_s.unwrap();
    assert!(close(bw, 2.0 / (1.0 / h2d + 1.0 / d2h)), "{bw}");
    // Looked up by host name, the same machine.
    let (by_host, _) = load("idgraf").unwrap();
    assert_eq!(by_host.accelerators, m.accelerators);
}

#[test]
fn idgraf_chol_model_22_is_its_cpu_row_and_the_cuda_rows_pooled() {
    if !installed() {
        return;
    }
    let (_, models) = load(&format!("{DEBIAN_DIR}:idgraf")).unwrap();
    assert_eq!(models.kernels().len(), 40);
    // cpu0_impl0: 24c84a50 11059200 1.769472e+09 8.987520e+04 9.682708e+02 ... 232
    let cpu = models
        .get("chol_model_22", &arch(UnitType::Cpu, 0x24c84a50))
        .unwrap();
    assert_eq!(cpu.samples(), 232);
    assert!(close(cpu.mean(), 89875.20e-6), "{}", cpu.mean());
    // StarPU's deviation is over n, hetsched's over n - 1.
    let dev = 968.2708e-6 * (232.0f64 / 231.0).sqrt();
    assert!(close(cpu.dev(), dev), "{}", cpu.dev());
    // cuda0..cuda7's rows of 24c84a50 (mean µs, dev µs, n), pooled.
    let rows = [
        (2817.019, 150.6473, 3973.0),
        (2825.219, 122.7364, 3916.0),
        (2821.988, 163.1366, 3707.0),
        (2823.818, 156.0928, 3766.0),
        (2816.710, 141.4989, 3667.0),
        (2807.699, 129.2512, 3584.0),
        (2815.225, 144.5443, 3587.0),
        (2827.622, 130.4764, 3635.0),
    ];
    let n: f64 = rows.iter().map(|r| r.2).sum();
    let mean: f64 = rows.iter().map(|r| r.0 * r.2).sum::<f64>() / n;
    let m2: f64 = rows
        .iter()
        .map(|r| r.2 * r.1 * r.1 + r.2 * (r.0 - mean) * (r.0 - mean))
        .sum();
    let gpu = models
        .get("chol_model_22", &arch(UnitType::Gpu, 0x24c84a50))
        .unwrap();
    assert_eq!(gpu.samples(), 29835);
    assert!(close(gpu.mean(), mean * 1e-6), "{} {mean}", gpu.mean());
    assert!(
        close(gpu.dev(), (m2 / (n - 1.0)).sqrt() * 1e-6),
        "{}",
        gpu.dev()
    );
    assert!(gpu.recent().is_empty());
    // No OpenCL devices on idgraf, no OpenCL models.
    assert!(models
        .iter()
        .all(|(_, a, _)| a.unit_type != UnitType::OpenCl));
}

#[test]
fn every_installed_calibration_loads() {
    if !installed() {
        return;
    }
    let hosts = starpu::hosts(Path::new(DEBIAN_DIR));
    for host in [
        "attila",
        "hannibal",
        "hannibal-pitch",
        "idgraf",
        "mirage",
        "sirocco",
    ] {
        assert!(hosts.iter().any(|h| h == host), "{host} in {hosts:?}");
    }
    for host in &hosts {
        let (m, models) = load(&format!("{DEBIAN_DIR}:{host}")).unwrap();
        assert!(!models.is_empty(), "{host}");
        assert!(m
            .accelerators
            .iter()
            .all(|a| a.link_bandwidth_bytes_per_s.unwrap() > 0.0));
    }
    // attila: 3 CUDA then 3 OpenCL devices; opencl0 is memory node 4.
    let (m, models) = load(&format!("{DEBIAN_DIR}:attila")).unwrap();
    let names: Vec<&str> = m.accelerators.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        ["cuda0", "cuda1", "cuda2", "opencl0", "opencl1", "opencl2"]
    );
    assert_eq!(m.accelerators[3].kind, UnitType::OpenCl);
    // attila.bandwidth: row 0 column 4 3549.286897, row 4 column 0 (read here).
    let text = std::fs::read_to_string(Path::new(DEBIAN_DIR).join("bus/attila.bandwidth")).unwrap();
    let row4: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .nth(4)
        .unwrap()
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    let (h2d, d2h) = (3549.286897e6, row4[0] * 1e6);
    let bw = m.accelerators[3].link_bandwidth_bytes_per_s.unwrap();
    assert!(close(bw, 2.0 / (1.0 / h2d + 1.0 / d2h)), "{bw}");
    // Debian's calibrations have CPU and CUDA histories only.
    assert!(models.iter().any(|(_, a, _)| a.unit_type == UnitType::Gpu));
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A sampling directory `sampling` in a temporary directory holding the host `h`: a
/// 2-CPU, 1-GPU machine with one codelet model.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("sampling");
    std::fs::create_dir_all(s.join("bus")).unwrap();
    std::fs::create_dir_all(s.join("codelets/45")).unwrap();
    let w = |p: &str, t: &str| std::fs::write(s.join(p), t).unwrap();
    w("bus/h.config", CONFIG);
    w("bus/h.bandwidth", BANDWIDTH);
    w("bus/h.latency", LATENCY);
    w("codelets/45/k.h", MODEL);
    dir
}

const CONFIG: &str = "# Current configuration\n2 # Number of CPUs\n1 # Number of CUDA devices\n0 # Number of OpenCL devices\n0 # Number of MIC devices\n";
const BANDWIDTH: &str =
    "# to 0\t\tto 1\t\tto 2\n0.0\t6000.0\tnan\n6500.0\t0.0\tnan\nnan\tnan\tnan\n";
const LATENCY: &str = "# to 0\t\tto 1\t\tto 2\n0.0\t11.0\tnan\n12.0\t0.0\tnan\nnan\tnan\tnan\n";
const MODEL: &str = "##################
# Performance Model Version
45

####################
# COMBs
# number of combinations
2
####################
# COMB_0
# number of types devices
1
# device type (CPU - 0, CUDA - 1, OPENCL - 2, MIC - 3)
0
# device id
0
# number of cores
1
# number of implementations
1
# number of entries
1
# sumlnx\tsumlnx2\t\tsumlny\t\tsumlnxlny\talpha\t\tbeta\t\tn\tminx\t\tmaxx
0.000000e+00\t0.000000e+00\t0.000000e+00\t0.000000e+00\tnan\tnan\t0\t0\t0
# a\t\tb\t\tc
nan\tnan\tnan
# not multiple-regression-base
0
# hash\t\tsize\t\tflops\t\tmean (us)\tdev (us)\tsum\t\tsum2\t\tn
24c84a50\t11059200\t1.769472e+09\t8.987520e+04\t9.682708e+02\t2.085105e+07\t1.874210e+12\t232

####################
# COMB_1
# number of types devices
1
# device type (CPU - 0, CUDA - 1, OPENCL - 2, MIC - 3)
1
# device id
0
# number of cores
1
# number of implementations
1
# number of entries
1
# sumlnx\tsumlnx2\t\tsumlny\t\tsumlnxlny\talpha\t\tbeta\t\tn\tminx\t\tmaxx
0.000000e+00\t0.000000e+00\t0.000000e+00\t0.000000e+00\tnan\tnan\t0\t0\t0
# a\t\tb\t\tc
nan\tnan\tnan
# not multiple-regression-base
0
# hash\t\tsize\t\tflops\t\tmean (us)\tdev (us)\tsum\t\tsum2\t\tn
24c84a50\t11059200\t1.769472e+09\t2.825219e+03\t1.227364e+02\t1.106356e+07\t3.131597e+10\t3916
";

/// The input error loading the fixture's host gives, which must come within seconds.
fn refused(dir: &Path) -> String {
    let rest = format!("{}:h", dir.join("sampling").display());
    let start = Instant::now();
    let r = load(&rest);
    assert!(start.elapsed() < Duration::from_secs(5));
    match r {
        Err(e @ Error::Input(_)) => {
            let m = e.to_string();
            assert_eq!(m.lines().count(), 1, "{m}");
            assert_eq!(e.exit_code(), 2);
            m
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

fn replace(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join("sampling").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn the_fixture_loads() {
    let dir = fixture();
    let (m, models) = load(&format!("{}:h", dir.path().join("sampling").display())).unwrap();
    assert_eq!((m.pus.len(), m.accelerators.len()), (2, 1));
    let bw = m.accelerators[0].link_bandwidth_bytes_per_s.unwrap();
    assert!(close(bw, 2.0 / (1.0 / 6000e6 + 1.0 / 6500e6)));
    assert!(close(m.accelerators[0].link_latency_s.unwrap(), 11.5e-6));
    let h = models.get("k", &arch(UnitType::Gpu, 0x24c84a50)).unwrap();
    assert_eq!(h.samples(), 3916);
}

/// What StarPU 1.3.10 writes for a 2-CPU machine: a line for the NUMA nodes.
const CONFIG_1_3: &str = "# Current configuration\n2 # Number of CPUs\n2 # Number of NUMA nodes\n1 # Number of CUDA devices\n0 # Number of OpenCL devices\n0 # Number of MIC devices\n0 # Number of MPI devices\n";

#[test]
fn a_starpu_1_3_calibration_has_numa_nodes_first_and_a_device_links_to_the_nearest() {
    let dir = fixture();
    let s = dir.path().join("sampling");
    std::fs::write(s.join("bus/h.config"), CONFIG_1_3).unwrap();
    // Nodes 0 and 1: RAM; node 2: cuda0, nearer node 1 (7000/7200 MB/s, 9/10 µs).
    let bw = "# to 0\tto 1\tto 2\n0\t9000\t5000\n9000\t0\t7000\n5200\t7200\t0\n";
    let lat = "# to 0\tto 1\tto 2\n0\t1\t20\n1\t0\t9\n21\t10\t0\n";
    std::fs::write(s.join("bus/h.bandwidth"), bw).unwrap();
    std::fs::write(s.join("bus/h.latency"), lat).unwrap();
    let (m, _) = load(&format!("{}:h", s.display())).unwrap();
    assert_eq!(
        (m.pus.len(), m.numa_nodes.len(), m.accelerators.len()),
        (2, 1, 1)
    );
    let a = &m.accelerators[0];
    assert!(close(
        a.link_bandwidth_bytes_per_s.unwrap(),
        2.0 / (1.0 / 7000e6 + 1.0 / 7200e6)
    ));
    assert!(close(a.link_latency_s.unwrap(), 9.5e-6));
    // Its matrices must then cover 3 nodes.
    std::fs::write(s.join("bus/h.bandwidth"), BANDWIDTH).unwrap();
    std::fs::write(s.join("bus/h.latency"), LATENCY).unwrap();
    let m = refused(dir.path());
    assert!(m.contains("h.bandwidth:2: row 0, column 2: nan, expected a number > 0 (memory node 2 is a device of the .config)"), "{m}");
}

#[test]
fn a_malformed_model_file_is_one_line_naming_the_file_and_line() {
    let cases: &[(&str, &str, &str)] = &[
        // A wrong version.
        ("\n45\n", "\n44\n", "k.h:3: performance model version \"44\": this reads version 45"),
        // Negative, NaN and huge counts.
        ("combinations\n2\n", "combinations\n-1\n", "k.h:8: the number of combinations: \"-1\", expected an integer in [0, 4294967295]"),
        ("combinations\n2\n", "combinations\nnan\n", "k.h:8: the number of combinations: \"nan\""),
        ("combinations\n2\n", "combinations\n99999999999\n", "k.h:8: the number of combinations: \"99999999999\""),
        // A huge count the file does not hold: it ends, no allocation of that size.
        ("combinations\n2\n", "combinations\n4294967295\n", "the file ends here, expected combination 2: the number of devices"),
        ("entries\n1\n", "entries\n4294967295\n", "combination 0: implementation 0: history entry 1 of 4294967295: 1 fields, expected 7 or 8"),
        ("implementations\n1\n", "implementations\n100000\n", "the number of implementations: \"100000\", expected an integer in [0, 64]"),
        ("not multiple-regression-base\n0\n", "not multiple-regression-base\n4000000000\n", "the number of multiple regression coefficients: \"4000000000\""),
        ("not multiple-regression-base\n0\n", "not multiple-regression-base\n2\t1.0\n", "the multiple regression: 1 coefficients after the count 2"),
        // Bad fields of a history entry.
        ("\t232\n", "\t0\n", "history entry 0 of 1: n: 0, expected an integer in [1, 4294967295]"),
        ("\t232\n", "\t-232\n", "history entry 0 of 1: n: \"-232\""),
        ("8.987520e+04", "nan", "history entry 0 of 1: mean (us): nan, expected a finite number >= 0"),
        ("8.987520e+04", "-1", "history entry 0 of 1: mean (us): -1, expected a finite number >= 0"),
        ("24c84a50\t11059200\t1.769472e+09\t8.9", "zz\t11059200\t1.769472e+09\t8.9", "history entry 0 of 1: hash: \"zz\", expected at most 8 hexadecimal digits"),
        ("\t232\n", "\t232\t7\n", "history entry 0 of 1: more fields, expected 7 or 8"),
        ("nan\tnan\tnan\n", "nan\tnan\n", "non-linear regression: 2 fields, expected 3"),
        // An unknown device type.
        ("MIC - 3)\n0\n", "MIC - 3)\n5\n", "the device type (CPU 0, CUDA 1, OpenCL 2, MIC 3): \"5\", expected an integer in [0, 3]"),
    ];
    for (from, to, want) in cases {
        let dir = fixture();
        replace(dir.path(), "codelets/45/k.h", from, to);
        let m = refused(dir.path());
        assert!(m.contains("codelets/45/k.h:"), "{m}");
        assert!(m.contains(want), "{to:?}: {m}");
    }
    // Truncated: the file ends within the second combination.
    let dir = fixture();
    let path = dir.path().join("sampling/codelets/45/k.h");
    std::fs::write(&path, &MODEL[..MODEL.len() * 2 / 3]).unwrap();
    let m = refused(dir.path());
    assert!(
        m.contains("k.h:") && m.contains("the file ends here, expected combination 1"),
        "{m}"
    );
    // Data after what the counts announce is not read, as StarPU does not read it.
    let dir = fixture();
    replace(
        dir.path(),
        "codelets/45/k.h",
        "combinations\n2\n",
        "combinations\n1\n",
    );
    let (_, models) = load(&format!("{}:h", dir.path().join("sampling").display())).unwrap();
    assert!(models.get("k", &arch(UnitType::Gpu, 0x24c84a50)).is_none());
    assert!(models.get("k", &arch(UnitType::Cpu, 0x24c84a50)).is_some());
}

#[test]
fn a_history_of_many_entries_loads_in_one_pass() {
    // 200,000 entries (12 MB, under the 16 MiB cap): read in linear time.
    let dir = fixture();
    let path = dir.path().join("sampling/codelets/45/k.h");
    let entries = 200_000u32;
    let mut text = MODEL.replacen("entries\n1\n", &format!("entries\n{entries}\n"), 1);
    let at = text.find("24c84a50\t11059200").unwrap();
    let rows: String = (0..entries)
        .map(|i| {
            format!("{i:08x}\t1024\t1.0e+06\t1.000000e+02\t1.000000e+00\t1.0e+04\t1.0e+06\t3\n")
        })
        .collect();
    let end = at + text[at..].find('\n').unwrap() + 1;
    text.replace_range(at..end, &rows);
    std::fs::write(&path, text).unwrap();
    let start = Instant::now();
    let (_, models) = load(&format!("{}:h", dir.path().join("sampling").display())).unwrap();
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(
        models
            .iter()
            .filter(|(_, a, _)| a.unit_type == UnitType::Cpu)
            .count(),
        entries as usize
    );
    // One footprint twice: refused.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replacen("00000001\t", "00000000\t", 1);
    std::fs::write(&path, text).unwrap();
    let m = refused(dir.path());
    assert!(
        m.contains("history entry 1 of 200000: hash: 00000000 twice"),
        "{m}"
    );
}

#[test]
fn a_malformed_bus_file_is_one_line_naming_the_file_and_line() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("bus/h.bandwidth", "6500.0\t0.0\tnan\n", "6500.0\t0.0\n", "h.bandwidth:3: row 1: 2 columns, expected 3"),
        ("bus/h.bandwidth", "nan\tnan\tnan\n", "", "h.bandwidth:3: the file ends here, expected row 2 of 3"),
        ("bus/h.bandwidth", "nan\tnan\tnan\n", "nan\tnan\tnan\n1\t2\t3\n", "h.bandwidth:5: more rows than the 3×3 matrix has"),
        ("bus/h.bandwidth", "6500.0", "-6500.0", "h.bandwidth:3: row 1, column 0: -6500.0, expected a number >= 0 or nan"),
        ("bus/h.bandwidth", "6500.0", "fast", "h.bandwidth:3: row 1, column 0: \"fast\", expected a number"),
        ("bus/h.bandwidth", "6500.0", "nan", "h.bandwidth:3: row 1, column 0: nan, expected a number > 0 (memory node 1 is a device of the .config)"),
        ("bus/h.latency", "0.0\t11.0", "0.0\tinf", "h.latency:2: row 0, column 1: inf, expected a number >= 0 or nan"),
        ("bus/h.config", "1 # Number of CUDA", "3 # Number of CUDA", "h.bandwidth: a 3×3 matrix, expected one over at least 4 memory nodes"),
        ("bus/h.config", "2 # Number of CPUs", "-2 # Number of CPUs", "h.config:2: the number of CPUs: \"-2\", expected an integer in [1, 16384]"),
        ("bus/h.config", "2 # Number of CPUs", "nan # Number of CPUs", "h.config:2: the number of CPUs: \"nan\""),
        ("bus/h.config", "1 # Number of CUDA", "4294967296 # Number of CUDA", "h.config:3: the number of CUDA devices: \"4294967296\", expected an integer in [0, 1024]"),
        ("bus/h.config", "0 # Number of MIC devices\n", "0 # Number of MIC devices\n1 # MPI\n", "h.config:6: the number of MPI devices (not imported): \"1\", expected an integer in [0, 0]"),
        ("bus/h.config", "0 # Number of OpenCL devices\n", "", "h.config: no line gives the number of OpenCL devices"),
        ("bus/h.config", "0 # Number of OpenCL devices\n", "0\n", "h.config:4: \"0\": expected a count and its comment, `N # Number of X`"),
        ("bus/h.config", "0 # Number of OpenCL devices\n", "0 # Number of CUDA devices\n", "h.config:4: the number of CUDA devices twice"),
        ("bus/h.config", "0 # Number of OpenCL devices\n", "0 # Number of GPUs\n", "h.config:4: \"0 # Number of GPUs\": expected"),
        ("bus/h.config", "# Current configuration\n", "# Current configuration\n2000 # Number of NUMA nodes\n", "h.config:2: the number of NUMA nodes: \"2000\", expected an integer in [1, 1024]"),
    ];
    for (file, from, to, want) in cases {
        let dir = fixture();
        replace(dir.path(), file, from, to);
        let m = refused(dir.path());
        assert!(m.contains(want), "{file} {to:?}: {m}");
    }
    // A matrix too wide to be one: refused on its first row, not read on.
    let dir = fixture();
    let wide = vec!["1.0"; 2000].join("\t") + "\n";
    std::fs::write(dir.path().join("sampling/bus/h.bandwidth"), wide.repeat(3)).unwrap();
    let m = refused(dir.path());
    assert!(m.contains("h.bandwidth:1: more than 1024 columns"), "{m}");
}

#[test]
fn a_fifo_a_link_or_a_huge_file_in_place_of_a_file_is_refused_at_once() {
    for file in ["bus/h.config", "bus/h.bandwidth", "codelets/45/k.h"] {
        let dir = fixture();
        let path = dir.path().join("sampling").join(file);
        std::fs::remove_file(&path).unwrap();
        mkfifo(&path);
        let m = refused(dir.path());
        assert!(m.contains(file) && m.contains("is a FIFO"), "{m}");

        let dir = fixture();
        let path = dir.path().join("sampling").join(file);
        let target = dir.path().join("elsewhere");
        std::fs::rename(&path, &target).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let m = refused(dir.path());
        assert!(m.contains(file) && m.contains("is a symbolic link"), "{m}");

        // 100 MB (sparse: nothing is written, nothing may be read).
        let dir = fixture();
        let path = dir.path().join("sampling").join(file);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(100_000_000).unwrap();
        let m = refused(dir.path());
        assert!(
            m.contains(file) && m.contains("100000000 bytes; ") && m.contains("at most"),
            "{m}"
        );
    }
}

#[test]
fn a_missing_host_says_where_it_looked() {
    let e = Sampling::parse("no-such-host").unwrap_err().to_string();
    assert!(
        e.starts_with("starpu:no-such-host: no StarPU calibration of \"no-such-host\" in "),
        "{e}"
    );
    assert!(e.contains(DEBIAN_DIR), "{e}");
    let e = hetsched_topology::load("starpu:", UnitGranularity::Pu).unwrap_err();
    assert!(
        e.to_string()
            .contains("expected starpu:HOST or starpu:DIR:HOST"),
        "{e}"
    );
}

//! StarPU's sampling directory as a machine and performance models.
//!
//! StarPU calibrates a machine into a directory (`$STARPU_PERF_MODEL_DIR`, by default
//! `$STARPU_HOME/.starpu/sampling`; Debian's `starpu-examples` ships the directories of
//! INRIA's machines in `/usr/share/starpu/perfmodels/sampling`). For a host it holds:
//!
//! - `bus/<host>.config`: the number of CPUs, NUMA nodes (written since StarPU 1.3;
//!   one before), CUDA, OpenCL, MIC and MPI devices, one a line, each named by its
//!   comment;
//! - `bus/<host>.bandwidth` and `bus/<host>.latency`: square matrices over StarPU's
//!   memory nodes (the NUMA nodes of host RAM, then the CUDA devices, then the OpenCL
//!   ones, then the MIC ones; `nan` where no node is), in MB/s (10^6 bytes/s) and µs.
//!   Row = from, column = to: StarPU writes the header `# to 0  to 1 ...` over the
//!   columns, and its SimGrid platform files of the same calibration name row 0,
//!   column 1 the link `RAM-CUDA0` (host to device) and row 1, column 0 `CUDA0-RAM`.
//! - `bus/<host>.affinity` (per device, the CPUs nearest it) and the SimGrid platform
//!   files: not read.
//! - `codelets/45/<symbol>.<host>`: a codelet's history-based model, format version 45
//!   (the one StarPU 1.3 writes and reads, and the one Debian ships).
//!
//! The machine, named `starpu:<host>`, has the CPUs as one package of single-PU cores,
//! all of capacity 1024, on one NUMA node of unknown memory (StarPU does not record
//! which CPUs a NUMA node holds, so several become one); each device is an accelerator
//! (`cuda<i>` of type `gpu`, `opencl<i>`, `mic<i>` of type `coprocessor`) whose host
//! link is what the matrices say between RAM (the NUMA node with the fastest link to
//! it) and it: as hetsched's link has one bandwidth and one latency for both
//! directions, the bandwidth is the harmonic mean of the two directions and the
//! latency their mean, so that copying a given number of bytes in and the same number
//! out costs what the two directions' figures make it. Dropped: the bandwidths and
//! latencies between devices and between NUMA nodes (a machine has no links between
//! accelerators), the affinity, the devices' memory (only in the platform files) and
//! their speeds (the models say them). MPI devices are not imported (a calibration
//! with any is refused).
//!
//! A codelet file becomes the models of the kernel `<symbol>`. StarPU keeps a history
//! per worker (`cuda0`, `cuda1`, ...) and footprint; hetsched keys a model by unit type
//! and capacity, and every imported unit of a type has capacity 1024, so the histories
//! of all devices of a type are pooled: count, mean and squared deviations add up
//! exactly as if one history had seen every run (as StarPU's own `sum`, `sum2` and `n`
//! do). Each entry's mean and deviation (StarPU's, over `n`) are taken as written, not
//! recomputed from `sum` and `sum2`, whose difference loses the precision of the
//! printed digits. The footprint is StarPU's hash of the task's data sizes; the data
//! size itself and the flops are not kept (the footprint stands for the size). Also
//! dropped: the regression models (their parameters are checked to be numbers, not
//! imported), combined workers (a combination of several devices or of several cores:
//! parallel tasks), and an implementation other than the first becomes the kernel
//! `<symbol>:impl<k>` rather than being pooled with it. As StarPU's reader, this one
//! reads the combinations a file announces and ignores what follows them.
//!
//! Every file is read only if it is a regular file (a FIFO, a device or a symbolic link
//! is refused) under a size cap; a malformed one is a one-line input error naming the
//! file, the line and the field, with what was expected. Counts in a file never size an
//! allocation: each counted item is read from its own lines, and a file that ends
//! early is an error.

use hetsched_core::machine::{
    Accelerator, Core, Machine, NumaNode, Package, Pu, UnitType, CAPACITY_SCALE,
};
use hetsched_core::perf_model::{Arch, History, PerfModels};
use hetsched_core::{Error, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Debian's directory of StarPU's sample calibrations (package `starpu-examples`).
pub const DEBIAN_DIR: &str = "/usr/share/starpu/perfmodels/sampling";

/// The history-model format version read (StarPU 1.3's).
pub const MODEL_VERSION: u32 = 45;

/// The largest bus file read.
pub const MAX_BUS_FILE_BYTES: u64 = 1 << 20;

/// The largest codelet model file read.
pub const MAX_MODEL_FILE_BYTES: u64 = 16 << 20;

/// The most memory nodes a bus matrix may have (StarPU's `STARPU_MAXNODES` is 16 to 64).
pub const MAX_NODES: usize = 1024;

const MAX_CPUS: u32 = 16_384;
const MAX_DEVICES: u32 = 1024;
const MAX_IMPLEMENTATIONS: u32 = 64;
const MAX_COEFFICIENTS: u32 = 1024;

/// One host's calibration in a sampling directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sampling {
    pub dir: PathBuf,
    pub host: String,
}

/// The directories `starpu:HOST` looks in, in order: `$STARPU_PERF_MODEL_DIR` if set,
/// else `$STARPU_HOME/.starpu/sampling` (`STARPU_HOME` defaulting to `HOME`), as StarPU
/// itself; then Debian's [`DEBIAN_DIR`].
pub fn search_dirs() -> Vec<PathBuf> {
    search_dirs_in(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
}

fn search_dirs_in(env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = env("STARPU_PERF_MODEL_DIR") {
        dirs.push(PathBuf::from(d));
    } else if let Some(home) = env("STARPU_HOME").or_else(|| env("HOME")) {
        dirs.push(PathBuf::from(home).join(".starpu/sampling"));
    }
    if !dirs.iter().any(|d| d == Path::new(DEBIAN_DIR)) {
        dirs.push(PathBuf::from(DEBIAN_DIR));
    }
    dirs
}

/// A host name as StarPU names files with it: letters, digits, `-`, `_`, `.`, not
/// starting with `.`.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Sampling {
    /// The calibration a `--machine starpu:REST` names: `REST` is `HOST` (looked up in
    /// [`search_dirs`]) or `DIR:HOST` (a sampling directory: the one holding `bus/`
    /// and `codelets/`).
    pub fn parse(rest: &str) -> Result<Sampling> {
        let spec = format!("starpu:{rest}");
        let (dir, host) = match rest.rsplit_once(':') {
            Some((dir, host)) => (Some(PathBuf::from(dir)), host),
            None => (None, rest),
        };
        if !valid_host(host) || dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
            return Err(Error::input(format!(
                "{spec}: expected starpu:HOST or starpu:DIR:HOST (HOST: letters, digits, \
                 `-`, `_`, `.`; DIR: a StarPU sampling directory)"
            )));
        }
        let host = host.to_string();
        match dir {
            Some(dir) => {
                let s = Sampling { dir, host };
                if !s.bus_file("config").exists() {
                    return Err(Error::input(format!(
                        "{spec}: no {} (a StarPU sampling directory has bus/HOST.config)",
                        s.bus_file("config").display()
                    )));
                }
                Ok(s)
            }
            None => {
                let dirs = search_dirs();
                for dir in &dirs {
                    let s = Sampling {
                        dir: dir.clone(),
                        host: host.clone(),
                    };
                    if s.bus_file("config").exists() {
                        return Ok(s);
                    }
                }
                let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                let found: Vec<String> = dirs.iter().flat_map(|d| hosts(d)).collect();
                Err(Error::input(format!(
                    "{spec}: no StarPU calibration of {host:?} in {} (found: {})",
                    shown.join(", "),
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                )))
            }
        }
    }

    /// `bus/<host>.<ext>`.
    pub fn bus_file(&self, ext: &str) -> PathBuf {
        self.dir.join("bus").join(format!("{}.{ext}", self.host))
    }

    /// The codelet model files of the host, `(symbol, path)` sorted by symbol.
    pub fn codelet_files(&self) -> Vec<(String, PathBuf)> {
        let dir = self.dir.join("codelets").join(MODEL_VERSION.to_string());
        let suffix = format!(".{}", self.host);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut files: Vec<(String, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let symbol = name.strip_suffix(&suffix)?;
                (!symbol.is_empty() && !symbol.starts_with('.'))
                    .then(|| (symbol.to_string(), e.path()))
            })
            .collect();
        files.sort();
        files
    }

    /// The host's machine, named `starpu:<host>` (units not derived yet).
    pub fn machine(&self) -> Result<Machine> {
        let config = read(&self.bus_file("config"), "a StarPU bus file")?;
        let config = parse_config(&config, &self.bus_file("config").display().to_string())?;
        let matrix = |ext: &str| -> Result<(Matrix, String)> {
            let path = self.bus_file(ext);
            let origin = path.display().to_string();
            Ok((
                parse_matrix(&read(&path, "a StarPU bus file")?, &origin)?,
                origin,
            ))
        };
        let bandwidth = matrix("bandwidth")?;
        let latency = matrix("latency")?;
        build(
            &config,
            &bandwidth,
            &latency,
            &format!("starpu:{}", self.host),
            &format!("starpu:{}:{}", self.dir.display(), self.host),
        )
    }

    /// The models of every codelet of the host.
    pub fn models(&self) -> Result<PerfModels> {
        let mut models = PerfModels::default();
        for (symbol, path) in self.codelet_files() {
            let text = read_capped(&path, "a StarPU performance model", MAX_MODEL_FILE_BYTES)?;
            parse_codelet(&text, &path.display().to_string(), &symbol, &mut models)?;
        }
        Ok(models)
    }
}

/// The hosts with a `bus/<host>.config` in `dir`, sorted.
pub fn hosts(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("bus")) else {
        return Vec::new();
    };
    let mut hosts: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".config").map(str::to_string))
        .filter(|h| valid_host(h))
        .collect();
    hosts.sort();
    hosts
}

/// A calibration found in the search directories, for `hetsched machines`.
#[derive(Debug)]
pub struct Found {
    pub sampling: Sampling,
    /// CPUs and devices, or why the configuration could not be read.
    pub config: Result<Config>,
    /// Codelet model files.
    pub models: usize,
}

/// Every calibration in [`search_dirs`] (a host in two directories: the first), and
/// the directories searched.
pub fn installed() -> (Vec<PathBuf>, Vec<Found>) {
    let dirs = search_dirs();
    let mut found: Vec<Found> = Vec::new();
    for dir in &dirs {
        for host in hosts(dir) {
            if found.iter().any(|f| f.sampling.host == host) {
                continue;
            }
            let sampling = Sampling {
                dir: dir.clone(),
                host,
            };
            let path = sampling.bus_file("config");
            let config = read(&path, "a StarPU bus file")
                .and_then(|t| parse_config(&t, &path.display().to_string()));
            let models = sampling.codelet_files().len();
            found.push(Found {
                sampling,
                config,
                models,
            });
        }
    }
    (dirs, found)
}

fn read(path: &Path, what: &str) -> Result<String> {
    read_capped(path, what, MAX_BUS_FILE_BYTES)
}

fn read_capped(path: &Path, what: &str, cap: u64) -> Result<String> {
    hetsched_util::files::read_text_nofollow(path, what, cap)
}

/// The data lines of a StarPU file: comment (`#`) and blank lines skipped, each with its
/// 1-based line number.
struct Lines<'a> {
    origin: &'a str,
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    last: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, origin: &'a str) -> Self {
        Lines {
            origin,
            lines: text.lines().enumerate(),
            last: 0,
        }
    }

    /// The next data line, or an error saying the file ends where `what` was expected.
    fn next(&mut self, what: &str) -> Result<(usize, &'a str)> {
        for (i, line) in self.lines.by_ref() {
            self.last = i + 1;
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                return Ok((i + 1, line));
            }
        }
        Err(Error::input(format!(
            "{}:{}: the file ends here, expected {what}",
            self.origin, self.last
        )))
    }

    /// The next data line, if any.
    fn next_opt(&mut self) -> Option<(usize, &'a str)> {
        self.next("").ok()
    }

    /// The line of the next data line, if there is one (data past the end).
    fn more(&mut self) -> Option<usize> {
        self.next_opt().map(|(n, _)| n)
    }

    fn err(&self, line: usize, msg: impl std::fmt::Display) -> Error {
        Error::input(format!("{}:{line}: {msg}", self.origin))
    }

    /// A line holding one integer in `[lo, hi]` (a trailing `# comment` allowed).
    fn count(&mut self, what: &str, lo: u32, hi: u32) -> Result<u32> {
        let (n, line) = self.next(what)?;
        self.count_in(n, line, what, lo, hi)
    }

    fn count_in(&self, n: usize, line: &str, what: &str, lo: u32, hi: u32) -> Result<u32> {
        let value = line.split('#').next().unwrap_or("").trim();
        match value.parse::<u32>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(self.err(
                n,
                format!("{what}: {value:?}, expected an integer in [{lo}, {hi}]"),
            )),
        }
    }

    /// A line of exactly `len` whitespace-separated fields (named in errors by `what`).
    fn fields(&mut self, what: &str, len: &[usize]) -> Result<(usize, Vec<&'a str>)> {
        let (n, line) = self.next(what)?;
        let fields: Vec<&str> = line
            .split_whitespace()
            .take(len[len.len() - 1] + 1)
            .collect();
        if !len.contains(&fields.len()) {
            let expected: Vec<String> = len.iter().map(|l| l.to_string()).collect();
            return Err(self.err(
                n,
                format!(
                    "{what}: {} fields, expected {}",
                    if fields.len() > len[len.len() - 1] {
                        "more".to_string()
                    } else {
                        fields.len().to_string()
                    },
                    expected.join(" or ")
                ),
            ));
        }
        Ok((n, fields))
    }
}

/// A number as C's `printf` writes one (`nan` and `inf` included).
fn number(lines: &Lines, n: usize, what: &str, s: &str) -> Result<f64> {
    s.parse::<f64>()
        .map_err(|_| lines.err(n, format!("{what}: {s:?}, expected a number")))
}

/// A finite number ≥ 0.
fn non_negative(lines: &Lines, n: usize, what: &str, s: &str) -> Result<f64> {
    match number(lines, n, what, s)? {
        v if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(lines.err(n, format!("{what}: {s}, expected a finite number >= 0"))),
    }
}

fn integer<T: std::str::FromStr>(
    lines: &Lines,
    n: usize,
    what: &str,
    s: &str,
    range: &str,
) -> Result<T> {
    s.parse::<T>()
        .map_err(|_| lines.err(n, format!("{what}: {s:?}, expected an integer in {range}")))
}

/// A `bus/<host>.config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub cpus: u32,
    /// Memory nodes of host RAM (StarPU 1.3 writes their number; before, one).
    pub numa: u32,
    pub cuda: u32,
    pub opencl: u32,
    pub mic: u32,
}

/// Parses a `.config`: one count a line, each named by its comment (`12 # Number of
/// CPUs`): CPUs, CUDA and OpenCL devices, and, where the StarPU version writes them,
/// NUMA nodes (StarPU 1.3), MIC and MPI devices.
pub fn parse_config(text: &str, origin: &str) -> Result<Config> {
    const FIELDS: [(&str, &str, u32, u32); 6] = [
        ("cpus", "the number of CPUs", 1, MAX_CPUS),
        ("numa", "the number of NUMA nodes", 1, MAX_DEVICES),
        ("cuda", "the number of CUDA devices", 0, MAX_DEVICES),
        ("opencl", "the number of OpenCL devices", 0, MAX_DEVICES),
        ("mic", "the number of MIC devices", 0, MAX_DEVICES),
        ("mpi", "the number of MPI devices (not imported)", 0, 0),
    ];
    let mut lines = Lines::new(text, origin);
    let mut values: [Option<u32>; 6] = [None; 6];
    while let Some((n, line)) = lines.next_opt() {
        let label = line
            .split_once('#')
            .map_or(String::new(), |(_, l)| l.to_ascii_lowercase());
        let Some(k) = FIELDS
            .iter()
            .position(|(key, ..)| label.split_whitespace().any(|w| w == *key))
        else {
            return Err(lines.err(
                n,
                format!(
                    "{:?}: expected a count and its comment, `N # Number of X` with X CPUs, \
                     NUMA nodes, CUDA, OpenCL, MIC or MPI devices",
                    line.trim()
                ),
            ));
        };
        let (_, what, lo, hi) = FIELDS[k];
        if values[k].is_some() {
            return Err(lines.err(n, format!("{what} twice")));
        }
        values[k] = Some(lines.count_in(n, line, what, lo, hi)?);
    }
    for k in [0, 2, 3] {
        if values[k].is_none() {
            return Err(Error::input(format!(
                "{origin}: no line gives {} (`N # Number of ...`)",
                FIELDS[k].1
            )));
        }
    }
    let [cpus, numa, cuda, opencl, mic, _] = values;
    let config = Config {
        cpus: cpus.unwrap_or(1),
        numa: numa.unwrap_or(1),
        cuda: cuda.unwrap_or(0),
        opencl: opencl.unwrap_or(0),
        mic: mic.unwrap_or(0),
    };
    let devices = config.cuda + config.opencl + config.mic;
    if devices > MAX_DEVICES {
        return Err(Error::input(format!(
            "{origin}: {devices} devices, at most {MAX_DEVICES}"
        )));
    }
    Ok(config)
}

/// A bus matrix: `values[from][to]` (`None` for `nan`), and each row's line.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub values: Vec<Vec<Option<f64>>>,
    pub lines: Vec<usize>,
}

/// Parses a `.bandwidth` or `.latency`: a square matrix of numbers ≥ 0 or `nan`, one
/// row per line, at most [`MAX_NODES`] wide.
pub fn parse_matrix(text: &str, origin: &str) -> Result<Matrix> {
    let mut lines = Lines::new(text, origin);
    let mut m = Matrix {
        values: Vec::new(),
        lines: Vec::new(),
    };
    let mut width = None;
    loop {
        let (n, line) = match (width, m.values.len()) {
            (Some(w), rows) if rows == w => break,
            (None, _) => lines.next("the matrix's first row")?,
            (Some(w), rows) => lines.next(&format!("row {rows} of {w}"))?,
        };
        let fields: Vec<&str> = line.split_whitespace().take(MAX_NODES + 1).collect();
        let w = *width.get_or_insert(fields.len());
        if w > MAX_NODES {
            return Err(lines.err(n, format!("more than {MAX_NODES} columns")));
        }
        if fields.len() != w {
            return Err(lines.err(
                n,
                format!(
                    "row {}: {} columns, expected {w} (a square matrix as wide as its first row)",
                    m.values.len(),
                    fields.len()
                ),
            ));
        }
        let row = fields
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let what = format!("row {}, column {j}", m.values.len());
                let v = number(&lines, n, &what, f)?;
                if v.is_nan() {
                    Ok(None)
                } else if v.is_finite() && v >= 0.0 {
                    Ok(Some(v))
                } else {
                    Err(lines.err(n, format!("{what}: {f}, expected a number >= 0 or nan")))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        m.values.push(row);
        m.lines.push(n);
    }
    if let Some(n) = lines.more() {
        return Err(lines.err(
            n,
            format!("more rows than the {0}×{0} matrix has", m.values.len()),
        ));
    }
    Ok(m)
}

/// The machine of a configuration and its matrices (each with the file it came from).
fn build(
    config: &Config,
    (bandwidth, bw_origin): &(Matrix, String),
    (latency, lat_origin): &(Matrix, String),
    name: &str,
    source: &str,
) -> Result<Machine> {
    let devices = config.cuda + config.opencl + config.mic;
    let rams = config.numa as usize;
    let nodes = devices as usize + rams;
    for (m, origin) in [(bandwidth, bw_origin), (latency, lat_origin)] {
        if m.values.len() < nodes {
            return Err(Error::input(format!(
                "{origin}: a {0}×{0} matrix, expected one over at least {nodes} memory nodes \
                 (the {rams} NUMA nodes and the {devices} devices of the .config)",
                m.values.len()
            )));
        }
    }
    // The figure between RAM node `r` and device node `d`, each way.
    let link = |m: &Matrix,
                origin: &str,
                r: usize,
                d: usize,
                positive: bool|
     -> Result<(f64, f64)> {
        let get = |from: usize, to: usize| {
            match m.values[from][to] {
            Some(v) if !positive || v > 0.0 => Ok(v),
            v => Err(Error::input(format!(
                "{origin}:{}: row {from}, column {to}: {}, expected a number {} (memory node {d} is a device of the .config)",
                m.lines[from],
                v.map_or("nan".to_string(), |v| v.to_string()),
                if positive { "> 0" } else { ">= 0" }
            ))),
        }
        };
        Ok((get(r, d)?, get(d, r)?))
    };
    let cpus: Vec<u32> = (0..config.cpus).collect();
    let mut m = Machine {
        name: name.to_string(),
        source: source.to_string(),
        packages: vec![Package {
            os_index: 0,
            cpus: cpus.clone(),
            model: None,
        }],
        numa_nodes: vec![NumaNode {
            os_index: 0,
            memory_bytes: 0,
            cpus: cpus.clone(),
            bandwidth_bytes_per_s: None,
        }],
        ..Machine::default()
    };
    for &cpu in &cpus {
        m.cores.push(Core {
            os_index: cpu,
            package: 0,
            cpus: vec![cpu],
            cpu_kind: None,
        });
        m.pus.push(Pu {
            os_index: cpu,
            core: Some(cpu),
            package: 0,
            numa_node: Some(0),
            cpu_kind: None,
            capacity: CAPACITY_SCALE,
        });
    }
    let kinds = [
        (UnitType::Gpu, "cuda", config.cuda),
        (UnitType::OpenCl, "opencl", config.opencl),
        (UnitType::CoProcessor, "mic", config.mic),
    ];
    let mut node = rams;
    for (kind, prefix, count) in kinds {
        for i in 0..count {
            // The NUMA node with the fastest link to the device (the first of equals).
            let mut best: Option<(f64, usize)> = None;
            for r in 0..rams {
                let (bw_in, bw_out) = link(bandwidth, bw_origin, r, node, true)?;
                // The harmonic mean of the two directions, MB/s.
                let bw = 2.0 / (1.0 / bw_in + 1.0 / bw_out);
                if best.is_none_or(|(b, _)| bw > b) {
                    best = Some((bw, r));
                }
            }
            let (bw, r) = best.expect("a machine has a NUMA node");
            let (lat_in, lat_out) = link(latency, lat_origin, r, node, false)?;
            let bw = bw * 1e6;
            m.accelerators.push(Accelerator {
                kind,
                name: format!("{prefix}{i}"),
                model: None,
                memory_bytes: None,
                link_bandwidth_bytes_per_s: Some(bw),
                link_latency_s: Some((lat_in + lat_out) / 2.0 * 1e-6),
                relative_speed: None,
                // All of RAM is the one NUMA node here (see the module documentation).
                numa_node: Some(0),
                pci_bus_id: None,
                setup_s: None,
                on_host: None,
            });
            node += 1;
        }
    }
    m.assign_capacities();
    Ok(m)
}

fn non_linear_regression(
    lines: &Lines,
    n: usize,
    fields: &[&str],
    i: &dyn Fn(&str) -> String,
) -> Result<()> {
    for (j, s) in fields.iter().enumerate() {
        number(lines, n, &i(&format!("non-linear regression field {j}")), s)?;
    }
    Ok(())
}

/// The multiple regression's line: the number of coefficients, then them.
fn multiple_regression(
    lines: &Lines,
    n: usize,
    line: &str,
    i: &dyn Fn(&str) -> String,
) -> Result<()> {
    let mut f = line.split_whitespace();
    let what = i("the number of multiple regression coefficients");
    let first = f.next().unwrap_or("");
    let coefficients = lines.count_in(n, first, &what, 0, MAX_COEFFICIENTS)?;
    let given: Vec<&str> = f.take(MAX_COEFFICIENTS as usize + 1).collect();
    if given.len() != coefficients as usize {
        return Err(lines.err(
            n,
            format!(
                "{}: {} coefficients after the count {coefficients}",
                i("the multiple regression"),
                given.len()
            ),
        ));
    }
    for s in given {
        number(lines, n, &i("a multiple regression coefficient"), s)?;
    }
    Ok(())
}

/// Adds the models of a codelet file (`origin` names it in errors) to `models`, as the
/// kernel `symbol`.
pub fn parse_codelet(
    text: &str,
    origin: &str,
    symbol: &str,
    models: &mut PerfModels,
) -> Result<()> {
    let mut lines = Lines::new(text, origin);
    let (n, line) = lines.next("the performance model version")?;
    let version = line.trim();
    if version != MODEL_VERSION.to_string() {
        return Err(lines.err(
            n,
            format!(
                "performance model version {version:?}: this reads version {MODEL_VERSION} (StarPU 1.3's)"
            ),
        ));
    }
    let combinations = lines.count("the number of combinations", 0, u32::MAX)?;
    for comb in 0..combinations {
        let c = |what: &str| format!("combination {comb}: {what}");
        let devices = lines.count(&c("the number of devices"), 1, MAX_DEVICES)?;
        let mut unit_type = None;
        let mut cores = 0;
        for dev in 0..devices {
            let d = |what: &str| c(&format!("device {dev}: {what}"));
            let kind = lines.count(&d("the device type (CPU 0, CUDA 1, OpenCL 2, MIC 3)"), 0, 3)?;
            lines.count(&d("the device id"), 0, MAX_DEVICES - 1)?;
            cores = lines.count(&d("the number of cores"), 1, MAX_CPUS)?;
            unit_type = Some(match kind {
                0 => UnitType::Cpu,
                1 => UnitType::Gpu,
                2 => UnitType::OpenCl,
                _ => UnitType::CoProcessor,
            });
        }
        // A combined worker (several devices or cores) runs parallel tasks: dropped.
        let unit_type = unit_type.filter(|_| devices == 1 && cores == 1);
        let implementations =
            lines.count(&c("the number of implementations"), 0, MAX_IMPLEMENTATIONS)?;
        for imp in 0..implementations {
            let i = |what: &str| c(&format!("implementation {imp}: {what}"));
            let entries = lines.count(&i("the number of entries"), 0, u32::MAX)?;
            let (n, f) = lines.fields(&i("the linear regression"), &[9])?;
            for (j, s) in f.iter().enumerate() {
                number(&lines, n, &i(&format!("linear regression field {j}")), s)?;
            }
            // The non-linear regression (a b c), then the multiple one (a count, then as
            // many coefficients). Some files Debian ships have the multiple one, without
            // coefficients, first: a line of one field is that.
            let (n, line) = lines.next(&i("the non-linear regression"))?;
            if line.split_whitespace().count() == 1 {
                multiple_regression(&lines, n, line, &i)?;
                let (n, f) = lines.fields(&i("the non-linear regression"), &[3])?;
                non_linear_regression(&lines, n, &f, &i)?;
            } else {
                let f: Vec<&str> = line.split_whitespace().take(4).collect();
                if f.len() != 3 {
                    return Err(lines.err(
                        n,
                        format!(
                            "{}: {} fields, expected 3",
                            i("the non-linear regression"),
                            if f.len() > 3 {
                                "more".into()
                            } else {
                                f.len().to_string()
                            }
                        ),
                    ));
                }
                non_linear_regression(&lines, n, &f, &i)?;
                let (n, line) = lines.next(&i("the multiple regression"))?;
                multiple_regression(&lines, n, line, &i)?;
            }
            let kernel = if imp == 0 {
                symbol.to_string()
            } else {
                format!("{symbol}:impl{imp}")
            };
            let mut seen = std::collections::HashSet::new();
            for e in 0..entries {
                let what = i(&format!("history entry {e} of {entries}"));
                // hash size [flops] mean dev sum sum2 n (StarPU's reader also takes a line
                // without the flops, as older StarPUs wrote it).
                let (n, f) = lines.fields(&what, &[7, 8])?;
                let field = |name: &str| format!("{what}: {name}");
                let hash = f[0];
                let footprint = (hash.len() <= 8)
                    .then(|| u32::from_str_radix(hash, 16).ok())
                    .flatten()
                    .ok_or_else(|| {
                        lines.err(
                            n,
                            format!(
                                "{}: {hash:?}, expected at most 8 hexadecimal digits",
                                field("hash")
                            ),
                        )
                    })?;
                let size_range = format!("[0, {}]", u64::MAX);
                integer::<u64>(&lines, n, &field("size"), f[1], &size_range)?;
                let at = f.len() - 5; // mean's index
                if f.len() == 8 {
                    non_negative(&lines, n, &field("flops"), f[2])?;
                }
                let mean = non_negative(&lines, n, &field("mean (us)"), f[at])?;
                let dev = non_negative(&lines, n, &field("dev (us)"), f[at + 1])?;
                non_negative(&lines, n, &field("sum"), f[at + 2])?;
                non_negative(&lines, n, &field("sum2"), f[at + 3])?;
                let samples: u32 = integer(
                    &lines,
                    n,
                    &field("n"),
                    f[at + 4],
                    &format!("[1, {}]", u32::MAX),
                )?;
                if samples == 0 {
                    return Err(lines.err(
                        n,
                        format!(
                            "{}: 0, expected an integer in [1, {}]",
                            field("n"),
                            u32::MAX
                        ),
                    ));
                }
                if !seen.insert(footprint) {
                    return Err(lines.err(n, format!("{}: {hash} twice", field("hash"))));
                }
                let Some(unit_type) = unit_type else { continue };
                let history = History::from_stats(samples as u64, mean * 1e-6, dev * 1e-6)
                    .expect("checked: n >= 1, mean and dev finite and >= 0");
                let arch = Arch {
                    unit_type,
                    capacity: CAPACITY_SCALE,
                    footprint: footprint as u64,
                };
                models.pool(&kernel, arch, &history);
            }
        }
    }
    // What follows the announced combinations is not read, as StarPU does not read
    // it (Debian's overlap_sleep_1024_24.sirocco announces 4 and holds 5).
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_follows_starpus_variables_then_debians_directory() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let p = PathBuf::from;
        assert_eq!(
            search_dirs_in(env(&[("STARPU_PERF_MODEL_DIR", "/m"), ("HOME", "/h")])),
            vec![p("/m"), p(DEBIAN_DIR)]
        );
        assert_eq!(
            search_dirs_in(env(&[("STARPU_HOME", "/s"), ("HOME", "/h")])),
            vec![p("/s/.starpu/sampling"), p(DEBIAN_DIR)]
        );
        assert_eq!(
            search_dirs_in(env(&[("HOME", "/h")])),
            vec![p("/h/.starpu/sampling"), p(DEBIAN_DIR)]
        );
        assert_eq!(
            search_dirs_in(env(&[("STARPU_PERF_MODEL_DIR", DEBIAN_DIR)])),
            vec![p(DEBIAN_DIR)]
        );
    }

    #[test]
    fn a_spec_is_a_host_or_a_directory_and_a_host() {
        for bad in ["", "/srv/x", ".hidden", "/srv:", ":idgraf", "a/b:c d"] {
            let e = Sampling::parse(bad).unwrap_err();
            assert!(
                e.to_string()
                    .contains("expected starpu:HOST or starpu:DIR:HOST"),
                "{bad}: {e}"
            );
        }
        let e = Sampling::parse("/nonexistent:idgraf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "starpu:/nonexistent:idgraf: no /nonexistent/bus/idgraf.config (a StarPU sampling directory has bus/HOST.config)"
        );
    }
}

//! The sampler's measurement sources, one per file, behind one trait ([`SampleSource`]).
//!
//! Why a seam: what can be measured of a process, or of the CPU it ran on, depends on
//! the machine (a PMU this user may read, an arm64 kernel's `cpu_capacity`, AMD's CPPC
//! rankings) and grows as kernels expose more. The sampler (`sampler.rs`) owns what
//! bounds its work — which processes, how many threads a pass, how many descriptors,
//! how long it rests — and asks each source that is available on this machine to fill
//! its part of a process's span; a source owns its probe and its per-process state.
//! What no source measured stays `None`, and the sample names the sources that filled
//! it (`hetsched_core::policy::Sources`).
//!
//! Adding a source: a file here with a type implementing [`SampleSource`] and its
//! `REGISTERED` entry, one line in [`REGISTRY`], and its name in
//! `hetsched_core::policy::SOURCE_NAMES` (samples carry source names across the wire and
//! the simulator, which do not link this crate; a test holds the two lists equal).
//!
//! Files are read under a [`Root`] ("/" unless a test builds a fake tree) where that
//! means something: sysfs describes the machine and can be faked whole. The `proc`
//! and `perf` sources measure the live processes the sampler's pidfds name, which no
//! fake tree could stand for, and read the real `/proc` and PMU.

pub mod capacity;
pub mod perf;
pub mod proc;

use crate::sampler::Span;
use std::fmt;
use std::path::{Path, PathBuf};

/// A registered source: its name (as samples and policies spell it) and how to open it.
pub struct Registered {
    pub name: &'static str,
    /// One line: what it measures.
    pub about: &'static str,
    /// Opens (and probes) the source, reading files under `root`.
    pub open: fn(root: &Root) -> Box<dyn SampleSource>,
}

/// The sources, in the order a sample's JSON lists them (that of `SOURCE_NAMES`), which
/// is also the order they read a process in a pass.
pub const REGISTRY: &[Registered] = &[perf::REGISTERED, proc::REGISTERED, capacity::REGISTERED];

/// Every registered source, opened on `root`.
pub fn open_all(root: &Root) -> Vec<Box<dyn SampleSource>> {
    REGISTRY.iter().map(|r| (r.open)(root)).collect()
}

/// Whether a source can measure anything on this machine: probed once, when opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Available,
    /// Why not (the probe's error, naming what it tried).
    Absent(String),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Status::Available => f.write_str("available"),
            Status::Absent(why) => write!(f, "not available: {why}"),
        }
    }
}

/// The process ended, or can no longer be read: the pass skips it.
#[derive(Debug)]
pub struct Gone;

/// A process as the sampler hands it to the sources in a pass: read between two looks
/// at its pidfd that say it is alive.
pub struct Process<'a> {
    pub pid: u32,
    /// Its threads, sorted, as last listed.
    pub tids: &'a [i32],
    /// The threads this pass reads (at most `sampler::THREADS_PER_PASS`).
    pub window: &'a [i32],
    /// Descriptors a source may open for it now, within the sampler's budget (none for a
    /// process of more than `sampler::MAX_COUNTED_THREADS` threads).
    pub descriptors: usize,
}

/// What a source keeps of one process between passes.
pub trait Measured: Send {
    /// Reads the process now, and fills into `span` what it did since the previous
    /// read (nothing at the first). `Ok(true)`: it filled its part. `Err(Gone)`: the
    /// process cannot be read any more.
    fn read(&mut self, process: &Process<'_>, span: &mut Span) -> Result<bool, Gone>;

    /// The descriptors it holds, counted against the sampler's budget.
    fn descriptors(&self) -> usize {
        0
    }
}

/// A measurement source: see the module documentation.
pub trait SampleSource: Send {
    /// Its name, one of `SOURCE_NAMES`.
    fn name(&self) -> &'static str;

    /// What its probe found, when it was opened.
    fn status(&self) -> &Status;

    /// Starts measuring a process, at its first pass. `Ok(None)`: this source does not
    /// measure it (out of budget); `Err(Gone)`: it ended.
    fn start(&self, process: &Process<'_>) -> Result<Option<Box<dyn Measured>>, Gone>;
}

/// The directory the sources' files are read under: "/" on a live machine, a fake tree
/// in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root(PathBuf);

impl Default for Root {
    fn default() -> Root {
        Root(PathBuf::from("/"))
    }
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Root {
        Root(dir.into())
    }

    /// `path`, absolute as on a live machine, under this root.
    pub fn join(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        self.0.join(path.strip_prefix("/").unwrap_or(path))
    }
}

/// The most of a file [`read_small`] reads: a sysfs attribute is at most a page.
pub const MAX_FILE: u64 = 4096;

/// Reads a small kernel attribute file without trusting it: a regular file only (a FIFO
/// or a device would block or never end: refused without opening it for a writer), at
/// most [`MAX_FILE`] bytes. Errors name the file.
pub fn read_small(path: &Path) -> Result<String, String> {
    hetsched_util::files::read_text(path, "a kernel attribute file", MAX_FILE)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_is_the_cores_list_of_source_names() {
        let names: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        assert_eq!(names, hetsched_core::policy::SOURCE_NAMES);
        for (r, s) in REGISTRY.iter().zip(open_all(&Root::default())) {
            assert_eq!(s.name(), r.name);
            assert!(!r.about.is_empty());
        }
    }

    #[test]
    fn a_root_holds_absolute_paths_under_it() {
        assert_eq!(Root::default().join("/sys/x"), PathBuf::from("/sys/x"));
        assert_eq!(
            Root::new("/fake/tree").join("/sys/x"),
            PathBuf::from("/fake/tree/sys/x")
        );
    }
}

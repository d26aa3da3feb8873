//! Source `capacity`: how fast the CPU a task last ran on is, as the kernel describes
//! it — `cpu_capacity` (1024 for the fastest CPUs; arm64, arm and RISC-V kernels, and
//! recent x86 ones, expose it from their capacity tables or firmware) and the ACPI CPPC
//! `acpi_cppc/highest_perf` (on AMD with preferred cores, the ranking the kernel
//! prefers cores by), both under `/sys/devices/system/cpu/cpuN/`.
//!
//! It describes a CPU, not a process: the process's part is only which CPU (the `proc`
//! source's `cpu`, read before this one in a pass). It is a sample source all the same
//! because both figures can change while the daemon runs (AMD updates its rankings, a
//! kernel rescales capacities when CPU frequency limits change), so a pass reads them
//! again, once per process read. A machine whose kernel exposes neither has it absent,
//! and its samples carry neither field.
//!
//! The files are read under the sampler's [`Root`], so that tests build the tree (and
//! hostile versions of it); each read is of a regular file of at most a page
//! ([`read_small`]), and an error names the file.

use super::{read_small, Gone, Measured, Process, Root, SampleSource, Status};
use crate::sampler::Span;
use hetsched_core::machine::CAPACITY_SCALE;

/// The registry's entry for this source.
pub const REGISTERED: super::Registered = super::Registered {
    name: "capacity",
    about:
        "the kernel's capacity (cpu_capacity) and CPPC highest performance of the CPU a task ran on",
    open: |root| Box::new(Capacity::open(root)),
};

/// Where the kernel describes its CPUs.
pub const CPU_DIR: &str = "/sys/devices/system/cpu";

/// What the kernel says of one CPU; `None` where it exposes no such file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCapacity {
    /// `cpu_capacity`, 1..=1024.
    pub capacity: Option<u32>,
    /// `acpi_cppc/highest_perf`, above zero.
    pub highest_perf: Option<u32>,
}

pub struct Capacity {
    root: Root,
    status: Status,
}

impl Capacity {
    /// Opens the source on `root`, probing CPU 0 .. as listed under [`CPU_DIR`]: available
    /// if any CPU has either file with a valid value; if none, absent with why (the
    /// first error, naming its file).
    pub fn open(root: &Root) -> Capacity {
        let status = match probe(root) {
            Ok(()) => Status::Available,
            Err(why) => Status::Absent(why),
        };
        Capacity {
            root: root.clone(),
            status,
        }
    }

    /// CPU `cpu`'s figures: `Ok` with `None` for a file that does not exist, an error
    /// (naming the file) for one that exists but does not hold a valid value.
    pub fn read(&self, cpu: u32) -> Result<CpuCapacity, String> {
        read_cpu(&self.root, cpu)
    }
}

/// Most CPUs the probe looks at: a fake tree of a million `cpuN` entries must not
/// stall the daemon's start.
const MAX_PROBED: usize = 4096;

fn probe(root: &Root) -> Result<(), String> {
    let dir = root.join(CPU_DIR);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cpus: Vec<u32> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            name.to_str()?.strip_prefix("cpu")?.parse().ok()
        })
        .take(MAX_PROBED)
        .collect();
    cpus.sort_unstable();
    let mut first_error = None;
    for cpu in cpus.iter().copied() {
        match read_cpu(root, cpu) {
            Ok(c) if c != CpuCapacity::default() => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        format!(
            "no CPU under {} has cpu_capacity or acpi_cppc/highest_perf",
            dir.display()
        )
    }))
}

/// CPU `cpu`'s figures under `root` (see [`Capacity::read`]).
pub fn read_cpu(root: &Root, cpu: u32) -> Result<CpuCapacity, String> {
    let file = |name: &str| root.join(format!("{CPU_DIR}/cpu{cpu}/{name}"));
    Ok(CpuCapacity {
        capacity: number(&file("cpu_capacity"), 1..=CAPACITY_SCALE)?,
        highest_perf: number(&file("acpi_cppc/highest_perf"), 1..=u32::MAX)?,
    })
}

/// The decimal number in `path` (one line), within `range`; `None` if there is no such
/// file.
fn number(
    path: &std::path::Path,
    range: std::ops::RangeInclusive<u32>,
) -> Result<Option<u32>, String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let text = read_small(path)?;
    let shown = path.display();
    let word = text.trim();
    let n: u32 = word.parse().map_err(|_| {
        let mut word = word.to_string();
        if word.len() > 40 {
            let cut = (0..=40)
                .rev()
                .find(|&i| word.is_char_boundary(i))
                .unwrap_or(0);
            word.truncate(cut);
            word.push('…');
        }
        format!(
            "{shown}: {word:?} is not a number from {} to {}",
            range.start(),
            range.end()
        )
    })?;
    if !range.contains(&n) {
        return Err(format!(
            "{shown}: {n} is not a number from {} to {}",
            range.start(),
            range.end()
        ));
    }
    Ok(Some(n))
}

impl SampleSource for Capacity {
    fn name(&self) -> &'static str {
        REGISTERED.name
    }

    fn status(&self) -> &Status {
        &self.status
    }

    fn start(&self, _: &Process<'_>) -> Result<Option<Box<dyn Measured>>, Gone> {
        Ok(Some(Box::new(OfCpu {
            root: self.root.clone(),
        })))
    }
}

/// What `capacity` keeps of a process: nothing but where to read.
struct OfCpu {
    root: Root,
}

impl Measured for OfCpu {
    fn read(&mut self, _: &Process<'_>, span: &mut Span) -> Result<bool, Gone> {
        // A file gone bad since the probe leaves the sample without the figure.
        let Some(c) = span.cpu.and_then(|cpu| read_cpu(&self.root, cpu).ok()) else {
            return Ok(false);
        };
        span.cpu_capacity = c.capacity;
        span.cpu_highest_perf = c.highest_perf;
        Ok(c != CpuCapacity::default())
    }
}

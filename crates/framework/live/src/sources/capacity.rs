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
//! again (for a process that stays on one CPU, at most once a second). A machine whose
//! kernel exposes neither has it absent, and its samples carry neither field.
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
            last: None,
        })))
    }
}

/// What `capacity` keeps of a process: nothing but where to read.
/// How long a CPU's figures are taken as read for a process that stays on it: they
/// change rarely (a ranking update, a frequency limit), and reading them at every pass
/// of every process would cost the sampler about half as much again as `proc` does.
const REREAD: std::time::Duration = std::time::Duration::from_secs(1);

struct OfCpu {
    root: Root,
    /// The CPU last read for this process, when, and what it said (`None`: a file gone
    /// bad since the probe).
    last: Option<(u32, std::time::Instant, Option<CpuCapacity>)>,
}

impl Measured for OfCpu {
    fn read(&mut self, _: &Process<'_>, span: &mut Span) -> Result<bool, Gone> {
        let Some(cpu) = span.cpu else {
            return Ok(false);
        };
        let c = match self.last {
            Some((at, when, c)) if at == cpu && when.elapsed() < REREAD => c,
            _ => {
                // A file gone bad since the probe leaves the sample without the figure.
                let c = read_cpu(&self.root, cpu).ok();
                self.last = Some((cpu, std::time::Instant::now(), c));
                c
            }
        };
        let Some(c) = c else {
            return Ok(false);
        };
        span.cpu_capacity = c.capacity;
        span.cpu_highest_perf = c.highest_perf;
        Ok(c != CpuCapacity::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// A fake root with `/sys/devices/system/cpu` and what a kernel puts beside the
    /// `cpuN` directories.
    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("sys/devices/system/cpu");
        for d in ["cpufreq", "cpuidle", "power", "vulnerabilities"] {
            std::fs::create_dir_all(cpu.join(d)).unwrap();
        }
        for (f, text) in [
            ("online", "0-3\n"),
            ("possible", "0-3\n"),
            ("kernel_max", "8191\n"),
        ] {
            std::fs::write(cpu.join(f), text).unwrap();
        }
        let root = Root::new(dir.path());
        (dir, root)
    }

    /// Writes `text` to `/sys/devices/system/cpu/cpuN/name` under `root`.
    fn put(root: &Root, cpu: u32, name: &str, text: &[u8]) -> PathBuf {
        let path = root.join(format!("{CPU_DIR}/cpu{cpu}/{name}"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `f()`, which must return within seconds (a FIFO read would block for ever).
    fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("reading the fake tree hung")
    }

    #[test]
    fn an_arm64_big_little_tree_gives_each_cpus_capacity() {
        let (_dir, root) = tree();
        // RK3399: four Cortex-A53 at 485, two Cortex-A72 at 1024.
        for cpu in 0..6 {
            let cap = if cpu < 4 { "485\n" } else { "1024\n" };
            put(&root, cpu, "cpu_capacity", cap.as_bytes());
            put(&root, cpu, "topology/core_id", b"0\n");
        }
        let c = Capacity::open(&root);
        assert_eq!(*c.status(), Status::Available);
        assert_eq!(c.name(), "capacity");
        assert_eq!(
            c.read(1).unwrap(),
            CpuCapacity {
                capacity: Some(485),
                highest_perf: None
            }
        );
        assert_eq!(c.read(5).unwrap().capacity, Some(1024));
        // A CPU the kernel does not describe has neither figure, and no error.
        assert_eq!(c.read(6).unwrap(), CpuCapacity::default());
    }

    #[test]
    fn an_amd_preferred_core_tree_gives_each_cpus_cppc_ranking() {
        let (_dir, root) = tree();
        // amd-pstate with preferred cores: the ranking in highest_perf, the rest of
        // the CPPC attributes beside it.
        for (cpu, rank) in [(0, 231), (1, 236), (2, 211), (3, 166)] {
            put(
                &root,
                cpu,
                "acpi_cppc/highest_perf",
                format!("{rank}\n").as_bytes(),
            );
            put(&root, cpu, "acpi_cppc/lowest_perf", b"19\n");
            put(&root, cpu, "acpi_cppc/nominal_perf", b"120\n");
            put(
                &root,
                cpu,
                "acpi_cppc/feedback_ctrs",
                b"ref:342349287 del:437718235\n",
            );
        }
        let c = Capacity::open(&root);
        assert_eq!(*c.status(), Status::Available);
        assert_eq!(
            c.read(1).unwrap(),
            CpuCapacity {
                capacity: None,
                highest_perf: Some(236)
            }
        );
        assert_eq!(c.read(3).unwrap().highest_perf, Some(166));
    }

    #[test]
    fn a_tree_without_either_file_is_absent_and_says_why() {
        let (dir, root) = tree();
        put(&root, 0, "topology/core_id", b"0\n");
        let c = Capacity::open(&root);
        let cpu_dir = dir.path().join("sys/devices/system/cpu");
        assert_eq!(
            *c.status(),
            Status::Absent(format!(
                "no CPU under {} has cpu_capacity or acpi_cppc/highest_perf",
                cpu_dir.display()
            ))
        );
        assert_eq!(c.read(0).unwrap(), CpuCapacity::default());
        // No sysfs at all: the directory named.
        let empty = tempfile::tempdir().unwrap();
        let Status::Absent(why) = Capacity::open(&Root::new(empty.path())).status().clone() else {
            panic!("a root without sysfs has the source")
        };
        assert!(
            why.starts_with(&format!(
                "{}/sys/devices/system/cpu: ",
                empty.path().display()
            )),
            "{why}"
        );
    }

    /// Contents and kinds of file no kernel writes: each is an error naming the file,
    /// none crashes or blocks, and a CPU described so is no reason to call the source
    /// available.
    #[test]
    fn hostile_files_are_errors_that_name_the_file_and_never_hang() {
        let hostile: &[(&str, &[u8], &str)] = &[
            (
                "not a number",
                b"fast\n",
                "\"fast\" is not a number from 1 to 1024",
            ),
            ("empty", b"", "\"\" is not a number from 1 to 1024"),
            ("negative", b"-1\n", "\"-1\" is not a number from 1 to 1024"),
            (
                "beyond the scale",
                b"2048\n",
                "2048 is not a number from 1 to 1024",
            ),
            ("zero", b"0\n", "0 is not a number from 1 to 1024"),
            (
                "beyond u32",
                b"99999999999999999999999999\n",
                "\"99999999999999999999999999\" is not a number",
            ),
            ("not UTF-8", b"\xff\xfe10\n", "must be UTF-8 text"),
            ("two numbers", b"512 1024\n", "\"512 1024\" is not a number"),
        ];
        for (what, text, error) in hostile {
            let (_dir, root) = tree();
            let path = put(&root, 0, "cpu_capacity", text);
            let e = read_cpu(&root, 0).unwrap_err();
            assert!(
                e.starts_with(&format!("{}: ", path.display())),
                "{what}: {e}"
            );
            assert!(e.contains(error), "{what}: {e}");
            assert_eq!(*Capacity::open(&root).status(), Status::Absent(e), "{what}");
        }

        // A file of megabytes: refused by its size, unread.
        let (_dir, root) = tree();
        let path = put(&root, 0, "acpi_cppc/highest_perf", &vec![b'7'; 4 << 20]);
        let e = read_cpu(&root, 0).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}: 4194304 bytes; a kernel attribute file may have at most 4 KiB",
                path.display()
            )
        );

        // A FIFO no one writes, a link to itself, a directory, a cpuN that links to
        // itself: errors, promptly.
        let (_dir, root) = tree();
        let fifo = put(&root, 0, "cpu_capacity", b"");
        std::fs::remove_file(&fifo).unwrap();
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let loop_link = put(&root, 1, "cpu_capacity", b"");
        std::fs::remove_file(&loop_link).unwrap();
        std::os::unix::fs::symlink(&loop_link, &loop_link).unwrap();
        let dir_file = put(&root, 2, "cpu_capacity", b"");
        std::fs::remove_file(&dir_file).unwrap();
        std::fs::create_dir(&dir_file).unwrap();
        let cpu3 = root.join(format!("{CPU_DIR}/cpu3"));
        std::os::unix::fs::symlink(&cpu3, &cpu3).unwrap();
        let (errors, status) = promptly(move || {
            let errors: Vec<String> = (0..4)
                .map(|cpu| read_cpu(&root, cpu).unwrap_err())
                .collect();
            (errors, Capacity::open(&root).status().clone())
        });
        let named = |e: &str, p: &Path| e.starts_with(&format!("{}: ", p.display()));
        assert!(
            named(&errors[0], &fifo) && errors[0].contains("a FIFO"),
            "{}",
            errors[0]
        );
        assert!(named(&errors[1], &loop_link), "{}", errors[1]);
        assert!(errors[1].contains("symbolic links"), "{}", errors[1]);
        assert!(
            named(&errors[2], &dir_file) && errors[2].contains("a directory"),
            "{}",
            errors[2]
        );
        assert!(
            named(&errors[3], &cpu3.join("cpu_capacity")),
            "{}",
            errors[3]
        );
        assert_eq!(status, Status::Absent(errors[0].clone()));
    }

    /// On the real root the source says what this machine's kernel has: available
    /// exactly when some CPU has either file, and each figure is the file's.
    #[test]
    fn the_real_root_reports_what_this_kernel_exposes() {
        let c = Capacity::open(&Root::default());
        let mut described = false;
        for entry in std::fs::read_dir(CPU_DIR).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let file = |f: &str| {
                std::fs::read_to_string(format!("{CPU_DIR}/cpu{cpu}/{f}"))
                    .ok()
                    .map(|t| t.trim().parse::<u32>().unwrap())
            };
            let want = CpuCapacity {
                capacity: file("cpu_capacity"),
                highest_perf: file("acpi_cppc/highest_perf"),
            };
            described |= want != CpuCapacity::default();
            assert_eq!(c.read(cpu).unwrap(), want, "cpu{cpu}");
        }
        match c.status() {
            Status::Available => assert!(described),
            Status::Absent(why) => {
                assert!(!described, "{why}");
                assert!(why.contains("/sys/devices/system/cpu"), "{why}");
            }
        }
    }
}

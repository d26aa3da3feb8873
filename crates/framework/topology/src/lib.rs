//! Machine discovery for hetsched. A machine comes from one of:
//! - `live`: this machine, through hwloc;
//! - `PATH.xml`: an hwloc XML export, checked first ([`hwloc_xml`]);
//! - `PATH.tar.bz2` or a directory: a dumped sysfs tree, loaded by hwloc with
//!   `HWLOC_FSROOT` and the x86 backend disabled (`env:` lines of `PATH.test` honoured);
//! - `PATH.toml`: hetsched's own machine file (schema in `docs/machines.md`);
//! - a preset name (`hetsched machines` lists them);
//! - `starpu:HOST` or `starpu:DIR:HOST`: a StarPU calibration ([`starpu`]).
//!
//! A file is read only if it is a regular file of at most [`machine_file::limits::MAX_FILE_BYTES`], and reaches
//! libhwloc only in a forked child process ([`hwloc::load`]): hwloc 2.9 crashes or hangs
//! on some malformed inputs, and that must not take hetsched down.

pub mod block;
pub mod hwloc;
pub mod hwloc_xml;
mod isolate;
pub mod machine_file;
pub mod presets;
pub mod starpu;
pub mod sysfs_dump;
pub mod tree;

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::{Error, Result};
use std::path::{Path, PathBuf};

/// Where a machine description comes from.
#[derive(Debug)]
pub enum Source {
    Live,
    Preset(&'static str),
    Xml(PathBuf),
    SysfsArchive(PathBuf),
    SysfsDir(PathBuf),
    Toml(PathBuf),
    Starpu(starpu::Sampling),
}

impl Source {
    /// Interprets a `--machine` argument.
    pub fn parse(spec: &str) -> Result<Source> {
        if spec == "live" {
            return Ok(Source::Live);
        }
        if let Some(rest) = spec.strip_prefix("starpu:") {
            return Ok(Source::Starpu(starpu::Sampling::parse(rest)?));
        }
        if let Some(p) = presets::find(spec) {
            return Ok(Source::Preset(p.name));
        }
        let path = PathBuf::from(spec);
        let looks_like_path = spec.contains('/') || spec.contains('.');
        if !path.exists() {
            return Err(Error::input(if looks_like_path {
                format!("{spec}: no such file or directory")
            } else {
                let names: Vec<&str> = presets::PRESETS.iter().map(|p| p.name).collect();
                format!(
                    "unknown machine {spec:?}: not \"live\", a preset ({}), starpu:HOST or an existing path",
                    names.join(", ")
                )
            }));
        }
        if path.is_dir() {
            return Ok(Source::SysfsDir(path));
        }
        if spec.ends_with(".tar.bz2") {
            Ok(Source::SysfsArchive(path))
        } else if spec.ends_with(".xml") {
            Ok(Source::Xml(path))
        } else if spec.ends_with(".toml") {
            Ok(Source::Toml(path))
        } else {
            Err(Error::input(format!(
                "{spec}: unknown machine file type: expected .xml (hwloc), .tar.bz2 or a directory (sysfs dump), or .toml"
            )))
        }
    }
}

/// Loads a machine and derives its units.
pub fn load(spec: &str, granularity: UnitGranularity) -> Result<Machine> {
    let mut m = load_source(&Source::parse(spec)?)?;
    m.derive_units(granularity);
    Ok(m)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn read(path: &Path) -> Result<String> {
    // A regular file under a cap: a FIFO or a device is refused at once, not waited on.
    let cap = machine_file::limits::MAX_FILE_BYTES;
    hetsched_util::files::read_text(path, "a machine file", cap)
}

pub fn load_source(source: &Source) -> Result<Machine> {
    match source {
        Source::Live => {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            hwloc::load(hwloc::HwlocInput::Live, host.trim(), "live")
        }
        Source::Preset(name) => {
            let p = presets::find(name).expect("parsed preset exists");
            machine_file::parse(p.toml, &format!("preset {name}"))
        }
        Source::Toml(path) => machine_file::parse(&read(path)?, &path.display().to_string()),
        Source::Starpu(sampling) => sampling.machine(),
        Source::Xml(path) => {
            hwloc_xml::check(path, &read(path)?)?;
            let origin = path.display().to_string();
            let name = file_name(path);
            hwloc::load(
                hwloc::HwlocInput::Xml(path),
                name.trim_end_matches(".xml"),
                &origin,
            )
        }
        Source::SysfsArchive(path) => {
            let env = sysfs_dump::test_env(path)?;
            let dump = sysfs_dump::extract(path)?;
            let name = file_name(path);
            let input = hwloc::HwlocInput::SysfsRoot {
                root: &dump.root,
                env: &env,
            };
            hwloc::load(
                input,
                name.trim_end_matches(".tar.bz2"),
                &path.display().to_string(),
            )
        }
        Source::SysfsDir(path) => {
            let dump = sysfs_dump::directory(path)?;
            let input = hwloc::HwlocInput::SysfsRoot {
                root: &dump.root,
                env: &[],
            };
            hwloc::load(input, &file_name(path), &path.display().to_string())
        }
    }
}

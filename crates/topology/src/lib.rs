//! Machine discovery for hetsched. A machine comes from one of:
//! - `live`: this machine, through hwloc;
//! - `PATH.xml`: an hwloc XML export, checked first ([`hwloc_xml`]);
//! - `PATH.tar.bz2` or a directory: a dumped sysfs tree, loaded by hwloc with
//!   `HWLOC_FSROOT` and the x86 backend disabled (`env:` lines of `PATH.test` honoured);
//! - `PATH.toml`: hetsched's own machine file (schema in `machines/README.md`);
//! - a preset name (`hetsched machines` lists them).
//!
//! A file is read only if it is a regular file of at most [`MAX_FILE_BYTES`], and reaches
//! libhwloc only in a forked child process ([`hwloc::load`]): hwloc 2.9 crashes or hangs
//! on some malformed inputs, and that must not take hetsched down.

pub mod block;
pub mod hwloc;
pub mod hwloc_xml;
mod isolate;
pub mod machine_file;
pub mod presets;
pub mod sysfs_dump;

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
}

impl Source {
    /// Interprets a `--machine` argument.
    pub fn parse(spec: &str) -> Result<Source> {
        if spec == "live" {
            return Ok(Source::Live);
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
                    "unknown machine {spec:?}: not \"live\", a preset ({}) or an existing path",
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

/// The most bytes hetsched reads from a machine file (TOML, hwloc XML, a dump archive's
/// `.test` file). hwloc's own export of a 192-PU machine is 330 kB.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Opens a file hetsched reads whole, refusing what is not a regular file: opening a
/// FIFO for reading would wait for a writer, and a device never ends. `O_NONBLOCK`
/// makes the open itself return at once; `fstat` on the open file then says what it is.
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    let t = meta.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else {
            "not a file"
        };
        return Err(Error::input(format!(
            "{}: {what}, not a regular file: a machine file must be one",
            path.display()
        )));
    }
    Ok((file, meta.len()))
}

/// Reads a whole regular file of at most [`MAX_FILE_BYTES`].
pub(crate) fn read(path: &Path) -> Result<String> {
    use std::io::Read;
    let too_large = || {
        Error::input(format!(
            "{}: larger than the {} MiB hetsched reads from a machine file",
            path.display(),
            MAX_FILE_BYTES >> 20
        ))
    };
    let (file, len) = open_regular(path)?;
    if len > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let mut text = String::new();
    // The cap holds even if the file grows after the fstat.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(text)
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

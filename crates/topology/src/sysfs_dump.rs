//! Dumped sysfs/procfs trees (`hwloc-gather-topology` output): a `.tar.bz2` archive or
//! a directory, loaded by hwloc with `HWLOC_FSROOT` semantics.
//!
//! hwloc's regression data pairs `NAME.tar.bz2` with `NAME.test`, whose `env:` lines
//! carry environment the dump needs (e.g. `HWLOC_PCI_LOCALITY`); they are honoured.

use hetsched_core::{Error, Result};
use std::path::{Path, PathBuf};

/// The `env:` assignments of the `.test` file beside `archive`, if there is one.
pub fn test_env(archive: &Path) -> Result<Vec<(String, String)>> {
    let Some(stem) = archive
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".tar.bz2"))
    else {
        return Ok(Vec::new());
    };
    let test = archive.with_file_name(format!("{stem}.test"));
    if !test.exists() {
        return Ok(Vec::new());
    }
    let text = crate::read(&test)?;
    let mut env = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("env:") else {
            continue;
        };
        let rest = rest.trim();
        if rest.starts_with("export ") {
            continue; // shell syntax for the assignment on the previous line
        }
        let (key, value) = rest.split_once('=').ok_or_else(|| {
            Error::input(format!(
                "{}:{}: expected `env: KEY=value`",
                test.display(),
                n + 1
            ))
        })?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        env.push((key.trim().to_string(), value.to_string()));
    }
    Ok(env)
}

/// An extracted (or given) dump root: the directory holding `sys/` and `proc/`.
pub struct DumpRoot {
    pub root: PathBuf,
    /// Keeps a temporary extraction alive while hwloc reads it.
    _tmp: Option<tempfile::TempDir>,
}

/// Extracts `archive` (bzip2-compressed tar) to a temporary directory.
pub fn extract(archive: &Path) -> Result<DumpRoot> {
    let (file, _) = crate::open_regular(archive)?;
    let tmp = tempfile::tempdir()
        .map_err(|e| Error::runtime(format!("cannot create a temporary directory: {e}")))?;
    tar::Archive::new(bzip2::read::BzDecoder::new(std::io::BufReader::new(file)))
        .unpack(tmp.path())
        .map_err(|e| {
            Error::input(format!(
                "{}: not a readable .tar.bz2 sysfs dump: {e}",
                archive.display()
            ))
        })?;
    let root = find_root(tmp.path()).ok_or_else(|| {
        Error::input(format!(
            "{}: the archive holds no sys/ directory (not a sysfs dump)",
            archive.display()
        ))
    })?;
    Ok(DumpRoot {
        root,
        _tmp: Some(tmp),
    })
}

/// Uses a directory as a dump: itself if it holds `sys/`, else its single subdirectory.
pub fn directory(dir: &Path) -> Result<DumpRoot> {
    let root = find_root(dir).ok_or_else(|| {
        Error::input(format!(
            "{}: not a sysfs dump (no sys/ directory in it or in its one subdirectory)",
            dir.display()
        ))
    })?;
    Ok(DumpRoot { root, _tmp: None })
}

fn find_root(dir: &Path) -> Option<PathBuf> {
    if dir.join("sys").is_dir() {
        return Some(dir.to_path_buf());
    }
    let subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    match subdirs.as_slice() {
        [only] if only.join("sys").is_dir() => Some(only.clone()),
        _ => None,
    }
}

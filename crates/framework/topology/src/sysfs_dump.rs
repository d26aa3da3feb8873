//! Dumped sysfs/procfs trees (`hwloc-gather-topology` output): a `.tar.bz2` archive or
//! a directory, loaded by hwloc with `HWLOC_FSROOT` semantics.
//!
//! hwloc's regression data pairs `NAME.tar.bz2` with `NAME.test`, whose `env:` lines
//! carry environment the dump needs (e.g. `HWLOC_PCI_LOCALITY`); they are honoured.
//!
//! hwloc then reads the dump's files by itself, blocking on a FIFO and following links.
//! So a dump holds only regular files, directories and links that stay inside it; an
//! archive is a regular file of at most [`MAX_ARCHIVE_BYTES`] whose extraction is bounded
//! ([`MAX_ENTRIES`], [`MAX_EXTRACTED_BYTES`]: a small bzip2 stream can expand without
//! end), and a directory is checked the same way before hwloc sees it.

use hetsched_core::{Error, Result};
use hetsched_util::files;
use std::path::{Component, Path, PathBuf};

/// The largest archive, bytes (hwloc's dumps of 40 PUs take 90 KiB).
pub const MAX_ARCHIVE_BYTES: u64 = 64 << 20;
/// The most entries (files, directories, links) of a dump: a dump of 40 PUs has 11,500,
/// so this allows about 1,400 PUs. Each costs the kernel an inode and a dentry (about a
/// kilobyte) while extracted, on a `/tmp` that may be memory.
pub const MAX_ENTRIES: u64 = 400_000;
/// The most bytes of file contents an archive may expand to (40 PUs: 140 KB).
pub const MAX_EXTRACTED_BYTES: u64 = 256 << 20;
/// The largest `.test` file beside an archive, bytes.
pub const MAX_TEST_FILE_BYTES: u64 = 1 << 20;

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
    if std::fs::symlink_metadata(&test).is_err() {
        return Ok(Vec::new());
    }
    let text = files::read_text(&test, "an hwloc .test file", MAX_TEST_FILE_BYTES)?;
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

/// Extracts `archive` (bzip2-compressed tar) to a temporary directory, within the
/// limits of the module documentation.
pub fn extract(archive: &Path) -> Result<DumpRoot> {
    let what = "a sysfs dump archive";
    let (file, size) = files::open(archive, what)?;
    let shown = archive.display();
    if size > MAX_ARCHIVE_BYTES {
        return Err(Error::input(format!(
            "{shown}: {size} bytes; {what} may have at most {}",
            files::bytes(MAX_ARCHIVE_BYTES)
        )));
    }
    let tmp = tempfile::tempdir()
        .map_err(|e| Error::runtime(format!("cannot create a temporary directory: {e}")))?;
    let unreadable = |e: std::io::Error| {
        Error::input(format!("{shown}: not a readable .tar.bz2 sysfs dump: {e}"))
    };
    let mut tar = tar::Archive::new(bzip2::read::BzDecoder::new(std::io::BufReader::new(file)));
    let (mut count, mut bytes) = (0u64, 0u64);
    // As tar's own `unpack`: directories last, so that a read-only one does not keep
    // its contents out.
    let mut directories = Vec::new();
    for entry in tar.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?.into_owned();
        let at = |what: String| Error::input(format!("{shown}: {}: {what}", path.display()));
        count += 1;
        if count > MAX_ENTRIES {
            return Err(Error::input(format!(
                "{shown}: more than {MAX_ENTRIES} entries; a sysfs dump may have at most that"
            )));
        }
        match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                bytes += entry.size();
                if bytes > MAX_EXTRACTED_BYTES {
                    return Err(Error::input(format!(
                        "{shown}: expands to more than {}; a sysfs dump may hold at most that",
                        files::bytes(MAX_EXTRACTED_BYTES)
                    )));
                }
            }
            tar::EntryType::Directory => {
                directories.push(entry);
                continue;
            }
            // Where it leads is checked once all are extracted (it may pass others).
            tar::EntryType::Symlink => {}
            other => {
                return Err(at(format!(
                    "a {other:?} entry; a sysfs dump holds only files, directories and links"
                )))
            }
        }
        if !entry.unpack_in(tmp.path()).map_err(unreadable)? {
            return Err(at("a path outside the archive".into()));
        }
    }
    for mut dir in directories {
        dir.unpack_in(tmp.path()).map_err(unreadable)?;
    }
    check_tree(tmp.path()).map_err(|e| Error::input(format!("{shown}: {e}")))?;
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

/// Uses a directory as a dump: itself if it holds `sys/`, else its single subdirectory;
/// checked as an archive's entries are (module documentation).
pub fn directory(dir: &Path) -> Result<DumpRoot> {
    let root = find_root(dir).ok_or_else(|| {
        Error::input(format!(
            "{}: not a sysfs dump (no sys/ directory in it or in its one subdirectory)",
            dir.display()
        ))
    })?;
    check_tree(dir)?;
    Ok(DumpRoot { root, _tmp: None })
}

/// Links followed in resolving one link, at most (Linux's own limit).
const MAX_LINK_HOPS: u32 = 40;

/// Whether the link at `link` (a path relative to the dump's top `top`, its parents
/// directories) leads inside the dump, following the links it passes as the kernel
/// would; a target that does not exist is resolved by its names (the dump's missing
/// devices: hwloc finds nothing there).
fn leads_inside(top: &Path, link: &Path) -> std::result::Result<(), String> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    /// A target's component, owned (targets are read as the walk goes).
    enum Step {
        Name(OsString),
        Up,
        Root,
    }
    fn steps(target: &Path) -> impl DoubleEndedIterator<Item = Step> + '_ {
        target.components().filter_map(|c| match c {
            Component::Normal(name) => Some(Step::Name(name.to_os_string())),
            Component::ParentDir => Some(Step::Up),
            Component::CurDir => None,
            Component::RootDir | Component::Prefix(_) => Some(Step::Root),
        })
    }
    let mut target = std::fs::read_link(top.join(link)).map_err(|e| e.to_string())?;
    let mut at: Vec<OsString> = link
        .parent()
        .map(|p| p.iter().map(|c| c.to_os_string()).collect())
        .unwrap_or_default();
    let mut todo: VecDeque<Step> = steps(&target).collect();
    let mut hops = 0;
    while let Some(step) = todo.pop_front() {
        match step {
            Step::Name(name) => {
                at.push(name);
                let here = top.join(at.iter().collect::<PathBuf>());
                if std::fs::symlink_metadata(&here).is_ok_and(|m| m.is_symlink()) {
                    hops += 1;
                    if hops > MAX_LINK_HOPS {
                        return Err(format!("more than {MAX_LINK_HOPS} links in a row"));
                    }
                    at.pop();
                    target = std::fs::read_link(&here).map_err(|e| e.to_string())?;
                    for s in steps(&target).rev() {
                        todo.push_front(s);
                    }
                }
            }
            Step::Up if !at.is_empty() => {
                at.pop();
            }
            Step::Up | Step::Root => {
                return Err(format!(
                    "a link to {}, outside the dump; a sysfs dump's links stay inside it",
                    target.display()
                ))
            }
        }
    }
    Ok(())
}

/// Checks the dump directory `top`: at most [`MAX_ENTRIES`] entries, each a regular
/// file, a directory or a link that stays inside `top`.
fn check_tree(top: &Path) -> Result<()> {
    let shown = top.display();
    let mut stack = vec![PathBuf::new()];
    let mut count = 0u64;
    while let Some(rel) = stack.pop() {
        let entries = std::fs::read_dir(top.join(&rel))
            .map_err(|e| Error::input(format!("{shown}: {}: {e}", rel.display())))?;
        for e in entries {
            let e = e.map_err(|e| Error::input(format!("{shown}: {}: {e}", rel.display())))?;
            let path = rel.join(e.file_name());
            let at = |what: String| Error::input(format!("{shown}: {}: {what}", path.display()));
            count += 1;
            if count > MAX_ENTRIES {
                return Err(Error::input(format!(
                    "{shown}: more than {MAX_ENTRIES} entries; a sysfs dump may have at most that"
                )));
            }
            let kind = e.file_type().map_err(|e| at(e.to_string()))?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_symlink() {
                leads_inside(top, &path).map_err(at)?;
            } else if !kind.is_file() {
                return Err(at(
                    "neither a file, a directory nor a link; a sysfs dump holds only those".into(),
                ));
            }
        }
    }
    Ok(())
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

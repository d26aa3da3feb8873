//! Files hetsched reads and writes, safely on a file system others can write to.
//!
//! **Inputs** (scenarios, machine files, signatures, traces) are named by a user and may
//! be anything: a FIFO, whose `open` and `read` block forever; a device such as
//! `/dev/zero`, which never ends; a file of many gigabytes. [`read`] opens without
//! blocking, accepts only a regular file and reads at most a cap that its error names.
//!
//! **Outputs** may be written by root into a directory other users can write (`/tmp`, a
//! shared project directory), where one of them can plant a symbolic link, or a whole
//! directory tree of them, before the run. Following one would let that user choose
//! which file root overwrites. So:
//!
//! - an output directory ([`OutDir`]) is opened once, its last component without
//!   following a link, and must belong to the user who writes (root's to root); its
//!   subdirectories are opened relative to it, again without following links, so a
//!   link anywhere below the named directory is refused, never followed. The path to
//!   it (and to an [`OutFile`] named by path) is walked one component at a time,
//!   following a link only if it belongs to the user who writes or to root: another
//!   user's link (`hetsched-out` planted in a shared directory) is refused;
//! - an output file ([`OutFile`]) is written under a fresh temporary name created with
//!   `O_EXCL | O_NOFOLLOW` (nothing planted can be opened) and renamed over its final
//!   name when complete. The rename replaces a directory entry; it never writes through
//!   a link or into a file that was there. A run that fails leaves no truncated file:
//!   an `OutFile` dropped unfinished removes its temporary.
//!
//! Errors are input errors (exit 2) when the path a user gave cannot be used (a link,
//! not a directory, another user's directory, a device, no permission), and runtime
//! errors (exit 1) when writing valid output fails midway (the disk filled up).

use crate::error::{Error, PathContext, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// `n` bytes for a message: "64 MiB", "1 GiB", "512 bytes".
pub fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}

/// What kind of file a stat says, for a message.
fn kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a regular file",
        FileType::Unknown => "not a regular file",
    }
}

/// Opens the regular file `path` for reading, for a reader that streams it or reads
/// only parts of it (a trace, an archive, a program); `what` names it in errors. A
/// FIFO, a device or a directory is refused without blocking. Returns the file and its
/// size.
pub fn open(path: &Path, what: &str) -> Result<(File, u64)> {
    open_regular(path, what, OFlags::empty())
}

/// [`open`], but a symbolic link at `path` itself is refused rather than followed: for
/// a file that is then replaced in place (a program a note is embedded in).
pub fn open_nofollow(path: &Path, what: &str) -> Result<(File, u64)> {
    open_regular(path, what, OFlags::NOFOLLOW)
}

fn open_regular(path: &Path, what: &str, extra: OFlags) -> Result<(File, u64)> {
    let shown = path.display();
    let cannot = |e: Errno| Error::input(format!("{shown}: cannot read {what}: {e}"));
    // O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one.
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY | extra;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Err(Errno::LOOP) if extra.contains(OFlags::NOFOLLOW) => {
            return Err(Error::input(format!(
                "{shown}: is a symbolic link; {what} must be a regular file here, not a \
                 link (give the link's target)"
            )))
        }
        r => r.map_err(cannot)?,
    };
    let stat = rustix::fs::fstat(&fd).map_err(cannot)?;
    let file_type = FileType::from_raw_mode(stat.st_mode);
    if file_type != FileType::RegularFile {
        return Err(Error::input(format!(
            "{shown}: is {}; {what} must be a regular file",
            kind(file_type)
        )));
    }
    Ok((File::from(fd), stat.st_size as u64))
}

/// Reads the regular file `path`, at most `cap` bytes; `what` names it in errors ("a
/// scenario"). A FIFO, a device or a directory is refused without blocking; a larger
/// file is refused naming the cap.
pub fn read(path: &Path, what: &str, cap: u64) -> Result<Vec<u8>> {
    read_opened(path, what, cap, open(path, what)?)
}

/// [`read_text`], but a symbolic link at `path` itself is refused rather than followed:
/// for the files of a directory hetsched was pointed at, which should hold no links out
/// of it.
pub fn read_text_nofollow(path: &Path, what: &str, cap: u64) -> Result<String> {
    let data = read_opened(path, what, cap, open_nofollow(path, what)?)?;
    utf8(path, what, data)
}

fn read_opened(path: &Path, what: &str, cap: u64, (file, size): (File, u64)) -> Result<Vec<u8>> {
    let shown = path.display();
    let too_big = |n: u64| {
        Error::input(format!(
            "{shown}: {n} bytes; {what} may have at most {}",
            bytes(cap)
        ))
    };
    if size > cap {
        return Err(too_big(size));
    }
    let mut data = Vec::with_capacity(size as usize);
    // The file may grow while it is read: the cap holds whatever it becomes.
    file.take(cap + 1)
        .read_to_end(&mut data)
        .map_err(|e| Error::input(format!("{shown}: cannot read {what}: {e}")))?;
    if data.len() as u64 > cap {
        return Err(too_big(data.len() as u64));
    }
    Ok(data)
}

/// [`read`], as UTF-8 text.
pub fn read_text(path: &Path, what: &str, cap: u64) -> Result<String> {
    utf8(path, what, read(path, what, cap)?)
}

fn utf8(path: &Path, what: &str, data: Vec<u8>) -> Result<String> {
    String::from_utf8(data).map_err(|e| {
        Error::input(format!(
            "{}: {what} must be UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// A directory hetsched writes its outputs into; see the module documentation.
#[derive(Clone)]
pub struct OutDir {
    path: PathBuf,
    fd: Arc<OwnedFd>,
}

impl std::fmt::Debug for OutDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutDir({})", self.path.display())
    }
}

impl OutDir {
    /// Creates (if needed) and opens the output directory `path`. Missing parents are
    /// created as the path names them; the directory itself must not be a link, must
    /// belong to this user and must take files (checked now, with a file made and
    /// removed at once: `/proc` belongs to root but takes none, and a run should not
    /// find out only when it is done).
    pub fn create(path: &Path) -> Result<OutDir> {
        let dir = OutDir::open(path)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let probe = format!(
            ".hetsched-probe.{}",
            rustix::process::getpid().as_raw_nonzero()
        );
        match rustix::fs::openat(&*dir.fd, &probe, flags, Mode::from_raw_mode(0o600)) {
            Ok(_) => {
                let _ = rustix::fs::unlinkat(&*dir.fd, &probe, AtFlags::empty());
            }
            // Something has the name: files can be made there.
            Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(Error::input(format!(
                    "{}: cannot write in the output directory: {e}",
                    path.display()
                )))
            }
        }
        Ok(dir)
    }

    /// [`OutDir::create`], the directory (and any missing parent) made readable by its
    /// owner only: for what is nobody else's business (the performance models a user's
    /// runs measured). An existing directory keeps its mode.
    pub fn create_private(path: &Path) -> Result<OutDir> {
        use std::os::unix::fs::DirBuilderExt;
        if std::fs::symlink_metadata(path).is_err() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|e| {
                    Error::input(format!(
                        "{}: cannot create the directory: {e}",
                        path.display()
                    ))
                })?;
        }
        OutDir::create(path)
    }

    fn open(path: &Path) -> Result<OutDir> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        match (parent, path.file_name()) {
            // The parent (missing directories created), then the last component without
            // following a link.
            (Some(parent), Some(name)) => {
                let dir = open_path(parent, path, true)?;
                open_dir(dir.as_fd(), Path::new(name), path.to_path_buf())
            }
            _ => open_dir(CWD, path, path.to_path_buf()),
        }
    }

    /// The subdirectory `name` (one component), created if needed, with the same checks.
    pub fn subdir(&self, name: &str) -> Result<OutDir> {
        open_dir(
            self.fd.as_fd(),
            Path::new(one_component(name)),
            self.join(name),
        )
    }

    /// The directory as it was named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in this directory, for messages.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Starts writing the file `name` (one component); see [`OutFile`].
    pub fn file(&self, name: &str) -> Result<OutFile> {
        OutFile::start(self.fd.clone(), one_component(name), self.join(name))
    }

    /// Writes the whole file `name` at once; returns its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<PathBuf> {
        let mut file = self.file(name)?;
        file.write_all(contents.as_ref())
            .map_err(|e| file.error(e))?;
        file.finish()
    }
}

/// Links followed while opening one path, at most (Linux's own limit).
const MAX_LINK_HOPS: u32 = 40;

/// Opens the directory `path` as the kernel would resolve it, but one component at a
/// time (creating missing ones when `create`, as `create_dir_all` does), following a
/// symbolic link only if it belongs to this user or to root. `shown` (the path the user
/// gave) names it in errors.
fn open_path(path: &Path, shown: &Path, create: bool) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let start = rustix::fs::open(".", flags, Mode::empty())
        .map_err(|e| Error::input(format!("{}: cannot open .: {e}", shown.display())))?;
    walk(start, path, shown, create, &mut 0)
}

/// Walks `path` from the directory `dir` (see [`open_path`]); `shown` names the whole
/// path in errors.
fn walk(
    mut dir: OwnedFd,
    path: &Path,
    shown: &Path,
    create: bool,
    hops: &mut u32,
) -> Result<OwnedFd> {
    let fail = |what: String| Error::input(format!("{}: {what}", shown.display()));
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for c in path.components() {
        let name = match c {
            Component::RootDir => {
                let root = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                dir = rustix::fs::open("/", root, Mode::empty())
                    .map_err(|e| fail(format!("cannot open /: {e}")))?;
                continue;
            }
            Component::CurDir | Component::Prefix(_) => continue,
            Component::ParentDir => OsStr::new(".."),
            Component::Normal(name) => {
                if create {
                    match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => {
                            return Err(fail(format!(
                                "cannot create the output directory {}: {e}",
                                name.to_string_lossy()
                            )))
                        }
                    }
                }
                name
            }
        };
        let shown_name = name.to_string_lossy();
        match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
            Ok(next) => dir = next,
            // With O_DIRECTORY, Linux says ENOTDIR for a link (ELOOP without it).
            Err(Errno::LOOP | Errno::NOTDIR) => {
                let at = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let cannot = |e: Errno| fail(format!("cannot open {shown_name}: {e}"));
                let link = rustix::fs::openat(&dir, name, at, Mode::empty()).map_err(cannot)?;
                let stat = rustix::fs::fstat(&link).map_err(cannot)?;
                let file_type = FileType::from_raw_mode(stat.st_mode);
                if file_type != FileType::Symlink {
                    return Err(fail(format!(
                        "{shown_name} is {}, not a directory",
                        kind(file_type)
                    )));
                }
                let me = rustix::process::geteuid().as_raw();
                if stat.st_uid != me && stat.st_uid != 0 {
                    return Err(fail(format!(
                        "{shown_name} is a symbolic link of uid {}, not of uid {me} (you) or \
                         root; refusing to follow it to an output (another user could have \
                         planted it)",
                        stat.st_uid
                    )));
                }
                *hops += 1;
                if *hops > MAX_LINK_HOPS {
                    return Err(fail("too many levels of symbolic links".into()));
                }
                let target = rustix::fs::readlinkat(&link, "", Vec::new()).map_err(cannot)?;
                let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                // What the link names is walked alike, and never created.
                dir = walk(dir, &target, shown, false, hops)?;
            }
            Err(e) => return Err(fail(format!("cannot open {shown_name}: {e}"))),
        }
    }
    Ok(dir)
}

/// `name` if it is one path component; a caller's bug otherwise.
fn one_component(name: &str) -> &str {
    assert!(
        !name.is_empty() && !name.contains('/') && name != "." && name != "..",
        "an output name is one path component, not {name:?}"
    );
    name
}

/// Creates (if needed) and opens the directory `name` under `at` without following a
/// link; it must belong to this user.
fn open_dir(at: impl AsFd, name: &Path, shown: PathBuf) -> Result<OutDir> {
    let at = at.as_fd();
    let fail = |what: String| Err(Error::input(format!("{}: {what}", shown.display())));
    match rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return fail(format!("cannot create the output directory: {e}")),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(at, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        // With O_DIRECTORY, Linux says ENOTDIR for a link (ELOOP without it).
        Err(Errno::LOOP | Errno::NOTDIR) => {
            let stat = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW);
            return match stat.map(|s| FileType::from_raw_mode(s.st_mode)) {
                Ok(FileType::Symlink) => {
                    fail("is a symbolic link; refusing to write through it".into())
                }
                Ok(other) => fail(format!("is {}, not a directory", kind(other))),
                Err(e) => fail(format!("not a directory ({e})")),
            };
        }
        Err(e) => return fail(format!("cannot open the output directory: {e}")),
    };
    let stat = rustix::fs::fstat(&fd).input_at(&shown)?;
    let me = rustix::process::geteuid().as_raw();
    if stat.st_uid != me {
        return fail(format!(
            "belongs to uid {}, not to uid {me} (you); refusing to write outputs there \
             (another user could have planted links in it): choose another directory",
            stat.st_uid
        ));
    }
    Ok(OutDir {
        path: shown,
        fd: Arc::new(fd),
    })
}

/// An output file being written: under a temporary name until [`OutFile::finish`]
/// renames it into place; dropped unfinished, it removes its temporary (see the module
/// documentation).
pub struct OutFile {
    dir: Arc<OwnedFd>,
    temp: String,
    name: String,
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

impl OutFile {
    /// Starts writing the file at `path`, a path a user named (`--trace FILE`): its
    /// directory as the path names it, the file itself never followed if a link, and
    /// refused if it is something other than a regular file (`/dev/full`, a FIFO).
    pub fn create(path: &Path) -> Result<OutFile> {
        let shown = path.display();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return Err(Error::input(format!(
                "{shown}: not a file name (or not UTF-8)"
            )));
        };
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = open_path(parent, path, false)?;
        if let Ok(stat) = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            let file_type = FileType::from_raw_mode(stat.st_mode);
            if file_type != FileType::RegularFile {
                return Err(Error::input(format!(
                    "{shown}: is {}; refusing to write there (an output is a regular file)",
                    kind(file_type)
                )));
            }
        }
        OutFile::start(Arc::new(dir), name, path.to_path_buf())
    }

    fn start(dir: Arc<OwnedFd>, name: &str, path: PathBuf) -> Result<OutFile> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let pid = rustix::process::getpid().as_raw_nonzero();
        let mut attempt = 0u32;
        loop {
            let temp = format!(".{name}.{pid}-{attempt}.tmp");
            match rustix::fs::openat(&dir, &temp, flags, Mode::from_raw_mode(0o644)) {
                Ok(fd) => {
                    return Ok(OutFile {
                        dir,
                        temp,
                        name: name.to_string(),
                        path,
                        file: Some(BufWriter::new(File::from(fd))),
                    })
                }
                // Something (left over, or planted) has the name: take another.
                Err(Errno::EXIST) if attempt < 100 => attempt += 1,
                Err(e) => {
                    return Err(Error::input(format!(
                        "{}: cannot create: {e}",
                        path.display()
                    )))
                }
            }
        }
    }

    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file being written, e.g. to set its mode or owner before
    /// [`OutFile::finish`] puts it in place.
    pub fn get_ref(&self) -> &File {
        self.file.as_ref().expect("not finished").get_ref()
    }

    /// A write error, as the error this file's writer reports (exit 1: valid output
    /// could not be written).
    pub fn error(&self, e: std::io::Error) -> Error {
        Error::runtime(format!("{}: cannot write: {e}", self.path.display()))
    }

    /// Completes the file: flushes it and renames it over its name. Returns its path.
    pub fn finish(mut self) -> Result<PathBuf> {
        let file = self.file.take().expect("finished once");
        let path = self.path.clone();
        let flushed = file.into_inner().map_err(|e| e.into_error());
        if let Err(e) = flushed {
            let e = self.error(e);
            self.remove_temp();
            return Err(e);
        }
        if let Err(e) = rustix::fs::renameat(&self.dir, &self.temp, &self.dir, &self.name) {
            self.remove_temp();
            return Err(Error::input(format!(
                "{}: cannot put the output in place: {e}",
                path.display()
            )));
        }
        Ok(path)
    }

    fn remove_temp(&self) {
        let _ = rustix::fs::unlinkat(&self.dir, &self.temp, AtFlags::empty());
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not finished").write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file.as_mut().expect("not finished").write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not finished").flush()
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            self.remove_temp();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let start = std::time::Instant::now();
        let e = read(&fifo, "a scenario", 1 << 20).unwrap_err();
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(
            e.to_string(),
            format!(
                "{}: is a FIFO; a scenario must be a regular file",
                fifo.display()
            )
        );
        assert_eq!(e.exit_code(), 2);
        let e = read(Path::new("/dev/zero"), "a signature", 1 << 20).unwrap_err();
        assert!(e.to_string().contains("is a character device"), "{e}");
        let e = read(dir.path(), "a trace", 1 << 20).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn open_gives_a_regular_file_and_its_size_and_open_nofollow_refuses_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("prog");
        std::fs::write(&prog, b"\x7fELF").unwrap();
        assert_eq!(open(&prog, "a program").unwrap().1, 4);
        let link = dir.path().join("link");
        symlink(&prog, &link).unwrap();
        assert_eq!(open(&link, "a program").unwrap().1, 4);
        let e = open_nofollow(&link, "a program").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = open(Path::new("/dev/zero"), "a program").unwrap_err();
        assert!(e.to_string().contains("is a character device"), "{e}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; 2048]).unwrap();
        let e = read(&big, "a scenario", 1024).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: 2048 bytes; a scenario may have at most 1 KiB",
                big.display()
            )
        );
        assert_eq!(read(&big, "a scenario", 2048).unwrap().len(), 2048);
        let e = read_text(&big, "x", 10).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        std::fs::write(&big, [b'a', 0xff]).unwrap();
        let e = read_text(&big, "a scenario", 10).unwrap_err();
        assert!(e.to_string().ends_with("(invalid byte at offset 1)"), "{e}");
    }

    #[test]
    fn an_output_is_renamed_into_place_and_an_unfinished_one_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::create(&dir.path().join("a/b")).unwrap();
        let sub = out.subdir("run").unwrap();
        let mut f = sub.file("tasks.csv").unwrap();
        f.write_all(b"task,unit\n").unwrap();
        // Not there until finished.
        assert!(!sub.join("tasks.csv").exists());
        assert_eq!(f.finish().unwrap(), dir.path().join("a/b/run/tasks.csv"));
        assert_eq!(
            std::fs::read(dir.path().join("a/b/run/tasks.csv")).unwrap(),
            b"task,unit\n"
        );
        let mut f = sub.file("tasks.csv").unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        // The complete file stays; no temporary is left beside it.
        let names: Vec<_> = std::fs::read_dir(sub.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["tasks.csv"]);
        assert_eq!(
            std::fs::read(sub.join("tasks.csv")).unwrap(),
            b"task,unit\n"
        );
    }

    #[test]
    fn planted_links_are_refused_and_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root's").unwrap();
        // The output directory itself a link.
        let target = dir.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        symlink(&target, dir.path().join("out")).unwrap();
        let e = OutDir::create(&dir.path().join("out")).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is a symbolic link; refusing to write through it"),
            "{e}"
        );
        assert_eq!(e.exit_code(), 2);
        // A subdirectory planted as a link.
        let out = OutDir::create(&dir.path().join("real")).unwrap();
        symlink(&target, out.join("simulate-hand")).unwrap();
        assert!(out.subdir("simulate-hand").is_err());
        // A file planted as a link: replaced by the output, the target untouched.
        symlink(&secret, out.join("table.txt")).unwrap();
        out.write("table.txt", "the table").unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's");
        assert_eq!(
            std::fs::read_to_string(out.join("table.txt")).unwrap(),
            "the table"
        );
        // A file given by path: a link or a device is refused.
        let link = dir.path().join("trace.json");
        symlink(&secret, &link).unwrap();
        let e = OutFile::create(&link).err().unwrap();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        let e = OutFile::create(Path::new("/dev/full")).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("is a character device"), "{e}");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's");
        // An existing file where a directory is wanted.
        let e = OutDir::create(&secret).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is a regular file, not a directory"),
            "{e}"
        );
    }

    /// Root refuses an output directory another user owns (as root only: elsewhere a
    /// directory of another user cannot be made here).
    #[test]
    fn another_users_output_directory_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("not root: cannot make another user's directory; nothing checked");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("hetsched-out");
        std::fs::create_dir(&theirs).unwrap();
        nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let e = OutDir::create(&theirs).unwrap_err();
        assert!(
            e.to_string().contains("belongs to uid 65534, not to uid 0"),
            "{e}"
        );
    }

    #[test]
    fn a_directory_that_takes_no_files_is_refused_at_once() {
        let e = OutDir::create(Path::new("/proc")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .starts_with("/proc: cannot write in the output directory"),
            "{e}"
        );
        let e = OutDir::create(Path::new("/proc/self")).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        // Nothing is left of the check.
        let dir = tempfile::tempdir().unwrap();
        OutDir::create(dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn ones_own_links_on_the_way_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        symlink("real", dir.path().join("mine")).unwrap();
        symlink(dir.path().join("mine"), dir.path().join("again")).unwrap();
        let out = OutDir::create(&dir.path().join("again/sub/out")).unwrap();
        out.write("t.txt", "x").unwrap();
        assert!(real.join("sub/out/t.txt").is_file());
        let mut f = OutFile::create(&dir.path().join("again/trace.json")).unwrap();
        f.write_all(b"{}").unwrap();
        f.finish().unwrap();
        assert!(real.join("trace.json").is_file());
        // A loop of links ends in an error, not a hang.
        symlink("loop", dir.path().join("loop")).unwrap();
        let e = OutDir::create(&dir.path().join("loop/out")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    /// Root refuses to follow another user's link on the way to an output: planted in a
    /// shared directory, it would choose where root writes (as root only: elsewhere a
    /// link of another user cannot be made here).
    #[test]
    fn another_users_link_on_the_way_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("not root: cannot make another user's link; nothing checked");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("roots");
        std::fs::create_dir(&target).unwrap();
        let planted = dir.path().join("hetsched-out");
        symlink(&target, &planted).unwrap();
        std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
        let e = OutDir::create(&planted.join("simulate-hand")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("hetsched-out is a symbolic link of uid 65534"),
            "{e}"
        );
        let e = OutFile::create(&planted.join("trace.json")).err().unwrap();
        assert!(e.to_string().contains("symbolic link of uid 65534"), "{e}");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }

    #[test]
    fn sizes_read_as_units() {
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(1000), "1000 bytes");
    }
}

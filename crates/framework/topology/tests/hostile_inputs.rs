//! Machine inputs that would hang hwloc or fill the disk are refused at once, with an
//! input error naming the file: a FIFO or a device given as the machine, a dump archive
//! holding a FIFO, a link out of the dump (also through another link), or more data
//! than a dump holds; a dump directory holding a FIFO.

use hetsched_core::machine::UnitGranularity;
use hetsched_core::Error;
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `load(spec)`'s input error message, which must come within a few seconds.
fn refused(spec: &Path) -> String {
    let start = Instant::now();
    let r = hetsched_topology::load(spec.to_str().unwrap(), UnitGranularity::Pu);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{}",
        spec.display()
    );
    match r {
        Err(Error::Input(m)) => {
            assert_eq!(m.lines().count(), 1, "{m}");
            m
        }
        other => panic!("{}: expected an input error, got {other:?}", spec.display()),
    }
}

/// A tar archive compressed with bzip2: `build` adds the entries.
fn archive(path: &Path, build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) {
    let mut b = tar::Builder::new(Vec::new());
    build(&mut b);
    let tar = b.into_inner().unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&tar).unwrap();
    std::fs::write(path, bz.finish().unwrap()).unwrap();
}

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    h
}

fn file(b: &mut tar::Builder<Vec<u8>>, path: &str, data: &[u8]) {
    let mut h = header(tar::EntryType::Regular, data.len() as u64);
    b.append_data(&mut h, path, data).unwrap();
}

fn link(b: &mut tar::Builder<Vec<u8>>, path: &str, target: &str) {
    let mut h = header(tar::EntryType::Symlink, 0);
    b.append_link(&mut h, path, target).unwrap();
}

#[test]
fn a_fifo_or_a_device_given_as_the_machine_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["m.toml", "m.xml", "m.tar.bz2"] {
        let fifo = dir.path().join(name);
        mkfifo(&fifo);
        let m = refused(&fifo);
        assert!(m.contains("is a FIFO") && m.contains(name), "{m}");
    }
    let m = refused(Path::new("/dev/zero"));
    assert!(m.contains("unknown machine file type"), "{m}");
}

#[test]
fn a_dump_archive_with_a_fifo_a_link_out_or_too_much_data_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.tar.bz2");
    archive(&fifo, |b| {
        file(b, "d/sys/devices/system/cpu/possible", b"0\n");
        let mut h = header(tar::EntryType::Fifo, 0);
        b.append_data(&mut h, "d/sys/devices/system/cpu/online", &[][..])
            .unwrap();
    });
    let m = refused(&fifo);
    assert!(
        m.contains("d/sys/devices/system/cpu/online") && m.contains("Fifo"),
        "{m}"
    );

    let out = dir.path().join("out.tar.bz2");
    archive(&out, |b| {
        file(b, "d/sys/devices/system/cpu/possible", b"0\n");
        link(b, "d/sys/devices/system/cpu/online", "/dev/zero");
    });
    assert!(refused(&out).contains("a link to /dev/zero, outside the dump"));

    // Each link's target alone stays inside; through `a` (the directory itself), `b`
    // climbs out of the dump.
    let through = dir.path().join("through.tar.bz2");
    archive(&through, |b| {
        file(b, "sys/devices/system/cpu/possible", b"0\n");
        link(b, "sys/a", ".");
        link(b, "sys/b", "a/../..");
    });
    let m = refused(&through);
    assert!(
        m.contains("sys/b: a link to") && m.contains("outside the dump"),
        "{m}"
    );

    // A header that claims more than a dump may hold: refused before its data is read.
    let big = dir.path().join("big.tar.bz2");
    let mut tar = header(tar::EntryType::Regular, 300 << 20);
    tar.set_path("d/sys/huge").unwrap();
    tar.set_cksum();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(tar.as_bytes()).unwrap();
    std::fs::write(&big, bz.finish().unwrap()).unwrap();
    let m = refused(&big);
    assert!(m.contains("expands to more than 256 MiB"), "{m}");
}

#[test]
fn a_dump_directory_holding_a_fifo_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(cpu.join("possible"), "0\n").unwrap();
    mkfifo(&cpu.join("online"));
    let m = refused(dir.path());
    assert!(
        m.contains("sys/devices/system/cpu/online: neither a file"),
        "{m}"
    );
}

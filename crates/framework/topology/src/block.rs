//! Which block device a path lives on, read from sysfs.
//!
//! A user names a file or a device node (`hetsched iobench FILE`, `hetsched run --device
//! FILE`); the machine model knows I/O devices by their kernel name, as hwloc reports
//! them (`vda`, `nvme0n1`), with their NUMA node. This module is the bridge: the file's
//! device number (or the node's own), `/sys/dev/block/MAJ:MIN`, and the whole disk
//! above a partition.

use hetsched_core::machine::Machine;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The block device behind a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// Kernel name of the whole disk (`vda` for `/dev/vda1` or a file on it).
    pub name: String,
    /// The disk's logical block size in bytes (the unit of direct I/O).
    pub logical_block_size: u32,
    /// Whether the path itself is the block device node.
    pub is_device_node: bool,
}

fn major_minor(dev: u64) -> (u64, u64) {
    // glibc's gnu_dev_major / gnu_dev_minor.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000);
    let minor = (dev & 0xff) | ((dev >> 12) & 0xffff_ff00);
    (major, minor)
}

/// The whole disk holding `path` (a block device node, or a file on a disk-backed file
/// system). A file on a file system without a block device (tmpfs, procfs) is
/// `NotFound`, naming the device number.
pub fn block_device_of(path: &Path) -> io::Result<BlockDevice> {
    let meta = std::fs::metadata(path)?;
    let is_device_node = meta.file_type().is_block_device();
    let dev = if is_device_node {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = major_minor(dev);
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let dir = std::fs::canonicalize(&sys).map_err(|_| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no block device behind it (device {major}:{minor}: not in /sys/dev/block)"),
        )
    })?;
    let whole = if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir)
    } else {
        dir
    };
    let name = whole
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let logical_block_size = std::fs::read_to_string(whole.join("queue/logical_block_size"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(512);
    Ok(BlockDevice {
        name,
        logical_block_size,
        is_device_node,
    })
}

/// Index in `machine.io_devices` of the device named `name` (a kernel name such as
/// `vda`), else of the block device holding the path `name`.
pub fn io_device_index(machine: &Machine, name: &str) -> Option<usize> {
    let by_name = |n: &str| machine.io_devices.iter().position(|d| d.name == n);
    by_name(name).or_else(|| by_name(&block_device_of(Path::new(name)).ok()?.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's `makedev`.
    fn makedev(major: u64, minor: u64) -> u64 {
        (major & 0xfff) << 8
            | (major & 0xffff_f000) << 32
            | (minor & 0xff)
            | (minor & 0xffff_ff00) << 12
    }

    #[test]
    fn major_minor_splits_linux_dev_t() {
        assert_eq!(major_minor(makedev(259, 65537)), (259, 65537));
        assert_eq!(major_minor(makedev(4096, 3)), (4096, 3));
        assert_eq!(major_minor(0xfe00), (254, 0));
    }

    #[test]
    fn a_proc_file_has_no_block_device() {
        let err = block_device_of(Path::new("/proc/self/status")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("/sys/dev/block"), "{err}");
    }
}

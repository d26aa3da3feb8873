//! `hetsched iobench`: a zmIO-like direct-I/O benchmark (Akram et al., section IV-C).
//!
//! zmIO keeps a fixed number of asynchronous direct I/Os of one size outstanding per
//! instance and issues a new one as each completes; optionally it sums the returned
//! bytes, and it is co-run with a STREAM-like memory stress. Here each instance is a
//! thread with its own `O_DIRECT` descriptor, its own io_uring (the `io-uring` crate)
//! and its own page-aligned buffers, walking the file (or block device) sequentially
//! and wrapping at its end, as fio's sequential jobs do, so the two compare.
//!
//! Placement follows the paper's configurations (Table II): with direct I/O the DMA
//! goes straight into the user buffer, so the transfer is local (TRL) when the buffer
//! is on the device's NUMA node, and the copy/use is local (CPL) when the thread runs
//! on the buffer's node. On a machine with one NUMA node every placement is the same
//! and the report says that it was not applied.
//!
//! Inputs are checked before any thread starts; what the kernel refuses (no such
//! file, no permission, `O_DIRECT` refused, a size the device cannot take) is an input
//! error naming the file or the option and what is accepted.

use crate::cpio::{self, Cpio};
use hetsched_core::machine::Machine;
use hetsched_core::{Error, PathContext, Result};
use hetsched_topology::block;
use io_uring::{opcode, types, IoUring};
use serde::Serialize;
use std::alloc::Layout;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Largest request: the io_uring length is 32-bit, and 64 MiB is far past any device's.
pub const MAX_BLOCK: u64 = 64 << 20;
pub const MAX_INSTANCES: u32 = 256;
pub const MAX_DEPTH: u32 = 4096;
/// Buffers of all instances together, so that a typo does not exhaust memory.
pub const MAX_BUFFER_BYTES: u64 = 8 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

/// What each instance does with the data after a request completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Touch {
    None,
    /// Load every 8-byte word and sum them (the paper's summation).
    Sum,
    /// Store to every cache line.
    Store,
}

/// The paper's configurations (Table II), for direct I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Config {
    #[serde(rename = "TRLCPL")]
    Trlcpl,
    #[serde(rename = "TRLCPR")]
    Trlcpr,
    #[serde(rename = "TRRCPL")]
    Trrcpl,
    #[serde(rename = "TRRCPR")]
    Trrcpr,
}

impl Config {
    pub const ALL: [Config; 4] = [
        Config::Trlcpl,
        Config::Trlcpr,
        Config::Trrcpl,
        Config::Trrcpr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Config::Trlcpl => "TRLCPL",
            Config::Trlcpr => "TRLCPR",
            Config::Trrcpl => "TRRCPL",
            Config::Trrcpr => "TRRCPR",
        }
    }

    pub fn parse(s: &str) -> Option<Config> {
        Config::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
    }

    /// The buffer (DMA target) is on another node than the device.
    pub fn remote_transfer(self) -> bool {
        matches!(self, Config::Trrcpl | Config::Trrcpr)
    }

    /// The thread using the data runs on another node than the buffer.
    pub fn remote_copy(self) -> bool {
        matches!(self, Config::Trlcpr | Config::Trrcpr)
    }

    /// (cpu node, memory node) for a device on `device_node` of `nodes` nodes.
    pub fn nodes(self, device_node: u32, nodes: &[u32]) -> (u32, u32) {
        let other = |n: u32| nodes.iter().copied().find(|&m| m != n).unwrap_or(n);
        let mem = if self.remote_transfer() {
            other(device_node)
        } else {
            device_node
        };
        let cpu = if self.remote_copy() { other(mem) } else { mem };
        (cpu, mem)
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub path: PathBuf,
    pub instances: u32,
    /// Requests outstanding per instance.
    pub depth: u32,
    /// Bytes per request.
    pub block: u64,
    pub op: Op,
    pub duration: Duration,
    /// Bytes of the file to walk (default: the file's or device's size; a write creates
    /// or extends a file to this size).
    pub size: Option<u64>,
    pub cpu_node: Option<u32>,
    pub mem_node: Option<u32>,
    pub config: Option<Config>,
    pub touch: Touch,
    /// Co-run a STREAM-like memory-stress thread.
    pub stress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            path: PathBuf::new(),
            instances: 1,
            depth: 32,
            block: 1 << 20,
            op: Op::Read,
            duration: Duration::from_secs(10),
            size: None,
            cpu_node: None,
            mem_node: None,
            config: None,
            touch: Touch::None,
            stress: false,
        }
    }
}

/// Where the threads and buffers were placed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Placement {
    pub device: Option<String>,
    pub device_node: Option<u32>,
    pub cpu_node: Option<u32>,
    pub mem_node: Option<u32>,
    /// Whether binding was applied (only with more than one NUMA node).
    pub applied: bool,
    pub note: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub path: PathBuf,
    pub op: Op,
    pub instances: u32,
    pub depth: u32,
    pub block_bytes: u64,
    pub region_bytes: u64,
    pub touch: Touch,
    pub config: Option<Config>,
    pub placement: Placement,
    pub seconds: f64,
    pub bytes: u64,
    pub requests: u64,
    pub throughput_bytes_per_s: f64,
    pub iops: f64,
    pub latency: Latency,
    pub cpio: Cpio,
    /// Memory bandwidth the stress thread drew (bytes read + written per second).
    pub stress_bytes_per_s: Option<f64>,
    /// Sum of the words read (`touch = sum`), so the work is not optimised away.
    pub checksum: u64,
}

/// What a running benchmark reports about once a second.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub elapsed: Duration,
    pub duration: Duration,
    pub bytes: u64,
}

fn input(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::input(format!("{}: {what}", path.display()))
}

/// Opens `path` for direct I/O, mapping what the kernel refuses to input errors.
///
/// Only a regular file or a block device: a FIFO would block the open and the reads
/// (it is opened without blocking, then refused). Writes go only into a file named
/// itself: a link there (perhaps planted by another user where root writes) is refused
/// rather than followed.
fn open_direct(opts: &Options) -> Result<File> {
    let path = &opts.path;
    if path.is_dir() {
        return Err(input(path, "is a directory; give a file or a block device"));
    }
    let neither = || input(path, "is neither a file nor a block device");
    if let Ok(m) = std::fs::metadata(path) {
        if !(m.is_file() || m.file_type().is_block_device()) {
            return Err(neither());
        }
    }
    let mut o = std::fs::OpenOptions::new();
    let mut flags = libc::O_DIRECT | libc::O_NONBLOCK;
    match opts.op {
        Op::Read => o.read(true),
        Op::Write => {
            flags |= libc::O_NOFOLLOW;
            o.write(true).create(opts.size.is_some())
        }
    };
    o.custom_flags(flags);
    let file = o.open(path).map_err(|e| match (e.kind(), e.raw_os_error()) {
        (_, Some(libc::ELOOP)) if opts.op == Op::Write => input(
            path,
            "is a symbolic link; iobench writes only into the file it is given, not through a link",
        ),
        (std::io::ErrorKind::NotFound, _) => input(
            path,
            match opts.op {
                Op::Read => "no such file or device (reads need an existing file: create one, e.g. `hetsched iobench --op write --size 1G FILE`)",
                Op::Write => "no such file or device (give --size to create a file)",
            },
        ),
        (std::io::ErrorKind::PermissionDenied, _) => input(
            path,
            format!(
                "permission denied: {} needs {} permission on the file or device",
                match opts.op {
                    Op::Read => "reading",
                    Op::Write => "writing",
                },
                match opts.op {
                    Op::Read => "read",
                    Op::Write => "write",
                }
            ),
        ),
        (_, Some(libc::EINVAL)) => input(
            path,
            "the file system refuses O_DIRECT (procfs, sysfs, character devices and some others do); use a file on a disk-backed file system or a block device",
        ),
        _ => Error::runtime(format!("{}: {e}", path.display())),
    })?;
    let kind = file.metadata().at(path)?.file_type();
    if !(kind.is_file() || kind.is_block_device()) {
        return Err(neither());
    }
    // Blocking I/O from here on (O_NONBLOCK only kept a FIFO's open from waiting).
    // SAFETY: fcntl on a descriptor this function owns.
    let cleared = unsafe {
        let fd = file.as_raw_fd();
        let fl = libc::fcntl(fd, libc::F_GETFL);
        fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        let e = std::io::Error::last_os_error();
        return Err(Error::runtime(format!("{}: {e}", path.display())));
    }
    Ok(file)
}

/// Logical block size for direct I/O: `statx` (DIOALIGN) where the kernel has it, else
/// the block device's, else 512.
fn dio_alignment(file: &File, device: Option<&block::BlockDevice>) -> (u64, u64) {
    // SAFETY: statx writes a statx struct; the empty path with AT_EMPTY_PATH names the
    // descriptor itself.
    let stx = unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        );
        (rc == 0).then_some(stx)
    };
    let fallback = device.map_or(512, |d| d.logical_block_size as u64);
    match stx {
        Some(s) if s.stx_mask & libc::STATX_DIOALIGN != 0 && s.stx_dio_offset_align > 0 => (
            s.stx_dio_offset_align as u64,
            (s.stx_dio_mem_align as u64).max(4096),
        ),
        _ => (fallback, 4096),
    }
}

/// Size of a file or block device in bytes.
fn size_of(file: &File, path: &Path) -> Result<u64> {
    let meta = file.metadata().at(path)?;
    if !meta.file_type().is_block_device() {
        return Ok(meta.len());
    }
    let mut bytes: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t).
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the ioctl writes one u64.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut bytes) };
    if rc != 0 {
        return Err(Error::runtime(format!(
            "{}: BLKGETSIZE64: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(bytes)
}

fn check_range(option: &str, got: u64, lo: u64, hi: u64) -> Result<()> {
    if (lo..=hi).contains(&got) {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{option} {got}: expected an integer in [{lo}, {hi}]"
        )))
    }
}

/// Everything checked, ready to run.
struct Prepared {
    region: u64,
    placement: Placement,
    cpus: Option<Vec<usize>>,
    mem_align: u64,
}

fn prepare(opts: &Options, machine: &Machine) -> Result<(Prepared, File)> {
    check_range(
        "--instances",
        opts.instances as u64,
        1,
        MAX_INSTANCES as u64,
    )?;
    check_range("--depth", opts.depth as u64, 1, MAX_DEPTH as u64)?;
    let secs = opts.duration.as_secs_f64();
    if !(0.05..=86_400.0).contains(&secs) {
        return Err(Error::range("--seconds", secs, 0.05, 86_400.0));
    }
    let file = open_direct(opts)?;
    let path = &opts.path;
    let device = block::block_device_of(path).ok();
    if opts.op == Op::Write && device.as_ref().is_some_and(|d| d.is_device_node) {
        return Err(input(
            path,
            "writing to a block device would destroy its data; iobench writes only to files",
        ));
    }
    let (lbs, mem_align) = dio_alignment(&file, device.as_ref());
    if opts.block == 0 || !opts.block.is_multiple_of(lbs) || opts.block > MAX_BLOCK {
        return Err(Error::input(format!(
            "--block-size {}: must be a multiple of the logical block size {lbs} of {} in [{lbs}, {MAX_BLOCK}]",
            opts.block,
            path.display()
        )));
    }
    let buffers = opts.block * opts.depth as u64 * opts.instances as u64;
    if buffers > MAX_BUFFER_BYTES {
        return Err(Error::input(format!(
            "--block-size × --depth × --instances = {buffers} bytes of buffers; at most {MAX_BUFFER_BYTES}"
        )));
    }
    let placement = place(opts, machine, device)?;
    let mut region = size_of(&file, path)?;
    if let Some(size) = opts.size {
        if opts.op == Op::Write && size > region {
            file.set_len(size).map_err(|e| {
                Error::runtime(format!("{}: extending to {size}: {e}", path.display()))
            })?;
            region = size;
        }
        region = region.min(size);
    }
    region -= region % opts.block;
    if region == 0 {
        return Err(input(
            path,
            format!(
                "{} bytes to walk, less than one request of --block-size {} (give a larger file or --size)",
                opts.size.unwrap_or(region), opts.block
            ),
        ));
    }
    let cpus = placement.applied.then(|| {
        placement
            .cpu_node
            .and_then(|n| machine.numa_node(n))
            .map(|n| n.cpus.iter().map(|&c| c as usize).collect())
    });
    Ok((
        Prepared {
            region,
            placement,
            cpus: cpus.flatten(),
            mem_align: mem_align.max(lbs),
        },
        file,
    ))
}

/// Resolves `--config` / `--cpu-node` / `--mem-node` against the machine.
fn place(
    opts: &Options,
    machine: &Machine,
    device: Option<block::BlockDevice>,
) -> Result<Placement> {
    let nodes: Vec<u32> = machine.numa_nodes.iter().map(|n| n.os_index).collect();
    let device_name = device.map(|d| d.name);
    let device_node = device_name
        .as_deref()
        .and_then(|n| machine.io_devices.iter().find(|d| d.name == n))
        .and_then(|d| d.numa_node);
    let check = |option: &str, node: Option<u32>| -> Result<()> {
        match node {
            Some(n) if !nodes.contains(&n) => Err(Error::input(format!(
                "{option} {n}: no such NUMA node; this machine has {nodes:?}"
            ))),
            _ => Ok(()),
        }
    };
    check("--cpu-node", opts.cpu_node)?;
    check("--mem-node", opts.mem_node)?;
    let (cpu_node, mem_node) = match opts.config {
        Some(config) => {
            let Some(dev) = device_node.or((nodes.len() == 1).then(|| nodes[0])) else {
                return Err(input(
                    &opts.path,
                    format!(
                        "--config {}: the device's NUMA node is unknown (block device {:?} not among this machine's I/O devices)",
                        config.name(),
                        device_name
                    ),
                ));
            };
            let (c, m) = config.nodes(dev, &nodes);
            (Some(c), Some(m))
        }
        None => (opts.cpu_node, opts.mem_node),
    };
    let asked = cpu_node.is_some() || mem_node.is_some();
    let applied = asked && nodes.len() > 1;
    let note = if !asked {
        "no placement asked: threads and buffers where the kernel puts them".into()
    } else if applied {
        "threads bound to the CPU node's PUs, buffers to the memory node (mbind)".into()
    } else {
        format!(
            "this machine has one NUMA node: every placement is the same, nothing was bound (configuration {} is a no-op here)",
            opts.config.map_or("from --cpu-node/--mem-node", Config::name)
        )
    };
    Ok(Placement {
        device: device_name,
        device_node,
        cpu_node,
        mem_node,
        applied,
        note,
    })
}

/// Page-aligned memory, optionally bound to a NUMA node before its first touch.
struct Buffer {
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by one thread at a time.
unsafe impl Send for Buffer {}

impl Buffer {
    fn new(bytes: usize, align: usize, node: Option<u32>) -> Result<Buffer> {
        let layout = Layout::from_size_align(bytes, align)
            .map_err(|e| Error::runtime(format!("buffer layout: {e}")))?;
        // SAFETY: the size is non-zero (checked by the caller's ranges).
        let ptr = std::ptr::NonNull::new(unsafe { std::alloc::alloc(layout) })
            .ok_or_else(|| Error::runtime(format!("cannot allocate {bytes} bytes")))?;
        let buf = Buffer { ptr, layout };
        if let Some(node) = node {
            buf.bind(node)?;
        }
        // First touch (after the binding, so that pages land on the node).
        // SAFETY: the allocation is `bytes` long.
        unsafe { std::ptr::write_bytes(buf.ptr.as_ptr(), 0x5a, bytes) };
        Ok(buf)
    }

    fn bind(&self, node: u32) -> Result<()> {
        let mask: [u64; 16] = std::array::from_fn(|i| {
            if node as usize / 64 == i {
                1 << (node % 64)
            } else {
                0
            }
        });
        // SAFETY: mbind on memory this buffer owns, with a mask of 1024 bits.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr.as_ptr(),
                self.layout.size(),
                libc::MPOL_BIND,
                mask.as_ptr(),
                1024usize,
                0u32,
            )
        };
        if rc != 0 {
            return Err(Error::runtime(format!(
                "mbind to node {node}: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    fn slice(&mut self, offset: usize, len: usize) -> &mut [u8] {
        // SAFETY: callers stay within the allocation; the buffer is exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), len) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// What one instance measured.
struct InstanceRun {
    bytes: u64,
    requests: u64,
    latency: hdrhistogram::Histogram<u64>,
    user: Duration,
    system: Duration,
    checksum: u64,
}

struct Shared<'a> {
    opts: &'a Options,
    prepared: &'a Prepared,
    stop: AtomicBool,
    bytes: AtomicU64,
}

fn touch(data: &mut [u8], how: Touch) -> u64 {
    match how {
        Touch::None => 0,
        Touch::Sum => data
            .chunks_exact(8)
            .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()))
            .fold(0u64, u64::wrapping_add),
        Touch::Store => {
            for (i, line) in data.chunks_exact_mut(64).enumerate() {
                line[0] = i as u8;
            }
            0
        }
    }
}

fn instance(shared: &Shared, index: u32) -> Result<InstanceRun> {
    let opts = shared.opts;
    let p = shared.prepared;
    if let Some(cpus) = &p.cpus {
        hetsched_util::host::pin_current_thread(cpus)?;
    }
    let file = open_direct(opts)?;
    let block = opts.block as usize;
    let depth = opts.depth as usize;
    let mut buf = Buffer::new(
        block * depth,
        p.mem_align as usize,
        p.placement.mem_node.filter(|_| p.placement.applied),
    )?;
    let ring_err = |e: std::io::Error| Error::runtime(format!("io_uring: {e}"));
    let mut ring: IoUring = IoUring::new(opts.depth.next_power_of_two()).map_err(ring_err)?;
    let fd = types::Fd(file.as_raw_fd());
    let mut latency = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)
        .map_err(|e| Error::runtime(format!("histogram: {e}")))?;
    // Instances start spread over the region, so that they do not read in lockstep.
    let mut next = (p.region / opts.instances as u64 * index as u64) / opts.block * opts.block;
    let mut started = vec![Instant::now(); depth];
    let (user0, system0) = cpio::thread_times();
    let (mut bytes, mut requests, mut checksum) = (0u64, 0u64, 0u64);
    let mut outstanding = 0usize;
    let mut submit =
        |ring: &mut IoUring, buf: &mut Buffer, slot: usize, started: &mut [Instant]| {
            let ptr = buf.slice(slot * block, block).as_mut_ptr();
            let entry = match opts.op {
                Op::Read => opcode::Read::new(fd, ptr, block as u32)
                    .offset(next)
                    .build(),
                Op::Write => opcode::Write::new(fd, ptr, block as u32)
                    .offset(next)
                    .build(),
            }
            .user_data(slot as u64);
            next = (next + opts.block) % p.region;
            started[slot] = Instant::now();
            // SAFETY: the buffer slot stays alive and untouched until its completion.
            unsafe { ring.submission().push(&entry) }.is_ok()
        };
    for slot in 0..depth {
        if submit(&mut ring, &mut buf, slot, &mut started) {
            outstanding += 1;
        }
    }
    let mut done = Vec::with_capacity(depth);
    while outstanding > 0 {
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(ring_err(e)),
        }
        done.extend(
            ring.completion()
                .map(|c| (c.user_data() as usize, c.result())),
        );
        for (slot, result) in done.drain(..) {
            outstanding -= 1;
            if result < 0 {
                let e = std::io::Error::from_raw_os_error(-result);
                return Err(if -result == libc::EINVAL {
                    input(&opts.path, format!("the kernel refused a direct {:?} of {block} bytes ({e}): the file system or device does not take O_DIRECT at this size or alignment", opts.op))
                } else {
                    Error::runtime(format!("{}: {e}", opts.path.display()))
                });
            }
            if result as usize != block {
                return Err(Error::runtime(format!(
                    "{}: short transfer of {result} bytes instead of {block} (did the file shrink?)",
                    opts.path.display()
                )));
            }
            let us = started[slot].elapsed().as_micros().max(1) as u64;
            latency.saturating_record(us);
            checksum = checksum.wrapping_add(touch(buf.slice(slot * block, block), opts.touch));
            bytes += opts.block;
            requests += 1;
            shared.bytes.fetch_add(opts.block, Ordering::Relaxed);
            if !shared.stop.load(Ordering::Relaxed)
                && submit(&mut ring, &mut buf, slot, &mut started)
            {
                outstanding += 1;
            }
        }
    }
    let (user1, system1) = cpio::thread_times();
    Ok(InstanceRun {
        bytes,
        requests,
        latency,
        user: user1.saturating_sub(user0),
        system: system1.saturating_sub(system0),
        checksum,
    })
}

/// A STREAM-like copy over two 64 MiB arrays until `stop`; returns bytes moved per s.
fn stress(shared: &Shared) -> Result<f64> {
    let p = shared.prepared;
    if let Some(cpus) = &p.cpus {
        hetsched_util::host::pin_current_thread(cpus)?;
    }
    const BYTES: usize = 64 << 20;
    let node = p.placement.mem_node.filter(|_| p.placement.applied);
    let mut a = Buffer::new(BYTES, 4096, node)?;
    let mut b = Buffer::new(BYTES, 4096, node)?;
    let start = Instant::now();
    let mut moved = 0u64;
    // At least one pass, so that a short run still measures something.
    loop {
        let (dst, src) = (a.slice(0, BYTES), b.slice(0, BYTES));
        dst.copy_from_slice(src);
        std::hint::black_box(&dst[BYTES - 1]);
        moved += 2 * BYTES as u64;
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(moved as f64 / start.elapsed().as_secs_f64().max(1e-9))
}

/// Runs the benchmark; `progress` is called about once a second.
pub fn run(
    opts: &Options,
    machine: &Machine,
    mut progress: impl FnMut(Progress),
) -> Result<Report> {
    let (prepared, _file) = prepare(opts, machine)?;
    let shared = Shared {
        opts,
        prepared: &prepared,
        stop: AtomicBool::new(false),
        bytes: AtomicU64::new(0),
    };
    let iowait0 = cpio::system_iowait();
    let start = Instant::now();
    let (runs, stressed) = std::thread::scope(|s| {
        let stress = opts.stress.then(|| s.spawn(|| stress(&shared)));
        let handles: Vec<_> = (0..opts.instances)
            .map(|i| {
                let shared = &shared;
                s.spawn(move || {
                    let r = instance(shared, i);
                    if r.is_err() {
                        shared.stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let mut last = Instant::now();
        while start.elapsed() < opts.duration && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(
                Duration::from_millis(20).min(opts.duration.saturating_sub(start.elapsed())),
            );
            if last.elapsed() >= Duration::from_secs(1) {
                last = Instant::now();
                progress(Progress {
                    elapsed: start.elapsed(),
                    duration: opts.duration,
                    bytes: shared.bytes.load(Ordering::Relaxed),
                });
            }
        }
        shared.stop.store(true, Ordering::Relaxed);
        let runs: Vec<Result<InstanceRun>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::runtime("an instance panicked")))
            })
            .collect();
        let stressed = stress.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::runtime("the stress thread panicked")))
        });
        (runs, stressed)
    });
    let seconds = start.elapsed().as_secs_f64();
    let iowait = cpio::system_iowait().saturating_sub(iowait0);
    let runs = runs.into_iter().collect::<Result<Vec<_>>>()?;
    let stress_bytes_per_s = stressed.transpose()?;
    let mut latency = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)
        .map_err(|e| Error::runtime(format!("histogram: {e}")))?;
    let (mut bytes, mut requests, mut user, mut system, mut checksum) =
        (0, 0, Duration::ZERO, Duration::ZERO, 0u64);
    for r in &runs {
        latency
            .add(&r.latency)
            .map_err(|e| Error::runtime(format!("histogram: {e}")))?;
        bytes += r.bytes;
        requests += r.requests;
        user += r.user;
        system += r.system;
        checksum = checksum.wrapping_add(r.checksum);
    }
    Ok(Report {
        path: opts.path.clone(),
        op: opts.op,
        instances: opts.instances,
        depth: opts.depth,
        block_bytes: opts.block,
        region_bytes: prepared.region,
        touch: opts.touch,
        config: opts.config,
        placement: prepared.placement,
        seconds,
        bytes,
        requests,
        throughput_bytes_per_s: bytes as f64 / seconds,
        iops: requests as f64 / seconds,
        latency: Latency {
            mean_us: latency.mean(),
            p50_us: latency.value_at_quantile(0.5),
            p90_us: latency.value_at_quantile(0.9),
            p99_us: latency.value_at_quantile(0.99),
            p999_us: latency.value_at_quantile(0.999),
            max_us: latency.max(),
        },
        cpio: Cpio::new(bytes, user, system, iowait),
        stress_bytes_per_s,
        checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_map_to_nodes_as_table_ii() {
        let nodes = [0, 1];
        assert_eq!(Config::Trlcpl.nodes(1, &nodes), (1, 1));
        assert_eq!(Config::Trlcpr.nodes(1, &nodes), (0, 1));
        assert_eq!(Config::Trrcpl.nodes(1, &nodes), (0, 0));
        assert_eq!(Config::Trrcpr.nodes(1, &nodes), (1, 0));
        // One node: everything is local.
        assert_eq!(Config::Trrcpr.nodes(0, &[0]), (0, 0));
        assert_eq!(Config::parse("trrcpl"), Some(Config::Trrcpl));
        assert_eq!(Config::parse("TRX"), None);
    }

    #[test]
    fn touch_sums_words_and_stores_lines() {
        let mut data = vec![0u8; 128];
        data[0] = 1;
        data[8] = 2;
        assert_eq!(touch(&mut data, Touch::Sum), 3);
        touch(&mut data, Touch::Store);
        assert_eq!((data[0], data[64]), (0, 1));
    }
}

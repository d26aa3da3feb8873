//! A short real run of the benchmark on a file on the target's (disk-backed) file system.

use hetsched_akram::iobench::{run, Op, Options, Touch};
use std::time::Duration;

#[test]
fn a_short_run_on_a_real_file_moves_data_and_counts_cpio() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![1u8; 1 << 20]).unwrap();
    let machine = hetsched_topology::load("live", Default::default()).unwrap();
    let opts = Options {
        path,
        depth: 4,
        block: 64 << 10,
        duration: Duration::from_millis(300),
        touch: Touch::Sum,
        stress: true,
        ..Options::default()
    };
    let r = run(&opts, &machine, |_| {}).unwrap();
    assert!(r.bytes >= 64 << 10 && r.requests == r.bytes / (64 << 10));
    assert_eq!(r.region_bytes, 1 << 20);
    // All bytes are 1: the sum over 8-byte words is 0x0101010101010101 per word.
    let per_request = 0x0101_0101_0101_0101u64.wrapping_mul((64 << 10) / 8);
    assert_eq!(r.checksum, per_request.wrapping_mul(r.requests));
    assert!(r.cpio.sectors == r.bytes / 512 && r.cpio.total >= r.cpio.system);
    assert!(r.latency.p50_us >= 1 && r.latency.max_us >= r.latency.p99_us);
    assert!(r.stress_bytes_per_s.is_some_and(|b| b > 0.0));
}

/// A FIFO is refused at once (its open and reads would wait for a writer), and a write
/// never goes through a link (one planted where root benchmarks would choose the file
/// overwritten).
#[test]
fn a_fifo_is_refused_and_a_write_never_follows_a_link() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let machine = hetsched_topology::load("live", Default::default()).unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let start = std::time::Instant::now();
    let opts = Options {
        path: fifo,
        duration: Duration::from_millis(100),
        ..Options::default()
    };
    let e = run(&opts, &machine, |_| {}).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("is neither a file nor a block device"),
        "{e}"
    );

    let target = dir.path().join("precious");
    std::fs::write(&target, b"keep me").unwrap();
    let link = dir.path().join("data");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let opts = Options {
        path: link,
        op: Op::Write,
        size: Some(1 << 20),
        duration: Duration::from_millis(100),
        ..Options::default()
    };
    let e = run(&opts, &machine, |_| {}).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("is a symbolic link"), "{e}");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
}

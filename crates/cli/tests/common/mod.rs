//! Helpers shared by the CLI's integration tests.

#[allow(dead_code)] // only the tests of the daemon use it
pub mod daemon;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A generous bound for anything to happen on a loaded 2-core machine (not a measure).
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Polls `cond` every 10 ms until it holds; fails the test naming `what` after
/// [`PATIENCE`].
#[allow(dead_code)] // only the live tests wait
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the real `hetsched` binary with `args` and waits for it.
#[allow(dead_code)] // not every test file runs it this way
pub fn hetsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
        .args(args)
        .output()
        .unwrap()
}

/// Asserts a bad-input failure: exit 2, one line on stderr naming each of `needles`,
/// nothing on stdout, no panic.
#[allow(dead_code)] // not every test file checks errors
pub fn assert_input_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in {stderr:?}");
    }
    assert!(out.stdout.is_empty());
}

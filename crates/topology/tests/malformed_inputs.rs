//! Inputs that crash or hang libhwloc 2.9 (issue #38): each must come back as a one-line
//! input error (exit code 2) in bounded time, with this process alive.

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::Error;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// The input error of `result`, checked to be one line naming `path`.
fn input_error(result: hetsched_core::Result<Machine>, path: &Path) -> String {
    match result {
        Err(e @ Error::Input(_)) => {
            let msg = e.to_string();
            assert_eq!(e.exit_code(), 2);
            assert!(!msg.contains('\n'), "{msg}");
            assert!(msg.starts_with(&path.display().to_string()), "{msg}");
            msg
        }
        Err(e) => panic!("{}: expected an input error, got {e:?}", path.display()),
        Ok(_) => panic!("{}: loaded", path.display()),
    }
}

/// Runs `f` on a thread and fails if it takes longer than `limit` (a hang would leave
/// the thread blocked, and the test would fail rather than wait forever).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}"))
}

#[test]
fn a_fifo_given_as_a_machine_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["fifo.xml", "fifo.toml", "fifo.tar.bz2"] {
        let path = dir.path().join(name);
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let spec = path.to_str().unwrap().to_string();
        let result = within(Duration::from_secs(10), move || {
            hetsched_topology::load(&spec, UnitGranularity::Pu)
        });
        let msg = input_error(result, &path);
        assert!(
            msg.ends_with("a FIFO, not a regular file: a machine file must be one"),
            "{msg}"
        );
    }
}

#[test]
fn a_file_over_the_cap_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["big.xml", "big.toml"] {
        let path = dir.path().join(name);
        // Sparse: no 64 MiB written.
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(hetsched_topology::MAX_FILE_BYTES + 1).unwrap();
        let msg = input_error(
            hetsched_topology::load(path.to_str().unwrap(), UnitGranularity::Pu),
            &path,
        );
        assert!(
            msg.ends_with("larger than the 64 MiB hetsched reads from a machine file"),
            "{msg}"
        );
    }
}

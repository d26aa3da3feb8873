//! The error type every hetsched crate returns to the CLI.
//!
//! Two kinds matter to a user: bad input (a file, field or argument that is wrong;
//! exit code 2, like a usage error) and a failure while doing valid work (exit 1). A
//! third says the user stopped the work (Ctrl-C): exit 130, as a shell reports a
//! process SIGINT ended, though this one ended cleanly.

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message names the file / line / field and what was expected.
    #[error("{0}")]
    Input(String),
    /// Valid input, but the work failed (I/O, a library, the OS).
    #[error("{0}")]
    Runtime(String),
    /// The user stopped the work (SIGINT); the message says where it stopped.
    #[error("{0}")]
    Interrupted(String),
}

impl Error {
    pub fn input(msg: impl fmt::Display) -> Self {
        Error::Input(msg.to_string())
    }
    pub fn runtime(msg: impl fmt::Display) -> Self {
        Error::Runtime(msg.to_string())
    }
    /// Bad input: `what` (file and field) is `got`, outside `[lo, hi]` (also NaN).
    pub fn range(what: impl fmt::Display, got: f64, lo: f64, hi: f64) -> Self {
        Error::Input(format!(
            "{what}: expected a number in [{}, {}], got {}",
            num(lo),
            num(hi),
            num(got)
        ))
    }
    /// The same kind of error (so the same exit code), its message changed by `f` (a
    /// prefix naming the subject, a note).
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            Error::Input(m) => Error::Input(f(m)),
            Error::Runtime(m) => Error::Runtime(f(m)),
            Error::Interrupted(m) => Error::Interrupted(f(m)),
        }
    }
    /// The process exit code the CLI uses for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) => 2,
            Error::Runtime(_) => 1,
            Error::Interrupted(_) => 130,
        }
    }
}

/// `v` if it is in `[lo, hi]` (so finite, not NaN), else [`Error::range`].
pub fn in_range(what: impl fmt::Display, v: f64, lo: f64, hi: f64) -> Result<f64> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(Error::range(what, v, lo, hi))
    }
}

/// A number for a message: plain, but `1e300` rather than 301 digits.
pub fn num(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// "PATH: error": an error of work on a file, named by the file (what a user needs to
/// find it), as the runtime error (`at`) or bad input (`input_at`) it is.
pub trait PathContext<T> {
    /// A failure while doing valid work on `path` (exit 1).
    fn at(self, path: &std::path::Path) -> Result<T>;
    /// `path` is bad input (exit 2).
    fn input_at(self, path: &std::path::Path) -> Result<T>;
}

impl<T, E: fmt::Display> PathContext<T> for std::result::Result<T, E> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::Runtime(format!("{}: {e}", path.display())))
    }
    fn input_at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::Input(format!("{}: {e}", path.display())))
    }
}

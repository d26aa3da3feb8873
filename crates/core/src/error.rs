//! The error type every hetsched crate returns to the CLI.
//!
//! Two kinds matter to a user: bad input (a file, field or argument that is wrong;
//! exit code 2, like a usage error) and a failure while doing valid work (exit 1).

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message names the file / line / field and what was expected.
    #[error("{0}")]
    Input(String),
    /// Valid input, but the work failed (I/O, a library, the OS).
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    pub fn input(msg: impl fmt::Display) -> Self {
        Error::Input(msg.to_string())
    }
    pub fn runtime(msg: impl fmt::Display) -> Self {
        Error::Runtime(msg.to_string())
    }
    /// The process exit code the CLI uses for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) => 2,
            Error::Runtime(_) => 1,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

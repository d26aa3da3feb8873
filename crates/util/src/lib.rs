//! hetsched-util: what every hetsched subsystem needs and none owns: the error type
//! every crate returns to the CLI, files read and written safely (`files`), PNG images
//! of plots written the same way (`png`, behind the feature of that name), this host's
//! load, thread CPU time and pinning (`host`), and percentiles (`stats`).

pub mod error;
pub mod files;
pub mod host;
#[cfg(feature = "png")]
pub mod png;
pub mod stats;

pub use error::{Error, Result};

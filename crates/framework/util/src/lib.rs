//! hetsched-util: what every hetsched subsystem needs and none owns: the error type
//! every crate returns to the CLI, files read and written safely (`files`), plots and
//! their PNG images written the same way (`plot`, `png`, behind the feature `plot`), this host's
//! load, thread CPU time and pinning (`host`), and percentiles (`stats`).

pub mod error;
pub mod files;
pub mod host;
#[cfg(feature = "plot")]
pub mod plot;
#[cfg(feature = "plot")]
pub mod png;
pub mod stats;

pub use error::{Error, PathContext, Result};

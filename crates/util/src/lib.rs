//! hetsched-util: what every hetsched subsystem needs and none owns: the error type
//! every crate returns to the CLI, files read and written safely (`files`), and PNG
//! images of plots written the same way (`png`, behind the feature of that name).

pub mod error;
pub mod files;
#[cfg(feature = "png")]
pub mod png;

pub use error::{Error, Result};

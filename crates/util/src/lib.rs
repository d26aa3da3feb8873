//! hetsched-util: what every hetsched subsystem needs and none owns: the error type
//! every crate returns to the CLI, and files read and written safely (`files`).

pub mod error;
pub mod files;

pub use error::{Error, Result};

//! hetsched-core: the concepts every other crate shares.

pub mod error;

pub use error::{Error, Result};

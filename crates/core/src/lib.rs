//! hetsched-core: the concepts every other crate shares.

pub mod error;
pub mod machine;

pub use error::{Error, Result};

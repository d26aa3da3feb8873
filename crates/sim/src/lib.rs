//! hetsched's discrete-event simulator: the engine, the speed model, scenario files,
//! reports and traces.

pub mod engine;
pub mod speed;

pub use engine::{run, Config, RunSummary};

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::Result;

/// A machine from the text of a TOML machine file, with PU units.
pub fn machine_from_toml(text: &str, origin: &str) -> Result<Machine> {
    let mut m = hetsched_topology::machine_file::parse(text, origin)?;
    m.derive_units(UnitGranularity::Pu);
    Ok(m)
}

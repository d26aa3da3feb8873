//! `hetsched bench ...`: benchmark programs (never timed tests).

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Bench {
    /// Simulated memory accesses per second of the tiled-NUCA simulator.
    Nuca(crate::nuca_cmd::NucaBenchArgs),
}

pub fn run(which: Bench) -> Result<()> {
    match which {
        Bench::Nuca(a) => crate::nuca_cmd::bench(a),
    }
}

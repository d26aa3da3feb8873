//! `hetsched bench ...`: benchmark programs (never timed tests).

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Bench {
    /// O² delegation: round-trip p50/p99 and throughput.
    O2(crate::o2_cmd::BenchO2Args),
}

pub fn run(which: Bench) -> Result<()> {
    match which {
        Bench::O2(a) => crate::o2_cmd::bench_o2(a),
    }
}

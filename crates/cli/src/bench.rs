//! `hetsched bench ...`: benchmark programs (never timed tests).

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Bench {}

pub fn run(which: Bench) -> Result<()> {
    match which {}
}

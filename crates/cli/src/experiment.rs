//! `hetsched experiment ...`: one command per reproduced experiment.

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Experiment {}

pub fn run(which: Experiment) -> Result<()> {
    match which {}
}

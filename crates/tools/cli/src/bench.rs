//! `hetsched bench KEY`: one command per entry of the benchmark registry
//! (`hetsched_bench::BENCHMARKS`); the benchmarks themselves (programs, never timed
//! tests) are in `hetsched-bench`.

use crate::registry::{Chosen, Entries};
use clap::Command;
use hetsched_bench::BENCHMARKS;
use hetsched_core::Result;

pub struct Benchmarks;

impl Entries for Benchmarks {
    fn commands() -> Vec<Command> {
        BENCHMARKS
            .iter()
            // The about after the options: their struct's doc comment would be it otherwise.
            .map(|b| {
                (b.args)(Command::new(b.key))
                    .about(b.about)
                    .long_about(None)
            })
            .collect()
    }
}

/// The benchmark named on the command line, with its parsed options.
pub type Bench = Chosen<Benchmarks>;

pub fn run(which: Bench) -> Result<()> {
    let b = BENCHMARKS
        .iter()
        .find(|b| b.key == which.key)
        .expect("clap accepts only the registry's keys");
    (b.run)(&which.matches)
}

//! `hetsched bench KEY`: one command per entry of the benchmark registry
//! (`hetsched_bench::BENCHMARKS`), built from the entries at start; the benchmarks
//! themselves (programs, never timed tests) are in `hetsched-bench`.

use clap::{ArgMatches, Command, FromArgMatches, Subcommand};
use hetsched_bench::BENCHMARKS;
use hetsched_core::Result;

/// The benchmark named on the command line, with its parsed options.
pub struct Bench {
    key: String,
    matches: ArgMatches,
}

impl FromArgMatches for Bench {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        match m.subcommand() {
            Some((key, sub)) => Ok(Bench {
                key: key.to_string(),
                matches: sub.clone(),
            }),
            None => Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
        }
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for Bench {
    fn augment_subcommands(cmd: Command) -> Command {
        BENCHMARKS.iter().fold(cmd, |cmd, b| {
            // After the options: their struct's doc comment would be the about otherwise.
            cmd.subcommand(
                (b.args)(Command::new(b.key))
                    .about(b.about)
                    .long_about(None),
            )
        })
    }
    fn augment_subcommands_for_update(cmd: Command) -> Command {
        Self::augment_subcommands(cmd)
    }
    fn has_subcommand(name: &str) -> bool {
        BENCHMARKS.iter().any(|b| b.key == name)
    }
}

pub fn run(which: Bench) -> Result<()> {
    let b = BENCHMARKS
        .iter()
        .find(|b| b.key == which.key)
        .expect("clap accepts only the registry's keys");
    (b.run)(&which.matches)
}

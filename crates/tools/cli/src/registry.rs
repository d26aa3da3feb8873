//! A subcommand chosen from a registry (`hetsched experiment KEY`, `hetsched bench KEY`):
//! the commands are built at start from the registry's entries, so a new entry needs no
//! line here; clap parses the chosen one's options and [`Chosen`] carries them to the
//! entry's run.

use clap::{ArgMatches, Command, FromArgMatches, Subcommand};
use std::marker::PhantomData;

/// A registry's commands.
pub trait Entries {
    /// One command per entry: its name, about line and options.
    fn commands() -> Vec<Command>;
}

/// The entry named on the command line (its key) with its parsed options.
pub struct Chosen<E> {
    pub key: String,
    pub matches: ArgMatches,
    entries: PhantomData<E>,
}

impl<E> FromArgMatches for Chosen<E> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        match m.subcommand() {
            Some((key, sub)) => Ok(Chosen {
                key: key.to_string(),
                matches: sub.clone(),
                entries: PhantomData,
            }),
            None => Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
        }
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<E: Entries> Subcommand for Chosen<E> {
    fn augment_subcommands(cmd: Command) -> Command {
        cmd.subcommands(E::commands())
    }
    fn augment_subcommands_for_update(cmd: Command) -> Command {
        Self::augment_subcommands(cmd)
    }
    fn has_subcommand(name: &str) -> bool {
        E::commands().iter().any(|c| c.get_name() == name)
    }
}

//! `hetsched experiment KEY`: one command per entry of the experiment registry
//! (`hetsched_report::experiments()`), built from the entries at start: each brings its
//! options, this module adds `--out`, parses, runs it and prints what it returns.

use clap::{Arg, ArgMatches, Command, FromArgMatches, Subcommand};
use hetsched_core::Result;
use hetsched_report::experiments;
use hetsched_util::files::OutDir;
use std::path::{Path, PathBuf};

/// The experiment named on the command line, with its parsed options.
pub struct Experiment {
    key: String,
    matches: ArgMatches,
}

impl FromArgMatches for Experiment {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        match m.subcommand() {
            Some((key, sub)) => Ok(Experiment {
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

impl Subcommand for Experiment {
    fn augment_subcommands(cmd: Command) -> Command {
        experiments().fold(cmd, |cmd, e| {
            let out = Arg::new("out")
                .long("out")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help(format!(
                    "Output directory: {} [default: hetsched-out/{}]",
                    e.outputs, e.key
                ));
            // After the options: their struct's doc comment would be the about otherwise.
            let about = (e.args)(Command::new(e.key))
                .about(e.about)
                .long_about(None);
            cmd.subcommand(about.arg(out))
        })
    }
    fn augment_subcommands_for_update(cmd: Command) -> Command {
        Self::augment_subcommands(cmd)
    }
    fn has_subcommand(name: &str) -> bool {
        experiments().any(|e| e.key == name)
    }
}

pub fn run(which: Experiment) -> Result<()> {
    let e = experiments()
        .find(|e| e.key == which.key)
        .expect("clap accepts only the registry's keys");
    let dir = which
        .matches
        .get_one::<PathBuf>("out")
        .cloned()
        .unwrap_or_else(|| Path::new("hetsched-out").join(e.key));
    // The folders this command makes (the output folder and any missing parent).
    let made: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    let out = OutDir::create(&dir)?;
    let ran = (e.run)(&which.matches, &out, &mut std::io::stdout());
    if ran.is_err() {
        // Those the experiment left empty (bad input, found before it wrote anything) go
        // again; remove_dir removes only an empty folder, so the first that is not stops.
        let _ = made.iter().try_for_each(std::fs::remove_dir);
    }
    ran?;
    eprintln!("outputs in {}: {}", out.path().display(), e.outputs);
    Ok(())
}

//! `hetsched experiment KEY`: one command per entry of the experiment registry
//! (`hetsched_reproduce::experiments()`), built from the entries at start: each brings its
//! options, this module adds `--out` and makes the folder, and the experiment writes
//! its files there and what it prints to stdout.

use crate::registry::{Chosen, Entries};
use clap::{Arg, Command};
use hetsched_core::Result;
use hetsched_reproduce::experiments;
use hetsched_util::files::OutDir;
use std::path::{Path, PathBuf};

pub struct Experiments;

impl Entries for Experiments {
    fn commands() -> Vec<Command> {
        experiments()
            .map(|e| {
                let out = Arg::new("out")
                    .long("out")
                    .value_name("DIR")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!(
                        "Output directory: {} [default: hetsched-out/{}]",
                        e.outputs, e.key
                    ));
                // The about after the options: their struct's doc comment would be it
                // otherwise.
                (e.args)(Command::new(e.key))
                    .about(e.about)
                    .long_about(None)
                    .arg(out)
            })
            .collect()
    }
}

/// The experiment named on the command line, with its parsed options.
pub type Experiment = Chosen<Experiments>;

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

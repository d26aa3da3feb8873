//! The experiment registry's entries: a paper's study, its runnable experiments and its
//! section of `hetsched reproduce`.
//!
//! Why here: every study crate depends on this crate already (its reproduction returns a
//! [`Reproduction`]), and the registry that lists the studies (`hetsched-reproduce`) depends
//! on the study crates; the entry types must sit below both. A study owns its whole
//! experiment: its options (a clap `Args` type), the run, every file it writes and the
//! text it prints. The CLI builds `hetsched experiment KEY` from the entries and runs one
//! generic loop, so adding an experiment is its file in the study crate plus a line in
//! the study's [`Study::experiments`], and adding a study is its crate plus a line in the
//! report's list.

use crate::Reproduction;
use hetsched_util::files::OutDir;
use hetsched_util::{Error, Result};

/// One runnable experiment: `hetsched experiment KEY [OPTIONS] [--out DIR]`.
#[derive(Clone, Copy)]
pub struct Experiment {
    /// Its command name, and its default output folder `hetsched-out/KEY`.
    pub key: &'static str,
    /// One line for `hetsched experiment --help`.
    pub about: &'static str,
    /// The files it writes into its output folder, for `--out`'s help and the line the
    /// command ends with.
    pub outputs: &'static str,
    /// Adds its options to its command: `<Options as clap::Args>::augment_args`.
    pub args: fn(clap::Command) -> clap::Command,
    /// Runs it with the parsed options, writing its files into the folder and what the
    /// command prints into the writer (stdout), as it goes: a sweep's rows appear as
    /// they are measured, and stay if the run fails after them.
    pub run: fn(&clap::ArgMatches, &OutDir, &mut dyn std::io::Write) -> Result<()>,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("key", &self.key)
            .finish()
    }
}

/// One paper's study: its experiments and, if it has one, its section of the report.
#[derive(Debug)]
pub struct Study {
    /// The report section's key (`hetsched reproduce --only KEY`, its folder there).
    pub key: &'static str,
    /// Its runnable experiments, in `hetsched experiment --help`'s order.
    pub experiments: &'static [Experiment],
    /// Its reproduction: claims judged against the paper (`quick`: the claim tests'
    /// scale), figures written into the folder. `None`: a study with experiments only.
    pub reproduce: Option<fn(&OutDir, bool) -> Result<Reproduction>>,
}

/// Writes `text` to an experiment's output (stdout), flushed.
pub fn say(w: &mut dyn std::io::Write, text: impl AsRef<str>) -> Result<()> {
    w.write_all(text.as_ref().as_bytes())
        .and_then(|()| w.flush())
        .map_err(|e| Error::runtime(format!("stdout: {e}")))
}

/// An experiment's options from its parsed arguments: what its `run` starts with.
pub fn options<A: clap::FromArgMatches>(matches: &clap::ArgMatches) -> Result<A> {
    A::from_arg_matches(matches).map_err(|e| Error::input(e.to_string().trim_end()))
}

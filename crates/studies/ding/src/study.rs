//! Ding et al.'s study in the experiment registry: `hetsched experiment ding` and the
//! report's `ding` section.

use crate::experiment;
use hetsched_core::{Error, Result};
use hetsched_study::{options, say, Experiment, Study};
use hetsched_util::files::OutDir;

pub const STUDY: Study = Study {
    key: "ding",
    experiments: &[Experiment {
        key: "ding",
        about: "Ding et al.: PARSEC-like programs alone and in mixes on the simulated ding \
                machine, numa-amp and cfs-cap against cfs",
        outputs: "table.txt, ding.json, speedup.png",
        args: <Options as clap::Args>::augment_args,
        run: |m, out, w| say(w, run(options(m)?, out)?),
    }],
    reproduce: Some(crate::reproduce::reproduce),
};

#[derive(clap::Args)]
struct Options {
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    json: bool,
}

fn run(o: Options, out: &OutDir) -> Result<String> {
    let report = experiment::evaluate()?;
    report.write(out)?;
    if o.json {
        serde_json::to_string_pretty(&report)
            .map(|j| j + "\n")
            .map_err(|e| Error::runtime(format!("ding report: {e}")))
    } else {
        Ok(report.table())
    }
}

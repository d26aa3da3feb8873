//! Akram et al.'s study in the experiment registry: `hetsched experiment akram` and the
//! report's `akram` section.

use crate::experiment;
use hetsched_core::{Error, Result};
use hetsched_study::{options, say, Experiment, Study};
use hetsched_util::files::OutDir;

pub const STUDY: Study = Study {
    key: "akram",
    experiments: &[Experiment {
        key: "akram",
        about: "Akram et al.: zmIO-like I/O in the four NUMA configurations on the paper's \
                server (simulator I/O model), and io-affinity vs cfs",
        outputs: "table.txt, akram.json, throughput-*.png, cpio-*-buffered.png",
        args: <Options as clap::Args>::augment_args,
        run: |m, out, w| say(w, run(options(m)?, out)?),
    }],
    reproduce: Some(crate::reproduce::reproduce),
};

#[derive(clap::Args)]
struct Options {
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

fn run(o: Options, out: &OutDir) -> Result<String> {
    let results = experiment::run()?;
    let json = serde_json::to_string_pretty(&results).map_err(Error::runtime)?;
    let table = experiment::table(&results);
    out.write("akram.json", &json)?;
    out.write("table.txt", &table)?;
    experiment::plots(&results, out)?;
    Ok(if o.json { json + "\n" } else { table })
}

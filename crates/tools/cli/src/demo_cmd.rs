//! `hetsched demo`: the policy comparison on Beisel et al.'s testbed (logic in
//! crates/studies/beisel); this module parses and prints.

use clap::Args;
use hetsched_beisel::experiments;
use hetsched_core::Result;
use hetsched_util::files::OutDir;
use std::path::PathBuf;

#[derive(Args)]
pub struct DemoArgs {
    /// Output directory.
    #[arg(long, default_value = "hetsched-out")]
    pub out: PathBuf,
}

pub fn demo(args: DemoArgs) -> Result<()> {
    let out = OutDir::create(&args.out)?;
    let table = experiments::demo(&out)?;
    print!("{table}");
    eprintln!(
        "outputs in {0}: table.txt, tasks-<policy>.csv, turnaround-cdf.png, trace.json (open in ui.perfetto.dev)",
        out.path().display()
    );
    Ok(())
}

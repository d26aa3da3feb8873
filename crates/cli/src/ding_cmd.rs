//! `hetsched experiment ding`: Ding et al.'s evaluation on the simulator (logic in
//! crates/ding); prints the table, or the report as JSON with `--json`.

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use std::path::PathBuf;

#[derive(Args)]
pub struct DingArgs {
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Output directory for table.txt, ding.json and speedup.png (default:
    /// ./hetsched-out/ding).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: DingArgs) -> Result<()> {
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("hetsched-out").join("ding"));
    let out = OutDir::create(&out)?;
    let report = hetsched_ding::experiment::evaluate()?;
    report.write(&out)?;
    if args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::runtime(format!("ding report: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", report.table());
    }
    eprintln!("outputs in {}", out.path().display());
    Ok(())
}

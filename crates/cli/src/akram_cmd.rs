//! `hetsched experiment akram`: Akram et al.'s server in the simulator's I/O model and
//! `io-affinity` against `cfs` and `eevdf` (logic in crates/akram); this module parses and
//! prints.

use clap::Args;
use hetsched_akram::experiment;
use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use std::path::PathBuf;

#[derive(Args)]
pub struct AkramArgs {
    /// Output directory for the table, JSON and PNG charts (default: ./hetsched-out/akram).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(args: AkramArgs) -> Result<()> {
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("hetsched-out").join("akram"));
    let out = OutDir::create(&out)?;
    let results = experiment::run()?;
    let json = serde_json::to_string_pretty(&results).map_err(Error::runtime)?;
    let table = experiment::table(&results);
    out.write("akram.json", &json)?;
    out.write("table.txt", &table)?;
    experiment::plots(&results, &out)?;
    if args.json {
        println!("{json}");
    } else {
        print!("{table}");
    }
    eprintln!(
        "outputs in {}: table.txt, akram.json, throughput-*.png, cpio-*-buffered.png",
        out.path().display()
    );
    Ok(())
}

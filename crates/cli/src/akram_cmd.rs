//! `hetsched experiment akram`: Akram et al.'s server in the simulator's I/O model and
//! `io-affinity` against `cfs` (logic in crates/akram); this module parses and prints.

use clap::Args;
use hetsched_akram::experiment;
use hetsched_core::{Error, Result};
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
    let results = experiment::run()?;
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("hetsched-out").join("akram"));
    let io = |e: std::io::Error| Error::runtime(format!("{}: {e}", out.display()));
    std::fs::create_dir_all(&out).map_err(io)?;
    let json = serde_json::to_string_pretty(&results).map_err(Error::runtime)?;
    let table = experiment::table(&results);
    std::fs::write(out.join("akram.json"), &json).map_err(io)?;
    std::fs::write(out.join("table.txt"), &table).map_err(io)?;
    experiment::plots(&results, &out)?;
    if args.json {
        println!("{json}");
    } else {
        print!("{table}");
    }
    eprintln!(
        "outputs in {}: table.txt, akram.json, throughput-*.png, cpio-*-buffered.png",
        out.display()
    );
    Ok(())
}

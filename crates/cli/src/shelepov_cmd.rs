//! `hetsched experiment shelepov`: Shelepov & Fedorova's §4 on the simulator (logic in
//! crates/shelepov); this module only parses and prints.

use clap::Args;
use hetsched_core::Result;
use hetsched_shelepov::{experiments, plot};
use hetsched_util::files::OutDir;
use std::path::PathBuf;

#[derive(Args)]
pub struct ShelepovArgs {
    /// Print the outcomes as JSON (aggregates and per-program changes) instead of tables.
    #[arg(long)]
    json: bool,
    /// Output directory for the table and the bar chart (default: ./hetsched-out/shelepov).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Start orders (seeds) per configuration and policy.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
}

pub fn run(args: ShelepovArgs) -> Result<()> {
    let opts = experiments::Options {
        seeds: args.seeds,
        ..experiments::Options::default()
    };
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("hetsched-out").join("shelepov"));
    let out = OutDir::create(&out)?;
    let outcomes = experiments::run_all(&opts)?;
    let table = experiments::table(&outcomes);
    out.write("shelepov.txt", &table)?;
    plot::bars(&out, "shelepov.png", &outcomes)?;
    if args.json {
        let json = serde_json::json!({ "options": opts, "experiments": outcomes });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).expect("outcomes serialise")
        );
    } else {
        print!("{table}");
    }
    eprintln!("outputs in {}", out.path().display());
    Ok(())
}

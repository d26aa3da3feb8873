//! `hetsched reproduce`: every paper's reproduction in one report (logic in
//! crates/studies/reproduce); this module parses and prints.

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_util::files::OutDir;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReproduceArgs {
    /// Output directory: index.html, report.md, claims.json and one folder per paper.
    #[arg(long, default_value = "hetsched-out/reproduce")]
    out: PathBuf,
    /// Fewer seeds and scaled-down runs: the claim tests' scale (docs/reproduce.md).
    #[arg(long)]
    quick: bool,
    /// Only this paper's experiment (its key, e.g. beisel).
    #[arg(long)]
    only: Option<String>,
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    let experiments = hetsched_reproduce::select(args.only.as_deref())?;
    let out = OutDir::create(&args.out)?;
    let report = hetsched_reproduce::run(&out, args.quick, &experiments, true)?;
    for s in &report.sections {
        match &s.result {
            Ok(_) => println!("{:<10} {:>7.1} s  {}", s.paper, s.seconds, s.counts()),
            Err(e) => println!("{:<10} {:>7.1} s  FAILED: {e}", s.paper, s.seconds),
        }
    }
    println!("{} in {:.1} s", report.counts(), report.seconds);
    eprintln!("report: {}", args.out.join("index.html").display());
    let failed = report.failed();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "reproduce: {} failed (see the report)",
            failed.join(", ")
        )))
    }
}

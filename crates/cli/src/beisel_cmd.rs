//! `hetsched experiment beisel-*` and `hetsched demo`: Beisel et al.'s figures and the
//! policy comparison on the paper's testbed (logic in crates/beisel).

use clap::builder::TypedValueParser as _;
use clap::Args;
use hetsched_beisel::experiments;
use hetsched_beisel::live::{LiveOptions, LIVE_MD5, LIVE_POLICIES, LIVE_PRIME};
use hetsched_core::Result;
use hetsched_util::files::OutDir;
use std::path::PathBuf;

/// Options shared by the Beisel experiments.
#[derive(Args)]
pub struct OutArgs {
    /// Output directory (default: ./hetsched-out/<experiment>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl OutArgs {
    /// The output directory, created (and checked) before the experiment runs.
    fn dir(&self, name: &str) -> Result<OutDir> {
        let path = self
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("hetsched-out").join(name));
        OutDir::create(&path)
    }
}

/// The output directory and the number of seeds of an experiment the paper averages.
#[derive(Args)]
pub struct SeedArgs {
    #[command(flatten)]
    pub out: OutArgs,
    /// Runs (seeds) per point, 1..=10000; the paper averages 30.
    #[arg(long, default_value_t = experiments::PAPER_RUNS,
          value_parser = clap::value_parser!(u16).range(1..=10000).map(usize::from))]
    pub seeds: usize,
}

fn done(table: &str, out: &OutDir) {
    print!("{table}");
    eprintln!("outputs in {}", out.path().display());
}

pub fn fig3(args: OutArgs) -> Result<()> {
    let out = args.dir("beisel-fig3")?;
    let r = experiments::fig3(&out, 1.0)?;
    done(&r.table, &out);
    Ok(())
}

pub fn fig4(args: SeedArgs) -> Result<()> {
    let out = args.out.dir("beisel-fig4")?;
    let seeds = experiments::seeds(experiments::FIG4_FIRST_SEED, args.seeds);
    let r = experiments::fig4(&out, 25, 50, &seeds, 1.0)?;
    done(&r.table, &out);
    Ok(())
}

pub fn fig5(args: OutArgs) -> Result<()> {
    let out = args.dir("beisel-fig5")?;
    let counts: Vec<usize> = (1..=15).map(|i| i * 5).collect();
    let r = experiments::fig5(&out, &counts, experiments::FIG5_GPU_RATIOS, 1.0)?;
    done(&r.table, &out);
    Ok(())
}

pub fn fig6_7(args: SeedArgs) -> Result<()> {
    let out = args.out.dir("beisel-fig6-7")?;
    let seeds = experiments::seeds(experiments::FIG67_FIRST_SEED, args.seeds);
    let r = experiments::fig6_7(&out, 25, 50, experiments::GRANULARITIES_MS, &seeds, 1.0)?;
    done(&r.table, &out);
    Ok(())
}

pub fn demo(args: OutArgs) -> Result<()> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("hetsched-out"));
    let out = OutDir::create(&out)?;
    let table = experiments::demo(&out)?;
    print!("{table}");
    eprintln!(
        "outputs in {0}: table.txt, tasks-<policy>.csv, turnaround-cdf.png, trace.json (open in ui.perfetto.dev)",
        out.path().display()
    );
    Ok(())
}

#[derive(Args)]
pub struct LiveArgs {
    /// Output directory.
    #[arg(long, default_value = "hetsched-out/beisel-live")]
    out: PathBuf,
    /// Policies to compare (default: FCFS and time-sharing with the paper's 4 s
    /// accelerator granularity scaled to this run's length).
    #[arg(long = "policy", default_values_t = LIVE_POLICIES.map(String::from))]
    policies: Vec<String>,
    /// Words of the MD5 searches: each is searched over a..z of its length.
    #[arg(long, value_delimiter = ',', default_values_t = LIVE_MD5.map(String::from))]
    md5: Vec<String>,
    /// Numbers to factorise (semiprimes: trial division runs to the smaller factor).
    #[arg(long, value_delimiter = ',', default_values_t = LIVE_PRIME)]
    prime: Vec<u64>,
}

pub fn live(args: LiveArgs) -> Result<()> {
    let options = LiveOptions {
        apps: std::env::current_exe().map_err(hetsched_core::Error::runtime)?,
        policies: args.policies,
        md5: args.md5,
        prime: args.prime,
    };
    eprintln!(
        "beisel-live: {} apps under each of {} ...",
        options.md5.len() + options.prime.len(),
        options.policies.join(", ")
    );
    let out = OutDir::create(&args.out)?;
    let table = hetsched_beisel::live::live(&out, &options)?;
    done(&table, &out);
    Ok(())
}

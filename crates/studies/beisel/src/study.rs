//! Beisel et al.'s study in the experiment registry: Figs. 3–7 in the simulator, the live
//! run on this machine, and the report's `beisel` section.

use crate::experiments;
use crate::live::{LiveOptions, LIVE_MD5, LIVE_POLICIES, LIVE_PRIME};
use clap::builder::TypedValueParser as _;
use hetsched_core::Result;
use hetsched_study::{options, say, Experiment, Study};
use hetsched_util::files::OutDir;

pub const STUDY: Study = Study {
    key: "beisel",
    experiments: &[
        Experiment {
            key: "beisel-live",
            about: "Beisel et al. live: md5 / prime processes on this machine's PUs and OpenCL \
                    devices under the daemon, FCFS vs time-sharing",
            outputs: "table.txt, apps.csv, trace.json",
            args: <Live as clap::Args>::augment_args,
            run: |m, out, w| say(w, live(options(m)?, out)?),
        },
        Experiment {
            key: "beisel-fig3",
            about: "Beisel et al. Fig. 3: 15 MD5 tasks, GPU queue limit 5, progress over time",
            outputs: "table.txt, tasks.csv, progress.csv, progress.png",
            args: |c| c,
            run: |_, out, w| say(w, experiments::fig3(out, 1.0)?.table),
        },
        Experiment {
            key: "beisel-fig4",
            about: "Beisel et al. Fig. 4: 25 MD5 + 50 prime tasks, FCFS vs 4 s granularity",
            outputs: "table.txt, turnaround.csv, turnaround.png",
            args: <Seeds as clap::Args>::augment_args,
            run: |m, out, w| {
                let s: Seeds = options(m)?;
                let seeds = experiments::seeds(experiments::FIG4_FIRST_SEED, s.seeds);
                let (md5, prime) = (experiments::MIX_MD5_TASKS, experiments::MIX_PRIME_TASKS);
                say(w, experiments::fig4(out, md5, prime, &seeds, 1.0)?.table)
            },
        },
        Experiment {
            key: "beisel-fig5",
            about: "Beisel et al. Fig. 5: N prime tasks on the GPU alone vs GPU + CPU cores",
            outputs: "table.txt, runtimes.csv, runtimes.png, gpu-speed-sweep.png",
            args: |c| c,
            run: |_, out, w| {
                let counts = experiments::FIG5_COUNTS;
                say(
                    w,
                    experiments::fig5(out, &counts, experiments::FIG5_GPU_RATIOS, 1.0)?.table,
                )
            },
        },
        Experiment {
            key: "beisel-fig6-7",
            about: "Beisel et al. Figs. 6-7: granularity sweep on the GPU (total runtime, \
                    turnaround)",
            outputs: "table.txt, granularity.csv, fig6-total-runtime.png, fig7-mean-turnaround.png",
            args: <Seeds as clap::Args>::augment_args,
            run: |m, out, w| {
                let s: Seeds = options(m)?;
                let seeds = experiments::seeds(experiments::FIG67_FIRST_SEED, s.seeds);
                let g = experiments::GRANULARITIES_MS;
                let (md5, prime) = (experiments::MIX_MD5_TASKS, experiments::MIX_PRIME_TASKS);
                say(
                    w,
                    experiments::fig6_7(out, md5, prime, g, &seeds, 1.0)?.table,
                )
            },
        },
    ],
    reproduce: Some(crate::reproduce::reproduce),
};

/// The number of seeds of an experiment the paper averages.
#[derive(clap::Args)]
struct Seeds {
    /// Runs (seeds) per point, 1..=10000; the paper averages 30.
    #[arg(long, default_value_t = experiments::RUNS,
          value_parser = clap::value_parser!(u16).range(1..=10000).map(usize::from))]
    seeds: usize,
}

#[derive(clap::Args)]
struct Live {
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

fn live(a: Live, out: &OutDir) -> Result<String> {
    let options = LiveOptions {
        // The apps run as `hetsched app ...`: this very program.
        apps: std::env::current_exe().map_err(hetsched_core::Error::runtime)?,
        policies: a.policies,
        md5: a.md5,
        prime: a.prime,
    };
    eprintln!(
        "beisel-live: {} apps under each of {} ...",
        options.md5.len() + options.prime.len(),
        options.policies.join(", ")
    );
    crate::live::live(out, &options)
}

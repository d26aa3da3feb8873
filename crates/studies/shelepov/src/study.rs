//! Shelepov & Fedorova's study in the experiment registry: `hetsched experiment shelepov`
//! (§4), `hetsched experiment shelepov-accuracy` (§3.3: the signatures' elasticities
//! against cachegrind's), `hetsched experiment signature-validate` (the toolchain's
//! miss-rate model against cachegrind) and the report's `shelepov` section.

use crate::experiments;
use hetsched_core::Result;
use hetsched_study::{options, say, Experiment, Study};
use hetsched_util::files::OutDir;

pub const STUDY: Study = Study {
    key: "shelepov",
    experiments: &[
        Experiment {
            key: "shelepov",
            about: "Shelepov & Fedorova §4: signature vs default scheduler (heterogeneous, \
                    balanced, uniform, and the 1.5/1.0-3 GHz projection), paper beside ours, \
                    bar chart",
            outputs: "shelepov.txt, shelepov.png",
            args: <Options as clap::Args>::augment_args,
            run: |m, out, w| say(w, run(options(m)?, out)?),
        },
        Experiment {
            key: "shelepov-accuracy",
            about: "Shelepov & Fedorova §3.3: elasticities estimated from signatures against \
                    those from cachegrind's misses, on programs that run here (needs valgrind)",
            outputs: "shelepov-accuracy.txt",
            args: <AccuracyOptions as clap::Args>::augment_args,
            run: |m, out, w| {
                let o: AccuracyOptions = options(m)?;
                let acc = crate::reproduce::accuracy_into(out, o.quick)?;
                say(w, crate::accuracy::table(&acc))
            },
        },
        hetsched_sig::validate::EXPERIMENT,
    ],
    reproduce: Some(crate::reproduce::reproduce),
};

#[derive(clap::Args)]
struct AccuracyOptions {
    /// The quick set (8 kernels, four programs on small inputs) instead of all.
    #[arg(long)]
    quick: bool,
}

#[derive(clap::Args)]
struct Options {
    /// Print the outcomes as JSON (aggregates and per-program changes) instead of tables.
    #[arg(long)]
    json: bool,
    /// Start orders (seeds) per configuration and policy.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
}

fn run(o: Options, out: &OutDir) -> Result<String> {
    let opts = experiments::Options {
        seeds: o.seeds,
        ..experiments::Options::default()
    };
    let (outcomes, table) = crate::reproduce::run_into(out, &opts)?;
    Ok(if o.json {
        let json = serde_json::json!({ "options": opts, "experiments": outcomes });
        serde_json::to_string_pretty(&json).expect("outcomes serialise") + "\n"
    } else {
        table
    })
}

//! `hetsched bench reuse`: the reuse-distance analysis (exact, sampled) and trace parsing.

use clap::Args;
use hetsched_core::Result;

use crate::{options, Benchmark};

pub(crate) const BENCHMARK: Benchmark = Benchmark {
    key: "reuse",
    about: "Reuse-distance analysis (exact, sampled) and trace parsing throughput",
    args: <Options as clap::Args>::augment_args,
    run: |m| reuse(options(m)?),
};

#[derive(Args)]
struct Options {
    /// Block accesses in the synthetic trace.
    #[arg(long, default_value_t = 40_000_000)]
    accesses: usize,
    /// SHARDS sampling rate for the sampled analysis.
    #[arg(long, default_value_t = 0.01)]
    rate: f64,
    /// Size of the synthetic lackey text, MB.
    #[arg(long, default_value_t = 200)]
    lackey_mb: usize,
    /// Seed of the synthetic traces.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timed runs of each analysis; the best rate is printed.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

fn reuse(a: Options) -> Result<()> {
    use hetsched_sig::bench::*;
    use hetsched_sig::Mode;
    let blocks = synthetic_blocks(a.accesses, a.seed);
    let (exact, exact_rate) = best_analysis(&blocks, Mode::Exact, a.repeat);
    let (sampled, sampled_rate) = best_analysis(&blocks, Mode::Sampled(a.rate), a.repeat);
    println!(
        "trace: {} block accesses in memory, working set {} blocks",
        blocks.len(),
        exact.working_set_blocks
    );
    println!(
        "rates per CPU-second of this thread, best of {} runs (analysis: first access to \
         finished profile; parsing: whole text)",
        a.repeat.max(1)
    );
    println!(
        "exact analysis         {:>10.1} M accesses/s   (goal >= 20)",
        exact_rate / 1e6
    );
    println!(
        "sampled R={:<6}       {:>10.1} M accesses/s   (goal >= 200)",
        a.rate,
        sampled_rate / 1e6
    );
    println!(
        "sampled vs exact: max bucket-fraction error {:.4} (goal <= 0.01), working set {} vs {}",
        max_fraction_error(&exact, &sampled),
        sampled.working_set_blocks,
        exact.working_set_blocks
    );
    let text = synthetic_lackey(a.lackey_mb << 20, a.seed);
    let (mbs, events) = time_lackey(&text)?;
    println!("lackey text parsing    {mbs:>10.1} MB/s   (goal >= 100; {events} events)");
    let (bmbs, blen, _) = time_binary(&text)?;
    println!(
        "binary trace parsing   {bmbs:>10.1} MB/s   ({:.1}x smaller than the text)",
        text.len() as f64 / blen as f64
    );
    Ok(())
}

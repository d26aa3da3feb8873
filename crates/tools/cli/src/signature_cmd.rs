//! `hetsched signature ...`: architectural signatures (Shelepov & Fedorova).

use clap::{Args, Subcommand};
use hetsched_core::Result;
use hetsched_sig::analysis::{Analyzer, Mode, Profile};
use hetsched_sig::elasticity::{arc_elasticity, fit_file, ElasticityModel};
use hetsched_sig::elfnote;
use hetsched_sig::elfnote::embed_signature;
use hetsched_sig::missrate::CacheConfig;
use hetsched_sig::signature::Signature;
use hetsched_sig::source::wrapper::unwrap_shell;
use hetsched_sig::source::{convert, profile, replay_file, SourceArg};
use hetsched_util::files::OutFile;
use std::io::Write;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum SignatureCmd {
    /// Trace PROG as it runs (QEMU with hetsched's plugin where available, else
    /// valgrind lackey), analyse the trace as it streams, print the signature.
    Profile(ProfileArgs),
    /// Analyse a saved trace (lackey text or the binary format) and print the signature.
    Analyze(AnalyzeArgs),
    /// Convert a saved lackey trace into the compact binary format.
    Convert {
        /// Lackey trace (text).
        input: PathBuf,
        /// Output binary trace (.hstrace).
        output: PathBuf,
    },
    /// Arc elasticity of completion time T with respect to clock frequency F.
    Elasticity {
        /// Completion time at F1.
        #[arg(long)]
        t1: f64,
        /// First frequency.
        #[arg(long)]
        f1: f64,
        /// Completion time at F2.
        #[arg(long)]
        t2: f64,
        /// Second frequency.
        #[arg(long)]
        f2: f64,
    },
    /// Fit elasticity = a + b · miss rate from a CSV of measured pairs
    /// (header: cache,miss_rate,elasticity; `cache` optional).
    Fit {
        /// The CSV file.
        csv: PathBuf,
        /// Write the fitted model (JSON) here, for `--model`.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the default elasticity model (JSON).
    DefaultModel,
    /// Write a signature (JSON file) into an ELF binary's `.note.hetsched` section.
    Embed {
        /// The ELF binary (modified in place).
        bin: PathBuf,
        /// The signature JSON.
        sig: PathBuf,
    },
    /// Print the signature embedded in an ELF binary.
    Show {
        /// The ELF binary.
        bin: PathBuf,
        /// Print the summary table instead of the JSON.
        #[arg(long)]
        table: bool,
    },
}

/// Options shared by everything that produces a signature.
#[derive(Args)]
pub struct OutputArgs {
    /// SHARDS sampling rate R in (0, 1]; exact analysis when absent.
    #[arg(long)]
    sample: Option<f64>,
    /// Elasticity model JSON (from `signature fit`); the documented default otherwise.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Write the signature JSON here.
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Print the signature JSON instead of the summary table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ProfileArgs {
    /// Also save the trace in the binary format (lackey source only).
    #[arg(long)]
    save: Option<PathBuf>,
    /// Trace source.
    #[arg(long, value_enum, default_value_t = SourceArg::Auto)]
    source: SourceArg,
    /// Discard the program's standard output and show no progress.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    output: OutputArgs,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

#[derive(Args)]
pub struct AnalyzeArgs {
    /// The trace file.
    trace: PathBuf,
    /// Program name to record in the signature (default: the trace's file name).
    #[arg(long)]
    program: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

/// What `emit` needs, taken before the (long) trace: the model read and the output
/// file started, so a bad `--model` or `--out` fails at once.
struct Emit {
    model: ElasticityModel,
    out: Option<OutFile>,
}

impl Emit {
    fn start(o: &OutputArgs) -> Result<Emit> {
        Ok(Emit {
            model: ElasticityModel::load(o.model.as_deref())?,
            out: o.out.as_deref().map(OutFile::create).transpose()?,
        })
    }
}

fn emit(program: &str, profile: &Profile, o: &OutputArgs, e: Emit) -> Result<()> {
    let sig = Signature::build(program, profile, &CacheConfig::standard(), &e.model);
    let json = sig.to_json();
    if let Some(mut f) = e.out {
        writeln!(f, "{json}").map_err(|e| f.error(e))?;
        f.finish()?;
    }
    if o.json {
        println!("{json}");
    } else {
        print!("{}", sig.summary());
    }
    Ok(())
}

/// A spinner on stderr (drawn only on a terminal, and not with `--quiet`): accesses
/// seen and time elapsed.
pub struct Progress(indicatif::ProgressBar);

impl Progress {
    pub fn start(quiet: bool) -> Self {
        if quiet {
            return Progress(indicatif::ProgressBar::hidden());
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} tracing: {msg}, {elapsed}")
                .expect("a valid template"),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        bar.set_message("starting");
        Progress(bar)
    }

    pub fn update(&self, accesses: u64) {
        self.0
            .set_message(format!("{:.1} M accesses", accesses as f64 / 1e6));
    }

    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

pub fn run(cmd: SignatureCmd) -> Result<()> {
    match cmd {
        SignatureCmd::Profile(a) => {
            let mut analyzer = Analyzer::new(Mode::from_rate(a.output.sample)?);
            let command = match unwrap_shell(&a.command)? {
                Some(argv) => {
                    eprintln!(
                        "hetsched: `{}` runs one simple command: profiling `{}` directly",
                        a.command.join(" "),
                        argv.join(" ")
                    );
                    argv
                }
                None => a.command.clone(),
            };
            let (prog, args) = command.split_first().expect("clap requires a command");
            let source = a.source.resolve(a.save.is_some())?;
            let output = Emit::start(&a.output)?;
            let save = a.save.as_deref().map(OutFile::create).transpose()?;
            let progress = Progress::start(a.quiet);
            let run = profile(source, prog, args, a.quiet, save, &mut analyzer, &mut |n| {
                progress.update(n)
            })?;
            if !run.status.success() {
                eprintln!("hetsched: note: {prog} exited with {}", run.status);
            }
            progress.finish();
            eprintln!("hetsched: read {}", run.transport);
            emit(&command.join(" "), &analyzer.finish(), &a.output, output)
        }
        SignatureCmd::Analyze(a) => {
            let mut analyzer = Analyzer::new(Mode::from_rate(a.output.sample)?);
            let output = Emit::start(&a.output)?;
            replay_file(&a.trace, &mut analyzer)?;
            let program = a.program.clone().unwrap_or_else(|| {
                a.trace
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            emit(&program, &analyzer.finish(), &a.output, output)
        }
        SignatureCmd::Convert { input, output } => {
            let (stats, out_len) = convert(&input, &output)?;
            println!(
                "{} lines, {} bytes -> {} bytes ({:.1}x smaller)",
                stats.lines,
                stats.bytes,
                out_len,
                stats.bytes as f64 / out_len.max(1) as f64
            );
            Ok(())
        }
        SignatureCmd::Elasticity { t1, f1, t2, f2 } => {
            let e = arc_elasticity(t1, f1, t2, f2)?;
            let class = hetsched_sig::elasticity::Thresholds::default().classify(e);
            println!(
                "elasticity {e:.4} ({})",
                format!("{class:?}").to_lowercase()
            );
            Ok(())
        }
        SignatureCmd::Fit { csv, out } => {
            let out = out.as_deref().map(OutFile::create).transpose()?;
            let (model, fits) = fit_file(&csv)?;
            println!(
                "{:<10} {:>6} {:>11} {:>12} {:>8} {:>8}",
                "cache", "points", "intercept", "slope", "R^2", "MAE"
            );
            for (c, f) in &fits {
                println!(
                    "{:<10} {:>6} {:>11.4} {:>12.4} {:>8.3} {:>8.4}",
                    c, f.points, f.model.intercept, f.model.slope, f.r_squared, f.mean_abs_error
                );
            }
            if let Some(mut f) = out {
                let json = serde_json::to_string_pretty(&model).expect("model serialises");
                f.write_all(json.as_bytes()).map_err(|e| f.error(e))?;
                f.finish()?;
            }
            Ok(())
        }
        SignatureCmd::DefaultModel => {
            let m = ElasticityModel::default();
            println!(
                "{}",
                serde_json::to_string_pretty(&m).expect("model serialises")
            );
            Ok(())
        }
        SignatureCmd::Embed { bin, sig } => {
            let bytes = embed_signature(&bin, &sig)?;
            println!(
                "embedded {} bytes into {} ({})",
                bytes,
                bin.display(),
                elfnote::SECTION
            );
            Ok(())
        }
        SignatureCmd::Show { bin, table } => {
            let text = elfnote::signature_text(&bin)?;
            if table {
                print!(
                    "{}",
                    Signature::from_json(&text, &bin.display().to_string())?.summary()
                );
            } else {
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
            Ok(())
        }
    }
}

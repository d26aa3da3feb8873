//! Validation of the miss-rate model against valgrind's cachegrind
//! (`hetsched experiment signature-validate`).
//!
//! For synthetic C kernels (sequential scans and uniformly random reads over working
//! sets of 64 KB … 64 MB) and real programs from Debian packages, the estimated
//! last-level misses per instruction (from our lackey-driven reuse profile) are put
//! beside cachegrind's simulated LL data misses per instruction
//! (`--cache-sim=yes --LL=SIZE,WAYS,64`), with Spearman rank correlations.

use crate::analysis::{Analyzer, Mode, Profile};
use crate::missrate::{miss_rate, CacheConfig};
use crate::source::{trace_live, Live};
use hetsched_core::{Error, PathContext, Result};
use hetsched_util::files::OutDir;
use hetsched_util::files::OutFile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The synthetic kernel: `kernel MODE BYTES ACCESSES` touches every 64-byte line of a
/// BYTES array once (cold), then makes ACCESSES 8-byte reads, either sequentially
/// through the lines (`s`) or at uniformly random lines (`r`, a 64-bit LCG).
pub const KERNEL_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc != 4) return 2;
    char mode = argv[1][0];
    uint64_t bytes = strtoull(argv[2], 0, 10), n = strtoull(argv[3], 0, 10);
    uint64_t lines = bytes / 64;
    uint64_t *a = malloc(bytes);
    if (!a || lines == 0) return 3;
    for (uint64_t i = 0; i < lines; i++) a[i * 8] = i;
    uint64_t sum = 0, x = 88172645463325252ull, l = 0;
    for (uint64_t k = 0; k < n; k++) {
        if (mode == 's') { l = l + 1 == lines ? 0 : l + 1; }
        else { x = x * 6364136223846793005ull + 1442695040888963407ull; l = (x >> 24) % lines; }
        sum += a[l * 8];
    }
    return sum == 42;
}
"#;

/// One program to validate on.
#[derive(Clone, Debug)]
pub struct Case {
    /// Short name for the table.
    pub name: String,
    /// "synthetic" or "real".
    pub group: &'static str,
    /// Program and arguments.
    pub argv: Vec<String>,
}

/// One validated case.
#[derive(Clone, Debug)]
pub struct Row {
    /// The case.
    pub case: Case,
    /// Our profile.
    pub profile: Profile,
    /// (estimated, cachegrind) LL data misses per instruction for each configuration.
    pub rates: Vec<(f64, f64)>,
}

/// Cachegrind's summary counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CachegrindSummary {
    /// Instructions.
    pub ir: u64,
    /// LL data read misses.
    pub dlmr: u64,
    /// LL data write misses.
    pub dlmw: u64,
    /// LL instruction-fetch misses.
    pub ilmr: u64,
}

/// Parse the `events:` and `summary:` lines of a cachegrind output file.
pub fn parse_cachegrind(text: &str, name: &str) -> Result<CachegrindSummary> {
    let field = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| v.split_whitespace().collect::<Vec<_>>())
            .ok_or_else(|| Error::input(format!("{name}: no `{prefix}` line")))
    };
    let events = field("events:")?;
    let summary = field("summary:")?;
    let get = |ev: &str| -> Result<u64> {
        let i = events.iter().position(|e| *e == ev).ok_or_else(|| {
            Error::input(format!(
                "{name}: event {ev} missing (was --cache-sim=yes given?)"
            ))
        })?;
        summary
            .get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::input(format!("{name}: bad summary value for {ev}")))
    };
    Ok(CachegrindSummary {
        ir: get("Ir")?,
        dlmr: get("DLmr")?,
        dlmw: get("DLmw")?,
        ilmr: get("ILmr")?,
    })
}

/// Run cachegrind with the given LL cache on `argv`.
pub fn cachegrind(argv: &[String], config: CacheConfig, out: &Path) -> Result<CachegrindSummary> {
    let status = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=yes",
            &format!("--LL={},{},64", config.size_bytes, config.ways),
            &format!("--cachegrind-out-file={}", out.display()),
            "--log-file=/dev/null",
        ])
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Error::runtime(format!("cannot run valgrind: {e}")))?;
    if !status.success() {
        return Err(Error::runtime(format!(
            "cachegrind on {argv:?} exited with {status}"
        )));
    }
    let text = std::fs::read_to_string(out).at(out)?;
    parse_cachegrind(&text, &out.display().to_string())
}

/// Spearman rank correlation (average ranks for ties); `None` for fewer than 3 pairs or
/// a constant series.
pub fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 3 {
        return None;
    }
    let rank = |v: Vec<f64>| -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            let avg = (i + j) as f64 / 2.0 + 1.0;
            for &k in &idx[i..=j] {
                r[k] = avg;
            }
            i = j + 1;
        }
        r
    };
    let a = rank(pairs.iter().map(|p| p.0).collect());
    let b = rank(pairs.iter().map(|p| p.1).collect());
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(&b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// Build the synthetic kernel with gcc into `dir`; returns its path. `dir` must be a
/// private directory (a fresh temporary one): gcc writes its output by path and would
/// follow a link planted there.
pub fn build_kernel(dir: &Path) -> Result<PathBuf> {
    let src = dir.join("kernel.c");
    let bin = dir.join("kernel");
    std::fs::write(&src, KERNEL_C).at(&src)?;
    let out = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| Error::runtime(format!("cannot run gcc: {e}")))?;
    if !out.status.success() {
        return Err(Error::runtime(format!(
            "gcc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(bin)
}

/// The synthetic cases: scans and random reads over 64 KB … 64 MB, `accesses` reads each.
pub fn synthetic_cases(kernel: &Path, accesses: u64) -> Vec<Case> {
    let mut v = Vec::new();
    for mode in ["s", "r"] {
        for k in 0..=10 {
            let bytes = (64u64 << 10) << k;
            let label = if bytes >= 1 << 20 {
                format!("{}MB", bytes >> 20)
            } else {
                format!("{}KB", bytes >> 10)
            };
            v.push(Case {
                name: format!("{}-{label}", if mode == "s" { "scan" } else { "random" }),
                group: "synthetic",
                argv: vec![
                    kernel.display().to_string(),
                    mode.into(),
                    bytes.to_string(),
                    accesses.to_string(),
                ],
            });
        }
    }
    v
}

/// Writes [`text`] as the file `name` of `dir`; returns its path.
pub fn write_text(dir: &OutDir, name: &str, lines: usize, seed: u64) -> Result<PathBuf> {
    dir.write(name, text(lines, seed))
}

/// Deterministic text input for the real programs (`lines` lines of pseudo-words).
pub fn text(lines: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let words = [
        "cache",
        "miss",
        "reuse",
        "distance",
        "signature",
        "elasticity",
        "scheduler",
        "core",
        "frequency",
        "memory",
        "bucket",
        "binomial",
        "working",
        "set",
        "trace",
        "lackey",
    ];
    let mut s = String::new();
    for _ in 0..lines {
        let n = rng.random_range(3..12);
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(words[rng.random_range(0..words.len())]);
            if rng.random_bool(0.3) {
                s.push_str(&rng.random_range(0..100_000u32).to_string());
            }
        }
        s.push('\n');
    }
    s
}

/// Real programs from Debian packages on inputs the experiment writes into `dir`.
pub fn real_cases(dir: &OutDir, text_lines: usize) -> Result<Vec<Case>> {
    let text = write_text(dir, "input.txt", text_lines, 7)?;
    let small = write_text(dir, "input-small.txt", text_lines / 4, 8)?;
    let py = dir.write(
        "script.py",
        "d = {}\nfor i in range(200000):\n    d[(i * 7919) % 100003] = str(i)\nprint(len(d), sum(len(v) for v in d.values()))\n",
    )?;
    let t = text.display().to_string();
    let s = small.display().to_string();
    let python = ["python3"]
        .iter()
        .find(|p| {
            Command::new(p)
                .arg("-c")
                .arg("pass")
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(|p| p.to_string());
    let mut v = vec![
        Case {
            name: "gzip -9".into(),
            group: "real",
            argv: vec!["gzip".into(), "-9".into(), "-c".into(), t.clone()],
        },
        Case {
            name: "xz -6".into(),
            group: "real",
            argv: vec!["xz".into(), "-6".into(), "-c".into(), s.clone()],
        },
        Case {
            name: "sort".into(),
            group: "real",
            argv: vec!["sort".into(), t.clone()],
        },
        Case {
            name: "bzip2".into(),
            group: "real",
            argv: vec!["bzip2".into(), "-c".into(), t.clone()],
        },
    ];
    if let Some(p) = python {
        // Resolve the interpreter itself: valgrind cannot trace a pyenv shell shim.
        let exe = Command::new(&p)
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|e| !e.is_empty())
            .unwrap_or(p);
        v.push(Case {
            name: "python dict".into(),
            group: "real",
            argv: vec![exe, "-S".into(), py.display().to_string()],
        });
    }
    Ok(v)
}

/// Profile one case with lackey and compare against cachegrind for each configuration;
/// cachegrind's output files go to `dir`, a private directory (valgrind writes them by
/// path, following a link planted there).
pub fn run_case(case: &Case, configs: &[CacheConfig], dir: &Path) -> Result<Row> {
    run_case_with(case, configs, dir, Live::Lackey)
}

/// [`run_case`] with the profile traced by `source`.
pub fn run_case_with(
    case: &Case,
    configs: &[CacheConfig],
    dir: &Path,
    source: Live,
) -> Result<Row> {
    let mut a = Analyzer::new(Mode::Exact);
    let (prog, args) = case.argv.split_first().expect("non-empty argv");
    let run = trace_live(source, prog, args, true, &mut a, &mut |_| {})?;
    if !run.status.success() && case.group == "real" {
        return Err(Error::runtime(format!(
            "{} exited with {}",
            case.name, run.status
        )));
    }
    let profile = a.finish();
    let mut rates = Vec::new();
    for &c in configs {
        let out = dir.join(format!("cachegrind.{}.out", std::process::id()));
        let cg = cachegrind(&case.argv, c, &out)?;
        let _ = std::fs::remove_file(&out);
        let measured = (cg.dlmr + cg.dlmw) as f64 / cg.ir.max(1) as f64;
        rates.push((miss_rate(&profile, c), measured));
    }
    Ok(Row {
        case: case.clone(),
        profile,
        rates,
    })
}

/// The markdown table and correlation lines for a set of rows.
pub fn report(rows: &[Row], configs: &[CacheConfig]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = write!(s, "| program | group | instructions | W (MB) |");
    for c in configs {
        let _ = write!(s, " est. {c} | cachegrind {c} |");
    }
    let _ = writeln!(s);
    let _ = write!(s, "|---|---|---:|---:|");
    for _ in configs {
        let _ = write!(s, "---:|---:|");
    }
    let _ = writeln!(s);
    for r in rows {
        let _ = write!(
            s,
            "| {} | {} | {} | {:.2} |",
            r.case.name,
            r.case.group,
            r.profile.instructions,
            r.profile.working_set_blocks as f64 * 64.0 / (1 << 20) as f64
        );
        for (e, m) in &r.rates {
            let _ = write!(s, " {e:.3e} | {m:.3e} |");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s);
    for group in ["synthetic", "real"] {
        for (i, c) in configs.iter().enumerate() {
            let pairs: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.case.group == group)
                .map(|r| r.rates[i])
                .collect();
            let rho = spearman(&pairs)
                .map(|r| format!("{r:.3}"))
                .unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                s,
                "- Spearman ρ, {group} ({} programs), {c}: **{rho}**",
                pairs.len()
            );
        }
    }
    s
}

/// CSV of the rows.
pub fn csv(rows: &[Row], configs: &[CacheConfig]) -> String {
    let mut s = String::from("program,group,instructions,accesses,working_set_blocks");
    for c in configs {
        s.push_str(&format!(",est_{c},cachegrind_{c}"));
    }
    s.push('\n');
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{}",
            r.case.name,
            r.case.group,
            r.profile.instructions,
            r.profile.accesses,
            r.profile.working_set_blocks
        ));
        for (e, m) in &r.rates {
            s.push_str(&format!(",{e},{m}"));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_basics() {
        let up: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, (i * i) as f64)).collect();
        assert!((spearman(&up).unwrap() - 1.0).abs() < 1e-12);
        let down: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, -(i as f64))).collect();
        assert!((spearman(&down).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(spearman(&[(1.0, 1.0), (2.0, 2.0)]), None);
        // Ties get average ranks: x ranks (1.5, 1.5, 3), y ranks (1, 2, 3) -> 0.866.
        let r = spearman(&[(0.0, 1.0), (0.0, 2.0), (1.0, 3.0)]).unwrap();
        assert!((r - 0.866_025_403_784).abs() < 1e-9, "{r}");
    }

    #[test]
    fn parses_cachegrind_output() {
        let text = "desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: ./k\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nfl=x\n1 2 3\nsummary: 1000 5 4 300 20 10 100 7 3\n";
        let s = parse_cachegrind(text, "cg").unwrap();
        assert_eq!(
            s,
            CachegrindSummary {
                ir: 1000,
                dlmr: 10,
                dlmw: 3,
                ilmr: 4
            }
        );
        assert!(parse_cachegrind("events: Ir\nsummary: 5\n", "cg").is_err());
    }
}

/// `hetsched experiment signature-validate`, an experiment of Shelepov & Fedorova's study.
pub const EXPERIMENT: hetsched_study::Experiment = hetsched_study::Experiment {
    key: "signature-validate",
    about: "Validate the signature miss-rate model against cachegrind; writes the docs table",
    outputs: "validation.csv, validation.md (the kernel, the inputs and cachegrind's files \
              are made in a private temporary directory)",
    args: <Options as clap::Args>::augment_args,
    run: |m, out, w| hetsched_study::say(w, run(hetsched_study::options(m)?, out)?),
};

#[derive(clap::Args)]
struct Options {
    /// Also write the generated docs page here.
    #[arg(long)]
    docs: Option<PathBuf>,
    /// Reads per synthetic kernel run.
    #[arg(long, default_value_t = 2_000_000)]
    accesses: u64,
    /// Lines of the text input of gzip/bzip2/sort (xz gets a quarter).
    #[arg(long, default_value_t = 40_000)]
    text_lines: usize,
    /// Cache configurations to compare (comma separated).
    #[arg(long, default_value = "1MB/8,4MB/16", value_delimiter = ',')]
    configs: Vec<String>,
    /// Skip the real programs.
    #[arg(long)]
    synthetic_only: bool,
    /// Trace source of the profiles.
    #[arg(long, value_enum, default_value_t = crate::source::SourceArg::Lackey)]
    source: crate::source::SourceArg,
}

fn run(a: Options, out: &OutDir) -> Result<String> {
    let configs = a
        .configs
        .iter()
        .map(|c| {
            CacheConfig::parse(c).ok_or_else(|| {
                Error::input(format!("--configs: `{c}` is not SIZE/WAYS like 4MB/16"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let docs = a.docs.as_deref().map(OutFile::create).transpose()?;
    let source = a.source.resolve(false)?;
    // gcc and valgrind write their files by path, following links: only into a
    // directory no one else can write.
    let work = tempfile::Builder::new()
        .prefix("hetsched-validate-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("cannot make a temporary directory: {e}")))?;
    let kernel = build_kernel(work.path())?;
    let mut cases = synthetic_cases(&kernel, a.accesses);
    if !a.synthetic_only {
        cases.extend(real_cases(&OutDir::create(work.path())?, a.text_lines)?);
    }
    let mut rows = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let t = std::time::Instant::now();
        let row = run_case_with(c, &configs, work.path(), source)?;
        eprintln!(
            "[{}/{}] {:<14} {:>12} instr  est/cachegrind {}  ({:.0} s)",
            i + 1,
            cases.len(),
            c.name,
            row.profile.instructions,
            row.rates
                .iter()
                .map(|(e, m)| format!("{e:.2e}/{m:.2e}"))
                .collect::<Vec<_>>()
                .join("  "),
            t.elapsed().as_secs_f64()
        );
        rows.push(row);
    }
    let table = report(&rows, &configs);
    out.write("validation.csv", csv(&rows, &configs))?;
    out.write("validation.md", &table)?;
    if let (Some(mut f), Some(d)) = (docs, &a.docs) {
        let cmd = format!(
            "hetsched experiment signature-validate --accesses {} --text-lines {} --configs {}{}{} --docs {}",
            a.accesses,
            a.text_lines,
            a.configs.join(","),
            if a.synthetic_only { " --synthetic-only" } else { "" },
            match source {
                Live::Qemu => " --source qemu",
                Live::Lackey => "",
            },
            d.display()
        );
        write!(f, "{}{cmd}`\n\n{table}", VALIDATION_HEADER).map_err(|e| f.error(e))?;
        f.finish()?;
    }
    Ok(format!("{table}\n"))
}

const VALIDATION_HEADER: &str = "# Signature miss-rate model vs cachegrind (generated)

This page is written by the command at the end of this paragraph; see
[signatures.md](signatures.md) for the model and a discussion of the numbers. `est.` is
the paper's estimate (equations 1–6) from our exact reuse profile (traced with valgrind
lackey, or with QEMU and hetsched's plugin when the command says `--source qemu`), in last-level
misses per instruction; `cachegrind` is valgrind's cachegrind with `--cache-sim=yes
--LL=SIZE,WAYS,64`, LL *data* misses (DLmr + DLmw) per instruction (Ir). Synthetic
kernels: `scan-X` reads every line of an X-byte array in order, `random-X` reads random
lines of it (after one initialising pass). Generated by `";

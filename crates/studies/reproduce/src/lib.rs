//! `hetsched reproduce`: every paper's reproduction in one report.
//!
//! Why a crate of its own: it is the one place that knows *all* the experiments (the
//! list [`STUDIES`]); each study crate knows only its own paper and returns a
//! [`Reproduction`] (claims judged once, figures beside the paper's numbers, its
//! assumptions). This crate runs them one after the other, keeps going when one fails
//! (a failed experiment is a section that says so, and the run counts as failed), and
//! writes `index.html` (static, no script), `report.md` and `claims.json` beside the
//! experiments' PNGs. It never judges a claim itself, so the report and the experiment
//! crates' claim tests cannot disagree.

pub mod full_run;
mod html;
mod markdown;

use hetsched_core::{Error, Result};
use hetsched_study::{Experiment, Reproduction, Study, Verdict};
use hetsched_util::files::OutDir;
use serde::Serialize;
use std::time::Instant;

/// Every study, in report order; `hetsched experiment` lists their experiments in
/// this order too. To add a study: its crate's `study.rs` and one line here. A study
/// without a reproduction (`reproduce: None`: experiments that reproduce no paper)
/// has its experiments listed and no section in the report.
pub const STUDIES: &[&Study] = &[
    &hetsched_beisel::study::STUDY,
    &hetsched_shelepov::study::STUDY,
    &hetsched_ding::study::STUDY,
    &hetsched_akram::study::STUDY,
    &hetsched_nuca::study::STUDY,
    &hetsched_o2::study::STUDY,
    &hetsched_graphs::study::STUDY,
];

/// Every study's experiments: what `hetsched experiment KEY` runs.
pub fn experiments() -> impl Iterator<Item = &'static Experiment> {
    STUDIES.iter().flat_map(|s| s.experiments)
}

/// The studies with a reproduction: the report's sections.
fn reproducible() -> impl Iterator<Item = &'static Study> {
    STUDIES.iter().copied().filter(|s| s.reproduce.is_some())
}

/// One experiment's part of the report.
#[derive(Debug, Serialize)]
pub struct Section {
    pub paper: &'static str,
    /// Wall time of its `reproduce`, s.
    pub seconds: f64,
    /// Its reproduction, or why it failed (an error or a panic).
    pub result: std::result::Result<Reproduction, String>,
    /// In a quick report: how its verdicts compare with the stored full run's (`None`
    /// in a full report, or where the stored run has no such paper).
    pub full_scale: Option<full_run::FullScale>,
}

impl Section {
    /// What a quick report says at the top of this section; `None` in a full report.
    pub fn quick_label(&self, report: &Report) -> Option<String> {
        report
            .quick
            .then(|| full_run::quick_label(self.full_scale.as_ref()))
    }
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub seconds: f64,
    pub sections: Vec<Section>,
}

/// Verdict counts: holds, partly, does not hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub holds: usize,
    pub partly: usize,
    pub does_not_hold: usize,
}

impl Counts {
    fn of<'a>(verdicts: impl Iterator<Item = &'a Verdict>) -> Counts {
        let mut c = Counts::default();
        for v in verdicts {
            match v {
                Verdict::Holds => c.holds += 1,
                Verdict::Partly => c.partly += 1,
                Verdict::DoesNotHold => c.does_not_hold += 1,
            }
        }
        c
    }
    pub fn total(&self) -> usize {
        self.holds + self.partly + self.does_not_hold
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} claim{}: {} hold, {} partly, {} do not hold",
            self.total(),
            if self.total() == 1 { "" } else { "s" },
            self.holds,
            self.partly,
            self.does_not_hold
        )
    }
}

impl Section {
    pub fn counts(&self) -> Counts {
        match &self.result {
            Ok(r) => Counts::of(r.claims.iter().map(|c| &c.verdict)),
            Err(_) => Counts::default(),
        }
    }
}

impl Report {
    pub fn counts(&self) -> Counts {
        Counts::of(
            self.sections
                .iter()
                .filter_map(|s| s.result.as_ref().ok())
                .flat_map(|r| r.claims.iter().map(|c| &c.verdict)),
        )
    }
    /// The experiments that failed.
    pub fn failed(&self) -> Vec<&'static str> {
        self.sections
            .iter()
            .filter(|s| s.result.is_err())
            .map(|s| s.paper)
            .collect()
    }
}

/// The studies `only` selects (all with a reproduction when `None`); an unknown key is
/// bad input that names the accepted ones.
pub fn select(only: Option<&str>) -> Result<Vec<&'static Study>> {
    match only {
        None => Ok(reproducible().collect()),
        Some(key) => reproducible()
            .find(|s| s.key == key)
            .map(|s| vec![s])
            .ok_or_else(|| {
                let keys: Vec<&str> = reproducible().map(|s| s.key).collect();
                Error::input(format!(
                    "--only: unknown paper '{key}', expected one of {}",
                    keys.join(", ")
                ))
            }),
    }
}

/// Runs the studies' reproductions (each into `out/<key>/`) with a progress bar on stderr when
/// `progress`, and writes `index.html`, `report.md` and `claims.json` into `out`.
/// A failing or panicking experiment becomes a failed section; the others still run.
pub fn run(out: &OutDir, quick: bool, studies: &[&Study], progress: bool) -> Result<Report> {
    let start = Instant::now();
    let bar = if progress {
        indicatif::ProgressBar::new(studies.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(500));
    let mut sections = Vec::new();
    // Only a quick run compares with the stored full run; a full run must not need it,
    // since it is what refreshes it.
    let full = quick.then(full_run::FullRun::stored);
    for s in studies {
        bar.set_message(s.key);
        let t = Instant::now();
        let result = std::panic::catch_unwind(|| {
            let dir = out.subdir(s.key).map_err(|e| e.to_string())?;
            let reproduce = s.reproduce.ok_or("no reproduction")?;
            reproduce(&dir, quick).map_err(|e| e.to_string())
        })
        .unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panicked: {msg}"))
        });
        let full_scale = match (&result, quick) {
            (Ok(r), true) => full.as_ref().and_then(|f| f.compare(s.key, &r.claims)),
            _ => None,
        };
        sections.push(Section {
            paper: s.key,
            seconds: t.elapsed().as_secs_f64(),
            result,
            full_scale,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let report = Report {
        quick,
        seconds: start.elapsed().as_secs_f64(),
        sections,
    };
    write(out, &report)?;
    Ok(report)
}

/// Writes the report's three files into `out`.
pub fn write(out: &OutDir, report: &Report) -> Result<()> {
    let put = |name: &str, text: String| out.write(name, text).map(drop);
    put("index.html", html::render(report))?;
    put("report.md", markdown::render(report))?;
    put(
        "claims.json",
        serde_json::to_string_pretty(&claims_json(report)).map_err(Error::runtime)?,
    )
}

/// `claims.json`: per experiment its claims with verdicts, or its failure.
fn claims_json(report: &Report) -> serde_json::Value {
    let experiments: Vec<serde_json::Value> = report
        .sections
        .iter()
        .map(|s| match &s.result {
            Ok(r) => serde_json::json!({
                "paper": s.paper, "seconds": s.seconds, "claims": r.claims,
                "quick_label": s.quick_label(report),
                "full_scale": s.full_scale,
            }),
            Err(e) => serde_json::json!({ "paper": s.paper, "seconds": s.seconds, "failed": e }),
        })
        .collect();
    serde_json::json!({
        "quick": report.quick,
        "seconds": report.seconds,
        "counts": report.counts(),
        "experiments": experiments,
    })
}

/// The command that produced a report.
fn command(report: &Report) -> String {
    let only = match report.sections.as_slice() {
        [one] if reproducible().count() > 1 => format!(" --only {}", one.paper),
        _ => String::new(),
    };
    format!(
        "hetsched reproduce{}{only}",
        if report.quick { " --quick" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_study::{Baseline, Claim, Figure, Table};

    fn tiny(_out: &OutDir, _quick: bool) -> Result<Reproduction> {
        Ok(Reproduction {
            paper: "tiny",
            reference: "A <tiny> & \"quoted\" paper".into(),
            commands: vec!["hetsched experiment tiny".into()],
            baseline: Baseline {
                paper: "Linux 2.6 <O(1)>".into(),
                ours: "`cfs`".into(),
            },
            figures: vec![Figure {
                paper: "tiny",
                id: "fig1",
                title: "Fig. 1 | a pipe".into(),
                images: vec!["fig1.png".into()],
                paper_numbers: Table::default(),
                ours: Table {
                    header: vec!["n".into()],
                    rows: vec![vec!["1".into()]],
                },
                note: String::new(),
            }],
            claims: vec![Claim {
                paper: "tiny",
                id: "c1",
                source: "§1",
                statement: "x < y".into(),
                paper_value: "1".into(),
                ours: "2".into(),
                tolerance: "±1".into(),
                checks: vec![],
                verdict: Verdict::Partly,
                explanation: "why".into(),
            }],
            assumptions: vec![],
        })
    }

    #[test]
    fn a_failing_or_panicking_experiment_is_a_failed_section_and_the_others_still_run() {
        let failing = Study {
            key: "failing",
            experiments: &[],
            reproduce: Some(|_, _| Err(Error::runtime("no machine"))),
        };
        let panicking = Study {
            key: "panicking",
            experiments: &[],
            reproduce: Some(|_, _| panic!("a bug")),
        };
        let good = Study {
            key: "tiny",
            experiments: &[],
            reproduce: Some(tiny),
        };
        let dir =
            std::env::temp_dir().join(format!("hetsched-reproduce-unit-{}", std::process::id()));
        let out = OutDir::create(&dir).unwrap();
        let r = run(&out, true, &[&failing, &panicking, &good], false).unwrap();
        assert_eq!(r.failed(), ["failing", "panicking"]);
        assert_eq!(
            r.sections[1].result.as_ref().unwrap_err(),
            "panicked: a bug"
        );
        assert_eq!(
            r.counts(),
            Counts {
                holds: 0,
                partly: 1,
                does_not_hold: 0
            }
        );
        let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
        assert!(html.contains("data-failed=\"failing\""), "{html}");
        assert!(html.contains("no machine"));
        // Text is escaped, images are under the experiment's folder.
        assert!(html.contains("A &lt;tiny&gt; &amp; &quot;quoted&quot; paper"));
        assert!(html.contains("<img src=\"tiny/fig1.png\""));
        assert!(html.contains("data-claim=\"c1\" data-verdict=\"partly\""));
        // The one grading rule is stated once, at the top.
        assert_eq!(
            html.matches("<b>Grading.</b> Every claim is graded by one rule")
                .count(),
            1
        );
        // The baseline is named at the top of the section, before the claims.
        let baseline = html
            .find("<p class=\"baseline\"><b>Baseline.</b> The paper's: Linux 2.6 &lt;O(1)&gt;. Ours: `cfs`.</p>")
            .expect("the baseline line");
        assert!(baseline < html.find("data-claim=\"c1\"").unwrap());
        // Quick: the section says so, and that the stored full run has no such paper.
        assert!(
            html.contains("<p class=\"quick\"><b>Quick run: the claim tests&#39; scale"),
            "{html}"
        );
        assert!(html.contains("The stored full run has no section for this paper."));
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("**Quick run: the claim tests' scale"), "{md}");
        assert_eq!(
            md.matches("**Grading.** Every claim is graded by one rule")
                .count(),
            1
        );
        assert!(md.contains("#### Fig. 1 | a pipe") && md.contains("| `c1` | §1 | x < y |"));
        assert!(md.contains("(0.0 s)\n\n**Quick run:") && md.contains("paper.**\n\n**Baseline.** The paper's: Linux 2.6 <O(1)>. Ours: `cfs`.\n\n### Claims"), "{md}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("claims.json")).unwrap())
                .unwrap();
        assert_eq!(json["experiments"][0]["failed"], "no machine");
        assert_eq!(json["experiments"][2]["claims"][0]["verdict"], "partly");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// docs/reproduce.md quotes the rule the report states, word for word.
    #[test]
    fn the_docs_quote_the_grading_rule() {
        let docs = include_str!("../../../../docs/reproduce.md");
        let quoted: String = docs
            .lines()
            .filter_map(|l| l.strip_prefix("> "))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(quoted, hetsched_study::grade::RULE);
    }

    #[test]
    fn every_experiment_has_its_own_key_and_options_clap_accepts() {
        let mut keys: Vec<&str> = experiments().map(|e| e.key).collect();
        assert!(keys.len() >= 12, "{keys:?}");
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "a key registered twice");
        for e in experiments() {
            let cmd = (e.args)(clap::Command::new(e.key));
            // The CLI adds --out: an experiment must not define it.
            assert!(
                cmd.get_arguments().all(|a| a.get_id() != "out"),
                "{}",
                e.key
            );
            cmd.arg(clap::Arg::new("out").long("out")).debug_assert();
            assert!(!e.about.is_empty() && !e.outputs.is_empty(), "{}", e.key);
        }
    }

    #[test]
    fn only_names_an_experiment_or_is_bad_input_listing_them() {
        assert_eq!(select(Some("ding")).unwrap()[0].key, "ding");
        assert_eq!(select(None).unwrap().len(), reproducible().count());
        // The task-graph experiments reproduce no paper: listed, not in the report.
        assert!(STUDIES
            .iter()
            .any(|s| s.key == "graphs" && s.reproduce.is_none()));
        assert!(select(Some("graphs")).is_err());
        let e = select(Some("nope")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("beisel, shelepov, ding, akram, shim, coretime"),
            "{e}"
        );
    }
}

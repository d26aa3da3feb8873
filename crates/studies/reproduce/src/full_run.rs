//! The last full-scale run's verdicts, kept in the repository (`full-run.json`: the
//! `claims.json` that `hetsched reproduce` writes at full scale), so that a quick report
//! says in every section which of its verdicts the full scale changes: measured, not
//! assumed. A quick run takes about 20 s here; the full one about three minutes, too
//! long for a test.
//!
//! To refresh it after a change to an experiment: `hetsched reproduce --out DIR` (release
//! build), then copy `DIR/claims.json` over `crates/studies/reproduce/full-run.json`. A
//! test checks that the file is a full run's, that no section of it failed, that it has
//! every study with a reproduction, and that it was graded by today's rule.

use hetsched_study::{grade, Check, Claim, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The stored run, as committed.
const STORED: &str = include_str!("../full-run.json");

#[derive(Deserialize)]
struct File {
    quick: bool,
    experiments: Vec<Experiment>,
}

#[derive(Deserialize)]
struct Experiment {
    paper: String,
    seconds: f64,
    #[serde(default)]
    claims: Vec<StoredClaim>,
    #[serde(default)]
    failed: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
struct StoredClaim {
    id: String,
    verdict: Verdict,
    ours: String,
    #[serde(default)]
    checks: Vec<Check>,
}

/// A full run's verdicts, per paper.
pub struct FullRun {
    papers: BTreeMap<String, (f64, Vec<StoredClaim>)>,
    /// Sections that failed in it.
    pub failed: Vec<String>,
}

/// What the full scale says of one section of a quick run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FullScale {
    /// The full run's time for this paper, s.
    pub seconds: f64,
    /// Claims judged in both.
    pub claims: usize,
    /// Those whose verdict differs, or that the full run did not judge.
    pub differences: Vec<Difference>,
}

/// A claim whose verdict is not the same at full scale.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub id: String,
    pub quick: Verdict,
    /// `None`: the full run did not judge it.
    pub full: Option<Verdict>,
    /// Ours in the full run.
    pub full_ours: String,
}

impl FullRun {
    /// The run committed with the code.
    pub fn stored() -> FullRun {
        FullRun::parse(STORED).expect("full-run.json is a full run's claims.json (tested)")
    }

    /// A full run's `claims.json`.
    pub fn parse(text: &str) -> Result<FullRun, String> {
        let f: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if f.quick {
            return Err("a quick run's claims, not a full run's".into());
        }
        let failed = f
            .experiments
            .iter()
            .filter(|e| e.failed.is_some())
            .map(|e| e.paper.clone())
            .collect();
        for e in &f.experiments {
            for c in &e.claims {
                // A file from before the rule, or from before a change to it, is
                // refused until the full run is refreshed.
                grade::regrade(&c.checks, c.verdict)
                    .map_err(|why| format!("{} {}: {why}", e.paper, c.id))?;
            }
        }
        let papers = f
            .experiments
            .into_iter()
            .filter(|e| e.failed.is_none())
            .map(|e| (e.paper, (e.seconds, e.claims)))
            .collect();
        Ok(FullRun { papers, failed })
    }

    /// The papers it has.
    pub fn papers(&self) -> impl Iterator<Item = &str> {
        self.papers.keys().map(String::as_str)
    }

    /// How `claims`, a quick run's of `paper`, compare with this run's; `None` when it
    /// has no such paper.
    pub fn compare(&self, paper: &str, claims: &[Claim]) -> Option<FullScale> {
        let (seconds, full) = self.papers.get(paper)?;
        let mut differences = Vec::new();
        for c in claims {
            let there = full.iter().find(|f| f.id == c.id);
            if there.is_none_or(|f| f.verdict != c.verdict) {
                differences.push(Difference {
                    id: c.id.to_string(),
                    quick: c.verdict,
                    full: there.map(|f| f.verdict),
                    full_ours: there.map_or(String::new(), |f| f.ours.clone()),
                });
            }
        }
        Some(FullScale {
            seconds: *seconds,
            claims: claims.len(),
            differences,
        })
    }
}

impl FullScale {
    /// One sentence for a quick section (Markdown's emphasis; the HTML escapes it).
    pub fn sentence(&self) -> String {
        if self.differences.is_empty() {
            let same = match self.claims {
                1 => "verdict".to_string(),
                n => format!("{n} verdicts"),
            };
            return format!(
                "The stored full run (`hetsched reproduce`, {:.1} s for this paper) gives the same {same}.",
                self.seconds
            );
        }
        let each: Vec<String> = self
            .differences
            .iter()
            .map(|d| match d.full {
                Some(full) => format!(
                    "`{}` {} here, {} there (ours there: {})",
                    d.id,
                    d.quick.word(),
                    full.word(),
                    d.full_ours
                ),
                None => format!("`{}` is not judged there", d.id),
            })
            .collect();
        format!(
            "At full scale (the stored full run, `hetsched reproduce`, {:.1} s for this paper) {} of {} verdicts differ: {}.",
            self.seconds,
            self.differences.len(),
            self.claims,
            each.join("; ")
        )
    }
}

/// The label of every section of a quick report.
pub fn quick_label(full: Option<&FullScale>) -> String {
    let rest = match full {
        Some(f) => f.sentence(),
        None => "The stored full run has no section for this paper.".into(),
    };
    format!("Quick run: the claim tests' scale (fewer seeds, scaled-down runs), not the paper's. {rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &'static str, verdict: Verdict) -> Claim {
        // A number 0, 30 or 100 % off the paper's: holds, partly, does not hold.
        let ours = match verdict {
            Verdict::Holds => 1.0,
            Verdict::Partly => 1.3,
            Verdict::DoesNotHold => 2.0,
        };
        let c = Claim::new("p", id, "§1", "x").graded(
            vec![Check::number(
                "n",
                hetsched_study::Paper::Value(1.0),
                hetsched_study::Measure::Quantity,
                ours,
            )],
            "",
        );
        assert_eq!(c.verdict, verdict);
        c
    }

    /// A full run's `claims.json` with `claims` for paper `p`, 12 s, and a failed `q`.
    fn stored(claims: &[Claim]) -> String {
        serde_json::json!({"quick": false, "experiments": [
            {"paper": "p", "seconds": 12.0, "claims": claims},
            {"paper": "q", "seconds": 1.0, "failed": "no machine"}]})
        .to_string()
    }

    #[test]
    fn a_quick_sections_verdicts_are_compared_with_the_full_runs() {
        let mut a = claim("a", Verdict::Holds);
        a.ours = "1.9x".into();
        let full = FullRun::parse(&stored(&[a, claim("b", Verdict::Partly)])).unwrap();
        assert_eq!(full.failed, ["q"]);
        assert!(full.compare("q", &[]).is_none());
        let quick = [
            claim("a", Verdict::Partly),
            claim("b", Verdict::Partly),
            claim("c", Verdict::Holds),
        ];
        let f = full.compare("p", &quick).unwrap();
        assert_eq!(f.claims, 3);
        assert_eq!(
            f.sentence(),
            "At full scale (the stored full run, `hetsched reproduce`, 12.0 s for this paper) 2 of 3 verdicts differ: `a` partly here, holds there (ours there: 1.9x); `c` is not judged there."
        );
        let same = full.compare("p", &quick[1..2]).unwrap();
        assert!(same
            .sentence()
            .ends_with("12.0 s for this paper) gives the same verdict."));
        assert!(FullRun::parse(r#"{"quick": true, "experiments": []}"#).is_err());
        // A verdict that is not the rule's on its numbers, or no numbers at all.
        let mut doctored = claim("a", Verdict::DoesNotHold);
        doctored.checks[0].verdict = Verdict::Holds;
        assert_eq!(
            FullRun::parse(&stored(&[doctored])).err().unwrap(),
            "p a: check \"n\" is not graded by today's rule"
        );
        let mut bare = claim("a", Verdict::Holds);
        bare.checks.clear();
        assert_eq!(
            FullRun::parse(&stored(&[bare])).err().unwrap(),
            "p a: no checks (graded before the one rule)"
        );
    }

    /// The committed run is a full one, none of its sections failed, and it has every
    /// study that reproduces a paper.
    #[test]
    fn the_stored_run_is_full_and_whole() {
        let full = FullRun::stored();
        assert!(full.failed.is_empty(), "{:?}", full.failed);
        let papers: Vec<&str> = full.papers().collect();
        for s in crate::STUDIES.iter().filter(|s| s.reproduce.is_some()) {
            assert!(papers.contains(&s.key), "{} not in {papers:?}", s.key);
        }
    }
}

//! What a reproduction of a paper states, as data.
//!
//! Why a crate of its own: each experiment crate (`hetsched-beisel`, `-shelepov`,
//! `-nuca`, `-o2`, `-ding`, `-akram`) judges its paper's claims **once**, from its own
//! results, and two readers consume that judgement: the crate's claim tests (which pin
//! every verdict, so a change in either direction is noticed) and `hetsched reproduce`
//! (which prints them beside the paper's numbers). If the report re-derived verdicts, the
//! two could disagree; if the types lived in the report crate, the experiment crates
//! would depend on the report, which depends on them.
//!
//! Assumptions are declared with [`assumptions!`]: the constant, its documentation and
//! the list the report prints come from the same source text, so an assumption is never
//! written twice.

pub mod grade;
mod study;
pub use grade::{Check, Measure, Paper};
pub use study::{options, say, Experiment, Study};

use hetsched_util::files::{self, OutDir};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Largest figure [`Reproduction::missing_figure_parts`] reads, bytes (ours take at
/// most 200 KiB).
pub const MAX_FIGURE_BYTES: u64 = 64 << 20;

/// Largest stored verdicts file [`judged_once`] reads, bytes.
pub const MAX_JUDGED_BYTES: u64 = 64 << 20;

/// How far our reproduction holds a claim of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Our measurement meets the paper's statement within the band of [`grade::RULE`].
    Holds,
    /// Ours is near the paper's statement: within the wider band of [`grade::RULE`].
    Partly,
    /// Our measurement contradicts the paper's statement.
    DoesNotHold,
}

impl Verdict {
    /// The word the report prints.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Partly => "partly",
            Verdict::DoesNotHold => "does not hold",
        }
    }
}

/// One claim of a paper, judged against our measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// Which paper (the experiment's key, e.g. `beisel`, `shim`, `coretime`).
    pub paper: &'static str,
    /// Stable identifier within the paper (e.g. `fig4-time-sharing-lowers-turnaround`):
    /// claim tests name claims by it.
    pub id: &'static str,
    /// Where in the paper (e.g. `Fig. 4`, `§5.2`, `Table 3`).
    pub source: &'static str,
    /// The paper's statement, in its words or a faithful paraphrase.
    pub statement: String,
    /// The paper's figure for it, with units (e.g. `up to 40 %`).
    pub paper_value: String,
    /// Ours, with units, from the run the claim was judged on.
    pub ours: String,
    /// The bands of its checks, in words ([`Check::band`]).
    pub tolerance: String,
    /// What is graded, each by [`grade::RULE`].
    pub checks: Vec<Check>,
    /// The worst of the checks' verdicts.
    pub verdict: Verdict,
    /// Why ours differs, with the evidence, where it does; empty where it holds.
    pub explanation: String,
}

impl Claim {
    /// A claim of `paper` to be judged: the caller fills in the values and grades it
    /// (`DoesNotHold` until graded).
    pub fn new(
        paper: &'static str,
        id: &'static str,
        source: &'static str,
        statement: &str,
    ) -> Claim {
        Claim {
            paper,
            id,
            source,
            statement: statement.into(),
            paper_value: String::new(),
            ours: String::new(),
            tolerance: String::new(),
            checks: Vec::new(),
            verdict: Verdict::DoesNotHold,
            explanation: String::new(),
        }
    }

    /// The claim with the paper's value and ours, as the report prints them.
    pub fn measured(self, paper_value: impl Into<String>, ours: impl Into<String>) -> Claim {
        Claim {
            paper_value: paper_value.into(),
            ours: ours.into(),
            ..self
        }
    }

    /// The claim graded by [`grade::RULE`] on `checks`; `explanation` (why ours differs)
    /// is kept only where the verdict is not `Holds`.
    pub fn graded(self, checks: Vec<Check>, explanation: impl Into<String>) -> Claim {
        let verdict = grade::worst(&checks);
        let tolerance = checks
            .iter()
            .map(Check::band)
            .collect::<Vec<_>>()
            .join("; ");
        let explanation = if verdict == Verdict::Holds {
            String::new()
        } else {
            explanation.into()
        };
        Claim {
            tolerance,
            checks,
            verdict,
            explanation,
            ..self
        }
    }
}

/// A table of numbers: the paper's (transcribed from its text, figures or tables) or ours.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str], rows: Vec<Vec<String>>) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        }
    }
}

/// One figure or table of the paper beside our reproduction of it.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub paper: &'static str,
    /// Stable identifier (e.g. `fig5`).
    pub id: &'static str,
    /// The paper's caption or what the figure shows.
    pub title: String,
    /// Our plots, relative to the experiment's output folder.
    pub images: Vec<std::path::PathBuf>,
    /// The paper's numbers (empty when the paper gives only a plot; say so in `note`).
    pub paper_numbers: Table,
    /// Our numbers for the same cells.
    pub ours: Table,
    /// What the reader should know when comparing (scale, units, what differs).
    pub note: String,
}

/// Everything one experiment reproduces of its paper: what `reproduce(out, quick)` of an
/// experiment crate returns, and what the report prints as one section.
#[derive(Clone, Debug, Serialize)]
pub struct Reproduction {
    /// The experiment's key (e.g. `beisel`), as in [`Claim::paper`].
    pub paper: &'static str,
    /// The paper's reference, short (authors, venue, year).
    pub reference: String,
    /// The commands that produce these results (the full run, not the quick one).
    pub commands: Vec<String>,
    /// What the paper measured against, and what of ours stands in for it.
    pub baseline: Baseline,
    pub figures: Vec<Figure>,
    pub claims: Vec<Claim>,
    pub assumptions: Vec<Assumption>,
}

/// A paper's baseline and ours. Why it is stated: every claim of the kind "X beats the
/// default" is measured against a baseline, and ours is rarely the paper's (a Linux of
/// another version, a scheme of our simulator), so the report names both where the
/// reader sees the section's verdicts, not only in code.
#[derive(Clone, Debug, Serialize)]
pub struct Baseline {
    /// What the paper compares with, as it names it, with the version where it gives one
    /// (e.g. `Linux 2.6.18's O(1) scheduler`).
    pub paper: String,
    /// What stands in for it here (a policy spec or the experiment's own configuration)
    /// and what is shown beside it (e.g. `eevdf`, Linux as it schedules today). Claims are
    /// judged against the stand-in.
    pub ours: String,
}

impl Reproduction {
    /// What is missing of this reproduction's figures once written under `out`: a figure
    /// without our numbers, or an image that is not a PNG there (empty when complete).
    pub fn missing_figure_parts(&self, out: &std::path::Path) -> Vec<String> {
        let mut missing = Vec::new();
        for f in &self.figures {
            if f.ours.rows.is_empty() {
                missing.push(format!("{}: no numbers of ours", f.id));
            }
            for image in &f.images {
                let png =
                    files::read(&out.join(image), "a figure", MAX_FIGURE_BYTES).unwrap_or_default();
                if !png.starts_with(b"\x89PNG") {
                    missing.push(format!("{}: {} is not a PNG", f.id, image.display()));
                }
            }
        }
        missing
    }
}

/// A value the reproduction assumes that the paper does not state.
#[derive(Clone, Debug, Serialize)]
pub struct Assumption {
    pub paper: &'static str,
    /// The constant's name in the code.
    pub name: &'static str,
    /// Its value, as the code prints it.
    pub value: String,
    /// Its documentation comment, one paragraph: what it is, what the paper says, why
    /// this value.
    pub doc: String,
    /// Where it is declared (module path and name).
    pub source: &'static str,
}

/// Declares documented constants that are assumptions of a reproduction, and a function
/// `assumptions()` listing them.
///
/// ```
/// mod model {
///     hetsched_study::assumptions! { "beisel";
///         /// GPU speed of prime factorisation relative to one CPU core. The paper gives
///         /// no number; swept in Fig. 5.
///         pub const PRIME_GPU_RATIO: f64 = 1.0;
///     }
/// }
/// assert_eq!(model::PRIME_GPU_RATIO, 1.0);
/// let list = model::assumptions();
/// assert_eq!(list[0].name, "PRIME_GPU_RATIO");
/// assert_eq!(list[0].value, "1.0");
/// assert!(list[0].doc.starts_with("GPU speed"));
/// ```
#[macro_export]
macro_rules! assumptions {
    ($paper:literal; $( $(#[doc = $doc:literal])+ $vis:vis const $name:ident : $ty:ty = $value:expr ; )+ ) => {
        $( $(#[doc = $doc])+ $vis const $name: $ty = $value; )+

        /// Every assumption declared in this module, with its documentation.
        pub fn assumptions() -> ::std::vec::Vec<$crate::Assumption> {
            ::std::vec![$(
                $crate::Assumption {
                    paper: $paper,
                    name: ::std::stringify!($name),
                    value: ::std::format!("{:?}", $name),
                    doc: $crate::trim_doc(::std::concat!($($doc, "\n"),+)),
                    source: ::std::concat!(::std::module_path!(), "::", ::std::stringify!($name)),
                }
            ),+]
        }
    };
}

/// A doc comment's lines joined into one paragraph, without the space each `///` line
/// starts with.
#[doc(hidden)]
pub fn trim_doc(doc: &str) -> String {
    doc.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A claim's verdict as its claim test reads it: the id, the verdict, its checks (our
/// numbers and their bands), our value and the explanation (which tests may check too),
/// and the claim in full for the failure message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Judged {
    pub id: String,
    pub verdict: Verdict,
    pub checks: Vec<Check>,
    pub ours: String,
    pub explanation: String,
    pub claim: String,
}

impl Judged {
    /// Our number of the check `what`, and the check (panics, naming the claim, if it
    /// has none).
    pub fn check(&self, what: &str) -> &Check {
        self.checks
            .iter()
            .find(|c| c.what == what)
            .unwrap_or_else(|| panic!("claim {} has no check {what:?}: {}", self.id, self.claim))
    }
}

impl From<&Claim> for Judged {
    fn from(c: &Claim) -> Judged {
        Judged {
            id: c.id.to_string(),
            verdict: c.verdict,
            checks: c.checks.clone(),
            ours: c.ours.clone(),
            explanation: c.explanation.clone(),
            claim: format!("{c:#?}"),
        }
    }
}

/// Asserts that the claim `id` of `judged` has `verdict`, showing its numbers against
/// their bands and the whole claim if not: the body of a claim test. Returns the claim,
/// for tests that check its numbers further.
pub fn assert_verdict<'a>(judged: &'a [Judged], id: &str, verdict: Verdict) -> &'a Judged {
    let c = judged
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no claim {id}"));
    let numbers: Vec<String> = c
        .checks
        .iter()
        .map(|k| match k.ours {
            Some(ours) => format!("{} = {ours} ({:?}; {})", k.what, k.verdict, k.band()),
            None => format!("{:?}: {}", k.verdict, k.what),
        })
        .collect();
    assert_eq!(
        c.verdict,
        verdict,
        "claim {id}:\n  {}\n{}",
        numbers.join("\n  "),
        c.claim
    );
    // The verdict is the rule's on the numbers: each number graded again against the
    // paper's, and the claim the worst of its checks.
    if let Err(why) = grade::regrade(&c.checks, c.verdict) {
        panic!("claim {id}: {why}\n{}", c.claim);
    }
    c
}

/// The claims `judge` returns, judged once per build of the calling test binary and
/// shared by all its tests, also when a runner (cargo-nextest) runs each test in a
/// process of its own: the first process to take the lock on `dir` judges and stores
/// the verdicts in `dir`, the others wait for the lock and read them. A crate's claim
/// tests so cost one reproduction, not one per claim. The lock is `flock`, released
/// when its holder ends, even by a panic, so no process waits forever. The lock file is
/// opened and the verdicts are written without following a link (`files`).
pub fn judged_once(dir: &Path, judge: impl FnOnce() -> Vec<Claim>) -> std::io::Result<Vec<Judged>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e: hetsched_util::Error| std::io::Error::other(e.to_string());
    let exe = std::env::current_exe()?;
    let stamp = exe
        .metadata()?
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = exe
        .file_name()
        .map_or("claims".into(), |n| n.to_string_lossy().into_owned());
    let out = OutDir::create(dir).map_err(io)?;
    let file = format!("{name}-{stamp}.claims.json");
    let path = out.join(&file);
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(out.join(&format!("{name}.lock")))?;
    // SAFETY: `lock` is an open descriptor for the whole call.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(judged) = files::read_text(&path, "stored verdicts", MAX_JUDGED_BYTES)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
    {
        return Ok(judged);
    }
    let judged: Vec<Judged> = judge().iter().map(Judged::from).collect();
    out.write(&file, serde_json::to_string(&judged)?)
        .map_err(io)?;
    Ok(judged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_figure_parts_names_empty_tables_and_images_that_are_not_pngs() {
        let dir = std::env::temp_dir().join(format!("repro-figs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("good.png"), b"\x89PNG\r\n\x1a\n").unwrap();
        std::fs::write(dir.join("bad.png"), b"<svg/>").unwrap();
        let figure = |id, rows: Vec<Vec<String>>, images: &[&str]| Figure {
            paper: "test",
            id,
            title: String::new(),
            images: images.iter().map(std::path::PathBuf::from).collect(),
            paper_numbers: Table::default(),
            ours: Table::new(&["x"], rows),
            note: String::new(),
        };
        let r = Reproduction {
            paper: "test",
            reference: String::new(),
            commands: vec![],
            baseline: Baseline {
                paper: String::new(),
                ours: String::new(),
            },
            figures: vec![
                figure("ok", vec![vec!["1".into()]], &["good.png"]),
                figure("empty", vec![], &["good.png", "bad.png", "absent.png"]),
            ],
            claims: vec![],
            assumptions: vec![],
        };
        assert_eq!(
            r.missing_figure_parts(&dir),
            [
                "empty: no numbers of ours",
                "empty: bad.png is not a PNG",
                "empty: absent.png is not a PNG"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    mod declared {
        crate::assumptions! { "test";
            /// First line.
            /// Second line.
            pub const A: f64 = 2.5;
            /// Bytes.
            const B: u64 = 8_000_000;
        }
        pub fn b() -> u64 {
            B
        }
    }

    #[test]
    fn the_macro_keeps_constants_and_lists_them_in_order_with_their_docs() {
        assert_eq!(declared::A, 2.5);
        assert_eq!(declared::b(), 8_000_000);
        let list = declared::assumptions();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].name, "A");
        assert_eq!(list[0].value, "2.5");
        assert_eq!(list[0].doc, "First line. Second line.");
        assert_eq!(list[1].value, "8000000");
        assert!(
            list[1].source.ends_with("declared::B"),
            "{}",
            list[1].source
        );
        assert_eq!(list[1].paper, "test");
    }

    #[test]
    fn claims_are_judged_once_and_then_read_back() {
        let dir = std::env::temp_dir().join(format!("hetsched-study-test-{}", std::process::id()));
        let claim = Claim {
            paper: "test",
            id: "c",
            source: "§1",
            statement: "s".into(),
            paper_value: "1".into(),
            ours: "1".into(),
            tolerance: "t".into(),
            checks: vec![],
            verdict: Verdict::Partly,
            explanation: String::new(),
        };
        let first = judged_once(&dir, || vec![claim]).unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(
            (first[0].id.as_str(), first[0].verdict),
            ("c", Verdict::Partly)
        );
        // The second call reads the stored verdicts and does not judge again.
        let second = judged_once(&dir, || unreachable!("judged twice")).unwrap();
        assert_eq!(second[0].verdict, Verdict::Partly);
        assert!(second[0].claim.contains("Partly"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_graded_claim_takes_its_worst_checks_verdict_and_writes_its_bands() {
        let c = Claim::new("test", "c", "§1", "s")
            .measured("2×", "1.8×")
            .graded(
                vec![
                    Check::number("speed-up", Paper::AtLeast(2.0), Measure::Ratio, 1.8),
                    Check::statement("order", true),
                ],
                "why",
            );
        assert_eq!(c.verdict, Verdict::Partly);
        assert_eq!(c.explanation, "why");
        assert_eq!(
            c.tolerance,
            "speed-up: holds ≥ 2, partly ≥ 1.5; order: a statement, holds or not"
        );
        let held =
            Claim::new("test", "c", "§1", "s").graded(vec![Check::statement("order", true)], "why");
        assert_eq!(
            (held.verdict, held.explanation.as_str()),
            (Verdict::Holds, "")
        );
        assert_eq!(
            serde_json::to_string(&Verdict::DoesNotHold).unwrap(),
            "\"does-not-hold\""
        );
    }
}

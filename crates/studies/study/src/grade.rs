//! The one rule by which every claim of every reproduction is graded.
//!
//! Why one rule: when each experiment chose its own tolerance (±5 points here, a factor
//! 1.5 there, "partly" meaning only that the sign matched), a verdict said as much about
//! the tolerance as about the result, and "partly" put +16 % against a paper's +130 %
//! beside a near miss. Here a claim is a list of [`Check`]s, each a number the paper
//! states (a value, a bound, a range) or a statement it makes without one; every check is
//! graded by [`RULE`], and a claim's verdict is its worst check's. An experiment chooses
//! what it checks and against which of the paper's numbers, never how close is close
//! enough; its claim tests read the numbers and bands back ([`crate::Judged::checks`]).
//!
//! None of the five papers reports a spread (a standard deviation, an interval, a
//! min–max over runs) for any number we grade; the fixed bands below stand in for one.

use crate::Verdict;
use serde::{Deserialize, Serialize};

/// Ours holds a value the paper measured when it is within this fraction of the check's
/// reference ([`Measure`]).
pub const HOLDS_WITHIN: f64 = 0.10;

/// Ours partly holds a value, or a bound or range it does not meet, when it is within
/// this fraction of the check's reference.
pub const PARTLY_WITHIN: f64 = 0.50;

/// The rule as the report states it.
pub const RULE: &str = "Every claim is graded by one rule. A claim is one or more checks, \
and its verdict is its worst check's. A value the paper measured holds when ours is within \
10 % of the reference and partly holds within 50 %. A bound or range the paper states \
(\"more than twice\", \"no worse\", \"two to three times\") holds only when ours meets it \
exactly (more than twice means ≥ 2.0×), and partly holds when ours misses it by at most \
50 % of the reference. The reference is the paper's number for a plain quantity; for a \
change against a baseline (a loss or gain in %, a speed-up in ×) it is the size of the \
paper's change (a 1.36× speed-up: 0.36, so 1.32–1.40× holds), and the baseline itself \
(100 %, 1×) where the paper's change is zero (\"no worse\", \"about the same\"). A \
statement the paper makes without a number (an order, a direction) holds or does not; it \
is never partly. None of the papers gives a spread for a number we grade, so these bands \
are not widened by one.";

/// What a number measures: decides the reference the bands are fractions of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Any quantity that is not a change against a baseline (a rate, a count, a time):
    /// the reference is the paper's number.
    Quantity,
    /// A change against a baseline in per cent (a loss, a gain): the reference is the
    /// size of the paper's change, or 100 % where it is zero.
    Percent,
    /// A ratio to a baseline (a speed-up, ×): the reference is the size of the paper's
    /// change, `|x − 1|`, or 1× where it is zero.
    Ratio,
}

impl Measure {
    /// The reference of the paper's number `x` on this measure.
    fn reference(self, x: f64) -> f64 {
        let (change, baseline) = match self {
            Measure::Quantity => return x.abs(),
            Measure::Percent => (x.abs(), 100.0),
            Measure::Ratio => ((x - 1.0).abs(), 1.0),
        };
        if change > 0.0 {
            change
        } else {
            baseline
        }
    }
}

/// What the paper states about a number.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Paper {
    /// A value it measured.
    Value(f64),
    /// A lower bound it states ("more than", "at least").
    AtLeast(f64),
    /// An upper bound it states ("less than", "no worse than", "at most").
    AtMost(f64),
    /// A range it states ("two to three times").
    Range(f64, f64),
}

/// One graded check of a claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is checked (e.g. `eon`, `4 MB`, `migrations`).
    pub what: String,
    /// What the paper states (`None`: a statement without a number).
    pub paper: Option<Paper>,
    pub measure: Option<Measure>,
    /// Ours (`None` for a statement).
    pub ours: Option<f64>,
    /// Where ours holds and partly holds: `[low, high]`, `None` for no limit.
    pub holds: [Option<f64>; 2],
    pub partly: [Option<f64>; 2],
    pub verdict: Verdict,
}

impl Check {
    /// A number the paper states, and ours, graded by [`RULE`]. Ours not finite does not
    /// hold.
    pub fn number(what: impl Into<String>, paper: Paper, measure: Measure, ours: f64) -> Check {
        let band = |x: f64, within: f64| within * measure.reference(x);
        let (holds, partly) = match paper {
            Paper::Value(x) => (
                [
                    Some(x - band(x, HOLDS_WITHIN)),
                    Some(x + band(x, HOLDS_WITHIN)),
                ],
                [
                    Some(x - band(x, PARTLY_WITHIN)),
                    Some(x + band(x, PARTLY_WITHIN)),
                ],
            ),
            Paper::AtLeast(x) => ([Some(x), None], [Some(x - band(x, PARTLY_WITHIN)), None]),
            Paper::AtMost(x) => ([None, Some(x)], [None, Some(x + band(x, PARTLY_WITHIN))]),
            Paper::Range(lo, hi) => (
                [Some(lo), Some(hi)],
                [
                    Some(lo - band(lo, PARTLY_WITHIN)),
                    Some(hi + band(hi, PARTLY_WITHIN)),
                ],
            ),
        };
        let inside = |[lo, hi]: [Option<f64>; 2]| {
            ours.is_finite() && lo.is_none_or(|lo| ours >= lo) && hi.is_none_or(|hi| ours <= hi)
        };
        let verdict = if inside(holds) {
            Verdict::Holds
        } else if inside(partly) {
            Verdict::Partly
        } else {
            Verdict::DoesNotHold
        };
        Check {
            what: what.into(),
            paper: Some(paper),
            measure: Some(measure),
            ours: Some(ours),
            holds,
            partly,
            verdict,
        }
    }

    /// A statement the paper makes without a number: holds or does not hold.
    pub fn statement(what: impl Into<String>, held: bool) -> Check {
        Check {
            what: what.into(),
            paper: None,
            measure: None,
            ours: None,
            holds: [None, None],
            partly: [None, None],
            verdict: if held {
                Verdict::Holds
            } else {
                Verdict::DoesNotHold
            },
        }
    }

    /// The check graded again from what it records (the paper's number, the measure,
    /// ours): equal to it exactly when it was graded by today's rule. A statement keeps
    /// its verdict (it has no number to grade).
    fn regraded(&self) -> Check {
        match (self.paper, self.measure, self.ours) {
            (Some(paper), Some(measure), Some(ours)) => {
                Check::number(self.what.clone(), paper, measure, ours)
            }
            _ => Check::statement(self.what.clone(), self.verdict == Verdict::Holds),
        }
    }

    /// The check's band in words, e.g. `eon: holds in [−21.3, −17.5], partly in
    /// [−29.1, −9.7]`.
    pub fn band(&self) -> String {
        let Some(_) = self.paper else {
            return format!("{}: a statement, holds or not", self.what);
        };
        let side = |[lo, hi]: [Option<f64>; 2]| match (lo, hi) {
            (Some(lo), Some(hi)) => format!("[{}, {}]", short(lo), short(hi)),
            (Some(lo), None) => format!("≥ {}", short(lo)),
            (None, Some(hi)) => format!("≤ {}", short(hi)),
            (None, None) => "anywhere".into(),
        };
        format!(
            "{}: holds {}, partly {}",
            self.what,
            side(self.holds),
            side(self.partly)
        )
    }
}

/// A number in at most four significant digits, without trailing zeros.
fn short(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Whether `verdict` is the rule's on `checks`: each check graded again from its numbers
/// is itself, and the verdict is the worst of them. What a claim test asserts of every
/// claim, and what a stored run must pass to be compared with (`Err` says what is not).
pub fn regrade(checks: &[Check], verdict: Verdict) -> Result<(), String> {
    if checks.is_empty() {
        return Err("no checks (graded before the one rule)".into());
    }
    if let Some(k) = checks.iter().find(|k| &k.regraded() != *k) {
        return Err(format!("check {:?} is not graded by today's rule", k.what));
    }
    if worst(checks) != verdict {
        return Err("the verdict is not its worst check's".into());
    }
    Ok(())
}

/// The worst verdict of `checks` (`DoesNotHold` for none: a claim without a check is not
/// judged).
pub fn worst(checks: &[Check]) -> Verdict {
    if checks.is_empty() {
        return Verdict::DoesNotHold;
    }
    let rank = |v: Verdict| match v {
        Verdict::Holds => 0,
        Verdict::Partly => 1,
        Verdict::DoesNotHold => 2,
    };
    checks
        .iter()
        .map(|c| c.verdict)
        .max_by_key(|&v| rank(v))
        .unwrap_or(Verdict::DoesNotHold)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(paper: Paper, measure: Measure, ours: f64) -> Verdict {
        Check::number("x", paper, measure, ours).verdict
    }

    #[test]
    fn a_speed_up_is_graded_on_its_gain_not_its_ratio() {
        // 1.36×: the gain is 0.36, so 10 % of it is 0.036 and 50 % is 0.18.
        let v = |ours| verdict(Paper::Value(1.36), Measure::Ratio, ours);
        assert_eq!(v(1.33), Verdict::Holds);
        assert_eq!(v(1.39), Verdict::Holds);
        assert_eq!(v(1.30), Verdict::Partly);
        assert_eq!(v(1.106), Verdict::DoesNotHold);
        assert_eq!(v(f64::NAN), Verdict::DoesNotHold);
    }

    #[test]
    fn more_than_twice_means_at_least_two() {
        let v = |ours| verdict(Paper::AtLeast(2.0), Measure::Ratio, ours);
        assert_eq!(v(2.0), Verdict::Holds);
        assert_eq!(v(1.99), Verdict::Partly);
        assert_eq!(v(1.5), Verdict::Partly);
        assert_eq!(v(1.49), Verdict::DoesNotHold);
    }

    #[test]
    fn no_change_is_measured_against_the_baseline() {
        // "No worse than the baseline": a ratio ≤ 1; partly up to 1.5×.
        let v = |ours| verdict(Paper::AtMost(1.0), Measure::Ratio, ours);
        assert_eq!(
            (v(0.8), v(1.04), v(1.6)),
            (Verdict::Holds, Verdict::Partly, Verdict::DoesNotHold)
        );
        // "About the same": 0.9–1.1× holds.
        let v = |ours| verdict(Paper::Value(1.0), Measure::Ratio, ours);
        assert_eq!(
            (v(1.05), v(0.78), v(0.4)),
            (Verdict::Holds, Verdict::Partly, Verdict::DoesNotHold)
        );
        // A change of 0 % in per cent: ±10 points.
        assert_eq!(
            verdict(Paper::Value(0.0), Measure::Percent, -9.0),
            Verdict::Holds
        );
    }

    #[test]
    fn a_percent_change_is_relative_to_the_papers_change() {
        let v = |ours| verdict(Paper::Value(-4.3), Measure::Percent, ours);
        assert_eq!(v(-4.5), Verdict::Holds);
        assert_eq!(v(-6.4), Verdict::Partly);
        assert_eq!(v(2.0), Verdict::DoesNotHold);
        let v = |ours| verdict(Paper::Value(130.0), Measure::Percent, ours);
        assert_eq!(v(15.7), Verdict::DoesNotHold);
    }

    #[test]
    fn a_range_holds_inside_and_partly_within_half_of_each_ends_reference() {
        // 2–3×: the lower end's reference is 1 (partly from 1.5), the upper's 2 (to 4).
        let v = |ours| verdict(Paper::Range(2.0, 3.0), Measure::Ratio, ours);
        assert_eq!(
            (v(2.5), v(1.6), v(3.9), v(1.41)),
            (
                Verdict::Holds,
                Verdict::Partly,
                Verdict::Partly,
                Verdict::DoesNotHold
            )
        );
    }

    #[test]
    fn a_quantity_is_relative_to_the_papers_number() {
        let v = |ours| verdict(Paper::Value(29.0), Measure::Quantity, ours);
        assert_eq!(
            (v(31.0), v(40.0), v(51.8)),
            (Verdict::Holds, Verdict::Partly, Verdict::DoesNotHold)
        );
    }

    #[test]
    fn a_claim_is_its_worst_check_and_statements_are_never_partly() {
        let checks = [
            Check::statement("order", true),
            Check::number("a", Paper::Value(10.0), Measure::Quantity, 13.0),
        ];
        assert_eq!(worst(&checks), Verdict::Partly);
        assert_eq!(
            worst(&[Check::statement("order", false)]),
            Verdict::DoesNotHold
        );
        assert_eq!(worst(&[]), Verdict::DoesNotHold);
    }

    #[test]
    fn a_verdict_not_the_rules_on_its_numbers_is_found() {
        let checks = vec![Check::number(
            "a",
            Paper::Value(10.0),
            Measure::Quantity,
            13.0,
        )];
        assert_eq!(regrade(&checks, Verdict::Partly), Ok(()));
        assert_eq!(
            regrade(&checks, Verdict::Holds).unwrap_err(),
            "the verdict is not its worst check's"
        );
        let mut doctored = checks.clone();
        doctored[0].ours = Some(10.0);
        assert_eq!(
            regrade(&doctored, Verdict::Partly).unwrap_err(),
            "check \"a\" is not graded by today's rule"
        );
        assert!(regrade(&[], Verdict::Holds).is_err());
    }

    #[test]
    fn bands_are_written_out() {
        let c = Check::number("eon", Paper::Value(-19.4), Measure::Percent, -21.9);
        assert_eq!(
            c.band(),
            "eon: holds [-21.34, -17.46], partly [-29.1, -9.7]"
        );
        let c = Check::number("x", Paper::AtLeast(2.0), Measure::Ratio, 1.9);
        assert_eq!(c.band(), "x: holds ≥ 2, partly ≥ 1.5");
        assert_eq!(
            Check::statement("s", true).band(),
            "s: a statement, holds or not"
        );
    }
}

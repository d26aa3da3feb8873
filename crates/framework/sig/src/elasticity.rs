//! Clock-speed elasticity of completion time (§3.2), the linear miss-rate → elasticity
//! model (§3.3) and the three sensitivity classes (§3.4).

use hetsched_core::{Error, Result};
use hetsched_util::files;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Arc elasticity E = (T2 − T1)/(F2 − F1) · (F1 + F2)/(T1 + T2) of completion time T
/// with respect to frequency F, on the region [F1, F2].
pub fn arc_elasticity(t1: f64, f1: f64, t2: f64, f2: f64) -> Result<f64> {
    let all_positive = [t1, f1, t2, f2].iter().all(|v| v.is_finite() && *v > 0.0);
    if !all_positive {
        return Err(Error::input(
            "elasticity: times and frequencies must be positive finite numbers",
        ));
    }
    if f1 == f2 {
        return Err(Error::input(
            "elasticity: the two frequencies must differ (F2 - F1 is the denominator)",
        ));
    }
    Ok((t2 - t1) / (f2 - f1) * (f1 + f2) / (t1 + t2))
}

/// elasticity = intercept + slope · miss rate (misses per instruction).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinearModel {
    /// Elasticity at a zero miss rate.
    pub intercept: f64,
    /// Change of elasticity per unit of miss rate.
    pub slope: f64,
}

/// Quality of a least-squares fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// The fitted line.
    pub model: LinearModel,
    /// Number of (miss rate, elasticity) pairs.
    pub points: usize,
    /// Coefficient of determination R².
    pub r_squared: f64,
    /// Mean absolute error of the fitted elasticities.
    pub mean_abs_error: f64,
}

impl LinearModel {
    /// The predicted elasticity at a miss rate.
    pub fn predict(&self, miss_rate: f64) -> f64 {
        self.intercept + self.slope * miss_rate
    }

    /// Ordinary least squares through `(miss rate, elasticity)` pairs.
    pub fn fit(points: &[(f64, f64)]) -> Result<Fit> {
        let n = points.len();
        if n < 2 {
            return Err(Error::input(format!(
                "fit: need at least 2 (miss rate, elasticity) pairs, got {n}"
            )));
        }
        let nf = n as f64;
        let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
        let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
        if sxx <= 0.0 {
            return Err(Error::input(
                "fit: all miss rates are equal; a slope cannot be fitted",
            ));
        }
        let slope = sxy / sxx;
        let model = LinearModel {
            intercept: my - slope * mx,
            slope,
        };
        let sse: f64 = points
            .iter()
            .map(|p| (p.1 - model.predict(p.0)).powi(2))
            .sum();
        let mae = points
            .iter()
            .map(|p| (p.1 - model.predict(p.0)).abs())
            .sum::<f64>()
            / nf;
        Ok(Fit {
            model,
            points: n,
            r_squared: if syy > 0.0 { 1.0 - sse / syy } else { 1.0 },
            mean_abs_error: mae,
        })
    }
}

/// Parameters of the first-order analytic model behind [`ElasticityModel::default`].
pub mod default_model {
    /// Cycles per instruction when no access misses the last-level cache.
    pub const BASE_CPI: f64 = 1.0;
    /// Effective stall per last-level miss, ns (≈100 ns DRAM latency with two misses
    /// overlapped on average).
    pub const MISS_PENALTY_NS: f64 = 50.0;
    /// The frequency region, GHz (the paper's machine 1).
    pub const F1_GHZ: f64 = 1.6;
    /// Upper end of the frequency region, GHz.
    pub const F2_GHZ: f64 = 1.87;
    /// Miss rates the line is fitted over: 0 … this, in 101 steps.
    pub const MAX_MISS_RATE: f64 = 0.01;

    /// Completion time per instruction (ns) at `f_ghz` with `miss_rate` misses/instruction.
    pub fn time_per_instruction(miss_rate: f64, f_ghz: f64) -> f64 {
        BASE_CPI / f_ghz + miss_rate * MISS_PENALTY_NS
    }
}

/// Sensitivity class thresholds (the paper's defaults: −0.9 and −0.75).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Elasticity below this is highly sensitive.
    pub high_below: f64,
    /// Elasticity above this is insensitive.
    pub insensitive_above: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            high_below: -0.9,
            insensitive_above: -0.75,
        }
    }
}

/// Clock-speed sensitivity class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Elasticity < high threshold.
    High,
    /// Between the thresholds.
    Moderate,
    /// Elasticity > insensitive threshold.
    Insensitive,
}

impl Class {
    /// The elasticity a signature states for a class when only the class is known
    /// (inline scenario signatures, the paper's Table 3 classes): −1.0 for highly
    /// sensitive, the middle of the default moderate band (−0.825), −0.5 for
    /// insensitive.
    pub fn representative(self) -> f64 {
        match self {
            Class::High => -1.0,
            Class::Moderate => -0.825,
            Class::Insensitive => -0.5,
        }
    }
}

impl Thresholds {
    /// The class of an elasticity.
    pub fn classify(&self, elasticity: f64) -> Class {
        if elasticity < self.high_below {
            Class::High
        } else if elasticity > self.insensitive_above {
            Class::Insensitive
        } else {
            Class::Moderate
        }
    }
}

/// Miss rate → elasticity: one line for all cache configurations, optionally overridden
/// per configuration (keyed by its display name, e.g. "4MB/16"), plus class thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElasticityModel {
    /// The line used for configurations without their own.
    pub all: LinearModel,
    /// Per-configuration lines.
    #[serde(default)]
    pub per_config: BTreeMap<String, LinearModel>,
    /// Class thresholds.
    #[serde(default)]
    pub thresholds: Thresholds,
    /// Where the model came from.
    #[serde(default)]
    pub source: String,
}

impl Default for ElasticityModel {
    /// The least-squares line through the analytic model
    /// T(F) = BASE_CPI/F + miss rate · MISS_PENALTY_NS, whose arc elasticity on
    /// [F1, F2] is sampled at miss rates 0 … MAX_MISS_RATE (see [`default_model`]).
    /// It is not the paper's regression (whose coefficients the paper does not state);
    /// replace it with `hetsched signature fit` on measured elasticities.
    fn default() -> Self {
        use default_model::*;
        let points: Vec<(f64, f64)> = (0..=100)
            .map(|i| {
                let m = MAX_MISS_RATE * f64::from(i) / 100.0;
                let t1 = time_per_instruction(m, F1_GHZ);
                let t2 = time_per_instruction(m, F2_GHZ);
                let e = arc_elasticity(t1, F1_GHZ, t2, F2_GHZ).expect("positive inputs");
                (m, e)
            })
            .collect();
        let fit = LinearModel::fit(&points).expect("101 distinct points");
        ElasticityModel {
            all: fit.model,
            per_config: BTreeMap::new(),
            thresholds: Thresholds::default(),
            source: "default: analytic CPI model (base CPI 1, 50 ns per miss, [1.6, 1.87] GHz)"
                .into(),
        }
    }
}

/// The largest elasticity model file (`--model`) read, bytes (real ones take 100).
pub const MAX_MODEL_BYTES: u64 = 1 << 20;
/// The largest CSV `signature fit` reads, bytes (a row per measured program and cache).
pub const MAX_FIT_CSV_BYTES: u64 = 64 << 20;

impl ElasticityModel {
    /// The model in the JSON file at `path` (as `signature fit --out` writes it); the
    /// documented default without one.
    pub fn load(path: Option<&Path>) -> Result<ElasticityModel> {
        let Some(p) = path else {
            return Ok(ElasticityModel::default());
        };
        let text = files::read_text(p, "an elasticity model", MAX_MODEL_BYTES)?;
        serde_json::from_str(&text)
            .map_err(|e| Error::input(format!("{}: not an elasticity model: {e}", p.display())))
    }

    /// The predicted elasticity for a configuration at a miss rate, clamped to ≤ 0: a
    /// line extrapolated past its data would otherwise claim that a faster clock
    /// slows a very memory-bound program down.
    pub fn predict(&self, config_name: &str, miss_rate: f64) -> f64 {
        self.line_for(config_name).predict(miss_rate).min(0.0)
    }

    /// The line for a configuration.
    pub fn line_for(&self, config_name: &str) -> LinearModel {
        self.per_config
            .get(config_name)
            .copied()
            .unwrap_or(self.all)
    }
}

/// Fit a model from CSV text with a header naming the columns `miss_rate` and
/// `elasticity` and optionally `cache` (e.g. "4MB/16"). One line is fitted through all
/// rows; each cache named by at least two rows with distinct miss rates also gets its
/// own. Returns the model and the fits (`"all"` first).
pub fn fit_file(csv: &Path) -> Result<(ElasticityModel, Vec<(String, Fit)>)> {
    let text = files::read_text(csv, "a CSV of measured pairs", MAX_FIT_CSV_BYTES)?;
    fit_csv(&text, &csv.display().to_string())
}

/// [`fit_file`] on text, `name` naming it in errors.
pub fn fit_csv(text: &str, name: &str) -> Result<(ElasticityModel, Vec<(String, Fit)>)> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let (_, header) = lines
        .next()
        .ok_or_else(|| Error::input(format!("{name}: empty file (expected a CSV header)")))?;
    let cols: Vec<String> = header.split(',').map(|c| c.trim().to_lowercase()).collect();
    let col = |c: &str| cols.iter().position(|x| x == c);
    let (mi, ei) = match (col("miss_rate"), col("elasticity")) {
        (Some(m), Some(e)) => (m, e),
        _ => {
            return Err(Error::input(format!(
                "{name}:1: header must name the columns `miss_rate` and `elasticity` (and optionally `cache`)"
            )))
        }
    };
    let ci = col("cache");
    let mut all = Vec::new();
    let mut by_cache: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |idx: usize, what: &str| -> Result<f64> {
            f.get(idx)
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    Error::input(format!("{name}:{}: field `{what}` is not a number", i + 1))
                })
        };
        let p = (num(mi, "miss_rate")?, num(ei, "elasticity")?);
        all.push(p);
        if let Some(c) = ci.and_then(|c| f.get(c)).filter(|c| !c.is_empty()) {
            by_cache.entry(c.to_string()).or_default().push(p);
        }
    }
    let overall = LinearModel::fit(&all).map_err(|e| Error::input(format!("{name}: {e}")))?;
    let mut fits = vec![("all".to_string(), overall)];
    let mut model = ElasticityModel {
        all: overall.model,
        per_config: BTreeMap::new(),
        thresholds: Thresholds::default(),
        source: format!("fitted from {name} ({} points)", all.len()),
    };
    for (cache, pts) in by_cache {
        if let Ok(f) = LinearModel::fit(&pts) {
            model.per_config.insert(cache.clone(), f.model);
            fits.push((cache, f));
        }
    }
    Ok((model, fits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_worked_example_vpr() {
        let e = arc_elasticity(58.17, 1.87, 65.33, 1.6).unwrap();
        assert_eq!(format!("{e:.2}"), "-0.75");
        // Order of the two points does not matter.
        let e2 = arc_elasticity(65.33, 1.6, 58.17, 1.87).unwrap();
        assert!((e - e2).abs() < 1e-12);
    }

    #[test]
    fn elasticity_rejects_bad_input() {
        assert!(arc_elasticity(1.0, 2.0, 1.0, 2.0).is_err());
        assert!(arc_elasticity(-1.0, 2.0, 1.0, 3.0).is_err());
    }

    #[test]
    fn fit_recovers_a_line() {
        let pts: Vec<_> = (0..10)
            .map(|i| (i as f64 * 0.001, -1.0 + 30.0 * i as f64 * 0.001))
            .collect();
        let f = LinearModel::fit(&pts).unwrap();
        assert!((f.model.intercept + 1.0).abs() < 1e-9);
        assert!((f.model.slope - 30.0).abs() < 1e-6);
        assert!((f.r_squared - 1.0).abs() < 1e-9);
        assert!(LinearModel::fit(&[(0.1, -1.0)]).is_err());
        assert!(LinearModel::fit(&[(0.1, -1.0), (0.1, -0.5)]).is_err());
    }

    #[test]
    fn paper_thresholds() {
        let t = Thresholds::default();
        assert_eq!(t.classify(-1.0), Class::High);
        assert_eq!(t.classify(-0.9), Class::Moderate);
        assert_eq!(t.classify(-0.8), Class::Moderate);
        assert_eq!(t.classify(-0.75), Class::Moderate);
        assert_eq!(t.classify(-0.5), Class::Insensitive);
    }

    #[test]
    fn default_model_is_compute_bound_at_zero_misses() {
        let m = ElasticityModel::default();
        // With no misses T ∝ 1/F: elasticity -1; misses make it less elastic.
        assert!(
            m.all.intercept < -0.9 && m.all.intercept > -1.05,
            "{:?}",
            m.all
        );
        assert!(m.all.slope > 0.0);
    }

    #[test]
    fn fit_csv_fits_overall_and_per_cache() {
        let csv = "cache,miss_rate,elasticity\n# comment\n4MB/16,0.0,-1.0\n4MB/16,0.01,-0.6\n1MB/8,0.0,-0.9\n1MB/8,0.02,-0.5\n";
        let (m, fits) = fit_csv(csv, "pairs.csv").unwrap();
        assert_eq!(fits[0].0, "all");
        assert_eq!(fits[0].1.points, 4);
        let l = m.line_for("4MB/16");
        assert!((l.intercept + 1.0).abs() < 1e-12 && (l.slope - 40.0).abs() < 1e-9);
        assert!(m.per_config.contains_key("1MB/8"));
        let e = fit_csv("a,b\n1,2\n", "x.csv").unwrap_err();
        assert!(e.to_string().starts_with("x.csv:1:"), "{e}");
        let e = fit_csv("miss_rate,elasticity\n0.1,-1\n0.2,oops\n", "x.csv").unwrap_err();
        assert!(e.to_string().starts_with("x.csv:3:"), "{e}");
    }
}

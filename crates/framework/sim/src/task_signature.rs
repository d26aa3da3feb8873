//! A task's architectural signature in a scenario file, for policies that read one
//! (`signature`): either the path of a signature file (`hetsched signature profile -o`,
//! relative to the scenario's directory) or an inline prediction for programs that
//! were never profiled.
//!
//! ```toml
//! signature = "signatures/gzip.json"
//! signature = { class = "high" }                 # elasticity: the class's representative
//! signature = { elasticity = -0.6 }              # class by the paper's thresholds
//! signature = { miss_rate = 0.004 }              # elasticity by the default model
//! ```
//!
//! Why a module of its own: the scenario parser stays a parser of numbers and names,
//! and the one place that turns a file's words into a `hetsched-sig` document is here.
//! Inline predictions become a signature stating the same prediction for all 24
//! standard cache configurations ([`Signature::uniform`]), so the policy's per-core
//! cache matching works unchanged. A class given together with an elasticity must agree
//! with the thresholds (−0.9, −0.75): a contradiction is an input error, not a guess.
//! The signature is what the scheduler sees, never the time model (a task's speed
//! follows `memory_bound` and the machine), as in the paper, where the prediction and
//! the program's true behaviour may differ.

use hetsched_core::error::in_range;
use hetsched_core::{Error, Result};
use hetsched_sig::elasticity::{Class, ElasticityModel};
use hetsched_sig::signature::Signature;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

/// The accepted ranges of inline signature fields and signature files.
pub mod limits {
    /// `elasticity`: completion time never grows with the clock, and no program is
    /// more than 10× as elastic as a purely compute-bound one (−1).
    pub const ELASTICITY: (f64, f64) = (-10.0, 0.0);
    /// `miss_rate`: last-level misses per instruction.
    pub const MISS_RATE: (f64, f64) = (0.0, 1.0);
    /// A signature file's size (real ones are a few kB).
    pub const MAX_FILE_BYTES: u64 = hetsched_sig::signature::MAX_FILE_BYTES;
}

/// The inline form's fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Inline {
    #[serde(default)]
    class: Option<Class>,
    #[serde(default)]
    elasticity: Option<f64>,
    #[serde(default)]
    miss_rate: Option<f64>,
}

/// The signature document (JSON) of a scenario's `signature` value; `field` names it
/// in errors (e.g. "scenario.toml: task[0].signature"), `base` is the scenario's
/// directory.
pub fn load(value: &toml::Value, field: &str, base: &Path) -> Result<Arc<str>> {
    let bad = |what: String| Error::input(format!("{field}: {what}"));
    let sig = match value {
        toml::Value::String(path) => {
            Signature::load(&base.join(path)).map_err(|e| bad(e.to_string()))?
        }
        toml::Value::Table(_) => {
            let inline = Inline::deserialize(value.clone()).map_err(|e| bad(e.to_string()))?;
            Signature::uniform(
                "scenario (inline)",
                "scenario file (inline)",
                predict(&inline, field)?,
            )
        }
        other => {
            return Err(bad(format!(
                "expected a signature file's path or an inline table {{ class, elasticity, miss_rate }}, got a {}",
                other.type_str()
            )))
        }
    };
    Ok(sig.to_json().into())
}

/// (class, elasticity, miss rate) from the inline fields; see the module documentation.
fn predict(i: &Inline, field: &str) -> Result<(Class, f64, f64)> {
    let model = ElasticityModel::default();
    let miss_rate = match i.miss_rate {
        Some(m) => {
            let (lo, hi) = limits::MISS_RATE;
            Some(in_range(format!("{field}.miss_rate"), m, lo, hi)?)
        }
        None => None,
    };
    let elasticity = match i.elasticity {
        Some(e) => {
            let (lo, hi) = limits::ELASTICITY;
            Some(in_range(format!("{field}.elasticity"), e, lo, hi)?)
        }
        None => miss_rate.map(|m| model.all.predict(m).min(0.0)),
    };
    let class = match (i.class, elasticity) {
        (Some(c), Some(e)) if model.thresholds.classify(e) != c => {
            let t = model.thresholds;
            return Err(Error::input(format!(
                "{field}.class: {} contradicts elasticity {e} (high below {}, insensitive above {})",
                format!("{c:?}").to_lowercase(),
                t.high_below,
                t.insensitive_above
            )));
        }
        (Some(c), _) => c,
        (None, Some(e)) => model.thresholds.classify(e),
        (None, None) => {
            return Err(Error::input(format!(
                "{field}: expected at least one of class (\"high\", \"moderate\", \"insensitive\"), elasticity or miss_rate"
            )))
        }
    };
    let elasticity = elasticity.unwrap_or_else(|| class.representative());
    Ok((class, elasticity, miss_rate.unwrap_or(0.0)))
}

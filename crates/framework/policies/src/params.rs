//! Policy specs: `name` or `name:key=value,key=value`, with typed parameters.
//!
//! A policy reads each parameter once, with its default, accepted range and a line of
//! description; [`Params`] records them as it goes, so `hetsched policies` lists exactly
//! what the builders accept, with no second list to keep in step.

use hetsched_core::error::num;
use hetsched_core::{Error, Result};
use std::ops::RangeInclusive;

/// The parameters of one policy spec, consumed key by key.
pub struct Params {
    policy: String,
    pairs: Vec<(String, String)>,
    known: Vec<ParamInfo>,
}

/// What a policy accepts for one parameter, as its builder read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub key: &'static str,
    pub about: &'static str,
    pub default: String,
    /// The accepted values, e.g. `[0.1, 1000]` or `0 or 1`.
    pub accepts: String,
}

impl Params {
    /// Splits `name:k=v,...` into the name and its parameters.
    pub fn parse(spec: &str) -> Result<(String, Params)> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let name = name.trim().to_string();
        let mut pairs = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((k, v)) = item.split_once('=') else {
                return Err(Error::input(format!(
                    "policy {name}: parameter {item:?} is not key=value"
                )));
            };
            let k = k.trim();
            if pairs.iter().any(|(seen, _)| seen == k) {
                return Err(Error::input(format!(
                    "policy {name}: parameter {k:?} given twice"
                )));
            }
            pairs.push((k.to_string(), v.trim().to_string()));
        }
        Ok((
            name.clone(),
            Params {
                policy: name,
                pairs,
                known: Vec::new(),
            },
        ))
    }

    /// The parameters read so far, in the order the builder read them.
    pub fn known(&self) -> &[ParamInfo] {
        &self.known
    }

    fn take<T: std::str::FromStr + std::fmt::Display>(
        &mut self,
        key: &'static str,
        about: &'static str,
        default: T,
        accepts: String,
        what: &str,
    ) -> Result<T> {
        let shown = default.to_string();
        self.take_shown(key, about, default, shown, accepts, what)
    }

    /// `take` with the default as `hetsched policies` should print it.
    fn take_shown<T: std::str::FromStr>(
        &mut self,
        key: &'static str,
        about: &'static str,
        default: T,
        shown: String,
        accepts: String,
        what: &str,
    ) -> Result<T> {
        self.known.push(ParamInfo {
            key,
            about,
            default: shown,
            accepts,
        });
        match self.pairs.iter().position(|(k, _)| k == key) {
            None => Ok(default),
            Some(i) => {
                let (_, v) = self.pairs.remove(i);
                v.parse().map_err(|_| {
                    Error::input(format!(
                        "policy {}: {key}: expected {what}, got {v:?}",
                        self.policy
                    ))
                })
            }
        }
    }

    /// A number in `range`; with `off`, 0 is accepted too (the parameter's "off").
    /// Ranges keep parameters from making a policy spin (a 0 ns slice) or overflow.
    pub fn f64_in(
        &mut self,
        key: &'static str,
        about: &'static str,
        default: f64,
        range: RangeInclusive<f64>,
        off: bool,
    ) -> Result<f64> {
        let zero = if off { "0 (off) or " } else { "" };
        let accepts = format!("{zero}[{}, {}]", num(*range.start()), num(*range.end()));
        let v: f64 = self.take(key, about, default, accepts, "a number")?;
        if range.contains(&v) || (off && v == 0.0) {
            return Ok(v);
        }
        Err(Error::input(format!(
            "policy {}: {key}: expected {zero}a number in [{}, {}], got {}",
            self.policy,
            num(*range.start()),
            num(*range.end()),
            num(v)
        )))
    }

    /// An integer in `range`.
    pub fn u64_in(
        &mut self,
        key: &'static str,
        about: &'static str,
        default: u64,
        range: RangeInclusive<u64>,
    ) -> Result<u64> {
        let accepts = format!("an integer in [{}, {}]", range.start(), range.end());
        let v: u64 = self.take(key, about, default, accepts, "an integer")?;
        if range.contains(&v) {
            return Ok(v);
        }
        Err(Error::input(format!(
            "policy {}: {key}: expected an integer in [{}, {}], got {v}",
            self.policy,
            range.start(),
            range.end()
        )))
    }

    /// A switch: 0 or 1.
    pub fn flag(&mut self, key: &'static str, about: &'static str, default: bool) -> Result<bool> {
        let accepts = "0 or 1".to_string();
        match self.take(key, about, u8::from(default), accepts, "0 or 1")? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::input(format!(
                "policy {}: {key}: expected 0 or 1, got {v}",
                self.policy
            ))),
        }
    }

    /// An integer in `[0, max]`.
    pub fn u64_upto(
        &mut self,
        key: &'static str,
        about: &'static str,
        default: u64,
        max: u64,
    ) -> Result<u64> {
        let accepts = format!("[0, {max}]");
        let v = self.take(key, about, default, accepts, "a non-negative integer")?;
        if v <= max {
            return Ok(v);
        }
        Err(Error::input(format!(
            "policy {}: {key}: expected an integer in [0, {max}], got {v}",
            self.policy
        )))
    }

    /// A seed: any 64-bit integer, by default the run's (`--seed`, the scenario's).
    pub fn seed(&mut self, about: &'static str, run_seed: u64) -> Result<u64> {
        let accepts = format!("[0, {}]", u64::MAX);
        let shown = "the run's seed".to_string();
        self.take_shown(
            "seed",
            about,
            run_seed,
            shown,
            accepts,
            "a non-negative integer",
        )
    }

    /// Fails on parameters no one asked for.
    pub fn finish(&self) -> Result<()> {
        match self.pairs.first() {
            None => Ok(()),
            Some((k, _)) => Err(Error::input(format!(
                "policy {}: unknown parameter {k:?} (known: {})",
                self.policy,
                if self.known.is_empty() {
                    "none".to_string()
                } else {
                    let keys: Vec<&str> = self.known.iter().map(|p| p.key).collect();
                    keys.join(", ")
                }
            ))),
        }
    }
}

/// Milliseconds (as a float parameter) to integer nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

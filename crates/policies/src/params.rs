//! Policy specs: `name` or `name:key=value,key=value`, with typed parameters.

use hetsched_core::error::num;
use hetsched_core::{Error, Result};
use std::ops::RangeInclusive;

/// The parameters of one policy spec, consumed key by key.
pub struct Params {
    policy: String,
    pairs: Vec<(String, String)>,
    known: Vec<&'static str>,
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
            pairs.push((k.trim().to_string(), v.trim().to_string()));
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

    fn take<T: std::str::FromStr>(
        &mut self,
        key: &'static str,
        default: T,
        what: &str,
    ) -> Result<T> {
        self.known.push(key);
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
        default: f64,
        range: RangeInclusive<f64>,
        off: bool,
    ) -> Result<f64> {
        let v: f64 = self.take(key, default, "a number")?;
        if range.contains(&v) || (off && v == 0.0) {
            return Ok(v);
        }
        let zero = if off { "0 (off) or " } else { "" };
        Err(Error::input(format!(
            "policy {}: {key}: expected {zero}a number in [{}, {}], got {}",
            self.policy,
            num(*range.start()),
            num(*range.end()),
            num(v)
        )))
    }

    /// A switch: 0 or 1.
    pub fn flag(&mut self, key: &'static str, default: bool) -> Result<bool> {
        match self.take(key, u8::from(default), "0 or 1")? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::input(format!(
                "policy {}: {key}: expected 0 or 1, got {v}",
                self.policy
            ))),
        }
    }

    /// An integer in `[0, max]`.
    pub fn u64_upto(&mut self, key: &'static str, default: u64, max: u64) -> Result<u64> {
        let v = self.u64(key, default)?;
        if v <= max {
            return Ok(v);
        }
        Err(Error::input(format!(
            "policy {}: {key}: expected an integer in [0, {max}], got {v}",
            self.policy
        )))
    }

    pub fn u64(&mut self, key: &'static str, default: u64) -> Result<u64> {
        self.take(key, default, "a non-negative integer")
    }

    /// Fails on parameters no one asked for.
    pub fn finish(self) -> Result<()> {
        match self.pairs.first() {
            None => Ok(()),
            Some((k, _)) => Err(Error::input(format!(
                "policy {}: unknown parameter {k:?} (known: {})",
                self.policy,
                if self.known.is_empty() {
                    "none".to_string()
                } else {
                    self.known.join(", ")
                }
            ))),
        }
    }
}

/// Milliseconds (as a float parameter) to integer nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

//! The architectural signature: a versioned JSON document.

use crate::analysis::{Profile, BLOCK_BYTES};
use crate::buckets::{label, NUM_BUCKETS};
use crate::elasticity::{Class, ElasticityModel};
use crate::missrate::{miss_rate, CacheConfig};
use hetsched_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// The `format` field of every signature.
pub const FORMAT: &str = "hetsched-signature";
/// The current document version.
pub const VERSION: u32 = 1;
/// The largest signature file read, bytes (real ones are a few kB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// One bucket's count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketCount {
    /// The paper's label, e.g. "B(3,4)".
    pub bucket: String,
    /// Accesses in the bucket.
    pub count: u64,
}

/// Predictions for one cache configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigPrediction {
    /// Display name, e.g. "4MB/16".
    pub cache: String,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity.
    pub ways: u32,
    /// Estimated last-level misses per retired instruction.
    pub miss_rate: f64,
    /// Estimated clock-speed elasticity of completion time.
    pub elasticity: f64,
    /// Sensitivity class.
    pub class: Class,
}

/// A program's architectural signature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    /// Always [`FORMAT`].
    pub format: String,
    /// Document version ([`VERSION`]).
    pub version: u32,
    /// The profiled program (and arguments).
    pub program: String,
    /// Retired instructions.
    pub instructions: u64,
    /// Block accesses analysed.
    pub accesses: u64,
    /// Working set W in 64-byte blocks.
    pub working_set_blocks: u64,
    /// Block size in bytes (64).
    pub block_bytes: u64,
    /// SHARDS sampling rate, absent for exact analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_rate: Option<f64>,
    /// The 20 buckets in the paper's order.
    pub buckets: Vec<BucketCount>,
    /// Where the elasticity model came from.
    pub model: String,
    /// Predictions for each cache configuration.
    pub configs: Vec<ConfigPrediction>,
}

impl Signature {
    /// Build a signature from a profile for the given cache configurations.
    pub fn build(
        program: &str,
        profile: &Profile,
        configs: &[CacheConfig],
        model: &ElasticityModel,
    ) -> Self {
        let configs = configs
            .iter()
            .map(|&c| {
                let name = c.to_string();
                let m = miss_rate(profile, c);
                let e = model.predict(&name, m);
                ConfigPrediction {
                    cache: name,
                    size_bytes: c.size_bytes,
                    ways: c.ways,
                    miss_rate: m,
                    elasticity: e,
                    class: model.thresholds.classify(e),
                }
            })
            .collect();
        Signature {
            format: FORMAT.into(),
            version: VERSION,
            program: program.into(),
            instructions: profile.instructions,
            accesses: profile.accesses,
            working_set_blocks: profile.working_set_blocks,
            block_bytes: BLOCK_BYTES,
            sampling_rate: profile.sampling_rate,
            buckets: (0..NUM_BUCKETS)
                .map(|i| BucketCount {
                    bucket: label(i),
                    count: profile.buckets.0[i],
                })
                .collect(),
            model: model.source.clone(),
            configs,
        }
    }

    /// A signature without a trace (no buckets, no counts) that states one prediction
    /// for each of the standard 24 cache configurations: for scenario files and
    /// experiments that know a program's class or elasticity but have not profiled it.
    pub fn uniform(program: &str, model: &str, prediction: (Class, f64, f64)) -> Self {
        let (class, elasticity, miss_rate) = prediction;
        Signature {
            format: FORMAT.into(),
            version: VERSION,
            program: program.into(),
            instructions: 0,
            accesses: 0,
            working_set_blocks: 0,
            block_bytes: BLOCK_BYTES,
            sampling_rate: None,
            buckets: Vec::new(),
            model: model.into(),
            configs: CacheConfig::standard()
                .into_iter()
                .map(|c| ConfigPrediction {
                    cache: c.to_string(),
                    size_bytes: c.size_bytes,
                    ways: c.ways,
                    miss_rate,
                    elasticity,
                    class,
                })
                .collect(),
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a signature always serialises")
    }

    /// Parse and check format and version; `name` labels errors.
    pub fn from_json(text: &str, name: &str) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::input(format!("{name}: not JSON: {e}")))?;
        if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(Error::input(format!(
                "{name}: field `format` must be \"{FORMAT}\""
            )));
        }
        match v.get("version").and_then(|f| f.as_u64()) {
            Some(ver) if ver == u64::from(VERSION) => {}
            other => {
                return Err(Error::input(format!(
                    "{name}: field `version` is {other:?}; this hetsched reads version {VERSION}"
                )))
            }
        }
        serde_json::from_value(v).map_err(|e| Error::input(format!("{name}: {e}")))
    }

    /// Reads a signature file: a regular file of at most [`MAX_FILE_BYTES`] (a FIFO or a
    /// device is refused at once), checked as [`Signature::from_json`] does.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = hetsched_util::files::read_text(path, "a signature", MAX_FILE_BYTES)?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// The prediction for a configuration name such as "4MB/16".
    pub fn config(&self, cache: &str) -> Option<&ConfigPrediction> {
        self.configs.iter().find(|c| c.cache == cache)
    }
}

impl Signature {
    /// A plain-text summary: totals, buckets and the per-configuration table.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "program       {}", self.program);
        let _ = writeln!(s, "instructions  {}", self.instructions);
        let _ = writeln!(s, "accesses      {} (64-byte blocks)", self.accesses);
        let _ = writeln!(
            s,
            "working set   {} blocks ({:.2} MiB)",
            self.working_set_blocks,
            (self.working_set_blocks * self.block_bytes) as f64 / (1 << 20) as f64
        );
        if let Some(r) = self.sampling_rate {
            let _ = writeln!(s, "sampling      SHARDS R = {r}");
        }
        let _ = writeln!(s, "model         {}", self.model);
        let total: u64 = self.buckets.iter().map(|b| b.count).sum::<u64>().max(1);
        let _ = writeln!(s, "\n{:<18} {:>14} {:>8}", "bucket", "accesses", "share");
        for b in &self.buckets {
            let _ = writeln!(
                s,
                "{:<18} {:>14} {:>7.3}%",
                b.bucket,
                b.count,
                100.0 * b.count as f64 / total as f64
            );
        }
        let _ = writeln!(
            s,
            "\n{:<10} {:>16} {:>11} {:>12}",
            "cache", "misses/instr", "elasticity", "class"
        );
        for c in &self.configs {
            let _ = writeln!(
                s,
                "{:<10} {:>16.6e} {:>11.3} {:>12}",
                c.cache,
                c.miss_rate,
                c.elasticity,
                format!("{:?}", c.class).to_lowercase()
            );
        }
        s
    }
}

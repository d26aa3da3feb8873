//! The chip: a √N × √N mesh of tiles, each an in-order core with a native and a guest
//! context, a private L1 and an L2 slice that caches only the lines homed at the tile.
//!
//! Described by a TOML machine file (schema in docs/nuca.md); the paper's Table I is the
//! `shim-64` preset. All latencies are in core cycles.

use hetsched_cachesim::Geometry;
use hetsched_core::{Error, Result};
use hetsched_util::files;
use serde::Deserialize;

/// Largest chip: a 64 × 64 mesh (the simulator keeps an N² hop table).
pub const MAX_CORES: u32 = 4096;

/// Largest machine file, bytes: the schema's fields take a few hundred.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

hetsched_study::assumptions! { "shim";
    /// Core clock, GHz: converts Table I's DRAM figures (75 ns, 30 GB/s) to cycles. The
    /// paper gives no frequency.
    pub const FREQUENCY_GHZ: f64 = 1.0;
    /// Cache line bytes of L1 and L2. Not in Table I.
    pub const LINE_BYTES: u32 = 64;
    /// L1 hit latency, cycles. Not in Table I.
    pub const L1_HIT_CYCLES: u32 = 1;
    /// L2 hit latency after an L1 miss, cycles. Not in Table I.
    pub const L2_HIT_CYCLES: u32 = 7;
    /// Flits of a remote-access request: address and header in one 128-bit flit. Not in
    /// the paper.
    pub const REQUEST_FLITS: u32 = 1;
    /// Flits of a remote-access reply: a 64-bit word (or write acknowledgement) and
    /// header in one flit. Not in the paper.
    pub const REPLY_FLITS: u32 = 1;
}

/// The paper's Table I machine (its assumed values are the constants above; a test
/// checks the file agrees).
pub const SHIM_64_TOML: &str = include_str!("../../../../machines/shim-64.toml");

/// The on-chip network.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Cycles a flit needs per mesh hop.
    pub hop_cycles: u32,
    pub flit_bits: u32,
    /// Flits of a remote-access request (address + header).
    pub request_flits: u32,
    /// Flits of a remote-access reply (data word or write acknowledgement).
    pub reply_flits: u32,
}

/// What a thread migration moves.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Migration {
    /// Execution context plus predictor entry, in bits.
    pub context_bits: u32,
    /// Cycles to insert the arrived context into the destination pipeline.
    pub pipeline_insertion_cycles: u32,
}

/// One cache level of a tile.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheLevel {
    pub size_bytes: u64,
    pub ways: u32,
    pub line_bytes: u32,
    pub hit_cycles: u32,
}

impl CacheLevel {
    pub fn geometry(&self) -> Geometry {
        Geometry {
            size_bytes: self.size_bytes,
            ways: self.ways,
            line_bytes: self.line_bytes,
        }
    }
}

/// Off-chip memory.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Dram {
    pub latency_ns: f64,
    pub bandwidth_gbs: f64,
}

/// Page-to-home-core mapping.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    pub page_bytes: u64,
    /// How a page gets its home core (default: the paper's first touch).
    #[serde(default)]
    pub policy: PlacementPolicy,
}

/// Which core a page is homed at.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementPolicy {
    /// The paper's: the core where the first access after initialisation runs.
    #[default]
    FirstTouch,
    /// Page number modulo the core count, whoever uses it (the static address
    /// interleaving of a NUCA without an OS-managed page map; a controlled variant).
    Striped,
}

/// A tiled NUCA chip.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Chip {
    pub name: String,
    /// Number of tiles; a perfect square.
    pub cores: u32,
    pub frequency_ghz: f64,
    pub network: Network,
    pub migration: Migration,
    pub l1: CacheLevel,
    pub l2: CacheLevel,
    pub dram: Dram,
    pub placement: Placement,
}

impl Chip {
    /// The paper's Table I chip (64 cores).
    pub fn shim_64() -> Chip {
        Chip::from_toml(SHIM_64_TOML, "machines/shim-64.toml").expect("the preset is valid")
    }

    /// Parses and validates a machine file; `origin` names it in error messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Chip> {
        let chip: Chip =
            toml::from_str(text).map_err(|e| Error::input(format!("{origin}: {e}")))?;
        chip.validate()
            .map_err(|m| Error::input(format!("{origin}: {m}")))?;
        Ok(chip)
    }

    /// Reads a machine file: a regular file of at most [`MAX_FILE_BYTES`].
    pub fn load(path: &std::path::Path) -> Result<Chip> {
        let text = files::read_text(path, "a NUCA machine file", MAX_FILE_BYTES)?;
        Chip::from_toml(&text, &path.display().to_string())
    }

    /// The same chip with `cores` tiles (used by the property tests and sweeps).
    pub fn with_cores(&self, cores: u32) -> Result<Chip> {
        let mut c = self.clone();
        c.cores = cores;
        c.validate().map_err(Error::input)?;
        Ok(c)
    }

    fn validate(&self) -> std::result::Result<(), String> {
        let side = self.side();
        if self.cores == 0 || side * side != self.cores || self.cores > MAX_CORES {
            return Err(format!(
                "field `cores` = {}: expected a perfect square (a √N × √N mesh) ≤ {MAX_CORES}",
                self.cores
            ));
        }
        if !self.frequency_ghz.is_finite() || self.frequency_ghz <= 0.0 {
            return Err("field `frequency_ghz`: expected a positive number".into());
        }
        let n = &self.network;
        if n.flit_bits == 0 || n.request_flits == 0 || n.reply_flits == 0 {
            return Err(
                "[network]: `flit_bits`, `request_flits`, `reply_flits` must be ≥ 1".into(),
            );
        }
        for (name, level) in [("l1", &self.l1), ("l2", &self.l2)] {
            if level.geometry().sets().is_none() {
                return Err(format!(
                    "[{name}]: size {} B, {} ways, {} B lines is not a power-of-two set count",
                    level.size_bytes, level.ways, level.line_bytes
                ));
            }
        }
        let (lat, bw) = (self.dram.latency_ns, self.dram.bandwidth_gbs);
        if !lat.is_finite() || lat < 0.0 || !bw.is_finite() || bw <= 0.0 {
            return Err("[dram]: expected latency_ns ≥ 0 and bandwidth_gbs > 0".into());
        }
        if !self.placement.page_bytes.is_power_of_two() {
            return Err("[placement]: `page_bytes` must be a power of two".into());
        }
        Ok(())
    }

    /// Mesh side length √N.
    pub fn side(&self) -> u32 {
        (self.cores as f64).sqrt().round() as u32
    }

    /// XY-routing hop count between two tiles (Manhattan distance on the mesh).
    pub fn hops(&self, a: u16, b: u16) -> u32 {
        let s = self.side();
        let (ax, ay) = (a as u32 % s, a as u32 / s);
        let (bx, by) = (b as u32 % s, b as u32 / s);
        ax.abs_diff(bx) + ay.abs_diff(by)
    }

    /// Latency of an `flits`-flit message over `hops` hops: the head crosses the mesh,
    /// the body follows one flit per cycle (wormhole, no contention).
    pub fn message_cycles(&self, hops: u32, flits: u32) -> u64 {
        (hops * self.network.hop_cycles + flits) as u64
    }

    /// Flits of a migrated context: ⌈context / flit⌉ (the context load/unload latency).
    pub fn context_flits(&self) -> u32 {
        self.migration.context_bits.div_ceil(self.network.flit_bits)
    }

    /// Network part of a remote access (request + reply) between tiles `hops` apart.
    pub fn remote_round_trip_cycles(&self, hops: u32) -> u64 {
        self.message_cycles(hops, self.network.request_flits)
            + self.message_cycles(hops, self.network.reply_flits)
    }

    /// Cycles from leaving one core to executing on a core `hops` away.
    pub fn migration_cycles(&self, hops: u32) -> u64 {
        self.message_cycles(hops, self.context_flits())
            + self.migration.pipeline_insertion_cycles as u64
    }

    /// DRAM latency in cycles.
    pub fn dram_latency_cycles(&self) -> f64 {
        self.dram.latency_ns * self.frequency_ghz
    }

    /// Cycles the DRAM channel is busy transferring one L2 line.
    pub fn dram_line_cycles(&self) -> f64 {
        self.l2.line_bytes as f64 / (self.dram.bandwidth_gbs / self.frequency_ghz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_matches_table_one() {
        let c = Chip::shim_64();
        assert_eq!((c.cores, c.side()), (64, 8));
        assert_eq!(c.context_flits(), 26); // the paper's 26-cycle load/unload
        assert_eq!(c.hops(0, 63), 14);
        assert_eq!(c.hops(9, 18), 2);
        assert_eq!(c.dram_latency_cycles(), 75.0);
    }

    #[test]
    fn preset_uses_the_declared_assumptions() {
        let c = Chip::shim_64();
        assert_eq!(c.frequency_ghz, FREQUENCY_GHZ);
        assert_eq!((c.l1.line_bytes, c.l2.line_bytes), (LINE_BYTES, LINE_BYTES));
        assert_eq!(
            (c.l1.hit_cycles, c.l2.hit_cycles),
            (L1_HIT_CYCLES, L2_HIT_CYCLES)
        );
        assert_eq!(
            (c.network.request_flits, c.network.reply_flits),
            (REQUEST_FLITS, REPLY_FLITS)
        );
        assert_eq!(c.placement.policy, PlacementPolicy::FirstTouch);
        assert_eq!(assumptions().len(), 6);
    }

    #[test]
    fn striped_placement_is_read_and_unknown_policies_are_rejected() {
        let striped = SHIM_64_TOML.replace(
            "page_bytes = 4096",
            "page_bytes = 4096\npolicy = \"striped\"",
        );
        assert_eq!(
            Chip::from_toml(&striped, "x.toml")
                .unwrap()
                .placement
                .policy,
            PlacementPolicy::Striped
        );
        let bad = SHIM_64_TOML.replace(
            "page_bytes = 4096",
            "page_bytes = 4096\npolicy = \"random\"",
        );
        let e = Chip::from_toml(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("policy"), "{e}");
    }

    #[test]
    fn bad_files_name_the_field() {
        let bad = SHIM_64_TOML.replace("cores = 64", "cores = 48");
        let e = Chip::from_toml(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("cores"), "{e}");
        let bad = SHIM_64_TOML.replace("ways = 2", "ways = 3");
        let e = Chip::from_toml(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("[l1]"), "{e}");
        assert!(Chip::shim_64().with_cores(4096).is_ok());
        assert!(Chip::shim_64().with_cores(128 * 128).is_err());
        let bad = SHIM_64_TOML.replace("hop_cycles", "hop_cyclez");
        assert!(Chip::from_toml(&bad, "x.toml").is_err());
    }
}

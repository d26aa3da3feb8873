//! hetsched's scheduling policies and the registry that builds them from a spec string
//! `name` or `name:key=value,...`.

pub mod affinity;
pub mod cfs;
pub mod dmda;
pub mod fcfs;
pub mod load;
pub mod params;
pub mod random;
pub mod recording;
pub mod ws;

use hetsched_core::policy::Policy;
use hetsched_core::{Error, Result};
use params::Params;

/// A registered policy. Each policy's module declares its own (`REGISTERED`); adding a
/// policy touches its file and [`REGISTRY`] only, and every test suite that iterates the
/// registry (the simulator's property test, the arbiter's tests, the conformance of the
/// two engines) covers it.
pub struct Registered {
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// Specs the test suites run: the default (`name` alone) first, then variants that
    /// reach other paths of the policy.
    pub test_specs: &'static [&'static str],
    build: fn(&str, Params, u64) -> Result<Box<dyn Policy>>,
}

impl Registered {
    /// The spec with every parameter at its default.
    pub fn default_spec(&self) -> &'static str {
        self.test_specs[0]
    }
}

/// The registered policies, in the order the CLI lists them.
pub const REGISTRY: &[Registered] = &[
    fcfs::REGISTERED,
    cfs::REGISTERED,
    random::REGISTERED,
    ws::REGISTERED,
    dmda::REGISTERED,
    affinity::REGISTERED,
];

/// The registered policies.
pub fn registry() -> impl Iterator<Item = &'static Registered> {
    REGISTRY.iter()
}

/// Every spec the test suites run, over all registered policies.
pub fn test_specs() -> impl Iterator<Item = &'static str> {
    registry().flat_map(|r| r.test_specs.iter().copied())
}

/// Builds a policy from its spec; `seed` is the default for seeded policies.
pub fn build(spec: &str, seed: u64) -> Result<Box<dyn Policy>> {
    let (name, p) = Params::parse(spec)?;
    let Some(r) = registry().find(|r| r.name == name) else {
        let names: Vec<&str> = registry().map(|r| r.name).collect();
        return Err(Error::input(format!(
            "unknown policy {name:?} (known: {})",
            names.join(", ")
        )));
    };
    (r.build)(spec.trim(), p, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        build(spec, 0).err().expect("an error").to_string()
    }

    #[test]
    fn every_registered_test_spec_builds_and_names_itself() {
        for r in registry() {
            assert_eq!(r.default_spec(), r.name);
            for spec in r.test_specs {
                assert_eq!(build(spec, 0).unwrap().name(), *spec);
            }
        }
    }

    #[test]
    fn specs_parse_with_typed_parameters_and_clear_errors() {
        assert_eq!(
            build("cfs:latency_ms=12, balance_ms=0", 0).unwrap().name(),
            "cfs:latency_ms=12, balance_ms=0"
        );
        assert_eq!(build("random:seed=3", 0).unwrap().name(), "random:seed=3");
        assert!(err("lottery").contains("unknown policy \"lottery\" (known: fcfs, cfs"));
        assert!(err("cfs:latency=3")
            .contains("policy cfs: unknown parameter \"latency\" (known: latency_ms"));
        assert!(err("cfs:latency_ms=fast").contains("latency_ms: expected a number, got \"fast\""));
        assert!(err("cfs:latency_ms=-1").contains("non-negative"));
        assert!(err("fcfs:x=1").contains("unknown parameter \"x\" (known: none)"));
        assert!(err("dmda:learn").contains("not key=value"));
        assert_eq!(
            build("affinity:gran_ms=0,fcfs=1,acc_limit=5", 0)
                .unwrap()
                .name(),
            "affinity:gran_ms=0,fcfs=1,acc_limit=5"
        );
        assert!(err("affinity:limit=3").contains("unknown parameter \"limit\" (known: gran_ms"));
        assert!(err("affinity:gran_ms=-4").contains("non-negative"));
    }
}

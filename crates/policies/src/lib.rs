//! hetsched's scheduling policies and the registry that builds them from a spec string
//! `name` or `name:key=value,...`.

pub mod affinity;
pub mod cfs;
pub mod dmda;
pub mod fcfs;
pub mod load;
pub mod params;
pub mod queue_index;
pub mod random;
pub mod ws;

use hetsched_core::policy::Policy;
use hetsched_core::{Error, Result};
use params::{ParamInfo, Params};

/// A registered policy: its name, what it does in one line, and how to build it from
/// its parameters (each builder reads every parameter it accepts through [`Params`]).
pub struct Registered {
    pub name: &'static str,
    pub about: &'static str,
    build: fn(spec: &str, p: &mut Params, seed: u64) -> Result<Box<dyn Policy>>,
}

/// Every policy hetsched knows. Adding a policy is its module and one entry here.
pub const REGISTRY: &[Registered] = &[
    Registered {
        name: "fcfs",
        about: "first come, first served from one central queue",
        build: |_, _, _| Ok(Box::new(fcfs::Fcfs)),
    },
    Registered {
        name: "cfs",
        about: "Linux CFS: per-unit vruntime queues, time slices, count-based balancing; blind to unit speed",
        build: |spec, p, _| Ok(Box::new(cfs::Cfs::from_params(spec, p)?)),
    },
    Registered {
        name: "random",
        about: "uniformly random compatible unit (seeded)",
        build: |spec, p, seed| Ok(Box::new(random::Random::from_params(spec, p, seed)?)),
    },
    Registered {
        name: "ws",
        about: "work stealing: push to the least-loaded queue, idle units steal from the longest",
        build: |_, _, _| Ok(Box::new(ws::WorkStealing::default())),
    },
    Registered {
        name: "dmda",
        about: "minimum expected completion time with a learned per-task-type performance model",
        build: |spec, p, _| Ok(Box::new(dmda::Dmda::from_params(spec, p)?)),
    },
    Registered {
        name: "affinity",
        about: "Beisel et al.: per-unit queues, affinity placement with queue limits, checkpoint time-sharing, late-binding load balancer",
        build: |spec, p, _| Ok(Box::new(affinity::AffinityPolicy::from_params(spec, p)?)),
    },
];

fn lookup(name: &str) -> Result<&'static Registered> {
    REGISTRY.iter().find(|r| r.name == name).ok_or_else(|| {
        let names: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        Error::input(format!(
            "unknown policy {name:?} (known: {})",
            names.join(", ")
        ))
    })
}

/// Builds a policy from its spec; `seed` is the default for seeded policies.
pub fn build(spec: &str, seed: u64) -> Result<Box<dyn Policy>> {
    let (name, mut p) = Params::parse(spec)?;
    let policy = (lookup(&name)?.build)(spec.trim(), &mut p, seed)?;
    p.finish()?;
    Ok(policy)
}

impl Registered {
    /// The parameters the policy accepts, with defaults and ranges, as its builder
    /// reads them.
    pub fn params(&self) -> Vec<ParamInfo> {
        let (_, mut p) = Params::parse(self.name).expect("a bare name parses");
        (self.build)(self.name, &mut p, 0).expect("every policy builds with its defaults");
        p.known().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        build(spec, 0).err().expect("an error").to_string()
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
        assert!(err("cfs:latency_ms=-1").contains("expected a number in [0.1, 1000], got -1"));
        assert!(err("cfs:min_granularity_ms=0")
            .contains("min_granularity_ms: expected a number in [0.1, 1000]"));
        assert!(err("cfs:balance_ms=0.001").contains("expected 0 (off) or a number in [0.1, 1e6]"));
        assert!(err("affinity:cpu_check_ms=0").contains("cpu_check_ms"));
        assert!(err("affinity:fcfs=2").contains("fcfs: expected 0 or 1, got 2"));
        assert!(err("fcfs:x=1").contains("unknown parameter \"x\" (known: none)"));
        assert!(err("dmda:learn").contains("not key=value"));
        assert_eq!(
            build("affinity:gran_ms=0,fcfs=1,acc_limit=5", 0)
                .unwrap()
                .name(),
            "affinity:gran_ms=0,fcfs=1,acc_limit=5"
        );
        assert!(err("affinity:limit=3").contains("unknown parameter \"limit\" (known: gran_ms"));
        assert!(
            err("affinity:gran_ms=-4").contains("gran_ms: expected a number in [0, 1e9], got -4")
        );
        assert!(err("affinity:bonus=NaN").contains("bonus"));
    }

    /// What `hetsched policies` prints is what the builders accept: each listed
    /// parameter builds at its default, and unlisted ones are refused.
    #[test]
    fn listed_parameters_are_the_accepted_ones() {
        for r in REGISTRY {
            for info in r.params() {
                let default = if info.key == "seed" {
                    "7"
                } else {
                    &info.default
                };
                let spec = format!("{}:{}={}", r.name, info.key, default);
                assert!(build(&spec, 0).is_ok(), "{spec}");
                assert!(!info.about.is_empty() && !info.accepts.is_empty());
                // Outside the range (negative numbers never parse, or are below every range).
                assert!(build(&format!("{}:{}=-1", r.name, info.key), 0).is_err());
            }
            let unknown = build(&format!("{}:no_such_key=1", r.name), 0)
                .err()
                .unwrap();
            assert!(
                unknown.to_string().contains("unknown parameter"),
                "{unknown}"
            );
        }
        let cfs: Vec<&str> = lookup("cfs")
            .unwrap()
            .params()
            .iter()
            .map(|p| p.key)
            .collect();
        assert_eq!(cfs, ["latency_ms", "min_granularity_ms", "balance_ms"]);
        let latency = &lookup("cfs").unwrap().params()[0];
        assert_eq!(
            (latency.default.as_str(), latency.accepts.as_str()),
            ("6", "[0.1, 1000]")
        );
    }
}

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
use params::Params;

/// Registered policies: name and one-line description.
pub const POLICIES: &[(&str, &str)] = &[
    ("fcfs", "first come, first served from one central queue"),
    ("cfs", "Linux CFS: per-unit vruntime queues, time slices, count-based balancing; blind to unit speed"),
    ("random", "uniformly random compatible unit (seeded)"),
    ("ws", "work stealing: push to the least-loaded queue, idle units steal from the longest"),
    ("dmda", "minimum expected completion time with a learned per-task-type performance model"),
    ("affinity", "Beisel et al.: per-unit queues, affinity placement with queue limits, checkpoint time-sharing, late-binding load balancer"),
];

/// Builds a policy from its spec; `seed` is the default for seeded policies.
pub fn build(spec: &str, seed: u64) -> Result<Box<dyn Policy>> {
    let (name, p) = Params::parse(spec)?;
    let spec = spec.trim();
    Ok(match name.as_str() {
        "fcfs" => {
            p.finish()?;
            Box::new(fcfs::Fcfs)
        }
        "cfs" => Box::new(cfs::Cfs::from_params(spec, p)?),
        "random" => Box::new(random::Random::from_params(spec, p, seed)?),
        "ws" => {
            p.finish()?;
            Box::new(ws::WorkStealing::default())
        }
        "dmda" => Box::new(dmda::Dmda::from_params(spec, p)?),
        "affinity" => Box::new(affinity::AffinityPolicy::from_params(spec, p)?),
        _ => {
            let names: Vec<&str> = POLICIES.iter().map(|p| p.0).collect();
            return Err(Error::input(format!(
                "unknown policy {name:?} (known: {})",
                names.join(", ")
            )));
        }
    })
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
}

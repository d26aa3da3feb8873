//! hetsched's scheduling policies and the registry that builds them from a spec string
//! `name` or `name:key=value,...`.

pub mod affinity;
pub mod amp_factors;
pub mod cfs;
pub mod cfs_cap;
pub mod dmda;
pub mod dmdas;
pub mod eager;
pub mod eevdf;
pub mod fair;
pub mod fcfs;
pub mod heft;
pub mod io_affinity;
pub mod load;
pub mod lws;
pub mod numa_amp;
pub mod params;
pub mod queue_index;
pub mod random;
pub mod recording;
pub mod signature;
pub mod ws;

use hetsched_core::policy::Policy;
use hetsched_core::{Error, Result};
use params::{ParamInfo, Params};

/// A registered policy. Each policy's module declares its own (`REGISTERED`); adding a
/// policy touches its file and this one only (its module and its line in [`REGISTRY`];
/// its builder returns [`Built::dynamic`], or, with its type listed in [`Built`], the
/// engine compiled for it), and every test suite that iterates the registry (the simulator's property
/// test, the arbiter's tests, the conformance of the two engines) covers it. Its builder
/// reads every parameter it accepts through [`Params`], so that `hetsched policies` lists
/// them ([`Registered::params`]).
pub struct Registered {
    pub name: &'static str,
    /// One line: what it models, then what it does. What it models comes first, before
    /// the first `:` (the label), as an operating system or runtime with its version
    /// (`Linux CFS as of 2.6.23–6.5`, `StarPU 1.3's dmda`), a paper with its venue and
    /// year (`Ding et al. (JSA 2014)`), or `simple baseline` for one that models no
    /// system: every result is read against its baselines, so a reader of `hetsched
    /// policies` must know what each stands for (a test holds every entry to it).
    pub about: &'static str,
    /// Specs the test suites run: the default (`name` alone) first, then variants that
    /// reach other paths of the policy.
    pub test_specs: &'static [&'static str],
    build: fn(spec: &str, p: &mut Params, seed: u64) -> Result<Built>,
}

impl Registered {
    /// The spec with every parameter at its default.
    pub fn default_spec(&self) -> &'static str {
        self.test_specs[0]
    }

    /// The parameters the policy accepts, with defaults and ranges, as its builder
    /// reads them.
    pub fn params(&self) -> Vec<ParamInfo> {
        let (_, mut p) = Params::parse(self.name).expect("a bare name parses");
        (self.build)(self.name, &mut p, 0).expect("every policy builds with its defaults");
        p.known().to_vec()
    }
}

/// The registered policies, in the order the CLI lists them.
pub const REGISTRY: &[Registered] = &[
    fcfs::REGISTERED,
    cfs::REGISTERED,
    cfs_cap::REGISTERED,
    eevdf::REGISTERED,
    random::REGISTERED,
    ws::REGISTERED,
    dmda::REGISTERED,
    dmdas::REGISTERED,
    heft::REGISTERED,
    eager::REGISTERED,
    lws::REGISTERED,
    affinity::REGISTERED,
    numa_amp::REGISTERED,
    io_affinity::REGISTERED,
    signature::REGISTERED,
];

/// What to do with a policy of the registry, given its type ([`Built::visit`]).
pub trait PolicyVisitor {
    type Output;
    fn visit<P: Policy + ?Sized>(self, policy: &mut P) -> Self::Output;
}

/// Declares [`Built`] over the policy types: one list, so that a variant cannot be missed
/// in a `match`.
macro_rules! policy_types {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// A policy the registry built, its type known. Why: the simulator's engine is
        /// generic over its policy, and given the type ([`Built::visit`]) it is compiled
        /// for each, the policy's calls inlined into it instead of made through `dyn
        /// Policy`'s table: `hetsched bench sim` measured cfs and fcfs 4–5 % faster
        /// (docs/dev/simulator-performance.md). What needs no speed takes the box ([`build`]).
        pub enum Built {
            $($variant($ty),)*
            /// A policy of any type, behind `dyn Policy` ([`Built::dynamic`]): what a new
            /// policy's builder returns until its type is listed here for speed.
            Dynamic(Box<dyn Policy>),
        }

        $(impl From<$ty> for Built {
            fn from(policy: $ty) -> Built {
                Built::$variant(policy)
            }
        })*

        impl Built {
            /// `policy` behind `dyn Policy`: a registered policy needs no line in
            /// `policy_types!` to run; listing its type there compiles the engine for it.
            pub fn dynamic(policy: impl Policy + 'static) -> Built {
                Built::Dynamic(Box::new(policy))
            }

            /// Hands the policy, with its type, to `visitor`.
            pub fn visit<V: PolicyVisitor>(self, visitor: V) -> V::Output {
                match self {
                    $(Built::$variant(mut p) => visitor.visit(&mut p),)*
                    Built::Dynamic(mut p) => visitor.visit(&mut *p),
                }
            }

            /// The policy behind `dyn Policy` (what [`build`] returns).
            pub fn boxed(self) -> Box<dyn Policy> {
                match self {
                    $(Built::$variant(p) => Box::new(p),)*
                    Built::Dynamic(p) => p,
                }
            }
        }
    };
}

// The types the registered policies build (cfs-cap is a `Cfs`).
policy_types! {
    Fcfs(fcfs::Fcfs),
    Cfs(cfs::Cfs),
    Eevdf(eevdf::Eevdf),
    Random(random::Random),
    WorkStealing(ws::WorkStealing),
    Dmda(dmda::Dmda),
    Affinity(affinity::AffinityPolicy),
    NumaAmp(numa_amp::NumaAmp),
    IoAffinity(io_affinity::IoAffinity),
    Signature(signature::SignaturePolicy),
}

/// The registered policies.
pub fn registry() -> impl Iterator<Item = &'static Registered> {
    REGISTRY.iter()
}

/// Every spec the test suites run, over all registered policies.
pub fn test_specs() -> impl Iterator<Item = &'static str> {
    registry().flat_map(|r| r.test_specs.iter().copied())
}

fn lookup(name: &str) -> Result<&'static Registered> {
    registry().find(|r| r.name == name).ok_or_else(|| {
        let names: Vec<&str> = registry().map(|r| r.name).collect();
        Error::input(format!(
            "unknown policy {name:?} (known: {})",
            names.join(", ")
        ))
    })
}

/// Builds a policy from its spec; `seed` is the default for seeded policies.
pub fn build(spec: &str, seed: u64) -> Result<Box<dyn Policy>> {
    Ok(build_typed(spec, seed)?.boxed())
}

/// Checks a spec as [`build`] reads it (the name, every parameter and its range), for a
/// front that refuses bad input before it starts anything: the builder is the one reader
/// of a spec's parameters, so checking builds the policy (empty: cheap) and drops it.
pub fn check(spec: &str) -> Result<()> {
    build_typed(spec, 0).map(drop)
}

/// Builds a policy from its spec, its type known ([`Built`]).
pub fn build_typed(spec: &str, seed: u64) -> Result<Built> {
    let (name, mut p) = Params::parse(spec)?;
    let policy = (lookup(&name)?.build)(spec.trim(), &mut p, seed)?;
    p.finish()?;
    Ok(policy)
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

    /// A policy whose type [`Built`] does not list runs behind `dyn Policy`, the same
    /// policy: what a visitor sees of it is what it sees of the typed one.
    #[test]
    fn a_dynamic_policy_is_visited_and_boxed_as_the_typed_one() {
        struct Name;
        impl PolicyVisitor for Name {
            type Output = String;
            fn visit<P: Policy + ?Sized>(self, policy: &mut P) -> String {
                policy.name().to_string()
            }
        }
        let typed = build_typed("cfs:latency_ms=12", 0).unwrap();
        let Ok(Built::Cfs(cfs)) = build_typed("cfs:latency_ms=12", 0) else {
            panic!("cfs builds a Cfs")
        };
        let dynamic = Built::dynamic(cfs);
        assert!(matches!(dynamic, Built::Dynamic(_)));
        assert_eq!(typed.visit(Name), "cfs:latency_ms=12");
        assert_eq!(dynamic.visit(Name), "cfs:latency_ms=12");
        assert_eq!(
            Built::dynamic(fcfs::Fcfs::named("fcfs")).boxed().name(),
            "fcfs"
        );
    }

    #[test]
    fn check_refuses_what_build_refuses_in_the_same_words() {
        for spec in test_specs() {
            assert!(check(spec).is_ok(), "{spec}");
        }
        for bad in [
            "lottery",
            "cfs:latency=3",
            "cfs:latency_ms=-1",
            "random:seed=x",
        ] {
            assert_eq!(check(bad).unwrap_err().to_string(), err(bad));
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
        assert!(err("cfs:latency_ms=-1").contains("expected a number in [0.1, 1000], got -1"));
        assert!(err("cfs:min_granularity_ms=0")
            .contains("min_granularity_ms: expected a number in [0.1, 1000]"));
        assert!(err("cfs:balance_ms=0.001").contains("expected 0 (off) or a number in [0.1, 1e6]"));
        assert!(err("affinity:cpu_check_ms=0").contains("cpu_check_ms"));
        assert!(err("affinity:fcfs=2").contains("fcfs: expected 0 or 1, got 2"));
        assert!(err("fcfs:x=1").contains("unknown parameter \"x\" (known: none)"));
        assert!(err("dmda:learn").contains("not key=value"));
        assert_eq!(
            err("cfs:latency_ms=1,latency_ms=2"),
            "policy cfs: parameter \"latency_ms\" given twice"
        );
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

    /// Whether `about`'s label (the text before its first `:`) names what the policy
    /// models: a system with a version (`Linux` or `StarPU`, then a number with a dot),
    /// a paper's authors with a year in parentheses, or `simple baseline`.
    fn names_what_it_models(about: &str) -> bool {
        let Some((label, _)) = about.split_once(':') else {
            return false;
        };
        let versioned = |system: &str| {
            label.find(system).is_some_and(|at| {
                let after: Vec<char> = label[at + system.len()..].chars().collect();
                after
                    .windows(3)
                    .any(|w| w[0].is_ascii_digit() && w[1] == '.' && w[2].is_ascii_digit())
            })
        };
        let dated = |open: usize| {
            label[open..].find(')').is_some_and(|close| {
                label[open..open + close]
                    .split(|c: char| !c.is_ascii_digit())
                    .any(|y| y.len() == 4 && (y.starts_with("19") || y.starts_with("20")))
            })
        };
        let paper = (label.contains(" et al.") || label.contains(" & "))
            && label.match_indices('(').any(|(open, _)| dated(open));
        let simple = label == "simple baseline" || label.starts_with("simple baseline,");
        versioned("Linux ") || versioned("StarPU ") || paper || simple
    }

    #[test]
    fn every_policy_says_what_it_models() {
        for r in registry() {
            assert!(
                names_what_it_models(r.about),
                "policy {}: its `about` must start with what it models (Linux/StarPU and a version, a paper with its year, or \"simple baseline\"): {:?}",
                r.name,
                r.about
            );
        }
        // Labels that say what a policy does, not what it models, are refused.
        for unlabelled in [
            "first come, first served from one central queue",
            "Linux CFS: per-unit vruntime queues, time slices",
            "Beisel et al.: per-unit queues, affinity placement",
            "minimum expected completion time with a per-task-type model (StarPU 1.3)",
            "Shelepov & Fedorova: bind each class to a set of cores (2008)",
            "a simple baseline of ours: random",
        ] {
            assert!(!names_what_it_models(unlabelled), "{unlabelled}");
        }
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
        assert_eq!(
            cfs,
            ["latency_ms", "min_granularity_ms", "balance_ms", "newidle"]
        );
        let eevdf: Vec<&str> = lookup("eevdf")
            .unwrap()
            .params()
            .iter()
            .map(|p| p.key)
            .collect();
        assert_eq!(
            eevdf,
            ["base_slice_ms", "scale_slice", "balance_ms", "newidle"]
        );
        assert!(err("eevdf:base_slice_ms=0")
            .contains("policy eevdf: base_slice_ms: expected a number in [0.1, 1000], got 0"));
        assert!(err("eevdf:scale_slice=2").contains("scale_slice: expected 0 or 1, got 2"));
        let latency = &lookup("cfs").unwrap().params()[0];
        assert_eq!(
            (latency.default.as_str(), latency.accepts.as_str()),
            ("6", "[0.1, 1000]")
        );
    }
}

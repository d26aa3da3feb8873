//! Fuzzing the simulator's inputs: scenario files and policy specs built from absurd
//! values (NaN, ±inf, 1e300, 1e-300, 2^64 - 1, ...) and raw bytes. Whatever the input,
//! parsing must not panic and must fail with a one-line input error naming the file,
//! and a run of what parses must end (Ok, or an input error at its event limit or time
//! horizon) within its event limit.
//!
//! CI runs `HETSCHED_FUZZ_CASES` cases per target (default 64); a longer run:
//! `HETSCHED_FUZZ_CASES=100000 cargo nextest run -p hetsched-sim --test fuzz_inputs`.

use hetsched_core::Error;
use hetsched_sim::scenario::Scenario;
use proptest::prelude::*;
use std::path::Path;

/// Events a fuzzed run may take: keeps every case short.
const MAX_EVENTS: u64 = 20_000;

fn cases() -> u32 {
    std::env::var("HETSCHED_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// A number as TOML text: mostly absurd, sometimes ordinary.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "-0.0",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e300",
            "1e-300",
            "1e12",
            "1e9",
            "1e6",
            "0.000001",
            "18446744073709551615",
            "4294967295",
            "9223372036854775807",
            "-9e18",
        ])
        .prop_map(str::to_string),
        (0.0f64..10.0).prop_map(|v| format!("{v}")),
        (0u64..100).prop_map(|v| v.to_string()),
    ]
}

/// One `key = value` line, or nothing.
fn field(key: &'static str) -> impl Strategy<Value = String> {
    prop::option::of(number())
        .prop_map(move |v| v.map_or(String::new(), |v| format!("{key} = {v}\n")))
}

fn kind_fields() -> impl Strategy<Value = String> {
    (
        field("memory_bound"),
        field("mem_bandwidth_gbs"),
        field("bytes_in"),
        field("numa_home"),
        field("weight"),
        field("instructions_per_s"),
        field("llc_mpki"),
        field("memory_bytes"),
        prop::option::of(any::<bool>())
            .prop_map(|b| b.map_or(String::new(), |b| format!("first_touch = {b}\n"))),
        prop::option::of((number(), number())).prop_map(|p| {
            p.map_or(String::new(), |(c, g)| {
                format!("affinity = {{ cpu = {c}, gpu = {g} }}\n")
            })
        }),
        prop::option::of(number()).prop_map(|c| {
            c.map_or(String::new(), |c| {
                format!("checkpoint_ms = {{ gpu = {c} }}\n")
            })
        }),
        prop::option::of(number())
            .prop_map(|s| s.map_or(String::new(), |s| format!("speed = {{ gpu = {s} }}\n"))),
    )
        .prop_map(|(a, b, c, d, e, f, g, h, i, j, k, l)| {
            [a, b, c, d, e, f, g, h, i, j, k, l].concat()
        })
}

fn scenario_text() -> impl Strategy<Value = String> {
    let head = (
        field("checkpoint_cost_ms"),
        prop::option::of((number(), number())),
    );
    let task = (number(), field("arrival"), field("count"), kind_fields())
        .prop_map(|(w, a, c, k)| format!("[[task]]\nwork = {w}\n{a}{c}{k}"));
    let size = prop_oneof![
        number().prop_map(|v| format!("{{ dist = \"fixed\", value = {v} }}")),
        (number(), number())
            .prop_map(|(a, b)| format!("{{ dist = \"uniform\", min = {a}, max = {b} }}")),
        number().prop_map(|v| format!("{{ dist = \"exponential\", mean = {v} }}")),
    ];
    let generator = (number(), number(), field("start"), size, number(), kind_fields()).prop_map(
        |(n, r, st, sz, sh, k)| {
            format!("[[generator]]\ncount = {n}\nrate = {r}\n{st}size = {sz}\n[[generator.mix]]\nshare = {sh}\n{k}")
        },
    );
    (
        head,
        prop::collection::vec(task, 0..3),
        prop::collection::vec(generator, 0..2),
    )
        .prop_map(|((cost, end), tasks, gens)| {
            let end = end.map_or(String::new(), |(t, e)| {
                format!("end = {{ max_time_s = {t}, max_events = {e} }}\n")
            });
            format!(
                "machine = \"beisel\"\n{cost}{end}{}{}",
                tasks.concat(),
                gens.concat()
            )
        })
}

/// Runs what parsed under `specs`, each ending within the event limit.
fn run_all(mut s: Scenario, specs: &[&str]) -> Result<(), TestCaseError> {
    let limit = s.config.max_events.unwrap_or(MAX_EVENTS).min(MAX_EVENTS);
    s.config.max_events = Some(limit);
    if s.check_limits().is_err() {
        return Ok(());
    }
    for spec in specs {
        match hetsched_sim::Simulation::of(&s).record_spec(spec, s.seed) {
            Ok((_, summary)) => prop_assert!(summary.events <= limit),
            Err(Error::Input(m)) => {
                prop_assert!(
                    m.contains("event limit") || m.contains("horizon"),
                    "{spec}: {m}"
                )
            }
            Err(e) => prop_assert!(false, "{spec}: runtime error {e}"),
        }
    }
    Ok(())
}

fn input_error(e: &Error) -> Result<(), TestCaseError> {
    let Error::Input(m) = e else {
        return Err(TestCaseError::fail(format!("not an input error: {e}")));
    };
    prop_assert!(m.starts_with("fuzz.toml"), "{m}");
    prop_assert_eq!(m.lines().count(), 1, "{}", m);
    Ok(())
}

/// Every registered policy at its defaults: a new policy is fuzzed as it registers.
fn default_specs() -> Vec<&'static str> {
    hetsched_policies::registry()
        .map(|r| r.default_spec())
        .collect()
}

/// Every registered policy's name, and one no policy has.
fn policy_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = hetsched_policies::registry().map(|r| r.name).collect();
    names.push("x");
    names
}

/// Every parameter any registered policy reads, and two malformed keys.
fn param_keys() -> Vec<&'static str> {
    let mut keys: Vec<&str> = hetsched_policies::registry()
        .flat_map(|r| r.params())
        .map(|p| p.key)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.extend(["=", ""]);
    keys
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn scenario_files_never_panic_and_runs_stay_bounded(text in scenario_text()) {
        match Scenario::parse(&text, "fuzz.toml", "fuzz", Path::new(".")) {
            Ok(s) => run_all(s, &default_specs())?,
            Err(e) => input_error(&e)?,
        }
    }

    #[test]
    fn scenario_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = Scenario::parse(&text, "fuzz.toml", "fuzz", Path::new(".")) {
            input_error(&e)?;
        }
    }

    #[test]
    fn policy_specs_never_panic_and_runs_stay_bounded(
        name in prop::sample::select(policy_names()),
        params in prop::collection::vec((prop::sample::select(param_keys()), number()), 0..4),
    ) {
        let pairs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let spec = format!("{name}:{}", pairs.join(","));
        match hetsched_policies::build(&spec, 1) {
            Ok(_) => {
                let text = "machine = \"beisel\"\n[[task]]\nwork = 0.5\ncount = 40\naffinity = { cpu = 1, gpu = 2 }\ncheckpoint_ms = { gpu = 5 }\n";
                let s = Scenario::parse(text, "fuzz.toml", "fuzz", Path::new(".")).unwrap();
                run_all(s, &[&spec])?;
            }
            Err(Error::Input(m)) => prop_assert_eq!(m.lines().count(), 1, "{}", m),
            Err(e) => prop_assert!(false, "{spec}: runtime error {e}"),
        }
    }
}

//! `hetsched policies`, the list `daemon --help` and `simulate --help` point to.

mod common;
use common::{assert_input_error, hetsched};

#[test]
fn policies_lists_every_registered_policy_with_its_parameters() {
    let out = hetsched(&["policies", "--json"]);
    assert!(out.status.success());
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let registry: Vec<&str> = hetsched_policies::REGISTRY.iter().map(|r| r.name).collect();
    assert_eq!(names, registry);
    let cfs = &list[1];
    assert_eq!(cfs["params"][1]["key"], "min_granularity_ms");
    assert_eq!(cfs["params"][1]["default"], "0.75");
    assert_eq!(cfs["params"][1]["accepts"], "[0.1, 1000]");
    // The range printed is the range enforced.
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../scenarios/hand.toml");
    assert_input_error(
        &hetsched(&["simulate", scenario, "--policy", "cfs:min_granularity_ms=0"]),
        &["min_granularity_ms", "[0.1, 1000]"],
    );
    let text = hetsched(&["policies"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("affinity  Beisel et al. (CAOS 2012)"),
        "{text}"
    );
    // Each line starts with what the policy models (the registry's test holds them all).
    assert!(
        text.contains("cfs       Linux CFS as of 2.6.23–6.5:"),
        "{text}"
    );
    let help = hetsched(&["daemon", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("hetsched policies"));
}

//! hetsched's discrete-event simulator: the engine, the speed model, scenario files,
//! reports and traces.

pub mod bench;
pub mod calendar;
pub mod engine;
pub mod io;
pub mod report;
pub mod run_ends;
pub mod scenario;
pub mod speed;
pub mod stream;
pub mod task;
pub mod task_signature;
pub mod trace;

pub use engine::{run, Config, RunSummary};
pub use task::{SimTask, Workload};

use hetsched_core::machine::{Machine, UnitGranularity};
use hetsched_core::Result;

/// A machine from the text of a TOML machine file, with PU units.
pub fn machine_from_toml(text: &str, origin: &str) -> Result<Machine> {
    let mut m = hetsched_topology::machine_file::parse(text, origin)?;
    m.derive_units(UnitGranularity::Pu);
    Ok(m)
}

/// Runs one policy (a registry spec) on a scenario and records every event.
/// `on_task` is called with each task as it arrives (progress reporting).
pub fn run_policy(
    scenario: &scenario::Scenario,
    spec: &str,
    seed: u64,
    on_task: &mut dyn FnMut(&SimTask),
) -> Result<(hetsched_core::record::Record, RunSummary)> {
    let mut policy = hetsched_policies::build(spec, seed)?;
    run_with(scenario, spec, policy.as_mut(), on_task)
}

/// Runs a policy object (one not in the registry, e.g. written in Python) on a scenario
/// and records every event; `label` names the policy in the record.
pub fn run_with(
    scenario: &scenario::Scenario,
    label: &str,
    policy: &mut dyn hetsched_core::policy::Policy,
    on_task: &mut dyn FnMut(&SimTask),
) -> Result<(hetsched_core::record::Record, RunSummary)> {
    let m = &scenario.machine;
    let mut record = hetsched_core::record::Record::new(
        label,
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let summary = run_into(scenario, policy, on_task, &mut record)?;
    Ok((record, summary))
}

/// Runs a policy object on a scenario, its events going to `rec` (e.g. a
/// [`stream::StreamRecorder`], which writes the outputs as the run goes).
pub fn run_into<R: hetsched_core::record::Recorder>(
    scenario: &scenario::Scenario,
    policy: &mut dyn hetsched_core::policy::Policy,
    on_task: &mut dyn FnMut(&SimTask),
    rec: &mut R,
) -> Result<RunSummary> {
    let tasks = scenario.tasks().inspect(|t| on_task(t));
    run(&scenario.machine, policy, tasks, &scenario.config, rec)
}

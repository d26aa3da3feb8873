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
use hetsched_core::policy::Policy;
use hetsched_core::record::{Record, Recorder};
use hetsched_core::Result;
use hetsched_policies::PolicyVisitor;

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
) -> Result<(Record, RunSummary)> {
    let mut record = record_of(scenario, spec);
    let summary = run_into(scenario, spec, seed, on_task, &mut record)?;
    Ok((record, summary))
}

/// Runs a policy object (one not in the registry, e.g. written in Python) on a scenario
/// and records every event; `label` names the policy in the record.
pub fn run_with(
    scenario: &scenario::Scenario,
    label: &str,
    policy: &mut dyn Policy,
    on_task: &mut dyn FnMut(&SimTask),
) -> Result<(Record, RunSummary)> {
    let mut record = record_of(scenario, label);
    let tasks = scenario.tasks().inspect(|t| on_task(t));
    let summary = run(
        &scenario.machine,
        policy,
        tasks,
        &scenario.config,
        &mut record,
    )?;
    Ok((record, summary))
}

/// An empty record of a run of `label` on the scenario's machine.
fn record_of(scenario: &scenario::Scenario, label: &str) -> Record {
    let m = &scenario.machine;
    Record::new(
        label,
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    )
}

/// Runs a registry policy (its spec) on a scenario, its events going to `rec` (e.g. a
/// [`stream::StreamRecorder`], which writes the outputs as the run goes).
pub fn run_into<R: Recorder + ?Sized>(
    scenario: &scenario::Scenario,
    spec: &str,
    seed: u64,
    on_task: &mut dyn FnMut(&SimTask),
    rec: &mut R,
) -> Result<RunSummary> {
    let tasks = scenario.tasks().inspect(|t| on_task(t));
    run_spec(&scenario.machine, spec, seed, tasks, &scenario.config, rec)
}

/// Runs a registry policy (its spec; `seed` is the default of seeded policies) on
/// `machine` over `arrivals`, its events going to `rec`: [`run`] compiled for the
/// policy's own type ([`hetsched_policies::Built`]), its calls inlined into the engine.
/// `simulate`, the benches and [`run_policy`] run through here; the paper experiments'
/// own drivers, which need no speed, take the box (`hetsched_policies::build`).
pub fn run_spec<R, I>(
    machine: &Machine,
    spec: &str,
    seed: u64,
    arrivals: I,
    config: &Config,
    rec: &mut R,
) -> Result<RunSummary>
where
    R: Recorder + ?Sized,
    I: IntoIterator<Item = SimTask>,
{
    struct Run<'a, R: ?Sized, I> {
        machine: &'a Machine,
        arrivals: I,
        config: &'a Config,
        rec: &'a mut R,
    }
    impl<R: Recorder + ?Sized, I: IntoIterator<Item = SimTask>> PolicyVisitor for Run<'_, R, I> {
        type Output = Result<RunSummary>;
        fn visit<P: Policy>(self, policy: &mut P) -> Result<RunSummary> {
            run(self.machine, policy, self.arrivals, self.config, self.rec)
        }
    }
    let run = Run {
        machine,
        arrivals,
        config,
        rec,
    };
    hetsched_policies::build_typed(spec, seed)?.visit(run)
}

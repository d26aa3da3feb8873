//! hetsched's discrete-event simulator: the engine, the speed model, scenario files,
//! comparisons of policies on a scenario.

pub mod bench;
pub mod calendar;
pub mod compare;
pub mod engine;
pub mod graphs;
pub mod io;
pub mod run_ends;
pub mod scenario;
pub mod speed;
pub mod stream;
pub mod task;
pub mod task_signature;

pub use engine::{Config, RunSummary};
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

/// One simulation, the one way to start a run: a machine, the tasks arriving on it
/// (non-decreasing arrival times) and the engine's configuration, then a policy and a
/// recorder.
///
/// ```text
/// Simulation::of(&scenario)                 // or Simulation::new(&machine, tasks, &config)
///                                            // or Simulation::graph(&machine, &graph, &config)
///     .on_task(|t| ...)                      // optional: each task as it arrives (progress)
///     .run_spec("cfs", seed, &mut recorder)  // a registry policy, compiled for its type
///     .run(&mut policy, &mut recorder)       // or a policy object (a box, Python's)
///     .record_spec("cfs", seed)              // or either, keeping the whole run record
///     .record("label", &mut policy)
/// ```
///
/// `run_spec` is the engine compiled for the policy's own type
/// ([`hetsched_policies::Built`]), its calls inlined: `simulate`, the benches and the
/// scenario tests run through it; the paper experiments' drivers, which need no speed,
/// take a box (`hetsched_policies::build`).
pub struct Simulation<'a, I> {
    machine: &'a Machine,
    arrivals: I,
    graph: Option<&'a graphs::GraphTasks>,
    config: &'a Config,
}

impl<'a> Simulation<'a, scenario::Tasks<'a>> {
    /// The scenario's machine, its tasks (drawn as they arrive) and its configuration.
    pub fn of(scenario: &'a scenario::Scenario) -> Self {
        Simulation {
            machine: &scenario.machine,
            arrivals: scenario.tasks(),
            graph: scenario.graph.as_deref(),
            config: &scenario.config,
        }
    }
}

impl<'a> Simulation<'a, std::iter::Empty<SimTask>> {
    /// The tasks of `graph` on `machine` under `config`, each arriving once its
    /// predecessors have completed, its data moving between memory nodes
    /// (`hetsched_core::dataflow`).
    pub fn graph(machine: &'a Machine, graph: &'a graphs::GraphTasks, config: &'a Config) -> Self {
        Simulation {
            machine,
            arrivals: std::iter::empty(),
            graph: Some(graph),
            config,
        }
    }
}

impl<'a, I: IntoIterator<Item = SimTask>> Simulation<'a, I> {
    /// `arrivals` on `machine` under `config`.
    pub fn new(machine: &'a Machine, arrivals: I, config: &'a Config) -> Self {
        Simulation {
            machine,
            arrivals,
            graph: None,
            config,
        }
    }

    /// Calls `f` with each task as it arrives (progress reporting).
    pub fn on_task<F: FnMut(&SimTask)>(
        self,
        mut f: F,
    ) -> Simulation<'a, impl Iterator<Item = SimTask>> {
        Simulation {
            machine: self.machine,
            arrivals: self.arrivals.into_iter().inspect(move |t| f(t)),
            graph: self.graph,
            config: self.config,
        }
    }

    /// Runs a policy object, its events going to `rec`.
    pub fn run<P, R>(self, policy: &mut P, rec: &mut R) -> Result<RunSummary>
    where
        P: Policy + ?Sized,
        R: Recorder + ?Sized,
    {
        engine::run_with(
            self.machine,
            policy,
            self.arrivals,
            self.graph,
            self.config,
            rec,
        )
    }

    /// Runs a registry policy (its spec; `seed` is the default of seeded policies),
    /// compiled for its type, its events going to `rec` (e.g. a
    /// [`stream::StreamRecorder`], which writes the outputs as the run goes).
    pub fn run_spec<R: Recorder + ?Sized>(
        self,
        spec: &str,
        seed: u64,
        rec: &mut R,
    ) -> Result<RunSummary> {
        struct Run<'a, R: ?Sized, I> {
            sim: Simulation<'a, I>,
            rec: &'a mut R,
        }
        impl<R: Recorder + ?Sized, I: IntoIterator<Item = SimTask>> PolicyVisitor for Run<'_, R, I> {
            type Output = Result<RunSummary>;
            fn visit<P: Policy + ?Sized>(self, policy: &mut P) -> Result<RunSummary> {
                self.sim.run(policy, self.rec)
            }
        }
        let run = Run { sim: self, rec };
        hetsched_policies::build_typed(spec, seed)?.visit(run)
    }

    /// [`Self::run_spec`], keeping every event in a run record.
    pub fn record_spec(self, spec: &str, seed: u64) -> Result<(Record, RunSummary)> {
        let mut record = Record::of_machine(spec, self.machine);
        let summary = self.run_spec(spec, seed, &mut record)?;
        Ok((record, summary))
    }

    /// [`Self::run`], keeping every event in a run record; `label` names the policy
    /// there.
    pub fn record<P: Policy + ?Sized>(
        self,
        label: &str,
        policy: &mut P,
    ) -> Result<(Record, RunSummary)> {
        let mut record = Record::of_machine(label, self.machine);
        let summary = self.run(policy, &mut record)?;
        Ok((record, summary))
    }
}

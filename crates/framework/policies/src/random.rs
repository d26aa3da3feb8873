//! `random`: a simple baseline that models no particular system, the floor any informed
//! policy should beat. Each task goes to a uniformly random unit that can run it (seeded
//! ChaCha8), units run their own queue in FIFO order, tasks run to completion.
//!
//! Parameters: `seed` (default: the scenario's seed).

use crate::params::Params;
use hetsched_core::policy::{PickDecision, Policy, SubmitDecision, UnitId, View};
use hetsched_core::task::{QueueId, TaskId};
use hetsched_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "random",
    about: "simple baseline: uniformly random compatible unit (seeded)",
    test_specs: &["random"],
    build: |spec, p, seed| Ok(Random::from_params(spec, p, seed)?.into()),
};

pub struct Random {
    name: String,
    rng: ChaCha8Rng,
    candidates: Vec<UnitId>,
}

impl Random {
    pub fn from_params(spec: &str, p: &mut Params, default_seed: u64) -> Result<Random> {
        let seed = p.seed("seed of the choices", default_seed)?;
        Ok(Random {
            name: spec.to_string(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            candidates: Vec::new(),
        })
    }
}

impl Policy for Random {
    fn name(&self) -> &str {
        &self.name
    }
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        let aff = view.task(task).affinity;
        self.candidates.clear();
        self.candidates.extend(
            view.units()
                .iter()
                .filter(|u| aff.runs_on(u.kind))
                .map(|u| u.id),
        );
        if self.candidates.is_empty() {
            return SubmitDecision::Reject("no unit can run it".into());
        }
        let i = self.rng.random_range(0..self.candidates.len());
        SubmitDecision::Enqueue(QueueId::Unit(self.candidates[i]))
    }
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        match view.queue(unit).front() {
            Some(t) => PickDecision::Run(t),
            None => PickDecision::Idle,
        }
    }
}

//! A policy decorator that logs every call an engine makes and every answer: the
//! decision log. Two engines that drive the same policy through the same situations
//! produce the same log, which is how the simulator and the live daemon are checked
//! against each other (`crates/framework/live/tests/conformance.rs`).

use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId, View,
};
use hetsched_core::task::TaskId;
use std::sync::{Arc, Mutex};

/// One policy call, with the engine's time and the answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Submit {
        t_ns: u64,
        task: TaskId,
        answer: SubmitDecision,
    },
    Pick {
        t_ns: u64,
        unit: UnitId,
        answer: PickDecision,
    },
    TimeSlice {
        t_ns: u64,
        unit: UnitId,
        task: TaskId,
        answer: Option<u64>,
    },
    Checkpoint {
        t_ns: u64,
        task: TaskId,
        unit: UnitId,
        answer: CheckpointDecision,
    },
    Complete {
        t_ns: u64,
        task: TaskId,
        unit: UnitId,
    },
    Tick {
        t_ns: u64,
        samples: Vec<Sample>,
        answer: Vec<TickAction>,
    },
}

/// The decision log, shared with the decorator (which an engine may own).
pub type Log = Arc<Mutex<Vec<Call>>>;

/// Wraps a policy and logs its calls (see the module documentation).
pub struct Recording {
    inner: Box<dyn Policy>,
    log: Log,
}

impl Recording {
    /// The decorated policy and its log.
    pub fn new(inner: Box<dyn Policy>) -> (Recording, Log) {
        let log = Log::default();
        (
            Recording {
                inner,
                log: log.clone(),
            },
            log,
        )
    }

    fn push(&self, call: Call) {
        self.log.lock().expect("the log's lock").push(call);
    }
}

impl Policy for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        let answer = self.inner.submit(view, task);
        self.push(Call::Submit {
            t_ns: view.now_ns(),
            task,
            answer: answer.clone(),
        });
        answer
    }
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        let answer = self.inner.pick(view, unit);
        self.push(Call::Pick {
            t_ns: view.now_ns(),
            unit,
            answer,
        });
        answer
    }
    fn time_slice(&mut self, view: &View, unit: UnitId, task: TaskId) -> Option<u64> {
        let answer = self.inner.time_slice(view, unit, task);
        self.push(Call::TimeSlice {
            t_ns: view.now_ns(),
            unit,
            task,
            answer,
        });
        answer
    }
    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        let answer = self.inner.checkpoint(view, task, unit);
        self.push(Call::Checkpoint {
            t_ns: view.now_ns(),
            task,
            unit,
            answer,
        });
        answer
    }
    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        self.inner.complete(view, task, unit);
        self.push(Call::Complete {
            t_ns: view.now_ns(),
            task,
            unit,
        });
    }
    fn tick_interval(&self) -> Option<u64> {
        self.inner.tick_interval()
    }
    fn tick(&mut self, view: &View, samples: &[Sample]) -> Vec<TickAction> {
        let answer = self.inner.tick(view, samples);
        self.push(Call::Tick {
            t_ns: view.now_ns(),
            samples: samples.to_vec(),
            answer: answer.clone(),
        });
        answer
    }
    fn wants_samples(&self) -> bool {
        self.inner.wants_samples()
    }
    fn wants_models(&self) -> bool {
        self.inner.wants_models()
    }
    fn migrate_memory(&mut self, view: &View, task: TaskId, unit: UnitId) -> bool {
        self.inner.migrate_memory(view, task, unit)
    }
}

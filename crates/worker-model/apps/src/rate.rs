//! Measuring an implementation's throughput: run it on one grant for a time
//! budget, then read the work done from the checkpoint it writes back.

use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_util::host::pin_current_thread;
use hetsched_worker::{CpuMask, Grant, Step, Worker};
use std::time::{Duration, Instant};

/// Work done in a measured interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Work items (words, divisors) done.
    pub work: u64,
    /// Wall-clock seconds, from after `init` to after `free`.
    pub seconds: f64,
    /// Checkpoints reached.
    pub checkpoints: u64,
}

impl Rate {
    /// Work items per second.
    pub fn per_second(&self) -> f64 {
        self.work as f64 / self.seconds
    }
}

/// Run `worker`'s implementation for `grant.kind` from `checkpoint` until `budget`
/// has passed (checked at checkpoints) or the work is done; `work` reads the work
/// count from a checkpoint. One untimed warm-up checkpoint runs first (kernel
/// build, caches). CPU grants pin the thread as the runtime does.
pub fn measure<W: Worker>(
    worker: &W,
    grant: &Grant,
    checkpoint: &W::Checkpoint,
    budget: Duration,
    work: impl Fn(&W::Checkpoint) -> u64,
) -> Result<Rate> {
    let implementation = worker
        .implementation_for(grant.kind)
        .ok_or_else(|| Error::input(format!("no {} implementation", grant.kind)))?;
    let original = CpuMask::current()?;
    if grant.kind == UnitType::Cpu && !grant.cpus.is_empty() {
        pin_current_thread(&grant.cpus)?;
    }
    let result = (|| {
        let mut warm = implementation.init(checkpoint, grant)?;
        warm.main()?;
        let warmed = warm.free()?;
        let mut state = implementation.init(&warmed, grant)?;
        let start = Instant::now();
        let mut checkpoints = 0;
        while start.elapsed() < budget {
            match state.main()? {
                Step::Checkpoint => checkpoints += 1,
                Step::Done(_) => break,
            }
        }
        let end = state.free()?;
        Ok(Rate {
            work: work(&end) - work(&warmed),
            seconds: start.elapsed().as_secs_f64(),
            checkpoints,
        })
    })();
    original.apply()?;
    result
}

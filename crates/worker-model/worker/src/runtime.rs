//! The delegate-thread lifecycle (Figure 2): alloc → init → main* → re-request →
//! (free → alloc → init)* → done.

use crate::affinity::CpuMask;
use crate::model::{Grant, Step, Worker};
use crate::scheduler::{Rerequest, Scheduler};
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_util::host::pin_current_thread;

/// One stay on one granted unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The unit granted.
    pub grant: Grant,
    /// Checkpoints reached on it (the final `Done` step is not a checkpoint).
    pub checkpoints: u64,
}

/// The outcome of [`run`].
#[derive(Clone, Debug)]
pub struct RunReport<C, O> {
    /// The worker's result.
    pub output: O,
    /// The checkpoint written back by the last `free`.
    pub checkpoint: C,
    /// Every unit stay, in order.
    pub segments: Vec<Segment>,
}

/// Run `worker` from `checkpoint` to completion under `scheduler`.
///
/// On a CPU grant with a CPU list the calling thread is pinned to those PUs; on
/// other grants (and at the end) its original mask is restored, so that e.g. an
/// OpenCL runtime's threads are not confined to one core.
pub fn run<W: Worker, S: Scheduler + ?Sized>(
    worker: &W,
    scheduler: &mut S,
    checkpoint: W::Checkpoint,
) -> Result<RunReport<W::Checkpoint, W::Output>> {
    let original = CpuMask::current()?;
    let result = drive(worker, scheduler, checkpoint, &original);
    let restored = original.apply();
    let report = result?;
    restored?;
    Ok(report)
}

fn drive<W: Worker, S: Scheduler + ?Sized>(
    worker: &W,
    scheduler: &mut S,
    mut checkpoint: W::Checkpoint,
    original: &CpuMask,
) -> Result<RunReport<W::Checkpoint, W::Output>> {
    let meta = worker.meta_info();
    let mut segments = Vec::new();
    loop {
        let grant = scheduler.alloc(&meta)?;
        let implementation = match worker.implementation_for(grant.kind) {
            Some(i) if meta.affinity.runs_on(grant.kind) => i,
            _ => {
                scheduler.free()?;
                return Err(Error::input(format!(
                    "the worker has no {} implementation (its {} affinity is 0) but unit {} is {}",
                    grant.kind, grant.kind, grant.unit, grant.kind
                )));
            }
        };
        let stay = (|| {
            if grant.kind == UnitType::Cpu && !grant.cpus.is_empty() {
                pin_current_thread(&grant.cpus)?;
            } else {
                original.apply()?;
            }
            let mut state = implementation.init(&checkpoint, &grant)?;
            let mut reached = 0;
            let output = loop {
                match state.main()? {
                    Step::Done(output) => break Some(output),
                    Step::Checkpoint => {
                        reached += 1;
                        match scheduler.rerequest()? {
                            Rerequest::Keep => {}
                            Rerequest::Yield | Rerequest::Migrate(_) => break None,
                        }
                    }
                }
            };
            Ok((state.free()?, reached, output))
        })();
        let (written, reached, output) = match stay {
            Ok(stay) => stay,
            Err(e) => {
                // Do not keep a unit the worker can no longer use; the first error
                // is the one to report.
                let _ = scheduler.free();
                return Err(e);
            }
        };
        checkpoint = written;
        scheduler.free()?;
        segments.push(Segment {
            grant,
            checkpoints: reached,
        });
        if let Some(output) = output {
            return Ok(RunReport {
                output,
                checkpoint,
                segments,
            });
        }
    }
}

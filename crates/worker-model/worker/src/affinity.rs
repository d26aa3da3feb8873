//! Putting a worker thread's own CPU mask back after it ran pinned to granted PUs
//! (`hetsched_util::host` does the system calls and the pinning).

use hetsched_core::Result;
use hetsched_util::host::pin_current_thread;

/// A saved CPU affinity mask of the calling thread.
#[derive(Clone, Debug)]
pub struct CpuMask(Vec<usize>);

impl CpuMask {
    /// The calling thread's current mask.
    pub fn current() -> Result<Self> {
        hetsched_util::host::affinity(None).map(CpuMask)
    }

    /// The PU OS indices in the mask.
    pub fn cpus(&self) -> Vec<usize> {
        self.0.clone()
    }

    /// Make this the calling thread's mask.
    pub fn apply(&self) -> Result<()> {
        pin_current_thread(&self.0)
    }
}

//! Pinning the calling thread to one CPU (real `sched_setaffinity` through
//! `hetsched_util::host`, as CORETIME does).

use hetsched_core::Result;
pub use hetsched_util::host::allowed_cpus;

/// Pins the calling thread to OS CPU `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    hetsched_util::host::pin_current_thread(&[cpu])
}

/// The CPU the calling thread is running on right now.
pub fn current_cpu() -> Option<usize> {
    Some(hetsched_util::host::current_cpu())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_thread_runs_on_its_cpu() {
        let cpu = *allowed_cpus().last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            std::thread::yield_now();
            assert_eq!(current_cpu(), Some(cpu));
        })
        .join()
        .unwrap();
    }
}

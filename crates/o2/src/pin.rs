//! Pinning the calling thread to one CPU (real `sched_setaffinity`, as CORETIME does).

use hetsched_core::{Error, Result};

/// Pins the calling thread to OS CPU `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(Error::input(format!("cpu {cpu} is beyond CPU_SETSIZE")));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it, and
    // sched_setaffinity(0, ..) reads it for the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(Error::runtime(format!(
            "sched_setaffinity to cpu {cpu}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// The CPU the calling thread is running on right now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// OS CPUs this process may run on, in increasing order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: as above; sched_getaffinity writes into the zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
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

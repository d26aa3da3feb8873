//! Pinning the worker thread to granted PUs (`sched_setaffinity`).

use hetsched_core::{Error, Result};

/// A saved CPU affinity mask of the calling thread.
#[derive(Clone)]
pub struct CpuMask(libc::cpu_set_t);

impl CpuMask {
    /// The calling thread's current mask.
    pub fn current() -> Result<Self> {
        // SAFETY: cpu_set_t is plain data; all-zero is a valid empty set, and the
        // kernel writes at most size_of::<cpu_set_t>() bytes.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Err(Error::runtime(format!(
                    "sched_getaffinity: {}",
                    std::io::Error::last_os_error()
                )));
            }
            Ok(CpuMask(set))
        }
    }

    /// The PU OS indices in the mask.
    pub fn cpus(&self) -> Vec<usize> {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: the index is below CPU_SETSIZE.
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &self.0) })
            .collect()
    }

    /// Make this the calling thread's mask.
    pub fn apply(&self) -> Result<()> {
        // SAFETY: the set is a valid cpu_set_t of the size passed.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) };
        if rc != 0 {
            return Err(Error::runtime(format!(
                "sched_setaffinity({:?}): {}",
                self.cpus(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }
}

/// Pin the calling thread to the PUs `cpus` (OS indices).
pub fn pin_current_thread(cpus: &[usize]) -> Result<()> {
    if let Some(&bad) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(Error::input(format!(
            "CPU {bad} is beyond the largest pinnable CPU ({})",
            libc::CPU_SETSIZE - 1
        )));
    }
    // SAFETY: all-zero is a valid empty set; indices are checked above.
    let mask = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        CpuMask(set)
    };
    mask.apply()
}

//! The OpenCL implementation of trial division: one work-item per divisor of a
//! block; the smallest divisor that divides the remainder wins (atomic_min). The
//! host divides it out and continues right after it, so the block's later
//! divisors are tested again against the new remainder and none is skipped.

use crate::opencl::ClKernel;
use crate::prime::{finish, PrimeCheckpoint};
use hetsched_core::{Error, Result};
use hetsched_worker::{Grant, Implementation, Step, UnitState};
use opencl3::kernel::ExecuteKernel;
use opencl3::types::{cl_uint, cl_ulong};

const KERNEL: &str = r#"
__kernel void trial_divide(ulong remainder, ulong start, uint count, __global uint *found) {
  uint gid = get_global_id(0);
  if (gid >= count) return;
  if (remainder % (start + gid) == 0) atomic_min(found, gid);
}
"#;

pub(crate) struct OpenClPrime {
    pub(crate) interval: u32,
}

impl Implementation<PrimeCheckpoint, Vec<(u64, u32)>> for OpenClPrime {
    fn init(
        &self,
        checkpoint: &PrimeCheckpoint,
        grant: &Grant,
    ) -> Result<Box<dyn UnitState<PrimeCheckpoint, Vec<(u64, u32)>>>> {
        let device = grant.opencl_device.ok_or_else(|| {
            Error::runtime(format!(
                "grant of unit {} names no OpenCL device",
                grant.unit
            ))
        })?;
        let cl = ClKernel::open(device, KERNEL, "trial_divide")?;
        Ok(Box::new(OpenClPrimeState {
            interval: self.interval,
            cp: checkpoint.clone(),
            cl,
        }))
    }
}

struct OpenClPrimeState {
    interval: u32,
    cp: PrimeCheckpoint,
    cl: ClKernel,
}

impl UnitState<PrimeCheckpoint, Vec<(u64, u32)>> for OpenClPrimeState {
    fn main(&mut self) -> Result<Step<Vec<(u64, u32)>>> {
        let cp = &mut self.cp;
        if cp.exhausted() {
            return finish(cp);
        }
        let start: cl_ulong = cp.next_divisor;
        let last = cp.remainder.isqrt();
        let count = (last - start + 1).min(self.interval as u64) as cl_uint;
        let remainder: cl_ulong = cp.remainder;
        let hit = self.cl.search(|cl| {
            // SAFETY: argument types and order match the kernel; work size = count.
            unsafe {
                ExecuteKernel::new(&cl.kernel)
                    .set_arg(&remainder)
                    .set_arg(&start)
                    .set_arg(&count)
                    .set_arg(&cl.found)
                    .set_global_work_size(count as usize)
                    .enqueue_nd_range(&cl.queue)
                    .map(drop)
            }
        })?;
        if let Some(offset) = hit {
            // Divisors after the hit count as untested: the remainder changes.
            let d = start + offset as u64;
            cp.divisors_tested += offset as u64 + 1;
            cp.divide_out(d);
            cp.next_divisor = d + 1;
        } else {
            cp.divisors_tested += count as u64;
            cp.next_divisor += count as u64;
        }
        if cp.exhausted() {
            return finish(cp);
        }
        Ok(Step::Checkpoint)
    }

    fn free(self: Box<Self>) -> Result<PrimeCheckpoint> {
        Ok(self.cp)
    }
}

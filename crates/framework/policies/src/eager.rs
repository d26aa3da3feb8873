//! `eager`: StarPU 1.3's `eager` (`src/sched_policies/eager_central_policy.c`), the
//! scheduler StarPU runs by default: one central FIFO, each idle worker popping the
//! first task it can execute, no performance models and no prefetch. It is
//! [`fcfs`](crate::fcfs) under StarPU's name, so that runs compared with StarPU's
//! (`STARPU_SCHED=eager`) name the same policy.

use crate::fcfs::Fcfs;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "eager",
    about: "StarPU 1.3's eager: one central FIFO, each idle unit running the first task it can execute (fcfs under StarPU's name)",
    test_specs: &["eager"],
    build: |_, _, _| Ok(Fcfs::named("eager").into()),
};

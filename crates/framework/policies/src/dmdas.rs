//! `dmdas`: StarPU 1.3's `dmda` with sorted queues
//! (`src/sched_policies/deque_modeling_policy_data_aware.c`, `dmdas`): tasks are placed
//! as [`dmda`](crate::dmda) places them; each unit runs the task of highest priority in
//! its queue first (ties: the earliest queued), where `dmda` runs its queue in order.
//! Priorities are the application's (a task's `priority`; StarPU's tiled examples give
//! the tasks near the diagonal the highest, `hetsched_sim::graphs`). StarPU lets an
//! application use any integer under `dmdas`; so does this.

use crate::dmda::Dmda;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "dmdas",
    about: "StarPU 1.3's dmdas: dmda's placement, each unit running its queue by the application's priority (highest first, then in order)",
    test_specs: &["dmdas", "dmdas:calibrate=1"],
    build: |spec, p, _| Ok(Dmda::from_params(spec, p)?.sorted().into()),
};

//! `cfs-cap`: Linux's CFS on asymmetric-capacity CPUs as of 5.7–6.5, without Energy
//! Aware Scheduling: what Linux did before 6.6 on a machine whose CPUs differ in capacity
//! and that has no energy model (EAS stays off without one), beside `cfs`, which stands
//! for the papers' older Linux. The versions: misfit migration came in 4.20,
//! `select_idle_capacity` in 5.7, and 6.6 replaced CFS's pick with EEVDF's (`eevdf.rs`)
//! under the same capacity logic, a combination this policy does not model.
//!
//! What of Linux's asymmetric-capacity logic (`SD_ASYM_CPUCAPACITY`) it models, on top
//! of `cfs` (same queues, slices and count balancing):
//! - wake-up placement in the spirit of `select_idle_capacity`: the least-loaded unit,
//!   the biggest among equals;
//! - misfit tasks (`fits_capacity(util, capacity)`: `util × 1280 < capacity × 1024`,
//!   i.e. a task fits below 80% of a CPU's capacity): at each balance period, a task
//!   that kept a CPU smaller than the biggest busy at least 80% of the period is pulled
//!   to an idle bigger CPU (Linux's misfit active balance).
//!
//! What it leaves out: PELT (util is the unit's busy fraction over the last balance
//! period times its capacity, not a decaying per-task average), energy-aware placement
//! (EAS needs an energy model; none of our machines has one), uclamp, and capacity-
//! weighted group load in the periodic balance (still counts tasks).
//!
//! Parameters: those of `cfs`.

use crate::cfs::Cfs;

/// The registry's entry for this policy.
pub const REGISTERED: crate::Registered = crate::Registered {
    name: "cfs-cap",
    about: "Linux 5.7–6.5 CFS on asymmetric CPUs, no EAS energy model: biggest idle unit first, misfit tasks (fits_capacity) pulled to bigger CPUs",
    test_specs: &["cfs-cap", "cfs-cap:latency_ms=1,balance_ms=1"],
    build: |spec, p, _| Ok(Cfs::from_params(spec, p)?.capacity_aware().into()),
};

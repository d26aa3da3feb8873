//! Task-graph experiments that reproduce no paper: how the policies schedule StarPU's
//! tiled dense factorizations on the machines INRIA calibrated, each task timed by the
//! model StarPU measured there ([`starpu_machines`], `hetsched experiment
//! starpu-machines`).
//!
//! Why a crate of its own: the experiment is a study of the simulator's task graphs
//! (`hetsched_sim::graphs`) across machines, not a paper's figure, so it registers a
//! study without a reproduction (`hetsched experiment` lists it; `hetsched reproduce`,
//! the papers' report, does not). Its numbers and what they say are in
//! `docs/starpu-machines.md`.

pub mod plot;
pub mod starpu_machines;
pub mod study;

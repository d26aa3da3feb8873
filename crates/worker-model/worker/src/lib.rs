//! The worker programming model of Beisel et al. (CAOS 2012, Figure 2 / Listing 1).
//!
//! A worker ([`Worker`]) declares [`MetaInfo`] (a type affinity per compute-unit type,
//! 0 = no implementation; memory to copy; checkpoint size) and, per unit type, an
//! [`Implementation`]: `init` copies a checkpoint onto the granted unit and returns the
//! running [`UnitState`]; its `main` works up to the next checkpoint; its `free` copies
//! the state back as a checkpoint. [`run`] drives the lifecycle against a [`Scheduler`]:
//! allocate, init, loop `main`, re-request at every checkpoint, and on a denied
//! re-request free, release, re-allocate (possibly another unit type) and resume.

mod affinity;
mod model;
mod runtime;
mod scheduler;

pub use affinity::CpuMask;
pub use model::{Grant, Implementation, MetaInfo, Step, UnitState, Worker};
pub use runtime::{run, RunReport, Segment};
pub use scheduler::{Fixed, Rerequest, Scheduler};

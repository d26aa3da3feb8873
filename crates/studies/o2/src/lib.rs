//! hetsched-o2: O² scheduling (Boyd-Wickizer, Morris, Kaashoek, "Reinventing
//! scheduling for multicore systems", CORETIME).
//!
//! Instead of keeping threads on cores, data objects are assigned to cores' caches and
//! each operation runs on the core whose cache holds its object.
//!
//! - [`runtime`]: pinned workers, the object table, delegation (`Worker::on`).
//! - [`on_async`]: the same operation as a future (`Worker::on_async`).
//! - [`packing`]: greedy first-fit cache packing; [`rebalance`]: runtime monitoring.
//! - [`capacity`]: cache bytes per core, from the machine model or given explicitly.
//! - [`ffi`]: the C ABI (`include/hetsched_o2.h`).
//! - [`sim`]: the paper's evaluation on a simulated machine; [`reproduce`]: it judged
//!   against the paper's claims.

mod async_mailbox;
pub mod bench;
pub mod capacity;
mod clock;
pub mod fatfs;
pub mod ffi;
pub mod live;
mod mailbox;
pub mod on_async;
pub mod packing;
#[cfg(feature = "plot")]
pub mod plot;
pub mod rebalance;
pub mod reproduce;
pub mod runtime;
pub mod sim;
pub mod stats;
#[cfg(feature = "study")]
pub mod study;

pub use capacity::{CacheCapacity, SharedCache};
pub use rebalance::{CostSource, Policy};
pub use runtime::{Config, ObjId, RunReport, Runtime, Worker};

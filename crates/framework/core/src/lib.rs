//! hetsched-core: the concepts every other crate shares.

pub mod cpu_list;
pub mod dataflow;
pub mod engine_core;
pub mod footprint;
pub mod graph;
pub mod id_map;
pub mod machine;
pub mod ns;
pub mod outcome_stream;
pub mod perf_model;
pub mod policy;
pub mod record;
pub mod report;
pub mod slab;
pub mod task;
pub mod task_store;
pub mod trace;
pub mod unit_set;

pub use hetsched_util::error;
pub use hetsched_util::{Error, PathContext, Result};

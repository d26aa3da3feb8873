//! hetsched-nuca: a trace-driven tiled-NUCA simulator comparing remote cache access,
//! hardware thread migration, and the hybrid driven by the PC-based migration predictor
//! of Shim, Lis, Khan and Devadas, "Judicious Thread Migration When Accessing
//! Distributed Shared Caches".
//!
//! - [`chip`]: the machine (mesh, contexts, caches, DRAM, page placement) from TOML;
//! - [`trace`]: per-thread access traces and their binary format;
//! - [`predictor`]: the migration predictor;
//! - [`sim`]: the simulator;
//! - [`issue_order`]: which simulated thread issues next (exact time order);
//! - [`kernels`]: instrumented multithreaded kernels producing traces;
//! - [`experiment`], [`plot`]: the paper's evaluation;
//! - [`reproduce`]: the evaluation judged against the paper's claims.

pub mod chip;
pub mod experiment;
pub mod issue_order;
pub mod kernels;
pub mod plot;
pub mod predictor;
pub mod reproduce;
pub mod sim;
pub mod study;
pub mod trace;

pub use chip::Chip;
pub use sim::{simulate, Program, Scheme, Sim, SiteMigrations, Stats};
pub use trace::{Access, Trace};

#[cfg(test)]
mod tests;

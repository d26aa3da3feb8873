//! Shelepov & Fedorova, "Scheduling on Heterogeneous Multicore Processors Using
//! Architectural Signatures" (WIOSCA 2008), §3.3's accuracy and §4 on the simulator:
//! the SPEC CPU2000 programs as memory-access models, each with the signature
//! hetsched's toolchain computes from it and the time model its simulated misses give
//! it (`programs`), the three experiments and the frequency-range projection on the
//! paper's machine (`experiments`), their bar chart (`plot`), the signatures' accuracy
//! against cachegrind on programs that run here (`accuracy`), and the claims judged as
//! one reproduction (`reproduce`).
//!
//! Why a crate of its own: the experiment is domain code (the paper's programs, its
//! machine, its numbers); the policy it evaluates is `hetsched_policies::signature`,
//! which runs unchanged in both engines.

pub mod accuracy;
pub mod experiments;
pub mod plot;
pub mod programs;
pub mod reproduce;
pub mod study;

//! Ding et al. (Ding, Chang, Guo, Li, Chung, 2013: "An efficient and comprehensive
//! scheduler on asymmetric multicore architecture systems") on the simulator: the
//! `ding` machine with a memory bandwidth per node (`workload::machine`), PARSEC-like
//! programs whose memory intensity follows Bienia et al.'s characterisation
//! (`workload`), and the evaluation — each program alone and in mixes, under `cfs`
//! (the paper's baseline), `eevdf` (today's Linux beside it), `cfs-cap` and `numa-amp`
//! (`experiment`) — with its bar chart (`plot`), and the paper's claim judged as one
//! reproduction (`reproduce`).
//!
//! Why a crate of its own: the experiment is domain code (a paper's workload and its
//! metrics); the policies it compares are ordinary registry entries, and the CLI
//! (`hetsched experiment ding`) only parses and prints. Every choice the paper does
//! not make for us is in `docs/ding.md`.

pub mod experiment;
pub mod plot;
pub mod reproduce;
pub mod study;
pub mod workload;

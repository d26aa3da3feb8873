//! Beisel et al. (CAOS 2012) on the simulator: the paper's two applications as task
//! models (`workload`), its experiments (Figures 3–7) and the project demo
//! (`experiments`), and their plots (`plot`); the figures and judged claims as one
//! reproduction (`reproduce`); and live (`live`): the same mix as real
//! processes under the daemon.

pub mod experiments;
pub mod live;
pub mod reproduce;
pub mod study;
pub mod workload;

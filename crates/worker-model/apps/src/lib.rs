//! Example workloads of Beisel et al. on the worker model ([`hetsched_worker`]):
//! brute-force MD5 cracking ([`md5`]) and trial-division prime factorisation
//! ([`prime`]), each with a CPU and an OpenCL implementation whose checkpoints are
//! interchangeable, so a run can migrate between them at any checkpoint.

pub mod md5;
mod md5_cl;
pub mod opencl;
pub mod prime;
mod prime_cl;
pub mod rate;

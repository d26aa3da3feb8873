//! Akram, Marazkis and Bilas, "NUMA implications for storage I/O throughput in modern
//! servers" (CAOS 2012): where an I/O's transfer, buffer and data use happen relative to
//! the device's NUMA node matters. This crate holds the paper's tools and experiment:
//!
//! - [`iobench`]: the zmIO-like direct-I/O benchmark run on this machine (`hetsched
//!   iobench`), with [`cpio`], the paper's cycles-per-I/O metric;
//! - the paper's server and its configurations in the simulator (`hetsched experiment
//!   akram`), and its claims judged as one reproduction ([`reproduce`]).

pub mod cpio;
pub mod experiment;
pub mod iobench;
pub mod reproduce;
pub mod study;

//! hetsched's live runtime: a daemon that arbitrates this machine's compute units
//! among processes with the same policy objects the simulator runs, and the client
//! library applications use to talk to it.

pub mod arbiter;
pub mod batch;
pub mod bench;
pub mod client;
pub mod client_process;
pub mod compact;
pub mod daemon;
pub mod devices;
pub mod graphs;
pub mod hostile;
pub mod process;
pub mod protocol;
pub mod run;
pub mod run_graph;
pub mod sampler;
pub mod server;
pub mod session;
pub mod shm;
pub mod slow_cpu;
pub mod sources;
pub mod trust;
pub mod worker_bridge;

//! The simulator against real runs.
//!
//! A simulated result ("policy X beats Y by Z %") is a statement about the model until
//! the model predicts what a real run measures. This crate is the harness for that:
//! [`calibrate`] measures this machine into a [`calibration::Calibration`] (each CPU's
//! speed per kernel, a process's start-up, the daemon's cost per decision, the OpenCL
//! device's rates and costs), and [`validate`] runs a workload live under each policy
//! (real processes under the real daemon), simulates it on the calibrated machine, and
//! reports the error of every prediction and whether the simulator orders the policies
//! as the live runs do.
//!
//! Why a crate of its own: it is the one place that needs the live daemon, the
//! simulator, the policies and the applications together, and the CLI only parses and
//! prints. A workload is an entry of [`WORKLOADS`].

pub mod calibrate;
pub mod calibration;
pub mod starpu;
pub mod suite;
pub mod validate;
pub mod workload;

use calibration::Kernel::{Md5, Prime};
use workload::Workload;

/// Beisel et al.'s mix, scaled to this harness: 4 MD5 searches of 1–8 s and 6
/// factorisations of 0.5–4 s on a capacity-1024 CPU (our choice of sizes; a
/// factorisation's number must fit in 64 bits, which bounds it to about 4.3e9 divisors),
/// interleaved, all started together.
const MIX: &[(calibration::Kernel, f64)] = &[
    (Prime, 0.5),
    (Md5, 6.0),
    (Prime, 3.0),
    (Md5, 1.0),
    (Prime, 1.5),
    (Prime, 4.0),
    (Md5, 8.0),
    (Prime, 0.8),
    (Md5, 2.0),
    (Prime, 2.0),
];

/// Every workload `hetsched validate` runs, by key.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        key: "smoke",
        about: "four short jobs on the CPUs (1.6 s of work in all): the test suite's check",
        accelerators: false,
        jobs: &[(Prime, 0.6), (Md5, 0.3), (Prime, 0.2), (Md5, 0.5)],
    },
    Workload {
        key: "apps-cpu",
        about: "Beisel et al.'s mix, 4 MD5 searches of 1-8 s and 6 factorisations of 0.5-4 s, on the CPUs",
        accelerators: false,
        jobs: MIX,
    },
    Workload {
        key: "apps",
        about: "the same mix on the CPUs and the OpenCL device",
        accelerators: true,
        jobs: MIX,
    },
];

/// The workload named `key`, or an input error listing the keys.
pub fn workload(key: &str) -> hetsched_core::Result<&'static Workload> {
    WORKLOADS.iter().find(|w| w.key == key).ok_or_else(|| {
        hetsched_core::Error::input(format!(
            "workload {key:?}: unknown; accepted: {}",
            WORKLOADS
                .iter()
                .map(|w| w.key)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

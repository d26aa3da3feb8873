//! Shared test helpers: the OpenCL grant (failing loudly without a device).

use hetsched_worker::Grant;

/// A grant of OpenCL device 0. Panics (fails the test, never skips it) when the
/// machine has no OpenCL device, saying what to install.
pub fn opencl_grant() -> Grant {
    if let Err(e) = hetsched_apps::opencl::devices() {
        panic!("this test needs a real OpenCL device: {e} (CI installs pocl-opencl-icd)");
    }
    Grant::opencl(1, 0)
}

pub fn cpu_grant() -> Grant {
    Grant::cpu(0, Vec::new())
}

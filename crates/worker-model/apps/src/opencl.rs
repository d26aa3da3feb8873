//! Opening an OpenCL device and building a kernel on it (`opencl3`).

use hetsched_core::{Error, Result};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::ClError;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_uint, CL_BLOCKING};
use std::ptr;

/// What to tell a user whose machine has no OpenCL device.
pub const INSTALL_HINT: &str =
    "install an OpenCL implementation, e.g. `apt-get install pocl-opencl-icd ocl-icd-opencl-dev`";

/// All OpenCL devices of all platforms, in platform order (a grant's
/// `opencl_device` indexes this list). Errors when there is none.
pub fn devices() -> Result<Vec<Device>> {
    let _serial = lock_setup();
    list_devices()
}

/// PoCL's lazy device set-up is not thread-safe: concurrent first uses in one
/// process were seen to find no device or to report CL_INVALID_BUFFER_SIZE for a
/// 4-byte buffer. All discovery and set-up therefore runs under this lock.
static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lock_setup() -> std::sync::MutexGuard<'static, ()> {
    SETUP
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn list_devices() -> Result<Vec<Device>> {
    let platforms = opencl3::platform::get_platforms()
        .map_err(|e| Error::runtime(format!("no OpenCL platform ({e}); {INSTALL_HINT}")))?;
    let mut devices = Vec::new();
    let mut errors = Vec::new();
    for p in &platforms {
        // A platform without devices answers CL_DEVICE_NOT_FOUND: skip it.
        match p.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => devices.extend(ids.into_iter().map(Device::new)),
            Err(e) => errors.push(format!("{}: {e}", p.name().unwrap_or_default())),
        }
    }
    if devices.is_empty() {
        return Err(Error::runtime(format!(
            "no OpenCL device found ({} platforms{}{}); {INSTALL_HINT}",
            platforms.len(),
            if errors.is_empty() { "" } else { ": " },
            errors.join("; ")
        )));
    }
    Ok(devices)
}

/// A device's name, e.g. "pthread-haswell-AMD EPYC ...".
pub fn device_name(device: &Device) -> String {
    device
        .name()
        .unwrap_or_else(|e| format!("<name unavailable: {e}>"))
}

/// An opened device: its context, an in-order queue, one built kernel, and the
/// one-`uint` result buffer both search kernels report their smallest hit in.
pub struct ClKernel {
    pub device: Device,
    pub context: Context,
    pub queue: CommandQueue,
    pub kernel: Kernel,
    pub found: Buffer<cl_uint>,
}

impl ClKernel {
    /// Open device `index` of [`devices`] and build `kernel` from `source`.
    pub fn open(index: usize, source: &str, kernel: &str) -> Result<Self> {
        let _serial = lock_setup();
        let all = list_devices()?;
        let count = all.len();
        let device = all.into_iter().nth(index).ok_or_else(|| {
            Error::input(format!(
                "OpenCL device {index} does not exist (this machine has {count}: 0..{})",
                count - 1
            ))
        })?;
        let cl = |what: &str, e: ClError| {
            Error::runtime(format!("OpenCL {what} on {}: {e}", device_name(&device)))
        };
        let context = Context::from_device(&device).map_err(|e| cl("context", e))?;
        let queue = CommandQueue::create_default(&context, 0).map_err(|e| cl("queue", e))?;
        let program = Program::create_and_build_from_source(&context, source, "")
            .map_err(|log| Error::runtime(format!("OpenCL build failed: {log}")))?;
        let kernel = Kernel::create(&program, kernel).map_err(|e| cl("kernel", e))?;
        // SAFETY: a one-element buffer without host pointer.
        let found = unsafe {
            Buffer::<cl_uint>::create(&context, CL_MEM_READ_WRITE, 1, ptr::null_mut())
                .map_err(|e| cl("result buffer", e))?
        };
        Ok(ClKernel {
            device,
            context,
            queue,
            kernel,
            found,
        })
    }

    /// A read-only device buffer holding a copy of `data`.
    pub fn upload<T>(&self, data: &[T]) -> Result<Buffer<T>> {
        let _serial = lock_setup();
        // SAFETY: CL_MEM_COPY_HOST_PTR copies data.len() elements from a live slice
        // during the call; the pointer is not kept.
        unsafe {
            Buffer::<T>::create(
                &self.context,
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                data.len(),
                data.as_ptr() as *mut std::ffi::c_void,
            )
        }
        .map_err(cl_err("input buffer"))
    }

    /// Reset the result to "no hit", run `launch` (which enqueues the kernel), and
    /// read back the smallest hit offset, if any.
    pub fn search(
        &mut self,
        launch: impl FnOnce(&Self) -> std::result::Result<(), ClError>,
    ) -> Result<Option<u32>> {
        let mut hit: [cl_uint; 1] = [cl_uint::MAX];
        // SAFETY: blocking one-element transfers into a one-element buffer.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut self.found, CL_BLOCKING, 0, &hit, &[])
                .map_err(cl_err("result reset"))?;
        }
        launch(self).map_err(cl_err("kernel launch"))?;
        // SAFETY: as above.
        unsafe {
            self.queue
                .enqueue_read_buffer(&self.found, CL_BLOCKING, 0, &mut hit, &[])
                .map_err(cl_err("result read"))?;
        }
        Ok((hit[0] != cl_uint::MAX).then_some(hit[0]))
    }
}

/// Map an OpenCL error to a runtime error naming the operation.
pub(crate) fn cl_err(what: &'static str) -> impl Fn(ClError) -> Error {
    move |e| Error::runtime(format!("OpenCL {what}: {e}"))
}

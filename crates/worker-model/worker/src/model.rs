//! What a worker declares and provides: meta info, grants, per-unit implementations.

use hetsched_core::machine::UnitType;
use hetsched_core::Result;

/// A worker's meta information (the paper's `meta_info`, Listing 1): the meta info every
/// client declares ([`hetsched_core::task::MetaInfo`]), without a signature. What the
/// paper's fields are there: its type affinities are `affinity` (0 = no implementation
/// for that type), `memory_to_copy` is `bytes_in`, and the bytes of one checkpoint
/// (copied to the unit at init and back at free) are `bytes_out`. The scheduler names
/// the task's `kind`.
pub type MetaInfo = hetsched_core::task::MetaInfo<std::convert::Infallible>;

/// The compute unit a scheduler granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The scheduler's id of the unit.
    pub unit: u32,
    /// The unit's type; selects the implementation.
    pub kind: UnitType,
    /// For CPU units: the OS indices of the PUs to pin the worker thread to
    /// (empty = do not pin).
    pub cpus: Vec<usize>,
    /// For OpenCL units: the index into all OpenCL devices of all platforms, in
    /// platform order.
    pub opencl_device: Option<usize>,
}

impl Grant {
    /// A CPU grant pinned to `cpus` (empty = unpinned).
    pub fn cpu(unit: u32, cpus: Vec<usize>) -> Self {
        Grant {
            unit,
            kind: UnitType::Cpu,
            cpus,
            opencl_device: None,
        }
    }

    /// An OpenCL grant of device `device` (index over all platforms' devices).
    pub fn opencl(unit: u32, device: usize) -> Self {
        Grant {
            unit,
            kind: UnitType::OpenCl,
            cpus: Vec::new(),
            opencl_device: Some(device),
        }
    }
}

/// What one call of `main` ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step<O> {
    /// A checkpoint was reached; the work is not finished.
    Checkpoint,
    /// The work is finished with this output.
    Done(O),
}

/// One implementation's state on a granted unit (between `cu_init` and `cu_free`).
pub trait UnitState<C, O> {
    /// `cu_main`: work from the current position to the next checkpoint.
    fn main(&mut self) -> Result<Step<O>>;
    /// `cu_free`: copy the state back to host memory as a checkpoint and release the
    /// unit's resources.
    fn free(self: Box<Self>) -> Result<C>;
}

/// One unit type's implementation (`cu_init`).
pub trait Implementation<C, O> {
    /// `cu_init`: set up the unit named by `grant` and copy `checkpoint` to it.
    fn init(&self, checkpoint: &C, grant: &Grant) -> Result<Box<dyn UnitState<C, O>>>;
}

/// A worker: the paper's `workerMetaInfo` + `getImplementationFor`.
pub trait Worker {
    /// Host-side state that any implementation can resume from.
    type Checkpoint: Clone;
    /// The result of the whole work.
    type Output;
    /// The meta information handed to the scheduler at allocation.
    fn meta_info(&self) -> MetaInfo;
    /// The implementation for `unit`, or `None` when there is none.
    fn implementation_for(
        &self,
        unit: UnitType,
    ) -> Option<&dyn Implementation<Self::Checkpoint, Self::Output>>;
}

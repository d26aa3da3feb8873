//! The C ABI (declared in `include/hetsched_o2.h`).
//!
//! C cannot move a running stack between threads the way CORETIME's `ct_start` /
//! `ct_end` pair does, so an operation is a function pointer: `o2_on(worker, obj, op,
//! arg)` runs `op(object, arg)` on the core that owns `obj`, exactly the code between
//! `ct_start(obj)` and `ct_end()`. Objects are opaque pointers the C program owns.

use crate::capacity::CacheCapacity;
use crate::rebalance::Policy;
use crate::runtime::{Config, Runtime, Worker};
use std::ffi::c_void;
use std::time::Duration;

/// A C object pointer; the C program promises its operations are safe to run on any
/// core (as CORETIME's are).
#[derive(Clone, Copy)]
struct CPtr(*mut c_void);
// SAFETY: see above: the C caller owns the synchronisation of what the pointer names.
unsafe impl Send for CPtr {}
unsafe impl Sync for CPtr {}

/// Opaque runtime handle for C.
pub struct O2Runtime(Runtime<CPtr>);
/// Opaque worker handle for C (valid only inside the body passed to `o2_run`).
#[repr(transparent)]
pub struct O2Worker<'a>(Worker<'a, CPtr>);

/// An operation: `op(object, arg)`, run on the object's owner.
pub type O2OpFn = unsafe extern "C" fn(object: *mut c_void, arg: *mut c_void);
/// A worker's main function, run once on every worker by `o2_run`.
pub type O2BodyFn = unsafe extern "C" fn(worker: *const O2Worker<'_>, arg: *mut c_void);

/// Creates a runtime with one worker per entry of `cpus`, each with `private_bytes`
/// of private cache and all sharing `shared_bytes`; `rebalance_ms` 0 = no automatic
/// placement. Returns NULL on bad arguments.
///
/// # Safety
/// `cpus` must point at `ncpus` readable values.
#[no_mangle]
pub unsafe extern "C" fn o2_runtime_new(
    cpus: *const usize,
    ncpus: usize,
    private_bytes: u64,
    shared_bytes: u64,
    rebalance_ms: u32,
) -> *mut O2Runtime {
    if cpus.is_null() || ncpus == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller guarantees `ncpus` readable values.
    let cpus = unsafe { std::slice::from_raw_parts(cpus, ncpus) }.to_vec();
    let config = Config {
        capacity: CacheCapacity::uniform(cpus.len(), private_bytes, shared_bytes),
        cpus,
        rebalance_every: (rebalance_ms > 0).then(|| Duration::from_millis(rebalance_ms as u64)),
        policy: Policy::default(),
    };
    match Runtime::new(config) {
        Ok(rt) => Box::into_raw(Box::new(O2Runtime(rt))),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Frees a runtime made by `o2_runtime_new` (NULL is ignored).
///
/// # Safety
/// `rt` must come from `o2_runtime_new` and not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn o2_runtime_free(rt: *mut O2Runtime) {
    if !rt.is_null() {
        // SAFETY: made by Box::into_raw in o2_runtime_new.
        drop(unsafe { Box::from_raw(rt) });
    }
}

/// Registers an object of `bytes` bytes; returns its id. Not during `o2_run`.
///
/// # Safety
/// `rt` must be a live runtime not inside `o2_run`.
#[no_mangle]
pub unsafe extern "C" fn o2_add_object(rt: *mut O2Runtime, object: *mut c_void, bytes: u64) -> u32 {
    // SAFETY: the caller passes a live, unshared runtime.
    let rt = unsafe { &mut *rt };
    rt.0.add_object(CPtr(object), bytes)
}

/// Makes worker `core` the owner of `obj` (`core` < 0: no owner). 0 on success, -1
/// on a bad object or core.
///
/// # Safety
/// `rt` must be a live runtime.
#[no_mangle]
pub unsafe extern "C" fn o2_assign(rt: *const O2Runtime, obj: u32, core: i32) -> i32 {
    // SAFETY: the caller passes a live runtime.
    let rt = unsafe { &*rt };
    let core = usize::try_from(core).ok();
    if rt.0.assign(obj, core).is_ok() {
        0
    } else {
        -1
    }
}

/// The owner worker of `obj`, or -1 (no owner or no such object).
///
/// # Safety
/// `rt` must be a live runtime.
#[no_mangle]
pub unsafe extern "C" fn o2_owner(rt: *const O2Runtime, obj: u32) -> i32 {
    // SAFETY: the caller passes a live runtime.
    let rt = unsafe { &*rt };
    if obj as usize >= rt.0.len() {
        return -1;
    }
    rt.0.owner(obj).map_or(-1, |c| c as i32)
}

/// Runs `body(worker, arg)` once on every pinned worker and returns when all are
/// done: 0 on success, -1 if a worker could not be pinned.
///
/// # Safety
/// `rt` must be a live runtime; `body` must be safe to call concurrently with `arg`.
#[no_mangle]
pub unsafe extern "C" fn o2_run(rt: *mut O2Runtime, body: O2BodyFn, arg: *mut c_void) -> i32 {
    // SAFETY: the caller passes a live, otherwise unused runtime.
    let rt = unsafe { &mut *rt };
    let arg = CPtr(arg);
    let r = rt.0.run(|w| {
        // O2Worker is repr(transparent) over Worker, and `w` outlives the call.
        let handle = w as *const Worker<'_, CPtr> as *const O2Worker<'_>;
        let a = arg;
        // SAFETY: the caller vouches for `body` with `arg` on every worker thread.
        unsafe { body(handle, a.0) }
    });
    if r.is_ok() {
        0
    } else {
        -1
    }
}

/// Runs `op(object, arg)` on the core owning `obj` (here if none): CORETIME's
/// `ct_start(obj); ...; ct_end();`. 0 on success, -1 for an unknown object.
///
/// # Safety
/// `w` must be the worker handle passed to the current body; `op` must be safe to call
/// on any worker's thread with `arg`.
#[no_mangle]
pub unsafe extern "C" fn o2_on(
    w: *const O2Worker<'_>,
    obj: u32,
    op: O2OpFn,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: see the function's contract.
    let w = unsafe { &(*w).0 };
    if obj as usize >= w.runtime().len() {
        return -1;
    }
    let arg = CPtr(arg);
    w.on(obj, move |o| {
        let a = arg;
        // SAFETY: the caller vouches for `op` on any worker thread.
        unsafe { op(o.0, a.0) }
    });
    0
}

/// This worker's index (0 .. number of workers).
///
/// # Safety
/// `w` must be the worker handle passed to the current body.
#[no_mangle]
pub unsafe extern "C" fn o2_worker_index(w: *const O2Worker<'_>) -> usize {
    // SAFETY: see the function's contract.
    unsafe { (*w).0.index() }
}

//! One delegation slot per ordered pair of cores: how an operation moves to its owner.
//!
//! A worker has at most one operation in flight (it waits for the answer), so one slot
//! per (caller, owner) pair suffices and never needs a queue or an allocation. The
//! request is a type-erased pointer to a closure living on the caller's stack, which is
//! valid because the caller does not return before the owner marks the slot done.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

const EMPTY: u32 = 0;
const REQUESTED: u32 = 1;
const DONE: u32 = 2;
const PANICKED: u32 = 3;

/// Runs the operation stored at `env` on the object at `object`.
pub(crate) type CallFn = unsafe fn(env: *mut (), object: *const ());

#[derive(Clone, Copy)]
struct Request {
    call: CallFn,
    env: *mut (),
    object: u32,
    /// Filled by the owner: how long the operation itself took.
    op_ns: u64,
}

fn noop(_: *mut (), _: *const ()) {}

/// A single-request mailbox from one caller core to one owner core.
pub(crate) struct Slot {
    state: AtomicU32,
    request: UnsafeCell<Request>,
}

// SAFETY: `request` is written only by the caller while the state is EMPTY (or after it
// observed DONE/PANICKED) and by the owner only between observing REQUESTED and
// publishing DONE/PANICKED; the state's acquire/release orders those accesses.
unsafe impl Sync for Slot {}
unsafe impl Send for Slot {}

/// What the owner found when it looked at a slot.
pub(crate) enum Served {
    Nothing,
    Ran { object: u32, op_ns: u64 },
}

/// What the caller finds when it checks its request.
pub(crate) enum Answer {
    Pending,
    Done { op_ns: u64 },
    Panicked,
}

impl Slot {
    pub(crate) fn new() -> Self {
        Slot {
            state: AtomicU32::new(EMPTY),
            request: UnsafeCell::new(Request {
                call: noop,
                env: std::ptr::null_mut(),
                object: 0,
                op_ns: 0,
            }),
        }
    }

    /// Caller side: posts a request. The slot must be empty (one request in flight).
    ///
    /// # Safety
    /// `env` must stay valid, and `call` must accept it, until [`Slot::answer`] returns
    /// something other than `Pending`.
    pub(crate) unsafe fn post(&self, call: CallFn, env: *mut (), object: u32) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), EMPTY);
        // SAFETY: EMPTY means no owner reads the request now (see the Sync impl).
        unsafe {
            *self.request.get() = Request {
                call,
                env,
                object,
                op_ns: 0,
            }
        };
        self.state.store(REQUESTED, Ordering::Release);
    }

    /// Caller side: the answer so far; a finished answer empties the slot.
    pub(crate) fn answer(&self) -> Answer {
        match self.state.load(Ordering::Acquire) {
            DONE => {
                // SAFETY: DONE was published after the owner's last write.
                let op_ns = unsafe { (*self.request.get()).op_ns };
                self.state.store(EMPTY, Ordering::Relaxed);
                Answer::Done { op_ns }
            }
            PANICKED => {
                self.state.store(EMPTY, Ordering::Relaxed);
                Answer::Panicked
            }
            _ => Answer::Pending,
        }
    }

    /// Owner side: runs a pending request, if any, on `objects(object)`.
    pub(crate) fn serve(&self, object_ptr: impl FnOnce(u32) -> *const ()) -> Served {
        if self.state.load(Ordering::Acquire) != REQUESTED {
            return Served::Nothing;
        }
        // SAFETY: REQUESTED hands the request to us until we publish DONE/PANICKED.
        let req = unsafe { *self.request.get() };
        let start = std::time::Instant::now();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the caller guaranteed `env` and `call` match and stay valid.
            unsafe { (req.call)(req.env, object_ptr(req.object)) }
        }));
        let op_ns = start.elapsed().as_nanos() as u64;
        if ran.is_err() {
            self.state.store(PANICKED, Ordering::Release);
            return Served::Nothing;
        }
        // SAFETY: still ours until the store below.
        unsafe { (*self.request.get()).op_ns = op_ns };
        self.state.store(DONE, Ordering::Release);
        Served::Ran {
            object: req.object,
            op_ns,
        }
    }
}
